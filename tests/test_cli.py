"""The CLI prints what the scan produced: status, sessions, show, search (text and JSON)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import orjson
from click.testing import CliRunner

from harvester.cli import cli
from tests.helpers import ClaudeSession, make_repo


def run(home: Path, bank: Path, *args: str) -> str:
    result = CliRunner().invoke(
        cli, ["--bank", str(bank), *args], env={"HOME": str(home)}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_scan_status_sessions_show_agree(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    repo = make_repo(tmp_path / "shop")
    a = ClaudeSession(home, str(repo))
    a.write(*a.conversation(3))
    b = ClaudeSession(home, str(tmp_path / "loose"))
    b.write(*b.conversation(1), b'{"broken\n')

    report = orjson.loads(run(home, bank, "scan", "--json"))
    claude = next(h for h in report["harnesses"] if h["name"] == "claude-code")
    assert (claude["sources"], claude["sessions"], claude["events_added"], claude["problems"]) == (2, 2, 8, 1)

    status = orjson.loads(run(home, bank, "status", "--json"))
    assert status["bank"]["path"] == str(bank) and status["bank"]["size_bytes"] > 0
    entry = next(h for h in status["harnesses"] if h["name"] == "claude-code")
    assert entry["roots"] == [str(home / ".claude" / "projects")]
    assert (entry["sources"], entry["sessions"], entry["events"], entry["malformed"]) == (2, 2, 8, 1)
    assert entry["version"] == "2.1.197"  # as the sessions recorded it
    assert entry["last_import"] is not None
    codex = next(h for h in status["harnesses"] if h["name"] == "codex")
    assert codex["roots"] == [] and codex["sessions"] == 0
    imports = status["recent_imports"]
    assert sorted(i["events_added"] for i in imports) == [2, 6]
    assert {i["bank_id"] for i in imports} == {"coding-agent::shop", "coding-agent::loose"}
    assert status["recent_problems"][0]["kind"] == "malformed"

    text = run(home, bank, "status")
    assert "claude-code" in text and "Recent imports" in text and "question 0" in text

    listed = orjson.loads(run(home, bank, "sessions", "--json"))
    assert {s["native_id"]: s["event_count"] for s in listed} == {a.id: 6, b.id: 2}
    by_repo = orjson.loads(run(home, bank, "sessions", "--repo", str(repo), "--json"))
    assert [s["native_id"] for s in by_repo] == [a.id]
    by_bank = orjson.loads(run(home, bank, "sessions", "--bank", "coding-agent::loose", "--json"))
    assert [s["native_id"] for s in by_bank] == [b.id]
    assert a.id[:8] in run(home, bank, "sessions")

    shown = orjson.loads(run(home, bank, "show", a.id[:8], "--json"))
    assert shown["session"]["native_id"] == a.id
    assert [e["role"] for e in shown["events"]] == ["user", "assistant"] * 3
    transcript = run(home, bank, "show", a.id)
    assert "question 2: how does module 2 work?" in transcript and "coding-agent::shop" in transcript

    found = orjson.loads(run(home, bank, "search", "module", "--json"))
    hits = found["hits"]
    assert found["total"] == len(hits) and not found["more"]  # the match count goes with the hits
    assert hits and all("module" in h["snippet"].lower() for h in hits)


def test_bank_file_is_private(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "data" / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    old = os.umask(0o022)
    try:
        run(home, bank, "scan")
    finally:
        os.umask(old)
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(bank) + suffix)
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_bank_location_from_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    bank = tmp_path / "env-bank.sqlite"
    result = CliRunner().invoke(cli, ["scan"], env={"HOME": str(home), "HARVESTER_BANK": str(bank)})
    assert result.exit_code == 0, result.output
    assert bank.exists()


def test_show_unknown_session_fails_clearly(tmp_path: Path) -> None:
    s = ClaudeSession(tmp_path, "/work/app")  # a bank with history: before the first scan, show says there is none
    s.write(*s.conversation(1))
    run(tmp_path, tmp_path / "b.sqlite", "scan")
    result = CliRunner().invoke(
        cli, ["--bank", str(tmp_path / "b.sqlite"), "show", "nope"], env={"HOME": str(tmp_path)}
    )
    assert result.exit_code == 1 and "no session matches" in result.output


def test_install_dry_run_shows_the_unit_and_commands(tmp_path: Path, monkeypatch) -> None:
    from harvester.service import units

    monkeypatch.setattr(units, "user_systemd_available", lambda: (True, ""))
    monkeypatch.setattr(units.sys, "platform", "linux")
    home = tmp_path / "home"
    result = CliRunner().invoke(cli, ["install", "--dry-run"], env={"HOME": str(home)})
    assert result.exit_code == 0, result.output
    unit = home / ".config" / "systemd" / "user" / "harvester.service"
    assert str(unit) in result.output
    assert "ExecStart=" in result.output and "-m harvester run" in result.output
    assert "systemctl --user daemon-reload" in result.output
    assert "systemctl --user enable harvester.service" in result.output
    assert not unit.exists()  # a dry run changes nothing
    removed = CliRunner().invoke(cli, ["uninstall", "--dry-run"], env={"HOME": str(home)})
    assert removed.exit_code == 0 and "systemctl --user disable --now harvester.service" in removed.output


HELP_SECTIONS = {
    "Capture": ["scan", "reparse", "forget"],
    "Read": ["sessions", "show", "search", "context", "export", "usage", "serve"],
    "Agents": ["connect", "disconnect", "mcp"],
    "Switch": ["resume"],
    "Service": ["run", "install", "uninstall", "status", "config"],
    "Outbound": ["sink", "team"],
}


def test_help_lists_every_command_under_its_stage_with_its_whole_summary() -> None:
    """`harvester --help` reads as the pipeline: the commands under headings, in order, each summary whole (not cut
    at the width with "..."); a command registered under no heading would be missing from it."""
    text = CliRunner().invoke(cli, ["--help"], terminal_width=80, prog_name="harvester").output
    listed: dict[str, list[str]] = {}
    heading = None
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            heading = line[:-1]
            listed[heading] = []
        elif heading in HELP_SECTIONS and line.startswith("  ") and not line.startswith("   "):
            listed[heading].append(line.split()[0])
    assert {h: names for h, names in listed.items() if h in HELP_SECTIONS} == HELP_SECTIONS
    assert list(listed)[-len(HELP_SECTIONS):] == list(HELP_SECTIONS)
    assert sorted(n for names in HELP_SECTIONS.values() for n in names) == sorted(cli.list_commands(None))  # type: ignore[arg-type]
    commands = " ".join(text[text.index("\nCapture:"):].split())
    assert "..." not in commands
    for command in ("scan", "search", "sink"):  # each help's first sentence, as long as it is
        first = re.split(r"(?<=\.)\s", cli.get_command(None, command).help)[0]  # type: ignore[arg-type, union-attr]
        assert f"{command} {' '.join(first.split())}" in commands


def test_a_huge_agent_version_does_not_widen_every_row_of_status(tmp_path: Path) -> None:
    """An agent version is the transcript's (Claude Code's "version"): one of 100,000 characters padded every
    row of the harness table to its width, 7 MB for `status --all`. It is clipped, as a title is."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app", version="v" * 100_000)
    s.write(s.user("hello"))
    runner = CliRunner()
    env = {"HOME": str(home), "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")}
    assert runner.invoke(cli, ["--bank", str(bank), "scan"], env=env).exit_code == 0
    result = runner.invoke(cli, ["--bank", str(bank), "status", "--all"], env=env)
    assert result.exit_code == 0, result.output
    assert re.search(r"^claude-code +v{10}", result.output, re.M), result.output[:2000]
    assert max(len(line) for line in result.output.splitlines()) < 400
