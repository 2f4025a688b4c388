"""Work that follows capture on a thread of its own: the sinks' forwarding (:class:`SinkThread`) and the team push
(:class:`TeamThread`), which the service starts when they are configured.

A :class:`BackgroundPasses` runs one pass after :meth:`~BackgroundPasses.wake` (the service calls it after
each import), every ``idle_seconds`` otherwise (what ``scan``, another process, wrote is taken too), sooner
when a retry the outbox scheduled is due, and while its server is away with a wait that doubles from 1 s up to
a minute. It has its own bank connection; a pass that raises is logged and the next one runs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harvester.log import get_logger
from harvester.sinks import forwarder
from harvester.team import pusher

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank
    from harvester.config import Settings
    from harvester.sinks.forward import Forwarder, ForwardReport
    from harvester.team.push import Pusher, PushReport

IDLE_SECONDS = 30.0
MAX_WAIT = 60.0


class BackgroundPasses:
    """Subclasses say what a pass is: :meth:`open` (the worker on this thread's bank, or None), :meth:`run_pass`
    (a report with ``stopped_by`` set when the server is away), :meth:`done` (log what it did), :meth:`next_retry`
    and :meth:`close`. ``name``: the thread's and the log events' name."""

    name = "passes"

    def __init__(self, settings: Settings, env: Mapping[str, str] = os.environ,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self.settings, self.env, self.idle_seconds = settings, env, idle_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"harvester-{self.name}", daemon=True)
        self.last: Any = None  # the last pass's report

    def open(self, bank: SqliteBank) -> Any: ...
    def run_pass(self, worker: Any) -> Any: ...
    def done(self, report: Any) -> None: ...
    def next_retry(self, worker: Any) -> str | None: ...
    def close(self, worker: Any) -> None: ...

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        from harvester.bank import open_bank

        log = get_logger(f"harvester.{self.name}")
        try:
            bank = open_bank(self.settings.bank, archive=False, repair=False)
        except Exception:
            log.exception(f"{self.name}_local_bank_failed")
            return
        worker = self.open(bank)  # type: ignore[arg-type]
        backoff, away = 1.0, False
        try:
            while worker is not None and not self._stop.is_set():
                self._wake.clear()
                try:
                    report = self.last = self.run_pass(worker)
                except Exception:  # one bad pass must not end the passes, nor the service
                    log.exception(f"{self.name}_pass_failed")
                    report = None
                if report is not None and report.stopped_by:
                    if not away:
                        log.warning(f"{self.name}_bank_away", error=report.stopped_by)
                    away = True
                    backoff = min(MAX_WAIT, max(1.0, backoff * 2))
                    self._stop.wait(backoff)  # the server is away: appends do not hurry it
                    continue
                if away:
                    log.info(f"{self.name}_bank_back")
                backoff, away = 1.0, False
                if report is not None:
                    self.done(report)
                self._wake.wait(self._next_wait(worker))
        finally:
            if worker is not None:
                self.close(worker)
            bank.close()

    def _next_wait(self, worker: Any) -> float:
        """Until the next retry that is due, at most the idle period."""
        from harvester.bank.outbox import seconds_until

        due = self.next_retry(worker)
        return self.idle_seconds if due is None else max(0.2, min(self.idle_seconds, seconds_until(due)))


class SinkThread(BackgroundPasses):
    """Forwards in the background (woken by imports, idle passes, back-off while the server is away)."""

    name = "sinks"

    def open(self, bank: SqliteBank) -> Forwarder | None:
        return forwarder(bank, self.settings, self.env)

    def run_pass(self, forward: Forwarder) -> ForwardReport:
        return forward.forward()

    def done(self, report: ForwardReport) -> None:
        if report.forwarded:
            get_logger("harvester.sinks").info("forwarded", sink="hindsight", documents=report.forwarded,
                                               lines=report.lines)

    def next_retry(self, forward: Forwarder) -> str | None:
        from harvester.sinks import outbox

        return outbox.next_retry(forward.bank, "hindsight")

    def close(self, forward: Forwarder) -> None:
        forward.client.close()


class TeamThread(BackgroundPasses):
    """Pushes in the background (woken by imports, idle passes, back-off while the server is away)."""

    name = "team"

    def open(self, bank: SqliteBank) -> Pusher | None:
        return pusher(bank, self.settings, self.env)

    def run_pass(self, push: Pusher) -> PushReport:
        return push.push()

    def done(self, report: PushReport) -> None:
        if report.pushed:
            get_logger("harvester.team").info("pushed", sessions=report.sessions, events=report.events,
                                              deleted=report.deleted)

    def next_retry(self, push: Pusher) -> str | None:
        from harvester.team import outbox

        return outbox.next_retry(push.bank)

    def close(self, push: Pusher) -> None:
        push.team.close()
