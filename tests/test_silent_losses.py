"""What used to be lost without a word: a last line without its newline, the tail of a zstd stream cut
short, a decompression bomb read for minutes, a directory that cannot be listed (issue 9, section 2).
Each is now imported or counted, and shown."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest
import zstandard

from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.config.limits import ReadLimits
from harvester.parsers import HARNESSES
from tests.helpers import ClaudeSession, events_of, scan

YEAR_AGO = time.time() - 365 * 24 * 3600


def _problems(bank_path: Path) -> list[tuple[str, int, str, str]]:
    with open_bank(bank_path) as bank:
        return [(Path(p).name, line, kind, detail) for p, line, kind, detail in bank.conn.execute(
            "SELECT source_path, line, kind, detail FROM problems ORDER BY source_path, line")]


def _untouched_since(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def test_a_last_line_without_its_newline_in_a_quiet_file_is_imported(tmp_path: Path) -> None:
    """A file untouched for a year whose last prompt has no newline: before, never imported."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1), s.user("the last prompt").rstrip(b"\n"))
    _untouched_since(s.path, YEAR_AGO)
    assert scan(home, bank).events_added == 3
    assert events_of(bank, s.id)[-1]["text"] == "the last prompt"
    assert scan(home, bank).events_added == 0  # and once only


def test_then_its_newline_and_more_lines_come_and_are_read_right(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1), s.user("the last prompt").rstrip(b"\n"))
    _untouched_since(s.path, YEAR_AGO)
    scan(home, bank)
    s.write(b"\n", s.assistant("an answer"), b"not json\n", s.user("more"))  # the agent goes on
    assert scan(home, bank).events_added == 2
    assert [e["text"] for e in events_of(bank, s.id)][-3:] == ["the last prompt", "an answer", "more"]
    # The newline that finished the taken line is not a line of its own: the bad line is line 5.
    assert _problems(bank) == [(s.path.name, 5, "malformed", _problems(bank)[0][3])]


def test_or_the_next_record_follows_on_the_same_line(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("first").rstrip(b"\n"))
    _untouched_since(s.path, YEAR_AGO)
    assert scan(home, bank).events_added == 1
    s.write(s.assistant("glued on"))  # no newline between the two records
    assert scan(home, bank).events_added == 1
    assert [e["text"] for e in events_of(bank, s.id)] == ["first", "glued on"]
    assert _problems(bank) == []


def test_a_last_line_still_being_written_waits(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1), s.user("being written").rstrip(b"\n"))  # written just now: not quiet
    assert scan(home, bank).events_added == 2
    _untouched_since(s.path, time.time() - 120)  # quiet now (past the 60 s default)
    assert scan(home, bank).events_added == 1


def test_a_torn_last_line_waits_however_quiet(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    torn = s.user("torn")[:-20]
    s.write(*s.conversation(1), torn)
    _untouched_since(s.path, YEAR_AGO)
    assert scan(home, bank).events_added == 2
    assert _problems(bank) == []  # waiting is not a problem: the agent may still finish it
    with open(s.path, "ab") as f:
        f.write(s.user("torn")[-20:])
    assert scan(home, bank).events_added == 1


def _codex_zst(home: Path, data: bytes) -> Path:
    folder = home / ".codex" / "sessions" / "2026" / "01" / "02"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rollout-2026-01-02T10-00-00-019b0000-0000-7000-8000-000000000001.jsonl.zst"
    path.write_bytes(data)
    return path


def _rollout(turns: int) -> bytes:
    lines = [{"timestamp": "2026-01-02T10:00:00.000Z", "type": "session_meta",
              "payload": {"id": "019b0000-0000-7000-8000-000000000001", "cwd": "/work/app",
                          "timestamp": "2026-01-02T10:00:00.000Z", "cli_version": "0.80.0"}}]
    for n in range(turns):
        lines.append({"timestamp": "2026-01-02T10:00:01.000Z", "type": "response_item",
                      "payload": {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": f"prompt {n} " + "x" * 2000}]}})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def test_a_zstd_rollout_cut_short_says_so(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    whole = zstandard.ZstdCompressor().compress(_rollout(200))
    path = _codex_zst(home, whole[: len(whole) * 2 // 3])
    report = scan(home, bank, ("codex",))
    assert 0 < report.events_added < 200  # what decompresses still imports
    [(name, _, kind, detail)] = _problems(bank)
    assert (name, kind) == (path.name, "malformed") and "cut short at byte" in detail, detail


def test_a_whole_zstd_rollout_has_no_problem(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _codex_zst(home, zstandard.ZstdCompressor().compress(_rollout(50)))
    assert scan(home, bank, ("codex",)).events_added == 50
    assert _problems(bank) == []


def test_a_decompression_bomb_stops_at_the_cap_and_is_recorded_oversize(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    bomb = _rollout(5) + b" " * (64 * 1024 * 1024)  # 64 MB of blanks: a few KB compressed
    path = _codex_zst(home, zstandard.ZstdCompressor(level=19).compress(bomb))
    assert path.stat().st_size < 100_000
    with open_bank(bank) as b, Ingestor(b, "coding-agent::{gitProject}",
                                        limits=ReadLimits(max_decompressed_bytes=8 * 1024 * 1024)) as ingestor:
        report = ingestor.scan([HARNESSES["codex"]], {"HOME": str(home)}, home)
    assert report.events_added == 5
    [(name, _, kind, detail)] = _problems(bank)
    assert (name, kind) == (path.name, "oversize") and "more than 8388608 bytes" in detail
    assert scan(home, bank, ("codex",)).events_added == 0  # recorded with its stat: not read again and again


def test_the_cap_is_configurable(tmp_path: Path) -> None:
    from harvester import config

    (tmp_path / "c.toml").write_text("[limits]\nmax_decompressed_mb = 16\n[timings]\nquiet_seconds = 5\n")
    settings = config.load({"HARVESTER_CONFIG": str(tmp_path / "c.toml"), "HOME": str(tmp_path)}, harness_names=HARNESSES)
    assert settings.read_limits() == ReadLimits(max_decompressed_bytes=16 * 1024 * 1024, quiet_seconds=5)
    (tmp_path / "c.toml").write_text("[limits]\nmax_decompressed_mb = -1\n")
    with pytest.raises(config.ConfigError, match=r"limits\.max_decompressed_mb"):
        config.load({"HARVESTER_CONFIG": str(tmp_path / "c.toml"), "HOME": str(tmp_path)}, harness_names=HARNESSES)


def test_a_directory_that_cannot_be_listed_is_recorded_then_cleared(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """CI runs as root, whom chmod does not stop: make listing fail the way it would."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    hidden = ClaudeSession(home, "/work/hidden")
    hidden.write(*hidden.conversation(1))
    seen = ClaudeSession(home, "/work/seen")
    seen.write(*seen.conversation(1))
    real = os.scandir

    def refuse(path=".", *args):  # type: ignore[no-untyped-def]
        if str(path) == str(hidden.path.parent):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args)

    monkeypatch.setattr(os, "scandir", refuse)
    assert scan(home, bank).events_added == 2
    assert _problems(bank) == [(hidden.path.parent.name, 0, "unreadable",
                                "directory cannot be listed: Permission denied")]
    from click.testing import CliRunner

    from harvester.cli import cli

    status = orjson.loads(CliRunner().invoke(cli, ["--bank", str(bank), "status", "--json"],
                                             env={"HOME": str(home)}).output)
    claude = next(h for h in status["harnesses"] if h["name"] == "claude-code")
    assert claude["unlisted_directories"] == [{"path": str(hidden.path.parent), "reason": "Permission denied"}]
    monkeypatch.setattr(os, "scandir", real)
    assert scan(home, bank).events_added == 2
    assert _problems(bank) == []
