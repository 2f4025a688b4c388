"""JSONL in a chain of zstd frames, appended frame by frame (DeepSeek Harness's session.jsonl.zstd):
read from the last complete frame on; a torn last frame waits like a torn line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard

from harvester import parsers
from harvester.parsers import claude_code
from harvester.parsers.base import Harness, SourceSpec
from tests.helpers import ClaudeSession, bank_rows, events_of, scan


@pytest.fixture
def framed(monkeypatch: pytest.MonkeyPatch) -> Harness:
    harness = Harness("framed", lambda env, home: [home / "frames"],
                      (SourceSpec("*.jsonl.zstd", "zstd-frames"),), claude_code.parse)
    monkeypatch.setitem(parsers.HARNESSES, "framed", harness)
    return harness


def _frame(*lines: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(b"".join(lines))


def test_frames_are_read_once_and_a_torn_frame_waits(tmp_path: Path, framed: Harness) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "frames").mkdir(parents=True)
    s = ClaudeSession(tmp_path / "unused", "/work/app")
    store = home / "frames" / f"{s.id}.jsonl.zstd"
    store.write_bytes(_frame(*s.conversation(2)) + _frame(*s.conversation(1, start=2)))
    assert scan(home, bank, ("framed",)).events_added == 6
    frame = _frame(*s.conversation(1, start=3))
    with store.open("ab") as f:
        f.write(frame[: len(frame) // 2])  # the agent is mid-write (or crashed here)
    assert scan(home, bank, ("framed",)).events_added == 0
    with store.open("ab") as f:
        f.write(frame[len(frame) // 2:])
    report = scan(home, bank, ("framed",))
    assert (report.events_added, report.bytes_read) == (2, len(frame))  # only the new frame was read
    assert scan(home, bank, ("framed",)).events_added == 0
    texts = [e["text"] for e in events_of(bank)]
    assert len(texts) == len(set(texts)) == 8 and texts[-1].startswith("answer 3")


def test_a_recompressed_chain_is_read_again_without_duplicates(tmp_path: Path, framed: Harness) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "frames").mkdir(parents=True)
    s = ClaudeSession(tmp_path / "unused", "/work/app")
    lines = s.conversation(3)
    store = home / "frames" / f"{s.id}.jsonl.zstd"
    store.write_bytes(b"".join(_frame(line) for line in lines))
    scan(home, bank, ("framed",))
    before = bank_rows(bank)
    tmp = store.with_suffix(".tmp")
    tmp.write_bytes(_frame(*lines, *s.conversation(1, start=3)))  # packed into one frame, plus more
    os.replace(tmp, store)
    assert scan(home, bank, ("framed",)).events_added == 2
    assert bank_rows(bank)[: len(before)] == before


def test_a_corrupt_frame_is_counted_and_the_rest_still_imports(tmp_path: Path, framed: Harness) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "frames").mkdir(parents=True)
    s = ClaudeSession(tmp_path / "unused", "/work/app")
    good, bad, after = _frame(*s.conversation(1)), bytearray(_frame(*s.conversation(1, start=1))), _frame(
        *s.conversation(1, start=2))
    bad[-6] ^= 0xFF  # one flipped byte inside a complete frame: its checksum no longer matches
    (home / "frames" / f"{s.id}.jsonl.zstd").write_bytes(good + bytes(bad) + after)
    report = scan(home, bank, ("framed",))
    assert (report.events_added, report.harnesses["framed"].problems) == (4, 1)


def test_a_frame_may_end_in_the_middle_of_a_line(tmp_path: Path, framed: Harness) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    (home / "frames").mkdir(parents=True)
    s = ClaudeSession(tmp_path / "unused", "/work/app")
    text = b"".join(s.conversation(2))
    cut = len(text) // 2 + 7  # not on a line end
    store = home / "frames" / f"{s.id}.jsonl.zstd"
    store.write_bytes(_frame(text[:cut]))
    first = scan(home, bank, ("framed",)).events_added
    with store.open("ab") as f:
        f.write(_frame(text[cut:]))
    assert first + scan(home, bank, ("framed",)).events_added == 4
    assert len(events_of(bank)) == 4
