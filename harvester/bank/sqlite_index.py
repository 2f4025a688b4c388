"""The full-text index: caught up with the events after a large import, then merged into one segment.

Catching up (migration 16). Events are committed with their source's cursor; the index may follow later, up to
a watermark in the bank (``index_watermark.indexed_through``): every event at or under it is in the index, none
above it. A write that indexes its own events (the default: a live append is searchable when it commits) indexes
everything above the watermark and moves it, in the write's transaction. A large scan defers that
(:meth:`SqliteIndex.defer_index`): its sources commit events alone, and the index catches up in batches of
:data:`CATCH_UP_EVENTS`, each batch and the watermark's move one transaction of its own. So a kill -9 at any point
leaves the watermark true: an event is either indexed and under it, or above it and not indexed; the next process
that opens the bank for writing, and the next write, catch up from there. New events always get ids above the
watermark (``first_free_id``): an id freed by a delete above the index is never given to one the index would skip.
Search is exact once a scan returns (it catches up before it does), and under ``run`` as soon as an append commits.

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

from harvester.bank.migrations import search_text

# Events indexed a transaction when catching up: the fewer transactions, the fewer index segments to write and
# merge (one segment per transaction: 480 transactions cost 5.97 CPU-s of FTS5 where one cost 3.66, on the bench
# tree); the write lock is let go between batches, for the other writer of a parallel scan and the service.
CATCH_UP_EVENTS = 20_000
SETTLE_AFTER_EVENTS = 20_000  # an import smaller than this leaves the index to automerge
SETTLE_AFTER_SHARE = 0.1  # ... and one smaller than this share of the bank's events
MERGE_PAGES = 2000  # pages merged a transaction: the write lock is let go between steps (the service waits)


class _Bank(Protocol):
    conn: sqlite3.Connection
    index_deferred: bool

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...


INDEX_FROM = f"INSERT INTO events_fts (rowid, text) SELECT id, {search_text()} FROM events WHERE id > ? AND id <= ?"


def watermark(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT indexed_through FROM index_watermark").fetchone()[0]


def last_event(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def first_free_id(conn: sqlite3.Connection) -> tuple[int, bool]:
    """(the id a new event gets, whether it must be given explicitly): above every event and the watermark.
    SQLite's own choice is the last event's id + 1; after the last events were deleted that may lie under
    the watermark, where the index would never look for it."""
    top, mark = last_event(conn), watermark(conn)
    return max(top, mark) + 1, top < mark


def index_through(conn: sqlite3.Connection, mark: int, upto: int) -> None:
    """Index the events in (mark, upto] and move the watermark there, in the caller's transaction."""
    if upto > mark:
        conn.execute(INDEX_FROM, (mark, upto))
        conn.execute("UPDATE index_watermark SET indexed_through = ?", (upto,))


class SqliteIndex:
    """What SqliteBank does to its full-text index beside writing events into it."""

    def defer_index(self: _Bank, on: bool = True, catch_up: bool = True) -> None:
        """``on``: the writes that follow leave their events to :meth:`catch_up_index` (a large scan). Turned off,
        writes index their own events again, and (``catch_up``) the index catches up now."""
        self.index_deferred = on
        if not on and catch_up:
            self.catch_up_index()  # type: ignore[attr-defined]

    def index_lag(self: _Bank) -> int:
        """How many event ids above the watermark (not yet searchable)."""
        return max(0, last_event(self.conn) - watermark(self.conn))

    def catch_up_index(self: _Bank, batch: int = CATCH_UP_EVENTS, whole: bool = True) -> int:
        """Index every event above the watermark, ``batch`` ids a transaction; the ids indexed. Not ``whole``:
        only whole batches (in the middle of a scan, the rest waits for more)."""
        done = 0
        if not self.index_lag():  # type: ignore[attr-defined]
            return 0  # (without the write lock: a bank opened beside a writer does not wait for it)
        while True:
            with self.transaction() as conn:  # read under the write lock: another writer may have moved it
                mark, top = watermark(conn), last_event(conn)
                upto = min(top, mark + batch) if whole or top - mark >= batch else mark
                index_through(conn, mark, upto)
            done += upto - mark
            if upto >= top or (top - upto < batch and not whole):
                return done

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
