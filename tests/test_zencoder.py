"""Zencoder: what the hand-written store must read as (fixtures/zencoder/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "zencoder"
MAIN, CONTINUED, CHILD = (f"7c1e2f30-0000-4000-8000-0000000000z{n}" for n in (1, 2, 3))
# What agentsview keeps of the three sessions (its zencoder.go; each found in agentsview 0.46.1's database):
# harvester must keep them too.
KEPT = ("Working directory: /home/dev/src/demo-repo", "Why does the checkout test time out?",
        "Follow the repository's AGENTS.md.", "[Skill: pytest-debug]", "Look at the test first",
        "Reading the test.", "tests/test_checkout.py", "Remember to keep the todo list current.",
        "Find where the payment iframe is mounted", "only after the price loads", "which the test never stubs", "endTurn", "Stub the price request in the test.",
        "Summary of the previous chat", "pytest tests/test_checkout.py -x", "1 failed: AssertionError",
        "the test now fails on its assertion")


def _scan(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".zencoder").mkdir(parents=True)
    (home / ".zencoder" / "sessions").symlink_to(FIXTURES / "zencoder" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_a_session_its_subagent_and_its_continuation(tmp_path: Path) -> None:
    bank = _scan(tmp_path)
    events = events_of(bank, MAIN)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "text"), ("user", "text"), ("system", "text"), ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("system", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text"), ("system", "meta")]
    assert events[1]["text"] == "Why does the checkout test time out?"  # the typed block only
    assert events[2]["meta"]["injected"] and "[Skill: pytest-debug]" in events[2]["text"]
    assert events[5]["text"] == "Read: tests/test_checkout.py" and events[6]["tool_call_id"] == "toolu_z1"
    assert "todo list" not in events[6]["text"] and events[7]["meta"]["injected"]
    assert "page.wait_for_selector" in events[6]["text"]  # a text-file-chunk result (agentsview 0.46.1 keeps its length)
    main = session_of(bank, MAIN)
    assert (main["cwd"], main["model"], main["started_at"], main["title"]) == (
        "/home/dev/src/demo-repo", "claude-sonnet-4-5", "2026-11-02T09:00:00.000Z",
        "Why does the checkout test time out?")
    child = session_of(bank, CHILD)
    assert (child["parent_native_id"], child["parent_kind"]) == (MAIN, "subagent")
    continued = session_of(bank, CONTINUED)
    assert (continued["parent_native_id"], continued["parent_kind"]) == (MAIN, "fork")
    failed = [e for e in events_of(bank, CONTINUED) if e["kind"] == "tool_result"]
    assert [(e["text"], e["is_error"]) for e in failed] == [("1 failed: AssertionError", True)]


def test_every_text_agentsview_keeps_is_kept(tmp_path: Path) -> None:
    bank = _scan(tmp_path)
    held = [e["text"] + orjson.dumps(e["tool_input"]).decode() for s in (MAIN, CHILD, CONTINUED)
            for e in events_of(bank, s)]
    assert [t for t in KEPT if not any(t in h for h in held)] == []


def test_unknown_roles_and_blocks_are_drift() -> None:
    from harvester.parsers import zencoder
    ref = SourceRef(PurePath("/h/.zencoder/sessions/s.jsonl"), PurePath("/h/.zencoder/sessions"))
    lines = [{"id": "s", "createdAt": "2026-11-02T09:00:00Z"}, {"role": "narrator", "content": "x"},
             {"role": "assistant", "content": [{"type": "hologram"}]},
             {"role": "user", "content": [{"type": "hologram"}]}, {"role": "tool", "content": [{"type": "x"}]},
             {"role": "permission"}]
    batch = zencoder.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"] * 4
