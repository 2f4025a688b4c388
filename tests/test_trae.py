"""Trae IDE: the agent panel's session list in ``state.vscdb`` is read; the encrypted agent store beside
it is only said to be there (fixtures/trae/SOURCE.md).

The hand-written stores are kept as SQL text; each test builds the ``state.vscdb`` files in a copy.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from harvester.bank import open_bank
from harvester.parsers import HARNESSES, trae
from harvester.parsers.base import Record, SourceRef, opaque_found
from tests.helpers import FIXTURES, event_identities, events_of, scan, session_of, sessions_of
from tests.machine import harvester_cli

HAND = FIXTURES / "trae" / "hand"
CWD = "/home/dev/src/demo-repo"
WORKSPACE = "User/workspaceStorage/7c4e9a1f2b3d5e6f8a0b1c2d3e4f5a6b/state.vscdb"
GLOBAL = "User/globalStorage/state.vscdb"
G = "65f1a2b3c4d5e6f708192a3b"  # global store, older build: messages inline, answers in agentTaskContent
S = "69a93d73f7a767db95a1fa7e"  # global store, current build: a stub (its conversation is encrypted)
W = "66a0b1c2d3e4f5061728394a"  # a workspace's store: cwd from workspace.json, times as text


def _home(tmp: Path, product: str = "Trae") -> Path:
    """A HOME with the hand tree as ``product``'s data folder, every ``state.sql`` built into its database."""
    home = tmp / "home"
    shutil.copytree(HAND, home / ".config" / product)
    for sql in (home / ".config" / product).rglob("state.sql"):
        conn = sqlite3.connect(sql.with_name("state.vscdb"))
        conn.executescript(sql.read_text())
        conn.commit()
        conn.close()
        sql.unlink()
    return home


def _read(tmp: Path, home: Path) -> tuple[Path, int]:
    report = scan(home, tmp / "bank.sqlite", (trae.NAME,), env={"HOME": str(home)})
    return tmp / "bank.sqlite", report.harnesses[trae.NAME].problems


def _memento(db: Path) -> dict:
    conn = sqlite3.connect(db)
    value = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (trae.STORAGE_KEY,)).fetchone()[0]
    conn.close()
    return orjson.loads(value)


def _rewrite(db: Path, storage: dict | str) -> None:
    """As VS Code's storage writes a key: INSERT into a UNIQUE ON CONFLICT REPLACE key (a new rowid)."""
    conn = sqlite3.connect(db)
    value = storage if isinstance(storage, str) else orjson.dumps(storage).decode()
    conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (trae.STORAGE_KEY, value))
    conn.commit()
    conn.close()


def _drift(bank: Path) -> dict:
    with open_bank(bank) as b:
        return b.harness_stats()[trae.NAME]["drift"]


def test_roots_per_os_and_build() -> None:
    got = trae.roots({}, Path("/h"))
    assert Path("/h/.config/Trae") in got and Path("/h/.config/Trae CN") in got
    assert Path("/h/Library/Application Support/TRAE SOLO CN") in got
    assert Path("/h/AppData/Roaming/Trae") in got
    assert Path("C:/Users/u/AppData/Roaming/Trae") in trae.roots({"APPDATA": "C:/Users/u/AppData/Roaming"}, Path("/h"))
    assert Path("/x/Trae CN") in trae.roots({"XDG_CONFIG_HOME": "/x"}, Path("/h"))


def test_sessions(tmp_path: Path) -> None:
    bank, problems = _read(tmp_path, _home(tmp_path))
    assert problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {G, W}  # S is a stub: nothing to show
    g, w = session_of(bank, G), session_of(bank, W)
    assert (g["cwd"], g["model"], g["started_at"], g["updated_at"]) == (
        None, "claude-sonnet-4", "2026-11-25T10:00:00.000Z", "2026-11-25T10:05:00.000Z")
    assert (w["cwd"], w["bank_id"], w["model"]) == (CWD, "coding-agent::demo-repo", "doubao-seed-code")
    assert (w["started_at"], w["updated_at"]) == ("2026-11-26T09:30:00.000Z", "2026-11-26T09:32:10.000Z")
    assert (g["meta"]["current"], w["meta"]["current"]) == (False, True)


def test_events_in_order(tmp_path: Path) -> None:
    bank, _ = _read(tmp_path, _home(tmp_path))
    events = events_of(bank, G)
    assert [(e["uid"], e["role"], e["kind"]) for e in events] == [
        ("0", "user", "text"), ("1", "assistant", "text"), ("2", "user", "text"), ("3", "assistant", "text")]
    assert events[1]["text"].startswith("`retry()` calls the function")  # agentTaskContent.content
    assert events[3]["text"] == ("Add a delays parameter to retry()\nDefault it to (0.5, 1, 2)\n"
                                 "Cover it in test_net.py")  # a plan's items
    assert [e["ts"] for e in events] == ["2026-11-25T10:00:00.000Z", "2026-11-25T10:00:30.000Z",
                                         "2026-11-25T10:03:20.000Z", "2026-11-25T10:05:00.000Z"]
    assert {e["model"] for e in events} == {"claude-sonnet-4"}  # the session's, where a message names none
    assert [e["model"] for e in events_of(bank, W)] == [None, "doubao-seed-code", None, "doubao-seed-code"]
    assert "parsedQuery" not in str(events_of(bank))  # the input history is not read


def test_the_list_rewritten_is_revised_not_duplicated(tmp_path: Path) -> None:
    home = _home(tmp_path)
    bank, _ = _read(tmp_path, home)
    before = events_of(bank, W)
    db = home / ".config/Trae" / WORKSPACE
    storage = _memento(db)
    messages = storage["list"][0]["messages"]
    messages[3]["content"] += " It passes."  # the answer grew while it streamed
    messages.append({"role": "user", "content": "Run it", "timestamp": 1795685600000, "turnIndex": 4})
    _rewrite(db, storage)
    bank, problems = _read(tmp_path, home)
    after = events_of(bank, W)
    assert problems == 0
    assert [e["uid"] for e in after] == ["0", "1", "2", "3", "4"]
    assert [e["seq"] for e in after[:4]] == [e["seq"] for e in before]  # in place
    assert after[3]["text"].endswith("It passes.")
    assert event_identities(bank) == event_identities(_read(tmp_path, home)[0])  # again: nothing new


def test_a_stub_that_gets_messages_becomes_a_session(tmp_path: Path) -> None:
    """An older build writes a session's messages into the list once it has some."""
    home = _home(tmp_path)
    _read(tmp_path, home)
    db = home / ".config/Trae" / GLOBAL
    storage = _memento(db)
    storage["list"][1]["messages"] = [{"role": "user", "content": "hello"}]
    _rewrite(db, storage)
    bank, _ = _read(tmp_path, home)
    assert [e["text"] for e in events_of(bank, S)] == ["hello"]
    assert session_of(bank, S)["meta"]["current"] is True  # currentSessionId


def test_unknown_shapes_are_drift(tmp_path: Path) -> None:
    home = _home(tmp_path)
    db = home / ".config/Trae" / GLOBAL
    storage = _memento(db)
    storage["list"][0]["messages"] += [
        {"role": "system", "content": "injected"}, {"role": "tool", "content": "x"},
        {"role": "assistant", "content": "", "agentTaskContent": {"diff": {"a": 1}}},
        {"role": "assistant", "agentTaskContent": 7}, {"role": "tool", "content": "y"}]
    _rewrite(db, storage)
    _rewrite(home / ".config/Trae" / WORKSPACE, {"sessions": []})
    bank, problems = _read(tmp_path, home)
    assert problems == 5  # each kind once per read (the bank keeps one a kind for the row)
    assert set(_drift(bank)) == {"agentTaskContent neither text nor an object",
                                 f"{trae.STORAGE_KEY} without a session list"}
    assert len(events_of(bank, G)) == 4  # the rest still imports
    assert [p.detail for p in _parse(storage).problems] == [
        "message role='system'", "message role='tool'", "agentTaskContent with fields ['diff']",
        "agentTaskContent neither text nor an object"]


def test_malformed_values_are_counted(tmp_path: Path) -> None:
    home = _home(tmp_path)
    db = home / ".config/Trae" / GLOBAL
    storage = _memento(db)
    storage["list"] += [{"messages": [{"role": "user", "content": "no id"}]}, 5, dict(storage["list"][0]),
                        {"sessionId": "7a", "messages": {"role": "user"}}]
    _rewrite(db, storage)
    _rewrite(home / ".config/Trae" / WORKSPACE, '{"list": [')
    bank, problems = _read(tmp_path, home)
    assert problems == 5  # no sessionId, not an object, listed twice, messages not an array, not JSON
    assert len(events_of(bank, G)) == 4


def _parse(storage: dict, variant: str = "global", sidecar: bytes | None = None):
    row = {"table": "memento", "row": {"rid": 1, "key": trae.STORAGE_KEY, "value": orjson.dumps(storage).decode()}}
    ref = SourceRef(Path("/r/User/globalStorage/state.vscdb"), Path("/r"), variant, sidecar=sidecar)
    return trae.parse(ref, [Record(0, orjson.dumps(row))], {})


@pytest.mark.parametrize(("value", "iso"), [
    (1795600800000, "2026-11-25T10:00:00.000Z"), (1795600800, "2026-11-25T10:00:00.000Z"),
    ("2026-11-25T10:00:00Z", "2026-11-25T10:00:00.000Z"), ("2026-11-25T18:00:00+08:00", "2026-11-25T10:00:00.000Z"),
    ("yesterday", None), (True, None)])
def test_times_in_milliseconds_seconds_or_text(value: object, iso: str | None) -> None:
    batch = _parse({"list": [{"sessionId": "s", "createdAt": value, "messages": [
        {"role": "user", "content": "hi", "timestamp": value}]}]})
    assert (batch.sessions["s"].started_at, batch.events[0].ts) == (iso, iso)


@pytest.mark.parametrize(("folder", "cwd"), [
    ("file:///home/dev/src/demo-repo", CWD), ("file:///c%3A/Users/dev/repo", "c:/Users/dev/repo"),
    ("vscode-remote://ssh-remote%2Bbox/home/dev", None), (None, None)])
def test_workspace_folder(folder: str | None, cwd: str | None) -> None:
    sidecar = orjson.dumps({"folder": folder} if folder else {"workspace": "file:///w.code-workspace"})
    batch = _parse({"list": [{"sessionId": "s", "messages": [{"role": "user", "content": "hi"}]}]}, "workspace",
                   sidecar)
    assert batch.sessions["s"].cwd == cwd


def test_encrypted_store_is_counted_never_read(tmp_path: Path) -> None:
    home = _home(tmp_path, "Trae CN")
    harness = HARNESSES[trae.NAME]
    found = opaque_found(harness, harness.roots({}, home))
    assert [(f["path"], f["files"]) for f in found] == [
        (str(home / ".config/Trae CN/ModularData/ai-agent/database.db"), 1)]
    report = scan(home, tmp_path / "bank.sqlite", (trae.NAME,), env={"HOME": str(home)})
    assert (report.harnesses[trae.NAME].sources, report.harnesses[trae.NAME].problems) == (2, 0)


def test_status_shows_sessions_and_the_store_not_readable(tmp_path: Path) -> None:
    _home(tmp_path)
    assert harvester_cli(tmp_path, "scan", "--json").returncode == 0
    shown = harvester_cli(tmp_path, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    row = next(h for h in orjson.loads(shown.stdout)["harnesses"] if h["name"] == trae.NAME)
    assert (row["sessions"], row["not_readable"][0]["files"]) == (2, 1)
    assert row["not_readable"][0]["reason"] == trae.OPAQUE[0].reason
