"""Kimi Work (the Kimi desktop app's agent): its conversations are Kimi Code sessions kept in the app's runtime
folder (fixtures/kimi_work/hand), read by Kimi Code's parser; the runtime's own helper sessions are not read."""

from __future__ import annotations

from pathlib import Path

from harvester.parsers import HARNESSES
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "kimi-work"
RUNTIME = ".config/kimi-desktop/daimon-share/daimon/runtime/kimi-code/home"
CONV = "conv-7c2d3e4f-0000-4000-8000-0000000000a1"


def test_conversations_are_read_and_helper_sessions_are_not(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / RUNTIME).parent.mkdir(parents=True)
    (home / RUNTIME).symlink_to(FIXTURES / "kimi_work" / "hand", target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {CONV}  # not the ctitle-* title generation
    assert events_of(bank, CONV)[0]["text"] == "fix the failing date test"
    assert (session_of(bank, CONV)["cwd"], session_of(bank, CONV)["title"]) == ("/home/dev/src/demo-repo",
                                                                                "Fix the date test")


def test_roots_per_os() -> None:
    from harvester.parsers import kimi_work
    home = Path("/h")
    tail = Path("kimi-desktop/daimon-share/daimon/runtime/kimi-code/home")
    assert kimi_work.roots_for("linux", {}, home) == [home / ".config" / tail, home / ".local/share" / tail]
    assert kimi_work.roots_for("darwin", {}, home) == [home / "Library/Application Support" / tail]
    assert kimi_work.roots_for("win32", {"APPDATA": "C:/R"}, home) == [Path("C:/R") / tail]
    assert HARNESSES[NAME].sources
