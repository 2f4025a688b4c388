"""Posit Assistant: what the hand-written store must read as (fixtures/posit_assistant/hand/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePath

import orjson

from harvester.parsers import posit_assistant
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "posit-assistant"
MAIN, SUB = "7c1d0b2e-4a6f-4e21-9c3a-1b2c3d4e5f60", "8d2e1c3f-5b7a-4f32-8d4b-2c3d4e5f6071"
LONE = "9e3f2d40-6c8b-4a43-9e5c-3d4e5f607182"


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    store = home / ".posit" / "assistant" / "workspaces"
    shutil.copytree(FIXTURES / "posit_assistant" / "hand", store, ignore=shutil.ignore_patterns("README.md"))
    return home, store


def test_a_conversation_its_subagent_and_the_default_workspace(tmp_path: Path) -> None:
    home, _ = _home(tmp_path)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {MAIN, SUB, LONE}
    events = events_of(bank, MAIN)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("tool", "tool_result"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("user", "text"), ("assistant", "text")]
    assert events[2]["text"] == "Let me look at the data."  # the summary tag stripped
    assert events[2]["usage"] == {"in": 30, "out": 80, "cache_read": 2000, "cache_write": 1000}
    assert events[6]["is_error"] and events[8]["text"] == '{"installed":true,"version":"3.5.1"}'
    assert events[10]["text"] == 'Done: geom_col(fill = "steelblue").'
    assert "ABANDONED" not in " ".join(e["text"] for e in events)  # the inactive branch
    main = session_of(bank, MAIN)
    assert (main["cwd"], main["title"], main["branch"], main["model"]) == (
        "/home/dev/src/demo-repo", "Quarterly revenue plot", "report/q3", "claude-sonnet-4-6")
    child = session_of(bank, SUB)
    assert (child["parent_native_id"], child["parent_kind"], child["cwd"]) == (MAIN, "subagent", "/home/dev/src/demo-repo")
    assert [e["role"] for e in events_of(bank, SUB)] == ["system", "assistant", "tool", "assistant"]
    assert session_of(bank, LONE)["cwd"] is None


def test_an_appended_line_is_read_with_its_tree(tmp_path: Path) -> None:
    """The tree is saved before or after the line it names: a node whose line is not there yet waits for it."""
    home, store = _home(tmp_path)
    bank = tmp_path / "bank.sqlite"
    folder = store / "default" / LONE
    tree = json.loads((folder / "conversation.json").read_text())
    tree["messages"].append({"id": "n1", "parentId": "n0", "isActive": True, "lmMessageIds": [2], "timestamp": 1790000010000})
    (folder / "conversation.json").write_text(json.dumps(tree))
    scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert len(events_of(bank, LONE)) == 2
    with (folder / "lm-messages.jsonl").open("a") as f:
        f.write(json.dumps({"id": 2, "message": {"role": "assistant", "content": [
            {"type": "text", "text": "across() applies a function to several columns."}]}}) + "\n")
    scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert events_of(bank, LONE)[-1]["text"] == "across() applies a function to several columns."


def test_unknown_roles_and_parts_are_drift() -> None:
    ref = SourceRef(PurePath("/h/ws/c/conversation.json"), PurePath("/h"))
    tree = {"root": {"id": "c"}, "messages": [{"isActive": True, "lmMessageIds": [0, 1, 2]}]}
    lines = [{"id": 0, "message": {"role": "oracle", "content": "x"}},
             {"id": 1, "message": {"role": "assistant", "content": [{"type": "hologram"}]}},
             {"id": 2, "message": {"role": "tool", "content": [{"type": "tool-approval"}]}}]
    lm = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    batch = posit_assistant.parse(ref, [Record(1, orjson.dumps(tree)), Record(2, lm)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type", "unknown_type"]
