"""Zed agent threads: what the hand-written store must read as (fixtures/zed/hand/README.md).

The database is kept as SQL text (``hand/threads.sql``, each blob's JSON in the comment above it); each test
builds ``threads.db`` in a temporary data dir (``$XDG_DATA_HOME/zed/threads``).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest
import zstandard

from harvester.parsers import zed
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "zed" / "hand"
PREFIX = "0a7c5e0e-3f1b-4c1e-9a55-2f8d61c0b00"
T1, T2, T3, T4 = (f"{PREFIX}{n}" for n in range(1, 5))
CWD = "/home/dev/src/demo-repo"


def build_store(tmp: Path, sql: str | None = None) -> Path:
    db = tmp / "data" / "zed" / "threads" / "threads.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(sql if sql is not None else (HAND / "threads.sql").read_text())
    conn.commit()
    conn.close()
    return db


def read(tmp: Path) -> tuple[Path, int]:
    bank = tmp / "bank.sqlite"
    env = {"HOME": str(tmp / "home"), "XDG_DATA_HOME": str(tmp / "data")}
    report = scan(tmp / "home", bank, (zed.NAME,), env=env)
    return bank, report.harnesses[zed.NAME].problems


def documents() -> dict[str, dict]:
    """The fixture's thread documents, from the comments above its rows."""
    return {m[1]: orjson.loads(m[2]) for m in re.finditer(r"-- (\S+) data \(\w+\) is: (.*)", (HAND / "threads.sql").read_text())}


def save(db: Path, tid: str, doc: dict, updated_at: str) -> None:
    """As ``save_thread_sync`` writes a thread: the whole document again, zstd level 3, upserted."""
    data = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(orjson.dumps({**doc, "updated_at": updated_at}))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE threads SET updated_at = ?, data = ?, data_type = 'zstd' WHERE id = ?", (updated_at, data, tid))
    conn.commit()
    conn.close()


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    db = build_store(tmp_path)
    bank, problems = read(tmp_path)
    assert problems == 0
    return db, bank


def test_every_thread(store: tuple[Path, Path]) -> None:
    _, bank = store
    got = {s["native_id"]: (s["cwd"], s["title"], s["model"], s["parent_native_id"], s["branch"], s["event_count"])
           for s in sessions_of(bank)}
    assert got == {
        T1: (CWD, "Refactor parser", "claude-sonnet-4", None, "main", 12),
        T2: (CWD, "Find callers", "claude-sonnet-4", T1, None, 4),
        T3: (CWD, "Speed up the test suite", "claude-sonnet-4", None, None, 7),
        T4: (CWD, "Explain the build script", "claude-sonnet-4", None, "build-script", 6),
    }
    assert session_of(bank, T1)["started_at"] == "2026-11-01T10:00:00.000Z"


def test_a_thread_with_a_mention_tools_and_usage(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, T1)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"),
        ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[0]["text"] == f"Split parse() in [@file {CWD}/src/parser.rs] into a lexer and a parser."
    assert events[3]["text"] == "read_file: demo-repo/src/parser.rs" and events[4]["tool_name"] == "read_file"
    assert events[7]["usage"] == {"in": 5200, "out": 310, "cache_write": 1200}
    assert events[11]["usage"] == {"in": 6100, "out": 120, "cache_read": 5200}
    assert session_of(bank, T1)["meta"]["last_turn"] == "complete"


def test_a_subagents_task_is_not_the_users_words(store: tuple[Path, Path]) -> None:
    _, bank = store
    first = events_of(bank, T2)[0]
    assert (first["role"], first["meta"]) == ("system", {"from_agent": True})


def test_resume_compaction_and_an_open_turn_then_the_rewritten_thread_adds_only_what_is_new(
        store: tuple[Path, Path], tmp_path: Path) -> None:
    db, bank = store
    assert [(e["role"], e["kind"]) for e in events_of(bank, T3)] == [
        ("user", "text"), ("assistant", "text"), ("system", "meta"), ("assistant", "text"), ("system", "compaction"),
        ("user", "text"), ("assistant", "tool_call")]
    assert session_of(bank, T3)["meta"]["last_turn"] == "open"
    doc = documents()[T3]
    doc["messages"][-1]["Agent"]["tool_results"] = {"toolu_21": {
        "tool_use_id": "toolu_21", "tool_name": "terminal", "is_error": False, "content": {"Text": "ok: 212 passed"},
        "output": None}}
    doc["messages"].append({"Agent": {"content": [{"Text": "All 212 tests pass in 40 s."}], "tool_results": {},
                                      "reasoning_details": None}})
    save(db, T3, doc, "2026-11-01T11:21:00.000000000+00:00")
    bank, problems = read(tmp_path)
    assert problems == 0
    events = events_of(bank, T3)
    assert [(e["role"], e["kind"]) for e in events][-3:] == [
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert len(events) == 9 and session_of(bank, T3)["meta"]["last_turn"] == "complete"


def test_a_first_agent_thread_in_json(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, T4)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "thinking"), ("assistant", "text")]
    assert events[3]["tool_name"] == "read_file"
    assert session_of(bank, T4)["meta"]["format"] == "0.2.0"


def test_a_database_of_the_first_shape_reads(tmp_path: Path) -> None:
    """Before parent_id, folder_paths and created_at: five columns (the first query fails, the second reads)."""
    doc = documents()[T3]
    blob = zstandard.ZstdCompressor(level=3).compress(orjson.dumps(doc)).hex()
    build_store(tmp_path, "CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT "
                f"NOT NULL, data_type TEXT NOT NULL, data BLOB NOT NULL); INSERT INTO threads VALUES ('{T3}', "
                f"'Speed up the test suite', '2026-11-01T11:20:05+00:00', 'zstd', X'{blob}');")
    bank, problems = read(tmp_path)
    assert problems == 0 and len(events_of(bank, T3)) == 7
    assert session_of(bank, T3)["cwd"] is None


def test_drift_and_bad_blobs_are_counted() -> None:
    ref = SourceRef(PurePath("/x/threads.db"), PurePath("/x"), "db")
    good = orjson.dumps({"version": "0.3.0", "title": "t", "messages": [{"Hologram": {}}, {"User": {
        "id": "u", "content": [{"Video": {}}]}}]}).hex()
    rows = [{"table": "thread", "row": {"id": "a", "data_type": "json", "data": good}},
            {"table": "thread", "row": {"id": "b", "data_type": "zstd", "data": b"not zstd".hex()}},
            {"table": "thread", "row": {"id": "c", "data_type": "brotli", "data": ""}},
            {"table": "threads_v9", "row": {}}]
    batch = zed.parse(ref, [Record(i + 1, orjson.dumps(r)) for i, r in enumerate(rows)], {})
    assert [(p.kind, p.detail.split(":")[0]) for p in batch.problems] == [
        ("unknown_type", "message='Hologram'"), ("unknown_type", "user content='Video'"),
        ("malformed", "thread b"), ("unknown_type", "data_type='brotli'"), ("unknown_type", "table='threads_v9'")]


def test_roots_per_os() -> None:
    home = Path("/home/u")
    assert zed.roots_for("linux", {}, home) == [home / ".local/share/zed/threads"]
    assert zed.roots_for("linux", {"XDG_DATA_HOME": "/d"}, home) == [Path("/d/zed/threads")]
    assert zed.roots_for("linux", {"FLATPAK_XDG_DATA_HOME": "/f", "XDG_DATA_HOME": "/d"}, home) == [Path("/f/zed/threads")]
    assert zed.roots_for("darwin", {"XDG_DATA_HOME": "/d"}, home) == [home / "Library/Application Support/Zed/threads"]
    assert zed.roots_for("win32", {"LOCALAPPDATA": "C:/L"}, home) == [Path("C:/L/Zed/threads")]
