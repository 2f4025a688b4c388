"""Amp: what the fixtures must read as (fixtures/amp/hand/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import amp
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, shapes

HAND = FIXTURES / "amp" / "hand"
A = "T-019b9d03-62e3-772f-9780-3e637f90eaec"
B = "T-019b9e10-1a2b-7c3d-8e4f-5a6b7c8d9e02"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("amp")
    home = tmp / "home"
    shutil.copytree(HAND, home / ".local" / "share" / "amp")
    report = scan(home, tmp / "bank.sqlite", (amp.NAME,), env={"HOME": str(home)})
    assert report.harnesses[amp.NAME].problems == 0
    return tmp / "bank.sqlite"


def test_roots_follow_xdg_data_home() -> None:
    assert amp.roots({}, Path("/h")) == [Path("/h/.local/share/amp")]
    assert amp.roots({"XDG_DATA_HOME": "/d", "AMP_DATA_DIR": "/x"}, Path("/h")) == [Path("/d/amp")]


def test_thread_with_tools(bank: Path) -> None:
    events = events_of(bank, A)
    assert shapes(events) == [("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"),
                              ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
                              ("assistant", "text")]
    assert [e["is_error"] for e in events if e["kind"] == "tool_result"] == [False, True]
    assert events[3]["text"] == "def parse_csv(text): ..."
    session = session_of(bank, A)
    assert session["cwd"] == "/home/dev/src/demo-repo" and session["title"] == "Fix the empty-line bug"
    assert (session["branch"], session["commit_sha"]) == ("main", "abc1234")
    assert session["meta"]["last_turn"] == "complete"


def test_running_answer_and_cancelled_tool(bank: Path) -> None:
    events = events_of(bank, B)
    assert events[3]["text"] == "[cancelled]" and events[3]["is_error"]
    session = session_of(bank, B)
    assert session["title"] == "Run the linter." and session["meta"]["last_turn"] == "open"


def test_running_tool_has_no_result_yet_and_unknown_blocks_drift() -> None:
    ref = SourceRef(PurePath("/h/.local/share/amp/threads/T-x.json"), PurePath("/h/.local/share/amp"))
    doc = {"messages": [
        {"role": "user", "messageId": 0, "content": [{"type": "tool_result", "toolUseID": "t", "run": {"status": "in-progress"}}]},
        {"role": "assistant", "messageId": 1, "content": [{"type": "server_tool_use"}]},
        {"role": "system", "messageId": 2, "content": []},
    ]}
    batch = amp.parse(ref, [Record(1, orjson.dumps(doc))], {})
    assert batch.events == []
    assert sorted(p.detail for p in batch.problems) == ["content block type='server_tool_use'", "message role='system'"]
