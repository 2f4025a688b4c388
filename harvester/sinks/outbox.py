"""The sinks' outbox in the bank (migration 8): which sessions a sink has still to look at, and what it holds.

Capture never waits for a sink. Every write stamps the sessions it changed with the bank's change clock, in
its own transaction (harvester/bank/sqlite_events.stamp_changed); :func:`enqueue` moves the sessions stamped
after a sink's watermark into its queue, ``sink_documents``, and advances the watermark in the same
transaction. A row there is the document's cursor: ``pending`` while the sink has to look at the session
again, the bank and document it went to, how many lines were sent and their fingerprint, the payload in
flight (written before it is sent, cleared when the server took it), retries and the last error. So a
stopped server, a restart or a kill -9 loses nothing: what was stamped is queued, what is queued is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from harvester.bank.outbox import now_iso

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank

STATES = ("pending", "sent", "empty", "skipped", "held", "failed", "deleted")


def enqueue(bank: SqliteBank, sink: str, batch: int = 2000) -> int:
    """Queue the sessions changed since the sink's watermark (all of them the first time). Returns how many."""
    queued = 0
    row = bank.conn.execute("SELECT watermark FROM sinks WHERE sink = ?", (sink,)).fetchone()
    if row is not None and bank.conn.execute("SELECT 1 FROM sessions WHERE changed > ? LIMIT 1", row).fetchone() is None:
        return 0  # nothing new: no write transaction (the service asks after every import, and idle)
    while True:
        with bank.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO sinks (sink) VALUES (?)", (sink,))
            mark = conn.execute("SELECT watermark FROM sinks WHERE sink = ?", (sink,)).fetchone()[0]
            rows = conn.execute("SELECT harness, native_id, changed FROM sessions WHERE changed > ? "
                                "ORDER BY changed LIMIT ?", (mark, batch)).fetchall()
            if not rows:
                return queued
            now = now_iso()
            # A session that changes is looked at again; one that Hindsight's own hooks filed stays theirs.
            conn.executemany(
                "INSERT INTO sink_documents (sink, harness, native_id, state, queued_at) VALUES (?, ?, ?, 'pending', ?) "
                "ON CONFLICT (sink, harness, native_id) DO UPDATE SET state = 'pending', queued_at = excluded.queued_at, "
                "next_try_at = NULL WHERE state != 'skipped'", [(sink, h, n, now) for h, n, _ in rows])
            conn.execute("UPDATE sinks SET watermark = ? WHERE sink = ?", (rows[-1][2], sink))
            queued += len(rows)
        if len(rows) < batch:
            return queued


def requeue(bank: SqliteBank, sink: str, states: tuple[str, ...]) -> int:
    """Queue again the documents in ``states`` (``sink backfill``: what failed for good, or was held)."""
    marks = ", ".join("?" * len(states))
    with bank.transaction() as conn:
        return conn.execute(f"UPDATE sink_documents SET state = 'pending', next_try_at = NULL, queued_at = ? "
                            f"WHERE sink = ? AND state IN ({marks})", (now_iso(), sink, *states)).rowcount


def pending_count(bank: SqliteBank, sink: str) -> int:
    return bank.conn.execute("SELECT count(*) FROM sink_documents WHERE sink = ? AND state = 'pending'",
                             (sink,)).fetchone()[0]


def next_retry(bank: SqliteBank, sink: str) -> str | None:
    """When the earliest queued document that waits on a back-off is due (None: none waits)."""
    return bank.conn.execute("SELECT min(next_try_at) FROM sink_documents WHERE sink = ? AND state = 'pending'",
                             (sink,)).fetchone()[0]


def waiting(bank: SqliteBank, sink: str, limit: int = 20) -> list[dict[str, Any]]:
    """The documents that wait (queued or given up), oldest first, for ``sink status``."""
    names = ("harness", "session", "bank", "attempts", "next_try_at", "last_error", "state")
    rows = bank.conn.execute(
        "SELECT harness, native_id, bank, attempts, next_try_at, last_error, state FROM sink_documents "
        "WHERE sink = ? AND state IN ('pending', 'failed') ORDER BY queued_at LIMIT ?", (sink, limit)).fetchall()
    return [dict(zip(names, row, strict=True)) for row in rows]


def due(bank: SqliteBank, sink: str, limit: int = 50, keys: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """The queued documents whose time has come, oldest first (of ``keys``, (harness, native id), if given)."""
    among = ""
    args: tuple = ()
    if keys is not None:
        if not keys:
            return []
        among = " AND (harness, native_id) IN (VALUES " + ", ".join("(?, ?)" for _ in keys) + ")"
        args = tuple(x for key in keys for x in key)
    cur = bank.conn.execute(
        "SELECT * FROM sink_documents WHERE sink = ? AND state = 'pending' AND (next_try_at IS NULL OR next_try_at <= ?)"
        f"{among} ORDER BY next_try_at IS NOT NULL, next_try_at, queued_at LIMIT ?", (sink, now_iso(), *args, limit))
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    for row in rows:
        row["in_flight"] = orjson.loads(row["in_flight"]) if row["in_flight"] else None
    return rows


def update(db: SqliteBank, sink: str, harness: str, native_id: str, /, **fields: Any) -> None:
    """Set fields of one document's cursor (``in_flight`` is stored as JSON) in a transaction of its own."""
    if "in_flight" in fields and fields["in_flight"] is not None:
        fields["in_flight"] = orjson.dumps(fields["in_flight"]).decode()
    sets = ", ".join(f"{k} = ?" for k in fields)
    with db.transaction() as conn:
        conn.execute(f"UPDATE sink_documents SET {sets} WHERE sink = ? AND harness = ? AND native_id = ?",
                     (*fields.values(), sink, harness, native_id))


def stats(bank: SqliteBank, sink: str) -> dict[str, Any]:
    """What ``status`` shows of a sink: per bank, sessions by state, the oldest pending, the last error;
    and sessions changed that the sink has not queued yet (the service queues them at its next pass)."""
    conn = bank.conn
    row = conn.execute("SELECT watermark, last_success_at, last_error, last_error_at FROM sinks WHERE sink = ?",
                       (sink,)).fetchone()
    watermark = row[0] if row else 0
    unqueued = conn.execute("SELECT count(*) FROM sessions WHERE changed > ?", (watermark,)).fetchone()[0]
    banks: dict[str, dict[str, Any]] = {}
    for bank_id, state, n, oldest, last_sent, error in conn.execute(
            "SELECT coalesce(d.bank, s.bank_id, '?'), d.state, count(*), min(CASE WHEN d.state = 'pending' "
            "THEN d.queued_at END), max(d.last_sent_at), max(CASE WHEN d.state IN ('failed', 'pending') "
            "THEN d.last_error END) "
            "FROM sink_documents d LEFT JOIN sessions s ON s.harness = d.harness AND s.native_id = d.native_id "
            "WHERE d.sink = ? GROUP BY 1, 2", (sink,)):
        entry = banks.setdefault(bank_id, {"bank": bank_id, **{s: 0 for s in STATES}, "oldest_pending": None,
                                           "last_sent_at": None, "last_error": None})
        entry[state] = n
        if oldest:
            entry["oldest_pending"] = oldest
        if last_sent and (entry["last_sent_at"] or "") < last_sent:
            entry["last_sent_at"] = last_sent
        if error:
            entry["last_error"] = error
    return {"sink": sink, "unqueued": unqueued, "last_success_at": row[1] if row else None,
            "last_error": row[2] if row else None, "last_error_at": row[3] if row else None,
            "banks": sorted(banks.values(), key=lambda b: b["bank"])}
