"""Cursor CLI and IDE: what the hand-written stores must read as (fixtures/cursor/{cli,ide}/hand/README.md).

The stores are kept as SQL text; each test builds the ``.db`` files it needs in a temporary copy.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.parsers import cursor
from harvester.parsers.base import Harness
from tests.helpers import FIXTURES, event_identities, events_of, scan, session_of, sessions_of

CLI_HAND = FIXTURES / "cursor" / "cli" / "hand"
IDE_HAND = FIXTURES / "cursor" / "ide" / "hand"
CWD = "/home/dev/src/demo-repo"
BUCKET = hashlib.md5(CWD.encode()).hexdigest()
S1 = "3f2b8c1e-5d4a-4c7e-9b1f-2a6d8e0c4b71"  # CLI, finished (2026 build: workspacePath, meta.json)
S2 = "9a7c41d2-6e8f-4b3a-a1c5-0d2e4f6a8b9c"  # CLI, live (older build: cwd from the root blob)
A = "a1f0c2d4-3b5e-4f6a-8c7d-9e0f1a2b3c4d"  # IDE, two turns, tools; cwd from workspaceStorage
B = "b2e1d3c5-4a6f-4b7c-9d8e-0f1a2b3c4d5e"  # IDE 3.x, generating, a tool still loading
C = "c3d2e4f6-5b7a-4c8d-8e9f-1a2b3c4d5e6f"  # IDE legacy, conversation inline
D = "d4e3f5a7-6c8b-4d9e-9fa0-2b3c4d5e6f7a"  # IDE subagent of B; cwd from the global header list


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(parsers.HARNESSES, cursor.CLI_NAME, Harness(
        cursor.CLI_NAME, cursor.cli_roots, cursor.CLI_SOURCES, cursor.parse, "Cursor CLI",
        cursor.CLI_PROCESSES))
    monkeypatch.setitem(parsers.HARNESSES, cursor.IDE_NAME, Harness(
        cursor.IDE_NAME, cursor.ide_roots, cursor.IDE_SOURCES, cursor.parse, "Cursor", cursor.IDE_PROCESSES))


def copy_tree(source: Path, target: Path) -> Path:
    """A copy of a hand/ tree with every ``*.sql`` built into the database beside it."""
    shutil.copytree(source, target)
    for sql in target.rglob("*.sql"):
        conn = sqlite3.connect(sql.with_name("store.db" if sql.name == "store.sql" else "state.vscdb"))
        conn.executescript(sql.read_text())
        conn.commit()
        conn.close()
        sql.unlink()
    return target


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return copy_tree(CLI_HAND, tmp_path / "cursor-config")


@pytest.fixture
def appdata(tmp_path: Path) -> Path:
    copy_tree(IDE_HAND, tmp_path / "appdata" / "Cursor")
    return tmp_path / "appdata"


def read(tmp: Path, harness: str, env: dict[str, str], bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    report = scan(tmp / "home", bank, (harness,), env={"HOME": str(tmp / "home"), **env})
    return bank, report.harnesses[harness].problems


def read_cli(tmp: Path, config: Path) -> tuple[Path, int]:
    return read(tmp, cursor.CLI_NAME, {"CURSOR_CONFIG_DIR": str(config)})


def read_ide(tmp: Path, appdata: Path) -> tuple[Path, int]:
    return read(tmp, cursor.IDE_NAME, {"VSCODE_APPDATA": str(appdata)})



def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def drift(bank: Path, harness: str) -> dict:
    with open_bank(bank) as b:
        return b.harness_stats()[harness]["drift"]


# -- CLI -------------------------------------------------------------------------------------------
def store(config: Path, sid: str) -> sqlite3.Connection:
    return sqlite3.connect(config / "chats" / BUCKET / sid / "store.db")


def put(conn: sqlite3.Connection, message: dict) -> str:
    """A message blob as cursor-agent stores it: content-addressed JSON bytes."""
    data = orjson.dumps(message)
    blob = hashlib.sha256(data).hexdigest()
    conn.execute("INSERT INTO blobs VALUES (?, ?)", (blob, data))
    return blob


def test_cli_sessions(tmp_path: Path, config_dir: Path) -> None:
    bank, problems = read_cli(tmp_path, config_dir)
    assert problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {S1, S2}
    one, two = session_of(bank, S1), session_of(bank, S2)
    assert (one["cwd"], one["title"], one["title_source"], one["model"]) == (
        CWD, "Fix parse_row on empty lines", "ai", "claude-4.5-sonnet-thinking")  # meta.json's title
    assert (one["started_at"], one["meta"]["last_turn"], one["meta"]["mode"]) == (
        "2026-11-20T09:00:00.000Z", "complete", "default")
    # No workspacePath in this build's meta: the cwd is the root blob's field 9 (its md5 is the folder).
    assert (two["cwd"], two["title"], two["model"], two["meta"]["last_turn"]) == (
        CWD, "Run the test suite", "gpt-5", "open")  # a tool call without its result yet
    assert "workspace_hash_mismatch" not in two["meta"]
    assert one["bank_id"] == two["bank_id"] == "coding-agent::demo-repo"


def test_cli_events_in_order(tmp_path: Path, config_dir: Path) -> None:
    bank, _ = read_cli(tmp_path, config_dir)
    assert shape(bank, S1) == [
        ("system", "text", "<user_info>\nOS Version: "),  # what Cursor injected, never the user's words
        ("user", "text", "Why does parse_row fail "),
        ("assistant", "thinking", "The split keeps an empty"),
        ("assistant", "text", "Let me run the failing t"),
        ("assistant", "tool_call", "Shell: pytest -q tests/t"),
        ("tool", "tool_result", "Exit code: 1\n\nCommand ou"),
        ("assistant", "tool_call", "Read: src/missing.py"),
        ("tool", "tool_result", "Error: File not found: s"),
        ("assistant", "thinking", "The fix is to skip empty"),  # an inline <think> block
        ("assistant", "text", "I'll guard `parse_row` a"),
        ("user", "text", "Thanks, add a test too"),
        ("assistant", "tool_call", "StrReplace: tests/test_p"),
        ("tool", "tool_result", "The file tests/test_pars"),
        ("assistant", "text", "Added `test_empty_line_r"),
    ]  # the system prompt, the protobuf graph, a JSON file snapshot, redacted reasoning: nothing
    events = events_of(bank, S1)
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [c["tool_call_id"] for c in calls] == [r["tool_call_id"] for r in results] == [
        "toolu_01AbCdEf", "toolu_01GhIjKl", "toolu_01MnOpQr"]
    assert [r["is_error"] for r in results] == [False, True, False]
    assert calls[0]["tool_input"] == {"command": "pytest -q tests/test_parser.py",
                                      "description": "Run the parser tests"}
    assert (events[1]["ts"], events[3]["model"]) == ("2026-11-20T09:00:05.000Z", "claude-4.5-sonnet-thinking")
    # uids are the content-addressed blob ids (and the block's index): stable on any re-read
    conn = store(config_dir, S1)
    first_user = conn.execute(
        "SELECT id FROM blobs WHERE CAST(data AS TEXT) LIKE '%Why does parse_row%'").fetchone()[0]
    conn.close()
    assert (events[0]["uid"], events[1]["uid"]) == (f"{first_user}:0:context", f"{first_user}:0")
    assert shape(bank, S2) == [("system", "text", "<user_info>\nOS Version: "),
                               ("user", "text", "Run the test suite"), ("user", "text", "[image]"),
                               ("assistant", "tool_call", "Shell: pytest -q")]


def test_cli_live_session_reads_only_what_is_new(tmp_path: Path, config_dir: Path) -> None:
    bank, _ = read_cli(tmp_path, config_dir)
    before = events_of(bank, S2)
    conn = store(config_dir, S2)
    put(conn, {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_7QzV3pTq",
                                            "toolName": "Shell", "result": "Exit code: 0\n\n212 passed"}]})
    put(conn, {"id": "1", "role": "assistant", "content": [{"type": "text", "text": "All 212 tests pass."}]})
    conn.commit()
    conn.close()
    bank, problems = read_cli(tmp_path, config_dir)
    after = events_of(bank, S2)
    assert problems == 0
    assert [e["uid"] for e in after[:len(before)]] == [e["uid"] for e in before]  # nothing twice
    assert [(e["role"], e["kind"], e["text"]) for e in after[len(before):]] == [
        ("tool", "tool_result", "Exit code: 0\n\n212 passed"), ("assistant", "text", "All 212 tests pass.")]
    assert after[-2]["tool_call_id"] == before[-1]["tool_call_id"]
    assert session_of(bank, S2)["meta"]["last_turn"] == "complete"
    fresh, _ = read(tmp_path, cursor.CLI_NAME, {"CURSOR_CONFIG_DIR": str(config_dir)}, "fresh.sqlite")
    assert event_identities(fresh) == event_identities(bank)  # one read or two: the same bank


def test_cli_unknown_roles_and_blocks_are_drift(tmp_path: Path, config_dir: Path) -> None:
    conn = store(config_dir, S2)
    put(conn, {"role": "narrator", "content": "?"})
    put(conn, {"role": "assistant", "content": [{"type": "hologram"},
                                                 {"type": "text", "text": "still read"}]})
    conn.commit()
    conn.close()
    bank, problems = read_cli(tmp_path, config_dir)
    assert problems == 2
    assert drift(bank, cursor.CLI_NAME) == {"message role='narrator'": 1,
                                            "assistant block type='hologram'": 1}
    assert shape(bank, S2)[-1] == ("assistant", "text", "still read")


def test_cli_transcripts_are_not_read(tmp_path: Path, config_dir: Path) -> None:
    """``projects/*/agent-transcripts`` repeat the store's sessions: reading both would import twice."""
    transcript = config_dir / "projects" / "home-dev-src-demo-repo" / "agent-transcripts" / S1 / f"{S1}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(orjson.dumps({"role": "user", "message": {"content": [
        {"type": "text", "text": "<user_query>\nhi\n</user_query>"}]}}).decode() + "\n")
    bank, problems = read_cli(tmp_path, config_dir)
    assert problems == 0 and {s["native_id"] for s in sessions_of(bank)} == {S1, S2}
    assert len(events_of(bank, S1)) == 14


def test_cli_folder_that_is_not_md5_of_the_cwd_is_noted(tmp_path: Path, config_dir: Path) -> None:
    (config_dir / "chats" / BUCKET).rename(config_dir / "chats" / "0123456789abcdef0123456789abcdef")
    bank, _ = read_cli(tmp_path, config_dir)
    assert session_of(bank, S1)["meta"]["workspace_hash_mismatch"] is True


# -- IDE -------------------------------------------------------------------------------------------
def kv(appdata: Path) -> sqlite3.Connection:
    return sqlite3.connect(appdata / "Cursor" / "User" / "globalStorage" / "state.vscdb")


def test_ide_sessions(tmp_path: Path, appdata: Path) -> None:
    bank, problems = read_ide(tmp_path, appdata)
    assert problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {A, B, C, D}  # E was never used: no session
    expected = {  # native id: (title, title source, model, parent, last turn)
        A: ("Fix parse_row on empty lines", "ai", "gpt-5", None, "complete"),
        B: ("Run the test suite", "ai", "claude-4.5-sonnet", None, "open"),
        C: ("What does the `--strict` flag do?", "first-prompt", None, None, "complete"),
        D: ("Explore test layout", "ai", None, B, "complete"),
    }
    for sid, (title, source, model, parent, turn) in expected.items():
        s = session_of(bank, sid)
        assert (s["title"], s["title_source"], s["model"], s["parent_native_id"], s["meta"]["last_turn"]) == (
            title, source, model, parent, turn)
        # A and C from their workspace's workspace.json, B from its own workspaceIdentifier, D from the
        # global header list
        assert (s["cwd"], s["bank_id"]) == (CWD, "coding-agent::demo-repo")
    assert session_of(bank, D)["parent_kind"] == "subagent"
    assert session_of(bank, A)["started_at"] == "2026-11-20T09:00:00.000Z"


def test_ide_events_in_order(tmp_path: Path, appdata: Path) -> None:
    bank, _ = read_ide(tmp_path, appdata)
    assert shape(bank, A) == [
        ("user", "text", "Why does parse_row fail "),
        ("assistant", "thinking", "The split keeps an empty"),
        ("assistant", "text", "I'll read the parser, th"),
        ("assistant", "tool_call", "read_file: /home/dev/src"),
        ("tool", "tool_result", '{"contents":"def parse_r'),
        ("assistant", "tool_call", "run_terminal_cmd: pytest"),
        ("tool", "tool_result", '{"output":"F.\\nFAILED te'),
        ("assistant", "tool_call", "grep: parse_row"),
        ("tool", "tool_result", "cancelled"),
        ("assistant", "text", "`line.split('=')` return"),
        ("user", "text", "Now add a test for it"),
        ("assistant", "text", "Added `test_empty_line_r"),
    ]
    events = events_of(bank, A)
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [c["tool_call_id"] for c in calls] == [r["tool_call_id"] for r in results]
    assert [(r["tool_name"], r["is_error"]) for r in results] == [
        ("read_file", False), ("run_terminal_cmd", True), ("grep", True)]  # grep was cancelled
    assert calls[0]["tool_input"] == {"target_file": CWD + "/src/parser.py", "should_read_entire_file": True}
    assert events[0]["uid"] == "a1f0c2d4-0001-4000-8000-000000000001"  # the bubble id
    assert events[9]["usage"] == {"in": 23050, "out": 594}  # on the answer that ends the turn
    assert shape(bank, B) == [("user", "text", "Run the test suite and f"),
                              ("assistant", "tool_call", "run_terminal_command_v2:")]
    assert shape(bank, D)[0] == ("system", "text", "List the test files and ")  # written by its parent agent
    assert "half-typed draft" not in str(events_of(bank))  # the composer's unsent input box


@pytest.mark.parametrize("write", ["update", "replace"])
def test_ide_composer_rewritten_after_a_read_is_revised(tmp_path: Path, appdata: Path, write: str) -> None:
    """Cursor rewrites a tool bubble and its composer in place once the tool is done (or replaces the
    rows, which gives them new rowids): either way the next read revises, never duplicates."""
    bank, _ = read_ide(tmp_path, appdata)
    before = events_of(bank, B)
    conn = kv(appdata)
    query = "SELECT key, value FROM cursorDiskKV WHERE key LIKE ? OR key = ?"
    rows = {k: orjson.loads(v) for k, v in conn.execute(query, (f"bubbleId:{B}:%", f"composerData:{B}"))}
    tool_key = next(k for k, v in rows.items() if v.get("toolFormerData"))
    bubble = rows[tool_key]
    bubble["toolFormerData"] |= {"status": "completed", "result": '{"output":"212 passed"}'}
    composer = rows[f"composerData:{B}"]
    done = {"_v": 3, "type": 2, "bubbleId": "b2e1d3c5-0002-4000-8000-000000000003", "text": "All tests pass.",
            "createdAt": "2026-11-21T14:01:00.000Z", "tokenCount": {"inputTokens": 900, "outputTokens": 40}}
    composer["fullConversationHeadersOnly"].append({"bubbleId": done["bubbleId"], "type": 2})
    composer["status"] = "completed"
    statement = ("UPDATE cursorDiskKV SET value = ? WHERE key = ?" if write == "update"
                 else "INSERT INTO cursorDiskKV VALUES (?2, ?1)")  # UNIQUE ON CONFLICT REPLACE
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"checkpointId:{B}:x", "{}"))  # rows in between
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                 (f"bubbleId:{B}:{done['bubbleId']}", orjson.dumps(done).decode()))
    conn.execute(statement, (orjson.dumps(bubble).decode(), tool_key))
    conn.execute(statement, (orjson.dumps(composer).decode(), f"composerData:{B}"))
    conn.commit()
    conn.close()
    bank, problems = read_ide(tmp_path, appdata)
    after = events_of(bank, B)
    assert problems == 0
    assert [(e["role"], e["kind"]) for e in after] == [("user", "text"), ("assistant", "tool_call"),
                                                       ("tool", "tool_result"), ("assistant", "text")]
    assert [e["uid"] for e in after[:2]] == [e["uid"] for e in before]  # revised in place, not duplicated
    assert after[1]["seq"] == before[1]["seq"] and after[1]["meta"]["status"] == "completed"
    assert (after[2]["text"], after[2]["tool_call_id"]) == ('{"output":"212 passed"}',
                                                             after[1]["tool_call_id"])
    assert session_of(bank, B)["meta"]["last_turn"] == "complete"
    assert event_identities(bank) == event_identities(read_ide(tmp_path, appdata)[0])  # again: nothing new


def test_ide_rows_nothing_can_change_are_not_read_again(tmp_path: Path, appdata: Path) -> None:
    """The watermark stays at B's running tool: what was written before it (A) is not read again."""
    read_ide(tmp_path, appdata)
    conn = kv(appdata)
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"checkpointId:{D}:later", "{}"))
    conn.commit()
    conn.close()
    report = scan(tmp_path / "home", tmp_path / "bank.sqlite", (cursor.IDE_NAME,),
                  env={"HOME": str(tmp_path / "home"), "VSCODE_APPDATA": str(appdata)})
    result = report.harnesses[cursor.IDE_NAME]
    assert (report.events_added, result.problems) == (0, 0)
    assert B in result.sessions and A not in result.sessions


def test_ide_unknown_bubble_type_is_drift(tmp_path: Path, appdata: Path) -> None:
    conn = kv(appdata)
    odd = "a1f0c2d4-0001-4000-8000-0000000000ff"
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                 (f"bubbleId:{A}:{odd}", orjson.dumps({"_v": 3, "type": 7, "bubbleId": odd}).decode()))
    conn.commit()
    conn.close()
    bank, problems = read_ide(tmp_path, appdata)
    assert problems == 1 and drift(bank, cursor.IDE_NAME) == {"bubble type=7": 1}
    assert len(events_of(bank, A)) == 12  # the rest still imports


# -- roots -----------------------------------------------------------------------------------------
def test_cli_roots_follow_the_os_and_variables(tmp_path: Path) -> None:
    home = tmp_path
    assert cursor.cli_roots_for("linux", {}, home) == [home / ".cursor"]
    assert cursor.cli_roots_for("linux", {"XDG_CONFIG_HOME": "/x"}, home) == [Path("/x/cursor"),
                                                                               home / ".cursor"]
    assert cursor.cli_roots_for("darwin", {"XDG_CONFIG_HOME": "/x"}, home) == [home / ".cursor"]  # Linux, BSD
    assert cursor.cli_roots_for("win32", {"XDG_CONFIG_HOME": "/x"}, home) == [home / ".cursor"]
    assert cursor.cli_roots_for("linux", {"CURSOR_CONFIG_DIR": "/c", "XDG_CONFIG_HOME": "/x"}, home) == [
        Path("/c"), Path("/x/cursor"), home / ".cursor"]


def test_ide_roots_follow_the_os_and_variables(tmp_path: Path) -> None:
    home = tmp_path
    assert cursor.ide_roots_for("linux", {}, home) == [home / ".config/Cursor/User"]
    assert cursor.ide_roots_for("linux", {"XDG_CONFIG_HOME": "/x"}, home) == [Path("/x/Cursor/User")]
    assert cursor.ide_roots_for("darwin", {}, home) == [home / "Library/Application Support/Cursor/User"]
    assert cursor.ide_roots_for("win32", {"APPDATA": "/w/Roaming"}, home) == [Path("/w/Roaming/Cursor/User")]
    assert cursor.ide_roots_for("win32", {}, home) == [home / "AppData/Roaming/Cursor/User"]
    assert cursor.ide_roots_for("darwin", {"VSCODE_APPDATA": "/a"}, home) == [Path("/a/Cursor/User")]
    assert cursor.ide_roots_for("linux", {"VSCODE_PORTABLE": "/p"}, home) == [Path("/p/user-data/User")]


def test_default_roots_are_found_without_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    copy_tree(CLI_HAND, home / ".cursor")
    monkeypatch.setattr(cursor.sys, "platform", "linux")
    copy_tree(IDE_HAND, home / ".config" / "Cursor")
    for harness, count in ((cursor.CLI_NAME, 2), (cursor.IDE_NAME, 4)):
        report = scan(home, tmp_path / f"{harness}.sqlite", (harness,), env={"HOME": str(home)})
        assert len(report.harnesses[harness].sessions) == count


def test_workspace_uris() -> None:
    assert cursor._uri_path("file:///home/dev/My%20Project") == "/home/dev/My Project"
    assert cursor._uri_path("file:///c%3A/Users/dev/app") == "c:/Users/dev/app"
    assert cursor._uri_path("vscode-remote://ssh-remote%2Bbox/home/dev/app") is None  # not a local folder
    assert cursor._uri_path({"scheme": "file", "fsPath": "/srv/app", "path": "/srv/app"}) == "/srv/app"
    assert cursor._uri_path({"scheme": "vscode-remote", "fsPath": "/srv/app"}) is None
