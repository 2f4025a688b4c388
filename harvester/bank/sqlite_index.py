"""The full-text index after a large import: merged, so that search reads one list of events per word.

FTS5 writes each transaction's terms as a new segment and merges segments of a size as they pile up
(automerge): after a backfill of a million events the index is a dozen segments, and every word a query
looks up is looked up in each. Merging them into one costs about 3 s per 300,000 events
(bench/bench_search.py --settle measures search before and after); a scan does it when it added a good part
of the bank (:meth:`SqliteIndex.settle_index`), not after every few appends, which automerge keeps in check.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Protocol

SETTLE_AFTER_EVENTS = 20_000  # an import smaller than this leaves the index to automerge
SETTLE_AFTER_SHARE = 0.1  # ... and one smaller than this share of the bank's events
MERGE_PAGES = 2000  # pages merged a transaction: the write lock is let go between steps (the service waits)


class _Bank(Protocol):
    conn: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...


class SqliteIndex:
    """What SqliteBank does to its full-text index beside writing events into it."""

    def settle_index(self: _Bank, events_added: int, force: bool = False) -> bool:
        """Merge the index's segments into one after an import of ``events_added`` events, if that was a
        large one (or ``force``). True when it merged."""
        (held,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
        large = events_added >= SETTLE_AFTER_EVENTS and events_added >= SETTLE_AFTER_SHARE * held
        if not (force or large) or _segments(self.conn) < 2:
            return False
        for _ in _merge_steps(self):
            pass
        return True


def _segments(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(DISTINCT segid) FROM events_fts_idx").fetchone()[0]


def _merge_steps(bank: _Bank) -> Iterator[int]:
    """FTS5's 'merge' with a negative count merges segments of every level, MERGE_PAGES pages at a time, one
    transaction each; it changed nothing (sqlite3_total_changes, as FTS5 documents it) when it is done."""
    while True:
        with bank.transaction() as conn:
            before = conn.total_changes
            conn.execute("INSERT INTO events_fts (events_fts, rank) VALUES ('merge', ?)", (-MERGE_PAGES,))
            changed = conn.total_changes - before
        if changed < 2:  # the command's own row, with nothing merged
            return
        yield changed
