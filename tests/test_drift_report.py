"""`harvester status --drift` (and `status --json`): per agent, the record types and fields no reader knows, with
how often and where one was seen, so that a new agent release is noticed the day it is installed (issue 30)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from click.testing import CliRunner

from harvester.cli import cli
from tests.helpers import FIXTURES, ClaudeSession

ROLLOUT = "sessions/2026/12/01/rollout-2026-12-01T10-00-00-019f0000-0000-7000-8000-000000000001.jsonl"


def _home(tmp: Path) -> Path:
    """Codex with an unknown event type (twice, in two files) and a function_call with a field no version wrote;
    Claude Code with an unknown record type."""
    home = tmp / "home"
    codex = home / ".codex"
    shutil.copytree(FIXTURES / "codex" / "variants" / "cass", codex)
    path = codex / ROLLOUT
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join([
        b'{"timestamp":"2026-12-01T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}',
        b'{"timestamp":"2026-12-01T10:00:01Z","type":"event_msg","payload":{"type":"tool_call","name":"x"}}',
        b'{"timestamp":"2026-12-01T10:00:02Z","type":"response_item","payload":{"type":"function_call",'
        b'"name":"exec_command","call_id":"c1","arguments":"{}","sandbox_hint":"x"}}',
    ]) + b"\n")
    claude = ClaudeSession(home, "/work/app")
    claude.write(claude.user("hello"), b'{"type": "hologram", "uuid": "x1", "sessionId": "s"}\n')
    return home


def _run(home: Path, bank: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_status_json_lists_unknown_types_and_fields_with_counts_and_a_place(tmp_path: Path) -> None:
    home, bank = _home(tmp_path), tmp_path / "bank.sqlite"
    _run(home, bank, "scan")
    status = orjson.loads(_run(home, bank, "status", "--json"))
    codex = next(h for h in status["harnesses"] if h["name"] == "codex")
    report = {(d["kind"], d["detail"]): d for d in codex["drift_report"]}
    assert set(report) == {("record type", "event_msg='tool_call'"),
                           ("field", "response_item function_call fields: sandbox_hint")}
    tool_call = report["record type", "event_msg='tool_call'"]
    assert (tool_call["count"], tool_call["sources"]) == (2, 2)
    assert tool_call["example"]["path"].startswith(str(home / ".codex" / "sessions"))
    assert tool_call["example"]["line"] in (2, 5)
    field = report["field", "response_item function_call fields: sandbox_hint"]
    assert (field["count"], field["sources"], field["example"]) == (1, 1, {"path": str(home / ".codex" / ROLLOUT),
                                                                          "line": 3})
    assert codex["unknown_fields"] == 1 and codex["unknown_types"] == 2
    claude = next(h for h in status["harnesses"] if h["name"] == "claude-code")
    assert [(d["kind"], d["detail"], d["count"]) for d in claude["drift_report"]] == [
        ("record type", "type='hologram'", 1)]


def test_status_drift_prints_each_agent_its_unknowns(tmp_path: Path) -> None:
    home, bank = _home(tmp_path), tmp_path / "bank.sqlite"
    _run(home, bank, "scan")
    text = _run(home, bank, "status", "--drift")
    lines = text.splitlines()
    codex = lines.index(next(line for line in lines if line.startswith("codex")))
    block = "\n".join(lines[codex:codex + 3])
    assert "event_msg='tool_call'" in block and "2 records in 2 sources" in block
    assert "response_item function_call fields: sandbox_hint" in block
    assert str(home / ".codex" / ROLLOUT) + ":3" in text
    assert any(line.startswith("claude-code") for line in lines) and "type='hologram'" in text
    assert not any(line.startswith("gemini-cli") for line in lines)  # agents with nothing unknown are not listed


def test_status_drift_says_so_when_every_record_is_known(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    claude = ClaudeSession(home, "/work/app")
    claude.write(claude.user("hello"))
    _run(home, bank, "scan")
    assert "no record type or field that no reader knows" in _run(home, bank, "status", "--drift")


def test_the_log_says_a_record_with_unknown_fields_was_read_not_skipped(tmp_path: Path) -> None:
    import io

    from harvester import log
    from tests.helpers import scan

    home = _home(tmp_path)
    logged = io.StringIO()
    log.configure("warning", stream=logged)
    scan(home, tmp_path / "bank.sqlite", ("codex",))
    said = {(r["event"], r["kind"]) for r in map(orjson.loads, logged.getvalue().splitlines()) if "kind" in r}
    assert ("fields not known", "unknown_field") in said
    assert ("record skipped", "unknown_field") not in said and ("record skipped", "unknown_type") in said
