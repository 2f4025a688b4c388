"""Auggie: what the fixtures must read as (fixtures/auggie/hand/README.md, fixtures/auggie/real/)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import auggie
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "auggie" / "hand"
REAL = FIXTURES / "auggie" / "real"
A = "7d3c1a52-0b1e-4c7a-9f10-2a3b4c5d6e01"  # every node kind, a stopped exchange, a queued message
B = "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c02"  # subagent of A
C = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a803"  # history summary (compaction), custom title
D = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c04"  # fetched from the backend: messages without nodes
REPO = "/home/dev/src/demo-repo"


def _bank(tmp: Path, tree: Path) -> Path:
    home = tmp / "home"
    shutil.copytree(tree, home / ".augment")
    report = scan(home, tmp / "bank.sqlite", (auggie.NAME,), env={"HOME": str(home)})
    assert report.harnesses[auggie.NAME].problems == 0
    return tmp / "bank.sqlite"


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bank(tmp_path_factory.mktemp("auggie"), HAND)


def test_roots_are_the_home_folder_only() -> None:
    assert auggie.roots({"AUGMENT_API_URL": "http://x"}, Path("/h")) == [Path("/h/.augment")]


def test_backups_are_no_sessions(hand_bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, D}


def test_exchanges_make_one_transcript(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    assert shapes(events) == [
        ("user", "text"), ("user", "text"),  # the prompt, its image
        ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"),  # results come in the next exchange's request
        ("tool", "tool_result"), ("assistant", "text"),
        ("user", "text"), ("user", "text"), ("assistant", "text"),  # a file attached
        ("user", "text"), ("assistant", "text"),  # the exchange Auggie stopped
    ]
    assert events[3]["text"] == "Let me look."  # stream chunks joined
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [c["tool_input"] for c in calls] == [{"path": "src/csv.py", "type": "file"},
                                                 {"command": "pytest -q", "wait": True}]
    assert [r["tool_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert [(r["tool_name"], r["is_error"]) for r in results] == [("view", False), ("launch-process", True)]
    assert calls[0]["usage"] == {"in": 1500, "out": 90, "cache_read": 1200}
    session = session_of(hand_bank, A)
    assert (session["cwd"], session["bank_id"]) == (REPO, "coding-agent::demo-repo")
    assert (session["title"], session["title_source"]) == ("Fix CSV parser dropping empty fields", "ai")
    assert session["model"] == "claude-sonnet-4-5"  # the billing node's effective model
    assert session["meta"]["last_turn"] == "aborted" and session["meta"]["queued_messages"] == 1


def test_subagent_compaction_and_remote(hand_bank: Path) -> None:
    b = session_of(hand_bank, B)
    assert (b["parent_native_id"], b["parent_kind"], b["cwd"]) == (A, "subagent", REPO)
    events = events_of(hand_bank, C)
    assert [e["kind"] for e in events if e["role"] == "system"] == ["compaction"]
    assert session_of(hand_bank, C)["title_source"] == "custom"
    assert [(e["role"], e["text"]) for e in events_of(hand_bank, D)] == [
        ("user", "What does this repo do?"), ("assistant", "It parses CSV files.")]


def test_a_rewrite_keeps_every_uid() -> None:
    """Auggie rewrites the whole file after each exchange: the earlier ones read the same."""
    doc = orjson.loads((HAND / "sessions" / f"{A}.json").read_bytes())
    ref = SourceRef(PurePath(f"/h/.augment/sessions/{A}.json"), PurePath("/h/.augment"))
    first = dict(doc, chatHistory=doc["chatHistory"][:2])
    before = auggie.parse(ref, [Record(1, orjson.dumps(first))], {})
    after = auggie.parse(ref, [Record(1, orjson.dumps(doc))], {})
    assert [e.uid for e in before.events] == [e.uid for e in after.events][:len(before.events)]


def test_unknown_nodes_and_keys_are_drift() -> None:
    doc = orjson.loads((HAND / "sessions" / f"{B}.json").read_bytes())
    doc["newKey"] = 1
    doc["chatHistory"][0]["exchange"]["response_nodes"].append({"id": 9, "type": 42})
    ref = SourceRef(PurePath(f"/h/.augment/sessions/{B}.json"), PurePath("/h/.augment"))
    batch = auggie.parse(ref, [Record(1, orjson.dumps(doc))], {})
    assert sorted(p.detail for p in batch.problems if p.kind == "unknown_type") == [
        "response node type=42", "session key='newKey'"]


def test_real_two_turns(tmp_path: Path) -> None:
    bank = _bank(tmp_path, REAL / "two_turns")
    (session,) = sessions_of(bank)
    events = events_of(bank, session["native_id"])
    assert shapes(events) == [("user", "text"), ("assistant", "text"), ("user", "text"), ("assistant", "tool_call"),
                              ("tool", "tool_result"), ("assistant", "text")]
    assert "pelican" in events[4]["text"] and events[3]["tool_name"] == "view"
    assert session["cwd"].endswith("/demo-repo") and session["meta"]["last_turn"] == "complete"
