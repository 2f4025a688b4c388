"""VS Code Copilot Chat: what the hand-written store must read as (fixtures/vscode_copilot/hand/README.md),
how the operation log is replayed as it grows, and that Cursor's harness and this one never cross."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.bank import open_bank
from harvester.parsers import cursor, vscode_copilot
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "vscode_copilot" / "hand"
NAME = vscode_copilot.NAME
REPO = "/home/dev/src/demo-repo"
W1 = "3b1f2c9d8e7a6b5c4d3e2f1a0b9c8d7e"
S1 = "0c4f6a1e-2b3d-4e5f-8a9b-1c2d3e4f5a61"  # the log: two turns, tools, summary
S2 = "1d5a7b2f-3c4e-4f60-9b0c-2d3e4f5a6b72"  # flat v3: cancelled, warning
S3 = "2e6b8c3a-4d5f-4071-8c1d-3e4f5a6b7c83"  # .json shadowed by .jsonl
S4 = "3f7c9d4b-5e6a-4182-9d2e-4f5a6b7c8d94"  # empty window: subagent, awaiting approval
S5 = "4a8d0e5c-6f7b-4293-8e3f-5a6b7c8d9ea5"  # v2, multi-root, failed


def _home(tmp: Path, tree: Path = HAND) -> Path:
    home = tmp / "home"
    shutil.copytree(tree, home / ".config" / "Code" / "User")
    return home


def _scan(home: Path, bank: Path) -> int:
    return scan(home, bank, (NAME,), env={"HOME": str(home)}).harnesses[NAME].problems


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("vscode")
    bank = tmp / "bank.sqlite"
    assert _scan(_home(tmp), bank) == 0
    return bank


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:28]) for e in events_of(bank, sid)]


def test_sessions(hand_bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {S1, S2, S3, S4, S5}
    one = session_of(hand_bank, S1)
    assert (one["cwd"], one["title"], one["title_source"], one["model"]) == (
        REPO, "Fix parse_row on empty lines", "ai", "claude-sonnet-4.5")  # customTitle, set after the first turn
    assert (one["started_at"], one["meta"]["last_turn"], one["branch"], one["commit_sha"], one["origin_url"]) == (
        "2026-11-18T11:06:40.000Z", "complete", "fix-empty-lines", "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "https://github.com/dev/demo-repo.git")
    assert one["bank_id"] == "coding-agent::demo-repo"
    two = session_of(hand_bank, S2)
    assert (two["title"], two["title_source"], two["meta"]["last_turn"]) == (
        "@workspace where is the CSV reader?", "first-prompt", "aborted")  # the first prompt, not the last
    assert session_of(hand_bank, S3)["title"] == "Explain the Makefile"
    four = session_of(hand_bank, S4)
    assert (four["cwd"], four["meta"]["last_turn"]) == (None, "open")  # no folder; waiting for the user
    five = session_of(hand_bank, S5)
    assert (five["cwd"], five["title"], five["meta"]["last_turn"], five["meta"]["workspace"]) == (
        None, "Release checklist", "failed", "file:///home/dev/src/all.code-workspace")


def test_log_replayed_in_order(hand_bank: Path) -> None:
    assert shape(hand_bank, S1) == [
        ("user", "text", "Why does parse_row fail on e"),
        ("assistant", "thinking", "The split keeps a trailing e"),
        ("assistant", "text", "Let me look at the parser."),  # the part as it ended, cut and pushed again
        ("assistant", "tool_call", "copilot_readFile: /home/dev/"),
        ("tool", "tool_result", "Read [](file:///home/dev/src"),
        ("assistant", "tool_call", "run_in_terminal: pytest -q t"),
        ("tool", "tool_result", "F\n1 failed in 0.04s"),
        ("assistant", "text", "The test fails: `/home/dev/s"),  # Markdown and an inline reference, one text
        ("user", "text", "Apply the guard and add a te"),
        ("system", "compaction", "The user asked why parse_row"),
        ("assistant", "tool_call", "copilot_replaceString: /home"),
        ("tool", "tool_result", "The file /home/dev/src/demo-"),
        ("assistant", "text", "Added the guard and `test_em"),
    ]  # the progress, code block, undo stop and edit group parts: nothing
    events = events_of(hand_bank, S1)
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [c["tool_call_id"] for c in calls] == [r["tool_call_id"] for r in results] == [
        "toolu_01ReadParser", "toolu_01RunTests", "toolu_01Edit"]
    assert [r["is_error"] for r in results] == [False, True, False]  # the terminal's exit code 1
    # the model's own arguments (the Copilot extension's toolCallRounds), not the UI's message
    assert calls[0]["tool_input"] == {"filePath": f"{REPO}/src/parser.py", "startLine": 1, "endLine": 80}
    assert calls[1]["tool_input"]["command"] == "pytest -q tests/test_parser.py"
    assert events[0]["meta"] == {"agent": "github.copilot.editsAgent", "mode": "agent"}
    assert events[0]["ts"] == "2026-11-18T11:06:45.000Z"
    texts = [e for e in events if e["kind"] == "text" and e["role"] == "assistant"]
    assert [t["usage"] for t in texts] == [None, {"in": 18234, "out": 412}, {"in": 21002, "out": 233}]


def test_flat_documents(hand_bank: Path) -> None:
    assert shape(hand_bank, S2) == [
        ("user", "text", "@workspace where is the CSV "),
        ("assistant", "text", "The CSV reader is `read_rows"),  # markdownContent + inlineReference + Markdown
        ("user", "text", "Rewrite it with the csv modu"),
        ("assistant", "text", "Sure, here is"),
        ("system", "text", "You have exceeded your premi"),
    ]
    assert events_of(hand_bank, S2)[-1]["meta"] == {"warning": True}
    assert shape(hand_bank, S5)[-1] == ("system", "text", "Sorry, your request failed. ")


def test_older_copy_beside_the_log_is_not_read(hand_bank: Path) -> None:
    assert not any("OLD COPY" in e["text"] for e in events_of(hand_bank))
    with open_bank(hand_bank) as bank:
        paths = [c.path for c in bank.cursors()]
    assert sum(S3 in p for p in paths) == 1 and any(p.endswith(f"{S3}.jsonl") for p in paths)


def test_subagent_calls_and_a_call_awaiting_approval(hand_bank: Path) -> None:
    events = events_of(hand_bank, S4)
    assert [(e["kind"], e["tool_call_id"], (e["meta"] or {}).get("subagent")) for e in events if e["tool_call_id"]] == [
        ("tool_call", "call_sub1", None), ("tool_result", "call_sub1", None),
        ("tool_call", "call_fetch1", "subagent_5e1f"), ("tool_result", "call_fetch1", "subagent_5e1f"),
        ("tool_call", "call_term2", None),  # not complete: no result yet
    ]
    sub = events[1]
    assert sub["tool_input"] == {"agentName": "researcher", "description": "Research CSV header parsing",
                                 "prompt": "Find how csv.DictReader handles duplicate headers"}
    assert events[2]["text"] == "DictReader keeps the last value for duplicate keys."  # the subagent's result
    assert events[3]["tool_input"] == {"urls": ["https://docs.python.org/3/library/csv.html"]}


def _log_path(home: Path) -> Path:
    return home / ".config/Code/User/workspaceStorage" / W1 / "chatSessions" / f"{S1}.jsonl"


def _append(path: Path, *entries: dict) -> None:
    with path.open("ab") as f:
        f.write(b"".join(orjson.dumps(e) + b"\n" for e in entries))


def test_a_growing_log_revises_and_adds(tmp_path: Path) -> None:
    home, bank = _home(tmp_path), tmp_path / "bank.sqlite"
    assert _scan(home, bank) == 0
    before = len(events_of(bank, S1))
    log = _log_path(home)
    # a third turn streams in: the request, a part that grows (cut and pushed again), then the state
    _append(log, {"kind": 2, "k": ["requests"], "v": [{"requestId": "request_6b1e2d3c-0003", "timestamp": 1795000200000,
                                                       "message": {"text": "Run the tests again"}, "response": [],
                                                       "modelState": {"value": 0}}]},
            {"kind": 2, "k": ["requests", 2, "response"], "v": [{"value": "Running"}]})
    assert _scan(home, bank) == 0
    assert session_of(bank, S1)["meta"]["last_turn"] == "open"
    _append(log, {"kind": 2, "k": ["requests", 2, "response"], "i": 0, "v": [{"value": "Running them now: all pass."}]},
            {"kind": 1, "k": ["requests", 2, "modelState"], "v": {"value": 1, "completedAt": 1795000210000}})
    assert _scan(home, bank) == 0
    events = events_of(bank, S1)
    assert len(events) == before + 2  # the growing text was revised in place, not added twice
    assert [e["text"] for e in events[-2:]] == ["Run the tests again", "Running them now: all pass."]
    assert session_of(bank, S1)["meta"]["last_turn"] == "complete"
    # VS Code compacts a long log: the file is written anew as one initial entry, nothing changes
    with open_bank(bank) as b:
        held = len(b.events(session_of(bank, S1)["id"]))
    state = vscode_copilot._replay(vscode_copilot._Reader(_ref(log), vscode_copilot.Batch()), log.read_bytes())
    log.write_bytes(orjson.dumps({"kind": 0, "v": state}) + b"\n")
    assert _scan(home, bank) == 0
    assert len(events_of(bank, S1)) == held


def _ref(path: Path, variant: str = "log") -> SourceRef:
    return SourceRef(PurePath(path), PurePath(path.parent), variant)


def _parse(raw: bytes, variant: str = "log") -> vscode_copilot.Batch:
    return vscode_copilot.parse(_ref(Path(f"/x/chatSessions/{S1}.jsonl"), variant), [Record(1, raw)], {})


def test_torn_last_line_waits_and_bad_lines_are_counted() -> None:
    initial = orjson.dumps({"kind": 0, "v": {"sessionId": S1, "requests": [
        {"requestId": "r1", "message": {"text": "hi"}, "response": [{"value": "hello"}]}]}})
    batch = _parse(initial + b"\n" + b'{"kind": 2, "k": ["requests", 0, "resp')  # VS Code still writing
    assert (len(batch.events), batch.problems) == (2, [])
    batch = _parse(initial + b"\nnot json\n" + orjson.dumps({"kind": 1, "k": ["nope", 3], "v": 1}) + b"\n")
    assert [p.kind for p in batch.problems] == ["malformed", "malformed"] and len(batch.events) == 2
    batch = _parse(b'{"kind": 1, "k": ["customTitle"], "v": "x"}\n')
    assert [p.kind for p in batch.problems] == ["malformed"]  # an update with nothing to update
    batch = _parse(b'{"kind": 0, "v": {"sessionId": "x", "requ')  # cut short, nothing whole before it
    assert ([p.kind for p in batch.problems], batch.events) == (["malformed"], [])


def test_unknown_kinds_are_drift() -> None:
    document = {"sessionId": S1, "requests": [{"requestId": "r1", "message": {"text": "hi"}, "response": [
        {"kind": "hologram", "value": "?"}, {"kind": "hologram"}, {"value": "hello"}]}]}
    batch = _parse(orjson.dumps({"kind": 0, "v": document}) + b"\n" + orjson.dumps({"kind": 7, "k": []}) + b"\n")
    assert sorted(p.detail for p in batch.problems) == ["log entry kind=7", "response part kind='hologram'"]
    assert [e.text for e in batch.events] == ["hi", "hello"]  # the rest is still read
    flat = _parse(orjson.dumps(document), "flat")
    assert [p.kind for p in flat.problems] == ["unknown_type"]


def test_roots_per_os() -> None:
    home = Path("/home/u")
    linux = vscode_copilot.roots_for("linux", {}, home)
    assert linux == [home / ".config/Code/User", home / ".config/Code - Insiders/User"]
    assert vscode_copilot.roots_for("linux", {"XDG_CONFIG_HOME": "/x"}, home)[0] == Path("/x/Code/User")
    assert vscode_copilot.roots_for("darwin", {}, home)[1] == home / "Library/Application Support/Code - Insiders/User"
    assert vscode_copilot.roots_for("win32", {"APPDATA": "C:/AppData"}, home)[0] == Path("C:/AppData/Code/User")
    assert vscode_copilot.roots_for("linux", {"VSCODE_PORTABLE": "/p"}, home) == [Path("/p/user-data/User")]
    assert vscode_copilot.roots_for("linux", {"VSCODE_APPDATA": "/a"}, home)[0] == Path("/a/Code/User")


def test_cursor_and_vscode_never_read_each_others_files(tmp_path: Path) -> None:
    """Both honour VSCODE_PORTABLE and VSCODE_APPDATA (Cursor is a VS Code fork): under a shared root,
    each reads only its own kind of file."""
    portable = tmp_path / "portable"
    shutil.copytree(HAND, portable / "user-data" / "User")
    (portable / "user-data" / "User" / "globalStorage" / "state.vscdb").write_bytes(b"")
    env = {"HOME": str(tmp_path), "VSCODE_PORTABLE": str(portable)}
    assert vscode_copilot.roots_for("linux", env, tmp_path) == cursor.ide_roots_for("linux", env, tmp_path)
    report = scan(tmp_path, tmp_path / "bank.sqlite", (NAME, cursor.IDE_NAME), env=env)
    assert report.harnesses[NAME].sources == 5
    assert report.harnesses[cursor.IDE_NAME].sessions == set()
    assert not any(p.suffix in (".json", ".jsonl") for p in map(Path, _sources(tmp_path / "bank.sqlite", "cursor")))


def _sources(bank: Path, harness: str) -> list[str]:
    with open_bank(bank) as b:
        return [c.path for c in b.cursors() if c.harness == harness]
