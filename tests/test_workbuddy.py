"""WorkBuddy: what the hand-written store must read as (fixtures/workbuddy/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "workbuddy"
MAIN, SUB = "5e0a1b2c-0000-4000-8000-0000000000w1", "5e0a1b2c-0000-4000-8000-0000000000w1:agent-7f3e"


def test_a_session_its_calls_and_its_subagent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".workbuddy").symlink_to(FIXTURES / "workbuddy" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    events = events_of(bank, MAIN)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text")]
    assert events[1]["text"] == "shell: gh run list --status failure --limit 20"
    assert events[1]["usage"] == {"in": 900, "out": 40, "cache_read": 512}
    assert events[2]["text"] == "3 failures: lint (2), e2e (1)" and events[2]["tool_call_id"] == "call_w1"
    assert events[5]["text"].startswith("Three failures") and events[5]["model"] == "hunyuan-t1"
    main = session_of(bank, MAIN)
    assert (main["cwd"], main["started_at"]) == ("/home/dev/src/demo-repo", "2026-09-21T14:13:20.000Z")
    child = session_of(bank, SUB)
    assert (child["parent_native_id"], child["parent_kind"]) == (MAIN, "subagent")
    assert [e["role"] for e in events_of(bank, SUB)] == ["system", "assistant"]  # the task comes from the agent


def test_unknown_items_are_drift() -> None:
    from harvester.parsers import workbuddy
    ref = SourceRef(PurePath("/h/.workbuddy/projects/p/s.jsonl"), PurePath("/h/.workbuddy"))
    lines = [{"type": "hologram"}, {"type": "message", "role": "oracle", "content": "x"}, {"type": "message"}]
    batch = workbuddy.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type", "unknown_type"]
