"""Kiro IDE: workspace sessions, their execution logs, and the older .chat files (fixtures/kiro/SOURCE.md)."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

from harvester.parsers import kiro
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

HAND = FIXTURES / "kiro" / "hand"
FOLDER = "L2hvbWUvZGV2L2RlbW8tcmVwbw=="
S1 = "6b1f3e2a-9c4d-4e8f-a7b6-5d4c3b2a1f0e"


def test_roots_are_the_extensions_folder_in_kiros_user_dir() -> None:
    home = Path("/home/u")
    got = kiro.roots({"XDG_CONFIG_HOME": "/c", "APPDATA": "/a"}, home)
    assert got == [Path("/c/Kiro/User/globalStorage/kiro.kiroagent"),
                   home / "Library/Application Support/Kiro/User/globalStorage/kiro.kiroagent",
                   Path("/a/Kiro/User/globalStorage/kiro.kiroagent")]


def test_the_folder_name_is_the_workspace_in_base64() -> None:
    assert kiro.workspace_of(FOLDER) == "/home/dev/demo-repo"
    assert kiro.workspace_of("ZDpcUHJvamVjdHNcVENJU2FsZVBvcnRhbFxBUElTYWxlUG9ydGFs") == "d:\\Projects\\TCISalePortal\\APISalePortal"
    assert kiro.workspace_of("%%%") is None


def test_execution_logs_are_the_related_documents() -> None:
    related = kiro._execution_logs(PurePath(HAND / "workspace-sessions" / FOLDER / f"{S1}.json"))
    assert [p.name for p in related] == ["9a8b7c6d5e4f3a2b1c0d"]


def test_the_log_is_the_answer_and_prompt_logs_stand_in_without_one(tmp_path: Path) -> None:
    root = tmp_path / "home/.config/Kiro/User/globalStorage/kiro.kiroagent"
    shutil.copytree(HAND, root)
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, (kiro.NAME,), env={"HOME": str(tmp_path / "home")})
    events = events_of(bank, S1)
    assert [e["tool_name"] for e in events if e["kind"] == "tool_call"] == ["readCode", "replace", "create"]
    assert "On it." not in [e["text"] for e in events]
    assert events[-1]["text"] == "It builds the wheel and runs the tests."  # its log is missing
    session = session_of(bank, S1)
    assert (session["cwd"], session["title"]) == ("/home/dev/demo-repo", "Add a health check endpoint")
    chat = session_of(bank, "8d1ff66e98f32b7ae0a5c52cedfb0a84:0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e")
    assert chat["cwd"] == "/home/dev/demo-repo" and chat["model"] == "claude-sonnet-4"
    roles = [e["role"] for e in events_of(bank, chat["native_id"])]
    assert roles == ["system", "user", "assistant", "tool"]  # the rules' acknowledgement is left out


def test_unknown_roles_and_actions_are_drift() -> None:
    doc = (b'{"sessionId": "s", "history": [{"message": {"role": "critic", "content": "x"}},'
           b' {"message": {"role": "assistant", "content": "y"}, "executionId": "e"}]}')
    log = b'{"executionId": "e", "actions": [{"actionType": "teleport"}]}'
    ref = SourceRef(PurePath("/r/workspace-sessions/f/s.json"), PurePath("/r"), "session")
    batch = kiro.parse(ref, [Record(1, doc), Record(2, log)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type"]
