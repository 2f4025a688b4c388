"""Reading another program's SQLite database without creating or changing any file beside it.

A plain read-only connection (``mode=ro``) is not enough: on a database in WAL mode SQLite creates the
``-wal`` and ``-shm`` files when they are missing, and writes read marks into ``-shm`` on every read
transaction. Both are changes in the agent's directory, and neither works where that directory is
read-only. So the way a database is opened depends on what is beside it:

- not in WAL mode (a rollback journal, or no journal): ``mode=ro``. A reader only takes ``fcntl``
  locks, which change no file.
- WAL mode, no ``-wal`` and no ``-shm``: everything is in the main file (the last connection
  checkpointed and cleaned up), so it is opened ``immutable=1``: no locks, no side files. Should the
  agent start writing meanwhile, its writes go to a new ``-wal`` this read does not see; the next
  read, which finds the ``-wal``, does.
- WAL mode with ``-shm``: ``mode=ro&readonly_shm=1``. SQLite maps the existing ``-shm`` read-only and
  builds its own private copy of the WAL index in memory: it reads the ``-wal`` and writes nothing.
- WAL mode with a ``-wal`` but no ``-shm`` (a crash, a copied store): SQLite would have to create the
  ``-shm``. The database and its ``-wal`` are copied into a private directory and the copy is read.

What remains is a window of microseconds between looking at the side files and SQLite opening them:
an agent closing its last connection in exactly that window deletes them, and SQLite would then create
an empty ``-wal``. The next agent start treats an empty ``-wal`` as no ``-wal``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from urllib.parse import quote

WAL_MODE = 2  # header bytes 18 and 19 (file format write / read version): 1 legacy, 2 WAL
HEADER = b"SQLite format 3\x00"


class NotADatabase(OSError):
    """The file is not a SQLite database (another format, or too short)."""


def read_header(path: str) -> bytes:
    """The first 100 bytes of a regular file, read without blocking (a FIFO is refused, not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, 100)
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_readonly(path: str, timeout: float = 2.0) -> Iterator[sqlite3.Connection]:
    """A connection that reads ``path`` and cannot change it or anything beside it (see the module)."""
    header = read_header(path)
    if len(header) == 0:
        raise NotADatabase(f"{path} is empty")
    if len(header) < 100 or not header.startswith(HEADER):
        raise NotADatabase(f"{path} is not a SQLite database")
    wal_mode = header[18] == WAL_MODE or header[19] == WAL_MODE
    has_wal, has_shm = os.path.exists(f"{path}-wal"), os.path.exists(f"{path}-shm")
    uri = f"file:{quote(path)}?mode=ro"
    copy_dir = None
    if wal_mode and not has_wal and not has_shm:
        uri += "&immutable=1"
    elif wal_mode and has_shm:
        uri += "&readonly_shm=1"
    elif wal_mode:
        import tempfile  # here, as shutil: every bank opened comes through this module, and seldom by this way

        copy_dir = tempfile.mkdtemp(prefix="harvester-sqlite-")
        uri = f"file:{quote(_copy_with_wal(path, copy_dir))}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
        try:
            # Text the agent stored that is not valid UTF-8 must cost that value, not the whole query.
            conn.text_factory = lambda data: data.decode("utf-8", "replace")
            yield conn
        finally:
            conn.close()
    finally:
        if copy_dir is not None:
            import shutil

            shutil.rmtree(copy_dir, ignore_errors=True)


def _copy_with_wal(path: str, directory: str) -> str:
    import shutil

    target = os.path.join(directory, "store.db")
    shutil.copyfile(path, target)
    with contextlib.suppress(FileNotFoundError):
        shutil.copyfile(f"{path}-wal", f"{target}-wal")
    return target
