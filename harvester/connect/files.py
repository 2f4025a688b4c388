"""Reading and replacing an agent's config file: atomically, with a backup, and only if unchanged.

Reading (:func:`read`): the path is stat'ed and opened without blocking (``O_NONBLOCK``), and anything
but a regular file (a FIFO, a device, a socket, a directory) or a file over :data:`MAX_CONFIG_BYTES` is
refused unread: a FIFO at ``~/.claude.json`` never hangs ``connect`` or ``status``. The bytes come with
the file's identity (device, inode, size, mtime, ctime), owner and mode, as one :class:`Snapshot`.

Replacing (:func:`replace`), in this order, which keeps the file whole whatever happens: the new content
goes to a temporary file in the same directory, is given the old file's owner and mode, and fsynced; so
is the backup (the snapshot's bytes, i.e. what the file held before this edit). Then the file is
compared with the snapshot (identity first, then bytes): if an agent wrote it since we read it (Claude
Code rewrites ``~/.claude.json`` often), nothing is renamed and :class:`ChangedMeanwhile` tells the
caller to read again and redo its edit. Else the backup is renamed into place, the file is compared
once more, and the new content is renamed over it (one ``rename``: a reader sees the old bytes or the
new, never a part); then the directory is fsynced. A backup of an edit that replaced or removed the
user's own entry gets a name of its own that no later run overwrites.

Run as root on another user's file, the file and its backup keep that user as owner; a file or
directory created in their directory becomes theirs. A symlinked file (dotfile managers) is written
through the link, so the link stays a link.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".harvester-backup"
NEW_FILE_MODE = 0o600  # agents keep tokens beside their servers in some of these files
# A bound against what is no config at all, not against big configs: ~/.claude.json keeps every project's
# prompt history, and reports of 65-101 MB ones are common (anthropics/claude-code#6394, #2593).
MAX_CONFIG_BYTES = 256 * 1024 * 1024
EDIT_ATTEMPTS = 5  # reads and edits of one agent's files while an agent keeps rewriting them, then we say so

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


def replace(path: Path, text: str, snapshot: Snapshot | None, *, keep_backup: bool = False) -> Path | None:
    """Write ``text`` to ``path`` if it is still as ``snapshot`` (None: still absent); return the backup
    written, if any. ``keep_backup``: the backup gets a name no later call reuses."""
    target = _target(path)
    if snapshot is None:
        owner = _make_directories(target.parent)
        mode = NEW_FILE_MODE
    else:
        owner, mode = (snapshot.uid, snapshot.gid), snapshot.mode
    new: Path | None = _write_temporary(target, text.encode("utf-8"), mode, owner)
    old: Path | None = None
    backup = None
    try:
        if snapshot is not None:
            old = _write_temporary(target.with_name(target.name + BACKUP_SUFFIX), snapshot.text.encode("utf-8"),
                                   mode, owner)
            _check_unchanged(path, target, snapshot)
            backup, old = _place_backup(target, old, keep_backup), None
        _check_unchanged(path, target, snapshot)
        os.replace(new, target)
        new = None
    finally:
        for temporary in (new, old):
            if temporary is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
    _fsync_directory(target.parent)
    return backup


def _check_unchanged(path: Path, target: Path, snapshot: Snapshot | None) -> None:
    """The file is what we read (its identity, then its bytes: a same-size write within one clock tick
    keeps the identity), or still absent."""
    try:
        identity = _identity(os.stat(target))
        same = snapshot is not None and identity == snapshot.identity
        if snapshot is not None and same:
            current = read(target)
            same = current is not None and current.text == snapshot.text
    except FileNotFoundError:
        same = snapshot is None
    except (OSError, ValueError):
        same = False
    if not same:
        raise ChangedMeanwhile(0, f"{path} changed while we were editing it", str(path))


def _place_backup(target: Path, temporary: Path, keep: bool) -> Path:
    if not keep:
        backup = backup_path(target)
        os.replace(temporary, backup)
        return backup
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for n in range(1, 1000):
        backup = target.with_name(f"{target.name}{BACKUP_SUFFIX}-{stamp}{'' if n == 1 else f'-{n}'}")
        try:  # claim the name (no other run's backup is overwritten), then put ours over the empty file
            os.close(os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
        except FileExistsError:
            continue
        os.replace(temporary, backup)
        return backup
    raise FileExistsError(0, "no free backup name", str(target))


def _target(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def _make_directories(directory: Path) -> tuple[int, int] | None:
    """Create ``directory`` and its missing parents; the owner what we create there must have: as root in
    another user's directory, theirs (their agent must read the file), else ours (None)."""
    missing = []
    existing = directory
    while not existing.exists():
        missing.append(existing)
        existing = existing.parent
    info = existing.stat()
    owner = (info.st_uid, info.st_gid) if os.geteuid() == 0 and info.st_uid != 0 else None
    for made in reversed(missing):
        made.mkdir(exist_ok=True)
        if owner is not None:
            os.chown(made, *owner)
    return owner


def _write_temporary(beside: Path, data: bytes, mode: int, owner: tuple[int, int] | None) -> Path:
    """``data`` in a new file beside ``beside`` (same directory: the rename stays atomic), fsynced."""
    fd, temporary = tempfile.mkstemp(dir=beside.parent, prefix=f".{beside.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            _give(handle.fileno(), beside, owner)
            os.fchmod(handle.fileno(), mode)  # after the chown, which may clear set-id bits
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return Path(temporary)


def _give(fd: int, path: Path, owner: tuple[int, int] | None) -> None:
    """The file's owner and group as ``owner``; a file we cannot give back to its owner is not written."""
    if owner is None:
        return
    info = os.fstat(fd)
    if (info.st_uid, info.st_gid) == owner:
        return
    try:
        os.fchown(fd, *owner)
    except PermissionError as exc:
        raise PermissionError(exc.errno, f"cannot give the new {path.name} its owner back (uid {owner[0]}, gid "
                                         f"{owner[1]}); nothing written", str(path)) from exc


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
