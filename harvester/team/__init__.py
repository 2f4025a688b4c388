"""The team bank: every machine's local bank pushed to one PostgreSQL database, and read back from it.

Local first: each machine's SQLite bank stays the source of truth there, and capture never waits for the
network. With ``team_bank`` set (harvester/config/team.py), ``harvester run`` pushes what it captured from
the local bank's outbox (outbox.py) in short, idempotent transactions (push.py), on its own thread, with a
back-off while the server is away; ``harvester team push`` does one push now. ``--team`` on ``sessions``,
``show``, ``search``, ``context`` and ``mcp`` reads the team bank instead (read.py), in the local shapes.

    local bank -> outbox.py -> push.py -> PostgreSQL (schema.py) -> read.py -> sessions / search / mcp --team

The entry points: :func:`pusher` (the push of a configuration: ``harvester team push``, and the service's
background push, harvester/service/passes.py), :func:`harvester.team.read.open_reader` (``--team``), both over
:class:`harvester.team.server.TeamBank` (a connection pool to the server, the schema checked once).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank
    from harvester.config import Settings
    from harvester.team.push import Pusher


def pusher(bank: SqliteBank, settings: Settings, env: Mapping[str, str] = os.environ) -> Pusher | None:
    """The push of this configuration, or None when no team bank is set."""
    if settings.team is None:
        return None
    from harvester.team.push import Pusher
    from harvester.team.server import TeamBank

    return Pusher(bank, TeamBank(settings.team, env))
