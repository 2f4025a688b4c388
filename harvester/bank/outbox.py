"""What every reader of the bank's changes shares: the sinks' forwarding and the team push each keep a row in
``sinks`` (migration 8; its name, ``hindsight`` or ``team``), with its watermark on the bank's change clock (the
sessions stamped after it are the ones it has yet to look at: harvester/bank/sqlite_events.stamp_changed), its
last success and its last error; and they write their times in one format. Here, in the bank, so that the sinks
(harvester/sinks/outbox.py) and the team push (harvester/team/outbox.py) share it without knowing each other.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank

ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


def now_iso(delta_seconds: float = 0.0) -> str:
    return (datetime.now(UTC) + timedelta(seconds=delta_seconds)).strftime(ISO)


def seconds_until(iso: str) -> float:
    """Seconds from now until a time the outbox wrote (negative when it is past)."""
    return (datetime.strptime(iso, ISO).replace(tzinfo=UTC) - datetime.now(UTC)).total_seconds()


def note_outcome(bank: SqliteBank, sink: str, error: str | None) -> None:
    """The end of a pass of ``sink`` (its row in ``sinks``): its last success, or its last error."""
    with bank.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO sinks (sink) VALUES (?)", (sink,))
        if error is None:
            conn.execute("UPDATE sinks SET last_success_at = ? WHERE sink = ?", (now_iso(), sink))
        else:
            conn.execute("UPDATE sinks SET last_error = ?, last_error_at = ? WHERE sink = ?", (error, now_iso(), sink))
