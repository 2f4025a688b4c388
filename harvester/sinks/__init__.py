"""Sinks: the bank forwarded to other memory systems, after capture and never in its way.

One sink today, Hindsight (``[sinks.hindsight]``, harvester/config/sinks.py): every session of every
harness becomes one document in the Hindsight bank of its repository (``coding-agent::{gitProject}``, the
banks Hindsight's own coding-agent integration uses), kept up to date as the session grows.

    sources -> reading -> ingest -> bank -> outbox (outbox.py) -> forward.py -> hindsight.py -> the server

The entry points: :func:`forwarder` (one pass, for ``harvester sink backfill``) and :class:`SinkThread`
(the service's background forwarder, woken after each import; a slow or stopped server delays nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harvester.log import get_logger
from harvester.passes import BackgroundPasses

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank
    from harvester.config import Settings
    from harvester.sinks.forward import Forwarder, ForwardReport

log = get_logger("harvester.sinks")


def forwarder(bank: SqliteBank, settings: Settings, env: Mapping[str, str] = os.environ) -> Forwarder | None:
    """The Hindsight forwarder of this configuration, or None when no sink is configured."""
    options = settings.sinks.get("hindsight")
    if options is None:
        return None
    from harvester.sinks.forward import Forwarder
    from harvester.sinks.hindsight import Hindsight

    return Forwarder(bank, options, Hindsight(options.url, options.token(env)))


class SinkThread(BackgroundPasses):
    """Forwards in the background (harvester/passes.py: woken by imports, idle passes, back-off while the server
    is away)."""

    name = "sinks"

    def open(self, bank: SqliteBank) -> Forwarder | None:
        return forwarder(bank, self.settings, self.env)

    def run_pass(self, forward: Forwarder) -> ForwardReport:
        return forward.forward()

    def done(self, report: ForwardReport) -> None:
        if report.forwarded:
            log.info("forwarded", sink="hindsight", documents=report.forwarded, lines=report.lines)

    def next_retry(self, forward: Forwarder) -> str | None:
        from harvester.sinks import outbox

        return outbox.next_retry(forward.bank, "hindsight")

    def close(self, forward: Forwarder) -> None:
        forward.client.close()
