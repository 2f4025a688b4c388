"""Crush: what the hand-written database must read as (fixtures/crush/hand/README.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import crush
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

HAND = FIXTURES / "crush" / "hand"
MAIN, KILLED, SUB = "6a2f0c1e-1111-4a4a-9b9b-000000000001", "6a2f0c1e-1111-4a4a-9b9b-000000000002", "m2$$tc2"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("crush")
    project, home = tmp / "demo-repo", tmp / "home"
    (project / ".crush").mkdir(parents=True)
    home.mkdir()
    conn = sqlite3.connect(project / ".crush" / "crush.db")
    conn.executescript((HAND / ".crush" / "crush.sql").read_text())
    conn.close()
    # Found the way Crush lists its projects: projects.json in its global data folder.
    (home / ".local" / "share" / "crush").mkdir(parents=True)
    (home / ".local" / "share" / "crush" / "projects.json").write_bytes(orjson.dumps(
        {"projects": [{"path": str(project), "data_dir": str(project / ".crush"),
                       "last_accessed": "2026-08-01T10:00:00Z"}]}))
    report = scan(home, tmp / "bank.sqlite", (crush.NAME,), env={"HOME": str(home)})
    assert report.harnesses[crush.NAME].problems == 0
    return tmp / "bank.sqlite", project


def test_roots_come_from_projects_json() -> None:
    home = Path("/home/u")
    assert crush.global_data({}, home, "linux") == home / ".local/share/crush"
    assert crush.global_data({"XDG_DATA_HOME": "/x"}, home, "linux") == Path("/x/crush")
    assert crush.global_data({"CRUSH_GLOBAL_DATA": "/g"}, home, "linux") == Path("/g")
    assert crush.global_data({"LOCALAPPDATA": "C:/L"}, home, "win32") == Path("C:/L/crush")
    assert crush.roots({}, Path("/nonexistent")) == []


def test_the_main_session_reads_every_part(bank: tuple[Path, Path]) -> None:
    path, project = bank
    s = session_of(path, MAIN)
    assert (s["cwd"], s["title"], s["model"]) == (str(project), "Fix flaky test", "claude-sonnet-4")
    meta = orjson.loads(s["meta"]) if isinstance(s["meta"], str) else s["meta"]
    assert meta["last_turn"] == "aborted" and meta["summary_message_id"] == "m9"
    kinds = [(e["role"], e["kind"]) for e in events_of(path, MAIN)]
    assert kinds[:7] == [("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
                         ("assistant", "tool_call"), ("assistant", "tool_call"), ("tool", "tool_result"),
                         ("tool", "tool_result")]
    assert ("system", "compaction") in kinds
    by_uid = {e["uid"]: e for e in events_of(path, MAIN)}
    assert by_uid["m7:0"]["is_error"] and by_uid["m3:0"]["tool_call_id"] == "tc1"
    assert by_uid["m8:0"]["text"] == "! git status\nclean"


def test_subagent_linked_title_session_skipped_killed_open(bank: tuple[Path, Path]) -> None:
    path, _ = bank
    sub = session_of(path, SUB)
    assert (sub["parent_native_id"], sub["parent_kind"]) == (MAIN, "subagent")
    killed = session_of(path, KILLED)
    assert (orjson.loads(killed["meta"]) if isinstance(killed["meta"], str) else killed["meta"])["last_turn"] == "open"
    assert not [e for e in events_of(path) if "Generate a title" in e["text"]]


def test_unknown_parts_roles_and_tables_are_drift() -> None:
    ref = SourceRef(PurePath("/p/.crush/crush.db"), PurePath("/p"))
    rows = [{"table": "message", "row": {"id": "x", "session_id": "s", "role": "user", "created_at": 1,
                                         "parts": '[{"type": "hologram", "data": {}}]'}},
            {"table": "message", "row": {"id": "y", "session_id": "s", "role": "narrator", "parts": "[]"}},
            {"table": "nope", "row": {}}]
    batch = crush.parse(ref, [Record(n, orjson.dumps(r)) for n, r in enumerate(rows, 1)], {})
    assert sorted(p.detail for p in batch.problems) == ["part type='hologram'", "role='narrator'", "table='nope'"]
