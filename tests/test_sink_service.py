"""`harvester run` forwards as it captures (tests/hindsight_fake.py as the server): a new turn reaches the
document without a scan, a server that is away delays nothing, and kill -9 at any moment of forwarding
neither loses nor doubles a line."""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

import pytest

from tests.daemon import FAST, Daemon, wait_for
from tests.helpers import ClaudeSession
from tests.hindsight_fake import FakeHindsight

CWD = "/work/demo"
BANK = "coding-agent::demo"


@pytest.fixture
def fake() -> FakeHindsight:
    server = FakeHindsight().start()
    yield server
    server.stop()


def _daemon(tmp_path: Path, url: str) -> Daemon:
    (tmp_path / "config.toml").write_text(FAST + f'\n[sinks.hindsight]\nurl = "{url}"\n')
    return Daemon(tmp_path)


def _contents(fake: FakeHindsight, doc: str) -> list[str]:
    with fake.lock:
        found = fake.documents.get(BANK, {}).get(doc)
        text = found["original_text"] if found else ""
    return [json.loads(line)["content"] for line in text.split("\n") if line]


def test_run_forwards_each_new_turn_and_waits_out_a_server_that_is_away(tmp_path: Path, fake: FakeHindsight) -> None:
    daemon = _daemon(tmp_path, fake.url)
    session = ClaudeSession(daemon.home, CWD, live=True)
    session.write(session.user("first question"), session.assistant("first answer"))
    daemon.start()
    doc = f"harvester:claude-code:{session.id}"
    try:
        wait_for(lambda: _contents(fake, doc) == ["first question", "first answer"], 20, "the first turn")
        session.write(session.user("second question"))
        wait_for(lambda: _contents(fake, doc)[-1:] == ["second question"], 20, "the appended turn")
        assert fake.retains()[-1]["items"][0]["update_mode"] == "append"
        fake.fail(503, times=2)  # the server has trouble: capture goes on, the line arrives after the retry
        session.write(session.assistant("second answer"))
        wait_for(lambda: daemon.query("SELECT count(*) FROM events")[0][0] == 4, 10, "capture of the answer")
        wait_for(lambda: _contents(fake, doc)[-1:] == ["second answer"], 30, "the retried turn")
        status = daemon.cli("status")
        assert "Hindsight (" in status.stdout and "1 sessions forwarded, 0 pending" in status.stdout, status.stdout
    finally:
        daemon.stop()


def test_kill_9_at_any_moment_of_forwarding_loses_and_doubles_nothing(tmp_path: Path, fake: FakeHindsight) -> None:
    rng = random.Random(7)
    fake.delay = 0.15  # a retain takes a while: kills land inside them as well as between
    daemon = _daemon(tmp_path, fake.url)
    sessions = [ClaudeSession(daemon.home, CWD, live=True) for _ in range(3)]
    expected: dict[str, list[str]] = {s.id: [] for s in sessions}
    daemon.start()
    try:
        for round_ in range(6):
            for n in range(rng.randint(3, 8)):
                s = rng.choice(sessions)
                text = f"round {round_} line {n} of {s.id[:8]}"
                s.write(s.user(text))
                expected[s.id].append(text)
                time.sleep(rng.uniform(0.0, 0.05))
            time.sleep(rng.uniform(0.05, 0.4))  # somewhere in a forward, or between two
            daemon.stop(signal.SIGKILL)
            daemon.start()
        for s in sessions:
            doc = f"harvester:claude-code:{s.id}"
            wait_for(lambda doc=doc, s=s: _contents(fake, doc) == expected[s.id], 30, f"document of {s.id}")
    finally:
        daemon.stop()
    for s in sessions:  # every line once, in order: exactly what a fresh backfill would send
        assert _contents(fake, f"harvester:claude-code:{s.id}") == expected[s.id]
