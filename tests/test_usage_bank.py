"""The per-response usage table (migration 16, harvester/bank/sqlite_usage.py): written with its events, one
counted row per response however many copies the agents wrote, rows that follow their events out and in."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harvester.bank import open_bank
from harvester.bank.sqlite_usage import utc_ts
from harvester.capture.contract import Cursor, SessionWrite, Write
from harvester.model import Event, SessionPatch, Usage
from tests.helpers import as_migration_15_left_it, as_migration_18_left_it


def _write(bank, path: str, session: str, events: list[Event], revise: bool = False, harness: str = "claude-code"):
    row = bank.conn.execute("SELECT generation FROM sources WHERE path = ?", (path,)).fetchone()
    cursor = Cursor(harness, path, "jsonl", generation=row[0] if row else 0)
    return bank.apply(Write(cursor, [SessionWrite(harness, SessionPatch(session), "coding-agent::demo")], events, [],
                            is_new_source=row is None, revise=revise))


def _answer(session: str, uid: str, response: str | None, out: int, ts: str = "2026-11-29T10:00:00.000Z") -> Event:
    return Event(session, uid, "assistant", "text", f"answer {uid}", ts=ts, model="claude-sonnet-4-5",
                 usage=Usage(input=10, output=out, cache_read=100, response=response))


def _counted(bank) -> list[tuple]:
    _hours_are_the_counted_rows(bank.conn)
    return bank.conn.execute(
        "SELECT s.native_id, u.response, u.tokens_out FROM usage u JOIN sessions s ON s.id = u.session_id "
        "WHERE u.counted ORDER BY u.response").fetchall()


def _hours_are_the_counted_rows(conn: sqlite3.Connection) -> None:
    """usage_hours, kept by triggers, holds what summing the counted rows gives."""
    from harvester.bank.migrations_usage import recorded_kind, usage_tier

    summed = conn.execute(
        f"SELECT coalesce(substr(ts, 1, 13), ''), session_id, harness, coalesce(model, ''), {usage_tier('')}, "
        f"{recorded_kind('')}, count(*), sum(tokens_in), sum(tokens_out), sum(tokens_cache_read), "
        "sum(tokens_cache_write), sum(tokens_cache_write_1h), sum(tokens_reasoning), coalesce(sum(cost), 0) "
        "FROM usage WHERE counted = 1 GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6").fetchall()
    assert conn.execute("SELECT * FROM usage_hours ORDER BY 1, 2, 3, 4, 5, 6").fetchall() == summed


def test_a_response_copied_into_another_session_is_counted_once_and_survives_its_original(tmp_path: Path) -> None:
    """A fork (or a resume that copies the history) repeats the original's responses with their ids: the copy is
    kept (the fork shows it) but not counted again; when the original goes, the copy counts."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "/a.jsonl", "original", [_answer("original", "u1", "msg_1", 5), _answer("original", "u2", None, 7)])
        _write(bank, "/b.jsonl", "fork", [_answer("fork", "u1", "msg_1", 5), _answer("fork", "u3", "msg_3", 9)])
        counted = _counted(bank)
        assert [(s, r) for s, r, _ in counted if not r.startswith("event:")] == [("original", "msg_1"), ("fork", "msg_3")]
        assert len(counted) == 3  # msg_1 once, the original's id-less answer, msg_3
        assert bank.conn.execute("SELECT count(*) FROM usage").fetchone()[0] == 4  # every copy is kept
        with bank.transaction() as conn:
            conn.execute("DELETE FROM events WHERE session_id = (SELECT id FROM sessions WHERE native_id = 'original')")
        assert sorted((s, r) for s, r, _ in _counted(bank)) == [("fork", "msg_1"), ("fork", "msg_3")]
        with bank.transaction() as conn:
            conn.execute("DELETE FROM events")
        assert _counted(bank) == []
        assert bank.conn.execute("SELECT count(*) FROM usage_hours").fetchone()[0] == 0


def test_the_largest_copy_of_a_response_is_the_one_counted(tmp_path: Path) -> None:
    """Before Claude Code 2.1.98 a streamed message's early lines held placeholder output counts: whichever copy
    arrives first, the complete one counts."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "/a.jsonl", "a", [_answer("a", "u1", "msg_1", 1)])
        _write(bank, "/b.jsonl", "b", [_answer("b", "u1", "msg_1", 250)])
        _write(bank, "/c.jsonl", "c", [_answer("c", "u1", "msg_1", 3)])
        assert _counted(bank) == [("b", "msg_1", 250)]


def test_a_revised_event_rewrites_its_usage_row(tmp_path: Path) -> None:
    """Agents that rewrite a record in place (Gemini re-appends a message as it grows, opencode updates a part)
    revise the event: its usage row follows, gained or lost."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        first = Event("s", "m1", "assistant", "text", "partial", ts="2026-11-29T10:00:00Z")
        _write(bank, "/g.json", "s", [first], revise=True, harness="gemini-cli")
        assert bank.conn.execute("SELECT count(*) FROM usage").fetchone()[0] == 0
        grown = Event("s", "m1", "assistant", "text", "partial and more", ts="2026-11-29T10:00:00Z", model="gemini-2.5-pro",
                      usage=Usage(input=40, output=12, reasoning=3))
        _write(bank, "/g.json", "s", [grown], revise=True, harness="gemini-cli")
        assert bank.conn.execute("SELECT tokens_in, tokens_out, tokens_reasoning, model, counted, ts FROM usage").fetchall() \
            == [(40, 12, 3, "gemini-2.5-pro", 1, "2026-11-29T10:00:00.000Z")]
        _hours_are_the_counted_rows(bank.conn)


def test_an_old_bank_gets_the_usage_of_the_events_it_holds(tmp_path: Path) -> None:
    """Migration 16 fills the table from the events' columns (each event its own response; reparse refines it),
    with an opencode step's recorded cost from its meta, and times in UTC."""
    path = tmp_path / "bank.sqlite"
    with open_bank(path) as bank:
        _write(bank, "/o.json", "s", [
            Event("s", "p1", "assistant", "meta", "step finished", ts="2026-11-29T23:30:00+02:00", model="gpt-5",
                  usage=Usage(input=5, output=6, cache_write=7), meta={"part": "step-finish", "cost": 0.25}),
            Event("s", "p2", "assistant", "text", "hi", ts="2026-11-29T10:00:00Z"),
        ], harness="opencode")
    conn = sqlite3.connect(path)
    as_migration_15_left_it(conn)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 15  # migration 16 (usage) and those after undone
    conn.close()
    with open_bank(path) as bank:
        assert bank.conn.execute(
            "SELECT harness, ts, model, tokens_in, tokens_out, tokens_cache_write, cost, counted FROM usage").fetchall() \
            == [("opencode", "2026-11-29T21:30:00.000Z", "gpt-5", 5, 6, 7, 0.25, 1)]
        _hours_are_the_counted_rows(bank.conn)


def test_times_are_kept_as_the_migration_writes_them() -> None:
    assert utc_ts("2026-11-29T10:00:00Z") == "2026-11-29T10:00:00.000Z"
    assert utc_ts("2026-11-29T10:00:00.123456+01:00") == "2026-11-29T09:00:00.123Z"
    assert utc_ts("2026-11-29T10:00:00.123Z") == "2026-11-29T10:00:00.123Z"
    assert utc_ts("yesterday") is None
    assert utc_ts(None) is None
    conn = sqlite3.connect(":memory:")
    for ts in ("2026-11-29T10:00:00Z", "2026-11-29T10:00:00.123456+01:00", "2026-11-29T10:00:00.5Z"):
        assert utc_ts(ts) == conn.execute("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?)", (ts,)).fetchone()[0]


def test_a_message_rewritten_with_only_its_token_counts_added_gets_them(tmp_path: Path) -> None:
    """Gemini CLI re-appends a message with the same content once its token counts are known: read in a later
    pass, the revision changes neither text nor meta, and the counts must still land (on the event and in the
    usage table)."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "/g.jsonl", "s", [Event("s", "m1", "assistant", "text", "done", ts="2026-11-29T10:00:00Z")],
               revise=True, harness="gemini-cli")
        _write(bank, "/g.jsonl", "s", [Event("s", "m1", "assistant", "text", "done", ts="2026-11-29T10:00:00Z",
                                             usage=Usage(input=40, output=12))], revise=True, harness="gemini-cli")
        assert bank.conn.execute("SELECT tokens_in, tokens_out FROM events").fetchall() == [(40, 12)]
        assert bank.conn.execute("SELECT tokens_in, tokens_out, counted FROM usage").fetchall() == [(40, 12, 1)]


def test_an_event_rows_token_counts_are_where_a_revision_compares_them() -> None:
    from harvester.bank.sqlite_events import ROW_TOKENS, event_rows

    [row] = event_rows([Event("s", "u", "assistant", "text", "x", usage=Usage(1, 2, 3, 4, 5))])
    assert row[ROW_TOKENS] == (1, 2, 3, 4, 5)


def test_reparse_gives_a_migrated_banks_responses_their_ids(tmp_path: Path) -> None:
    """Migration 16 fills the table from the events (each its own response: a fork's copy counts again); reparse
    reads the archive with today's parsers, whose responses name their ids: the bank then counts as a fresh scan."""
    from harvester.bank.reparse import reparse
    from harvester.capture.ingest import Ingestor
    from harvester.config import DEFAULT_BANK_ID_TEMPLATE
    from harvester.parsers import HARNESSES
    from tests.helpers import FIXTURES, copy_tree, scan

    home = tmp_path / "home"
    copy_tree(FIXTURES / "claude_code" / "real" / "fork", home / ".claude")
    path = tmp_path / "bank.sqlite"
    scan(home, path, ("claude-code",))

    def counted() -> tuple[int, int]:
        with open_bank(path) as bank:
            return bank.conn.execute("SELECT count(*), sum(tokens_in) FROM usage WHERE counted = 1").fetchone()

    fresh = counted()
    conn = sqlite3.connect(path)
    as_migration_15_left_it(conn)
    conn.close()
    migrated = counted()
    assert migrated[0] == fresh[0] + 1 and migrated[1] > fresh[1]  # the fork's copy of the original's answer
    with open_bank(path) as bank, Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
        assert {s.how for s in reparse(ingestor, [HARNESSES["claude-code"].name]).sources} == {"archive"}
    assert counted() == fresh


def test_a_banks_hourly_sums_tell_a_recorded_zero_from_a_recorded_price(tmp_path: Path) -> None:
    """Migration 19: an hour of one session and model where the agent recorded zero for one step and a price for
    another is two groups (``auto`` calculates the zero's cost), kept so by the triggers and made so on a bank
    migration 16 left with one group."""
    path = tmp_path / "bank.sqlite"

    def step(uid: str, cost: float | None, minute: int) -> Event:
        return Event("s", uid, "assistant", "meta", "step finished", ts=f"2026-11-29T10:{minute:02d}:00Z",
                     model="claude-sonnet-4-5", usage=Usage(input=1000, output=100, response=uid, cost=cost))

    def hours(conn: sqlite3.Connection) -> list[tuple]:
        _hours_are_the_counted_rows(conn)
        return conn.execute("SELECT recorded, responses, cost FROM usage_hours ORDER BY recorded").fetchall()

    with open_bank(path) as bank:
        _write(bank, "/o.json", "s", [step("p1", 0.0, 0), step("p2", 0.5, 10), step("p3", 0.25, 20),
                                      step("p4", None, 30)], harness="opencode")
        assert hours(bank.conn) == [(0, 1, 0.0), (1, 2, 0.75), (2, 1, 0.0)]
    conn = sqlite3.connect(path)
    as_migration_18_left_it(conn)
    assert conn.execute("SELECT recorded, responses FROM usage_hours ORDER BY recorded").fetchall() == [(0, 1), (1, 3)]
    conn.close()
    with open_bank(path) as bank:
        assert hours(bank.conn) == [(0, 1, 0.0), (1, 2, 0.75), (2, 1, 0.0)]
        bank.conn.execute("DELETE FROM events WHERE uid = 'p1'")  # the triggers keep the kinds apart
        assert hours(bank.conn) == [(0, 1, 0.0), (1, 2, 0.75)]
