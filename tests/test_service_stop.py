"""A SIGTERM while the service starts is answered at once: start-up's long steps (the first judgement of every open
session, one harness after another) stop between harnesses, and what is left of start-up is skipped. On a machine
with sixty agents' stores the first judgement alone took seconds, and a stop waited for all of it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from harvester import config
from harvester.parsers import HARNESSES
from harvester.service.run import Service
from tests.helpers import ClaudeSession


def _service(tmp_path: Path) -> Service:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "HARVESTER_BANK": str(tmp_path / "bank.sqlite"),
           "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")}
    return Service(config.load(env, harness_names=HARNESSES), env, home)


def test_a_stop_during_start_up_skips_the_rest_of_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = _service(tmp_path)
    s = ClaudeSession(service.home, "/work/app")
    s.write(s.user("an open session, for the first judgement to look at"))
    done: list[str] = []
    reconcile = Service.reconcile

    def reconcile_then_sigterm(self: Service) -> None:
        reconcile(self)
        done.append("reconcile")
        self.stop()  # the signal handler's work, as SIGTERM lands in the middle of start-up

    monkeypatch.setattr(Service, "reconcile", reconcile_then_sigterm)
    monkeypatch.setattr(Service, "_check_page", lambda self, *a: done.append("judged"))
    monkeypatch.setattr(Service, "_start_scheduler", lambda self: done.append("scheduler"))
    thread = threading.Thread(target=service.run)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert done == ["reconcile"]


def test_the_sessions_check_stops_between_harnesses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = _service(tmp_path)
    judged: list[str] = []

    class Bank:
        def open_sessions(self, harness: str, after: int) -> list[dict[str, Any]]:
            return [{"pk": 1}] if after == 0 else []

    def judge(self: Service, harness: Any, page: list, running: list) -> None:
        judged.append(harness.name)
        if len(judged) == 2:
            self.stop()

    service.bank = Bank()  # type: ignore[assignment]
    monkeypatch.setattr(Service, "_check_page", judge)
    monkeypatch.setattr("harvester.service.run.agent_processes", lambda harnesses: [])
    service.check_sessions()
    assert len(judged) == 2 and len(service.harnesses) > 2
