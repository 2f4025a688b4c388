"""Kimi Code: what the hand-written home must read as (fixtures/kimi_code/hand), drift, and appends read once."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from harvester.capture.sources import discover
from harvester.parsers import HARNESSES, kimi, kimi_code
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "kimi_code" / "hand"
A, F, IMP, L = (f"session_5b1c2d3e-0000-4000-8000-00000000000{x}" for x in "afil")
REPO = "/home/dev/src/demo-repo"


def read(tmp: Path, home: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    report = scan(tmp, bank, (kimi_code.NAME,), env={"HOME": str(tmp), "KIMI_CODE_HOME": str(home)})
    return bank, report.harnesses[kimi_code.NAME].problems


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HAND, tmp_path / "kimi-code-home"))


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def wire(home: Path, sid: str, agent: str = "main") -> Path:
    return next(home.glob(f"sessions/*/{sid}/agents/{agent}/wire.jsonl"))


def test_roots() -> None:
    assert kimi_code.roots({}, Path("/home/u")) == [Path("/home/u/.kimi-code")]
    assert kimi_code.roots({"KIMI_CODE_HOME": "/srv/k"}, Path("/home/u")) == [Path("/srv/k")]
    assert kimi_code.roots({"KIMI_CODE_HOME": "  "}, Path("/home/u")) == [Path("/home/u/.kimi-code")]


def test_sessions_titles_lineage_and_turn_states(home: Path, tmp_path: Path) -> None:
    bank, problems = read(tmp_path, home)
    assert problems == 0
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["parent_native_id"], s["parent_kind"])
           for s in sessions_of(bank)}
    assert got == {
        A: (REPO, "Fix the date test", "custom", None, None),  # titleKind custom in state.json
        F: (REPO, "fix the failing date test", "first-prompt", A, "fork"),  # "Fork: <id>" is replaceable
        IMP: (REPO, "list the files", "ai", None, None),
        f"{IMP}:agent-0": (REPO, None, None, IMP, "subagent"),  # its cwd from the session's state.json
        L: (REPO, "SLOW 30 say hi", "first-prompt", None, None),  # a legacy state.json: workDir
    }
    meta = session_of(bank, A)["meta"]
    assert meta["archived"] is True and meta["last_turn"] == "aborted"  # the last turn failed
    assert meta["usage"] == {"input": 1000, "output": 50, "cache_read": 200, "cache_write": 0}
    assert session_of(bank, A)["model"] == "kimi-k2.6"  # llm.request's model, not the alias
    assert session_of(bank, L)["meta"]["last_turn"] == "open"  # killed before the model answered
    assert session_of(bank, IMP)["meta"]["imported_from"] == "kimi"


def test_a_turn_tools_steer_compaction_and_ends(home: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, home)
    assert shape(bank, A) == [
        ("user", "text", "fix the failing date tes"), ("assistant", "thinking", "Run the tests first."),
        ("assistant", "tool_call", "Bash: pytest -q"), ("tool", "tool_result", "1 failed\nCommand failed "),
        ("user", "text", "only the date test"), ("assistant", "text", "The failing test is in t"),
        ("system", "meta", "$ git status\nnothing to "), ("system", "compaction", "The user fixed a date te"),
        ("user", "text", "now the time test"), ("system", "meta", "[step interrupted: abort"),
        ("system", "meta", "[turn cancelled]"), ("user", "text", "and again"),
        ("system", "meta", "[turn failed] 429 Too Ma")]
    events = events_of(bank, A)
    assert events[3]["is_error"] and events[3]["tool_name"] == "Bash" and events[2]["tool_input"] == {"command": "pytest -q"}
    assert events[4]["meta"] == {"steer": True}


def test_fork_and_imported_session(home: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, home)
    assert shape(bank, F) == [("user", "text", "fix the failing date tes"), ("assistant", "text", "The failing test is in t"),
                              ("system", "meta", "[forked]"), ("user", "text", "try another fix")]
    # kimi migrate: the history as context messages (no loop events), the prompt said once.
    assert shape(bank, IMP) == [("user", "text", "list the files"), ("assistant", "thinking", "Use Glob."),
                              ("assistant", "text", "Listing."), ("assistant", "tool_call", "Glob: *"),
                              ("tool", "tool_result", "README.md\nsetup.py"), ("assistant", "text", "Two files.")]
    assert shape(bank, f"{IMP}:agent-0") == [("system", "meta", "count the files"), ("assistant", "text", "2")]


def test_unknown_records_are_drift_and_a_bad_line_is_malformed(home: Path, tmp_path: Path) -> None:
    with wire(home, L).open("ab") as f:
        f.write(orjson.dumps({"type": "ghost.record", "agentId": "main", "time": 1788000100000}) + b"\n")
        f.write(orjson.dumps({"type": "context.append_loop_event", "agentId": "main", "time": 1788000100001,
                              "event": {"type": "step.warp"}}) + b"\n")
        f.write(orjson.dumps({"type": "context.append_message", "agentId": "main", "time": 1788000100002,
                              "message": {"role": "narrator", "content": []}}) + b"\n")
        f.write(b'{"type":"turn.prompt","agentId":"main","inp\n')
    bank, problems = read(tmp_path, home)
    assert problems == 4
    rows = sqlite3.connect(bank).execute("SELECT kind, detail FROM problems ORDER BY line").fetchall()
    assert [r[0] for r in rows] == ["unknown_type", "unknown_type", "unknown_type", "malformed"]
    assert "ghost.record" in rows[0][1] and "step.warp" in rows[1][1] and "narrator" in rows[2][1]


def test_appended_lines_are_read_once(home: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, home)
    path = wire(home, L)
    lines = [{"type": "context.append_loop_event", "agentId": "main", "time": 1788000100000,
              "event": {"type": "content.part", "uuid": "x1", "turnId": "0", "step": 1, "part": {"type": "text", "text": "Hello!"}}},
             {"type": "turn.ended", "agentId": "main", "turnId": 0, "reason": "completed", "time": 1788000100001}]
    with path.open("ab") as f:
        f.write(orjson.dumps(lines[0]) + b"\n")
    read(tmp_path, home)
    with path.open("ab") as f:
        f.write(orjson.dumps(lines[1]) + b"\n")
    read(tmp_path, home)
    assert shape(bank, L) == [("user", "text", "SLOW 30 say hi"), ("assistant", "text", "Hello!")]
    assert session_of(bank, L)["meta"]["last_turn"] == "complete"
    fresh, _ = read(tmp_path, home, "fresh.sqlite")
    assert shape(fresh, L) == shape(bank, L)


def test_no_file_is_read_by_both_kimi_harnesses(tmp_path: Path) -> None:
    """Kimi CLI (~/.kimi) and Kimi Code (~/.kimi-code) side by side: each reads only its own files."""
    home = tmp_path / "home"
    shutil.copytree(HAND, home / ".kimi-code")
    shutil.copytree(FIXTURES / "kimi" / "hand", home / ".kimi")
    env = {"HOME": str(home)}
    found = {}
    for name in (kimi.NAME, kimi_code.NAME):
        harness = HARNESSES[name]
        found[name] = {str(f.path) for f in discover(harness, [r for r in harness.roots(env, home) if r.is_dir()])}
    assert found[kimi.NAME] and found[kimi_code.NAME]
    assert not found[kimi.NAME] & found[kimi_code.NAME]
    assert all("/.kimi-code/" in p for p in found[kimi_code.NAME])


@pytest.mark.parametrize("scenario", ["two_turns", "subagent", "thinking", "tool_error"])
def test_real_runs_usage_each_model_call_once(tmp_path: Path, scenario: str) -> None:
    """Kimi Code writes a ``usage.record`` per model call (``inputOther``, ``output``, ``inputCacheRead``,
    ``inputCacheCreation``, the model): only the session's running total was kept, in its meta, and `harvester
    usage` showed nothing of Kimi Code. Each agent's wire (main and subagents) its calls, each once."""
    home = Path(shutil.copytree(FIXTURES / "kimi_code" / "real" / scenario, tmp_path / "kimi-code-home"))
    expected = []
    for path in sorted(home.rglob("wire.jsonl")):
        got = [0, 0, 0, 0, 0]
        for line in path.read_bytes().splitlines():
            record = orjson.loads(line)
            if record.get("type") == "usage.record":
                for n, key in enumerate(("inputOther", "output", "inputCacheRead", "inputCacheCreation")):
                    got[n] += record["usage"][key]
                got[4] += 1
        if got[4]:
            expected.append(got)
    bank, problems = read(tmp_path, home)
    assert problems == 0 and expected
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        counted = [list(row) for row in conn.execute(
            "SELECT sum(tokens_in), sum(tokens_out), sum(tokens_cache_read), sum(tokens_cache_write), count(*) "
            "FROM usage WHERE counted = 1 AND harness = 'kimi-code' GROUP BY session_id")]
        models = {m for (m,) in conn.execute("SELECT DISTINCT model FROM usage WHERE harness = 'kimi-code'")}
    finally:
        conn.close()
    assert sorted(counted) == sorted(expected)
    assert models == {"fake"}
