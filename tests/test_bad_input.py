"""Bad input gets a clear outcome: counted, logged with path and line, skipped; the rest imports."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.cli import cli
from harvester.parsers import HARNESSES
from tests.helpers import ClaudeSession, events_of, scan


def _problems(bank_path: Path) -> list[tuple]:
    bank = open_bank(bank_path)
    try:
        return [
            tuple(r)
            for r in bank.conn.execute(
                "SELECT harness, source_path, line, kind FROM problems ORDER BY source_path, line"
            )
        ]
    finally:
        bank.close()


def test_malformed_line_and_invalid_utf8_are_counted_and_skipped(tmp_path: Path) -> None:
    import io

    import orjson

    from harvester import log

    logged = io.StringIO()
    log.configure("warning", stream=logged)
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    lines = s.conversation(2)
    s.write(
        lines[0],
        b'{"type": "user", "message": {"content": "unterminated\n',
        b'\xff\xfe{"type":"x"}\n',
        *lines[1:],
    )
    report = scan(home, bank)
    assert report.events_added == 4
    assert report.harnesses["claude-code"].problems == 2
    assert _problems(bank) == [
        ("claude-code", str(s.path), 2, "malformed"),
        ("claude-code", str(s.path), 3, "malformed"),
    ]
    records = [orjson.loads(line) for line in logged.getvalue().splitlines()]
    skipped = [(r["path"], r["line"], r["kind"]) for r in records if r["event"] == "record skipped"]
    assert skipped == [(str(s.path), 2, "malformed"), (str(s.path), 3, "malformed")]
    # Re-scanning the same bytes does not count them again.
    s.write(*s.conversation(1, start=5))
    scan(home, bank)
    assert len(_problems(bank)) == 2


def test_unknown_record_type_is_counted_as_drift(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("hello"), b'{"type": "hologram", "uuid": "x1", "sessionId": "s"}\n', s.assistant("hi"))
    scan(home, bank)
    assert _problems(bank) == [("claude-code", str(s.path), 2, "unknown_type")]
    result = CliRunner().invoke(cli, ["--bank", str(bank), "status", "--json"], env={"HOME": str(home)})
    import orjson

    claude = next(h for h in orjson.loads(result.output)["harnesses"] if h["name"] == "claude-code")
    assert claude["unknown_types"] == 1 and claude["drift"] == {"type='hologram'": 1}
    assert [e["text"] for e in events_of(bank)] == ["hello", "hi"]


def test_fifty_megabyte_line_is_skipped_as_oversize(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    huge = b'{"type":"user","message":{"content":"' + b"x" * (50 * 1024 * 1024) + b'"}}\n'
    s.write(s.user("before"), huge, s.assistant("after"))
    report = scan(home, bank)
    assert report.events_added == 2
    assert _problems(bank) == [("claude-code", str(s.path), 2, "oversize")]
    assert [e["text"] for e in events_of(bank)] == ["before", "after"]


def test_empty_file_is_a_source_with_nothing_in_it(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.path.write_bytes(b"")
    report = scan(home, bank)
    assert report.harnesses["claude-code"].sources == 1 and report.events_added == 0
    assert _problems(bank) == []
    s.write(*s.conversation(1))
    assert scan(home, bank).events_added == 2


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI runs as root, where chmod 0 does not stop reads: make open() fail the way it would."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    bad = ClaudeSession(home, "/work/app")
    bad.write(*bad.conversation(1))
    good = ClaudeSession(home, "/work/other")
    good.write(*good.conversation(1))
    import os

    real_open = os.open

    def guarded_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path) == str(bad.path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    report = scan(home, bank)
    assert report.harnesses["claude-code"].unreadable == 1
    assert report.events_added == 2  # the other session still imports
    assert _problems(bank) == [("claude-code", str(bad.path), 0, "unreadable")]
    monkeypatch.setattr(os, "open", real_open)
    assert scan(home, bank).events_added == 2  # readable again: imported


def test_file_deleted_before_read_is_reported(tmp_path: Path) -> None:
    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    scan(home, bank_path)
    s.write(*s.conversation(1, start=1))
    harness = HARNESSES["claude-code"]
    from harvester.capture.sources import discover, existing_roots

    found = list(discover(harness, existing_roots(harness, {}, home)))
    s.path.unlink()  # the agent's cleanup runs between discovery and read
    bank = open_bank(bank_path)
    try:
        with Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
            result = ingestor.ingest(harness, found[0])
    finally:
        bank.close()
    assert result.outcome == "missing"
    assert _problems(bank_path) == [("claude-code", str(s.path), 3, "unreadable")]
    assert len(events_of(bank_path)) == 2  # what was captured stays


def test_file_unlinked_while_open_still_imports_everything(tmp_path: Path, monkeypatch) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(400))
    import harvester.capture.reading as reading

    real = reading.read_lines

    def read_and_unlink(stream, *args, **kwargs):  # type: ignore[no-untyped-def]
        chunks = real(stream, *args, chunk_bytes=4096)
        yield next(chunks)
        s.path.unlink()
        yield from chunks

    monkeypatch.setattr("harvester.capture.reading.read_lines", read_and_unlink)
    assert scan(home, bank).events_added == 800
    assert scan(home, bank).events_added == 0


def test_scan_exit_code_is_zero_with_bad_input_and_one_when_bank_unwritable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(b"not json\n", *s.conversation(1))
    env = {"HOME": str(home)}
    ok = CliRunner().invoke(cli, ["--bank", str(tmp_path / "b.sqlite"), "scan"], env=env)
    assert ok.exit_code == 0, ok.output
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad = CliRunner().invoke(cli, ["--bank", str(blocker / "b.sqlite"), "scan"], env=env)
    assert bad.exit_code == 1 and "bank" in bad.output


def test_a_lone_surrogate_escape_costs_that_character_not_its_record(tmp_path: Path) -> None:
    """JSON.stringify writes a lone surrogate as an escape (``\\ud83d``: an emoji cut in half by a
    truncation), which is valid JSON a strict decoder refuses. The record's every other character is good
    data: it is kept, the lone half shown as U+FFFD, and nothing is reported malformed."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("ask PLACE end").replace(b"PLACE", b"cut \\ud83d"),
            s.tool_use("Bash", {"command": "echo PLACE"}, "t1").replace(b"PLACE", b"\\udfff"),
            s.tool_result("t1", "out PLACE").replace(b"PLACE", b"a \\ud800\\ud800 b"),
            s.assistant("done"))
    report = scan(home, bank)
    assert _problems(bank) == []
    assert report.events_added == 4
    events = events_of(bank, s.id)
    assert events[0]["text"] == "ask cut \ufffd end"
    assert "echo \ufffd" in events[1]["text"] and events[1]["tool_input"] == {"command": "echo \ufffd"}
    assert events[2]["text"] == "out a \ufffd\ufffd b"
