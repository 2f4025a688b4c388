"""Reading and replacing an agent's config file: atomically, with a backup, and only if unchanged.

Reading (:func:`read`): the path is stat'ed and opened without blocking (``O_NONBLOCK``), and anything
but a regular file (a FIFO, a device, a socket, a directory) or a file over :data:`MAX_CONFIG_BYTES` is
refused unread: a FIFO at ``~/.claude.json`` never hangs ``connect`` or ``status``.

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
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".harvester-backup"
NEW_FILE_MODE = 0o600  # agents keep tokens beside their servers in some of these files
# A bound against what is no config at all, not against big configs: ~/.claude.json keeps every project's
# prompt history, and reports of 65-101 MB ones are common (anthropics/claude-code#6394, #2593).
MAX_CONFIG_BYTES = 256 * 1024 * 1024
EDIT_ATTEMPTS = 5  # reads of a file an agent keeps rewriting while we read it, then we say so

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class ChangedMeanwhile(OSError):
    pass


class NotAConfigFile(OSError):
    """A path that is not a regular file, or is too large to be a config: refused, never read."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A file's text as read, and what must still hold for us to replace it."""

    text: str
    identity: tuple[int, ...]  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns
    uid: int
    gid: int
    mode: int


def read(path: Path) -> Snapshot | None:
    """The file's text exactly (no newline translation) with its identity; None when it does not exist.
    Raises :class:`NotAConfigFile` (an ``OSError``) for what is not a regular file of a sane size, and
    ``UnicodeDecodeError`` (a ``ValueError``) for what is not UTF-8: the caller refuses the file."""
    for _ in range(EDIT_ATTEMPTS):
        try:
            _refuse(path, os.stat(path))  # before opening: opening a device can do things
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        try:
            info = os.fstat(fd)
            _refuse(path, info)  # something else may have been put there since the stat
            data = _read_bounded(path, fd)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if _identity(after) == _identity(info):  # else it was written while we read: read it again
            return Snapshot(data.decode("utf-8"), _identity(info), info.st_uid, info.st_gid,
                            stat.S_IMODE(info.st_mode))
    raise ChangedMeanwhile(0, "it kept changing while we read it", str(path))


def read_text(path: Path) -> str | None:
    snapshot = read(path)
    return None if snapshot is None else snapshot.text


def _refuse(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "an unknown kind of file")
        raise NotAConfigFile(0, f"{kind}, not a regular file", str(path))
    if info.st_size > MAX_CONFIG_BYTES:
        raise NotAConfigFile(0, _too_large(info.st_size), str(path))


def _too_large(size: int) -> str:
    return f"{size // (1 << 20)} MiB, larger than the {MAX_CONFIG_BYTES >> 20} MiB a config may be"


def _read_bounded(path: Path, fd: int) -> bytes:
    chunks, total = [], 0
    while chunk := os.read(fd, 1 << 20):
        total += len(chunk)
        if total > MAX_CONFIG_BYTES:  # grown since the fstat
            raise NotAConfigFile(0, _too_large(total), str(path))
        chunks.append(chunk)
    return b"".join(chunks)


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


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
