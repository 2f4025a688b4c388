"""OpenClaude (a Claude Code fork for other model providers): its store is Claude Code's, under ~/.openclaude
(fixtures/openclaude/hand), read by Claude Code's parser as a harness of its own."""

from __future__ import annotations

from pathlib import Path

from harvester.parsers import HARNESSES
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "openclaude"
SESSION = "c41e9a27-5d60-4f1b-8e3a-7b2c9d0e1f58"


def test_sessions_under_openclaudes_config_dir_are_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".openclaude").symlink_to(FIXTURES / "openclaude" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    events = events_of(bank, SESSION)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text")]
    assert events[0]["text"] == "Why does `make lint` take 40 seconds?"
    session = session_of(bank, SESSION)
    assert (session["cwd"], session["model"], session["agent_version"]) == (
        "/home/dev/src/demo-repo", "gpt-5-codex", "0.9.2")


def test_roots_follow_openclaude_config_dir() -> None:
    roots = HARNESSES[NAME].roots
    assert roots({}, Path("/h")) == [Path("/h/.openclaude/projects")]
    assert roots({"OPENCLAUDE_CONFIG_DIR": "/c"}, Path("/h")) == [Path("/c/projects")]
