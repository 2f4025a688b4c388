"""The per-response usage table (migration 16): one row per event that carries a model response's token usage,
written in the same transaction as the event, and gone with it.

Why its order of operations is safe: the rows are written by :func:`record_usage` inside the write's transaction
(SqliteBank._write_events), after the events they belong to and from the same values, so a kill -9 leaves
both or neither. A row goes when its event goes (the ``usage_event_deleted`` trigger: reparse, forget and
exclusion delete events; a trigger is the one place that sees every such delete), and a revised event's row is
written anew in the revision's transaction.

One response, counted once: agents repeat a response's usage (Claude Code on every content block's line, in a
resumed or forked session's copied lines, in a subagent's replay; Codex in a forked rollout's copied history).
The parsers give the response's own id (``Usage.response``); every copy is kept (a session shows its own), and
exactly one row per (harness, response) is ``counted``: the largest (an early copy of a streamed message held
placeholder counts), then the earliest. When the counted copy's event goes, the next one is counted (the
``usage_deleted`` trigger), so forgetting a fork's original keeps what the fork still shows. Events with no
response id are their own response (``event:<session pk>:<uid>``).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from harvester.bank.migrations_usage import USAGE_RANK

if TYPE_CHECKING:
    from harvester.model import Event


_COLUMNS = ("event_id, session_id, harness, response, ts, model, tokens_in, tokens_out, tokens_cache_read, "
            "tokens_cache_write, tokens_cache_write_1h, tokens_reasoning, cost, counted")


def utc_ts(ts: str | None) -> str | None:
    """An event's time as the usage table keeps it: UTC, ``YYYY-MM-DDTHH:MM:SS.fffZ`` (what SQLite's
    ``strftime('%Y-%m-%dT%H:%M:%fZ', ts)`` makes of it, which migration 16 uses), so that a text prefix is an
    hour or a day. None when it is no time."""
    if not ts:
        return None
    if len(ts) == 24 and ts[-1] == "Z" and ts[19] == "." and ts[10] == "T":
        return ts
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def record_usage(conn: sqlite3.Connection, harness: str, pks: dict[str, int], events: list[Event],
                 after_id: int, revised: dict[str, list[str]]) -> None:
    """The usage rows of one write, inside its transaction: for the events it added (ids above ``after_id``)
    and for those it revised (``revised``: session native id -> uids rewritten in place)."""
    usage_of = {(e.session, e.uid): e for e in events if e.usage is not None}  # a revision's last version
    if not usage_of and not revised:
        return
    native_of = {pk: native for native, pk in pks.items()}
    targets: list[tuple[int, int, str]] = []  # (event id, session pk, uid)
    if usage_of:
        targets += conn.execute("SELECT id, session_id, uid FROM events WHERE id > ? AND tokens_in IS NOT NULL",
                                (after_id,)).fetchall()
    for native, uids in revised.items():
        pk = pks[native]
        for start in range(0, len(uids), 500):
            part = uids[start:start + 500]
            rows = conn.execute(f"SELECT id, session_id, uid FROM events WHERE session_id = ? AND uid IN "
                                f"({','.join('?' * len(part))})", (pk, *part)).fetchall()
            conn.executemany("DELETE FROM usage WHERE event_id = ?", [(row[0],) for row in rows])
            targets += [row for row in rows if (native, row[2]) in usage_of]
    rows = []
    for event_id, pk, uid in targets:
        event = usage_of.get((native_of.get(pk, ""), uid))
        if event is None or event.usage is None:
            continue
        u = event.usage
        rows.append((event_id, pk, harness, u.response or f"event:{pk}:{uid}", utc_ts(event.ts), event.model,
                     u.input, u.output, u.cache_read, u.cache_write, u.cache_write_1h, u.reasoning, u.cost))
    _insert_counted_once(conn, harness, rows)


def _insert_counted_once(conn: sqlite3.Connection, harness: str, rows: list[tuple]) -> None:
    """Insert rows (``_COLUMNS`` but ``counted``); a response seen for the first time is counted, and every
    response already held (or given twice here) is ranked again among its copies."""
    if not rows:
        return
    keys = sorted({row[3] for row in rows})
    held: set[str] = set()
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        held.update(key for (key,) in conn.execute(
            f"SELECT DISTINCT response FROM usage WHERE harness = ? AND response IN ({','.join('?' * len(part))})",
            (harness, *part)))
    again = set(held)
    values = []
    for row in rows:
        first = row[3] not in held
        held.add(row[3])
        if not first:
            again.add(row[3])
        values.append((*row, 1 if first else 0))
    conn.executemany(f"INSERT INTO usage ({_COLUMNS}) VALUES ({','.join('?' * 14)})", values)
    conn.executemany(
        f"UPDATE usage SET counted = (event_id = (SELECT event_id FROM usage WHERE harness = ?1 AND response = ?2 "
        f"ORDER BY {USAGE_RANK} LIMIT 1)) WHERE harness = ?1 AND response = ?2", [(harness, key) for key in sorted(again)])
