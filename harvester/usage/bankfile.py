"""A report's quick way into the bank: a read-only connection to a bank that is up to date, without the bank
module's machinery (its import and opening are a fifth of a report's time).

Only a file that is certainly a current bank is opened this way: a regular file, SQLite's header, stamped with the
bank's application id (harvester/bank/sqlite_open.py), in WAL mode, and whose schema version, read through the
connection, is this harvester's. Anything else (no bank, an older or newer one, another program's file, one
mid-creation) gets None, and the caller opens the bank the usual way, which migrates, refuses or says why.

Nothing is written. With its -wal and -shm beside it (a process holds the bank open) the connection is read-only
(``mode=ro``: it sees every commit and creates nothing); without them (no one holds it) SQLite must make them to
read a WAL database, as the usual way does for a reader that may write the bank: the connection is then opened
where this user may write beside the bank, and only reads (``query_only``).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from urllib.parse import quote

from harvester.bank.migrations import MIGRATIONS

APPLICATION_ID = 0x48565354  # harvester/bank/sqlite_open.APPLICATION_ID ("HVST"); tests/test_usage_cli.py holds them equal
_HEADER = b"SQLite format 3\x00"
_WAL = 2  # the header's read and write versions in WAL mode


def quick_connection(path: str | os.PathLike[str]) -> sqlite3.Connection | None:
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            header = os.read(fd, 100)
        finally:
            os.close(fd)
    except OSError:
        return None
    if (len(header) < 100 or not header.startswith(_HEADER) or header[18] != _WAL
            or int.from_bytes(header[68:72], "big") != APPLICATION_ID):
        return None
    if os.path.isfile(path + "-wal") and os.path.isfile(path + "-shm"):
        mode = "ro"
    elif os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
        mode = "rw"
    else:
        return None
    conn = None
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode={mode}", uri=True, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA query_only = ON")
        conn.text_factory = lambda data: data.decode("utf-8", "replace")
        if conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS):
            return conn
    except sqlite3.Error:
        pass
    if conn is not None:
        conn.close()
    return None
