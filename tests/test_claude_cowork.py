"""Claude Desktop's Cowork sessions: Claude Code transcripts inside the app's session folders, with the
app's metadata file laid over them (fixtures/claude_cowork/SOURCE.md)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

from harvester.parsers import HARNESSES, claude_code, claude_cowork
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "claude_cowork" / "hand"
MAIN = "7a1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a41"  # titled, one attached folder, a subagent
SUB = f"{MAIN}:agent-a1f0c2d3e4b5a697"
BARE = "8b2f3c4d-5e6f-4a71-9b8c-0d1e2f3a4b52"  # no title, no folder: the VM's cwd is all there is


def _home(tmp: Path) -> Path:
    home = tmp / "home"
    shutil.copytree(HAND, home / ".config" / "Claude" / "local-agent-mode-sessions")
    return home


def test_roots_per_os() -> None:
    got = claude_cowork.roots({}, Path("/h"))
    assert Path("/h/.config/Claude/local-agent-mode-sessions") in got
    assert Path("/h/Library/Application Support/Claude/local-agent-mode-sessions") in got
    assert Path("/h/AppData/Roaming/Claude/local-agent-mode-sessions") in got
    assert Path("/x/Claude/local-agent-mode-sessions") in claude_cowork.roots({"XDG_CONFIG_HOME": "/x"}, Path("/h"))


def test_every_transcript_takes_the_session_metadata_file() -> None:
    base = PurePath("/r/org/ws/local_1")
    assert claude_cowork._session_metadata(base / ".claude/projects/-s/c.jsonl") == PurePath("/r/org/ws/local_1.json")
    assert claude_cowork._session_metadata(base / ".claude/projects/-s/c/subagents/agent-a.jsonl") == \
        PurePath("/r/org/ws/local_1.json")


def test_metadata_gives_title_and_real_folder(tmp_path: Path) -> None:
    home = _home(tmp_path)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (claude_cowork.NAME,))
    assert report.harnesses[claude_cowork.NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {MAIN, SUB, BARE}  # a never-run session has none
    main = session_of(bank, MAIN)
    assert (main["title"], main["cwd"]) == ("Tidy the quarterly report", "/home/dev/Documents/reports")
    assert main["meta"]["cowork"]["vm_cwd"] == "/sessions/brave-lamport"
    sub = session_of(bank, SUB)
    assert (sub["parent_native_id"], sub["parent_kind"], sub["cwd"]) == (MAIN, "subagent",
                                                                         "/home/dev/Documents/reports")
    assert session_of(bank, BARE)["cwd"] == "/sessions/quiet-hopper"
    assert shapes(events_of(bank, MAIN)) == [("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
                                             ("assistant", "text")]


def test_claude_code_does_not_read_cowork_files(tmp_path: Path) -> None:
    home = _home(tmp_path)
    # ~/.config/claude/projects is one of Claude Code's roots: Cowork's folder beside it is not under it.
    assert not any(r.is_relative_to(home / ".config" / "Claude" / "local-agent-mode-sessions")
                   for r in HARNESSES[claude_code.NAME].roots({}, home))
    assert scan(home, tmp_path / "bank.sqlite", (claude_code.NAME,)).harnesses[claude_code.NAME].sources == 0
