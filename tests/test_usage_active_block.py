"""The active five-hour block read from its own start only, found walking back to the last gap of over five hours
(harvester.usage.answer.active_block, which harvester.usage.api.current_block and the web viewer call), is the
block the whole history gives: generated histories of bursts, gaps of over five hours, responses exactly five
hours apart and blocks running over their edge, for every agent, one agent or one repository, each asked at
moments around its responses; and it reads and prices no response but its own."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harvester.bank import open_bank
from harvester.bank.scope import Scope
from harvester.usage import api, query
from harvester.usage.answer import Request, active_block, answer
from harvester.usage.prices import load_book

FIVE_HOURS_MS = 5 * 3600 * 1000
ORIGIN = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)  # on the hour: a block may start at its first response exactly

# The time from one response to the next: bursts, hours, exactly five hours and a millisecond either side of it,
# long gaps.
STEPS = st.one_of(st.integers(0, 120_000), st.integers(0, FIVE_HOURS_MS),
                  st.sampled_from([FIVE_HOURS_MS - 1, FIVE_HOURS_MS, FIVE_HOURS_MS + 1, 3600_000, 4 * 3600_000]),
                  st.integers(FIVE_HOURS_MS, 3 * FIVE_HOURS_MS))


@pytest.fixture(scope="module")
def bank() -> Iterator[sqlite3.Connection]:
    with tempfile.TemporaryDirectory() as tmp, open_bank(Path(tmp) / "bank.sqlite") as opened:
        opened.conn.executemany(  # two repositories' sessions, for a scope
            "INSERT INTO sessions (id, harness, native_id, bank_id, first_imported_at, last_imported_at) "
            "VALUES (?, 'claude-code', ?, ?, '2026-11-02', '2026-11-02')", [(1, "s1", "repo-a"), (2, "s2", "repo-b")])
        opened.conn.commit()
        yield opened.conn


def _history(conn: sqlite3.Connection, first_ms: int, steps: list[int], harnesses: list[str],
             sessions: list[int] | None = None) -> list[datetime]:
    """A response after each of ``steps`` (milliseconds), by turns of ``harnesses``, in ``sessions`` (1: in
    repo-a, 2: in repo-b; by default 1)."""
    conn.execute("DELETE FROM usage")
    at = ORIGIN + timedelta(milliseconds=first_ms)
    times = []
    for n, step in enumerate(steps):
        at += timedelta(milliseconds=step)
        times.append(at)
        conn.execute("INSERT INTO usage (event_id, session_id, harness, response, ts, model, tokens_in, tokens_out, "
                     "counted) VALUES (?, ?, ?, ?, ?, 'claude-sonnet-4-5', ?, ?, 1)",
                     (n + 1, sessions[n % len(sessions)] if sessions else 1, harnesses[n % len(harnesses)], f"r{n}", _ts(at), 1000 + n, 10 * n))
    conn.commit()
    return times


def _ts(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"


def _whole(conn: sqlite3.Connection, request: Request, now: datetime) -> dict[str, Any] | None:
    return next((b for b in answer(conn, request, load_book(), now)["blocks"] if b["active"]), None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Another repository's response starts a block (07:00, 09:00, 12:00, 12:30) where repo-a's do not: the walk must
# keep to the scope's responses, or it reads repo-a's from 12:30 and misses its running block.
@example(first_ms=0, steps=[0, 2 * 3600_000, 3 * 3600_000, 1800_000], harnesses=["claude-code"], sessions=[2, 1, 1, 2],
         asked=None, repo="repo-a", after_last_ms=600_000, of=3)
@given(first_ms=st.sampled_from([0, 1, 59 * 60_000]), steps=st.lists(STEPS, min_size=1, max_size=30),
       harnesses=st.sampled_from([["claude-code"], ["claude-code", "codex"]]),
       sessions=st.lists(st.sampled_from([1, 2]), min_size=1, max_size=30),
       asked=st.sampled_from(["claude-code", None]), repo=st.sampled_from(["repo-a", None]),
       after_last_ms=st.one_of(st.integers(-FIVE_HOURS_MS, 2 * FIVE_HOURS_MS),
                               st.sampled_from([0, 1, -1, FIVE_HOURS_MS, FIVE_HOURS_MS - 1, FIVE_HOURS_MS + 1])),
       of=st.integers(0, 29))
def test_the_active_block_from_the_last_gap_is_the_whole_historys(
        bank: sqlite3.Connection, first_ms: int, steps: list[int], harnesses: list[str], sessions: list[int],
        asked: str | None, repo: str | None, after_last_ms: int, of: int) -> None:
    times = _history(bank, first_ms, steps, harnesses, sessions)
    now = times[of % len(times)] + timedelta(milliseconds=after_last_ms)  # any response's, later ones after it too
    scope = Scope(repo, bank_id=repo) if repo else None
    request = Request("blocks", harnesses=(asked,) if asked else (), scope=scope)
    whole = _whole(bank, request, now)
    assert active_block(bank, request, load_book(), now) == whole
    block = api.current_block(bank, now=now, harnesses=request.harnesses, scope=scope)
    assert (block is None) == (whole is None)
    if block is not None and whole is not None:
        assert (block.total_tokens, block.responses, block.cost_usd) == (
            whole["total_tokens"], whole["responses"], whole["cost_usd"])
        assert _ts(block.start) == whole["start"] and _ts(block.end) == whole["end"]


def test_the_current_block_reads_and_prices_only_its_own_responses(
        bank: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ten days of a response every hour, a gap of six hours, then an agent at work around the clock for three days:
    # the block running now starts at the first response after the gap plus a multiple of five hours.
    steps = [0] + [3600_000] * 240 + [6 * 3600_000 + 17 * 60_000] + [20 * 60_000] * (3 * 72)
    times = _history(bank, 0, steps, ["claude-code"])
    read: list[int] = []
    responses = query.responses

    def counted(*args: Any, **kwargs: Any) -> list[tuple]:
        rows = responses(*args, **kwargs)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(query, "responses", counted)
    now = times[-1] + timedelta(minutes=3)
    block = api.current_block(bank, now=now)
    assert block is not None
    assert read == [block.responses] and block.responses < 16  # its own responses, none of the days before
    after_gap = times[241]
    assert block.start == after_gap.replace(minute=0, second=0, microsecond=0) + timedelta(
        hours=5 * ((now - after_gap.replace(minute=0, second=0, microsecond=0)) // timedelta(hours=5)))
    monkeypatch.setattr(query, "responses", responses)
    whole = _whole(bank, Request("blocks"), now)
    assert whole is not None and whole["start"] == _ts(block.start) and whole["responses"] == block.responses
