"""Positron Assistant: Positron's chat sessions, read by VS Code's chat parser (fixtures/positron/hand/README.md)."""

from __future__ import annotations

from pathlib import Path

from harvester.parsers import vscode_copilot
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "positron"
DOC, LOG = "b3e1c2d4-5f6a-4b7c-8d9e-0a1b2c3d4e51", "c4f2d3e5-6a7b-4c8d-9e0f-1a2b3c4d5e62"


def test_positrons_user_folder_both_formats(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "Positron").mkdir(parents=True)
    (home / ".config" / "Positron" / "User").symlink_to(FIXTURES / "positron" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME, "vscode-copilot"), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    assert {(s["harness"], s["native_id"]) for s in sessions_of(bank)} == {(NAME, DOC), (NAME, LOG)}
    events = events_of(bank, DOC)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text"), ("user", "text"), ("assistant", "text")]
    assert events[4]["text"].startswith("'data.frame': 7043 obs.") and events[4]["tool_call_id"] == "toolu_pos1"
    assert events[0]["meta"]["agent"] == "positron.assistant.agent"
    doc = session_of(bank, DOC)
    assert (doc["cwd"], doc["title"], doc["model"]) == (
        "/home/dev/src/demo-repo", "Model the churn data", "anthropic-api/claude-sonnet-4-5")
    assert [e["text"] for e in events_of(bank, LOG)][-1].startswith("You mapped `aes()`")
    assert session_of(bank, LOG)["title"] == "Empty ggplot"


def test_the_user_folder_by_platform(tmp_path: Path) -> None:
    assert vscode_copilot.roots_for("linux", {}, tmp_path, ("Positron",)) == [tmp_path / ".config/Positron/User"]
    assert vscode_copilot.roots_for("darwin", {}, tmp_path, ("Positron",)) == [
        tmp_path / "Library/Application Support/Positron/User"]
    assert vscode_copilot.roots_for("win32", {"APPDATA": "/a"}, tmp_path, ("Positron",)) == [Path("/a/Positron/User")]
