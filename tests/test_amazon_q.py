"""Amazon Q Developer CLI: its data.sqlite3, read by the Kiro CLI module (fixtures/amazon_q/SOURCE.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson

from harvester.capture.liveness import _is_agent
from harvester.parsers import HARNESSES, kiro_cli
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

SQL = FIXTURES / "amazon_q" / "hand" / "amazon-q-data.sql"
KIRO_SQL = FIXTURES / "kiro_cli" / "hand" / "db" / "kiro-cli-data.sql"
CURRENT, OLD, OPEN = ("a1b2c3d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "b2c3d4e5-6f70-4b8c-9d0e-1f2a3b4c5d6e",
                      "c3d4e5f6-7081-4c9d-8e1f-2a3b4c5d6e7f")


def _built(sql: Path, db: Path) -> Path:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(sql.read_text())
    conn.commit()
    conn.close()
    return db


def _meta(session: dict) -> dict:
    meta = session.get("meta")
    return orjson.loads(meta) if isinstance(meta, str | bytes) else meta or {}


def test_roots_are_amazon_q_under_the_data_local_dir_and_nothing_moves_them() -> None:
    home = Path("/home/dev")
    assert kiro_cli.amazon_q_roots_for("linux", {}, home) == [home / ".local/share/amazon-q"]
    assert kiro_cli.amazon_q_roots_for("linux", {"XDG_DATA_HOME": "/d"}, home) == [Path("/d/amazon-q")]
    assert kiro_cli.amazon_q_roots_for("linux", {"XDG_DATA_HOME": "rel"}, home) == [home / ".local/share/amazon-q"]
    # Q_CLI_DATA_DIR is the agent crate's, not the shipped chat's database path (SOURCE.md).
    assert kiro_cli.amazon_q_roots_for("linux", {"Q_CLI_DATA_DIR": "/q"}, home) == [home / ".local/share/amazon-q"]
    assert kiro_cli.amazon_q_roots_for("darwin", {}, home) == [home / "Library/Application Support/amazon-q"]
    assert kiro_cli.amazon_q_roots_for("win32", {"LOCALAPPDATA": "C:/L", "APPDATA": "C:/R"}, home) == [
        Path("C:/L/amazon-q")]
    for platform in ("linux", "darwin", "win32"):  # never one of Kiro CLI's folders
        env = {"XDG_DATA_HOME": "/d", "LOCALAPPDATA": "C:/L", "APPDATA": "C:/R"}
        assert not set(kiro_cli.amazon_q_roots_for(platform, env, home)) & set(kiro_cli.roots_for(platform, env, home))


def test_the_harness_is_registered_with_its_process_names() -> None:
    harness = HARNESSES["amazon-q"]
    assert harness.processes == kiro_cli.AMAZON_Q_PROCESSES
    assert [s.pattern for s in harness.sources] == ["data.sqlite3"]
    assert _is_agent("qchat", ["/usr/bin/qchat", "chat"], harness.processes)
    assert _is_agent("q", ["q", "chat", "--resume"], harness.processes)
    assert not _is_agent("bash", ["bash", "-c", "grep q"], harness.processes)


def test_the_database_reads_every_shape_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = _built(SQL, home / ".local/share/amazon-q/data.sqlite3")
    before = sorted(p.name for p in db.parent.iterdir())
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("amazon-q",), env={"HOME": str(home)})
    assert sorted(p.name for p in db.parent.iterdir()) == before
    assert {s["native_id"] for s in sessions_of(bank)} == {CURRENT, OLD, OPEN}

    current = session_of(bank, CURRENT)
    assert (current["cwd"], current["model"], _meta(current)["last_turn"]) == (
        "/home/dev/demo-repo", "claude-sonnet-4", "complete")
    events = events_of(bank, CURRENT)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text"), ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text"), ("system", "compaction")]
    assert events[0]["ts"] == "2026-03-10T08:00:00.000Z"
    assert '"stdout":"src/lib.rs\\nsrc/main.rs\\n"' in events[3]["text"] and not events[3]["is_error"]
    assert events[7]["is_error"]  # status "Error": README.md could not be read

    # Amazon Q 1.10-1.12: (user, assistant) pairs, the bare-string summary, the old `model` field.
    old = session_of(bank, OLD)
    assert (old["cwd"], old["model"]) == ("/home/dev/old-project", "claude-3.7-sonnet")
    kinds = [(e["role"], e["kind"], e["text"]) for e in events_of(bank, OLD)]
    assert kinds[0] == ("user", "text", "What does this project do?")
    assert ("system", "compaction", "The user asked what the photo-renaming tool does.") in kinds
    cancelled = [e for e in events_of(bank, OLD) if e["kind"] == "tool_result"]
    assert cancelled[0]["is_error"] and cancelled[0]["meta"] == {"cancelled": True}

    waiting = session_of(bank, OPEN)  # the last turn asked for a tool and was never answered
    assert _meta(waiting)["last_turn"] == "open"
    assert [e["kind"] for e in events_of(bank, OPEN)][-1] == "tool_call"


def test_kiro_cli_and_amazon_q_in_one_home_each_read_only_their_own_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _built(SQL, home / ".local/share/amazon-q/data.sqlite3")
    _built(KIRO_SQL, home / ".local/share/kiro-cli/data.sqlite3")
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("amazon-q", "kiro-cli"), env={"HOME": str(home)})
    by_harness: dict[str, set[str]] = {}
    for session in sessions_of(bank):
        by_harness.setdefault(session["harness"], set()).add(session["native_id"])
    assert by_harness["amazon-q"] == {CURRENT, OLD, OPEN}
    assert not by_harness["amazon-q"] & by_harness["kiro-cli"]
    conn = sqlite3.connect(bank)
    sources = dict(conn.execute("SELECT path, harness FROM sources").fetchall())
    conn.close()
    assert sources[str(home / ".local/share/amazon-q/data.sqlite3")] == "amazon-q"
    assert sources[str(home / ".local/share/kiro-cli/data.sqlite3")] == "kiro-cli"


def test_a_new_conversation_in_the_same_directory_replaces_the_row_and_the_bank_keeps_both(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = _built(SQL, home / ".local/share/amazon-q/data.sqlite3")
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("amazon-q",), env={"HOME": str(home)})
    before = len(events_of(bank, OPEN))
    fresh = {"conversation_id": "d4e5f6a7-0000-4000-8000-000000000004", "history": [
        {"user": {"content": {"Prompt": {"prompt": "Start over"}}, "timestamp": "2026-04-03T10:00:00Z"},
         "assistant": {"Response": {"message_id": "asst-new", "content": "Fresh start."}},
         "request_metadata": {"message_id": "req-new", "stream_end_timestamp_ms": 1775210405000}}]}
    conn = sqlite3.connect(db)
    conn.execute("INSERT OR REPLACE INTO conversations (key, value) VALUES (?, ?)",
                 ("/home/dev/scratch", orjson.dumps(fresh).decode()))
    conn.commit()
    conn.close()
    scan(home, bank, ("amazon-q",), env={"HOME": str(home)})
    assert len(events_of(bank, OPEN)) == before  # the replaced conversation stays as it was
    assert [e["text"] for e in events_of(bank, fresh["conversation_id"])] == ["Start over", "Fresh start."]
    assert session_of(bank, fresh["conversation_id"])["cwd"] == "/home/dev/scratch"


def _row(value: object) -> Record:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return Record(1, orjson.dumps({"table": "legacy", "row": {"row_id": 1, "key": "/w", "value": text}}))


def test_unknown_kinds_are_drift_and_a_value_that_is_not_json_is_malformed() -> None:
    ref = SourceRef(PurePath("/d/amazon-q/data.sqlite3"), PurePath("/d/amazon-q"), "db")
    value = {"conversation_id": "c", "history": [
        [{"content": {"Steering": {"prompt": "x"}}}, {"Reasoning": {"content": "y"}}],
        {"user": {"content": {"ToolUseResults": {"tool_use_results": [
            {"tool_use_id": "t", "content": [{"Image": {}}], "status": "Success"}]}}},
         "assistant": {"Response": {"message_id": "m", "content": "ok"}}},
        "not an entry"]}
    batch = kiro_cli.parse(ref, [_row(value)], {})
    assert [(p.kind, p.detail) for p in batch.problems] == [
        ("unknown_type", "user content 'Steering'"), ("unknown_type", "assistant message 'Reasoning'"),
        ("unknown_type", "tool result block other than Text or Json"),
        ("malformed", "history entry 2 is not an object")]
    assert [e.text for e in batch.events] == ["", "ok"]
    bad = kiro_cli.parse(ref, [_row("{not json")], {})
    assert [p.kind for p in bad.problems] == ["malformed"] and bad.events == []
