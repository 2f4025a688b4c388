"""Continue: what the fixtures must read as (fixtures/continue_cli/hand/README.md, real/CAPTURE.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.model import Batch
from harvester.parsers import continue_cli
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = continue_cli.NAME
HAND = FIXTURES / "continue_cli" / "hand"
REAL = FIXTURES / "continue_cli" / "real"
REAL_SCENARIOS = sorted(p.name for p in REAL.glob("*") if (p / "sessions").is_dir())
CWD = "/home/dev/src/demo-repo"
A = "3f9c1e2a-7b4d-4c8e-9a1f-2d6b8e0c4a71"  # CLI: every tool outcome, attachments, an image
B = "8d2e5b7c-1a3f-4e9d-b6c2-5f0a9e8d7c13"  # CLI: after a compaction, a tool still running
C = "5b1d9f3e-2c7a-4f60-8e1b-9a4c3d2e7f05"  # VS Code 2026: message ids, tool items, thinking, summary
D = "0c7a4e91-6d2b-4f3a-a5e8-71b9c2d40f66"  # JetBrains 2025: toolCallState (singular), Windows URI
E = "e4b2a7d9-3c81-4f0e-9b6a-1d5c7e2f8a30"  # VS Code 2024: no ids at all
R = "a1c3e5f7-2b4d-4e6f-8a0c-9e7d5b3f1a20"  # the rewrite pair


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setitem(parsers.HARNESSES, NAME, Harness(
            NAME, continue_cli.roots, continue_cli.SOURCES, continue_cli.parse, "Continue",
            continue_cli.PROCESSES))
        yield


def _scan(tmp: Path, root: Path, bank: Path | None = None) -> tuple[Path, Any]:
    bank = bank or tmp / "bank.sqlite"
    report = scan(tmp, bank, (NAME,), env={"HOME": str(tmp), "CONTINUE_GLOBAL_DIR": str(root)})
    return bank, report.harnesses[NAME]


def _problems(bank: Path) -> list[tuple]:
    handle = open_bank(bank)
    try:
        return [tuple(r) for r in handle.conn.execute("SELECT line, kind, detail FROM problems ORDER BY line")]
    finally:
        handle.close()


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("continue")
    bank, report = _scan(tmp, HAND)
    assert report.problems == 0 and _problems(bank) == []
    return bank



def _rows(bank: Path, sid: str | None = None) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24], e["tool_name"], e["tool_call_id"], e["is_error"])
            for e in events_of(bank, sid)]


def test_index_is_read_only_as_a_sidecar(hand_bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, D, E}  # no "sessions"
    ref = SourceRef(PurePath("/x/sessions/sessions.json"), PurePath("/x"))
    assert continue_cli.parse(ref, [Record(1, b"[]")], {}).events == []


def test_sessions_facts(hand_bank: Path) -> None:
    facts = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"], s["started_at"],
                              s["agent_version"], s["meta"]["last_turn"]) for s in sessions_of(hand_bank)}
    assert facts == {
        A: (CWD, "Fix split_fields dropping the last field", "ai", "claude-sonnet-4-5",
            "2026-11-29T11:00:00.000Z", None, "complete"),
        B: (CWD, "Changelog for the split_fields fix", "ai", "gpt-5-mini", "2026-11-29T13:46:40.000Z", None, "open"),
        C: (CWD, "Retry loop gives up early", "ai", "Claude Sonnet 4.5", "2026-11-28T21:06:30.000Z", None,
            "complete"),
        # "New Session" is the IDE's placeholder: the first prompt stands in.
        D: ("C:/Users/dev/src/demo-repo", "List the files in src", "first-prompt", None,
            "2025-05-11T21:46:40.000Z", None, "complete"),
        E: (CWD, "split_fields on an empty line", "ai", "GPT-4o", "2024-06-10T06:13:20.000Z", None, "complete"),
    }
    assert session_of(hand_bank, C)["meta"]["workspace"] == f"file://{CWD}" and session_of(hand_bank, C)["meta"][
        "mode"] == "agent"
    assert session_of(hand_bank, A)["meta"]["cost_usd"] == 0.0612


def test_cli_session_in_order(hand_bank: Path) -> None:
    assert _rows(hand_bank, A) == [
        ("user", "text", "split_fields drops the l", None, None, False),
        ("system", "text", "[fields.py]\ndef split_fi", None, None, False),  # the attached file
        ("assistant", "text", "Let me read the file and", None, None, False),
        ("assistant", "tool_call", "Read: /home/dev/src/demo", "Read", "toolu_01Read", False),
        ("tool", "tool_result", "Content of /home/dev/src", "Read", "toolu_01Read", False),
        ("assistant", "tool_call", "Search: split_fields", "Search", "toolu_01Search", False),
        ("tool", "tool_result", "tests/test_fields.py:3: ", "Search", "toolu_01Search", False),
        ("assistant", "tool_call", "Edit: /home/dev/src/demo", "Edit", "toolu_02Edit", False),
        ("tool", "tool_result", "Error executing tool Edi", "Edit", "toolu_02Edit", True),  # errored
        ("assistant", "tool_call", "Edit: /home/dev/src/demo", "Edit", "toolu_03Edit", False),
        ("tool", "tool_result", "Successfully edited /hom", "Edit", "toolu_03Edit", False),
        ("assistant", "thinking", "The slice drops the elem", None, None, False),  # <think> in content
        ("assistant", "text", "Fixed: `split_fields` sl", None, None, False),
        ("user", "text", "[image]\nHere is the CI f", None, None, False),  # no base64 kept
        ("assistant", "tool_call", "Bash: rm -rf build && py", "Bash", "toolu_04Bash", False),
        ("tool", "tool_result", "Permission denied by use", "Bash", "toolu_04Bash", True),  # canceled
        ("user", "text", "Don't delete build/, jus", None, None, False),
        ("assistant", "tool_call", "Bash: pytest -q", "Bash", "toolu_05Bash", False),
        ("tool", "tool_result", "3 passed in 0.04s\n", "Bash", "toolu_05Bash", False),
        ("assistant", "text", "Yes, the same bug; with ", None, None, False),
    ]
    events = events_of(hand_bank, A)
    assert events[1]["meta"]["injected"] and events[1]["meta"]["uri"] == f"file://{CWD}/src/fields.py"
    assert events[3]["tool_input"] == {"filepath": f"{CWD}/src/fields.py"}
    # one usage per model response, on its first event; Anthropic-style counts keep input uncached
    assert [e["usage"] for e in events if e["usage"]][1] == {"in": 2630, "out": 120, "cache_read": 2048,
                                                             "cache_write": 1024}
    assert sum(1 for e in events if e["usage"]) == 7


def test_compacted_session_and_open_turn(hand_bank: Path) -> None:
    assert _rows(hand_bank, B) == [
        ("system", "compaction", "## Conversation Overview", None, None, False),
        ("system", "text", "continue", None, None, False),  # sent by the CLI, not typed
        ("assistant", "text", "The fix is in place and ", None, None, False),
        ("user", "text", "Now add a changelog entr", None, None, False),
        ("assistant", "tool_call", "Write: /home/dev/src/dem", "Write", "call_w8J2kQ", False),
    ]  # the Write call is still running: no result yet


def test_ide_session_keeps_each_result_once(hand_bank: Path) -> None:
    assert _rows(hand_bank, C) == [
        ("user", "text", "Why does the retry loop ", None, None, False),
        ("system", "text", "[retry.ts (1-6)]\nexport ", None, None, False),
        ("assistant", "thinking", "The loop starts at 1 and", None, None, False),
        ("assistant", "tool_call", "read_file: src/retry.ts", "read_file", "toolu_vs01", False),
        ("tool", "tool_result", "```ts src/retry.ts\nexpor", "read_file", "toolu_vs01", False),
        ("assistant", "text", "It does not give up earl", None, None, False),
        ("user", "text", "Rewrite it as a single l", None, None, False),
        ("assistant", "thinking", "[redacted thinking]", None, None, False),
        ("assistant", "tool_call", "edit_existing_file: src/", "edit_existing_file", "toolu_vs02", False),
        ("tool", "tool_result", "[tool call canceled]", "edit_existing_file", "toolu_vs02", True),
        ("user", "text", "Use search and replace i", None, None, False),
        ("assistant", "tool_call", "search_and_replace_in_fi", "search_and_replace_in_file", "toolu_vs03", False),
        ("tool", "tool_result", "Search content not found", "search_and_replace_in_file", "toolu_vs03", True),
        ("assistant", "thinking", "Whitespace differs, so g", None, None, False),  # <think> reasoning
        ("assistant", "text", "The search text did not ", None, None, False),
        ("system", "compaction", "## Conversation Overview", None, None, False),  # summary on that item
    ]
    events = events_of(hand_bank, C)
    assert events[0]["uid"].startswith("9e1f2a3b-4c5d-4e6f-8a7b-0c1d2e3f4a5b:")  # the message's own id
    assert events[13]["ts"] == "2026-11-28T21:06:40.000Z"  # reasoning.startAt


def test_older_ide_shapes(hand_bank: Path) -> None:
    assert _rows(hand_bank, D) == [
        ("user", "text", "List the files in src", None, None, False),
        ("assistant", "tool_call", "ls: src", "ls", "call_jb01", False),
        ("tool", "tool_result", "src/fields.py\nsrc/retry.", "ls", "call_jb01", False),
        ("assistant", "text", "src holds fields.py and ", None, None, False),
    ]
    assert [(r[0], r[1]) for r in _rows(hand_bank, E)] == [("user", "text"), ("assistant", "text")]


def test_calls_and_results_pair_up(hand_bank: Path) -> None:
    calls = {e["tool_call_id"] for e in events_of(hand_bank) if e["kind"] == "tool_call"}
    results = [e["tool_call_id"] for e in events_of(hand_bank) if e["kind"] == "tool_result"]
    assert len(results) == len(set(results)) and set(results) == calls - {"call_w8J2kQ"}


# -- rewrites --------------------------------------------------------------------------------
def _install(home: Path, sid: str, document: bytes) -> Path:
    path = home / ".continue" / "sessions" / f"{sid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(document)
    return path


def _scan_home(home: Path, bank: Path) -> Any:
    return scan(home, bank, (NAME,), env={"HOME": str(home)}).harnesses[NAME]


def test_rewrite_pair_adds_only_what_is_new(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    _install(tmp_path, R, (HAND / "rewrite" / "before.json").read_bytes())
    _scan_home(tmp_path, bank)
    before = events_of(bank, R)
    assert [(e["role"], e["kind"]) for e in before][-1] == ("assistant", "tool_call")  # still calling
    assert session_of(bank, R)["meta"]["last_turn"] == "open" and session_of(bank, R)["title"] == "say hi"
    _install(tmp_path, R, (HAND / "rewrite" / "after.json").read_bytes())
    report = _scan_home(tmp_path, bank)
    after = events_of(bank, R)
    assert report.events_added == 4 and after[: len(before)] == before
    assert [(e["role"], e["kind"], e["text"][:16]) for e in after[len(before):]] == [
        ("tool", "tool_result", "Content of /home"),
        ("assistant", "text", "The file says th"),
        ("user", "text", "thanks"),
        ("assistant", "text", "You're welcome."),
    ]
    assert len({e["uid"] for e in after}) == len(after)
    session = session_of(bank, R)
    assert (session["title"], session["title_source"], session["meta"]["last_turn"]) == (
        "Greeting and the demo notes", "ai", "complete")


def test_tool_result_arrives_once_and_is_revised_in_place(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    document = orjson.loads((HAND / "sessions" / f"{B}.json").read_bytes())
    path = _install(tmp_path, B, orjson.dumps(document, option=orjson.OPT_INDENT_2))
    _scan_home(tmp_path, bank)
    state = document["history"][-1]["toolCallStates"][0]
    for output, added in (("Wrote 2 lines", 1), ("Wrote 2 lines to CHANGELOG.md", 0)):
        state["status"], state["output"] = "done", [{"content": output, "name": "Tool Result",
                                                     "description": "Tool execution result"}]
        path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        assert _scan_home(tmp_path, bank).events_added == added
    results = [e for e in events_of(bank, B) if e["kind"] == "tool_result"]
    assert [(e["text"], e["tool_call_id"]) for e in results] == [("Wrote 2 lines to CHANGELOG.md", "call_w8J2kQ")]
    assert session_of(bank, B)["meta"]["last_turn"] == "open"  # the model has yet to answer it


def _append_turn(document: dict, prompt: str, answer: str) -> bytes:
    document["history"] += [
        {"message": {"role": "user", "content": prompt}, "contextItems": [], "editorState": prompt},
        {"message": {"role": "assistant", "content": answer}, "contextItems": []},
    ]
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


@pytest.mark.parametrize("scenario", REAL_SCENARIOS)
def test_rewrite_with_one_more_turn_adds_that_turn(tmp_path: Path, scenario: str) -> None:
    bank = tmp_path / "bank.sqlite"
    for source in (REAL / scenario / "sessions").glob("*.json"):
        if source.name == continue_cli.INDEX_NAME:
            continue
        path = _install(tmp_path, source.stem, source.read_bytes())
        _scan_home(tmp_path, bank)
        before = events_of(bank, source.stem)
        path.write_bytes(_append_turn(orjson.loads(source.read_bytes()), "one more thing", "Sure, done."))
        assert _scan_home(tmp_path, bank).events_added == 2
        after = events_of(bank, source.stem)
        assert after[: len(before)] == before
        assert [(e["role"], e["text"]) for e in after[len(before):]] == [
            ("user", "one more thing"), ("assistant", "Sure, done.")]


def test_edited_message_is_added_after_the_old_version(tmp_path: Path) -> None:
    """Continue truncates the history at an edited prompt and appends anew; the bank keeps both."""
    bank = tmp_path / "bank.sqlite"
    document = orjson.loads((HAND / "sessions" / f"{A}.json").read_bytes())
    path = _install(tmp_path, A, orjson.dumps(document))
    _scan_home(tmp_path, bank)
    before = events_of(bank, A)
    document["history"] = document["history"][:7]  # rewound to history[7], the prompt being edited
    path.write_bytes(_append_turn(document, "Just run pytest.", "3 passed."))
    assert _scan_home(tmp_path, bank).events_added == 2
    after = events_of(bank, A)
    assert after[: len(before)] == before and [e["text"] for e in after[len(before):]] == [
        "Just run pytest.", "3 passed."]


# -- drift and roots -------------------------------------------------------------------------
def test_unknown_shapes_are_counted_as_drift(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    document = {"sessionId": "d1", "title": "Untitled Session", "workspaceDirectory": CWD, "hologram": 1, "history": [
        {"message": {"role": "user", "content": [{"type": "audio", "data": "..."}, {"type": "text", "text": "hi"}]},
         "contextItems": []},
        {"message": {"role": "critic", "content": "too terse"}, "contextItems": []},
        {"message": {"role": "assistant", "content": "hello"}, "contextItems": [], "sparkles": True},
    ]}
    _install(tmp_path, "d1", orjson.dumps(document, option=orjson.OPT_INDENT_2))
    report = _scan_home(tmp_path, bank)
    assert report.problems == 4
    assert _problems(bank) == [  # each at the line its history item starts on
        (1, "unknown_type", "session key='hologram'"),
        (7, "unknown_type", "content part type='audio'"),
        (23, "unknown_type", "role='critic'"),
        (30, "unknown_type", "history item key='sparkles'"),
    ]
    assert [(e["role"], e["text"]) for e in events_of(bank)] == [("user", "[audio]\nhi"), ("assistant", "hello")]


def test_an_odd_item_costs_only_that_item(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    document = {"sessionId": "d2", "title": "Untitled Session", "workspaceDirectory": CWD, "history": [
        {"message": {"role": "user", "content": "hi"}, "contextItems": []},
        {"message": {"role": "assistant", "content": "x", "toolCalls": [{"id": "c1", "function": "Read"}]},
         "contextItems": []},
        {"message": {"role": "assistant", "content": "hello"}, "contextItems": []},
    ]}
    _install(tmp_path, "d2", orjson.dumps(document, option=orjson.OPT_INDENT_2))
    assert _scan_home(tmp_path, bank).problems == 1
    assert [p[1] for p in _problems(bank)] == ["malformed"]
    assert [e["text"] for e in events_of(bank)] == ["hi", "hello"]


def test_a_document_without_history_is_drift_not_a_session(tmp_path: Path) -> None:
    batch: Batch = continue_cli.parse(SourceRef(PurePath("/c/sessions/x.json"), PurePath("/c")),
                                      [Record(1, b'{"timestamp": "2025-08-01", "chatHistory": []}')], {})
    assert not batch.sessions and [p.kind for p in batch.problems] == ["unknown_type"]


def test_roots_follow_continue_global_dir(tmp_path: Path) -> None:
    assert continue_cli.roots({}, tmp_path) == [tmp_path / ".continue"]
    assert continue_cli.roots({"CONTINUE_GLOBAL_DIR": "/srv/continue"}, tmp_path) == [
        Path("/srv/continue"), tmp_path / ".continue"]
    assert continue_cli.roots({"CONTINUE_GLOBAL_DIR": "cfg/continue"}, tmp_path)[0] == tmp_path / "cfg/continue"
    moved = tmp_path / "elsewhere"
    shutil.copytree(HAND, moved)
    bank, report = _scan(tmp_path, moved)
    assert len(report.sessions) == 5 and all(s["cwd"] for s in sessions_of(bank))


# -- real captures ---------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", REAL_SCENARIOS)
def test_real_capture_reads_cleanly(tmp_path: Path, scenario: str) -> None:
    bank, report = _scan(tmp_path, REAL / scenario)
    assert report.problems == 0 and _problems(bank) == []
    sessions = sessions_of(bank)
    assert sessions and all(s["bank_id"] == "coding-agent::demo-repo" and s["started_at"] for s in sessions)
    for s in sessions:
        events = events_of(bank, s["native_id"])
        assert events and events[0]["role"] == "user"
        calls = {e["tool_call_id"] for e in events if e["kind"] == "tool_call"}
        assert {e["tool_call_id"] for e in events if e["kind"] == "tool_result"} <= calls


@pytest.mark.skipif("two_turns" not in REAL_SCENARIOS, reason="no real two_turns capture")
def test_real_two_turns_in_order(tmp_path: Path) -> None:
    bank, _ = _scan(tmp_path, REAL / "two_turns")
    assert [(e["role"], e["kind"], e["text"][:16], e["tool_name"]) for e in events_of(bank)] == [
        ("user", "text", "say hi", None),
        ("assistant", "text", "Hi! I am the fak", None),
        ("user", "text", "READ_FILE /tmp/c", None),
        ("assistant", "tool_call", "Read: /tmp/cap-c", "Read"),
        ("tool", "tool_result", "Content of /tmp/", "Read"),
        ("assistant", "text", "The file says: C", None),
    ]
    (session,) = sessions_of(bank)
    assert (session["model"], session["title"], session["meta"]["last_turn"]) == ("fake-model", "say hi", "complete")


@pytest.mark.skipif("tool_error" not in REAL_SCENARIOS, reason="no real tool_error capture")
def test_real_tool_error_is_an_error(tmp_path: Path) -> None:
    bank, _ = _scan(tmp_path, REAL / "tool_error")
    results = [e for e in events_of(bank) if e["kind"] == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] and results[0]["text"].startswith("Error executing tool")


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/n/sessions/s1.json"), PurePath("/n"))
    raw = b'{"sessionId":"s1","history":[{"message":{"role":"user","content":5}}]}'
    batch = continue_cli.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "history[0] of unexpected shape: a number where an object or an array was expected")]
