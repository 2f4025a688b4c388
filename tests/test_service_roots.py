"""An agent's store that appears while the service runs is read whole, however its creation interleaves with the
service arming its watches (the events of what was made before a watch was in place never come)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from watchdog.observers import Observer

from harvester import config
from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.parsers import HARNESSES
from harvester.service.run import Service
from tests.helpers import ClaudeSession, events_of


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "HARVESTER_BANK": str(tmp_path / "bank.sqlite"),
           "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")}
    svc = Service(config.load(env, harness_names=HARNESSES), env, home, harnesses=[HARNESSES["claude-code"]])
    svc.bank = open_bank(svc.settings.bank)
    svc.ingestor = Ingestor(svc.bank, svc.settings.bank_id_template)
    svc.observer = Observer()  # never started: watches are scheduled, no event is delivered but those sent here
    try:
        yield svc
    finally:
        svc.ingestor.close()
        svc.bank.close()


def test_a_root_armed_by_the_session_timer_is_read_whole(service: Service) -> None:
    service._arm_watches()  # no ~/.claude: a shallow watch on HOME
    assert service._watched == ([], [str(service.home)])
    s = ClaudeSession(service.home, "/work/app")  # the whole tree at once: its directory events were missed
    s.write(s.user("made before any watch on it"))
    service.check_sessions()  # the half-minute timer finds the root and watches it...
    service._on_directory(service.home / ".claude")  # ...before the directory's own event is handled
    assert [e["text"] for e in events_of(service.settings.bank)] == ["made before any watch on it"]


def test_a_root_made_while_its_parent_watch_is_being_armed_is_read_whole(service: Service) -> None:
    (service.home / ".claude").mkdir()
    schedule = service.observer.schedule

    def schedule_while_the_agent_writes(handler: Any, path: str, recursive: bool = False) -> Any:
        # The agent makes ~/.claude/projects/<dir>/<id>.jsonl between the service's look at what exists and its
        # watch on the nearest parent being in place: no event will ever say so.
        if not (service.home / ".claude" / "projects").exists():
            s = ClaudeSession(service.home, "/work/app")  # makes its directories
            s.write(s.user("written during the arming"))
        return schedule(handler, path, recursive=recursive)

    service.observer.schedule = schedule_while_the_agent_writes  # type: ignore[method-assign]
    service._on_directory(service.home / ".claude")  # the event of ~/.claude made
    assert str(service.home / ".claude" / "projects") in service._watched[0]
    assert [e["text"] for e in events_of(service.settings.bank)] == ["written during the arming"]
