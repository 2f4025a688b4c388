"""Goose: what the hand-written store must read as (fixtures/goose/hand/README.md).

The database is kept as SQL text (``hand/sessions.sql``); each test builds ``sessions.db`` in a temporary
data dir (``$XDG_DATA_HOME/goose/sessions``) beside the hand-written JSONL sessions.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import goose
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "goose" / "hand"
A, B, C = "20261101_1", "20261101_2", "20261101_3"
IMPORTED, LEGACY = "20250301_101500", "20250228_170000"
CWD = "/home/dev/src/demo-repo"


def build_store(tmp: Path) -> Path:
    """``$XDG_DATA_HOME/goose/sessions/`` with ``sessions.db`` built from the fixture's SQL text."""
    folder = tmp / "data" / "goose" / "sessions"
    shutil.copytree(HAND, folder, ignore=shutil.ignore_patterns("*.sql", "README.md"))
    conn = sqlite3.connect(folder / "sessions.db")
    try:
        conn.executescript((HAND / "sessions.sql").read_text())
        conn.commit()
    finally:
        conn.close()
    return folder / "sessions.db"


def read(tmp: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    env = {"HOME": str(tmp / "home"), "XDG_DATA_HOME": str(tmp / "data")}
    report = scan(tmp / "home", bank, (goose.NAME,), env=env)
    return bank, report.harnesses[goose.NAME].problems


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:21]) for e in events_of(bank, sid)]


def add_message(db: Path, sid: str, role: str, content: list, at: int, meta: dict | None = None) -> None:
    """As ``SessionStorage::add_message`` writes one: the row, then the session's updated_at."""
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (f"msg_{sid}_{at}", sid, role, orjson.dumps(content).decode(), at,
                                               orjson.dumps(meta or {"userVisible": True, "agentVisible": True}).decode()))
    conn.execute("UPDATE sessions SET updated_at = datetime('now') WHERE id = ?", (sid,))
    conn.commit()
    conn.close()


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    db = build_store(tmp_path)
    bank, problems = read(tmp_path)
    assert problems == 0
    return db, bank


def test_every_session(store: tuple[Path, Path]) -> None:
    _, bank = store
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"], s["event_count"])
           for s in sessions_of(bank)}
    assert got == {
        IMPORTED: (CWD, "Makefile test target", "ai", "gpt-4o", 5),
        LEGACY: (CWD, "Summarize the README", "ai", None, 2),
        A: (CWD, "Fix the failing date test", "ai", "gpt-4o", 14),
        B: (CWD, None, None, "gpt-4o", 4),
        C: (CWD, "Refactor the report module", "custom", "gpt-4o", 6),
    }


def test_a_turn_with_tools_thinking_and_an_invalid_call(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert [(r, k) for r, k, _ in shape(bank, A)] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"),
        ("user", "text"), ("assistant", "tool_call"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("tool", "tool_result"), ("assistant", "text")]
    events = events_of(bank, A)
    shell = next(e for e in events if e["tool_call_id"] == "call_A1")
    assert shell["text"] == "developer__shell: pytest -q tests/test_dates.py"
    assert shell["tool_input"] == {"command": "pytest -q tests/test_dates.py"}
    result = next(e for e in events if e["uid"] == "call_A1:result")
    assert result["is_error"] and result["tool_name"] == "developer__shell"
    invalid = next(e for e in events if e["tool_call_id"] == "call_A4" and e["kind"] == "tool_call")
    assert invalid["meta"] == {"invalid": True}
    assert next(e for e in events if e["uid"] == "call_A4:result")["is_error"]
    assert events[0]["ts"] == "2026-11-01T09:20:00.000Z"
    session = session_of(bank, A)
    assert session["meta"]["tokens"] == {"input": 3800, "output": 300, "total": 4100}
    assert session["meta"]["last_turn"] == "complete"


def test_a_subagents_task_is_not_the_users_words(store: tuple[Path, Path]) -> None:
    _, bank = store
    first = events_of(bank, B)[0]
    assert (first["role"], first["meta"]) == ("system", {"from_agent": True})
    assert session_of(bank, B)["meta"]["session_type"] == "sub_agent"


def test_compaction_keeps_the_originals_and_files_the_summary_as_system(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert shape(bank, C) == [
        ("user", "text", "Split report.py into "), ("assistant", "text", "Done: report/loader.p"),
        ("user", "text", "Now add type hints ev"), ("system", "text", "## Summary\nThe user a"),
        ("system", "compaction", "The previous message "), ("user", "text", "Now add type hints ev")]
    assert session_of(bank, C)["meta"]["last_turn"] == "open"  # the prompt is stored before its answer


def test_an_imported_jsonl_session_is_stored_once(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, IMPORTED)
    assert len(events) == len({e["uid"] for e in events}) == 5


def test_new_rows_and_a_rewrite_of_the_session_add_only_what_is_new(tmp_path: Path) -> None:
    db = build_store(tmp_path)
    bank, _ = read(tmp_path)
    add_message(db, C, "assistant", [{"type": "text", "text": "Added type hints to both modules."}], 1793529060)
    bank, problems = read(tmp_path)
    assert problems == 0
    assert shape(bank, C)[-1] == ("assistant", "text", "Added type hints to b")
    assert session_of(bank, C)["meta"]["last_turn"] == "complete"
    # replace_conversation: every row of the session deleted and written again under new ids.
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT message_id, role, content_json, created_timestamp, metadata_json FROM messages "
                        "WHERE session_id = ? ORDER BY id", (C,)).fetchall()
    conn.execute("DELETE FROM messages WHERE session_id = ?", (C,))
    conn.executemany("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, "
                     "metadata_json) VALUES (?, ?, ?, ?, ?, ?)", [(r[0], C, *r[1:]) for r in rows])
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 0 and len(events_of(bank, C)) == 7


def test_unknown_content_and_tables_are_drift() -> None:
    ref = SourceRef(PurePath("/x/sessions.db"), PurePath("/x"), "db")
    rows = [{"table": "message", "row": {"id": 1, "session_id": "s", "role": "user", "created_timestamp": 1,
                                          "content_json": '[{"type":"hologram"},{"type":"redactedThinking","data":"x"}]'}},
            {"table": "ledger", "row": {}},
            {"table": "message", "row": {"id": 2, "session_id": "s", "role": "tool", "content_json": "[]"}}]
    batch = goose.parse(ref, [Record(i + 1, orjson.dumps(r)) for i, r in enumerate(rows)], {})
    assert [(p.kind, p.detail) for p in batch.problems] == [
        ("unknown_type", "content type='hologram'"), ("unknown_type", "table='ledger'"),
        ("unknown_type", "message role='tool'")]


def test_roots_per_os_and_goose_path_root() -> None:
    home = Path("/home/u")
    assert goose.roots_for("linux", {}, home) == [home / ".local/share/goose/sessions"]
    assert goose.roots_for("darwin", {}, home) == [home / ".local/share/goose/sessions"]
    assert goose.roots_for("linux", {"XDG_DATA_HOME": "/d"}, home) == [Path("/d/goose/sessions")]
    assert goose.roots_for("linux", {"XDG_DATA_HOME": "rel"}, home) == [home / ".local/share/goose/sessions"]
    assert goose.roots_for("darwin", {"GOOSE_PATH_ROOT": "/g"}, home) == [Path("/g/data/sessions")]
    assert goose.roots_for("linux", {"GOOSE_PATH_ROOT": "g"}, home) == [home / ".local/share/goose/sessions"]
    assert goose.roots_for("win32", {"APPDATA": "C:/A"}, home) == [Path("C:/A/Block/goose/data/sessions")]
