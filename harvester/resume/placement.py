"""Where a resumed session goes in its target agent's store, and the one way it gets there.

The store is found as the capture finds it: the first root the agent's parser names (``Harness.roots``: the
agent's own environment overrides first, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME``,
``QWEN_RUNTIME_DIR``/``QWEN_HOME``), which is where the agent writes. Inside it, the session goes where the agent
would put one made in the directory the person resumes in: Claude Code's project folder of that directory, Codex's
day folder, Gemini CLI's project folder (found as Gemini finds it: its registry, else a ``.project_root`` marker
naming the directory, else a new folder claimed with such a marker, as Gemini claims one; its registry
``projects.json`` is never written, Gemini adopts the marker at its next start).

Why the order of operations is safe: a session is ONE new file, made by :func:`create_new` — written whole into an
unnamed file in the target folder (``O_TMPFILE``), synced, then linked to its name, which fails if the name exists
(never a replace, an edit or an append of an agent's file; a symlink at the name is not followed, it is a name
that exists). Until the link the file has no name, so a kill -9 leaves nothing; after it, the file is whole. Where
the system has no unnamed files, a named temporary file beside it (dot-named, ``.harvester-tmp``: no agent lists
it) is linked and removed, and one that a kill left behind is removed by the next resume into that folder. File
names are made of ids harvester mints, never of a transcript's text.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePath

import orjson

CLAUDE_FOLDER_CHARS = 200  # Claude Code cuts a longer project folder name and adds a hash of the path
STALE_TEMP_SECONDS = 3600  # a named temporary file this old was left by a killed resume
TEMP_SUFFIX = ".harvester-tmp"
GEMINI_MARK = "hv"  # begins the 8 characters a converted Gemini CLI chat's name ends in (see gemini_cli)


class Refused(Exception):
    """The session cannot be placed (a name is taken, a folder cannot be made): nothing was written."""


def store_root(target: str, env: Mapping[str, str], home: Path) -> Path:
    """Where ``target`` keeps its store: its parser's first root (see the module)."""
    from harvester.parsers import HARNESSES

    return HARNESSES[target].roots(env, home)[0]


def claude_code(root: Path, cwd: str, session_id: str) -> Path:
    return root / claude_folder(cwd) / f"{session_id}.jsonl"


def claude_folder(cwd: str) -> str:
    """Claude Code's project folder name for ``cwd`` (2.1: every character not a letter or digit is ``-``; a name
    past 200 characters is cut there and given the path's Java-style string hash in base 36)."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(name) <= CLAUDE_FOLDER_CHARS:
        return name
    units = cwd.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):  # (h << 5) - h + code unit, as a signed 32-bit integer
        h = ((h << 5) - h + (units[i] | units[i + 1] << 8)) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = ""
    while True:
        h, r = divmod(h, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + digits
        if not h:
            break
    return f"{name[:CLAUDE_FOLDER_CHARS]}-{digits}"


def codex(root: Path, now: datetime, session_id: str) -> Path:
    """``sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl``, in local time as Codex names them."""
    local = now.astimezone()
    return (root / "sessions" / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}"
            / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl")


def gemini_cli(root: Path, cwd: str, now: datetime, session_id: str) -> tuple[Path, Path | None]:
    """The chat file, and the ``.project_root`` marker to claim its folder with (None: the folder is Gemini's
    already). ``session-<UTC minute>-hv<6 of the id>.jsonl``: Gemini names its own ``-<first 8 of the id>``, but
    finds a session by the id in its header, and deletes by those 8 characters. Resumed in a later minute than
    the name says, Gemini CLI 0.61 starts a second file of the session (its header alone, ``-<first 8>``), which
    its next start deletes as broken, with every file whose name ends in the same 8: never in ours, whose 8 (not
    hex) no Gemini session id can give."""
    slug, claim = gemini_project(root, cwd)
    folder = root / "tmp" / slug
    name = f"session-{now.astimezone(UTC):%Y-%m-%dT%H-%M}-{GEMINI_MARK}{session_id[:6]}.jsonl"
    return folder / "chats" / name, (folder / ".project_root" if claim else None)


def gemini_project(root: Path, cwd: str) -> tuple[str, bool]:
    """Gemini CLI's project folder for ``cwd`` (its ProjectRegistry, 0.61): the registry's, when the folder's
    markers do not name another directory; else a folder whose marker names ``cwd``; else a new one (its name the
    directory's, slugified, ``-N`` when taken), to claim (True)."""
    bases = (root / "tmp", root / "history")
    mapped: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
        projects = orjson.loads((root / "projects.json").read_bytes()).get("projects")
        mapped = {str(k): str(v) for k, v in projects.items()} if isinstance(projects, dict) else {}
    slug = mapped.get(cwd)
    if slug and _safe_name(slug) and all(_owner(base / slug) in (None, cwd) for base in bases):
        return slug, False
    for base in bases:
        with contextlib.suppress(OSError):
            for candidate in sorted(os.listdir(base)):
                if _safe_name(candidate) and _owner(base / candidate) == cwd:
                    return candidate, False
    stem = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", (PurePath(cwd).name or "project").lower())).strip("-")
    stem = stem or "project"
    taken = set(mapped.values())
    for n in range(10_000):
        candidate = stem if n == 0 else f"{stem}-{n}"
        if candidate not in taken and all(_owner(base / candidate) in (None, cwd) for base in bases):
            return candidate, True
    raise Refused(f"no free Gemini CLI project folder for {cwd}")


def _owner(folder: Path) -> str | None:
    """The directory a project folder's ``.project_root`` names; None without one; "" when unreadable."""
    try:
        return (folder / ".project_root").read_text("utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ""


def _safe_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


def qwen_code(root: Path, cwd: str, session_id: str) -> Path:
    """``projects/<cwd, every character not a letter or digit '-'>/chats/<id>.jsonl``."""
    return root / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", cwd) / "chats" / f"{session_id}.jsonl"


def claim_project(marker: Path, cwd: str) -> None:
    """Claim a Gemini CLI project folder: its ``.project_root`` made, naming ``cwd``, unless it already does."""
    make_folders(marker.parent)
    try:
        create_new(marker, cwd.encode())
    except FileExistsError:
        if _owner(marker.parent) != cwd:
            raise Refused(f"Gemini CLI's project folder {marker.parent} was claimed for another directory meanwhile: "
                          "run the resume again") from None


def make_folders(folder: Path) -> None:
    """The folders down to ``folder`` that are missing, as the agent would make them (private to the user)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise Refused(f"cannot make {folder}: {exc.strerror or exc}") from exc


def create_new(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Create ``path`` holding ``data``, whole or not at all, never replacing anything (see the module).
    :class:`FileExistsError` when the name is taken (by a file, a folder or a symlink)."""
    _remove_stale_temps(path.parent)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, mode, dir_fd=folder)
        except (AttributeError, OSError):  # no unnamed files here (macOS; some file systems)
            _create_through_temp(folder, path.name, data, mode)
        else:
            try:
                _write_all(fd, data)
                # linkat(AT_SYMLINK_FOLLOW) gives the unnamed file its name (a dir fd makes os.link call linkat).
                os.link(f"/proc/self/fd/{fd}", path.name, src_dir_fd=folder, dst_dir_fd=folder)
            except FileExistsError:
                raise
            except OSError:  # no /proc, or a file system that cannot name an unnamed file: the named way
                _create_through_temp(folder, path.name, data, mode)
            finally:
                os.close(fd)
        with contextlib.suppress(OSError):
            os.fsync(folder)
    finally:
        os.close(folder)


def _create_through_temp(folder: int, name: str, data: bytes, mode: int) -> None:
    temp = f".{secrets.token_hex(8)}{TEMP_SUFFIX}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _remove_stale_temps(folder: Path) -> None:
    """Named temporary files of ours a killed resume left in ``folder`` (only where unnamed files are missing)."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(TEMP_SUFFIX)]
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            if time.time() - os.lstat(folder / name).st_mtime > STALE_TEMP_SECONDS:
                os.unlink(folder / name)
