"""Opening a SQLite bank: refusing a file that is not one before a byte of it changes, creating one 0600 in
WAL mode, and splitting migration scripts into statements. Used by :mod:`harvester.bank.sqlite`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

from harvester.bank.errors import NotABank
from harvester.bank.migrations import MIGRATIONS
from harvester.capture.contract import BankError
from harvester.capture.foreign_sqlite import HEADER, NotADatabase, open_readonly, read_header

# Stamped in every bank's header (``PRAGMA application_id``, "HVST"): a SQLite file without it is
# another program's database, which the harvester never changes.
APPLICATION_ID = 0x48565354
# What a bank written before the stamp existed holds (user_version 1 to 4): it is ours.
_BANK_TABLES = {"sessions", "events", "sources", "problems", "imports", "directories"}
# The banks this process holds open, by (device, inode): how many connections. Closing ANY descriptor of a file
# drops every POSIX lock the process holds on it, SQLite's included (fcntl locks are the process's, not the
# descriptor's). A second open of a bank in one process (the service's push and forwarding threads) would do
# that with its header check (read_header opens and closes the file): the next process to close the bank would
# then find no other holder, checkpoint and delete the WAL under this one's connections, whose writes no one
# else would see again, and a kill would lose. SQLite's own opens of one file share a descriptor; ours must not
# add one, so a bank already open here is not read again.
_HELD: dict[tuple[int, int], int] = {}
_HELD_LOCK = threading.Lock()


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def hold(path: str) -> tuple[int, int] | None:
    """Note that this process holds the bank at ``path`` open; :func:`release` the key when it is closed."""
    key = _identity(path)
    if key is not None:
        with _HELD_LOCK:
            _HELD[key] = _HELD.get(key, 0) + 1
    return key


def release(key: tuple[int, int] | None) -> None:
    if key is None:
        return
    with _HELD_LOCK:
        if _HELD.get(key, 0) > 1:
            _HELD[key] -= 1
        else:
            _HELD.pop(key, None)


def check_bank(path: str) -> None:
    """Refuse (:class:`NotABank`) a file at ``path`` that is not a harvester bank (another program's
    database, another format), having read it without changing it or anything beside it. A missing
    or empty file is a bank about to be created. A bank this process holds open was checked when it was opened,
    and is not read again (see _HELD)."""
    key = _identity(path)
    with _HELD_LOCK:
        if key is not None and key in _HELD:
            return
    # A bank another process is creating can look, for a moment, like a database with some tables and no stamp:
    # a copy of its file taken while the creator's last close checkpoints it mixes pages from before and after.
    # What is not ours stays so: look again for a while before saying so.
    for look in range(UNSTAMPED_LOOKS):
        reason = _not_a_bank(path)
        if reason is None:
            return
        if not reason.startswith(UNSTAMPED) or look == UNSTAMPED_LOOKS - 1:
            raise NotABank(path, reason)
        time.sleep(0.1)


UNSTAMPED = "it is another program's SQLite database (no harvester tables)"
UNSTAMPED_LOOKS = 20  # two seconds: a creating bank is stamped (or seen in its WAL) in milliseconds


def _not_a_bank(path: str) -> str | None:
    """Why the file at ``path`` is not a bank, or None when it is one (or about to be)."""
    try:
        header = read_header(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BankError(f"cannot open the bank at {path}: {exc}") from exc
    if not header:
        return None
    if len(header) < 100 or not header.startswith(HEADER):
        return "it is not a SQLite database"
    if int.from_bytes(header[68:72], "big") == APPLICATION_ID:
        return None  # stamped: the one byte range that says so (the schema version is checked when opened)
    for attempt in range(50):
        try:
            with open_readonly(path, timeout=30.0) as conn:
                app, version = (conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("application_id", "user_version"))
                tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            break
        except NotADatabase:
            return "it is not a SQLite database"
        except sqlite3.OperationalError as exc:
            # Another process is creating this bank right now (its -shm not yet set up): look again.
            if attempt == 49:
                raise BankError(f"cannot open the bank at {path}: {exc}") from exc
            time.sleep(0.1)
        except (sqlite3.Error, OSError) as exc:
            return f"it cannot be read as a SQLite database ({exc})"
    if app == APPLICATION_ID or (app == 0 and not tables and version == 0):
        return None  # stamped (its header not yet checkpointed), or an empty database: a bank being created
    if app == 0 and tables >= _BANK_TABLES and 1 <= version <= len(MIGRATIONS):
        return None  # written before banks were stamped
    return f"it is another program's SQLite database (application id {app:#x})" if app else UNSTAMPED


def _statements(script: str) -> list[str]:
    """Split a migration script into statements, keeping trigger bodies whole."""
    out: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                out.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        out.append(buffer.strip())
    return out


def _use_wal(conn: sqlite3.Connection, attempts: int = 100) -> None:
    """WAL lets readers (status, search) work while the service writes. The mode is stored in the
    file, so this is a no-op after creation; but two processes creating a bank at once can race on
    the switch, which reports "locked" without waiting on busy_timeout: retry it."""
    for attempt in range(attempts):
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _connect(path: str) -> sqlite3.Connection:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    # Bank files hold people's conversations: 0600 from the first byte, -wal and -shm included
    # (SQLite gives them the database file's mode; the umask covers the window before that).
    if not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    old_umask = os.umask(0o077)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        # Transcripts are mostly long texts: 16 KiB pages spill to overflow pages far less often than
        # the 4 KiB default and write the bank about 1.6x faster (bench/bench_scan.py). Only takes
        # effect on a new, empty file.
        conn.execute("PRAGMA page_size = 16384")
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA cache_size = -8192")  # 8 MiB: more bought nothing in bench_scan.py, and the service stays small
    finally:
        os.umask(old_umask)
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path + suffix).st_mode & 0o077:
                os.chmod(path + suffix, 0o600)
    return conn
