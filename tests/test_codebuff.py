"""Codebuff: what the fixtures must read as (fixtures/codebuff/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.capture.sources import discover
from harvester.parsers import codebuff
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, shapes

HAND = FIXTURES / "codebuff" / "hand"
NAME = codebuff.NAME
A = "demo-repo:2026-07-15T15-04-00.000Z"  # every block kind, an error message
B = "other-repo:2026-07-16T08-00-00.000Z"  # Freebuff template, wall-clock times, an image
HARNESS = Harness(NAME, codebuff.roots, codebuff.SOURCES, codebuff.parse, "Codebuff", codebuff.PROCESSES)


def _bank(tmp: Path) -> Path:
    home, bank = tmp / "home", tmp / "bank.sqlite"
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "manicode").symlink_to(HAND, target_is_directory=True)
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_roots_and_sources() -> None:
    assert codebuff.roots({}, Path("/home/u")) == [Path("/home/u/.config/manicode/projects")]
    found = sorted(str(f.path.relative_to(HAND / "projects")) for f in discover(HARNESS, [HAND / "projects"]))
    assert found == ["demo-repo/chats/2026-07-15T15-04-00.000Z/chat-messages.json",
                     "other-repo/chats/2026-07-16T08-00-00.000Z/chat-messages.json"]  # run-state, chat-meta: not


def test_every_block_kind_reads(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    assert shapes(events_of(bank, A)) == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("system", "meta"), ("assistant", "text"),
        ("assistant", "text"), ("assistant", "text"), ("system", "meta")]  # gate-state: UI only, skipped
    session = session_of(bank, A)
    assert (session["cwd"], session["title"], session["started_at"]) == (
        "/home/dev/src/demo-repo", "Fix the login bug", "2026-07-15T15:04:00.000Z")
    assert session["meta"]["agent_type"] == "base2-deepseek" and session["meta"]["product"] == "codebuff"
    assert session["meta"]["last_turn"] == "complete"  # isComplete on the answer


def test_freebuff_and_wall_clock_times(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    session = session_of(bank, B)
    assert session["meta"]["product"] == "freebuff"
    assert session["started_at"] == "2026-07-16T08:00:00.000Z"  # the folder dates it; "10:00 AM" does not
    assert events_of(bank, B)[0]["text"] == "Hello\n[image: shot.png]"


def _parse(messages: list) -> tuple[list, list]:
    ref = SourceRef(PurePath("/r/p/chats/2026-01-01T00-00-00.000Z/chat-messages.json"), PurePath("/r"))
    batch = codebuff.parse(ref, [Record(1, orjson.dumps(messages))], {})
    return batch.events, batch.problems


def test_unknown_variants_and_blocks_are_drift_once() -> None:
    events, problems = _parse([{"id": "x", "variant": "status"}, {"id": "y", "variant": "status"},
                               {"id": "z", "variant": "ai", "blocks": [{"type": "hologram"}, {"type": "text",
                                                                                            "content": "ok"}]}])
    assert [p.detail for p in problems] == ["message variant='status'", "ai block type='hologram'"]
    assert [e.text for e in events] == ["ok"]


def test_not_an_array_is_malformed() -> None:
    events, problems = _parse({"messages": []})  # type: ignore[arg-type]
    assert [p.kind for p in problems] == ["malformed"] and events == []


def test_a_tool_output_arriving_later_keeps_the_call_uid() -> None:
    call = {"type": "tool", "toolName": "run_terminal_command", "toolCallId": "t", "input": {"command": "ls"}}
    before, _ = _parse([{"id": "a", "variant": "ai", "blocks": [call]}])
    after, _ = _parse([{"id": "a", "variant": "ai", "blocks": [{**call, "output": "x"}]}])
    assert [e.uid for e in before] == ["a:0"] and [e.uid for e in after] == ["a:0", "a:0:result"]


def test_a_lone_surrogate_in_a_chat_costs_one_character_not_the_chat(tmp_path: Path) -> None:
    """chat-messages.json is one JSON document written by JSON.stringify: a lone surrogate in it (half an
    emoji, cut) is an escape orjson refuses, and the whole chat was lost as one malformed record."""
    import shutil

    tree = tmp_path / "manicode"
    shutil.copytree(HAND, tree)
    chat = tree / "projects" / "other-repo" / "chats" / "2026-07-16T08-00-00.000Z" / "chat-messages.json"
    chat.write_text(chat.read_text().replace('"Hello"', '"Hello \\ud83d"', 1))
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "manicode").symlink_to(tree, target_is_directory=True)
    assert scan(home, bank, (NAME,), env={"HOME": str(home)}).harnesses[NAME].problems == 0
    assert events_of(bank, B)[0]["text"].startswith("Hello \ufffd")
