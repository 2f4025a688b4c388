"""Qwen Code: what the fixtures must read as (fixtures/qwen_code/hand/README.md, real/CAPTURE.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import pytest

from harvester import parsers
from harvester.capture.liveness import _is_agent
from harvester.parsers import qwen_code
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "qwen_code" / "hand"
REAL = FIXTURES / "qwen_code" / "real"
SCENARIOS = sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else []
NAME = qwen_code.NAME
PROJECT = HAND / "projects" / "-home-dev-src-demo-repo"
A = "5f0c2d4e-8a1b-4c3d-9e7f-0a1b2c3d4e5f"  # 0.15.10 main session: tools, @-file, /compress, rewind...
B = "7a3e9c1b-2d4f-4e6a-8b0c-1d2e3f4a5b6c"  # /branch of A, with a rewind into a copied turn
C = "9b8a7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"  # archived, newer writer (0.24 record kinds)
L = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"  # legacy whole-document session (tmp/<hash>/chats)
AGENT = f"{A}:agent-general-purpose-call_bg01"  # background subagent of A
FORK_AGENT = f"{A}:agent-fork-call_fk02"  # fork subagent launched by AGENT


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    entry = Harness(NAME, qwen_code.roots, qwen_code.SOURCES, qwen_code.parse, "Qwen Code", qwen_code.PROCESSES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(parsers.HARNESSES, NAME, entry)
        yield entry


def _scan_root(tmp: Path, root: Path, var: str = "QWEN_HOME") -> tuple[Path, int]:
    bank = tmp / "bank.sqlite"
    report = scan(tmp, bank, (NAME,), env={"HOME": str(tmp), var: str(root)})
    return bank, report.harnesses[NAME].problems


@pytest.fixture(scope="module")
def hand_bank(harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Path:
    bank, problems = _scan_root(tmp_path_factory.mktemp("qwen"), HAND)
    assert problems == 0
    return bank



def _brief(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def test_every_session_is_read_and_nothing_else(hand_bank: Path) -> None:
    # Not sessions: the archived session's .ledger.jsonl, memory/MEMORY.md, tmp/<hash>/logs.json.
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, L, AGENT, FORK_AGENT}


def test_main_session(hand_bank: Path) -> None:
    s = session_of(hand_bank, A)
    assert (s["cwd"], s["model"], s["agent_version"], s["branch"]) == (
        "/home/dev/src/demo-repo", "qwen3-coder-plus", "0.15.10", "main")
    assert (s["title"], s["title_source"]) == ("parse_row: keep the last field", "custom")  # /rename beats auto
    assert s["parent_native_id"] is None and s["meta"]["last_turn"] == "complete"
    events = events_of(hand_bank, A)
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "Why does `parse_row` drop the last field?",
        "Compare with @src/lib.rs please",  # the @-command's own text, not the expanded parts
        "/compress",
        "Now add a regression test",
        "Put the regression test next to the parser instead",
        "What is wrong in this screenshot?\n[image/png, 72 bytes]",
    ]
    calls = [(e["tool_name"], e["tool_call_id"]) for e in events if e["kind"] == "tool_call"]
    results = [(e["tool_name"], e["tool_call_id"], e["is_error"]) for e in events if e["kind"] == "tool_result"]
    assert calls == [("read_file", "call_r1"), ("edit", "call_e1"), ("run_shell_command", "call_s1"),
                     ("write_file", "call_w1"), ("agent", "call_bg01")]
    assert results == [("read_file", "call_r1", False), ("edit", "call_e1", True),
                       ("run_shell_command", "call_s1", True), ("write_file", "call_w1", False),
                       ("agent", "call_bg01", False)]
    assert events[1]["kind"] == "thinking" and events[1]["usage"] == {
        "in": 836, "out": 96, "cache_read": 16384, "reasoning": 31}
    compaction = [e for e in events if e["kind"] == "compaction"]
    assert len(compaction) == 1 and compaction[0]["text"].startswith("<state_snapshot>")
    assert compaction[0]["meta"]["tokens_after"] == 2210


def test_injected_text_is_never_the_users(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    injected = [(e["role"], e["text"][:20], e["meta"].get("subtype")) for e in events
                if (e["meta"] or {}).get("injected")]
    assert injected == [
        ("system", "\n--- Content from re", None),  # the @-file contents
        ("system", "Ticket: DEMO-42 (add", None),  # UserPromptSubmit hook context
        ("system", "<task-notification>\n", "notification"),  # a background agent finished
        ("system", "Run `cargo clippy` a", "cron"),
    ]
    c = events_of(hand_bank, C)
    assert [e["text"] for e in c if e["role"] == "user"] == [
        "Summarize open TODOs in @src", "also check tests/", "Explain @docs/missing.md",
        "what should I do next?", "Write the streaming version"]
    hook = [e["text"] for e in c if (e["meta"] or {}).get("injected")]
    assert "<qwen:user-prompt-submit-context>" in hook[0] and hook[1].startswith("Goal check:")


def test_rewind_marks_the_abandoned_branch(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    rewound = [e["text"][:20] for e in events if (e["meta"] or {}).get("rewound")]
    assert rewound == ["Now add a regression", "Ticket: DEMO-42 (add", "write_file: /home/de", "Successfully created",
                       "Added `tests/rows.rs"]
    rewind = next(e for e in events if (e["meta"] or {}).get("subtype") == "rewind")
    first = next(e for e in events if e["text"] == "Now add a regression test")
    assert rewind["meta"]["rewound_from"] == first["uid"]
    # In the fork, the rewind goes back into the copied history: all of its own earlier events are abandoned.
    assert [(e["text"][:14], bool((e["meta"] or {}).get("rewound"))) for e in events_of(hand_bank, B)] == [
        ("Try a streamin", True), ("A streaming pa", True), ("conversation r", False),
        ("Keep the Vec s", False), ("Done: removed ", False)]


def _split_at_rewind(tmp_path: Path) -> tuple[Path, Path]:
    """A's history imported in two reads, the second starting at the rewind record."""
    root = tmp_path / "qwen"
    shutil.copytree(HAND / "projects", root / "projects")
    store = root / "projects" / PROJECT.name / "chats" / f"{A}.jsonl"
    lines = store.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"subtype":"rewind"' in line)
    store.write_bytes(b"".join(lines[:cut]))
    bank, _ = _scan_root(tmp_path, root)
    with store.open("ab") as f:
        f.write(b"".join(lines[cut:]))
    _scan_root(tmp_path, root)
    return bank, store


def test_rewind_read_in_a_later_chunk(harness: Harness, tmp_path: Path) -> None:
    """Events filed before the rewind was seen are marked by the bank (a Mark from the first abandoned
    turn up to the rewind record), just as a re-read from the start marks them."""
    bank, _ = _split_at_rewind(tmp_path)
    events = events_of(bank, A)
    rewind = next(e for e in events if (e["meta"] or {}).get("subtype") == "rewind")
    first = next(e for e in events if e["uid"] == rewind["meta"]["rewound_from"])
    assert first["text"] == "Now add a regression test"
    marked = [e for e in events if (e["meta"] or {}).get("rewound")]
    assert len(marked) == 5 and marked[0]["uid"] == first["uid"]
    assert all(e["seq"] < rewind["seq"] for e in marked)  # the new branch after the rewind is not marked


def test_rewind_marks_arrive_with_a_reread(harness: Harness, tmp_path: Path) -> None:
    """A re-read from the start revises the events filed earlier (only their meta changes)."""
    bank, store = _split_at_rewind(tmp_path)
    replacement = store.with_name("replacement.tmp")  # the file replaced: read again from the start
    replacement.write_bytes(store.read_bytes())
    replacement.replace(store)
    _scan_root(tmp_path, store.parents[3])
    assert sum(bool((e["meta"] or {}).get("rewound")) for e in events_of(bank, A)) == 5


def test_fork_skips_copied_history(hand_bank: Path) -> None:
    s = session_of(hand_bank, B)
    assert (s["parent_native_id"], s["parent_kind"], s["meta"]["copied_records"]) == (A, "fork", 43)
    assert (s["title"], s["title_source"]) == ("Why does `parse_row` drop the last field? (Branch)", "custom")
    assert [e["text"] for e in events_of(hand_bank, B) if e["role"] == "user"] == [
        "Try a streaming parser instead", "Keep the Vec signature and only fix the pop"]


def test_subagents(hand_bank: Path) -> None:
    agent, fork = session_of(hand_bank, AGENT), session_of(hand_bank, FORK_AGENT)
    assert (agent["parent_native_id"], agent["parent_kind"], agent["title"]) == (
        A, "subagent", "general-purpose: Find parse_row callers")
    assert (fork["parent_native_id"], fork["meta"]["status"]) == (AGENT, "running")  # launched by the agent
    events = events_of(hand_bank, AGENT)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"),
        ("system", "text"), ("assistant", "text")]
    assert events[0]["meta"] == {"from_agent": "parent", "input": "task"}  # the parent's words, not the human's
    assert events[2]["tool_call_id"] == events[1]["tool_call_id"] == "call_sg1"
    assert [e["role"] for e in events_of(hand_bank, FORK_AGENT)] == ["system", "system", "assistant"]


def test_newer_writer_records(hand_bank: Path) -> None:
    s = session_of(hand_bank, C)
    assert (s["parent_native_id"], s["parent_kind"], s["agent_version"]) == (A, "subagent", "0.24.4")
    assert s["meta"]["archived"] is True and s["meta"]["source"] == "acp"
    assert s["meta"]["last_turn"] == "aborted" and s["branch"] == "feature/todo-report"  # turn_result: cancelled
    events = events_of(hand_bank, C)
    not_sent = [e for e in events if (e["meta"] or {}).get("not_sent")]
    assert [e["text"] for e in not_sent] == ["Explain @docs/missing.md"]
    assert [e["text"] for e in events if (e["meta"] or {}).get("subtype") == "turn_result"] == ["turn cancelled"]


def test_legacy_document(hand_bank: Path) -> None:
    s = session_of(hand_bank, L)
    assert s["cwd"] is None and len(s["meta"]["project_hash"]) == 64  # only the cwd's hash is recorded
    assert (s["title"], s["model"]) == ("How do I run the parser tests?", "qwen3-coder-plus")
    events = events_of(hand_bank, L)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("user", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[5]["tool_call_id"] == events[4]["tool_call_id"] == "call_l1"
    assert events[4]["usage"] == {"in": 340, "out": 31, "cache_read": 8960}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_real_capture_reads_cleanly(harness: Harness, tmp_path: Path, scenario: str) -> None:
    bank, problems = _scan_root(tmp_path, REAL / scenario)
    assert problems == 0
    sessions = sessions_of(bank)
    assert sessions and all(
        (s["agent_version"], s["bank_id"], s["branch"]) == ("0.15.10", "coding-agent::demo-repo", "main")
        and s["cwd"].startswith("/tmp/cap-qwen-code-") for s in sessions)


def test_real_two_turns_in_order(harness: Harness, tmp_path: Path) -> None:
    if "two_turns" not in SCENARIOS:
        pytest.skip("no real capture")
    bank, _ = _scan_root(tmp_path, REAL / "two_turns")
    sid = sessions_of(bank)[0]["native_id"]
    assert _brief(bank, sid) == [
        ("user", "text", "say hi"),
        ("assistant", "text", "Hi! I am the fake model."),
        ("user", "text", "READ_FILE /tmp/cap-qwen-"),
        ("assistant", "tool_call", "read_file: /tmp/cap-qwen"),
        ("tool", "tool_result", "These are the demo notes"),
        ("assistant", "text", "The file says: These are"),
    ]
    session = sessions_of(bank)[0]
    assert (session["title"], session["model"], session["meta"]["last_turn"]) == ("say hi", "fake-model", "complete")
    events = events_of(bank, sid)
    assert events[3]["tool_call_id"] == events[4]["tool_call_id"] and events[4]["tool_name"] == "read_file"


def test_real_thinking_and_tool_error(harness: Harness, tmp_path: Path) -> None:
    if not {"thinking", "tool_error"} <= set(SCENARIOS):
        pytest.skip("no real capture")
    (tmp_path / "t").mkdir()
    (tmp_path / "e").mkdir()
    bank, _ = _scan_root(tmp_path / "t", REAL / "thinking")
    assert [k for _, k, _ in _brief(bank, sessions_of(bank)[0]["native_id"])] == ["text", "thinking", "text"]
    bank, _ = _scan_root(tmp_path / "e", REAL / "tool_error")
    events = events_of(bank, sessions_of(bank)[0]["native_id"])
    assert [(e["kind"], e["is_error"]) for e in events] == [
        ("text", False), ("tool_call", False), ("tool_result", True), ("text", False)]
    assert events[2]["text"].startswith("File not found:")


def test_unknown_records_are_drift(harness: Harness, tmp_path: Path) -> None:
    chats = tmp_path / "qwen" / "projects" / "-w" / "chats"
    chats.mkdir(parents=True)
    base = '"parentUuid":null,"sessionId":"s","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/w","version":"0.15.10"'
    (chats / f"{A}.jsonl").write_text(
        f'{{"uuid":"u1",{base},"type":"user","message":{{"role":"user","parts":[{{"text":"hi"}}]}}}}\n'
        f'{{"uuid":"u2",{base},"type":"progress"}}\n'
        f'{{"uuid":"u3",{base},"type":"system","subtype":"brand_new","systemPayload":{{}}}}\n'
        f'{{"uuid":"u4",{base},"type":"system","subtype":"ui_telemetry","systemPayload":{{}}}}\n')
    bank, problems = _scan_root(tmp_path, tmp_path / "qwen")
    assert problems == 2  # the unknown type and the unknown subtype; telemetry is skipped on purpose
    assert [e["text"] for e in events_of(bank, A)] == ["hi"]


def test_env_overrides_move_the_root(harness: Harness, tmp_path: Path) -> None:
    home = Path("/home/u")
    assert qwen_code.roots({}, home) == [home / ".qwen"]
    assert qwen_code.roots({"QWEN_HOME": "/srv/qwen"}, home) == [Path("/srv/qwen")]
    assert qwen_code.roots({"QWEN_RUNTIME_DIR": "~/runtime"}, home) == [home / "runtime", home / ".qwen"]
    assert qwen_code.roots({"QWEN_RUNTIME_DIR": "/r", "QWEN_HOME": "/h"}, home) == [Path("/r"), Path("/h")]
    assert qwen_code.roots({"QWEN_HOME": "relative/dir"}, home) == [home / ".qwen"]  # Qwen's cwd: unknowable
    bank, problems = _scan_root(tmp_path, HAND, var="QWEN_RUNTIME_DIR")
    assert problems == 0 and A in {s["native_id"] for s in sessions_of(bank)}


def test_processes_are_recognised() -> None:
    marks = qwen_code.PROCESSES
    assert _is_agent("node", ["node", "/usr/local/bin/qwen", "-p", "hi"], marks)
    assert _is_agent("node", ["/usr/bin/node", "/usr/lib/node_modules/@qwen-code/qwen-code/cli.js"], marks)
    assert not _is_agent("bash", ["bash", "-c", "grep qwen notes.txt"], marks)


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/q/projects/p/chats/s1.jsonl"), PurePath("/q"))
    raw = b'{"uuid":"u1","sessionId":"s1","type":"user","message":5}'
    batch = qwen_code.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "record of unexpected shape: a value that cannot be used (message.parts is not a list)")]
