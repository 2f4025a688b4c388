"""Gemini CLI: what the fixtures must read as (fixtures/gemini_cli/hand/README.md, real/CAPTURE.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture.sources import discover, existing_roots
from harvester.parsers import gemini_cli
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "gemini_cli" / "hand"
REAL = FIXTURES / "gemini_cli" / "real"
NAME = gemini_cli.NAME
A = "3f9c2a71-6d0e-4b8a-9f21-5c7e0d4a8b13"  # current JSONL session: every record type
B = "8d4e6b20-1f3a-4c59-b7e2-0a9d6c3f5e71"  # its subagent (chats/<A>/<B>.jsonl)
C = "c71e5d94-2b8f-4e06-a3d1-7f5b9e2c0a48"  # rewind, compression checkpoint, resume
D = "5b0a9e3c-8e41-4d2f-9c60-1a7b3e5d9f02"  # 0.38 whole-file JSON, slug folder demo-repo-1
E = "e2f70c18-5a9d-4b3e-8f16-2c4a7d9e0b35"  # 0.38 subagent JSON of D
F = "a1b2c3d4-0e9f-4a8b-b7c6-d5e4f3a2b1c0"  # 2025 JSON in a sha256 folder, path in projects.json
G = "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"  # 2025 JSON in a sha256 folder, path only in tool args
H = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"  # 2025 JSON in a sha256 folder nothing names
J = "47c2e9b1-3d6a-4f80-b5e2-9c1d7a3f6e04"  # 0.38 JSON resumed by 0.40: .json beside its .jsonl
REPO = "/home/dev/src/demo-repo"
C_SESSION = HAND / "tmp" / "demo-repo" / "chats" / f"session-2026-09-15T08-30-{C[:8]}.jsonl"
A_SESSION = HAND / "tmp" / "demo-repo" / "chats" / f"session-2026-09-14T10-02-{A[:8]}.jsonl"


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[Harness]:
    harness = Harness(NAME, gemini_cli.roots, gemini_cli.SOURCES, gemini_cli.parse, "Gemini CLI",
                      gemini_cli.PROCESSES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(parsers.HARNESSES, NAME, harness)
        yield harness


def _home(tmp: Path, tree: Path) -> Path:
    """A home whose ~/.gemini is ``tree`` (the fixtures are laid out like ~/.gemini itself)."""
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gemini").symlink_to(tree, target_is_directory=True)
    return home


def _scan(tmp: Path, tree: Path) -> tuple[Path, int]:
    home, bank = _home(tmp, tree), tmp / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    return bank, report.harnesses[NAME].problems


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bank, problems = _scan(tmp_path_factory.mktemp("gemini"), HAND)
    assert problems == 0
    return bank




def test_every_layout_is_read_and_nothing_else(hand_bank: Path, registered: Harness) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, D, E, F, G, H, J}
    found = [str(f.path.relative_to(HAND)) for f in discover(registered, [HAND])]
    assert not any(p.startswith("antigravity") or p.endswith("logs.json") for p in found)
    # A .json session resumed by 0.40+ goes on as .jsonl beside it: only the .jsonl is read.
    assert [p for p in found if J[:8] in p] == [f"tmp/demo-repo/chats/session-2026-04-10T09-00-{J[:8]}.jsonl"]
    assert all(s["agent_version"] is None for s in sessions_of(hand_bank))  # no file records it


def test_current_session(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    assert shapes(events) == [
        ("system", "text"),  # <session_context>, seen only in the start-up checkpoint
        ("user", "text"),
        ("assistant", "thinking"), ("assistant", "tool_call"), ("tool", "tool_result"),  # grep (re-appended)
        ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),  # read_file
        ("assistant", "tool_call"), ("tool", "tool_result"),  # replace: error
        ("assistant", "tool_call"), ("tool", "tool_result"),  # run_shell_command: cancelled
        ("system", "meta"),  # info: Request cancelled.
        ("system", "text"), ("user", "text"),  # @docs/csv.md: the expanded prompt, then what was typed
        ("assistant", "thinking"), ("assistant", "text"),
        ("system", "meta"), ("system", "meta"),  # warning, error
        ("system", "text"), ("user", "text"),  # <hook_context> part, the typed part
        ("assistant", "tool_call"), ("tool", "tool_result"),  # codebase_investigator (subagent B)
        ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),  # write_file
        ("assistant", "text"),
        ("user", "text"),  # a prompt with a pasted image, not answered yet
    ]
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "Find where the CSV parser drops empty fields and fix it",
        "Compare with @docs/csv.md",
        "Fix it and add a test. Check how tests are organised first.",
        "What's in this screenshot? [image/png]",
    ]
    injected = [e["text"][:18] for e in events if (e["meta"] or {}).get("injected")]
    assert injected == ["<session_context>\n", "Compare with @docs", "<hook_context>Bran"]
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [c["tool_name"] for c in calls] == [
        "grep_search", "read_file", "replace", "run_shell_command", "codebase_investigator", "write_file"]
    # One result per call (the function-response copies recorded as user messages add none),
    # each right after its call.
    assert [r["tool_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert all(events[events.index(r) - 1]["tool_call_id"] == r["tool_call_id"] for r in results)
    assert [r["is_error"] for r in results] == [False, False, True, True, False, False]
    # g1 was written twice (scheduled, then with its result and tokens): one call, the last version.
    assert calls[0]["meta"] == {"status": "success"} and calls[0]["usage"]["in"] == 10412 - 8192
    assert calls[4]["meta"]["agentId"] == B
    assert sum(e["usage"]["out"] for e in events if e["usage"]) == 38 + 41 + 77 + 52 + 24 + 35 + 96 + 30
    session = session_of(hand_bank, A)
    assert (session["cwd"], session["bank_id"]) == (REPO, "coding-agent::demo-repo")
    assert (session["title"], session["title_source"]) == ("Fix CSV parser dropping empty fields", "ai")
    assert session["model"] == "gemini-3-flash-preview"  # the latest message's
    assert session["meta"]["last_turn"] == "open"
    assert session["meta"]["directories"] == [REPO, "/home/dev/src/shared-lib"]


def test_subagent_is_linked_and_its_task_is_not_the_users(hand_bank: Path) -> None:
    session = session_of(hand_bank, B)
    assert (session["parent_native_id"], session["parent_kind"], session["cwd"]) == (A, "subagent", REPO)
    assert session["title"].startswith("Tests live in tests/") and session["title_source"] == "summary"
    events = events_of(hand_bank, B)
    assert shapes(events) == [("system", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
                              ("assistant", "text")]
    assert events[0]["meta"] == {"injected": True, "from_agent": "parent"}


def test_rewind_marks_and_checkpoints_add_only_what_is_new(hand_bank: Path) -> None:
    events = events_of(hand_bank, C)
    texts = [(e["role"], e["kind"], e["text"][:24], bool((e["meta"] or {}).get("rewound"))) for e in events]
    assert texts == [
        ("system", "text", "<session_context>\nThis i", False),
        ("user", "text", "Rename parse_row to pars", False),
        ("assistant", "text", "Done: 4 call sites updat", False),
        ("user", "text", "Also update the docs", True),  # $rewindTo this message: marked, kept
        ("assistant", "tool_call", "write_file: /home/dev/sr", True),
        ("tool", "tool_result", "Successfully overwrote f", True),
        ("system", "meta", "rewound: 2 message(s) le", False),
        ("user", "text", "Only update the README, ", False),
        ("assistant", "text", "README updated; docs/ le", False),
        ("system", "compaction", "<state_snapshot>\n    <ov", False),  # /compress summary
        ("system", "text", "Got it. Thanks for the a", False),  # Gemini's own acknowledgement
        ("user", "text", "Now bump the version to ", False),
        ("assistant", "text", "Version bumped to 2.0 in", False),
        ("user", "text", "Tag the release and desc", False),  # after the resume: its checkpoints add nothing
        ("assistant", "tool_call", "read_file: /home/dev/src", False),  # an image: a binary result
        ("tool", "tool_result", "Binary content provided ", False),
        ("system", "text", "Binary content received.", False),  # Gemini's acknowledgement, as a thought
        ("system", "meta", "[image/png]", False),  # the image, recorded as an info message
        ("assistant", "text", "Tagged v2.0. docs/logo.p", False),
    ]
    assert events[6]["meta"]["rewind_to"] == events[3]["uid"] and events[6]["meta"]["rewound_count"] == 2
    assert [e["meta"] for e in events if e["role"] == "system" and e["kind"] == "text"][1:] == [
        {"synthetic": True}, {"synthetic": True}]
    session = session_of(hand_bank, C)
    assert session["meta"]["resumes"] == 1 and session["meta"]["last_turn"] == "complete"
    assert session["started_at"] == "2026-09-15T08:30:00.099Z"  # the first header's, not the resume's


def _copy_lines(src: Path, dst: Path, lines: list[bytes]) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(b"".join(line + b"\n" for line in lines))


def _tree_with(tmp: Path, session: Path, upto: int) -> tuple[Path, Path, list[bytes]]:
    """A copy of the hand tree's project folder holding the first ``upto`` lines of ``session``."""
    tree = tmp / "tree"
    (tree / "tmp" / "demo-repo").mkdir(parents=True)
    shutil.copy(HAND / "tmp" / "demo-repo" / ".project_root", tree / "tmp" / "demo-repo" / ".project_root")
    target = tree / session.relative_to(HAND)
    lines = session.read_bytes().splitlines()
    _copy_lines(session, target, lines[:upto])
    return tree, target, lines


def test_reappended_message_ends_as_one_event_across_reads(tmp_path: Path, hand_bank: Path) -> None:
    tree, target, lines = _tree_with(tmp_path, A_SESSION, 5)  # up to g1's first version: scheduled
    bank, problems = _scan(tmp_path, tree)
    first = [e for e in events_of(bank, A) if e["kind"] == "tool_call"]
    assert problems == 0 and first[0]["meta"] == {"status": "executing"} and first[0]["usage"] is None
    _copy_lines(A_SESSION, target, lines)
    scan(tmp_path / "home", bank, (NAME,), env={"HOME": str(tmp_path / "home")})
    events = events_of(bank, A)
    grep = [e for e in events if e["tool_name"] == "grep_search"]
    assert [(e["kind"], e["seq"]) for e in grep] == [("tool_call", first[0]["seq"]), ("tool_result", 5)]
    assert grep[0]["meta"] == {"status": "success"} and grep[0]["usage"]["out"] == 38
    assert [e["uid"] for e in events] == [e["uid"] for e in events_of(hand_bank, A)]


def test_rewind_read_after_its_messages_is_recorded_not_lost(tmp_path: Path) -> None:
    tree, target, lines = _tree_with(tmp_path, C_SESSION, 12)  # everything before the $rewindTo line
    bank, _ = _scan(tmp_path, tree)
    _copy_lines(C_SESSION, target, lines)
    scan(tmp_path / "home", bank, (NAME,), env={"HOME": str(tmp_path / "home")})
    events = events_of(bank, C)
    rewind = next(e for e in events if (e["meta"] or {}).get("rewind_to"))
    # The bank holds the rewound messages from the earlier read: still there, named by the rewind
    # record, and marked by the bank from the ids alone (a Mark needs no content).
    assert rewind["meta"]["rewound_ids"] == [events[3]["uid"], "44d6f8b0-2c4e-4a6d-bf8b-0d2c4e6a8d04"]
    assert [e["text"][:20] for e in events[3:6]] == ["Also update the docs", "write_file: /home/de",
                                                     "Successfully overwro"]
    assert [bool((e["meta"] or {}).get("rewound")) for e in events[3:6]] == [True, True, True]
    assert not (events[2]["meta"] or {}).get("rewound")
    assert len(events) == 19


def test_legacy_documents_and_project_folders(hand_bank: Path) -> None:
    cwd = {s["native_id"]: s["cwd"] for s in sessions_of(hand_bank)}
    assert cwd[D] == cwd[E] == "/home/dev/work/demo-repo"  # demo-repo-1/.project_root
    assert cwd[F] == "/home/dev/src/legacy-app"  # sha256 folder, mapped by projects.json
    assert cwd[G] == "/home/dev/src/old-tool"  # sha256 folder: a read_file path hashes to it
    assert cwd[H] is None and session_of(hand_bank, H)["bank_id"] == "coding-agent::unknown"
    assert (session_of(hand_bank, E)["parent_native_id"], session_of(hand_bank, E)["parent_kind"]) == (D, "subagent")
    assert shapes(events_of(hand_bank, D)) == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text"), ("system", "text"), ("user", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("system", "meta")]
    assert shapes(events_of(hand_bank, G)) == [("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
                                               ("assistant", "text")]
    j = events_of(hand_bank, J)
    assert [e["text"] for e in j if e["role"] == "user"] == [
        "Summarise CHANGELOG.md", "And the release before that?", "Show me the whole changelog"]
    # 0.39-0.43 masking re-appended the read_file message with its output cut to a pointer: the
    # whole output recorded first stays, and the re-append moves neither the turn nor the time.
    result = next(e for e in j if e["kind"] == "tool_result")
    assert result["text"].startswith("# Changelog") and "tool_output_masked" not in result["text"]
    session = session_of(hand_bank, J)
    assert session["meta"]["last_turn"] == "complete" and session["updated_at"] == "2026-04-29T14:21:05.000Z"
    assert session_of(hand_bank, F)["title"] == "Why does `make build` fail?"


def test_unknown_records_are_drift_and_the_rest_imports(tmp_path: Path) -> None:
    tree, target, lines = _tree_with(tmp_path, C_SESSION, 7)
    extra = [b'{"$truncate":"x"}', b'{"id":"m-9","timestamp":"2026-09-15T08:30:30.000Z","type":"tool_group",'
             b'"content":"?"}', b'{"$set":{"pinned":true}}', b'{"id":"m-10","type":"user","content":"still here"}']
    _copy_lines(C_SESSION, target, lines[:7] + extra)
    bank, problems = _scan(tmp_path, tree)
    assert problems == 3
    with open_bank(bank) as b:
        drift = b.harness_stats()[NAME]["drift"]
    assert set(drift) == {"record with keys ['$truncate']", "message type='tool_group'", "$set.pinned"}
    assert [e["text"] for e in events_of(bank, C) if e["role"] == "user"][-1] == "still here"


def test_gemini_cli_home_moves_the_root(tmp_path: Path, registered: Harness) -> None:
    assert gemini_cli.roots({}, tmp_path) == [tmp_path / ".gemini"]
    assert gemini_cli.roots({"GEMINI_CLI_HOME": "/srv/g"}, tmp_path) == [Path("/srv/g/.gemini")]
    moved = _home(tmp_path / "moved", HAND)
    (tmp_path / "home").mkdir()
    env = {"HOME": str(tmp_path / "home"), "GEMINI_CLI_HOME": str(moved)}
    assert existing_roots(registered, env, tmp_path / "home") == [moved / ".gemini"]
    report = scan(tmp_path / "home", tmp_path / "bank.sqlite", (NAME,), env=env)
    assert report.harnesses[NAME].problems == 0 and len(sessions_of(tmp_path / "bank.sqlite")) == 9


# -- real output of Gemini CLI 0.61.0 (fixtures/gemini_cli/real/CAPTURE.md) ---------------------------
SCENARIOS = sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_real_capture_reads_cleanly(tmp_path: Path, scenario: str) -> None:
    bank, problems = _scan(tmp_path, REAL / scenario)
    assert problems == 0
    sessions = sessions_of(bank)
    assert sessions and all(s["bank_id"] == "coding-agent::demo-repo" and s["cwd"].endswith("/demo-repo")
                            for s in sessions)
    for s in sessions:
        events = events_of(bank, s["native_id"])
        assert events[0]["text"].startswith("<session_context>") and events[0]["role"] == "system"
        calls = {e["tool_call_id"] for e in events if e["kind"] == "tool_call"}
        assert {e["tool_call_id"] for e in events if e["kind"] == "tool_result"} <= calls


def _real(tmp_path: Path, scenario: str) -> list[tuple]:
    if not (REAL / scenario).is_dir():
        pytest.skip(f"no real capture {scenario}")
    bank, _ = _scan(tmp_path, REAL / scenario)
    return [(e["role"], e["kind"], e["text"][:16], e["is_error"]) for e in events_of(bank)]


def test_real_two_turns_resumed(tmp_path: Path) -> None:
    assert _real(tmp_path, "two_turns")[1:] == [
        ("user", "text", "say hi", False),
        ("assistant", "text", "Hi! I am the fak", False),
        ("user", "text", "READ_FILE /tmp/c", False),
        ("assistant", "tool_call", "read_file: /tmp/", False),
        ("tool", "tool_result", "These are the de", False),
        ("assistant", "text", "The file says: T", False),
    ]


def test_real_thinking_and_tool_error(tmp_path: Path) -> None:
    assert [k for _r, k, _t, _e in _real(tmp_path / "t", "thinking")][1:] == ["text", "thinking", "text"]
    assert _real(tmp_path / "e", "tool_error")[3:5] == [
        ("tool", "tool_result", "File not found: ", True), ("assistant", "text", "The tool reporte", False)]


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/g/tmp/p/chats/session-2026-09-14T10-02-3f9c2a71.jsonl"), PurePath("/g"))
    raw = b'{"id":"m1","type":"gemini","thoughts":5}'
    batch = gemini_cli.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "record of unexpected shape: a number where an object or an array was expected")]


S = "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"
S_HEADER = {"sessionId": S, "projectHash": "0" * 64, "startTime": "2026-09-20T10:00:00.000Z",
            "lastUpdated": "2026-09-20T10:00:00.000Z", "kind": "main"}


def _read(records: list[dict], legacy: bool = False) -> tuple[list, list]:
    name = f"session-2026-09-20T10-00-{S[:8]}.json" + ("" if legacy else "l")
    ref = SourceRef(PurePath("/h/.gemini/tmp/p/chats") / name, PurePath("/h/.gemini"), "legacy" if legacy else "main")
    batch = gemini_cli.parse(ref, [Record(n + 1, orjson.dumps(r)) for n, r in enumerate(records)], {})
    return batch.events, [(p.kind, p.line, p.detail) for p in batch.problems]


def test_tool_calls_without_id_import_under_a_stable_uid() -> None:
    """A recorded call without ``id`` (Gemini always writes one): its place in the message names it, so
    the re-appended message (now with the result) revises the same events instead of adding others."""
    call = {"name": "read_file", "args": {"absolute_path": "/a.txt"}, "status": "executing",
            "timestamp": "2026-09-20T10:00:02.000Z"}
    message = {"id": "g1", "timestamp": "2026-09-20T10:00:01.000Z", "type": "gemini", "content": "",
               "model": "gemini-3-flash-preview", "toolCalls": [call]}
    done = {**call, "status": "success",
            "result": [{"functionResponse": {"name": "read_file", "response": {"output": "hello"}}}]}
    events, problems = _read([S_HEADER, message, {**message, "toolCalls": [done]}])
    assert problems == []
    assert [(e.uid, e.kind, e.tool_call_id) for e in events] == [
        ("g1:call:#0", "tool_call", None), ("g1:call:#0", "tool_call", None), ("g1:result:#0", "tool_result", None)]
    assert events[-1].text == "hello"


def test_a_function_call_part_without_id_is_a_call_unless_recorded() -> None:
    """History copies keep the model's parts; the API's functionCall needs no id. A checkpoint-only
    message's id-less call is kept; one that copies a recorded call (same name) is not kept twice."""
    part = {"functionCall": {"name": "glob", "args": {"pattern": "*.py"}}}
    copy = {"id": "g2", "type": "gemini", "content": [part]}
    recorded = {"id": "g3", "type": "gemini", "content": [part],
                "toolCalls": [{"id": "glob__1", "name": "glob", "args": {"pattern": "*.py"}, "status": "success"}]}
    events, problems = _read([S_HEADER, {"$set": {"messages": [copy]}}, recorded])
    assert problems == []
    assert [(e.uid, e.kind, e.text) for e in events if e.kind == "tool_call"] == [
        ("g2:call:#p0", "tool_call", "glob: *.py"), ("g3:call:glob__1", "tool_call", "glob: *.py")]


def test_legacy_messages_without_id_import_under_a_stable_uid() -> None:
    """A whole-file session (up to 0.38) is rewritten as it grows: an id-less message keeps one uid
    (its place and its time) across rewrites; the ones Gemini names by id are unchanged."""
    user = {"id": "u1", "timestamp": "2026-09-20T10:00:01.000Z", "type": "user", "content": "hi"}
    reply = {"timestamp": "2026-09-20T10:00:02.000Z", "type": "gemini", "content": "hello"}
    first, problems = _read([{**S_HEADER, "messages": [user, reply]}], legacy=True)
    grown = {**reply, "tokens": {"input": 10, "output": 2, "cached": 0, "thoughts": 0, "total": 12}}
    later, _ = _read([{**S_HEADER, "messages": [user, grown, {**user, "id": "u2", "content": "more"}]}], legacy=True)
    assert problems == [] and [e.kind for e in first] == ["text", "text"]
    assert [e.uid for e in later][:2] == [e.uid for e in first] and first[1].uid.startswith("h:")
    assert first[1].role == "assistant" and later[1].usage is not None


def test_messages_without_id_where_gemini_keeps_none_are_malformed() -> None:
    """Gemini's loader reads no message without ``id`` from a line or a checkpoint (isMessageRecord):
    such a line cannot be told from its own re-appends, nor a checkpoint entry from a recorded one."""
    lines = [S_HEADER, {"$set": {"messages": [{"type": "user", "content": "ctx"}, "junk"]}},
             {"timestamp": "2026-09-20T10:00:01.000Z", "type": "user", "content": "hi"}]
    events, problems = _read(lines)
    assert events == []
    assert problems == [("malformed", 2, "$set.messages: 2 message(s) without an id"),
                        ("malformed", 3, "user message without an id")]


def test_a_lone_surrogate_in_a_whole_file_session_costs_one_character_not_the_session(tmp_path: Path) -> None:
    """Gemini CLI 0.38 kept a session as one JSON document, written by JSON.stringify: a lone surrogate in it
    (half an emoji, cut) is an escape orjson refuses, and the whole session, every event, was lost as one
    malformed record. It is read, the half shown as U+FFFD."""
    tree = tmp_path / "gemini"
    shutil.copytree(HAND, tree)
    path = tree / "tmp" / "demo-repo-1" / "chats" / f"session-2026-04-02T16-45-{D[:8]}.json"
    text = path.read_text()
    path.write_text(text.replace('"What is in this checkout?"', '"What is in this checkout? \\ud83d"', 1))
    bank, problems = _scan(tmp_path, tree)
    assert problems == 0
    assert events_of(bank, D)[0]["text"] == "What is in this checkout? \ufffd"
