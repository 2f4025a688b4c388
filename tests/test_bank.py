"""The bank file itself: creation races, migrations, permissions; the order it keeps events in."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from harvester.bank import open_bank
from harvester.bank.migrations import MIGRATIONS
from harvester.capture.contract import Cursor, SessionWrite, Write
from harvester.model import Event, SessionPatch


def _open_and_close(path: str, barrier: multiprocessing.synchronize.Barrier) -> None:  # type: ignore[name-defined]
    barrier.wait()
    open_bank(path).close()


def test_several_processes_can_create_one_bank_at_once(tmp_path: Path) -> None:
    """`harvester status` beside a starting service: both may be first to create the file."""
    for round_ in range(3):
        path = str(tmp_path / f"bank-{round_}.sqlite")
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(4)
        procs = [ctx.Process(target=_open_and_close, args=(path, barrier)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0, 0, 0, 0]
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


def test_an_old_bank_is_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "bank.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with open_bank(path) as bank:
        assert bank.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert bank.excluded_sessions("codex", ["x"]) == set()  # a table of migration 2


def test_placed_events_are_kept_in_their_agents_order(tmp_path: Path) -> None:
    """A harness that stores events out of order gives each a place: one that arrives after later ones
    goes where it belongs, and a second sighting at an earlier place moves it there."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        cursor = Cursor("dcode", "/store.db", "sqlite")

        def write(*placed: tuple[str, str]) -> None:
            events = [Event("s1", uid, "assistant", "text", uid, place=place) for uid, place in placed]
            bank.apply(Write(cursor, [SessionWrite("dcode", SessionPatch("s1"), "coding-agent::demo")], events,
                             [], is_new_source=cursor.generation == 0))

        def order() -> list[tuple[int, str]]:
            return bank.conn.execute("SELECT seq, uid FROM events ORDER BY seq").fetchall()

        write(("a", "1"), ("c", "3"))
        write(("d", "4"))
        assert order() == [(1, "a"), (2, "c"), (3, "d")]
        write(("b", "2"))  # stored late by the agent
        assert order() == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
        write(("d", "0"))  # met again at an earlier place (a snapshot holding it)
        assert order() == [(1, "d"), (2, "a"), (3, "b"), (4, "c")]
        write(("e", "5"), ("a", "9"))  # a later place never moves an event back
        assert order() == [(1, "d"), (2, "a"), (3, "b"), (4, "c"), (5, "e")]
        assert bank.conn.execute("SELECT event_count, last_seq FROM sessions").fetchone() == (5, 5)


def test_an_event_rows_uid_and_content_hash_are_where_the_bank_reads_them() -> None:
    """bank/sqlite_forget.without_copies reads a row's uid and content hash by position: a column added to
    event_rows must not move them unseen (it did once, and forgotten records came back in forks)."""
    from harvester.bank.sqlite_events import ROW_CONTENT_HASH, ROW_UID, event_rows
    from harvester.model import Event

    event = Event("s", "uid-of-the-record", "user", "text", "what it said", meta={"injected": True, "recall": True})
    [row] = event_rows([event])
    assert (row[ROW_UID], row[ROW_CONTENT_HASH]) == ("uid-of-the-record", event.content_hash())
