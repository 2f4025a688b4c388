"""The bank deleted (or replaced) under ``harvester run``, which holds it open: how that is noticed, what is
carried into the bank made in its place, and what ``status`` is told.

A service holds its bank open for weeks; ``rm -rf`` of the data directory unlinks the files, and the open
connection goes on writing to a file no one can open again, while the archive beside it, written by path,
fails every import. The service (harvester/service/run.py) compares the file at the bank's path with the one it
opened (:func:`identity`), at every turn of its loop; when they differ it closes everything that holds the old
one, opens the path anew (a new bank and archive when nothing is there), records here what it carries over and
why and when (:func:`record`, in the new bank's ``bank_facts``), and re-scans every agent's store into it.

Why the order is safe: nothing is copied from the old file but what is not history (:func:`carried`, read through
the old connection, still open on the unlinked file): its facts (this machine's identity in a team bank, so the
team does not see a new machine; the recall key, so that the answers it sealed, which the agents' stores hold,
are still known as the harvester's own), and what ``forget`` left (the tombstones of forgotten sessions and of
their records, and the folders ``export`` wrote into), so that the re-scan does not bring back what was forgotten
while the agents' files still hold it. Each only where the new bank has none of its own, the recall key also where
the new bank holds no event yet (another command made it at the path a moment before: nothing of the agents'
read into it). All of it is written before the re-scan starts, in one transaction. Its sessions are not copied: the user
deleted them (``forget`` is the way to delete less). The new bank is filled by the
ordinary re-scan, whose transactions move each cursor with the events it read, so a crash or kill during it
loses nothing the agents' stores still hold. SQLite itself neither checkpoints nor deletes the ``-wal`` of a
database that was moved or unlinked when its last connection closes (``SQLITE_FCNTL_HAS_MOVED``), so closing the
old connection cannot touch a new bank's files at the same path.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from datetime import UTC, datetime
from typing import Any

import orjson

FACT = "bank_made_again"  # bank_facts key: the last time a service made this bank again, and why


def identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The file at ``path`` (device, inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


# What is carried from the old bank into the new one, table by table (the columns that say it all).
CARRIED = {
    "bank_facts": ("key", "value"),
    "excluded_sessions": ("harness", "native_id", "excluded_at", "reason", "source_path"),
    "forgotten_records": ("harness", "key"),
    "export_folders": ("path", "first_written_at", "last_written_at"),
}
RECALL_KEY = "recall_key"  # bank_facts: made by every new bank's migration, so carried over it when it sealed nothing


def carried(bank: Any) -> dict[str, list[tuple[Any, ...]]]:
    """What the old bank holds of :data:`CARRIED` (read through its still open connection: the file is gone), but
    the record of an earlier time it was made again; a table that cannot be read is left out."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table, columns in CARRIED.items():
        with contextlib.suppress(sqlite3.Error, AttributeError):
            rows = bank.conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            out[table] = [tuple(r) for r in rows if table != "bank_facts" or r[0] != FACT]
    return out


def record(bank: Any, why: str, kept: dict[str, list[tuple[Any, ...]]], previous: dict[str, Any] | None = None) -> None:
    """In the new bank, in one transaction: what was ``kept`` (:func:`carried`) where it has none of its own,
    and why and when it was made again (``previous``: the old bank's record, to count the times)."""
    entry = {"at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"), "why": why,
             "pid": os.getpid(), "times": (previous or {}).get("times", 0) + 1}
    with bank.transaction() as conn:
        fresh = conn.execute("SELECT 1 FROM events LIMIT 1").fetchone() is None
        for table, rows in kept.items():
            columns = CARRIED[table]
            conn.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
                             f"VALUES ({', '.join('?' * len(columns))})", rows)
        key = [value for name, value in kept.get("bank_facts", []) if name == RECALL_KEY]
        if key and fresh:
            conn.execute("UPDATE bank_facts SET value = ? WHERE key = ?", (key[0], RECALL_KEY))
        conn.execute("INSERT OR REPLACE INTO bank_facts (key, value) VALUES (?, ?)", (FACT, orjson.dumps(entry).decode()))


def recorded(bank: Any) -> dict[str, Any] | None:
    """The record :func:`record` left in this bank, for ``status``; None when it was never made again."""
    with contextlib.suppress(sqlite3.Error, AttributeError, orjson.JSONDecodeError):
        row = bank.conn.execute("SELECT value FROM bank_facts WHERE key = ?", (FACT,)).fetchone()
        found = orjson.loads(row[0]) if row else None
        return found if isinstance(found, dict) else None
    return None
