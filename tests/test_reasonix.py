"""Reasonix: what the hand-written store must read as (fixtures/reasonix/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers import reasonix
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "reasonix"
GLOBAL, PROJECT = "20260921-141320.000000000-deepseek-chat", "20260921-150000.000000000-deepseek-reasoner"
SUB, ARCHIVED = "sa_20260921_141500_000000000_9f3c2a", "20260901-090000.000000000-deepseek-chat"


def test_every_layout_and_its_texts(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    report = scan(tmp_path / "home", bank, (NAME,), env={"REASONIX_HOME": str(FIXTURES / "reasonix" / "hand")})
    assert report.harnesses[NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {GLOBAL, PROJECT, SUB, ARCHIVED}  # not the event log
    events = events_of(bank, GLOBAL)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "text"), ("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text"), ("assistant", "tool_call"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[2]["text"].startswith("The hang is probably") and events[3]["text"] == "read_file: docker-compose.test.yml"
    assert events[4]["tool_call_id"] == "call_r1" and events[4]["text"].startswith("services:")
    assert events[7]["tool_input"] == {"task": "Find every test that waits on the db healthcheck"}
    main = session_of(bank, GLOBAL)
    assert (main["title"], main["cwd"], main["model"], main["started_at"]) == (
        "Integration suite hangs", "/home/dev/src/demo-repo", "deepseek-chat", "2026-09-21T06:13:20.500Z")
    project = events_of(bank, PROJECT)
    assert [e["text"] for e in project][-2:] == ["continue", "continue"]  # identical lines, both kept
    assert session_of(bank, PROJECT)["title"] == "Lower the db healthcheck interval to 2s."
    assert [e["role"] for e in events_of(bank, SUB)] == ["system", "assistant", "tool", "assistant"]
    assert [e["text"] for e in events_of(bank, ARCHIVED)][1] == "1.4 adds streaming exports and drops Python 3.9."


def test_the_event_log_is_not_a_source() -> None:
    """Not read, and not copied into the raw archive as if it were a session (``SourceSpec.ignore`` globs)."""
    from harvester.capture.sources import discover
    from harvester.parsers import HARNESSES
    found = [f.path.name for f in discover(HARNESSES[NAME], [FIXTURES / "reasonix" / "hand"])]
    assert len(found) == 4 and not [name for name in found if name.endswith(".events.jsonl")]


def test_the_state_home_moves_the_root(tmp_path: Path) -> None:
    assert reasonix.roots_for("linux", {}, tmp_path) == [tmp_path / ".reasonix"]
    assert reasonix.roots_for("linux", {"REASONIX_HOME": "/h", "REASONIX_STATE_HOME": "/s"}, tmp_path) == [Path("/s")]
    assert reasonix.roots_for("win32", {"APPDATA": "/a"}, tmp_path) == [Path("/a/reasonix")]


def test_call_spellings_and_unknown_roles() -> None:
    ref = SourceRef(PurePath("/h/.reasonix/sessions/s.jsonl"), PurePath("/h/.reasonix"))
    lines = [{"role": "assistant", "tool_calls": [{"ID": "c1", "Name": "bash", "Arguments": "{\"command\": \"ls\"}"},
                                                  {"id": "c2", "function": {"name": "grep", "arguments": "{}"}}]},
             {"role": "oracle", "content": "x"}, {"content": "no role"}]
    batch = reasonix.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [(e.tool_call_id, e.tool_name, e.text) for e in batch.events] == [("c1", "bash", "bash: ls"), ("c2", "grep", "grep")]
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type"]
