"""GitHub Copilot CLI: what the fixtures must read as (fixtures/copilot_cli/hand/README.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.model import Batch, Usage
from harvester.parsers import copilot_cli
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, event_identities, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "copilot_cli" / "hand"
REAL = FIXTURES / "copilot_cli" / "real"
HARNESS = Harness(copilot_cli.NAME, copilot_cli.roots, copilot_cli.SOURCES, copilot_cli.parse, "Copilot CLI",
                  copilot_cli.PROCESSES)
NAME = copilot_cli.NAME
A = "3f2b9c1e-8d4a-4e6b-9f0c-1a2b3c4d5e6f"  # current (1.0.62), ended: every conversation record type
B = "7c9e2a41-5b3d-4f8e-a6c2-0d1e2f3a4b5c"  # current, autopilot / schedules / user shell; resumed: live
F = "b1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"  # /fork of A (A's events copied, ids kept)
C = "c0ffee00-1234-4abc-8def-0123456789ab"  # flat session-state/<id>.jsonl, 0.0.376 (no cwd in session.start)
G = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"  # flat file beside its moved copy (0.0.400), old-style subagent
D = "d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70"  # legacy document AND its session.import_legacy copy (1.0.11)
E = "e9f8a7b6-c5d4-4e3f-8a2b-1c0d9e8f7a6b"  # legacy history-session-state document only (0.0.340)
A_SUB, G_SUB, C_SUB = f"{A}:toolu_01B", f"{G}:toolu_G1", f"{C}:call_c3"


@pytest.fixture(scope="module", autouse=True)
def _registered() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setitem(parsers.HARNESSES, NAME, HARNESS)
        yield


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("copilot")
    bank = tmp / "bank.sqlite"
    report = scan(tmp, bank, (NAME,), env={"HOME": str(tmp), "COPILOT_HOME": str(HAND)})
    assert report.harnesses[NAME].problems == 0
    return bank



def _shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["tool_name"]) for e in events_of(bank, sid)]


def _assert_calls_paired(events: list[dict]) -> None:
    """Every result answers an earlier call of the same id, and names the same tool."""
    calls: dict[str, str] = {}
    for e in events:
        if e["kind"] == "tool_call":
            calls[e["tool_call_id"]] = e["tool_name"]
        elif e["kind"] == "tool_result":
            assert calls.get(e["tool_call_id"]) == e["tool_name"], e


def test_every_generation_is_read_once(hand_bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, A_SUB, B, F, C, C_SUB, G, G_SUB, D, E}
    bank = open_bank(hand_bank)
    try:
        sources = sorted(Path(c.path).relative_to(HAND).as_posix() for c in bank.cursors())
    finally:
        bank.close()
    assert f"session-state/{G}.jsonl" not in sources  # moved into G/events.jsonl: read there only
    assert len(sources) == 8
    for session in sessions_of(hand_bank):
        uids = [e["uid"] for e in events_of(hand_bank, session["native_id"])]
        assert len(uids) == len(set(uids))


def test_current_session(hand_bank: Path) -> None:
    s = session_of(hand_bank, A)
    assert (s["cwd"], s["title"], s["title_source"]) == (
        "/home/dev/src/demo-repo", "Fix flaky parser test", "custom")
    assert (s["model"], s["agent_version"], s["state"]) == ("gpt-5.4", "1.0.62", "ended")
    # The branch of session.context_changed; the origin from repositoryHost + repository.
    assert (s["branch"], s["origin_url"]) == ("fix-cache", "https://github.com/octo/demo-repo")
    assert s["bank_id"] == "coding-agent::demo-repo" and s["meta"]["last_turn"] == "complete"
    assert s["meta"]["usage"]["gpt-5.4"]["outputTokens"] == 264
    events = events_of(hand_bank, A)
    assert _shape(hand_bank, A) == [
        ("system", "meta", None),  # session.info mcp
        ("system", "text", None),  # system.message: the system prompt, injected
        ("user", "text", None),
        ("assistant", "thinking", None),
        ("assistant", "text", None),
        ("assistant", "tool_call", "bash"),
        ("tool", "tool_result", "bash"),
        ("assistant", "tool_call", "task"),  # its subagent's events are a session of their own
        ("tool", "tool_result", "task"),
        ("assistant", "tool_call", "edit"),
        ("tool", "tool_result", "edit"),
        ("assistant", "tool_call", "edit"),
        ("tool", "tool_result", "edit"),
        ("assistant", "text", None),
        ("system", "meta", None),  # forked into F
        ("system", "meta", None),  # model change
        ("system", "meta", None),  # mode change
        ("system", "meta", None),  # plan created
        ("user", "text", None),
        ("system", "compaction", None),
        ("system", "meta", None),  # truncation
        ("assistant", "thinking", None),
        ("assistant", "text", None),
        ("assistant", "tool_call", "view"),  # aborted: no result
        ("system", "meta", None),  # abort
        ("system", "meta", None),  # working directory changed
        ("user", "text", None),
        ("system", "meta", None),  # error
        ("system", "meta", None),  # warning
        ("system", "text", None),  # skill file, injected
        ("assistant", "text", None),
        ("system", "text", None),  # system notification, injected
        ("system", "meta", None),  # session ended
    ]
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "The parser test in tests/test_parse.py fails about one run in five. Find out why and fix it.",
        "Now make the cache per parser instance instead of module-level.",
        "Continue, but keep the public API unchanged.",
    ]
    _assert_calls_paired(events)
    assert [e["tool_call_id"] for e in events if e["is_error"]] == ["toolu_01C"]
    assert events[10]["text"].startswith("No match found for old_str")
    injected = [e for e in events if (e["meta"] or {}).get("injected")]
    assert [e["meta"]["from"] for e in injected] == ["system.message", "skill.invoked", "system.notification"]
    assert events[19]["text"].startswith("<overview>\nThe user asked to fix a flaky parser test.")
    assert events[24]["text"] == "turn aborted: user_initiated" and events[-1]["text"] == "session ended"
    assert sum((e["usage"] or {}).get("out", 0) for e in events) == 212 + 88 + 64 + 97 + 96 + 143 + 121
    assert events[2]["meta"] == {"attachments": ["tests/test_parse.py"]}


def test_subagents_are_sessions_of_their_own(hand_bank: Path) -> None:
    sub = session_of(hand_bank, A_SUB)
    assert (sub["parent_native_id"], sub["parent_kind"], sub["state"]) == (A, "subagent", "ended")
    assert (sub["title"], sub["model"], sub["cwd"]) == (
        "Explore: Find shared state in the parser", "claude-haiku-4.5", "/home/dev/src/demo-repo")
    assert _shape(hand_bank, A_SUB) == [
        ("system", "meta", None), ("assistant", "tool_call", "grep"), ("tool", "tool_result", "grep"),
        ("assistant", "text", None), ("system", "meta", None)]
    # 0.0.400: the subagent's events carry data.parentToolCallId instead of agentId; it failed.
    old = session_of(hand_bank, G_SUB)
    assert (old["parent_native_id"], old["parent_kind"], old["title"]) == (
        G, "subagent", "General purpose: Profile startup")
    assert events_of(hand_bank, G_SUB)[-1]["text"] == "subagent failed: Model call timed out after 120s"
    parent = events_of(hand_bank, G)
    assert [(e["tool_name"], e["is_error"]) for e in parent if e["kind"] == "tool_result"] == [("task", True)]
    _assert_calls_paired(events_of(hand_bank, A_SUB) + events_of(hand_bank, G_SUB))


def test_fork_keeps_only_its_own_events(hand_bank: Path) -> None:
    fork = session_of(hand_bank, F)
    assert (fork["parent_native_id"], fork["parent_kind"]) == (A, "fork")
    assert (fork["title"], fork["title_source"], fork["agent_version"]) == (
        "Fix flaky parser test (2)", "summary", "1.0.62")
    assert [(e["role"], e["kind"]) for e in events_of(hand_bank, F)] == [
        ("system", "meta"), ("user", "text"), ("assistant", "text")]  # A's copied events are A's
    assert events_of(hand_bank, F)[0]["text"].startswith('Forked from "Fix flaky parser test"')
    assert not any(s["native_id"].startswith(f"{F}:") for s in sessions_of(hand_bank))  # nor A's subagent
    assert fork["meta"]["last_turn"] == "complete"


def test_autopilot_schedules_and_resume(hand_bank: Path) -> None:
    s = session_of(hand_bank, B)
    assert (s["state"], s["meta"]["last_turn"]) == ("live", "open")  # shut down, resumed, mid-turn
    assert (s["title"], s["title_source"]) == ("Update the README for the new per-instance cache.", "summary")
    assert s["origin_url"] is None and s["branch"] == "main"  # no repositoryHost before 1.0.6x: not guessed
    events = events_of(hand_bank, B)
    assert [e["text"] for e in events if e["role"] == "user" and e["kind"] == "text"] == [
        "Update the README for the new per-instance cache.",
        "Check the CI status of this branch and summarize any failures.",  # a scheduled prompt the user set
        "What changed on main since yesterday?",
    ]
    injected = [e for e in events if (e["meta"] or {}).get("injected")]
    assert [e["role"] for e in injected] == ["system", "system"]  # autopilot continuation, skill text
    assert injected[1]["meta"]["source"] == "skill-pdf"
    shell = [e for e in events if (e["meta"] or {}).get("user_requested")]
    assert [(e["role"], e["kind"], e["tool_name"]) for e in shell] == [
        ("user", "tool_call", "local_shell"), ("tool", "tool_result", "local_shell")]
    assert shell[0]["tool_call_id"] == shell[1]["tool_call_id"]
    assert any((e["meta"] or {}).get("task_complete") and e["role"] == "assistant" for e in events)
    assert [e["text"] for e in events if e["kind"] == "meta"][-2:] == ["session ended", "session resumed"]
    assert events[5]["tool_input"]["path"].endswith("README.md")  # arguments written as a JSON string
    _assert_calls_paired(events)


def test_flat_era(hand_bank: Path) -> None:
    s = session_of(hand_bank, C)
    assert (s["cwd"], s["agent_version"], s["model"], s["state"]) == (
        "/home/dev/src/webapp", "0.0.376", "gpt-5", "unknown")  # cwd: the folder trusted at start
    assert s["meta"]["last_turn"] == "aborted"
    assert [(e["role"], e["kind"], e["is_error"]) for e in events_of(hand_bank, C)] == [
        ("system", "meta", False), ("system", "meta", False), ("system", "meta", False),  # trust model agent
        ("user", "text", False),
        ("assistant", "tool_call", False), ("tool", "tool_result", True),
        ("assistant", "tool_call", False), ("tool", "tool_result", False),  # the custom agent's call
        ("assistant", "text", False), ("user", "text", False), ("assistant", "tool_call", False),
        ("system", "meta", False)]
    # 0.0.372-0.0.380 named subagent records custom_agent.*.
    agent = session_of(hand_bank, C_SUB)
    assert (agent["parent_native_id"], agent["title"], agent["state"]) == (
        C, "Test fixer: Diagnoses failing test suites", "ended")
    assert [e["text"] for e in events_of(hand_bank, C_SUB)] == [
        "subagent started: Test fixer: Diagnoses failing test suites",
        "jest.setup.js requires dotenv, which is not installed.", "subagent completed"]
    moved = session_of(hand_bank, G)
    assert (moved["title"], moved["title_source"], moved["branch"]) == (
        "Find where startup time goes", "summary", "perf")
    assert [e["text"] for e in events_of(hand_bank, G) if e["role"] == "user"] == [
        "Startup takes 4 seconds. Find out where the time goes."]


def test_legacy_documents(hand_bank: Path) -> None:
    e = session_of(hand_bank, E)
    assert (e["model"], e["started_at"], e["agent_version"]) == (
        "claude-sonnet-4.5", "2025-09-26T18:30:00.000Z", None)
    assert [(x["role"], x["kind"], x["is_error"]) for x in events_of(hand_bank, E)] == [
        ("user", "text", False),
        ("assistant", "tool_call", False),
        ("tool", "tool_result", True),  # failure
        ("assistant", "text", False),
        ("user", "text", False),
        ("assistant", "tool_call", False),
        ("tool", "tool_result", True),  # rejected by the user
        ("system", "meta", False),
        ("system", "meta", False),
        ("assistant", "tool_call", False),  # still requested when the document was last written
    ]
    _assert_calls_paired(events_of(hand_bank, E))
    # D exists twice: its legacy document, and the copy a 1.0.11 resume wrote into session.import_legacy.
    d = session_of(hand_bank, D)
    assert (d["cwd"], d["state"], d["agent_version"]) == ("/home/dev/src/legacy-tool", "ended", "1.0.11")
    events = events_of(hand_bank, D)
    assert [x["text"] for x in events if x["role"] == "user"] == [
        "Which script builds the release tarball?", "Does release.sh sign the tarball?"]
    document = orjson.loads(next((HAND / "history-session-state").glob(f"session_{D}_*.json")).read_bytes())
    ids = [t["id"] for t in document["timeline"]]  # a completed tool call also gives <id>:result
    assert [x["uid"] for x in events[:5]] == [ids[0], ids[1], ids[2], f"{ids[2]}:result", ids[3]]


def test_unknown_event_type_is_drift(tmp_path: Path) -> None:
    tree = shutil.copytree(HAND, tmp_path / "copilot")
    events = tree / "session-state" / A / "events.jsonl"
    with events.open("ab") as f:
        f.write(b'{"type":"session.hologram","data":{"x":1},"id":"0b0c0d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",'
                b'"timestamp":"2026-11-02T09:10:00.000Z","parentId":null}\n')
    bank = tmp_path / "bank.sqlite"
    report = scan(tmp_path, bank, (NAME,), env={"HOME": str(tmp_path), "COPILOT_HOME": str(tree)})
    assert report.harnesses[NAME].problems == 1
    conn = open_bank(bank)
    try:
        problems = conn.conn.execute("SELECT kind, line, detail FROM problems").fetchall()
    finally:
        conn.close()
    assert problems == [("unknown_type", 61, "type='session.hologram'")]
    assert len(events_of(bank, A)) == 33  # the rest imports as before


def test_roots_follow_copilot_home_and_xdg(tmp_path: Path) -> None:
    home = tmp_path / "home"
    default = [home / ".copilot" / "session-state", home / ".copilot" / "history-session-state"]
    assert copilot_cli.roots({}, home) == default
    moved = copilot_cli.roots({"COPILOT_HOME": "/srv/copilot"}, home)
    assert moved[:2] == [Path("/srv/copilot/session-state"), Path("/srv/copilot/history-session-state")]
    assert moved[2:] == default  # sessions written before 1.0 ignored COPILOT_HOME
    xdg = copilot_cli.roots({"XDG_STATE_HOME": "/x/state"}, home)
    state = Path("/x/state/.copilot")
    assert xdg == [*default, state / "session-state", state / "history-session-state"]
    # 0.0.3xx with XDG_STATE_HOME set: found there without COPILOT_HOME.
    shutil.copytree(HAND, tmp_path / "state" / ".copilot")
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state")})
    assert report.harnesses[NAME].problems == 0 and len(sessions_of(bank)) == 10


def test_rereading_yields_the_same_events(tmp_path: Path, hand_bank: Path) -> None:
    env = {"HOME": str(tmp_path), "COPILOT_HOME": str(HAND)}
    again = scan(tmp_path, hand_bank, (NAME,), env=env)
    assert again.events_added == 0
    fresh = tmp_path / "fresh.sqlite"
    scan(tmp_path, fresh, (NAME,), env=env)
    assert event_identities(fresh) == event_identities(hand_bank)


def test_fork_read_in_two_parts_marks_the_copies() -> None:
    """A fork whose copied block was committed by an earlier read: those events are marked, not kept quiet."""
    path = HAND / "session-state" / F / "events.jsonl"
    lines = path.read_bytes().splitlines()
    records = [Record(i + 1, raw) for i, raw in enumerate(lines)]
    ref = SourceRef(path, path.parent.parent, "events")
    first = copilot_cli.parse(ref, records[:20], {})
    assert first.events and not first.marks
    second = copilot_cli.parse(ref, records[20:], first.state)
    fork_id = next(orjson.loads(line)["id"] for line in lines if b'"infoType":"fork"' in line)
    assert [(m.since, m.until, m.meta) for m in second.marks] == [
        (first.events[0].uid, fork_id, {"inherited_from": A})]
    assert second.events[0].uid == fork_id
    assert second.sessions[F].parent_native_id == A and set(second.sessions) == {F}


def test_workspace_yaml_values_stay_text() -> None:
    text = ('id: 1f0e\nname: "Fix: the \\"cache\\" bug"\nuser_named: true\nsummary_count: 2\n'
            "summary: |-\n  first line\n  second line\ncwd: '/home/o''brien/repo'\nbranch: 1.0\nmc:\n  nested: 1\n")
    assert copilot_cli._yaml_mapping(text) == {
        "id": "1f0e", "name": 'Fix: the "cache" bug', "user_named": "true", "summary_count": "2",
        "summary": "first line\nsecond line", "cwd": "/home/o'brien/repo", "branch": "1.0", "mc": {"nested": "1"}}
    assert copilot_cli._yaml_mapping("- a list\n") == {}
    with pytest.raises(ValueError):
        copilot_cli._yaml_mapping('name: "unterminated\n')


def test_reasoning_once_and_ephemeral_records_skipped() -> None:
    """assistant.reasoning (ephemeral in every bundle read) repeats the message's reasoningText."""
    lines = [
        {"type": "assistant.reasoning", "id": "e1",
         "data": {"reasoningId": "r1", "content": "Check the cache."}},
        {"type": "assistant.message", "id": "e2",
         "data": {"messageId": "m1", "content": "Done.", "reasoningText": "Check the cache."}},
        {"type": "assistant.message_delta", "data": {"messageId": "m1", "deltaContent": "Do"}, "id": "e3",
         "ephemeral": True},
        {"type": "user.message", "data": {"content": "hi"}, "id": "e4", "ephemeral": True},
    ]
    ref = SourceRef(Path("/c/session-state/s1/events.jsonl"), Path("/c/session-state"), "events")
    batch = copilot_cli.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [(e.uid, e.kind) for e in batch.events] == [("e1", "thinking"), ("e2", "text")]
    assert batch.problems == [] and set(batch.sessions) == {"s1"}


def _parse(lines: list[dict], sid: str = "s1") -> Batch:
    ref = SourceRef(Path(f"/c/session-state/{sid}/events.jsonl"), Path("/c/session-state"), "events")
    return copilot_cli.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})


def test_real_subagent_events_join_the_spawning_call() -> None:
    """1.0.102 (real run): a subagent's events carry an ``agentId`` of the instance's own, which only its
    ``subagent.started`` pairs with the spawning ``task`` call; every one belongs to ``<sid>:<callId>``."""
    path = next((REAL / "subagent" / "session-state").glob("*/events.jsonl"))
    records = [Record(i + 1, raw) for i, raw in enumerate(path.read_bytes().splitlines())]
    batch = copilot_cli.parse(SourceRef(path, path.parent.parent, "events"), records, {})
    sid = path.parent.name
    call = next(e.tool_call_id for e in batch.events if e.tool_name == "task" and e.kind == "tool_call")
    assert set(batch.sessions) == {sid, f"{sid}:{call}"} and batch.problems == []
    sub = [(e.role, e.kind, e.tool_name) for e in batch.events if e.session == f"{sid}:{call}"]
    assert sub[-4:] == [("assistant", "tool_call", "view"), ("tool", "tool_result", "view"),
                        ("assistant", "text", None), ("system", "meta", None)]
    assert batch.sessions[f"{sid}:{call}"].parent_native_id == sid


def test_usage_record_counts_the_next_message_and_new_types_are_known() -> None:
    """1.0.102: session.usage_record precedes the message it counts (inputTokens include the cache)."""
    usage = {"model": "m", "inputTokens": 1000, "outputTokens": 40, "cacheReadTokens": 600,
             "cacheWriteTokens": 100, "reasoningTokens": 15}
    batch = _parse([
        {"type": "session.usage_record", "id": "u1", "data": {"usage": usage}},
        {"type": "assistant.message", "id": "a1", "data": {"content": "Done.", "toolRequests": []}},
        {"type": "assistant.message", "id": "a2", "data": {"content": "Again.", "outputTokens": 7}},
        {"type": "session.context_cleared", "id": "c1", "data": {"messagesCleared": 4}},
        {"type": "session.completion_receipt", "id": "r1", "data": {"stopReason": "end_turn"}},
        {"type": "subagent.configured", "id": "r2", "data": {"model": "m"}},
        {"type": "model.call_start", "id": "x1", "data": {}, "ephemeral": True},  # a type never listed
    ])
    assert batch.problems == []
    assert [(e.uid, e.kind, e.text) for e in batch.events] == [
        ("a1", "text", "Done."), ("a2", "text", "Again."), ("c1", "meta", "context cleared: 4 messages")]
    assert batch.events[0].usage == Usage(input=300, output=40, cache_read=600, cache_write=100, reasoning=15)
    assert batch.events[1].usage == Usage(output=7)  # before 1.0.102: the message's own count


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/p/s1/events.jsonl"), PurePath("/p"), "events")
    raw = b'{"type":[1],"data":{}}'
    batch = copilot_cli.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "unexpected shape: an array where text or a number was expected")]


def test_tool_requests_without_id_are_each_kept() -> None:
    """Two tool requests with no ``toolCallId`` in one message (Copilot names every call): each is its
    own event, and neither is remembered under a "None" key that a result without an id would find."""
    batch = _parse([{"type": "assistant.message", "id": "e1", "data": {"messageId": "m1", "content": "", "toolRequests": [
        {"name": "bash", "arguments": {"command": "ls"}}, {"name": "bash", "arguments": {"command": "pwd"}}]}}])
    calls = [e for e in batch.events if e.kind == "tool_call"]
    assert [(e.uid, e.tool_call_id, e.text) for e in calls] == [
        ("e1:call#0", None, "bash: ls"), ("e1:call#1", None, "bash: pwd")]
    assert batch.state.get("calls", {}) == {}
