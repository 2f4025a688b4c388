"""DeepSeek TUI: what the fixtures must read as (fixtures/deepseek_tui/hand/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import deepseek_tui
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "deepseek_tui" / "hand"
A = "5b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d01"  # every block kind
B = "6c2d3e4f-5a6b-4c7d-9e8f-0a1b2c3d4e02"  # fork of A, its last prompt unanswered
C = "7d3e4f5a-6b7c-4d8e-af90-1b2c3d4e5f03"  # compacted and truncated
REPO = "/home/dev/src/demo-repo"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("deepseek_tui")
    home = tmp / "home"
    shutil.copytree(HAND, home / ".deepseek")
    report = scan(home, tmp / "bank.sqlite", (deepseek_tui.NAME,), env={"HOME": str(home)})
    assert report.harnesses[deepseek_tui.NAME].problems == 0
    return tmp / "bank.sqlite"


def _parse(doc: dict) -> tuple[list, list]:
    ref = SourceRef(PurePath("/h/.deepseek/sessions/x.json"), PurePath("/h/.deepseek"))
    batch = deepseek_tui.parse(ref, [Record(1, orjson.dumps(doc))], {})
    return batch.events, batch.problems


def test_roots_are_the_home_folders() -> None:
    assert deepseek_tui.roots({"DEEPSEEK_HOME": "/x"}, Path("/h")) == [Path("/h/.deepseek"), Path("/h/.codewhale")]


def test_checkpoints_and_queue_are_no_sessions(bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(bank)} == {A, B, C}


def test_every_block_kind(bank: Path) -> None:
    events = events_of(bank, A)
    assert shapes(events) == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text"),
        ("user", "text"), ("assistant", "text"),
    ]
    assert events[0]["text"] == "Why does parse_csv fail on empty lines?"  # <turn_meta> stripped
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [r["is_error"] for r in results] == [False, True, False]
    assert results[1]["tool_name"] == "exec_shell"
    session = session_of(bank, A)
    assert session["cwd"] == REPO and session["model"] == "deepseek-v4-pro"
    assert session["title"] == "Why does parse_csv fail on empty lines?"


def test_fork_keeps_the_copied_uids(bank: Path) -> None:
    parent, fork = events_of(bank, A), events_of(bank, B)
    assert [e["uid"] for e in fork[: len(parent)]] == [e["uid"] for e in parent]
    session = session_of(bank, B)
    assert session["parent_native_id"] == A and session["title"] == "csv fix, second try"  # /rename
    assert session["meta"]["last_turn"] == "open"


def test_compaction_and_truncation(bank: Path) -> None:
    events = events_of(bank, C)
    assert events[0]["kind"] == "compaction" and "Conversation Summary" in events[0]["text"]
    assert session_of(bank, C)["meta"]["truncated"] == "112"


def test_uids_follow_the_message_not_its_position() -> None:
    one = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    two = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    doc = {"metadata": {"id": "s1"}, "messages": [one, two]}
    before, _ = _parse(doc)
    after, _ = _parse({**doc, "messages": [two]})  # the oldest message dropped
    assert after[0].uid == before[1].uid


def test_unknown_shapes_are_drift() -> None:
    doc = {"metadata": {"id": "s1"}, "messages": [
        {"role": "system", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": [{"type": "image", "source": {}}]},
    ], "extra": 1}
    _, problems = _parse(doc)
    assert sorted(p.detail for p in problems) == ["content block type='image'", "message role='system'",
                                                   "session key='extra'"]
    assert all(p.kind == "unknown_type" for p in problems)
    _, problems = _parse({"sessions": []})
    assert [p.kind for p in problems] == ["unknown_type"]
