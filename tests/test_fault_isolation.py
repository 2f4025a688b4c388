"""One bad thing costs that thing: a record, a value or a whole store that cannot be used is counted and
shown, and every other source still imports; `scan` exits 0 while the bank is writable; `run` stays up.

Each case here stopped every later import before (issue 9, section 1).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.cli import cli
from harvester.parsers import HARNESSES
from tests.daemon import Daemon, wait_for
from tests.helpers import ClaudeSession, events_of, scan, sessions_of

CODEX_ID = "019ced18-04c9-7864-99ca-661252188bc9"


def _codex_rollout(home: Path, *items: dict) -> Path:
    folder = home / ".codex" / "sessions" / "2026" / "03" / "14"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-03-14T16-05-00-{CODEX_ID}.jsonl"
    meta = {"timestamp": "2026-03-14T16:05:00.233Z", "type": "session_meta",
            "payload": {"id": CODEX_ID, "timestamp": "2026-03-14T16:05:00.233Z", "cwd": "/work/codex-app",
                        "originator": "codex_cli_rs", "cli_version": "0.115.0"}}
    lines = [meta, *({"timestamp": "2026-03-14T16:05:01.000Z", "type": "response_item", "payload": p} for p in items)]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _problems(bank_path: Path) -> dict[tuple[str, int], tuple[str, str]]:
    with open_bank(bank_path) as bank:
        return {(Path(p).name, line): (kind, detail) for p, line, kind, detail in bank.conn.execute(
            "SELECT source_path, line, kind, detail FROM problems")}


def _cli(home: Path, bank: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)}, catch_exceptions=False)


def test_tool_calls_without_an_id_and_without_a_result_import_and_stop_nothing(tmp_path: Path) -> None:
    """A Claude tool_use without id and a Codex function_call without call_id, no result after either:
    before, `scan` died on "Dict key must be str" and imported nothing for any agent."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    claude = ClaudeSession(home, "/work/app")
    claude.write(claude.user("read it"), _without_id(claude.tool_use("Read", {}, "x")))
    other = ClaudeSession(home, "/work/other")
    other.write(*other.conversation(1))
    _codex_rollout(home, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}]},
                   {"type": "function_call", "name": "shell_command", "arguments": "{\"command\":\"ls\"}"})
    result = _cli(home, bank, "scan")
    assert result.exit_code == 0, result.output
    calls = [e for e in events_of(bank, claude.id) if e["kind"] == "tool_call"]
    assert [(e["tool_name"], e["tool_call_id"]) for e in calls] == [("Read", None)]
    assert len(events_of(bank, other.id)) == 2
    assert [e["tool_name"] for e in events_of(bank, CODEX_ID) if e["kind"] == "tool_call"] == ["shell_command"]


def _without_id(line: bytes) -> bytes:
    record = orjson.loads(line)
    del record["message"]["content"][0]["id"]
    return orjson.dumps(record) + b"\n"


def _deep(levels: int) -> dict:
    value: dict = {"leaf": "x"}
    for _ in range(levels):
        value = {"nested": value}
    return value


# A known field of the wrong type: (field, which record of the session, where it sits, value). Session facts
# are read from a session's first record: that is where a wrong one is met.
WRONG_TYPES = [
    ("timestamp", 0, ("timestamp",), {"$date": 1}),
    ("sessionId", 0, ("sessionId",), 12345),
    ("cwd", 0, ("cwd",), 42),
    ("model", 1, ("message", "model"), {"id": "claude"}),
    ("tool name", 1, ("message", "content", 0, "name"), {"not": "a name"}),
    ("nested input", 1, ("message", "content", 0, "input"), _deep(300)),
]


@pytest.mark.parametrize(("label", "index", "where", "value"), WRONG_TYPES, ids=[w[0] for w in WRONG_TYPES])
def test_a_wrong_typed_field_costs_its_value_not_the_scan(tmp_path: Path, label: str, index: int, where: tuple,
                                                          value: object) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    lines = [s.user("first"), s.tool_use("Bash", {"command": "ls"}, "toolu_1"), *s.conversation(1, start=2)]
    record = orjson.loads(lines[index])
    target = record
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    lines[index] = json.dumps(record).encode() + b"\n"  # orjson writes at most 254 levels; agents write more
    s.write(*lines)
    later = ClaudeSession(home, "/work/later")
    later.write(*later.conversation(1))
    result = _cli(home, bank, "scan")
    assert result.exit_code == 0, result.output
    texts = [e["text"] for e in events_of(bank, s.id)]
    assert len(events_of(bank, later.id)) == 2 and texts[-2].startswith("question 2")  # the rest: imported
    assert len(texts) == 4, texts  # the bad record too, without its bad value
    kind, detail = _problems(bank)[(s.path.name, index + 1)]
    assert kind == "malformed" and "wrong-typed" in detail, detail
    status = orjson.loads(_cli(home, bank, "status", "--json").output)
    claude = next(h for h in status["harnesses"] if h["name"] == "claude-code")
    assert claude["malformed"] == 1 and claude["sources_failed"] == 0


def test_a_corrupt_sqlite_store_is_unreadable_and_the_harnesses_after_it_still_import(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    store = home / ".local" / "share" / "opencode" / "opencode.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))  # the header, then garbage
    kilo = home / ".local" / "share" / "kilo" / "kilo.db"
    kilo.parent.mkdir(parents=True)
    kilo.write_bytes(os.urandom(4096))  # not even the header
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    cont = home / ".continue" / "sessions"  # Continue comes after both in the registry
    cont.mkdir(parents=True)
    (cont / "c1.json").write_bytes(orjson.dumps({"sessionId": "c1", "title": "t", "workspaceDirectory": "/w",
                                                 "history": [{"message": {"role": "user", "content": "hello"}}]}))
    result = _cli(home, bank, "scan")
    assert result.exit_code == 0, result.output
    assert {s["harness"] for s in sessions_of(bank)} == {"claude-code", "continue"}
    status = orjson.loads(_cli(home, bank, "status", "--json").output)
    rows = {h["name"]: h for h in status["harnesses"]}
    for name in ("opencode", "kilo"):
        assert rows[name]["sources_unreadable"] == 1 and rows[name]["unreadable"] == 1, rows[name]
    reasons = {p["detail"] for p in status["recent_problems"] if p["harness"] in ("opencode", "kilo")}
    assert any("not a readable SQLite database" in r for r in reasons), reasons
    assert any("not a SQLite database" in r for r in reasons), reasons


def test_any_exception_fails_that_source_alone_with_its_reason_then_clears(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The boundary: an exception nobody foresaw (here: the bank refusing one write as if a value could not be
    bound) fails that source, with the reason and line in status; the next source imports; the next scan
    retries it and, once it reads, the failure is gone."""
    import sqlite3

    from harvester.bank.sqlite import SqliteBank

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    bad = ClaudeSession(home, "/work/bad")
    bad.write(*bad.conversation(2))
    good = ClaudeSession(home, "/work/good")
    good.write(*good.conversation(2))
    real = SqliteBank.apply

    def refuse(self, write):  # type: ignore[no-untyped-def]
        if write.cursor.path == str(bad.path) and write.events:
            raise sqlite3.InterfaceError("Error binding parameter 4: type 'dict' is not supported")
        return real(self, write)

    monkeypatch.setattr(SqliteBank, "apply", refuse)
    result = _cli(home, bank, "scan")
    assert result.exit_code == 0, result.output
    assert len(events_of(bank, good.id)) == 4 and events_of(bank, bad.id) == []
    status = orjson.loads(_cli(home, bank, "status", "--json").output)
    claude = next(h for h in status["harnesses"] if h["name"] == "claude-code")
    assert claude["sources_failed"] == 1
    [failure] = claude["failures"]
    assert failure["path"] == str(bad.path) and failure["line"] == 1
    assert failure["reason"].startswith("a value the bank cannot store") and "InterfaceError" not in failure["reason"]
    text = _cli(home, bank, "status").output
    assert "FAILED" in text and f"{bad.path.name}:1: a value the bank cannot store" in text
    monkeypatch.setattr(SqliteBank, "apply", real)
    assert scan(home, bank).events_added == 4  # retried: it reads now
    status = orjson.loads(_cli(home, bank, "status", "--json").output)
    claude = next(h for h in status["harnesses"] if h["name"] == "claude-code")
    assert (claude["sources_failed"], claude["failures"], claude["failed"]) == (0, [], 0)


def test_a_parser_that_raises_on_a_record_costs_that_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(3))
    harness = HARNESSES["claude-code"]
    real = harness.parse

    def fragile(ref, records, state):  # type: ignore[no-untyped-def]
        if any(b"question 1:" in r.raw for r in records):
            raise KeyError("uuid")
        return real(ref, records, state)

    monkeypatch.setitem(HARNESSES, "claude-code", replace(harness, parse=fragile))
    report = scan(home, bank)
    assert report.events_added >= 4  # every record but the ones it cannot read
    problems = _problems(bank)
    details = [d for (name, _), (kind, d) in problems.items() if name == s.path.name]
    assert details and all("no 'uuid' field" in d for d in details), details
    assert not any("KeyError" in d for d in details)


def test_a_document_the_parser_cannot_read_fails_its_source_until_it_can(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    cont = home / ".continue" / "sessions"
    cont.mkdir(parents=True)
    (cont / "c1.json").write_bytes(orjson.dumps({"sessionId": "c1", "title": "t", "workspaceDirectory": "/w",
                                                 "history": [{"message": {"role": "user", "content": "hello"}}]}))
    harness = HARNESSES["continue"]

    def broken(ref, records, state):  # type: ignore[no-untyped-def]
        raise TypeError("'NoneType' object is not subscriptable")

    monkeypatch.setitem(HARNESSES, "continue", replace(harness, parse=broken))
    assert scan(home, bank).harnesses["continue"].failed == 1
    with open_bank(bank) as b:
        [(status, error)] = b.conn.execute("SELECT status, error FROM sources").fetchall()
    assert status == "failed" and "null where an object or an array was expected" in error
    monkeypatch.setitem(HARNESSES, "continue", harness)
    assert scan(home, bank).events_added == 1
    with open_bank(bank) as b:
        assert b.conn.execute("SELECT status FROM sources").fetchall() == [("ok",)]
        assert b.conn.execute("SELECT count(*) FROM problems").fetchone() == (0,)


def test_the_bank_that_cannot_be_written_is_the_one_failure_scan_exits_1_for(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(b"not json\n", *s.conversation(1))
    assert _cli(home, tmp_path / "b.sqlite", "scan").exit_code == 0
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(cli, ["--bank", str(blocker / "b.sqlite"), "scan"], env={"HOME": str(home)})
    assert result.exit_code == 1


def test_a_fifo_named_like_a_session_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Before, the service blocked in open() on it, ignored SIGTERM, and the heartbeat kept saying running."""
    daemon = Daemon(tmp_path)
    s = ClaudeSession(daemon.home, "/work/app")
    s.write(*s.conversation(1))
    daemon.start()
    try:
        wait_for(lambda: len(daemon.texts()) == 2, 15, "the first session")
        fifo = s.path.with_name("0000-fifo.jsonl")
        os.mkfifo(fifo)
        wait_for(lambda: daemon.query("SELECT status FROM sources WHERE path = ?", str(fifo)) == [("unreadable",)],
                 15, "the FIFO to be recorded")
        s.write(*s.conversation(1, start=1))  # still capturing
        wait_for(lambda: len(daemon.texts()) == 4, 15, "the append after the FIFO")
        [(error,)] = daemon.query("SELECT error FROM sources WHERE path = ?", str(fifo))
        assert error.startswith("a FIFO, not a regular file")
        started = time.monotonic()
        assert daemon.stop(signal.SIGTERM) == 0
        assert time.monotonic() - started < 2
    finally:
        if daemon.proc is not None:
            daemon.proc.kill()


def test_scan_finds_and_refuses_a_fifo(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    os.mkfifo(s.path.with_name("fifo.jsonl"))
    report = scan(home, bank)
    assert report.events_added == 2 and report.harnesses["claude-code"].unreadable == 1
    assert _problems(bank)[("fifo.jsonl", 0)] == ("unreadable", "a FIFO, not a regular file: not read")


def test_run_survives_a_poisoned_store_at_start_up(tmp_path: Path) -> None:
    """The tool_use without id made `run` exit at start-up (systemd then restarts it for ever)."""
    daemon = Daemon(tmp_path)
    s = ClaudeSession(daemon.home, "/work/app")
    s.write(s.user("read it"), _without_id(s.tool_use("Read", {}, "x")))
    daemon.start()
    try:
        wait_for(lambda: len(daemon.texts()) == 2, 15, "the poisoned session")
        later = ClaudeSession(daemon.home, "/work/later")
        later.write(*later.conversation(1))
        wait_for(lambda: len(daemon.texts()) == 4, 15, "a new session after it")
        assert daemon.stop() == 0
    finally:
        if daemon.proc is not None:
            daemon.proc.kill()


def test_problems_of_every_parser_say_what_is_wrong_in_words(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1), orjson.dumps({"type": "user", "uuid": 5, "message": []}) + b"\n")
    with open_bank(bank) as b, Ingestor(b, "coding-agent::{gitProject}") as ingestor:
        ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(home)}, home)
        details = [d for (d,) in b.conn.execute("SELECT detail FROM problems")]
    assert details and not any("Error(" in d for d in details), details
