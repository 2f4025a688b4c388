"""Command Code: what the hand-written store must read as (fixtures/commandcode/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "commandcode"
SESSION = "6a1c2d3e-0000-4000-8000-0000000000c1"


def test_a_session_with_reasoning_a_call_and_its_result(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".commandcode").symlink_to(FIXTURES / "commandcode" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    events = events_of(bank, SESSION)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text")]
    assert events[3]["text"] == "read_file: package.json" and events[4]["tool_call_id"] == "tc_1"
    assert events[4]["text"].startswith('{"scripts"')
    session = session_of(bank, SESSION)
    assert (session["cwd"], session["title"], session["branch"]) == ("/home/dev/src/demo-repo", "Duplicate build key",
                                                                     "main")


def test_unknown_roles_and_parts_are_drift() -> None:
    from harvester.parsers import commandcode
    ref = SourceRef(PurePath("/h/.commandcode/projects/p/s.jsonl"), PurePath("/h/.commandcode"))
    lines = [{"sessionId": "s", "role": "narrator", "content": "x"},
             {"sessionId": "s", "role": "assistant", "content": [{"type": "hologram"}]}]
    batch = commandcode.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type"]
