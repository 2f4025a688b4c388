"""Omnigent: chat.db as Omnigent 0.19.1 writes it, and as it was between 2026-07-10 and 07-20
(fixtures/omnigent/SOURCE.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "omnigent"
ROOT, KID = "1f3c5a7e9b0d4c2e8a6f1b3d5e7f9a0b", "2a4c6e8f0b1d4e3f9a7c5e3d1f0b9a8c"
OLDER = "5b7d9f1a3c5e4a6b8d0f2a4c6e8a0b1c"


def _scan(tmp_path: Path, tree: str) -> Path:
    data = tmp_path / "omnigent"
    data.mkdir()
    conn = sqlite3.connect(data / "chat.db")
    conn.executescript((FIXTURES / "omnigent" / tree / "chat.sql").read_text())
    conn.commit()
    conn.close()
    home = tmp_path / "home"
    home.mkdir()
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home), "OMNIGENT_DATA_DIR": str(data)})
    assert report.harnesses[NAME].problems == 0
    assert sorted(p.name for p in data.iterdir()) == ["chat.db"]  # nothing written beside Omnigent's database
    return bank


def test_every_item_kind_of_the_current_schema(tmp_path: Path) -> None:
    bank = _scan(tmp_path, "hand")
    events = events_of(bank, ROOT)
    by_text = {e["text"]: e for e in events}
    assert by_text["The login test fails one run in ten; find out why."]["role"] == "user"
    skill = by_text['<skill name="bulletproof">Reproduce before you fix.</skill>']
    assert (skill["role"], skill["meta"]["injected"]) == ("system", True)  # is_meta: Omnigent's, not the user's
    assert by_text["A race between the session cookie and the redirect is likely."]["kind"] == "thinking"
    call = by_text["sys_os_shell: pytest tests/test_login.py -x --count 20"]
    assert (call["tool_call_id"], call["tool_input"]) == ("toolu_om1", {"command": "pytest tests/test_login.py -x --count 20"})
    result = next(e for e in events if e["kind"] == "tool_result" and e["tool_call_id"] == "toolu_om1")
    assert result["text"].startswith("FAILED tests/test_login.py::test_redirect")
    for text in ("/bulletproof login test", "$ git diff --stat", " app/auth.py | 4 ++--",
                 "routed to claude-opus-4-8: A multi-file fix: the stronger model.",
                 "error: the test runner timed out after 300 s",
                 "The cookie is set after the redirect (app/auth.py:41); moving it before fixes the flake."):
        assert text in by_text, text
    assert by_text["Found the race (cookie set after redirect) and fixed app/auth.py."]["kind"] == "compaction"
    totals = events[-1]  # the session's usage (zstd-framed in session_usage), after every item
    assert (totals["usage"], totals["model"]) == ({"in": 18400, "out": 1260}, "claude-opus-4-8")
    session = session_of(bank, ROOT)
    assert (session["cwd"], session["branch"], session["title"], session["model"]) == (
        "/home/dev/src/demo-repo", "fix/login-flake", "Fix the flaky login test", "claude-opus-4-8")
    assert session["started_at"] == "2026-09-21T14:13:20.000Z"
    child = session_of(bank, KID)
    assert (child["parent_native_id"], child["parent_kind"], child["title"]) == (ROOT, "subagent", "scout")
    assert [(e["role"], e["kind"]) for e in events_of(bank, KID)] == [
        ("system", "text"), ("assistant", "text"), ("system", "meta")]  # the task comes from the parent


def test_the_model_override_of_july_2026(tmp_path: Path) -> None:
    bank = _scan(tmp_path, "hand-agentconfig")
    assert session_of(bank, OLDER)["model"] == "gpt-5.5"  # agent_configuration, its conversation_id as text
    texts = [e["text"] for e in events_of(bank, OLDER)]
    assert "Resolved 42 packages\n118 passed" in texts and "Lockfile bumped; 118 tests pass." in texts


def test_unknown_items_and_tables_are_drift() -> None:
    from harvester.parsers import omnigent
    ref = SourceRef(PurePath("/h/.omnigent/chat.db"), PurePath("/h/.omnigent"), "db")

    def item(kind: object, data: dict) -> dict:
        return {"table": "item", "row": {"workspace_id": 0, "conversation_id": "c1", "id": f"i{kind}", "position": 0,
                                          "type": kind, "data": orjson.dumps(data).decode(), "created_at": 1}}

    rows = [item(12, {}), item("hologram", {}), item(1, {"role": "oracle", "content": []}),
            {"table": "scheduled_tasks", "row": {}}]
    batch = omnigent.parse(ref, [Record(i + 1, orjson.dumps(r)) for i, r in enumerate(rows)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"] * 4
