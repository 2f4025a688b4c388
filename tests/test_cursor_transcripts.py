"""Cursor's agent transcripts (``projects/*/agent-transcripts``), read by the ``cursor-cli`` harness beside
its ``chats/*/store.db``: fixtures/cursor/transcripts/hand/README.md says what each file holds."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from harvester.bank import open_bank
from harvester.capture.sources import discover, match
from harvester.parsers import HARNESSES, cursor, cursor_transcripts
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "cursor" / "transcripts" / "hand"
CWD = "/home/dev/src/demo-repo"
T1 = "e5f4a6b8-7d9c-4eaf-8a0b-3c4d5e6f7a8b"  # IDE-style: transcript only, two turns, a subagent
T2 = "f6a5b7c9-8ead-4fb0-9b1c-4d5e6f7a8b9c"  # CLI: store.db and transcript, the store is read
T3 = "0a1b2c3d-4e5f-4a6b-8c7d-5e6f7a8b9c0d"  # T1's subagent
T4 = "1b2c3d4e-5f6a-4b7c-9d8e-6f7a8b9c0d1e"  # an older build's .txt, flat, cwd from <user_info>
PROJECT = Path("projects") / "home-dev-src-demo-repo" / "agent-transcripts"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    target = tmp_path / "cursor-config"
    shutil.copytree(HAND, target)
    for sql in target.rglob("store.sql"):
        conn = sqlite3.connect(sql.with_name("store.db"))
        conn.executescript(sql.read_text())
        conn.commit()
        conn.close()
        sql.unlink()
    return target


def read(tmp: Path, config: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    (tmp / "home").mkdir(exist_ok=True)
    report = scan(tmp / "home", bank, (cursor.CLI_NAME,), env={"HOME": str(tmp / "home"),
                                                                "CURSOR_CONFIG_DIR": str(config)})
    return bank, report.harnesses[cursor.CLI_NAME].problems


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def drift(bank: Path) -> dict:
    with open_bank(bank) as b:
        return b.harness_stats()[cursor.CLI_NAME]["drift"]


def append(path: Path, *records: dict) -> None:
    with path.open("ab") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in records))


def test_the_harness_reads_store_and_transcripts() -> None:
    harness = HARNESSES[cursor.CLI_NAME]
    assert harness.parse is cursor_transcripts.parse
    assert harness.sources == (*cursor.CLI_SOURCES, *cursor_transcripts.SOURCES)


def test_sessions(tmp_path: Path, config: Path) -> None:
    bank, problems = read(tmp_path, config)
    assert problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {T1, T2, T3, T4}
    one, sub, old = session_of(bank, T1), session_of(bank, T3), session_of(bank, T4)
    assert (one["cwd"], one["title"], one["title_source"], one["model"], one["started_at"]) == (
        CWD, "Why does the parser drop empty lines?", "first-prompt", None, None)  # no model, no times
    assert one["meta"] == {"source": "agent-transcript", "last_turn": "complete"}
    assert (sub["parent_native_id"], sub["parent_kind"], sub["cwd"]) == (T1, "subagent", CWD)
    assert (old["cwd"], old["meta"]["last_turn"]) == ("/home/dev/src/other-app", "open")  # from <user_info>
    assert session_of(bank, T2)["bank_id"] == one["bank_id"] == "coding-agent::demo-repo"


def test_a_transcript_beside_its_store_is_not_read(tmp_path: Path, config: Path) -> None:
    """T2 is in both: only store.db is a source (its events have the store's ids and model)."""
    bank, _ = read(tmp_path, config)
    with open_bank(bank) as b:
        sources = sorted(Path(c.path).name for c in b.cursors())
    assert sources == sorted([f"{T1}.jsonl", f"{T3}.jsonl", f"{T4}.txt", "store.db"])  # not T1.txt either
    two = session_of(bank, T2)
    assert (two["model"], two["title"], "source" in two["meta"]) == ("gpt-5", "Add a health check", False)
    assert [e["kind"] for e in events_of(bank, T2)] == ["text", "text"]


def test_shadowing_follows_the_store(tmp_path: Path, config: Path) -> None:
    """The store's bucket is md5(cwd), which the transcript's folder cannot give: any bucket is looked in.
    A store that appears later shadows the transcript from then on (file events too)."""
    harness = HARNESSES[cursor.CLI_NAME]
    transcript = config / PROJECT / T1 / f"{T1}.jsonl"
    assert match(harness, config, transcript) is not None
    store = config / "chats" / hashlib.md5(b"/somewhere/else").hexdigest() / T1 / "store.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"")
    assert match(harness, config, transcript) is None
    assert transcript not in {f.path for f in discover(harness, [config])}
    os.chmod(config / "chats", 0)  # a chats folder that cannot be listed shadows nothing
    try:
        if os.geteuid() != 0:
            assert match(harness, config, transcript) is not None
    finally:
        os.chmod(config / "chats", 0o755)


def test_events_in_order(tmp_path: Path, config: Path) -> None:
    bank, _ = read(tmp_path, config)
    assert shape(bank, T1) == [
        ("system", "text", "<user_info>\nOS Version: "),  # what Cursor injected, never the user's words
        ("user", "text", "Why does the parser drop"),
        ("assistant", "thinking", "The loop skips falsy row"),
        ("assistant", "text", "Let me look at the parse"),
        ("assistant", "tool_call", "Read: src/parse.py"),
        ("tool", "tool_result", "def parse_row(line):\n   "),
        ("assistant", "tool_call", "Shell: pytest -q tests/t"),  # its [REDACTED] text is no event
        ("tool", "tool_result", "1 failed"),
        ("assistant", "text", "`parse_row` returns None"),
        ("user", "text", "Thanks, now add a regres"),  # a plain-string prompt
        ("assistant", "text", "Added `test_empty_line_k"),  # redacted_thinking skipped
    ]
    calls = {e["tool_call_id"]: e for e in events_of(bank, T1) if e["kind"] == "tool_call"}
    results = [e for e in events_of(bank, T1) if e["kind"] == "tool_result"]
    assert [r["tool_call_id"] in calls for r in results] == [True, True]
    assert [r["is_error"] for r in results] == [False, True]
    assert calls["toolu_02"]["tool_input"] == {"command": "pytest -q tests/test_parse.py",
                                               "description": "Run the parser tests"}


def test_the_text_form(tmp_path: Path, config: Path) -> None:
    bank, _ = read(tmp_path, config)
    assert shape(bank, T4) == [
        ("system", "text", "<user_info>\nOS Version: "),
        ("user", "text", "List the TODOs in the re"),
        ("assistant", "thinking", "The user wants a list of"),  # begun on the [Thinking] line
        ("assistant", "text", "I'll search the sources."),
        ("assistant", "tool_call", "Grep: TODO"),
        ("tool", "tool_result", "src/app.py:12: # TODO: r"),
        ("assistant", "text", "Two TODOs: a retry on ti"),
        ("user", "text", "Open the first one"),
        ("assistant", "tool_call", "Read: src/app.py"),
    ]
    events = events_of(bank, T4)
    assert events[4]["tool_input"] == {"pattern": "TODO", "path": "src"}  # key: value lines
    assert events[5]["tool_call_id"] == events[4]["tool_call_id"]  # the result names its tool
    assert events[8]["tool_input"] == {"target_file": "src/app.py", "offset": 10}  # a JSON body


def test_the_text_form_is_read_again_and_revised(tmp_path: Path, config: Path) -> None:
    path = config / "projects" / "home-dev-src-other-app" / "agent-transcripts" / f"{T4}.txt"
    read(tmp_path, config)
    path.write_text(path.read_text() + "\n[Tool result] Read\n  def main():\n\nIt starts with `main`.\n")
    bank, problems = read(tmp_path, config)
    assert problems == 0
    assert shape(bank, T4)[-3:] == [("assistant", "tool_call", "Read: src/app.py"),
                                    ("tool", "tool_result", "def main():"),
                                    ("assistant", "text", "It starts with `main`.")]
    assert session_of(bank, T4)["meta"]["last_turn"] == "complete"


def test_appended_lines_are_read_once(tmp_path: Path, config: Path) -> None:
    path = config / PROJECT / T1 / f"{T1}.jsonl"
    bank, _ = read(tmp_path, config)
    before = len(events_of(bank, T1))
    append(path, {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nand docs\n"
                                                                                     "</user_query>"}]}})
    with path.open("ab") as f:
        f.write(b'{"role":"assistant","message":{"content":"half a li')  # torn: waits for its newline
    read(tmp_path, config)
    assert len(events_of(bank, T1)) == before + 1
    assert session_of(bank, T1)["meta"]["last_turn"] == "open"  # a prompt without its answer yet
    with path.open("ab") as f:
        f.write(b'ne"}}\n')
    read(tmp_path, config)
    read(tmp_path, config)
    assert shape(bank, T1)[-2:] == [("user", "text", "and docs"), ("assistant", "text", "half a line")]
    assert session_of(bank, T1)["meta"]["last_turn"] == "complete"
    assert drift(bank) == {}


@pytest.mark.parametrize(("status", "last"), [("completed", "complete"), ("error", "failed"),
                                              ("aborted", "aborted"), ("interrupted", "interrupted")])
def test_turn_ended(tmp_path: Path, config: Path, status: str, last: str) -> None:
    path = config / PROJECT / T1 / "subagents" / f"{T3}.jsonl"
    append(path, {"role": "user", "message": {"content": "again"}}, {"type": "turn_ended", "status": status})
    bank, _ = read(tmp_path, config)
    assert session_of(bank, T3)["meta"]["last_turn"] == last


def test_unknown_shapes_are_drift(tmp_path: Path, config: Path) -> None:
    append(config / PROJECT / T1 / f"{T1}.jsonl",
           {"type": "checkpoint", "id": "c1"},
           {"role": "critic", "message": {"content": "hm"}},
           {"role": "assistant", "message": {"content": [{"type": "citation", "url": "https://example.com"},
                                                         {"type": "text", "text": "kept"}]}},
           {"role": "system", "message": {"content": "Cursor's own prompt: skipped, not drift"}},
           {"role": "user", "message": {}})
    bank, problems = read(tmp_path, config)
    assert drift(bank) == {"line type='checkpoint'": 1, "role='critic'": 1, "assistant block type='citation'": 1}
    assert problems == 4  # the three, and a message without content (malformed)
    assert shape(bank, T1)[-1] == ("assistant", "text", "kept")


def test_no_workspace_file_and_no_user_info(tmp_path: Path, config: Path) -> None:
    """Then the cwd is unknown: the lossy folder name is never decoded into a path."""
    (config / "projects" / "home-dev-src-demo-repo" / ".workspace-trusted").unlink()
    path = config / PROJECT / T1 / f"{T1}.jsonl"
    path.write_bytes(b'{"role":"user","message":{"content":"hello"}}\n')
    bank, _ = read(tmp_path, config)
    assert session_of(bank, T1)["cwd"] is None
    assert session_of(bank, T3)["cwd"] is None
