"""What the bank knows of the sessions `harvester resume` wrote into other agents' stores (migration 18).

A mixin of :class:`harvester.bank.sqlite.SqliteBank`, and the one hook ingest has for them (:func:`mark_copies`).

The order is what keeps a copied turn counted once. ``resume`` records the copy (:meth:`SqliteResumes.record_resume`:
the target agent, the new session's id, the uids its copied records have when that agent's store is read) in its
own transaction BEFORE the file exists, so no capture can read the new session before the bank knows which of its
events are copies. Every write that touches a session of a target agent then marks, in the write's own
transaction, the copied events it holds as ``recall`` (search, briefs, exports, sinks and the team bank leave them
out, as they leave out the harvester's own answers seen again) with ``meta.copied_from``, and the session as
``meta.resumed_from``; the marks are made again after the agent rewrote a copied record (Gemini CLI, opencode). A
resume killed after its record and before its file leaves a record of an id no agent will ever write: harmless.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from harvester.bank.sqlite_sources import utcnow


class SqliteResumes:
    conn: sqlite3.Connection

    transaction: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]

    def record_resume(self, source_harness: str, source_native_id: str, upto: int | None, target_harness: str,
                      target_native_id: str, copied_events: int, copied_uids: list[str]) -> None:
        """Record a resume before its session is written (see the module): ``copied_uids`` are the uids the
        target's parser gives the copied records, or the ids of records whose events' uids are ``<id>:...``."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO resumes (source_harness, source_native_id, source_upto, target_harness, target_native_id, "
                "copied_events, copied_uids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (source_harness, source_native_id, upto, target_harness, target_native_id, copied_events,
                 orjson.dumps(copied_uids).decode(), utcnow()))

    def resumes_from(self, source_harness: str, source_native_id: str) -> list[dict[str, Any]]:
        """The sessions resumed from a session, oldest first."""
        rows = self.conn.execute(
            "SELECT target_harness, target_native_id, source_upto, copied_events, created_at FROM resumes "
            "WHERE source_harness = ? AND source_native_id = ? ORDER BY id", (source_harness, source_native_id))
        return [{"harness": r[0], "native_id": r[1], "upto": r[2], "copied_events": r[3], "created_at": r[4]}
                for r in rows]


def mark_copies(conn: sqlite3.Connection, harness: str, pks: Mapping[str, int], clock: int) -> None:
    """In a write's transaction: the copied events of the sessions it touched that are resumes (see the module),
    marked ``recall`` with ``meta.copied_from``, and each such session ``meta.resumed_from``."""
    if not pks:
        return
    names = list(pks)
    for start in range(0, len(names), 500):
        part = names[start:start + 500]
        rows = conn.execute(
            "SELECT target_native_id, source_harness, source_native_id, source_upto, copied_uids FROM resumes "
            f"WHERE target_harness = ? AND target_native_id IN ({','.join('?' * len(part))})", (harness, *part))
        for native_id, source_harness, source_id, upto, uids in rows.fetchall():
            pk = pks[native_id]
            source = {"harness": source_harness, "session": source_id}
            conn.execute(
                "UPDATE events SET meta = json_patch(coalesce(meta, '{}'), ?), recall = 1, changed = ? "
                "WHERE session_id = ? AND recall = 0 AND (uid IN (SELECT value FROM json_each(?)) OR "
                "(instr(uid, ':') > 1 AND substr(uid, 1, instr(uid, ':') - 1) IN (SELECT value FROM json_each(?))))",
                (orjson.dumps({"copied_from": source}).decode(), clock, pk, uids, uids))
            resumed = {**source, **({"upto": upto} if upto is not None else {})}
            conn.execute("UPDATE sessions SET meta = json_patch(coalesce(meta, '{}'), ?) WHERE id = ? AND "
                         "json_extract(coalesce(meta, '{}'), '$.resumed_from') IS NULL",
                         (orjson.dumps({"resumed_from": resumed}).decode(), pk))
