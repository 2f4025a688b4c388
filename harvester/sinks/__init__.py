"""Sinks: the bank forwarded to other memory systems, after capture and never in its way.

One sink today, Hindsight (``[sinks.hindsight]``, harvester/sinks/config.py): every session of every
harness becomes one document in the Hindsight bank of its repository (``coding-agent::{gitProject}``, the
banks Hindsight's own coding-agent integration uses), kept up to date as the session grows.

    sources -> reading -> ingest -> bank -> outbox (outbox.py) -> forward.py -> hindsight.py -> the server

The entry points: :func:`forwarder` (one pass, for ``harvester sink backfill``) and :class:`SinkThread`
(the service's background forwarder, woken after each import; a slow or stopped server delays nothing).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harvester.log import get_logger

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank
    from harvester.config import Settings
    from harvester.sinks.forward import Forwarder, ForwardReport

log = get_logger("harvester.sinks")
IDLE_SECONDS = 30.0  # a pass this often with nothing woken: what scan (another process) wrote is sent too
MAX_WAIT = 60.0  # while the server is away, it is tried again at least this often


def forwarder(bank: SqliteBank, settings: Settings, env: Mapping[str, str] = os.environ) -> Forwarder | None:
    """The Hindsight forwarder of this configuration, or None when no sink is configured."""
    options = settings.sinks.get("hindsight")
    if options is None:
        return None
    from harvester.sinks.forward import Forwarder
    from harvester.sinks.hindsight import Hindsight

    return Forwarder(bank, options, Hindsight(options.url, options.token(env)))


class SinkThread:
    """Forwards in the background, on its own bank connection: after :meth:`wake` (an import), every
    ``IDLE_SECONDS`` otherwise, and while the server is away with a wait that doubles up to a minute."""

    def __init__(self, settings: Settings, env: Mapping[str, str] = os.environ,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self.settings, self.env, self.idle_seconds = settings, env, idle_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harvester-sinks", daemon=True)
        self.last: ForwardReport | None = None

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

        try:
            bank = open_bank(self.settings.bank, archive=False, repair=False)
        except Exception:
            log.exception("sink_bank_failed")
            return
        forward = forwarder(bank, self.settings, self.env)  # type: ignore[arg-type]
        backoff = 1.0
        try:
            while forward is not None and not self._stop.is_set():
                self._wake.clear()
                try:
                    report = forward.forward()
                    self.last = report
                except Exception:  # one bad pass must not end forwarding, nor the service
                    log.exception("sink_pass_failed", sink="hindsight")
                    report = None
                if report is not None and report.stopped_by:
                    backoff = min(MAX_WAIT, max(1.0, backoff * 2))
                    self._stop.wait(backoff)  # the server is away: appends do not hurry it
                    continue
                backoff = 1.0
                if report is not None and report.forwarded:
                    log.info("forwarded", sink="hindsight", documents=report.forwarded, lines=report.lines)
                self._wake.wait(self._next_wait(forward))
        finally:
            if forward is not None:
                forward.client.close()
            bank.close()

    def _next_wait(self, forward: Forwarder) -> float:
        """Until the next retry that is due, at most the idle period."""
        from harvester.sinks import outbox

        due = outbox.next_retry(forward.bank, "hindsight")
        return self.idle_seconds if due is None else max(0.2, min(self.idle_seconds, outbox.seconds_until(due)))
