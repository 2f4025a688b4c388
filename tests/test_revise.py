"""Agents that rewrite a record in place (Gemini re-appends a message id as it grows; opencode
updates a part while it streams): the last version wins, in the first one's place."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.model import Batch, Event
from harvester.parsers.base import Harness, Record, SourceRef, SourceSpec, json_objects
from tests.helpers import bank_rows, scan


def _parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state, revise=True)
    session = batch.session("s1")
    session.cwd = "/work/app"
    for _record, data in json_objects(records, batch.problems):
        batch.events.append(
            Event(
                "s1",
                data["id"],
                data.get("role", "assistant"),
                "text",
                data["text"],
                meta={"rewound": True} if data.get("rewound") else None,
            )
        )
    return batch


@pytest.fixture
def revising(monkeypatch: pytest.MonkeyPatch) -> Harness:
    harness = Harness(
        "revising", lambda env, home: [home / "store"], (SourceSpec("*.jsonl", "jsonl"),), _parse
    )
    monkeypatch.setitem(parsers.HARNESSES, "revising", harness)
    return harness


def _texts(bank: Path) -> list[tuple[int, str, Any]]:
    with open_bank(bank) as b:
        return [(e["seq"], e["text"], e["meta"]) for e in b.events(b.list_sessions()[0]["id"])]


def test_last_version_wins_in_place(tmp_path: Path, revising: Harness) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "store").mkdir(parents=True)
    store = home / "store" / "s.jsonl"
    store.write_text(
        '{"id": "m1", "role": "user", "text": "question"}\n{"id": "m2", "text": "partial ans"}\n'
    )
    scan(home, bank, ("revising",))
    with store.open("a") as f:  # the same message again, grown; then a new one; then m2 once more
        f.write(
            '{"id": "m2", "text": "partial answer, now complete"}\n{"id": "m3", "text": "next"}\n'
            '{"id": "m2", "text": "final answer", "rewound": true}\n'
        )
    scan(home, bank, ("revising",))
    assert _texts(bank) == [(1, "question", None), (2, "final answer", {"rewound": True}), (3, "next", None)]
    with open_bank(bank) as b:
        assert [h["seq"] for h in b.search("final")] == [2]
        assert b.search("partial") == []  # the index follows the rewrite
    before = bank_rows(bank)
    store.write_bytes(store.read_bytes())  # re-read from the start (new mtime, same bytes): no change
    scan(home, bank, ("revising",))
    assert bank_rows(bank) == before


def test_one_chunk_holding_several_versions_keeps_the_last(tmp_path: Path, revising: Harness) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "store").mkdir(parents=True)
    (home / "store" / "s.jsonl").write_text(
        '{"id": "m1", "text": "a"}\n{"id": "m2", "text": "b"}\n{"id": "m1", "text": "a, revised"}\n'
    )
    scan(home, bank, ("revising",))
    assert _texts(bank) == [(1, "a, revised", None), (2, "b", None)]


def test_a_revision_that_changes_only_meta_is_kept(tmp_path: Path, revising: Harness) -> None:
    """A rewind marks a message without changing its text: only its meta differs."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "store").mkdir(parents=True)
    store = home / "store" / "s.jsonl"
    store.write_text('{"id": "m1", "text": "same words"}\n')
    scan(home, bank, ("revising",))
    with store.open("a") as f:
        f.write('{"id": "m1", "text": "same words", "rewound": true}\n')
    scan(home, bank, ("revising",))
    assert _texts(bank) == [(1, "same words", {"rewound": True})]


def test_marks_reach_events_stored_by_an_earlier_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewind read after the events it abandons were committed: the bank marks them by uid."""
    from harvester.model import Mark

    def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
        batch = Batch(state=state)
        batch.session("s1").cwd = "/work/app"
        for _record, data in json_objects(records, batch.problems):
            if "mark" in data:
                batch.marks.append(Mark("s1", {"rewound": True}, uids=tuple(data["mark"])))
            elif "since" in data:
                batch.marks.append(Mark("s1", {"rewound": True}, since=data["since"], until=data["id"]))
                batch.events.append(Event("s1", data["id"], "system", "meta", "rewind"))
            else:
                batch.events.append(Event("s1", data["id"], "assistant", "text", data["text"]))
        return batch

    harness = Harness("marking", lambda env, home: [home / "store"], (SourceSpec("*.jsonl", "jsonl"),), parse)
    monkeypatch.setitem(parsers.HARNESSES, "marking", harness)
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "store").mkdir(parents=True)
    store = home / "store" / "s.jsonl"
    store.write_text("".join(f'{{"id": "m{i}", "text": "t{i}"}}\n' for i in range(1, 6))
                     + '{"id": "m3:0", "text": "part of m3"}\n')
    scan(home, bank, ("marking",))
    with store.open("a") as f:  # read later: a mark by uid, then a range from m4 to the rewind itself
        f.write('{"mark": ["m3"]}\n{"since": "m4", "id": "r1"}\n{"id": "m6", "text": "after"}\n')
    scan(home, bank, ("marking",))
    marked = [(t, (m or {}).get("rewound", False)) for _seq, t, m in _texts(bank)]
    assert marked == [("t1", False), ("t2", False), ("t3", True), ("t4", True), ("t5", True),
                      ("part of m3", True), ("rewind", False), ("after", False)]
