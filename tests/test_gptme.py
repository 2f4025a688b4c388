"""gptme: what the hand-written logs dir must read as (fixtures/gptme/hand), the real runs' shape, roots, drift."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from harvester.parsers import gptme
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "gptme" / "hand"
REAL = FIXTURES / "gptme" / "real"
A, B = "2026-07-18-brave-red-fox", "2026-07-19-quiet-blue-owl"


def read(tmp: Path, logs: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    report = scan(tmp, bank, (gptme.NAME,), env={"HOME": str(tmp), "GPTME_LOGS_HOME": str(logs)})
    return bank, report.harnesses[gptme.NAME].problems


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HAND, tmp_path / "gptme-logs"))


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def test_roots() -> None:
    home = Path("/home/u")
    assert gptme.roots({}, home, "linux") == [home / ".local/share/gptme/logs"]
    assert gptme.roots({"GPTME_LOGS_HOME": "/srv/logs"}, home, "linux") == [Path("/srv/logs")]
    assert gptme.roots({"XDG_DATA_HOME": "/x"}, home, "linux") == [Path("/x/gptme/logs"), home / ".local/share/gptme/logs"]
    assert gptme.roots({}, home, "darwin")[-1] == home / "Library/Application Support/gptme/logs"
    assert gptme.roots({"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, home, "win32")[-1] == Path(
        "C:/Users/u/AppData/Local/gptme/logs")


def test_sessions_cwd_from_config_title_and_version(logs: Path, tmp_path: Path) -> None:
    bank, problems = read(tmp_path, logs)
    assert problems == 0
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"]) for s in sessions_of(bank)}
    assert got == {
        A: ("/home/dev/src/demo-repo", "Fix the date test", "ai", "anthropic/claude-sonnet-4-6"),
        B: (None, "what is in notes.txt?", "first-prompt", None),  # no config.toml beside it
    }
    assert session_of(bank, A)["agent_version"] == "0.35.1"


def test_tool_calls_results_thinking_and_auto_replies(logs: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, logs)
    assert shape(bank, A) == [
        ("user", "text", "fix the failing date tes"), ("assistant", "thinking", "Run the tests first."),
        ("assistant", "text", "Running the tests."), ("assistant", "tool_call", "shell: pytest -q"),
        ("tool", "tool_result", "Ran command: `pytest -q`"), ("assistant", "text", "Two reads at once."),
        ("assistant", "tool_call", "read: tests/test_dates.p"), ("assistant", "tool_call", "read: src/dates.py"),
        ("tool", "tool_result", "def test_parse(): ..."), ("tool", "tool_result", "def parse(s): ..."),
        ("system", "meta", "<system_info>The time is"), ("assistant", "text", "The parser drops the tim"),
        ("system", "meta", "<system>No tool call det"), ("assistant", "tool_call", "complete")]
    events = events_of(bank, A)
    assert events[7]["tool_input"] == {"path": "src/dates.py", "note": "a brace } in a string"}
    assert events[9]["tool_name"] == "read" and events[9]["tool_call_id"] == "call_a3"
    # Markdown tool format: the block stays in the text, its output is a plain system message.
    assert shape(bank, B) == [("user", "text", "what is in notes.txt?"), ("assistant", "text", "Let me look.\n```shell\nca"),
                              ("system", "meta", "Ran command: `cat notes."), ("assistant", "text", "It says the secret word ")]


def test_appended_lines_are_read_once(logs: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, logs)
    log = logs / B / "conversation.jsonl"
    with log.open("ab") as f:
        f.write(orjson.dumps({"role": "user", "content": "thanks", "timestamp": "2026-07-19T08:01:00.000000"}) + b"\n")
    read(tmp_path, logs)
    read(tmp_path, logs)
    assert shape(bank, B)[-1] == ("user", "text", "thanks") and len(shape(bank, B)) == 5
    fresh, _ = read(tmp_path, logs, "fresh.sqlite")
    assert [e["uid"] for e in events_of(fresh, B)] == [e["uid"] for e in events_of(bank, B)]


def test_real_two_turns_read_whole() -> None:
    (log,) = (REAL / "two_turns").glob("*/conversation.jsonl")
    ref = SourceRef(log, log.parents[1], sidecar=log.with_name("config.toml").read_bytes())
    batch = gptme.parse(ref, [Record(i, r) for i, r in enumerate(log.read_bytes().splitlines(), 1)], {})
    assert batch.problems == []
    session = batch.sessions[log.parent.name]
    assert session.cwd and session.cwd.endswith("/demo-repo") and session.agent_version == "0.35.1"
    kinds = [(e.role, e.kind) for e in batch.events]
    assert kinds.count(("user", "text")) == 2 and ("assistant", "tool_call") in kinds and ("tool", "tool_result") in kinds
    result = next(e for e in batch.events if e.kind == "tool_result")
    assert "pelican" in result.text and result.tool_name == "read"


def test_unknown_roles_are_drift_and_bad_shapes_malformed() -> None:
    ref = SourceRef(Path("/l/c1/conversation.jsonl"), Path("/l"))
    records = [Record(1, b'{"role": "developer", "content": "x", "timestamp": "2026-07-18T10:00:00"}'),
               Record(2, b'{"content": "no role"}'), Record(3, b'not json')]
    batch = gptme.parse(ref, records, {})
    assert [(p.kind, p.line) for p in batch.problems] == [("unknown_type", 1), ("malformed", 2), ("malformed", 3)]


def test_tool_role_lines_of_third_party_fixtures_are_tool_results() -> None:
    """agentsview's gptme fixture (internal/parser/testdata/gptme, @538600744d1b) answers tools with
    ``role: tool`` lines; gptme itself writes a tool's output as a ``system`` message (Message.role is
    system/user/assistant in every release). Such lines are read as tool results, not dropped."""
    ref = SourceRef(Path("/l/2026-06-13-hello/conversation.jsonl"), Path("/l"))
    lines = [{"role": "user", "content": "Write hello.py", "timestamp": "2026-06-13T10:00:01"},
             {"role": "assistant", "content": "Writing it.", "timestamp": "2026-06-13T10:00:05",
              "metadata": {"model": "openrouter/anthropic/claude-sonnet-4-6"}},
             {"role": "tool", "content": "Saved file: hello.py", "timestamp": "2026-06-13T10:00:06"},
             {"role": "tool", "content": "Hello, World!", "call_id": "c7", "timestamp": "2026-06-13T10:00:13"}]
    batch = gptme.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert batch.problems == []
    assert [(e.role, e.kind, e.text) for e in batch.events] == [
        ("user", "text", "Write hello.py"), ("assistant", "text", "Writing it."),
        ("tool", "tool_result", "Saved file: hello.py"), ("tool", "tool_result", "Hello, World!")]
    assert batch.events[3].tool_call_id == "c7"


def test_real_runs_usage_each_response_once(tmp_path: Path) -> None:
    """gptme writes each model response's usage in its message's ``metadata`` (``usage``: input without the cache,
    output, cache read and written, reasoning; ``model``; ``cost`` when it priced it): `harvester usage` showed
    nothing of gptme. Each capture's responses, each once, as the file says."""
    logs_dir = Path(shutil.copytree(REAL, tmp_path / "gptme-logs", dirs_exist_ok=True))
    for scenario in [p for p in logs_dir.iterdir() if p.is_dir()]:  # the captures' conversations, side by side
        for conversation in scenario.iterdir():
            shutil.move(conversation, logs_dir / conversation.name)
        scenario.rmdir()
    expected: dict[str, list[int]] = {}
    for log in logs_dir.glob("*/conversation.jsonl"):
        for line in log.read_bytes().splitlines():
            usage = (orjson.loads(line).get("metadata") or {}).get("usage")
            if usage:
                got = expected.setdefault(log.parent.name, [0, 0, 0, 0, 0, 0])
                for n, key in enumerate(("input_tokens", "output_tokens", "cache_read_tokens",
                                         "cache_creation_tokens", "reasoning_tokens")):
                    got[n] += usage.get(key, 0)
                got[5] += 1
    bank, problems = read(tmp_path, logs_dir)
    assert problems == 0 and len(expected) == 3
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        counted = {sid: list(row) for sid, *row in conn.execute(
            "SELECT s.native_id, sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cache_read), "
            "sum(u.tokens_cache_write), sum(u.tokens_reasoning), count(*) FROM usage u "
            "JOIN sessions s ON s.id = u.session_id WHERE u.counted = 1 AND u.harness = 'gptme' GROUP BY 1")}
        models = {m for (m,) in conn.execute("SELECT DISTINCT model FROM usage WHERE harness = 'gptme'")}
    finally:
        conn.close()
    assert counted == expected
    assert models == {"local/fake-model"}
