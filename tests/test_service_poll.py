"""Stores that file events cannot follow (SourceSpec.watch=False, e.g. SQLite in WAL mode) are
polled: appends reach the bank although the service ignores their file events."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harvester import parsers
from harvester.config import Settings, Timings
from harvester.parsers import claude_code
from harvester.parsers.base import Harness, SourceSpec
from harvester.service.run import Service
from tests.helpers import ClaudeSession, events_of


def test_polled_sources_are_read_on_a_timer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    polled = Harness(
        "polled",
        lambda env, home: [home / ".claude" / "projects"],
        (SourceSpec("*/*.jsonl", "jsonl", watch=False),),
        claude_code.parse,
        "Polled store",
    )
    monkeypatch.setitem(parsers.HARNESSES, "polled", polled)
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    settings = Settings(
        bank=bank, timings=Timings(poll_seconds=0.2, heartbeat_seconds=0.2, unfinished_seconds=60)
    )
    service = Service(
        settings,
        {"HOME": str(home), "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")},
        home,
        harnesses=[polled],
    )
    seen_events: list[str] = []
    original = service.on_event
    service.on_event = lambda event: (seen_events.append(event.src_path), original(event))[-1]  # type: ignore[method-assign]
    thread = threading.Thread(target=service.run)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while len(events_of(bank)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(events_of(bank)) == 2  # the startup reconcile
        s.write(*s.conversation(1, start=1))
        deadline = time.monotonic() + 3
        while len(events_of(bank)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(events_of(bank)) == 4
        assert any(str(s.path) == p for p in seen_events)  # its events came, and were not what read it
    finally:
        service.stop()
        thread.join(timeout=5)
    assert not thread.is_alive()
