"""The bank deleted (or replaced) under ``harvester run``, which holds it open: how that is noticed, what is
carried into the bank made in its place, and what ``status`` is told.

A service holds its bank open for weeks; ``rm -rf`` of the data directory unlinks the files, and the open
connection goes on writing to a file no one can open again, while the archive beside it, written by path,
fails every import. The service (harvester/service/run.py) compares the file at the bank's path with the one it
opened (:func:`identity`), at every turn of its loop; when they differ it closes everything that holds the old
one, opens the path anew (a new bank and archive when nothing is there), re-scans every agent's store into it,
and records here why and when (:func:`record`), in the new bank's ``bank_facts``.

Why the order is safe: nothing is copied from the old file but its facts (this machine's identity in a team
bank, so the team does not see a new machine: :func:`facts`), and those only where the new bank has none. Its
sessions are not: the user deleted them (``forget`` is the way to delete less). The new bank is filled by the
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


def facts(bank: Any) -> list[tuple[str, str]]:
    """The old bank's facts (read through its still open connection: the file is gone), but the record of an
    earlier time it was made again; none when they cannot be read."""
    with contextlib.suppress(sqlite3.Error, AttributeError):
        return [(k, v) for k, v in bank.conn.execute("SELECT key, value FROM bank_facts") if k != FACT]
    return []


def record(bank: Any, why: str, carried: list[tuple[str, str]], previous: dict[str, Any] | None = None) -> None:
    """In the new bank, in one transaction: the facts ``carried`` where it has none of its own, and why and when
    it was made again (``previous``: the old bank's record, to count the times)."""
    entry = {"at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"), "why": why,
             "pid": os.getpid(), "times": (previous or {}).get("times", 0) + 1}
    with bank.transaction() as conn:
        conn.executemany("INSERT OR IGNORE INTO bank_facts (key, value) VALUES (?, ?)", carried)
        conn.execute("INSERT OR REPLACE INTO bank_facts (key, value) VALUES (?, ?)", (FACT, orjson.dumps(entry).decode()))


def recorded(bank: Any) -> dict[str, Any] | None:
    """The record :func:`record` left in this bank, for ``status``; None when it was never made again."""
    with contextlib.suppress(sqlite3.Error, AttributeError, orjson.JSONDecodeError):
        row = bank.conn.execute("SELECT value FROM bank_facts WHERE key = ?", (FACT,)).fetchone()
        found = orjson.loads(row[0]) if row else None
        return found if isinstance(found, dict) else None
    return None
