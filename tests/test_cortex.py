"""Cortex Code: what the hand-written store must read as (fixtures/cortex/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "cortex"
WHOLE, SPLIT = "3f2a9c1e-0000-4000-8000-0000000000c1", "3f2a9c1e-0000-4000-8000-0000000000c2"
# What agentsview keeps of both sessions (its cortex.go; each found in agentsview 0.46.1's database):
# harvester must keep them too.
KEPT = ("Which ten customers brought the most revenue last quarter?", "I'll look at the orders table first.",
        "ls models/marts", "fct_orders.sql\ndim_customers.sql", "GROUP BY 1 ORDER BY 2 DESC LIMIT 10",
        "1042 | 981220.50", "Customer 1042 leads", "Rename the revenue column to net_revenue",
        "models/marts/fct_orders.sql", "Edit failed: old_string not found", "the edit needs the CTE instead")


def _scan(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".snowflake" / "cortex").mkdir(parents=True)
    (home / ".snowflake" / "cortex" / "conversations").symlink_to(FIXTURES / "cortex" / "hand",
                                                                    target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_a_whole_session_and_a_split_one_and_no_backup(tmp_path: Path) -> None:
    bank = _scan(tmp_path)
    assert sorted(s["native_id"] for s in sessions_of(bank)) == [WHOLE, SPLIT]  # the backup is no session
    events = events_of(bank, WHOLE)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "text"), ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"), ("system", "text"),
        ("assistant", "text"), ("system", "text")]
    assert all(e["meta"]["injected"] for e in events if e["role"] == "system")
    assert events[3]["text"] == "bash: ls models/marts" and events[4]["tool_call_id"] == "toolu_c1"
    assert not any("BACKUP COPY" in e["text"] for e in events)
    whole = session_of(bank, WHOLE)
    assert (whole["cwd"], whole["title"], whole["branch"], whole["started_at"]) == (
        "/home/dev/src/demo-repo", "Top customers by revenue", "main", "2026-11-03T08:00:00.000Z")
    split = session_of(bank, SPLIT)
    assert (split["cwd"], split["title"]) == ("/home/dev/src/demo-repo",
                                              "Rename the revenue column to net_revenue in fct_orders.")
    failed = [e for e in events_of(bank, SPLIT) if e["kind"] == "tool_result"]
    assert [(e["text"], e["is_error"]) for e in failed] == [("Edit failed: old_string not found", True)]


def test_every_text_agentsview_keeps_is_kept(tmp_path: Path) -> None:
    bank = _scan(tmp_path)
    held = [e["text"] + orjson.dumps(e["tool_input"]).decode() for s in (WHOLE, SPLIT) for e in events_of(bank, s)]
    assert [t for t in KEPT if not any(t in h for h in held)] == []


def test_unknown_roles_and_blocks_are_drift() -> None:
    from harvester.parsers import cortex
    ref = SourceRef(PurePath("/h/c/s.history.jsonl"), PurePath("/h/c"), "history")
    lines = [{"role": "narrator", "id": "a", "content": []},
             {"role": "assistant", "id": "b", "content": [{"type": "hologram"}]},
             {"role": "assistant", "id": "c", "content": [{"type": "tool_use"}]}]  # a block without its payload
    batch = cortex.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"] * 3
    document = {"session_id": "s", "history": [{"role": "system", "id": "d", "content": []}]}
    batch = cortex.parse(SourceRef(PurePath("/h/c/s.json"), PurePath("/h/c"), "document"),
                         [Record(1, orjson.dumps(document))], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"]
