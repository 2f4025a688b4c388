"""Forge (antinomyhq/forge): what the hand-written store must read as (fixtures/forge/hand/README.md).

The database is kept as SQL text (``hand/forge.sql``); each test builds ``.forge.db`` in a temporary
``$FORGE_CONFIG`` folder.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import forge
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "forge" / "hand"
PREFIX = "4f0c2b6e-8a1d-4e57-9c3b-1d2e3f4a5b0"
C1, C2, C3, C4, C5 = (f"{PREFIX}{n}" for n in (1, 2, 3, 4, 5))
CWD = "/home/dev/src/demo-repo"


def build_store(tmp: Path, sql: str | None = None) -> Path:
    db = tmp / "forge-config" / ".forge.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(sql if sql is not None else (HAND / "forge.sql").read_text())
    conn.commit()
    conn.close()
    return db


def read(tmp: Path) -> tuple[Path, int]:
    bank = tmp / "bank.sqlite"
    env = {"HOME": str(tmp / "home"), "FORGE_CONFIG": str(tmp / "forge-config")}
    report = scan(tmp / "home", bank, (forge.NAME,), env=env)
    return bank, report.harnesses[forge.NAME].problems


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    db = build_store(tmp_path)
    bank, problems = read(tmp_path)
    assert problems == 0
    return db, bank


def test_every_conversation_with_a_context_is_a_session(store: tuple[Path, Path]) -> None:
    _, bank = store
    got = {s["native_id"]: (s["cwd"], s["title"], s["model"]) for s in sessions_of(bank)}
    assert got == {
        C1: (CWD, "Windows path separator in test_split", "claude-sonnet-4-5"),
        C2: (CWD, "List workspace crates", "anthropic/claude-sonnet-4"),
        C3: (CWD, "Generate a commit message for the staged changes", "gpt-5"),
        C4: (CWD, "Find call sites the Config to Settings rename missed", "gpt-5"),
    }  # C5 has no context yet: nothing to read
    assert session_of(bank, C1)["started_at"] == "2026-03-02T09:14:05.120Z"
    assert session_of(bank, C1)["updated_at"] == "2026-03-02T09:16:44.801Z"


def test_the_current_era_every_text_tool_and_usage(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, C1)
    assert shapes(events) == [
        ("system", "text"), ("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"), ("system", "text"),
        ("user", "text"), ("assistant", "tool_call"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("tool", "tool_result"), ("assistant", "text")]
    assert events[0]["meta"]["injected"] and "<current_working_directory>" in events[0]["text"]
    assert events[1]["text"] == "Why does the parser test fail on Windows?"  # the person's words (raw_content)
    assert events[2]["text"] == "The failure mentions a path separator; read the test."
    assert events[4]["text"] == f"read: {CWD}/tests/test_parser.py" and events[4]["tool_call_id"] == "toolu_01"
    assert events[5]["tool_call_id"] == "toolu_01" and "def test_split" in events[5]["text"]
    assert events[3]["usage"] == {"in": 1200, "out": 85, "cache_read": 1024}
    assert events[7]["meta"] == {"injected": True, "droppable": True}  # the todo list Forge adds on resume
    assert events[8]["text"] == "Fix it and run the test."
    assert events[10]["text"] == "shell: pytest tests/test_parser.py -q"
    assert events[12]["is_error"] and "FAILED" in events[12]["text"]
    assert events[13]["usage"] == {"in": 1800, "out": 40, "cache_read": 1600}  # approx counts too


def test_the_first_persisted_era_without_usage_wrappers(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, C2)
    assert shapes(events) == [
        ("system", "text"), ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "thinking"), ("assistant", "text")]
    assert events[1]["text"] == "<task>List the crates in this workspace</task>\n<current_date>2025-09-20</current_date>"
    assert events[3]["text"] == f"read: {CWD}/Cargo.toml"
    assert events[4]["text"] == '[workspace]\nmembers = ["crates/*"]'
    assert events[6]["text"].startswith("Every folder under crates/")


def test_legacy_tool_values_subagent_reports_images_commands_and_compaction(store: tuple[Path, Path]) -> None:
    _, bank = store
    events = events_of(bank, C3)
    assert shapes(events) == [
        ("system", "text"), ("system", "compaction"), ("user", "text"), ("user", "text"), ("assistant", "text"),
        ("assistant", "tool_call"), ("assistant", "tool_call"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("tool", "tool_result"), ("tool", "tool_result"), ("assistant", "text")]
    assert "Rename Config to Settings everywhere" in events[1]["text"]
    assert events[2]["text"] == "Generate a commit message for the staged changes"
    assert events[2]["meta"] == {"command": "commit"}
    assert events[3]["text"] == "[image]"
    assert events[5]["text"] == "patch: /home/dev/src/demo-repo/src/settings.rs"  # arguments kept as a JSON string
    patch, sage, fetch = events[8]["text"], events[9]["text"], events[10]["text"]
    assert "<file_diff path=\"src/settings.rs\">" in patch and "struct Settings;" in patch
    assert sage == "No missed call sites: the rename is complete."
    assert events[9]["meta"] == {"conversation_id": f"{PREFIX}4"}
    assert fetch.startswith("# serde\n") and "NOTES.md" in fetch and "serde notes" in fetch


def test_the_sub_agents_conversation_is_its_callers_subagent(store: tuple[Path, Path]) -> None:
    """A sub-agent runs in a conversation of its own that names no parent (agent_executor.rs); the caller's tool
    result (``ai``) names it."""
    _, bank = store
    sub = session_of(bank, C4)
    assert (sub["parent_native_id"], sub["parent_kind"], sub["cwd"]) == (C3, "subagent", CWD)
    assert shapes(events_of(bank, C4)) == [("system", "text"), ("user", "text"), ("assistant", "tool_call"),
                                           ("tool", "tool_result"), ("assistant", "text")]
    assert events_of(bank, C4)[1]["text"] == "Find call sites the Config to Settings rename missed"
    assert session_of(bank, C3)["parent_native_id"] is None


def test_a_task_call_continuing_a_session_names_its_subagent() -> None:
    """The ``task`` tool's ``session_id`` continues an existing sub-agent conversation (tool_registry.rs): that
    conversation is the caller's subagent even before the call's result is saved."""
    context = {"messages": [{"text": {"role": "Assistant", "content": "", "tool_calls": [
        {"name": "task", "call_id": "c1", "arguments": {"tasks": ["go on"], "agent_id": "sage", "session_id": "kid"}}]}}]}
    rows = [{"table": "conversation", "row": {"conversation_id": "dad", "context": orjson.dumps(context).decode(),
                                              "created_at": "2026-03-01 10:00:00", "updated": "2026-03-01 10:00:00"}}]
    batch = forge.parse(SourceRef(PurePath("/f/.forge.db"), PurePath("/f")),
                        [Record(1, orjson.dumps(r)) for r in rows], {})
    kid = batch.sessions["kid"]
    assert (kid.parent_native_id, kid.parent_kind) == ("dad", "subagent")
    assert batch.sessions["dad"].parent_native_id is None


def test_a_saved_conversation_adds_only_what_is_new(store: tuple[Path, Path], tmp_path: Path) -> None:
    db, bank = store
    before = len(events_of(bank, C2))
    conn = sqlite3.connect(db)
    context = orjson.loads(conn.execute("SELECT context FROM conversations WHERE conversation_id = ?", (C2,)).fetchone()[0])
    # Forge saves the whole context again, now in the wrapped shape (the conversation was resumed by a later build).
    context["messages"] = [{"message": m} for m in context["messages"]] + [
        {"message": {"text": {"role": "User", "content": "<feedback>And the binaries?</feedback>",
                              "raw_content": {"Text": "And the binaries?"}}}},
        {"message": {"text": {"role": "Assistant", "content": "forge_main builds the forge binary."}},
         "usage": {"prompt_tokens": {"actual": 10}, "completion_tokens": {"actual": 5}, "total_tokens": {"actual": 15},
                   "cached_tokens": {"actual": 0}}}]
    conn.execute("UPDATE conversations SET context = ?, updated_at = '2026-03-05 10:00:00.000000' WHERE conversation_id = ?",
                 (orjson.dumps(context).decode(), C2))
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 0
    events = events_of(bank, C2)
    assert len(events) == before + 2 and [e["text"] for e in events[-2:]] == [
        "And the binaries?", "forge_main builds the forge binary."]


def test_a_database_of_the_first_schema_reads(tmp_path: Path) -> None:
    """v0.117 (September 2025): the table before the metrics column, holding the first era's conversation."""
    full = build_store(tmp_path / "full")
    conn = sqlite3.connect(full)
    row = conn.execute("SELECT conversation_id, title, workspace_id, context, created_at, updated_at FROM conversations "
                       "WHERE conversation_id = ?", (C2,)).fetchone()
    conn.close()
    schema = (HAND / "forge.sql").read_text().split("ALTER TABLE")[0]
    db = build_store(tmp_path, schema)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?)", row)
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 0 and len(events_of(bank, C2)) == 7


def test_drift_is_counted_never_silent() -> None:
    ref = SourceRef(PurePath("/x/.forge.db"), PurePath("/x"), "db")
    context = {"messages": [{"hologram": {}}, {"message": {"text": {"role": "Oracle", "content": "?"}}},
                            {"message": {"tool": {"name": "read", "call_id": "c", "output": {
                                "is_error": False, "values": [{"video": "x"}]}}}}]}
    rows = [{"table": "conversation", "row": {"conversation_id": "a", "context": orjson.dumps(context).decode(),
                                              "created_at": "2026-01-01 00:00:00", "updated": "2026-01-01 00:00:00"}},
            {"table": "conversation", "row": {"conversation_id": "b", "context": "{not json"}},
            {"table": "conversations_v9", "row": {}}]
    batch = forge.parse(ref, [Record(i + 1, orjson.dumps(r)) for i, r in enumerate(rows)], {})
    assert [(p.kind, p.detail.split(":")[0]) for p in batch.problems] == [
        ("unknown_type", "message='hologram'"), ("unknown_type", "role='Oracle'"),
        ("unknown_type", "tool value='video'"), ("malformed", "conversation b"),
        ("unknown_type", "table='conversations_v9'")]


def test_roots() -> None:
    home = Path("/home/u")
    assert forge.roots({}, home) == [home / "forge", home / ".forge"]
    assert forge.roots({"FORGE_CONFIG": "/c"}, home) == [Path("/c")]
