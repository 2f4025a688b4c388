"""Shelley: what the hand-written database must read as (fixtures/shelley/hand/README.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "shelley"
MAIN, CHILD = "cs1a2b3c4d", "cs5e6f7a8b"
# What agentsview keeps of both conversations (its shelley.go; each found in agentsview 0.46.1's database):
# harvester must keep them too.
KEPT = ("You are Shelley, a coding agent", "demo-repo on main @ 4f1c2ab", "Why is the checkout test flaky?",
        "Run it a few times and look at the timing.", "Running it five times.", "go test ./checkout -run TestCheckout",
        "FAIL checkout 5.02s: context deadline exceeded", "Find where the checkout test sets its deadline",
        "sets a 5s deadline on the payment client", "one time in five", "Context is 80% full",
        "grep -n WithTimeout", "context.WithTimeout(ctx, 5*time.Second)", "LLM request failed: 529 overloaded")


def _scan(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "home" / ".config" / "shelley"
    store.mkdir(parents=True)
    conn = sqlite3.connect(store / "shelley.db")
    conn.executescript((FIXTURES / "shelley" / "hand" / "shelley.sql").read_text())
    conn.commit()
    conn.close()
    bank = tmp_path / "bank.sqlite"
    report = scan(tmp_path / "home", bank, (NAME,), env={"HOME": str(tmp_path / "home")})
    assert report.harnesses[NAME].problems == 0
    return bank, store


def test_a_conversation_its_subagent_usage_and_notices(tmp_path: Path) -> None:
    bank, store = _scan(tmp_path)
    assert sorted(p.name for p in store.iterdir()) == ["shelley.db"]  # nothing written beside the agent's database
    events = events_of(bank, MAIN)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "text"), ("system", "meta"), ("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text"), ("system", "meta"), ("system", "meta"), ("system", "meta")]
    assert events[0]["meta"]["injected"]
    assert events[3]["usage"] == {"in": 2400, "out": 120, "cache_read": 9000, "cache_write": 300}
    assert events[3]["model"] == "claude-sonnet-4-5"
    assert events[5]["text"].startswith("bash: for i in 1 2 3 4 5") and events[6]["is_error"]
    assert events[10]["usage"] == {"in": 300, "out": 8} and events[10]["model"] == "claude-haiku-4-5"  # the slug
    main = session_of(bank, MAIN)
    assert (main["cwd"], main["title"], main["branch"], main["commit_sha"], main["started_at"]) == (
        "/home/exedev/demo-repo", "flaky-checkout-test", "main", "4f1c2ab", "2026-11-05T10:00:00.000Z")
    child = session_of(bank, CHILD)
    assert (child["parent_native_id"], child["parent_kind"]) == (MAIN, "subagent")


def test_every_text_agentsview_keeps_is_kept(tmp_path: Path) -> None:
    bank, _ = _scan(tmp_path)
    held = [e["text"] + orjson.dumps(e["tool_input"]).decode() for s in (MAIN, CHILD) for e in events_of(bank, s)]
    assert [t for t in KEPT if not any(t in h for h in held)] == []


def test_unknown_types_are_drift() -> None:
    from harvester.parsers import shelley
    ref = SourceRef(PurePath("/h/.config/shelley/shelley.db"), PurePath("/h/.config/shelley"))
    rows = [{"table": "message", "row": {"message_id": "a", "conversation_id": "c", "type": "hologram"}},
            {"table": "message", "row": {"message_id": "b", "conversation_id": "c", "type": "agent",
                                         "llm_data": orjson.dumps({"Role": 1, "Content": [{"Type": 42}]}).decode()}}]
    batch = shelley.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(rows)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type"]


def test_a_message_whose_llm_data_is_not_json_is_reported() -> None:
    from harvester.parsers import shelley
    ref = SourceRef(PurePath("/h/.config/shelley/shelley.db"), PurePath("/h/.config/shelley"))
    row = {"table": "message", "row": {"message_id": "a", "conversation_id": "c", "type": "agent", "llm_data": "{cut"}}
    batch = shelley.parse(ref, [Record(1, orjson.dumps(row))], {})
    assert [p.kind for p in batch.problems] == ["malformed"]


def test_a_database_of_the_first_schema_reads(tmp_path: Path) -> None:
    """Before migrations 006-031 there is no cwd, parent, model nor model_name column: the rows read all the same."""
    store = tmp_path / "home" / ".config" / "shelley"
    store.mkdir(parents=True)
    conn = sqlite3.connect(store / "shelley.db")
    conn.executescript(
        "CREATE TABLE conversations (conversation_id TEXT PRIMARY KEY, slug TEXT, user_initiated BOOLEAN NOT NULL "
        "DEFAULT TRUE, created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME NOT NULL DEFAULT "
        "CURRENT_TIMESTAMP);"
        "CREATE TABLE messages (message_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, sequence_id INTEGER NOT "
        "NULL, type TEXT NOT NULL, llm_data TEXT, user_data TEXT, usage_data TEXT, created_at DATETIME NOT NULL "
        "DEFAULT CURRENT_TIMESTAMP);"
        "INSERT INTO conversations VALUES ('c-old', 'old-one', 1, '2026-01-02 10:00:00', '2026-01-02 10:01:00');"
        "INSERT INTO messages VALUES ('m1', 'c-old', 1, 'user', '{\"Role\":0,\"Content\":[{\"Type\":2,\"Text\":\"hi\"}]}',"
        " NULL, NULL, '2026-01-02 10:00:01');")
    conn.commit()
    conn.close()
    bank = tmp_path / "bank.sqlite"
    report = scan(tmp_path / "home", bank, (NAME,), env={"HOME": str(tmp_path / "home")})
    assert report.harnesses[NAME].problems == 0
    assert [(e["role"], e["text"]) for e in events_of(bank, "c-old")] == [("user", "hi")]
    assert session_of(bank, "c-old")["title"] == "old-one"
