"""Reading and replacing an agent's config file: atomically, with a backup, and only if unchanged.

The order is what keeps a file whole whatever happens: the backup (``<file>.harvester-backup``, the
previous bytes, mode kept) is written and renamed into place first; the new content goes to a temporary
file in the same directory, is fsynced, given the old file's mode, and renamed over the file (one
``rename``: a reader sees the old bytes or the new, never a part); then the directory is fsynced. Just
before the rename the file is read again, and if an agent rewrote it since we planned (Claude Code
rewrites ``~/.claude.json`` often), nothing is replaced and the caller is told to run again.

A symlinked file (dotfile managers) is written through the link, so the link stays a link.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

BACKUP_SUFFIX = ".harvester-backup"
NEW_FILE_MODE = 0o600  # agents keep tokens beside their servers in some of these files


class ChangedMeanwhile(RuntimeError):
    pass


def read_text(path: Path) -> str | None:
    """The file's text exactly (no newline translation), or None when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return data.decode("utf-8")  # UnicodeDecodeError is a ValueError: the caller refuses the file


def backup_path(path: Path) -> Path:
    return _target(path).with_name(_target(path).name + BACKUP_SUFFIX)


def replace(path: Path, text: str, expected: str | None) -> Path | None:
    """Write ``text`` to ``path`` if it still holds ``expected``; return the backup written, if any."""
    target = _target(path)
    current = read_text(target)
    if current != expected:
        raise ChangedMeanwhile(f"{path} changed while we were editing it; nothing written, run again")
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(target.stat().st_mode) if current is not None else NEW_FILE_MODE
    backup = None
    if current is not None:
        backup = backup_path(path)
        _write_atomic(backup, current.encode("utf-8"), mode)
    _write_atomic(target, text.encode("utf-8"), mode)
    return backup


def _target(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def unified_diff(path: Path, before: str | None, after: str) -> str:
    """``diff -u`` of the change, with its "no newline at end of file" markers."""
    old, new = _lines(before or ""), _lines(after)
    name = str(path)
    import difflib  # here: status reads these files, and shows no diff

    lines = difflib.unified_diff(old, new, "/dev/null" if before is None else name, name)
    return "".join(lines)


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
