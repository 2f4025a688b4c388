"""The first hour of a newcomer (issue 11): what scan, sessions, status, show, search and run say, on a
terminal (a pty, where it matters) and piped, and that the README's command table is what --help says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.daemon import Daemon, wait_for
from tests.helpers import ClaudeSession
from tests.test_terminal import on_a_terminal, terminal_env

ROOT = Path(__file__).resolve().parent.parent


def _home_with_sessions(home: Path, n: int = 3) -> list[ClaudeSession]:
    out = []
    for i in range(n):
        s = ClaudeSession(home, f"/work/app{i}")
        s.write(*s.conversation(2))
        out.append(s)
    return out


def _piped(home: Path, bank: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**terminal_env(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "harvester", "--bank", str(bank), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


# --- scan says what it did, briefly -----------------------------------------------------------------------

def test_scan_on_a_terminal_shows_one_progress_line_then_a_short_summary(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _home_with_sessions(home)
    code, out = on_a_terminal(terminal_env(home), "--bank", str(bank), "scan")
    assert code == 0, out
    assert "scanning claude-code: " in out  # the progress line, for the one agent that has a store
    assert "0/0" not in out and "codex" not in out and "no store found" not in out
    summary = out.rsplit("\x1b[2K", 1)[-1].strip().splitlines()  # after the progress line is cleared
    assert summary[0].startswith("+12 events in 3 sessions (") and summary[1].split() == [
        "claude-code", "+12", "events", "in", "3", "sessions"]
    assert summary[-1] == f"Bank: {bank}" and len(summary) == 3


def test_scan_piped_prints_no_progress_and_the_same_summary(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _home_with_sessions(home)
    result = _piped(home, bank, "scan")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.splitlines()[0].startswith("+12 events in 3 sessions")
    again = _piped(home, bank, "scan")
    assert again.stdout.count("\n") == 1 and again.stdout.startswith("Nothing new: 3 sources of 1 agent checked")


def test_scan_json_is_unchanged(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _home_with_sessions(home)
    report = orjson.loads(_piped(home, bank, "scan", "--json").stdout)
    assert set(report) == {"bank", "seconds", "bytes_read", "events_added", "harnesses"}
    assert {"name", "roots", "sources", "sources_read", "sessions", "events_added", "problems", "unreadable",
            "failed"} == set(report["harnesses"][0])


def test_scan_says_where_to_look_when_records_could_not_be_read(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(b"not json\n", *s.conversation(1))
    out = _piped(home, bank, "scan").stdout
    assert "1 record could not be read: `harvester status` says which and why." in out


# --- sessions fit the terminal --------------------------------------------------------------------------

def test_sessions_fit_an_80_column_terminal_and_json_keeps_every_value(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/a-repository-with-a-rather-long-name-indeed")
    s.write(s.user("a title that goes on and on " * 6), s.assistant("ok"))
    _piped(home, bank, "scan")
    code, out = on_a_terminal(terminal_env(home), "--bank", str(bank), "sessions", columns=80)
    assert code == 0
    rows = out.splitlines()
    assert len(rows) == 2 and all(len(row) <= 80 for row in rows), rows
    assert "…" in rows[1]
    [full] = orjson.loads(_piped(home, bank, "sessions", "--json").stdout)
    assert full["title"].startswith("a title that goes on and on a title") and full["native_id"] == s.id


# --- show, status and search in a reader's words ---------------------------------------------------------

def test_show_labels_tool_results_once(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("list"), s.tool_use("Bash", {"command": "ls"}, "t1"), s.tool_result("t1", "a.txt"))
    _piped(home, bank, "scan")
    out = _piped(home, bank, "show", s.id).stdout
    assert "] tool call [Bash]" in out and "] tool result [Bash]" in out and "tool tool" not in out


def test_status_counts_in_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harvester.cli import render_status as render
    from harvester.status import EMPTY_STATS

    row = {**EMPTY_STATS, "name": "codex", "label": "Codex", "roots": ["/r"], "sources_failed": 1,
           "sources_missing": 2, "unlisted_directories": [{"path": "/r/x", "reason": "Permission denied"}]}
    text = render.status_text({"bank": {"path": "/b", "size_bytes": 0}, "harnesses": [row], "recent_imports": [],
                               "recent_problems": []})
    assert "1 source failed" in text and "2 sources gone" in text and "1 directory cannot be listed" in text
    assert "1 sources" not in text


def test_status_right_after_an_import_does_not_say_never(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)
    daemon.config.write_text(daemon.config.read_text().replace("heartbeat_seconds = 0.3", "heartbeat_seconds = 60"))
    s = ClaudeSession(daemon.home, "/work/app")
    s.write(*s.conversation(1))
    daemon.start()
    try:
        wait_for(lambda: len(daemon.texts()) == 2, 15, "the first import")
        s.write(*s.conversation(1, start=1))
        wait_for(lambda: len(daemon.texts()) == 4, 15, "the import")
        status = orjson.loads(daemon.cli("status", "--json").stdout)
        assert status["service"]["running"] and status["service"]["last_activity"] is not None
    finally:
        daemon.stop()


@pytest.mark.parametrize("query", ["notes.txt", "cap-claude-code", "module 1", '"module 1 work"'])
def test_search_takes_what_people_type(tmp_path: Path, query: str) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("read notes.txt for cap-claude-code"), *s.conversation(3))
    _piped(home, bank, "scan")
    result = _piped(home, bank, "search", query)
    assert result.returncode == 0, result.stderr
    assert re.match(r"\d+ match(es)? for ", result.stdout), result.stdout


def test_search_says_how_many_matched_and_that_more_exist(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(30))
    _piped(home, bank, "scan")
    out = _piped(home, bank, "search", "module", "--limit", "5").stdout
    assert out.startswith("60 matches for 'module' in every repository; the best 5 (--limit for more):")
    assert len(out.strip().splitlines()) == 6
    assert _piped(home, bank, "search", "zebra").stdout.strip() == "No matches for 'zebra' in every repository."


def test_search_fts_syntax_on_request_with_errors_in_one_line(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(3))
    _piped(home, bank, "scan")
    assert _piped(home, bank, "search", "--fts", "module NOT work NOT parses").stdout.startswith("No matches")
    assert _piped(home, bank, "search", "--fts", "modul*").stdout.startswith("6 matches")
    bad = _piped(home, bank, "search", "--fts", "notes.txt")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) <= 2
    assert "not a valid FTS5 query" in bad.stderr and "plain words" in bad.stderr


def test_search_and_sessions_scope_to_a_repository(tmp_path: Path) -> None:
    from tests.helpers import make_repo

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    mine, theirs = make_repo(tmp_path / "mine"), make_repo(tmp_path / "theirs")
    for repo in (mine, theirs):
        s = ClaudeSession(home, str(repo))
        s.write(s.user(f"hello from {repo.name}"), s.assistant("hello"))
    _piped(home, bank, "scan")
    everywhere = _piped(home, bank, "search", "hello").stdout
    assert "coding-agent::mine" in everywhere and "coding-agent::theirs" in everywhere
    scoped = _piped(home, bank, "search", "hello", "--repo", str(mine)).stdout
    assert "coding-agent::mine" in scoped and "coding-agent::theirs" not in scoped
    env = {**terminal_env(home), "PYTHONPATH": str(ROOT)}
    here = subprocess.run([sys.executable, "-m", "harvester", "--bank", str(bank), "sessions", "--here", "--json"],
                          env=env, cwd=theirs, capture_output=True, text=True, timeout=60)
    assert [s["bank_id"] for s in orjson.loads(here.stdout)] == ["coding-agent::theirs"]
    both = _piped(home, bank, "search", "hello", "--here", "--bank", "x")
    assert both.returncode == 2 and "one of --repo, --here and --bank" in both.stderr


# --- the journal of a first run -----------------------------------------------------------------------

def test_the_first_run_logs_what_a_person_needs_not_every_old_session(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)
    for i in range(40):  # old history: written days ago
        s = ClaudeSession(daemon.home, f"/work/old{i}")
        s.write(*s.conversation(1))
        os.utime(s.path, (1.7e9, 1.7e9))
    daemon.start()
    try:
        wait_for(lambda: len(daemon.texts()) == 80, 20, "the old history")
        # Start-up done (a stop before it skips the rest of start-up, "service running" included).
        wait_for(lambda: '"service running"' in daemon.log.read_text(), 20, "the first judgement and the start")
    finally:
        daemon.stop()
    events = [orjson.loads(line)["event"] for line in daemon.log.read_text().splitlines() if line.startswith("{")]
    infos = [e for e in events if e not in ("committed",)]  # debug lines (the test runs the service at debug)
    assert "session state" not in infos  # no line per old session
    assert infos.count("session states") == 1
    assert "service running" in infos


# --- the README tells the truth about the commands ----------------------------------------------------------

def _help_commands_and_options() -> dict[str, set[str]]:
    from click.testing import CliRunner

    from harvester.cli import cli

    out: dict[str, set[str]] = {}
    for name in sorted(cli.commands):
        text = CliRunner().invoke(cli, [name, "--help"]).output
        out[name] = {o for o in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text) if o != "--help"}
    return out


def test_the_readme_command_table_is_what_help_says() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Commands"):readme.index("\n## ", readme.index("## Commands") + 5)]
    rows = [line for line in table.splitlines() if line.startswith("| `harvester ")]
    documented: dict[str, set[str]] = {}
    for row in rows:
        cell = re.split(r"(?<!\\)\|", row)[1]  # a cell may hold an escaped \| (the usage's alternatives)
        for usage in re.findall(r"`harvester ([^`]+)`", cell) or []:
            words = usage.split()
            names = [words[0]] + ([w for w in re.findall(r"/ `?([a-z]+)", cell)])
            for name in names:
                documented.setdefault(name, set()).update(re.findall(r"--[a-z][a-z-]*", usage))
    helped = _help_commands_and_options()
    assert set(documented) == set(helped), f"in the table, not --help: {set(documented) - set(helped)}; " \
                                           f"in --help, not the table: {set(helped) - set(documented)}"
    for name, options in helped.items():
        assert documented[name] == options, f"{name}: only in --help {options - documented[name]}, " \
                                            f"only in the README {documented[name] - options}"
