"""Poolside Agent CLI: what the hand-written trajectory must read as (fixtures/poolside/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "poolside"
SID = "standalone_019e658b-56c3-7cb2-a9d1-8af2ea649438"


def test_a_trajectory_its_calls_thoughts_and_usage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "state").mkdir(parents=True)
    (home / ".local" / "state" / "poolside").symlink_to(FIXTURES / "poolside" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    events = events_of(bank, SID)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"), ("assistant", "meta"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("assistant", "meta"), ("tool", "tool_result"),
        ("assistant", "text"), ("system", "meta")]
    assert events[2]["text"] == "shell: python -m cProfile -s cumtime jobs/export.py"
    assert events[4]["tool_call_id"] == "chatcmpl-tool-a1" and "export.py:51(fetch_row)" in events[4]["text"]
    assert events[5]["tool_input"] == {"path": "jobs/export.py", "content": "rows = fetch_all(batch=5000)"}
    assert events[7]["is_error"] and events[7]["meta"]["error_kind"] == "approval_denied"
    assert [(e["usage"], e["model"]) for e in events if e["usage"]] == [  # each call's model, paired by step_id
        ({"in": 4200, "out": 96, "cache_read": 3800}, "poolside/laguna-m.1"),
        ({"in": 4700, "out": 140, "cache_read": 4200, "cache_write": 300}, "poolside/laguna-xs.2")]
    session = session_of(bank, SID)
    assert (session["cwd"], session["title"]) == ("/home/dev/src/demo-repo", "Why is the nightly export job slow?")
    assert session["started_at"] == "2026-09-21T14:13:20.089Z"  # -04:00 in the file


def test_unknown_events_are_drift() -> None:
    from harvester.parsers import poolside
    ref = SourceRef(PurePath("/h/poolside/trajectories/trajectory-x.ndjson"), PurePath("/h/poolside"))
    lines = [{"id": "1", "type": "assistant_message.delta", "assistant_message_delta": {"text": "x"}},
             {"id": "2", "type": "thought.start", "thought_start": {}}, {"id": "3"}]
    batch = poolside.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type"]  # thought.start only marks a start
