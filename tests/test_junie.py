"""Junie: what the hand-written store must read as (fixtures/junie/hand/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import junie
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "junie" / "hand"
A = "session-260806-104937-1ja5"  # two turns: every block kind, usage, a cancelled turn
B = "session-260806-111502-7js9"  # a dropped prompt, a question and its answer, a failure, a title set
C = "session-260807-090011-q2mv"  # a subagent (custom agent)
REPO = "/home/dev/src/demo-repo"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("junie")
    home = tmp / "home"
    shutil.copytree(HAND, home / ".junie")
    report = scan(home, tmp / "bank.sqlite", (junie.NAME,), env={"HOME": str(home)})
    assert report.harnesses[junie.NAME].problems == 0
    return tmp / "bank.sqlite"


def test_roots_follow_junie_home() -> None:
    assert junie.roots({}, Path("/h")) == [Path("/h/.junie")]
    assert junie.roots({"JUNIE_HOME": "/data/j"}, Path("/h")) == [Path("/data/j")]
    assert junie.roots({"JUNIE_HOME": "rel"}, Path("/h")) == [Path("/h/rel")]


def test_blocks_are_replaced_by_their_step(bank: Path) -> None:
    events = events_of(bank, A)
    assert shapes(events) == [
        ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"),  # prompt, markdown, view files
        ("assistant", "tool_call"), ("tool", "tool_result"),  # terminal, its output once COMPLETED
        ("assistant", "tool_call"), ("assistant", "tool_call"), ("tool", "tool_result"),  # file changes, a tool
        ("assistant", "text"),  # the answer
        ("user", "text"), ("assistant", "text"),  # the second turn, cancelled
    ]
    assert events[0]["text"] == "Fix the CSV parser: empty fields are dropped"  # presentablePrompt, not the context
    assert events[1]["text"] == "Let me look at the parser first."  # the last version of step-a1
    assert events[1]["usage"] == {"in": 2126, "out": 147, "cache_read": 1800}
    assert events[3]["tool_input"] == {"command": "pytest -q tests/test_csv.py"}
    assert events[4]["text"] == "F.\n1 failed, 1 passed" and events[4]["tool_call_id"] == events[3]["tool_call_id"]
    assert events[8]["text"] == "Empty fields are kept now; the test passes."  # <!-- ANSWER --> dropped
    session = session_of(bank, A)
    assert (session["cwd"], session["bank_id"]) == (REPO, "coding-agent::demo-repo")
    assert (session["title"], session["title_source"]) == ("Fix CSV parser dropping empty fields", "ai")  # last line
    assert session["model"] == "claude-sonnet-4-6" and session["started_at"] == "2026-08-06T10:49:37.000Z"
    assert session["meta"]["last_turn"] == "aborted" and session["meta"]["cost_usd"] == 0.0125


def test_drops_questions_and_failures(bank: Path) -> None:
    events = events_of(bank, B)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("user", "text"), ("assistant", "text"), ("user", "text"),
        ("system", "meta"), ("system", "meta"), ("system", "meta")]
    assert events[0]["meta"] == {"dropped_from_history": "UserMessagesDroppedFromHistory"}
    assert events[2]["text"] == "Which environment?\n- dev\n- prod" and events[3]["text"] == "Which environment?\ndev"
    session = session_of(bank, B)
    assert (session["title"], session["title_source"]) == ("Database questions", "custom")
    assert session["meta"]["last_turn"] == "failed" and session["meta"]["junie_state"] == "FAILED"


def test_a_custom_agent_is_a_subagent_session(bank: Path) -> None:
    child = session_of(bank, f"{C}:agent-1")
    assert (child["parent_native_id"], child["parent_kind"], child["cwd"]) == (C, "subagent", "/home/dev/src/docs-site")
    assert child["title"] == "docs-reader" and child["model"] == "gemini-3.1-flash-lite"
    events = events_of(bank, f"{C}:agent-1")
    assert shapes(events) == [("user", "text"), ("assistant", "tool_call"), ("assistant", "text")]
    assert events[0]["text"] == "Read docs/ and list the topics."  # the spawn's task
    parent = events_of(bank, C)
    assert [e["tool_name"] for e in parent if e["kind"] == "tool_call"] == ["subagent"]
    assert {s["native_id"] for s in sessions_of(bank)} == {A, B, C, f"{C}:agent-1"}


def _ref(sid: str) -> SourceRef:
    return SourceRef(PurePath(f"/h/.junie/sessions/{sid}/events.jsonl"), PurePath("/h/.junie"),
                     sidecar=(HAND / "sessions" / "index.jsonl").read_bytes())


def test_tailing_line_by_line_reads_as_a_whole() -> None:
    """An appended log read a line at a time (state carried) gives the events one read gives."""
    lines = (HAND / "sessions" / A / "events.jsonl").read_bytes().splitlines()
    whole = junie.parse(_ref(A), [Record(n, raw) for n, raw in enumerate(lines, 1)], {})
    state: dict = {}
    events = []
    for n, raw in enumerate(lines, 1):
        batch = junie.parse(_ref(A), [Record(n, raw)], state)
        state = batch.state
        events += batch.events
    last = {e.uid: e.text for e in events}
    assert last == {e.uid: e.text for e in whole.events}


def test_unknown_kinds_are_drift() -> None:
    lines = [{"kind": "BrandNewEvent", "timestampMs": 1},
             {"kind": "SessionA2uxEvent", "event": {"state": "IN_PROGRESS", "agentEvent": {"kind": "HologramBlockUpdatedEvent"}}}]
    batch = junie.parse(_ref(A), [Record(n, orjson.dumps(d)) for n, d in enumerate(lines, 1)], {})
    assert [p.detail for p in batch.problems if p.kind == "unknown_type"] == [
        "event kind='BrandNewEvent'", "agent event kind='HologramBlockUpdatedEvent'"]


def test_a_session_missing_from_the_index_has_no_cwd() -> None:
    raw = orjson.dumps({"kind": "UserPromptEvent", "requestId": "r", "prompt": "hi", "timestampMs": 1786013377000})
    batch = junie.parse(SourceRef(PurePath("/h/.junie/sessions/session-x/events.jsonl"), PurePath("/h/.junie"),
                                  sidecar=b'{"sessionId":"session-y","projectDir":"/p"}\n{broken'), [Record(1, raw)], {})
    assert batch.sessions["session-x"].cwd is None and [e.text for e in batch.events] == ["hi"]
