"""Windsurf, and the general mechanism it uses: a harness that finds an agent's store it cannot read
(encrypted) reports it, so `status` says "present, not readable" instead of showing the agent as unused."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from harvester.cli.render_status import status_text
from harvester.parsers import HARNESSES, windsurf
from harvester.parsers.base import OPAQUE_COUNT_CAP, Harness, OpaqueStore, opaque_found
from harvester.status import EMPTY_STATS
from tests.helpers import FIXTURES, scan
from tests.machine import harvester_cli

HAND = FIXTURES / "windsurf" / "hand"


def _home(tmp: Path) -> Path:
    home = tmp / "home"
    shutil.copytree(HAND, home / ".codeium" / "windsurf")
    return home


def test_opaque_store_is_counted_never_read(tmp_path: Path) -> None:
    home = _home(tmp_path)
    harness = HARNESSES[windsurf.NAME]
    found = opaque_found(harness, harness.roots({}, home))
    assert found == [{"path": str(home / ".codeium/windsurf/cascade/*.pb"), "files": 2, "capped": False,
                      "reason": windsurf.OPAQUE[0].reason}]  # user_settings.pb beside cascade/ is no conversation
    report = scan(home, tmp_path / "bank.sqlite", (windsurf.NAME,), env={"HOME": str(home)})
    assert (report.harnesses[windsurf.NAME].sources, report.harnesses[windsurf.NAME].problems) == (0, 0)


def test_no_store_no_note(tmp_path: Path) -> None:
    harness = HARNESSES[windsurf.NAME]
    (tmp_path / ".codeium" / "windsurf" / "cascade").mkdir(parents=True)  # the folder alone is not a store
    assert opaque_found(harness, harness.roots({}, tmp_path)) == []


def test_counting_stops_at_the_cap(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import harvester.parsers.base as base

    monkeypatch.setattr(base, "OPAQUE_COUNT_CAP", 3)
    for n in range(5):
        (tmp_path / f"{n}.bin").write_bytes(b"x")
    harness = Harness("x", lambda env, home: [], (), lambda *a: None, opaque=(OpaqueStore("*.bin", "why"),))
    assert opaque_found(harness, [tmp_path]) == [{"path": str(tmp_path / "*.bin"), "files": 3, "capped": True,
                                                  "reason": "why"}]
    assert OPAQUE_COUNT_CAP == 10_000


def test_status_says_present_not_readable(tmp_path: Path) -> None:
    _home(tmp_path)
    shown = harvester_cli(tmp_path, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    row = next(h for h in orjson.loads(shown.stdout)["harnesses"] if h["name"] == windsurf.NAME)
    assert (row["sessions"], row["not_readable"][0]["files"]) == (0, 2)
    other = next(h for h in orjson.loads(shown.stdout)["harnesses"] if h["name"] == "codex")
    assert other["not_readable"] == []
    text = harvester_cli(tmp_path, "status")
    assert text.returncode == 0, text.stderr
    line = next(line for line in text.stdout.splitlines() if line.startswith("windsurf "))
    assert line.split()[-1] == "readable" and "not readable" in line  # the PARSE column
    assert (f"  windsurf: present, not readable: 2 files in {tmp_path / 'home/.codeium/windsurf/cascade/*.pb'} "
            f"({windsurf.OPAQUE[0].reason})") in text.stdout


def test_rendered_note_for_a_capped_count() -> None:
    row = {**EMPTY_STATS, "name": "windsurf", "roots": ["/h/.codeium/windsurf"], "sessions_older_parser": 0,
           "not_readable": [{"path": "/h/.codeium/windsurf/cascade/*.pb", "files": 10_000, "capped": True,
                             "reason": "encrypted"}]}
    text = status_text({"bank": {"path": "/b", "size_bytes": 0}, "harnesses": [row], "recent_imports": []})
    assert "windsurf: present, not readable: 10,000+ files in /h/.codeium/windsurf/cascade/*.pb (encrypted)" in text


# The editor's chat panel (before Cascade) kept its chats in the workspace's state.vscdb, where agentsview reads
# them: fixtures/windsurf/hand-chat (laid out like ~/.config/Windsurf).
CHAT = FIXTURES / "windsurf" / "hand-chat"
TAB1, TAB2, SESSION = ("2b0e7c51-0000-4000-8000-00000000a001", "2b0e7c51-0000-4000-8000-00000000a002",
                       "7d2f4a10-0000-4000-8000-00000000b001")


def test_chat_panel_tabs_and_sessions_in_workspace_state_are_read(tmp_path: Path) -> None:
    import sqlite3

    from tests.helpers import events_of, session_of, sessions_of

    home = tmp_path / "home"
    shutil.copytree(CHAT, home / ".config" / "Windsurf")
    for sql in (home / ".config" / "Windsurf").rglob("state.sql"):
        conn = sqlite3.connect(sql.with_name("state.vscdb"))
        conn.executescript(sql.read_text())
        conn.commit()
        conn.close()
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (windsurf.NAME,), env={"HOME": str(home)})
    assert report.harnesses[windsurf.NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {TAB1, TAB2, SESSION}  # the empty tab is no session
    assert [(e["role"], e["text"]) for e in events_of(bank, TAB1)] == [
        ("user", "Why is CI red on main?"),
        ("assistant", "The lint job fails: `ruff` flags an unused import in app/cli.py."),
        ("user", "Remove it then."), ("assistant", "Removed `import os` from app/cli.py; the lint job passes locally.")]
    assert [e["role"] for e in events_of(bank, TAB2)] == ["user", "assistant"]
    assert events_of(bank, TAB2)[0]["text"] == "Explain the retry decorator"
    assert [e["text"] for e in events_of(bank, SESSION)] == [
        "Port parse_feed to asyncio.", "Use `aiohttp` for the fetch and `asyncio.gather` for the batch.",
        "And the tests?", "Mark them with `pytest.mark.asyncio`. Add pytest-asyncio to the dev dependencies."]
    first = session_of(bank, TAB1)
    assert (first["cwd"], first["title"]) == ("/home/dev/src/demo-repo", "Why is CI red?")
    assert session_of(bank, SESSION)["title"] == "Port the parser to asyncio"
    assert session_of(bank, SESSION)["started_at"] == "2025-05-24T15:20:00.000Z"
