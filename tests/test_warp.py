"""Warp agent mode: what the hand-written store must read as (fixtures/warp/hand/README.md).

The database is kept as SQL text (``hand/warp.sql``; each task a protobuf ``Task`` in hex, described in the
comment above it); each test builds ``warp.sqlite`` in a temporary state dir (``$XDG_STATE_HOME/warp-terminal``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import warp
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "warp" / "hand"
C1, C3 = "a3c1d2e4-0000-4000-8000-00000000c001", "a3c1d2e4-0000-4000-8000-00000000c003"
CWD = "/home/dev/src/demo-repo"


def build_store(tmp: Path) -> Path:
    db = tmp / "state" / "warp-terminal" / "warp.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript((HAND / "warp.sql").read_text())
    conn.commit()
    conn.close()
    return db


def read(tmp: Path) -> tuple[Path, int]:
    bank = tmp / "bank.sqlite"
    env = {"HOME": str(tmp / "home"), "XDG_STATE_HOME": str(tmp / "state")}
    report = scan(tmp / "home", bank, (warp.NAME,), env=env)
    return bank, report.harnesses[warp.NAME].problems


def shape(bank: Path, sid: str) -> list[tuple[str, str]]:
    return [(e["role"], e["kind"]) for e in events_of(bank, sid)]


def pb(number: int, value: int | str | bytes) -> bytes:
    """One protobuf field (varint or length-delimited), to write a task as prost encodes it."""
    def varint(n: int) -> bytes:
        out = b""
        while True:
            low, n = n & 0x7F, n >> 7
            if not n:
                return out + bytes([low])
            out += bytes([low | 0x80])
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    db = build_store(tmp_path)
    bank, problems = read(tmp_path)
    assert problems == 0
    return db, bank


def test_every_conversation(store: tuple[Path, Path]) -> None:
    _, bank = store
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"], s["parent_native_id"],
                            s["started_at"], s["event_count"]) for s in sessions_of(bank)}
    assert got == {
        C1: (CWD, "Fix the failing date test", "ai", "claude-4-sonnet", None, "2026-11-05T10:00:00.000Z", 16),
        C3: (CWD, "Find where the CSV export is tested.", "first-prompt", None, C1, "2026-11-05T11:00:00.000Z", 9),
    }
    meta = session_of(bank, C1)["meta"]
    assert (meta["last_turn"], meta["tokens"], meta["model_choice"]) == ("complete", {"claude-4-sonnet": 5120}, "auto")
    assert session_of(bank, C3)["meta"]["last_turn"] == "open"  # its last exchange is Pending


def test_a_conversation_with_tools_and_a_subtask_in_time_order(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert shape(bank, C1) == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"),
        ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "tool_call"),
        ("system", "text"), ("assistant", "text"), ("tool", "tool_result"), ("assistant", "text")]
    events = events_of(bank, C1)
    assert (events[3]["text"], events[3]["tool_input"]) == ("run_shell_command: make test", {"command": "make test"})
    assert events[4]["is_error"] and events[4]["text"].startswith("FAILED tests/test_dates.py")
    assert events[5]["tool_input"] == {"files": ["src/dates.py"]}
    assert events[9]["tool_input"] == {"summary": "Clamp the day to the month's last day", "files": ["src/dates.py"]}
    assert events[12]["meta"] == {"from_agent": True}  # the subtask's query is the parent agent's
    assert events[0]["uid"] == "msg-0001" and events[0]["ts"] == "2026-11-05T10:00:00.000Z"


def test_summarization_resume_and_a_cancelled_command(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, C3)
    assert [(e["role"], e["kind"], e["text"][:22]) for e in events][3:] == [
        ("assistant", "text", "It is tested in tests/"), ("system", "compaction", "The user looked for th"),
        ("system", "meta", "resume_conversation"), ("assistant", "tool_call", "run_shell_command: pyt"),
        ("tool", "tool_result", "cancelled"), ("user", "text", "Run it with -x instead")]
    assert events[7]["is_error"]


def test_a_task_saved_again_adds_only_what_is_new(tmp_path: Path) -> None:
    db = build_store(tmp_path)
    read(tmp_path)
    conn = sqlite3.connect(db)
    (blob,) = conn.execute("SELECT task FROM agent_tasks WHERE task_id = 'task-root-0003'").fetchone()
    answer = pb(5, pb(1, "msg-0110") + pb(11, "task-root-0003") + pb(14, pb(1, 1793876400 + 5430)) +
                pb(3, pb(1, "All 4 tests pass.")))
    # As Warp saves: the whole task again (upsert); the trigger moves last_modified_at.
    conn.execute("UPDATE agent_tasks SET task = ?, last_modified_at = '2026-11-05 11:30:31' WHERE task_id = "
                 "'task-root-0003'", (blob + answer,))
    conn.execute("UPDATE ai_queries SET output_status = '\"Completed\"' WHERE exchange_id = 'ex-4'")
    conn.execute("UPDATE agent_conversations SET conversation_data = conversation_data WHERE conversation_id = ?", (C3,))
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 0
    assert shape(bank, C3)[-2:] == [("user", "text"), ("assistant", "text")]
    assert len(events_of(bank, C3)) == 10 and session_of(bank, C3)["meta"]["last_turn"] == "complete"


def test_unknown_messages_and_bad_blobs_are_counted() -> None:
    ref = SourceRef(PurePath("/x/warp.sqlite"), PurePath("/x"), "db")
    task = pb(1, "t") + pb(5, pb(1, "m1") + pb(99, pb(1, "new kind"))) + pb(5, pb(1, "m2") + pb(4, pb(1, "c") + pb(77, b"")))
    rows = [{"table": "task", "row": {"conversation_id": "c", "task_id": "t", "task": task.hex()}},
            {"table": "task", "row": {"conversation_id": "c", "task_id": "u", "task": "ff"}},
            {"table": "panes", "row": {"conversation_id": "c"}}]
    batch = warp.parse(ref, [Record(i + 1, orjson.dumps(r)) for i, r in enumerate(rows)], {})
    assert [(p.kind, p.detail.split(":")[0]) for p in batch.problems] == [
        ("unknown_type", "message field 99"), ("unknown_type", "tool call field 77"),
        ("malformed", "task u is not a protobuf Task"), ("unknown_type", "table='panes'")]


def test_roots_per_os() -> None:
    home = Path("/home/u")
    linux = warp.roots_for("linux", {}, home)
    assert linux[:2] == [home / ".local/state/warp-terminal", home / ".local/state/warp-terminal/tui"]
    assert warp.roots_for("linux", {"XDG_STATE_HOME": "/s"}, home)[0] == Path("/s/warp-terminal")
    mac = warp.roots_for("darwin", {}, home)
    assert mac[0] == home / "Library/Group Containers/2BBY89MBSN.dev.warp/Library/Application Support/dev.warp.Warp-Stable"
    assert home / "Library/Application Support/dev.warp.Warp-Stable" in mac
    assert warp.roots_for("win32", {"LOCALAPPDATA": "C:/L"}, home)[0] == Path("C:/L/warp/Warp/data")


# Before agent_conversations (Warp builds up to 2025-06-09): the prompts in ai_queries are all there is
# (ai_blocks' answers were dropped by a later migration, 2025-11-19): fixtures/warp/hand-prompts.
OLD1, OLD2 = "b7e0c1aa-0000-4000-8000-0000000c0a01", "b7e0c1aa-0000-4000-8000-0000000c0a02"


def test_a_database_before_agent_conversations_reads_its_prompts(tmp_path: Path) -> None:
    db = tmp_path / "state" / "warp-terminal" / "warp.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript((FIXTURES / "warp" / "hand-prompts" / "warp.sql").read_text())
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 0
    assert [e["text"] for e in events_of(bank, OLD1)] == [
        "Why is the docker build so slow?", "Add a .dockerignore for node_modules then."]
    assert [e["text"] for e in events_of(bank, OLD2)] == ["list the biggest files in this repo"]
    first = session_of(bank, OLD1)
    assert (first["cwd"], first["model"], first["started_at"]) == (CWD, "claude-3-7-sonnet", "2025-05-20T14:03:11.482Z")
    assert first["meta"]["last_turn"] == "aborted" and first["title"] == "Why is the docker build so slow?"


def test_prompts_of_conversations_from_before_tasks_are_read_beside_todays(tmp_path: Path) -> None:
    """A database upgraded past 2025-06-09 keeps the older conversations' prompts in ai_queries, with no task."""
    db = build_store(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO ai_queries (id, exchange_id, conversation_id, start_ts, input, working_directory, "
                 "output_status, model_id) VALUES (90, 'ex-old', ?, '2025-04-02 08:00:00', ?, ?, '\"Completed\"', '')",
                 (OLD2, '[{"Query":{"text":"what does git rerere do","context":[],"referenced_attachments":{}}}]', CWD))
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 0
    assert [e["text"] for e in events_of(bank, OLD2)] == ["what does git rerere do"]
    assert shape(bank, C1)[0] == ("user", "text")  # today's conversations still read from their tasks
    assert len([e for e in events_of(bank, C1) if e["text"] == "Why does `make test` fail?"]) == 1
