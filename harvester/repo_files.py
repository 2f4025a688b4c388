"""Files the harvester writes into a directory it does not own: ``harvester export``'s folder, in a repository.

A repository is other people's: what a commit brings can be a symlink (``.harvester -> ../elsewhere``, one
exported file -> ``/dev/zero``), a FIFO, a directory, in any place the export writes. So every operation here
goes through a descriptor of the folder, opened one path component at a time without following a symlink
(``O_NOFOLLOW | O_DIRECTORY``), and names a single entry of it: nothing can lead a write, a read or a removal
out of the folder, and a path checked is the path used (no check-then-use race on the path).

The order of operations: a file is written whole under a temporary name (``.export-`` and random letters,
created ``O_EXCL``: never an existing entry) and then renamed over its name, so a reader or a kill never sees
half a file; a kill -9 leaves the temporary file, which the next writer removes (:meth:`Folder.remove_stale`,
under the folder's lock, so never a running writer's). An existing entry is read only when it is a regular
file of exactly the expected size (``O_NONBLOCK``: a FIFO is not waited on); anything else in a file's place
is replaced by the rename, which replaces the entry itself and never writes through it.

The names of exported files come from the harness and the session id alone (:func:`file_name`): ``forget``
finds the files of a session it removes by that rule, in every folder the bank recorded.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

FORMATS = ("md", "jsonl")
TEMP_PREFIX = ".export-"
_TEMP = re.compile(r"\.export-[a-z0-9_]{8,32}\Z")  # ours (and tempfile.mkstemp's, which earlier versions used)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 120
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def file_name(harness: str, native_id: str, fmt: str) -> str:
    """``<harness>--<id>.<fmt>``, from letters, digits, ``-`` and ``_`` only (anything else in an id is
    replaced, and a hash of the whole id keeps names apart): no path can leave the folder, no name holds a
    control character, no name starts with a dot."""
    safe = _UNSAFE.sub("_", native_id)[:80]
    if safe != native_id:
        safe += "-" + hashlib.sha256(native_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', harness)[:30]}--{safe}.{fmt}"[:MAX_NAME]


def session_file_names(harness: str, native_id: str) -> list[str]:
    """Every name an export may have given a session's file (one per format)."""
    return [file_name(harness, native_id, fmt) for fmt in FORMATS]


class Refused(Exception):
    """The folder cannot be written without following a symlink or leaving where it must stay."""


class Folder:
    """An open folder: every entry is named relative to its descriptor (see the module). Holds the folder's
    lock (``flock``) while open: two exports, or an export and ``forget``, take turns."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path  # what it is called when said to a person: its real path

    @classmethod
    def open_in_repository(cls, root: str, relative: str, create: bool = True) -> Folder:
        """``root/relative``, a folder inside the repository ``root``: each component below ``root`` opened
        without following a symlink (created when missing, with ``create``). :class:`Refused` names the
        component that is a symlink or not a directory."""
        real_root = os.path.realpath(root)
        parts = [p for p in Path(os.path.normpath(relative)).parts if p not in ("", ".")]
        if ".." in parts:
            raise Refused(f"{relative} is not inside the repository {real_root}")
        try:
            fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise Refused(f"the repository {real_root} cannot be opened: {exc.strerror}") from exc
        done: list[str] = []
        try:
            for part in parts:
                done.append(part)
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                try:
                    child = os.open(part, _DIRECTORY, dir_fd=fd)
                except OSError as exc:
                    shown = os.path.join(*done)
                    if exc.errno == errno.ELOOP:
                        raise Refused(f"{shown} in {real_root} is a symlink: the export writes only inside the "
                                      "repository (remove the link, or give --to a directory of your own)") from exc
                    if exc.errno == errno.ENOTDIR:
                        raise Refused(f"{shown} in {real_root} is not a directory") from exc
                    raise Refused(f"{shown} in {real_root} cannot be opened: {exc.strerror}") from exc
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return cls._locked(fd, Path(real_root, *parts))

    @classmethod
    def open_path(cls, path: str, create: bool = True) -> Folder:
        """A folder the user named outside any repository: their choice, links and all (resolved once);
        only its entries are then held to the rules of the module."""
        real = os.path.realpath(path)
        if create:
            os.makedirs(real, exist_ok=True)
        try:
            fd = os.open(real, _DIRECTORY)
        except OSError as exc:
            raise Refused(f"{real} cannot be opened as a directory: {exc.strerror}") from exc
        return cls._locked(fd, Path(real))

    @classmethod
    def open_recorded(cls, path: str) -> Folder:
        """A folder recorded as written before (a real path): opened from ``/`` one component at a time
        without following a symlink; :class:`Refused` when one has become a link since."""
        absolute = os.path.abspath(path)
        return cls.open_in_repository(os.sep, os.path.relpath(absolute, os.sep), create=False)

    @classmethod
    def _locked(cls, fd: int, path: Path) -> Folder:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the lock goes with it
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- entries ------------------------------------------------------------------------------
    def holds(self, name: str, content: bytes) -> bool:
        """Whether ``name`` is a regular file holding exactly ``content``. Nothing else is read: not a link,
        not a FIFO or a device, not a file of another size."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError:
            return False  # missing, a link (ELOOP), unreadable: written anew
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != len(content):
                return False
            held = bytearray()
            while len(held) <= len(content):  # one byte past the size: a file that grew is not this one
                part = os.read(fd, len(content) + 1 - len(held))
                if not part:
                    break
                held += part
            return held == content
        finally:
            os.close(fd)

    def write(self, name: str, content: bytes) -> None:
        """``name`` holds ``content``, written whole under a temporary name and renamed over the entry."""
        while True:
            temp = TEMP_PREFIX + secrets.token_hex(8)
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=self.fd)
                break
            except FileExistsError:
                continue
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(content)
            os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=self.fd)
            raise

    def remove(self, name: str) -> str | None:
        """Remove ``name`` if it is a regular file; None when it is gone (or was never there), else why not."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc.strerror or str(exc)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file (left as it is)"
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc.strerror or str(exc)
        return None

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def remove_stale(self) -> int:
        """The temporary files a killed writer left (regular files of our name shape only): removed. Called
        with the lock held, so no running writer's."""
        removed = 0
        for name in self.names():
            if _TEMP.match(name) and self.remove(name) is None:
                removed += 1  # (or gone meanwhile: as good)
        return removed


def is_inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it, as written (compare real paths for a real answer)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
