"""Kimi CLI: what the hand-written share dir must read as (fixtures/kimi/hand), and appends read once."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from harvester.parsers import kimi
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "kimi" / "hand"
REAL = FIXTURES / "kimi" / "real"
A, B, C = (f"5b1c2d3e-0000-4000-8000-00000000000{x}" for x in "abc")
SUB = f"{A}:a7f3c2"


def read(tmp: Path, share: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    report = scan(tmp, bank, (kimi.NAME,), env={"HOME": str(tmp), "KIMI_SHARE_DIR": str(share)})
    return bank, report.harnesses[kimi.NAME].problems


@pytest.fixture
def share(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HAND, tmp_path / "kimi-share"))


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def test_roots() -> None:
    assert kimi.roots({}, Path("/home/u")) == [Path("/home/u/.kimi")]
    assert kimi.roots({"KIMI_SHARE_DIR": "/srv/k"}, Path("/home/u")) == [Path("/srv/k")]


def test_sessions_cwd_from_the_index_titles_and_lineage(share: Path, tmp_path: Path) -> None:
    bank, problems = read(tmp_path, share)
    assert problems == 0
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["parent_native_id"], s["parent_kind"])
           for s in sessions_of(bank)}
    assert got == {
        A: ("/home/dev/src/demo-repo", "Fix the date test", "ai", None, None),
        SUB: ("/home/dev/src/demo-repo", None, None, A, "subagent"),
        B: ("/srv/build", "build it", "first-prompt", None, None),  # an ssh KAOS folder: <kaos>_<md5>
        C: (None, "hello", "first-prompt", None, None),  # a folder kimi.json no longer lists
    }
    meta = session_of(bank, A)["meta"]
    assert meta["archived"] is True and meta["last_turn"] == "aborted"  # StepInterrupted, no TurnEnd
    assert session_of(bank, B)["meta"]["kaos"] == "ssh"
    assert session_of(bank, C)["meta"]["last_turn"] == "open"


def test_a_turn_tools_results_and_subagent(share: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, share)
    assert shape(bank, A)[:8] == [
        ("user", "text", "fix the failing date tes"), ("assistant", "thinking", "Run the tests first."),
        ("assistant", "text", "Running the tests."), ("assistant", "tool_call", "Shell: pytest -q"),
        ("tool", "tool_result", "Command failed with exit"), ("assistant", "tool_call", "Agent: Find the date tes"),
        ("tool", "tool_result", "tests/test_dates.py"), ("assistant", "text", "The failing test is in t")]
    events = events_of(bank, A)
    assert events[4]["is_error"] and events[4]["tool_name"] == "Shell" and events[3]["tool_input"] == {"command": "pytest -q"}
    # The second turn: content parts, a compaction, a steer, the interrupted step.
    assert shape(bank, A)[8:] == [
        ("user", "text", "what does this screensho"), ("system", "compaction", "[context compacted]"),
        ("user", "text", "only the top half"), ("system", "meta", "[step interrupted]")]
    # The subagent's wire: its task is the parent's words, not the user's; SubagentEvent copies not read twice.
    assert shape(bank, SUB) == [("system", "meta", "Find the date test file."), ("assistant", "tool_call", "Glob: tests/*date*"),
                                ("tool", "tool_result", "tests/test_dates.py"), ("assistant", "text", "tests/test_dates.py")]


def test_appended_lines_are_read_once(share: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, share)
    wire = next(share.glob(f"sessions/*/{C}/wire.jsonl"))
    line = {"timestamp": 1788000100.0, "message": {"type": "ContentPart", "payload": {"type": "text", "text": "Hello!"}}}
    with wire.open("ab") as f:
        f.write(orjson.dumps(line) + b"\n" + orjson.dumps({"timestamp": 1788000101.0, "message": {
            "type": "TurnEnd", "payload": {}}}) + b"\n")
    read(tmp_path, share)
    read(tmp_path, share)
    assert shape(bank, C) == [("user", "text", "hello"), ("assistant", "text", "Hello!")]
    assert session_of(bank, C)["meta"]["last_turn"] == "complete"
    fresh, _ = read(tmp_path, share, "fresh.sqlite")
    assert [e["uid"] for e in events_of(fresh, C)] == [e["uid"] for e in events_of(bank, C)]


def test_unknown_wire_types_are_drift() -> None:
    ref = SourceRef(Path("/k/sessions/abc/s1/wire.jsonl"), Path("/k"))
    records = [Record(1, b'{"timestamp": 1.0, "message": {"type": "TeleportBegin", "payload": {}}}'),
               Record(2, b'{"timestamp": 2.0, "message": {"type": "ContentPart", "payload": {"type": "hologram"}}}'),
               Record(3, b'{"timestamp": 3.0}')]
    batch = kimi.parse(ref, records, {})
    assert [(p.kind, p.line) for p in batch.problems] == [("unknown_type", 1), ("unknown_type", 2), ("malformed", 3)]


@pytest.mark.parametrize("scenario", ["two_turns", "subagent", "thinking", "tool_error"])
def test_real_runs_usage_each_response_once(tmp_path: Path, scenario: str) -> None:
    """Kimi CLI writes each model response's token usage in a ``StatusUpdate`` (``token_usage``: ``input_other``,
    ``output``, ``input_cache_read``, ``input_cache_creation``; ``message_id`` the response's): `harvester usage`
    showed nothing of Kimi CLI. Each session's responses, each once (a subagent's in its own wire, not again in the
    parent's ``SubagentEvent``), as its wire says."""
    share = Path(shutil.copytree(REAL / scenario, tmp_path / "kimi"))
    expected: dict[str, list[int]] = {}
    for wire in share.rglob("wire.jsonl"):
        sid = wire.parent.name if wire.parent.parent.name != "subagents" else \
            f"{wire.parents[2].name}:{wire.parent.name}"
        for line in wire.read_bytes().splitlines():
            message = orjson.loads(line).get("message") or {}
            usage = (message.get("payload") or {}).get("token_usage") if message.get("type") == "StatusUpdate" \
                else None
            if usage:
                got = expected.setdefault(sid, [0, 0, 0, 0, 0])
                for n, key in enumerate(("input_other", "output", "input_cache_read", "input_cache_creation")):
                    got[n] += usage[key]
                got[4] += 1
    bank, problems = read(tmp_path, share)
    assert problems == 0 and expected
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        counted = {sid: list(row) for sid, *row in conn.execute(
            "SELECT s.native_id, sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cache_read), "
            "sum(u.tokens_cache_write), count(*) FROM usage u JOIN sessions s ON s.id = u.session_id "
            "WHERE u.counted = 1 AND u.harness = 'kimi' GROUP BY 1")}
    finally:
        conn.close()
    assert counted == expected
