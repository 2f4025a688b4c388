"""Kiro CLI: the three engines' stores (fixtures/kiro_cli/SOURCE.md), parsed from bytes and scanned."""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson

from harvester.parsers import kiro_cli
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

HAND = FIXTURES / "kiro_cli" / "hand"
CLI = HAND / "home" / "sessions" / "cli"


def _read(path: Path, variant: str = "v2", state: dict | None = None, sidecar: bytes | None = None):
    records = [Record(n, line) for n, line in enumerate(path.read_bytes().splitlines(), 1) if line.strip()]
    if sidecar is None and variant == "v2" and path.with_suffix(".json").exists():
        sidecar = path.with_suffix(".json").read_bytes()
    ref = SourceRef(PurePath(path), PurePath(path.parent), variant, sidecar)
    return kiro_cli.parse(ref, records, state or {})


def test_roots_follow_kiro_home_and_the_data_local_dir() -> None:
    home = Path("/home/u")
    assert kiro_cli.roots_for("linux", {}, home) == [home / ".kiro", home / ".local/share/kiro-cli"]
    assert kiro_cli.roots_for("linux", {"KIRO_HOME": "/k", "XDG_DATA_HOME": "/d"}, home) == [Path("/k"), Path("/d/kiro-cli")]
    assert kiro_cli.roots_for("linux", {"KIRO_HOME": "relative"}, home)[0] == home / ".kiro"
    assert kiro_cli.roots_for("darwin", {}, home)[1] == home / "Library/Application Support/kiro-cli"
    win = kiro_cli.roots_for("win32", {"LOCALAPPDATA": "C:/L", "APPDATA": "C:/R"}, home)
    assert win[1:] == [Path("C:/L/kiro-cli"), Path("C:/R/kiro-cli")]


def test_a_turn_with_a_tool_call_reads_as_prompt_call_result_answer() -> None:
    batch = _read(CLI / "3f0c2a9e-5b1d-4c7e-9a41-2d6f0b8e7c11.jsonl")
    assert [(e.role, e.kind) for e in batch.events] == [
        ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    call, result = batch.events[1], batch.events[2]
    assert call.tool_name == "shell" and call.tool_input["command"] == "echo hello"
    assert result.tool_call_id == call.tool_call_id and result.tool_name == "shell" and "hello" in result.text
    patch = batch.sessions["3f0c2a9e-5b1d-4c7e-9a41-2d6f0b8e7c11"]
    assert (patch.cwd, patch.model, patch.meta["last_turn"]) == ("/home/dev/demo-repo", "claude-sonnet-4.5", "complete")
    assert batch.events[3].ts == "2026-08-22T01:52:09.952Z"  # the turn's end, from the sidecar
    assert batch.problems == []


def test_a_refused_tool_and_clear() -> None:
    batch = _read(CLI / "9b7e41d2-0c6a-4f3b-8e25-71a9d4c3b0f6.jsonl")
    result = next(e for e in batch.events if e.kind == "tool_result")
    assert result.is_error and result.tool_name == "read"
    assert any(e.kind == "meta" and "clear" in e.text for e in batch.events)
    assert batch.sessions["9b7e41d2-0c6a-4f3b-8e25-71a9d4c3b0f6"].model is None  # "auto" is a routing label


def test_a_rewind_is_a_fork_of_its_parent() -> None:
    patch = _read(CLI / "08c7f033-67e3-4de1-941d-07c4cfe171d2.jsonl").sessions["08c7f033-67e3-4de1-941d-07c4cfe171d2"]
    assert (patch.parent_native_id, patch.parent_kind) == ("8799deca-3405-4e04-9328-f76e07e48669", "fork")


def test_a_turn_cut_after_its_tool_call_is_open_and_the_name_is_the_id() -> None:
    batch = _read(CLI / "c423461a-7d2e-4b8a-9f0c-5e1d3a7b9c20.jsonl")
    assert list(batch.sessions) == ["c423461a-7d2e-4b8a-9f0c-5e1d3a7b9c20"]
    assert batch.sessions["c423461a-7d2e-4b8a-9f0c-5e1d3a7b9c20"].meta["last_turn"] == "open"


def test_tool_names_carry_over_to_results_read_later(tmp_path: Path) -> None:
    lines = (CLI / "3f0c2a9e-5b1d-4c7e-9a41-2d6f0b8e7c11.jsonl").read_bytes().splitlines(keepends=True)
    first, rest = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(b"".join(lines[:2]))
    rest.write_bytes(b"".join(lines[2:]))
    state = _read(first, sidecar=b"{}").state
    result = next(e for e in _read(rest, state=state, sidecar=b"{}").events if e.kind == "tool_result")
    assert result.tool_name == "shell"


def test_unknown_kinds_and_blocks_are_drift_and_bad_values_malformed(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\n".join([
        b'{"version":"v1","kind":"Checkpoint","data":{}}',
        b'{"version":"v1","kind":"AssistantMessage","data":{"message_id":"m","content":[{"kind":"image","data":1}]}}',
        b'{"version":"v1","kind":"Prompt","data":{"content":5,"meta":[]}}',
        b"not json"]) + b"\n")
    batch = _read(path, sidecar=b"[]")
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type", "malformed"]


def test_v3_session() -> None:
    batch = _read(HAND / "home/sessions/demo-repo/sess_7d3f9a20c1/messages.jsonl", "v3",
                  sidecar=(HAND / "home/sessions/demo-repo/sess_7d3f9a20c1/session.json").read_bytes())
    assert [(e.role, e.kind) for e in batch.events] == [
        ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"), ("system", "meta")]
    assert batch.sessions["sess_7d3f9a20c1"].model == "claude-sonnet-4.5"


def _database(tmp: Path) -> Path:
    db = tmp / "data" / "kiro-cli" / "data.sqlite3"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript((HAND / "db" / "kiro-cli-data.sql").read_text())
    conn.commit()
    conn.close()
    return db


def test_the_database_reads_both_tables_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    db = _database(tmp_path)
    before = sorted(p.name for p in db.parent.iterdir())
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, (kiro_cli.NAME,), env={"HOME": str(tmp_path / "home"),
                                                         "XDG_DATA_HOME": str(tmp_path / "data")})
    assert sorted(p.name for p in db.parent.iterdir()) == before
    assert session_of(bank, "0f6c1d2e-8a4b-4c3d-9e7f-1a2b3c4d5e6f")["cwd"] == "/home/dev/demo-repo"
    kinds = [(e["role"], e["kind"]) for e in events_of(bank, "0f6c1d2e-8a4b-4c3d-9e7f-1a2b3c4d5e6f")]
    assert kinds[-1] == ("system", "compaction") and ("tool", "tool_result") in kinds
    cancelled = [e for e in events_of(bank, "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d") if e["kind"] == "tool_result"]
    assert cancelled[0]["is_error"] and cancelled[0]["meta"] == {"cancelled": True}
    assert session_of(bank, "c0ffee00-1111-4222-8333-444455556666")["model"] == "claude-3.7-sonnet"


def test_a_conversation_rewritten_with_a_new_turn_adds_only_that_turn(tmp_path: Path) -> None:
    db = _database(tmp_path)
    bank = tmp_path / "bank.sqlite"
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    scan(tmp_path / "home", bank, (kiro_cli.NAME,), env=env)
    sid = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
    before = len(events_of(bank, sid))
    conn = sqlite3.connect(db)
    value = orjson.loads(conn.execute("SELECT value FROM conversations_v2 WHERE conversation_id = ?", (sid,)).fetchone()[0])
    value["history"].append({"user": {"content": {"Prompt": {"prompt": "Thanks"}}, "timestamp": "2026-05-18T08:01:00Z"},
                             "assistant": {"Response": {"message_id": "b-3", "content": "You're welcome."}},
                             "request_metadata": {"message_id": "n-3", "stream_end_timestamp_ms": 1779091265000}})
    conn.execute("UPDATE conversations_v2 SET value = ?, updated_at = 1779091265000 WHERE conversation_id = ?",
                 (orjson.dumps(value).decode(), sid))
    conn.commit()
    conn.close()
    scan(tmp_path / "home", bank, (kiro_cli.NAME,), env=env)
    texts = [e["text"] for e in events_of(bank, sid)]
    assert len(texts) == before + 2 and texts[-2:] == ["Thanks", "You're welcome."]


def test_a_row_whose_value_is_not_json_is_malformed() -> None:
    row = orjson.dumps({"table": "conversation", "row": {"key": "/x", "conversation_id": "c", "value": "{not json",
                                                         "created_at": 1, "updated_at": 2}})
    ref = SourceRef(PurePath("/d/data.sqlite3"), PurePath("/d"), "db")
    batch = kiro_cli.parse(ref, [Record(1, row)], {})
    assert [p.kind for p in batch.problems] == ["malformed"] and batch.events == []
