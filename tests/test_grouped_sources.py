"""Small sources of a large scan committed in one transaction (harvester/capture/grouping.py): one that fails in
its group costs that source alone, and a kill before the group commits leaves every cursor of it unmoved."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvester.bank.sqlite import SqliteBank
from harvester.capture import ingest
from tests.helpers import ClaudeSession, events_of, scan


@pytest.fixture
def groups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every scan defers its index (as a large one does), so small sources are grouped; the groups' sizes."""
    monkeypatch.setattr(ingest, "DEFER_INDEX_BYTES", 0)
    sizes: list[int] = []
    grouped = SqliteBank.grouped

    def counted(self: SqliteBank):  # type: ignore[no-untyped-def]
        sizes.append(0)
        return grouped(self)

    apply = SqliteBank.apply

    def applied(self: SqliteBank, write):  # type: ignore[no-untyped-def]
        if self._group is not None:
            sizes[-1] += 1
        return apply(self, write)

    monkeypatch.setattr(SqliteBank, "grouped", counted)
    monkeypatch.setattr(SqliteBank, "apply", applied)
    yield sizes


def _sessions(home: Path, n: int) -> list[ClaudeSession]:
    out = []
    for i in range(n):
        s = ClaudeSession(home, f"/work/app-{i}")
        s.write(*s.conversation(3))
        out.append(s)
    return out


def test_a_source_failing_in_its_group_costs_that_source_alone(tmp_path: Path, groups: list[int],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    sessions = _sessions(home, 5)
    bad = str(sessions[2].path)
    write_events = SqliteBank._write_events

    def failing(self: SqliteBank, conn, write, *args):  # type: ignore[no-untyped-def]
        added = write_events(self, conn, write, *args)  # its events written, then it fails: all of it goes
        if write.cursor.path == bad and write.events:  # (not the failure's own record)
            raise ValueError("a write that fails half-way")
        return added

    monkeypatch.setattr(SqliteBank, "_write_events", failing)
    report = scan(home, bank, ("claude-code",))
    assert groups == [6]  # one group: the five sources' writes, and the failed one's record
    assert report.harnesses["claude-code"].failed == 1
    assert report.events_added == 4 * 6
    assert [len(events_of(bank, s.id)) for s in sessions] == [6, 6, 0, 6, 6]
    with sqlite3.connect(bank) as conn:
        assert conn.execute("SELECT status FROM sources WHERE path = ?", (bad,)).fetchone() == ("failed",)
    monkeypatch.setattr(SqliteBank, "_write_events", write_events)
    assert scan(home, bank, ("claude-code",)).events_added == 6  # read again, from its unmoved cursor
    assert len(events_of(bank)) == 5 * 6


def test_a_group_that_does_not_commit_moves_no_cursor(tmp_path: Path, groups: list[int],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What a kill -9 before the group's commit leaves: nothing of it (the bank failing mid-group, here)."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    sessions = _sessions(home, 4)
    last = str(sessions[-1].path)
    apply = SqliteBank.apply

    def disk_full(self: SqliteBank, write):  # type: ignore[no-untyped-def]
        if write.cursor.path == last:
            raise sqlite3.OperationalError("database or disk is full")
        return apply(self, write)

    monkeypatch.setattr(SqliteBank, "apply", disk_full)
    with pytest.raises(ingest.BankError):
        scan(home, bank, ("claude-code",))
    with sqlite3.connect(bank) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM sources WHERE path LIKE '%.jsonl'").fetchone() == (0,)
    monkeypatch.setattr(SqliteBank, "apply", apply)
    assert scan(home, bank, ("claude-code",)).events_added == 4 * 6
    assert len(events_of(bank)) == 4 * 6
