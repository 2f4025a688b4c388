"""Codex: what the fixtures must read as (fixtures/codex/hand/README.md, real/CAPTURE.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import codex
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "codex" / "hand"
REAL = FIXTURES / "codex" / "real"
A = "019fc73d-ae36-7180-8760-c4e5c923b2ef"  # current (paginated) main session
B = "019fc73f-5753-7eeb-b906-eebac849c03a"  # its subagent
C = "019fc75a-341a-701b-af5a-18a0fda00175"  # its fork (no copied history)
D = "019cecde-f96b-7949-b14e-d21724be7d1f"  # legacy envelope, archived
E = "019ced18-04c9-7864-99ca-661252188bc0"  # legacy fork of D (copied history)
F = "019ee419-6502-7749-990f-9c824282f5bb"  # June 2026 subagent (inter_agent_communication)
G = "0199b4b7-3618-7493-b30b-60cb76212288"  # early envelope, 2025-10
H = "a9da0b15-3b37-493d-a19c-e3ee185a3654"  # no envelope, date dirs, 2025-08
I1 = "d2a86c55-4f9a-4150-bf80-fbfae98d75b5"  # first Rust JSONL, 2025-05
J = "80a765e6-3064-42fd-8017-9c0e37680010"  # TypeScript CLI single JSON, 2025-04


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("codex")
    bank = tmp / "bank.sqlite"
    report = scan(tmp, bank, ("codex",), env={"HOME": str(tmp), "CODEX_HOME": str(HAND)})
    assert report.harnesses["codex"].problems == 0
    return bank


def _user_prompts(bank: Path, sid: str) -> list[str]:
    return [e["text"] for e in events_of(bank, sid) if e["role"] == "user"]



def test_every_era_is_read(hand_bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, D, E, F, G, H, I1, J}


def test_current_session_keeps_each_thing_once(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    assert [p[:30] for p in _user_prompts(hand_bank, A)] == [
        "cargo test fails in crates/par",
        "Here is the CI screenshot. Hav",
        "Now run the benchmarks and com",
        "Thanks — summarize what change",
    ]
    texts = [e["text"] for e in events if e["role"] == "assistant" and e["kind"] == "text"]
    assert len(texts) == len(set(texts)) == 4  # item_completed / task_complete copies dropped
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [c["tool_name"] for c in calls] == [
        "exec_command",
        "apply_patch",
        "exec_command",
        "web_search",
        "tool_search",
        "spawn_agent",
        "view_image",
        "local_shell",
        "image_generation",
        "exec_command",
    ]
    results = {e["tool_call_id"] for e in events if e["kind"] == "tool_result"}
    unanswered = [c["tool_name"] for c in calls if c["tool_call_id"] not in results]
    assert unanswered == ["web_search", "image_generation"]  # hosted tools: no result record exists
    assert [e["kind"] for e in events if e["kind"] in ("thinking", "compaction")] == [
        "thinking",
        "thinking",
        "compaction",
        "compaction",
    ]
    injected = [e for e in events if (e["meta"] or {}).get("injected")]
    assert all(e["role"] == "system" for e in injected) and len(injected) == 4  # L3, L4, L36, L81
    assert not any("base64" in e["text"] or "iVBORw0KGgo" in e["text"] for e in events)
    aborted = [e["text"] for e in events if (e["meta"] or {}).get("event") == "turn_aborted"]
    assert aborted == ["turn aborted: interrupted"]
    session = session_of(hand_bank, A)
    assert session["model"] == "gpt-5.5-mini" and session["branch"] == "main"
    assert session["meta"]["tokens"]["total_tokens"] == 109982
    # token_usage_record: exact usage per model response, attached to the response's last item
    assert sum(e["usage"]["out"] for e in events if e["usage"]) == 1182


def test_subagents_and_forks_are_linked(hand_bank: Path) -> None:
    assert (session_of(hand_bank, B)["parent_native_id"], session_of(hand_bank, B)["parent_kind"]) == (
        A,
        "subagent",
    )
    assert (session_of(hand_bank, F)["parent_kind"], session_of(hand_bank, F)["title"][:20]) == (
        "subagent",
        "Run clippy on crates",
    )
    assert (session_of(hand_bank, C)["parent_native_id"], session_of(hand_bank, C)["parent_kind"]) == (A, "fork")
    assert (session_of(hand_bank, E)["parent_native_id"], session_of(hand_bank, E)["parent_kind"]) == (D, "fork")
    # The legacy fork copied D's first turns: they belong to D, not to E.
    assert _user_prompts(hand_bank, E) == [
        "Alternative approach: leave the TODO and open an issue instead. Draft the issue text."
    ]
    # The task a subagent gets from its parent is the parent agent's words, not the human's.
    task = [e for e in events_of(hand_bank, B) if (e["meta"] or {}).get("from_agent")]
    assert task and task[0]["role"] == "system" and task[0]["meta"]["from_agent"] == "/root"
    plan = [e for e in events_of(hand_bank, C) if (e["meta"] or {}).get("plan")]
    assert len(plan) == 1 and plan[0]["text"].startswith("1. Add `strict: bool`")


def test_legacy_markers(hand_bank: Path) -> None:
    d = events_of(hand_bank, D)
    assert "the last 1 turn(s) were rolled back" in [e["text"] for e in d]
    assert [e["text"] for e in d if e["kind"] == "compaction"] == ["conversation compacted"]  # remote: opaque
    assert sum(e["role"] == "user" for e in d) == 4  # user_message copies dropped
    g = events_of(hand_bank, G)
    assert _user_prompts(hand_bank, G) == [
        "What does `split_fields` return for an empty line?",
        "Make it return an empty Vec instead.",
    ]
    assert [e["text"][:20] for e in g if e["kind"] == "compaction"] == ["The user asked about"]


def test_pre_envelope_eras(hand_bank: Path) -> None:
    h = events_of(hand_bank, H)
    assert [(e["role"], e["kind"]) for e in h] == [
        ("user", "text"),
        ("assistant", "thinking"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "text"),
    ]
    assert h[3]["text"] == "src/lib.rs\nsrc/main.rs\n"  # {"output": ..., "metadata": ...} unwrapped
    assert [(e["role"], e["kind"]) for e in events_of(hand_bank, I1)] == [
        ("user", "text"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "text"),
    ]
    j = events_of(hand_bank, J)
    assert [(e["role"], e["kind"], e["is_error"]) for e in j] == [
        ("user", "text", False),
        ("assistant", "thinking", False),
        ("assistant", "tool_call", False),
        ("tool", "tool_result", True),
        ("assistant", "text", False),
        ("system", "meta", False),
    ]
    assert session_of(hand_bank, H)["branch"] is not None  # the header's git facts


@pytest.mark.parametrize(
    "scenario", ["two_turns", "thinking", "tool_error", "subagent", "compact", "fork", "archived", "live"]
)
def test_real_capture_reads_cleanly(tmp_path: Path, scenario: str) -> None:
    bank = tmp_path / "bank.sqlite"
    report = scan(tmp_path, bank, ("codex",), env={"HOME": str(tmp_path), "CODEX_HOME": str(REAL / scenario)})
    assert report.harnesses["codex"].problems == 0
    sessions = sessions_of(bank)
    assert sessions and all(
        s["agent_version"] == "0.171.0" and s["bank_id"] == "coding-agent::demo-repo" for s in sessions
    )


def test_real_two_turns_in_order(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path, bank, ("codex",), env={"HOME": str(tmp_path), "CODEX_HOME": str(REAL / "two_turns")})
    events = [
        (e["role"], e["kind"], e["text"][:16])
        for e in events_of(bank)
        if not (e["meta"] or {}).get("injected")
    ]
    assert events == [
        ("user", "text", "say hi"),
        ("assistant", "text", "Hi! I am the fak"),
        ("user", "text", "READ_FILE /tmp/c"),
        ("assistant", "tool_call", "exec_command: ca"),
        ("tool", "tool_result", "Chunk ID: ee98b9"),
        ("assistant", "text", "The file says: C"),
    ]


def test_real_subagent_and_fork_links(tmp_path: Path) -> None:
    for scenario, kind in (("subagent", "subagent"), ("fork", "fork")):
        bank = tmp_path / f"{scenario}.sqlite"
        scan(tmp_path, bank, ("codex",), env={"HOME": str(tmp_path), "CODEX_HOME": str(REAL / scenario)})
        sessions = {s["native_id"]: s for s in sessions_of(bank)}
        children = [s for s in sessions.values() if s["parent_native_id"]]
        assert len(children) == 1 and children[0]["parent_kind"] == kind
        assert children[0]["parent_native_id"] in sessions


def test_roots_follow_codex_home(tmp_path: Path) -> None:
    assert codex.roots({}, tmp_path) == [tmp_path / ".codex"]
    assert codex.roots({"CODEX_HOME": "/srv/codex"}, tmp_path) == [Path("/srv/codex")]


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath(f"/x/sessions/rollout-2026-08-03T10-48-56-{A}.jsonl"), PurePath("/x"))
    raw = (b'{"timestamp":"2026-08-03T10:48:56.000Z","type":"response_item",'
           b'"payload":{"type":"message","role":"user","content":5}}')
    batch = codex.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "record of unexpected shape: a number where an object or an array was expected")]


def _rollout(tmp_path: Path, *payloads: dict) -> Path:
    """A current (paginated) rollout under $CODEX_HOME/sessions: session_meta, then these items."""
    folder = tmp_path / "codex" / "sessions" / "2026" / "08" / "03"
    folder.mkdir(parents=True)
    meta = {"id": A, "session_id": A, "timestamp": "2026-08-03T10:48:56.118Z", "cwd": "/home/dev/src/demo-repo",
            "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec", "history_mode": "paginated"}
    lines = [{"type": "session_meta", "payload": meta}, *payloads]
    path = folder / f"rollout-2026-08-03T10-48-56-{A}.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"timestamp": f"2026-08-03T10:48:{56 + n}.000Z", "ordinal": n, **line})
                              + b"\n" for n, line in enumerate(lines)))
    return path


def _scan_rollout(tmp_path: Path, name: str = "bank") -> Path:
    bank = tmp_path / f"{name}.sqlite"
    report = scan(tmp_path, bank, ("codex",), env={"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex")})
    assert report.harnesses["codex"].problems == 0
    return bank


def test_a_function_call_without_call_id_imports_and_nothing_crashes(tmp_path: Path) -> None:
    """No ``call_id`` (nor ``id``) and no output after it: the call is kept without a tool_call_id, and
    the parser's state stays JSON (it once held the call under a None key)."""
    call = {"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"ls"}'}
    _rollout(tmp_path, {"type": "response_item", "payload": call})
    bank = _scan_rollout(tmp_path)
    (event,) = events_of(bank, A)
    assert (event["kind"], event["tool_name"], event["tool_call_id"], event["text"]) == (
        "tool_call", "exec_command", None, "exec_command: ls")
    assert [e["uid"] for e in events_of(_scan_rollout(tmp_path, "again"), A)] == [event["uid"]]  # stable


def test_an_output_object_without_content_is_rendered_not_emptied(tmp_path: Path) -> None:
    """Codex writes ``output`` as text or a list of content items (models.rs); an object without
    ``content`` is no shape it writes, and its fields are still the result, not an empty text."""
    call = {"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"ls"}', "call_id": "call_1"}
    output = {"type": "function_call_output", "call_id": "call_1", "output": {"exit_code": 1, "stderr": "no such dir"}}
    _rollout(tmp_path, {"type": "response_item", "payload": call}, {"type": "response_item", "payload": output})
    result = events_of(_scan_rollout(tmp_path), A)[-1]
    assert (result["kind"], result["tool_name"], result["text"]) == (
        "tool_result", "exec_command", '{"exit_code":1,"stderr":"no such dir"}')


def test_errors_and_warnings_of_the_ui_stream_are_kept(tmp_path: Path) -> None:
    """``error`` (written only while extended history was on, 2026-02 to 2026-06), ``stream_error`` and
    ``warning`` (protocol.rs: ErrorEvent, StreamErrorEvent, WarningEvent) say what went wrong in a
    turn: notices in the transcript. An error fails the turn, as Codex's own replay has it."""
    events = [
        {"type": "task_started", "turn_id": "t1"},
        {"type": "stream_error", "message": "Reconnecting... 1/5", "codex_error_info": "response_stream_disconnected",
         "additional_details": "stream disconnected before completion"},
        {"type": "warning", "message": "Heads up: long conversations make the model less accurate."},
        {"type": "error", "message": "You've hit your usage limit.", "codex_error_info": "usage_limit_exceeded"},
        {"type": "task_complete", "turn_id": "t1"},
    ]
    _rollout(tmp_path, *({"type": "event_msg", "payload": e} for e in events))
    bank = _scan_rollout(tmp_path)
    assert [(e["role"], e["kind"], e["text"], e["meta"]) for e in events_of(bank, A)] == [
        ("system", "meta", "stream error: Reconnecting... 1/5",
         {"event": "stream_error", "error_info": "response_stream_disconnected",
          "details": "stream disconnected before completion"}),
        ("system", "meta", "warning: Heads up: long conversations make the model less accurate.", {"event": "warning"}),
        ("system", "meta", "error: You've hit your usage limit.", {"event": "error", "error_info": "usage_limit_exceeded"}),
    ]
    assert session_of(bank, A)["meta"]["last_turn"] == "failed"
