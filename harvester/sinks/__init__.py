"""Sinks: the bank forwarded to other memory systems, after capture and never in its way.

One sink today, Hindsight (``[sinks.hindsight]``, harvester/config/sinks.py): every session of every
harness becomes one document in the Hindsight bank of its repository (``coding-agent::{gitProject}``, the
banks Hindsight's own coding-agent integration uses), kept up to date as the session grows.

    sources -> reading -> ingest -> bank -> outbox (outbox.py) -> forward.py -> hindsight.py -> the server

The entry point: :func:`forwarder` (the forwarding of a configuration: one pass for ``harvester sink backfill``,
and the service's background forwarder, harvester/service/passes.py, woken after each import; a slow or stopped
server delays nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank
    from harvester.config import Settings
    from harvester.sinks.forward import Forwarder


def forwarder(bank: SqliteBank, settings: Settings, env: Mapping[str, str] = os.environ) -> Forwarder | None:
    """The Hindsight forwarder of this configuration, or None when no sink is configured."""
    options = settings.sinks.get("hindsight")
    if options is None:
        return None
    from harvester.sinks.forward import Forwarder
    from harvester.sinks.hindsight import Hindsight

    return Forwarder(bank, options, Hindsight(options.url, options.token(env)))
