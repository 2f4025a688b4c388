"""Piebald: what the hand-written store must read as (fixtures/piebald/hand/README.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "piebald"


def _store(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "piebald"
    data.mkdir(parents=True)
    conn = sqlite3.connect(data / "app.db")
    conn.executescript((FIXTURES / "piebald" / "hand" / "app.sql").read_text())
    conn.close()
    return home, data / "app.db"


def test_a_chat_its_fork_and_its_subagent(tmp_path: Path) -> None:
    home, db = _store(tmp_path)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    events = events_of(bank, "42")
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"), ("user", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"), ("system", "meta")]
    assert events[0]["text"] == "test_parse_date fails on CI but passes here. Find out why."  # two nodes, joined
    assert events[2]["usage"] == {"in": 1200, "out": 310, "cache_read": 4096, "cache_write": 512, "reasoning": 120}
    assert events[3]["text"] == "Read: tests/test_dates.py" and events[4]["tool_call_id"] == "toolu_01"
    assert events[6]["is_error"] and events[6]["text"] == "exit 1: 1 failed in 0.12s"
    assert events[11]["text"].startswith("overloaded_error")
    main = session_of(bank, "42")
    assert (main["cwd"], main["title"], main["model"]) == (
        "/home/dev/src/demo-repo", "Flaky date parsing test", "claude-sonnet-4-5")
    fork = session_of(bank, "42-102")
    assert (fork["parent_native_id"], fork["parent_kind"]) == ("42", "fork")
    assert [e["text"][:14] for e in events_of(bank, "42-102")] == ["Only look at t", "The fixture bu"]
    child = session_of(bank, "43")
    assert (child["parent_native_id"], child["parent_kind"], child["cwd"]) == (
        "42", "subagent", "/home/dev/src/demo-repo-wt")
    assert {s["native_id"] for s in sessions_of(bank)} == {"42", "42-102", "43"}  # 44 deleted, 45 never used
    assert not list(db.parent.glob("app.db-*"))  # opened read-only: no -wal/-shm beside it


def test_a_tool_result_written_later_revises_the_chat(tmp_path: Path) -> None:
    home, db = _store(tmp_path)
    bank = tmp_path / "bank.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE message_part_tool_call SET tool_result = NULL, tool_state = 'running' WHERE message_part_id = 203")
    conn.commit()
    scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert "result:toolu_01" not in [e["uid"] for e in events_of(bank, "42")]
    conn.execute("UPDATE message_part_tool_call SET tool_result = 'late result', tool_state = 'completed' "
                 "WHERE message_part_id = 203")
    conn.execute("UPDATE messages SET updated_at = '2026-09-21T15:00:00Z' WHERE id = 101")
    conn.commit()
    conn.close()
    scan(home, bank, (NAME,), env={"HOME": str(home)})
    texts = {e["uid"]: e["text"] for e in events_of(bank, "42")}
    assert texts["result:toolu_01"] == "late result"


def test_unknown_rows_parts_and_roles_are_drift() -> None:
    from harvester.parsers import piebald
    ref = SourceRef(PurePath("/h/.local/share/piebald/app.db"), PurePath("/h/.local/share/piebald"), "db")
    messages = [{"id": 1, "role": "oracle", "parts": []},
                {"id": 2, "parent": 1, "role": "assistant", "parts": [{"id": 9, "type": "hologram"}]}]
    rows = [{"table": "folders", "row": {}}, {"table": "chat", "row": {"id": 7, "messages": orjson.dumps(messages).decode()}}]
    batch = piebald.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(rows)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type", "unknown_type"]


def test_damaged_rows_cost_their_chat_only(tmp_path: Path) -> None:
    """A tool-call part without its call row is reported, not invented; a BLOB where text belongs does not stop
    the read (json_object refuses BLOBs: the text columns are cast)."""
    home, db = _store(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO chats VALUES (90, 'damaged', '2026-11-02T10:00:00Z', '2026-11-02T10:00:00Z', 0, 1, "
                 "NULL, NULL, NULL, NULL)")
    conn.execute("INSERT INTO messages VALUES (900, 90, NULL, ?, ?, '2026-11-02T10:00:01Z', '2026-11-02T10:00:01Z', "
                 "NULL, NULL, NULL, NULL, NULL, 'completed', NULL, NULL, 1)", (b"assistant", b"\xffmodel"))
    conn.execute("INSERT INTO message_parts VALUES (9000, 900, 0, 'tool_call')")
    conn.commit()
    conn.close()
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 1 and report.harnesses[NAME].failed == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {"42", "42-102", "43", "90"}
    assert len(events_of(bank, "42")) == 12
