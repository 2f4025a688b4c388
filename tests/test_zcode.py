"""ZCode: what the fixtures must read as (fixtures/zcode/hand/README.md); read by harvester/parsers/opencode.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harvester.parsers import opencode_stores
from tests.helpers import FIXTURES, events_of, scan, session_of, shapes

HAND = FIXTURES / "zcode" / "hand"
A, B = "sess_019f5575a1", "sess_019f5575b2"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("zcode")
    home = tmp / "home"
    db = home / ".zcode" / "cli" / "db"
    db.mkdir(parents=True)
    conn = sqlite3.connect(db / "db.sqlite")
    conn.executescript((HAND / "db.sql").read_text())
    conn.commit()
    conn.close()
    report = scan(home, tmp / "bank.sqlite", (opencode_stores.ZCODE_NAME,), env={"HOME": str(home)})
    assert report.harnesses[opencode_stores.ZCODE_NAME].problems == 0
    return tmp / "bank.sqlite"


def test_roots_are_zcodes_own() -> None:
    assert opencode_stores.zcode_roots({"OPENCODE_DB": "/x/o.db", "XDG_DATA_HOME": "/x"}, Path("/h")) == [
        Path("/h/.zcode/cli/db")]


def test_anthropic_shaped_parts(bank: Path) -> None:
    events = events_of(bank, A)
    assert shapes(events) == [("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
                              ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[3]["text"] == "Read: auth.go" and events[4]["tool_call_id"] == events[3]["tool_call_id"]
    session = session_of(bank, A)
    assert session["cwd"] == "/home/dev/src/demo-repo" and session["model"] == "glm-5.1"
    assert session["title"] == "Inspect the login flow"


def test_opencode_shaped_parts(bank: Path) -> None:
    events = events_of(bank, B)
    assert shapes(events) == [("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"),
                              ("tool", "tool_result")]
    assert session_of(bank, B)["title"] == "Run the tests."  # no title: the first prompt


def test_times_written_as_iso_text_read_every_part(tmp_path: Path) -> None:
    """fixtures/zcode/hand-isotime: agentsview's schema and values (times as ISO text). Before, every part of
    such a store was refused (its time is no number) and the session read empty."""
    home = tmp_path / "home"
    db = home / ".zcode" / "cli" / "db"
    db.mkdir(parents=True)
    conn = sqlite3.connect(db / "db.sqlite")
    conn.executescript((FIXTURES / "zcode" / "hand-isotime" / "db.sql").read_text())
    conn.commit()
    conn.close()
    report = scan(home, tmp_path / "bank.sqlite", (opencode_stores.ZCODE_NAME,), env={"HOME": str(home)})
    assert report.harnesses[opencode_stores.ZCODE_NAME].problems == 0
    events = events_of(tmp_path / "bank.sqlite", "sess_019f5575c3")
    assert shapes(events) == [("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"),
                              ("tool", "tool_result"), ("assistant", "text")]
    assert events[-1]["text"].startswith("The session cookie")
    session = session_of(tmp_path / "bank.sqlite", "sess_019f5575c3")
    assert (session["started_at"], session["cwd"]) == ("2026-07-06T13:00:01.000Z", "/home/dev/src/demo-repo")
