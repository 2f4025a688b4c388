"""The team push's outbox in the local bank (migration 9): which sessions wait, and what was pushed of each.

Every write stamps the sessions and events it changed with the bank's change clock (migration 8; events
since migration 9). :func:`enqueue` moves the sessions stamped after the team's watermark (its row in
``sinks``, named ``team``) into ``team_sessions``, advancing the watermark in the same transaction. A row
there is the session's push cursor: ``pending`` while it has something to push, the change clock it was
pushed up to (events changed after it are sent next time), how many events were pushed, and a ``resync``
count that the bank's triggers raise when events of a pushed session are deleted (reparse, forget,
exclusion): the next push rebuilds that session there, or deletes it when it is gone here.

States: pending, pushed, theirs (another machine owns the session there), held (its bank has push = false),
failed (the server refused its rows; retried after a back-off).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvester.bank.outbox import now_iso

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank

SINK = "team"  # the team's row in the sinks table: its watermark, last success, last error
FACT_MACHINE = "team_machine_id"


def machine_id(bank: SqliteBank) -> str:
    """This bank's identity in a team bank: a random UUID made once and kept in the bank (a host name is not
    one: laptops share names, and hosts are renamed)."""
    row = bank.conn.execute("SELECT value FROM bank_facts WHERE key = ?", (FACT_MACHINE,)).fetchone()
    if row is not None:
        return row[0]
    import uuid

    with bank.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO bank_facts (key, value) VALUES (?, ?)", (FACT_MACHINE, str(uuid.uuid4())))
        return conn.execute("SELECT value FROM bank_facts WHERE key = ?", (FACT_MACHINE,)).fetchone()[0]


def enqueue(bank: SqliteBank, batch: int = 5000) -> int:
    """Queue the sessions changed since the watermark (every session the first time). Returns how many."""
    queued = 0
    row = bank.conn.execute("SELECT watermark FROM sinks WHERE sink = ?", (SINK,)).fetchone()
    if row is not None and bank.conn.execute("SELECT 1 FROM sessions WHERE changed > ? LIMIT 1", row).fetchone() is None:
        return 0  # nothing new: no write transaction
    while True:
        with bank.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO sinks (sink) VALUES (?)", (SINK,))
            mark = conn.execute("SELECT watermark FROM sinks WHERE sink = ?", (SINK,)).fetchone()[0]
            rows = conn.execute("SELECT id, harness, native_id, changed FROM sessions WHERE changed > ? "
                                "ORDER BY changed LIMIT ?", (mark, batch)).fetchall()
            if not rows:
                return queued
            now = now_iso()
            conn.executemany(
                "INSERT INTO team_sessions (harness, native_id, session_pk, state, queued_at) "
                "VALUES (?, ?, ?, 'pending', ?) ON CONFLICT (harness, native_id) DO UPDATE SET state = 'pending', "
                "queued_at = excluded.queued_at, next_try_at = NULL, attempts = 0 WHERE state != 'pending'",
                [(h, n, pk, now) for pk, h, n, _ in rows])
            conn.execute("UPDATE sinks SET watermark = ? WHERE sink = ?", (rows[-1][3], SINK))
            queued += len(rows)
        if len(rows) < batch:
            return queued


def rehold(bank: SqliteBank, held_banks: list[str]) -> int:
    """Queue the sessions whose bank's ``push`` setting changed since they were pushed (or held): those of a bank
    now ``push = false`` go, to be deleted there; those of a bank no longer held, to be pushed. A session that
    itself did not change would otherwise stay as it was there. Returns how many."""
    now = now_iso()
    queued = 0
    marks = ", ".join("?" * len(held_banks))
    if held_banks and bank.conn.execute(
            f"SELECT 1 FROM sessions s JOIN team_sessions t ON t.harness = s.harness AND t.native_id = s.native_id "
            f"WHERE s.bank_id IN ({marks}) AND t.state IN ('pushed', 'theirs') LIMIT 1", held_banks).fetchone():
        with bank.transaction() as conn:
            queued += conn.execute(
                "UPDATE team_sessions SET state = 'pending', next_try_at = NULL, queued_at = ? "
                "WHERE state IN ('pushed', 'theirs') AND (harness, native_id) IN "
                f"(SELECT harness, native_id FROM sessions WHERE bank_id IN ({marks}))", (now, *held_banks)).rowcount
    released = ("state = 'held' AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.harness = team_sessions.harness "
                f"AND s.native_id = team_sessions.native_id AND s.bank_id IN ({marks}))")
    if bank.conn.execute(f"SELECT 1 FROM team_sessions WHERE {released} LIMIT 1", held_banks).fetchone():
        with bank.transaction() as conn:
            queued += conn.execute(f"UPDATE team_sessions SET state = 'pending', next_try_at = NULL, queued_at = ? "
                                   f"WHERE {released}", (now, *held_banks)).rowcount
    return queued


def requeue(bank: SqliteBank, states: tuple[str, ...]) -> int:
    """Queue again the sessions in ``states`` (``team push``: those another machine owned there, which it may
    have let go since)."""
    marks = ", ".join("?" * len(states))
    with bank.transaction() as conn:
        return conn.execute(f"UPDATE team_sessions SET state = 'pending', next_try_at = NULL, queued_at = ? "
                            f"WHERE state IN ({marks})", (now_iso(), *states)).rowcount


def due(bank: SqliteBank, limit: int, after: tuple[str, str] = ("", "")) -> list[dict[str, Any]]:
    """Queued sessions whose time has come, in (harness, native id) order after ``after``: every machine takes
    the rows of a transaction in the same order, so concurrent pushes wait on each other, never deadlock."""
    cur = bank.conn.execute(
        "SELECT harness, native_id, session_pk, pushed_clock, pushed_events, resync, attempts FROM team_sessions "
        "WHERE state = 'pending' AND (next_try_at IS NULL OR next_try_at <= ?) AND (harness, native_id) > (?, ?) "
        "ORDER BY harness, native_id LIMIT ?", (now_iso(), *after, limit))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def pending_count(bank: SqliteBank) -> int:
    return bank.conn.execute("SELECT count(*) FROM team_sessions WHERE state = 'pending'").fetchone()[0]


def next_retry(bank: SqliteBank) -> str | None:
    return bank.conn.execute("SELECT min(next_try_at) FROM team_sessions WHERE state = 'pending'").fetchone()[0]


def lag(bank: SqliteBank) -> dict[str, int]:
    """Sessions with something not pushed yet, and their events not pushed (a revised event counts in its
    session, not in the events): queued ones, and those changed since the watermark (the next pass queues)."""
    row = bank.conn.execute("SELECT watermark FROM sinks WHERE sink = ?", (SINK,)).fetchone()
    watermark = row[0] if row else -1
    sessions, events = bank.conn.execute(
        "SELECT count(*), coalesce(sum(max(s.event_count - coalesce(t.pushed_events, 0), 0)), 0) "
        "FROM sessions s LEFT JOIN team_sessions t ON t.harness = s.harness AND t.native_id = s.native_id "
        "WHERE (t.state IS NULL OR t.state IN ('pending', 'failed') OR (s.changed > ? AND t.state = 'pushed'))",
        (watermark,)).fetchone()
    gone = bank.conn.execute("SELECT count(*) FROM team_sessions t WHERE state = 'pending' AND NOT EXISTS "
                             "(SELECT 1 FROM sessions s WHERE s.harness = t.harness AND s.native_id = t.native_id)"
                             ).fetchone()[0]
    return {"sessions": sessions + gone, "events": events}


def stats(bank: SqliteBank) -> dict[str, Any]:
    """What ``status`` shows of the push: sessions by state, the lag, last success, last error."""
    conn = bank.conn
    row = conn.execute("SELECT last_success_at, last_error, last_error_at FROM sinks WHERE sink = ?",
                       (SINK,)).fetchone()
    states = dict(conn.execute("SELECT state, count(*) FROM team_sessions GROUP BY state").fetchall())
    pushed_events = conn.execute("SELECT coalesce(sum(pushed_events), 0) FROM team_sessions "
                                 "WHERE state = 'pushed'").fetchone()[0]
    failing = [dict(zip(("harness", "session", "error", "attempts", "next_try_at"), r, strict=True))
               for r in conn.execute("SELECT harness, native_id, last_error, attempts, next_try_at FROM team_sessions "
                                     "WHERE last_error IS NOT NULL ORDER BY queued_at LIMIT 10")]
    return {"states": states, "pushed_events": pushed_events, "lag": lag(bank),
            "last_push_at": row[0] if row else None, "last_error": row[1] if row else None,
            "last_error_at": row[2] if row else None, "failing": failing}
