"""Rovo Dev: what the hand-written store must read as (fixtures/rovo_dev/hand/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import rovo_dev
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "rovo_dev" / "hand"
A = "3f2b8c1e-6d4a-4e2f-9b7c-1a2b3c4d5e01"  # two turns, tool calls, a retry, an internal prompt, an image
B = "8c7d6e5f-4a3b-4c2d-8e1f-0a9b8c7d6e02"  # a fork of A
C = "b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d03"  # an older pydantic-ai (Usage, no request times), no metadata, turn open
REPO = "/home/dev/src/demo-repo"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rovo")
    home = tmp / "home"
    shutil.copytree(HAND, home / ".rovodev" / "sessions")
    report = scan(home, tmp / "bank.sqlite", (rovo_dev.NAME,), env={"HOME": str(home)})
    assert report.harnesses[rovo_dev.NAME].problems == 0
    return tmp / "bank.sqlite"


def test_roots_and_the_persistence_dir(tmp_path: Path) -> None:
    assert rovo_dev.roots({}, tmp_path) == [tmp_path / ".rovo/sessions", tmp_path / ".rovodev/sessions"]
    (tmp_path / ".rovodev").mkdir()
    (tmp_path / ".rovodev" / "config.yml").write_text(
        "agent:\n  streaming: true\nsessions:\n  autoRestore: false\n  persistenceDir: \"~/work/rovo-sessions\"\n")
    assert rovo_dev.roots({}, tmp_path)[1:] == [tmp_path / "work/rovo-sessions", tmp_path / ".rovodev/sessions"]
    (tmp_path / ".rovodev" / "config.yml").write_text("sessions: [not, a, map\n")
    assert rovo_dev.roots({}, tmp_path)[1:] == [tmp_path / ".rovodev/sessions"]


def test_a_history_reads_as_its_transcript(bank: Path) -> None:
    events = events_of(bank, A)
    assert shapes(events) == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),  # a retry prompt: an error
        ("assistant", "tool_call"), ("tool", "tool_result"), ("system", "meta"),  # "You have used 3 iterations."
        ("assistant", "text"), ("user", "text"), ("assistant", "text"),
    ]
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [c["tool_input"] for c in calls] == [
        {"command": "ruff check src/csv.py"},  # args as a JSON string
        {"file_path": "src/csv.py", "find": "import os\n", "replace": ""}, {"file_paths": ["src/csv.py"]}]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [r["tool_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert [r["is_error"] for r in results] == [False, True, False]
    assert calls[0]["usage"] == {"in": 900, "out": 60, "cache_read": 400, "cache_write": 120}
    assert events[11]["text"] == "Does this screenshot match?\n[image-url]"
    session = session_of(bank, A)
    assert (session["cwd"], session["bank_id"]) == (REPO, "coding-agent::demo-repo")
    assert (session["title"], session["title_source"]) == ("Fix lint errors", "ai")
    assert session["model"] == "anthropic:claude-sonnet-4-5" and session["meta"]["last_turn"] == "complete"


def test_a_fork_names_its_parent(bank: Path) -> None:
    fork = session_of(bank, B)
    assert (fork["parent_native_id"], fork["parent_kind"], fork["cwd"]) == (A, "fork", REPO)
    assert [e["uid"] for e in events_of(bank, B)][:5] == [e["uid"] for e in events_of(bank, A)][:5]


def test_an_older_history_and_an_open_turn(bank: Path) -> None:
    session = session_of(bank, C)
    assert session["cwd"] is None and session["meta"]["last_turn"] == "open"
    assert session["started_at"] == "2026-06-01T08:00:00.000Z"  # the system prompt's time
    events = events_of(bank, C)
    assert events[1]["usage"] == {"in": 700, "out": 30}
    assert {s["native_id"] for s in sessions_of(bank)} == {A, B, C}


def _ref(sid: str) -> SourceRef:
    return SourceRef(PurePath(f"/h/.rovodev/sessions/{sid}/session_context.json"), PurePath("/h/.rovodev/sessions"),
                     sidecar=(HAND / sid / "metadata.json").read_bytes())


def test_a_rewrite_keeps_every_uid_and_prune_changes_only_results() -> None:
    doc = orjson.loads((HAND / A / "session_context.json").read_bytes())
    before = rovo_dev.parse(_ref(A), [Record(1, orjson.dumps(dict(doc, message_history=doc["message_history"][:3])))], {})
    after = rovo_dev.parse(_ref(A), [Record(1, orjson.dumps(doc))], {})
    assert [e.uid for e in before.events] == [e.uid for e in after.events][:len(before.events)]
    for message in doc["message_history"]:  # /prune: tool results emptied in place
        for part in message["parts"]:
            if part["part_kind"] == "tool-return":
                part["content"] = "[pruned]"
    pruned = rovo_dev.parse(_ref(A), [Record(1, orjson.dumps(doc))], {})
    assert [e.uid for e in pruned.events] == [e.uid for e in after.events]
    assert pruned.revise


def test_unknown_kinds_are_drift() -> None:
    doc = orjson.loads((HAND / C / "session_context.json").read_bytes())
    doc["message_history"][1]["parts"].append({"part_kind": "hologram", "content": "?"})
    doc["message_history"][2]["parts"].append({"part_kind": "telepathy"})
    doc["message_history"].append({"kind": "notification", "parts": []})
    batch = rovo_dev.parse(_ref(A), [Record(1, orjson.dumps(doc))], {})
    assert [p.detail for p in batch.problems if p.kind == "unknown_type"] == [
        "response part_kind='hologram'", "request part_kind='telepathy'", "message kind='notification'"]
