"""opencode, the Go original: what the hand-written database must read as (fixtures/opencode_go/hand/README.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from tests.helpers import FIXTURES, events_of, scan, session_of

HAND = FIXTURES / "opencode_go" / "hand"
MAIN, SUB = "b3f1c2d4-0001-4e5f-8a9b-000000000001", "toolu_01Agent"


def _meta(session: dict) -> dict:
    return orjson.loads(session["meta"]) if isinstance(session["meta"], str) else session["meta"]


def _build(project: Path, statements: str) -> None:
    (project / ".opencode").mkdir(parents=True)
    conn = sqlite3.connect(project / ".opencode" / "opencode.db")
    conn.executescript(statements)
    conn.close()


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("opencode_go")
    project, home = tmp / "demo-repo", tmp / "home"
    home.mkdir()
    _build(project, (HAND / ".opencode" / "opencode.sql").read_text())
    # Found as Aider's and Crush's stores are: the project is a configured root.
    report = scan(home, tmp / "bank.sqlite", ("opencode-go",), env={"HOME": str(home)},
                  extra_roots={"opencode-go": [project]})
    assert report.harnesses["opencode-go"].problems == 0
    return tmp / "bank.sqlite", project


def test_the_main_session_reads_every_part(bank: tuple[Path, Path]) -> None:
    path, project = bank
    s = session_of(path, MAIN)
    assert (s["harness"], s["cwd"], s["title"], s["model"]) == (
        "opencode-go", str(project), "Retry budget in the HTTP client", "claude-3.7-sonnet")
    assert _meta(s)["summary_message_id"] == "m6" and _meta(s)["last_turn"] == "complete"
    events = events_of(path, MAIN)
    assert [(e["role"], e["kind"]) for e in events][:8] == [
        ("user", "text"), ("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("assistant", "tool_call"), ("tool", "tool_result"), ("tool", "tool_result")]
    by_uid = {e["uid"]: e for e in events}
    assert by_uid["m1:0"]["ts"] == "2025-06-16T08:00:00.000Z"
    assert by_uid["m2:2"]["tool_name"] == "view" and by_uid["m2:2"]["tool_call_id"] == "toolu_01View"
    assert "/home/dev/src/demo-repo/client.py" in by_uid["m2:2"]["text"]
    assert "00041|     if resp.status == 200: break" in by_uid["m3:0"]["text"]
    assert by_uid["m6:0"]["text"].startswith("Summary: fetch_all loops on 429")


def test_the_agent_tools_session_is_a_subagent_and_the_title_session_is_skipped(bank: tuple[Path, Path]) -> None:
    path, _ = bank
    sub = session_of(path, SUB)
    assert (sub["parent_native_id"], sub["parent_kind"]) == (MAIN, "subagent")
    assert any("sync.py" in e["text"] and e["kind"] == "tool_result" for e in events_of(path, SUB))
    assert not [e for e in events_of(path) if "Generate a title" in e["text"]]


def test_a_database_from_before_the_summary_migration_is_read(tmp_path: Path) -> None:
    """opencode before 20250515105448 made no summary_message_id column: a store it last opened lacks it."""
    schema = (HAND / ".opencode" / "opencode.sql").read_text()
    schema = schema[:schema.index("ALTER TABLE sessions ADD COLUMN summary_message_id")]
    rows = ("INSERT INTO sessions (id, title, updated_at, created_at) VALUES ('s-old', 'Old one', 1746000000, "
            "1746000000);\nINSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at) VALUES "
            "('o1', 's-old', 'user', '[{\"type\":\"text\",\"data\":{\"text\":\"an April question\"}}]', '', "
            "1746000000, 1746000000);\n")
    project, home = tmp_path / "old-repo", tmp_path / "home"
    home.mkdir()
    _build(project, schema + rows)
    report = scan(home, tmp_path / "bank.sqlite", ("opencode-go",), env={"HOME": str(home)},
                  extra_roots={"opencode-go": [project]})
    assert report.harnesses["opencode-go"].problems == 0
    assert [e["text"] for e in events_of(tmp_path / "bank.sqlite", "s-old")] == ["an April question"]


def test_the_typescript_opencodes_project_folder_is_not_read(tmp_path: Path) -> None:
    """The TypeScript opencode keeps its project configuration in ``.opencode/`` too, and no database there."""
    project, home = tmp_path / "ts-repo", tmp_path / "home"
    (project / ".opencode" / "agent").mkdir(parents=True)
    (project / ".opencode" / "opencode.json").write_text("{}")
    home.mkdir()
    report = scan(home, tmp_path / "bank.sqlite", ("opencode-go",), env={"HOME": str(home)},
                  extra_roots={"opencode-go": [project]})
    assert report.harnesses["opencode-go"].problems == 0
    assert events_of(tmp_path / "bank.sqlite") == []
