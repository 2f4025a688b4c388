"""One push of the local bank to the team bank: what the outbox (outbox.py) queued, in short transactions.

For each batch of queued sessions (in (harness, native id) order, the same on every machine):

1. read them from the local bank: the session row, and its events changed since the clock it was pushed up
   to (all of them the first time, or when ``resync`` says events were deleted here);
2. in ONE PostgreSQL transaction: this machine's row, the repositories (by normalized origin), the sessions
   (``ON CONFLICT (harness, native_id) DO UPDATE ... WHERE`` the row is this machine's and differs: another
   machine's session is never overwritten), their events (``COPY`` into a temporary table, each with the text
   its search vector is made of, prepared here: schema.search_text; then ``INSERT ... ON CONFLICT (session_id,
   uid) DO UPDATE ... WHERE`` they differ: pushing twice changes nothing), and the
   deletes (a session forgotten here, or of a bank with ``push = false``);
3. then, in the local bank, each session's cursor (the clock pushed up to, the events pushed, the resync
   count seen). A kill -9 between 2 and 3 pushes the batch again: the same rows, nothing changed.

Batches are pipelined: while the server inserts one (its full-text vectors and index are most of a push's
cost), the next is read and sent on a second connection, each in its own transaction (IN_FLIGHT at most).
Their sessions are disjoint (the queue is read in key order, once each), every SQLite read and write stays on
the caller's thread, and each batch's cursors are written only after its own transaction committed, in the
order the batches were read; a batch committed behind one that failed is settled all the same. Events already
there unchanged are left out before the server computes their search vectors (a push again after a kill -9,
a resync).

A server that cannot be reached, or that refuses this harvester (a newer schema, no right to create it), stops
the pass (``stopped_by``); the service tries again with a back-off.
Rows the server refuses (a constraint, bad data) cost their sessions alone: they are retried one by one, and
those that still fail are marked failed with the error, retried later with a back-off.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester.bank.outbox import now_iso
from harvester.gitident import strip_credentials
from harvester.log import get_logger
from harvester.team import outbox
from harvester.team.identity import repo_key
from harvester.team.schema import SCHEMA, search_text
from harvester.team.server import Refused, Unreachable

if TYPE_CHECKING:
    from harvester.bank.sqlite import SqliteBank
    from harvester.team.server import TeamBank

log = get_logger("harvester.team")
BATCH_SESSIONS = 200
BATCH_EVENTS = 5000
IN_FLIGHT = 2  # batches sent and not yet settled: one inserted by the server while the next is read and sent
RETRY_BASE = 30.0  # a refused session: tried again after 30 s, doubling to a day
RETRY_MAX = 86400.0

EVENT_COLUMNS = ("uid", "seq", "role", "kind", "text", "ts", "tool_name", "tool_input", "tool_call_id", "is_error",
                 "model", "tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "tokens_reasoning",
                 "meta", "content_hash", "recall")
SESSION_COLUMNS = ("bank_id", "cwd", "project", "repo_root", "origin_url", "origin_id", "branch", "commit_sha",
                   "git_how", "git_error", "title", "title_source", "model", "agent_version", "started_at",
                   "updated_at", "parent_native_id", "parent_kind", "state", "event_count", "redactions", "meta",
                   "first_imported_at", "last_imported_at")
_LOCAL_SESSION = ("id, harness, native_id, changed, " + ", ".join(SESSION_COLUMNS))
_LOCAL_EVENT = ", ".join(EVENT_COLUMNS)
_UPDATED = ", ".join(f"{c} = excluded.{c}" for c in (*SESSION_COLUMNS, "repository_id", "host", "os_user",
                                                      "harvester_version"))
_DIFFERS = ("(" + ", ".join(f"s.{c}" for c in (*SESSION_COLUMNS, "repository_id")) + ") IS DISTINCT FROM ("
            + ", ".join(f"excluded.{c}" for c in (*SESSION_COLUMNS, "repository_id")) + ")")
_EVENT_UPDATED = ", ".join(f"{c} = excluded.{c}" for c in EVENT_COLUMNS if c != "uid")
_EVENT_DIFFERS = "(e.seq, e.content_hash, e.meta, e.recall, e.ts) IS DISTINCT FROM " \
                 "(excluded.seq, excluded.content_hash, excluded.meta, excluded.recall, excluded.ts)"


@dataclass
class PushReport:
    sessions: int = 0  # sessions whose rows went (created, updated, or already there)
    events: int = 0  # events sent (new or changed, as far as this machine knew)
    deleted: int = 0
    held: int = 0
    theirs: int = 0
    failed: int = 0
    stopped_by: str | None = None  # the server is away (or refuses this harvester): why
    refused: bool = False  # stopped_by is the server's refusal (Refused), not its absence
    errors: list[str] = field(default_factory=list)

    @property
    def pushed(self) -> int:
        return self.sessions + self.deleted


@dataclass
class _Item:
    """One queued session, as read for a push."""

    queued: dict[str, Any]
    row: dict[str, Any] | None  # the local session; None: gone here
    events: list[tuple] = field(default_factory=list)
    full: bool = False  # every event: the ones there that are not here go
    action: str = "push"  # push | delete | hold


def _clean(value: Any) -> Any:
    """PostgreSQL text holds no NUL character: one in a transcript is shown as U+FFFD there."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


class Pusher:
    def __init__(self, bank: SqliteBank, team: TeamBank) -> None:
        self.bank, self.team = bank, team
        self.machine = outbox.machine_id(bank)

    def push(self, on_batch: Callable[[PushReport, int], None] | None = None,
             keys: set[tuple[str, str]] | None = None) -> PushReport:
        """Queue what changed, then push what is due until nothing is (or the server goes away)."""
        report = PushReport()
        outbox.enqueue(self.bank)
        outbox.rehold(self.bank, self.team.settings.held_banks)
        try:
            self.team.ready(self.machine)
        except Unreachable as exc:
            report.stopped_by, report.refused = str(exc), isinstance(exc, Refused)
            outbox_note(self.bank, report.stopped_by)
            return report
        after = ("", "")  # in key order, once each: what is queued again meanwhile waits for the next pass
        sent: list[tuple[list[_Item], Future[list[str]]]] = []  # in flight, in the order read
        with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="harvester-team-push") as sender:
            try:
                while not report.stopped_by:
                    queued = outbox.due(self.bank, BATCH_SESSIONS, after)
                    if not queued:
                        break
                    after = (queued[-1]["harness"], queued[-1]["native_id"])
                    if keys is not None:
                        queued = [q for q in queued if (q["harness"], q["native_id"]) in keys]
                        if not queued:
                            continue
                    items = self._read(queued)
                    after = (items[-1].queued["harness"], items[-1].queued["native_id"])
                    sent.append((items, sender.submit(self.team.run, lambda conn, i=items: self._write(conn, i))))
                    if len(sent) >= IN_FLIGHT:
                        self._landed(*sent.pop(0), report, on_batch)
            finally:  # each batch sent is settled (or retried alone) as it landed, whatever stopped the pass
                while sent:
                    self._landed(*sent.pop(0), report, on_batch)
        outbox_note(self.bank, report.stopped_by)
        return report

    def _landed(self, items: list[_Item], sending: Future[list[str]], report: PushReport,
                on_batch: Callable[[PushReport, int], None] | None) -> None:
        """A batch's outcome, once its transaction ended: its cursors written, or its sessions sent again one by
        one (the server refused a row), or the pass stopped (the server is away: the batch stays queued)."""
        from psycopg import errors

        try:
            outcomes = sending.result()
        except Unreachable as exc:
            report.stopped_by = report.stopped_by or str(exc)
            return
        except errors.Error:
            if report.stopped_by:
                return
            try:
                if len(items) == 1:
                    self._send(items, report)
                else:
                    for item in items:
                        self._send([item], report)
            except Unreachable as exc:
                report.stopped_by = str(exc)
                return
        else:
            self._settle(items, outcomes, report)
        if on_batch is not None:
            on_batch(report, len(items))

    # -- 1. read -------------------------------------------------------------------------------------
    def _read(self, queued: list[dict[str, Any]]) -> list[_Item]:
        """The batch's sessions and events as the local bank holds them now (up to BATCH_EVENTS events, at
        least one session)."""
        conn, held = self.bank.conn, set(self.team.settings.held_banks)
        items: list[_Item] = []
        budget = BATCH_EVENTS
        for q in queued:
            cur = conn.execute(f"SELECT {_LOCAL_SESSION} FROM sessions WHERE harness = ? AND native_id = ?",
                               (q["harness"], q["native_id"]))
            found = cur.fetchone()
            row = None if found is None else dict(zip([d[0] for d in cur.description], found, strict=True))
            item = _Item(q, row)
            if row is None:
                item.action = "delete"
            elif row["bank_id"] in held:
                item.action = "hold"
            else:
                item.full = q["resync"] > 0 or q["pushed_clock"] < 0 or q["session_pk"] != row["id"]
                since = -1 if item.full else q["pushed_clock"]
                item.events = [tuple(_clean(v) for v in r) for r in conn.execute(
                    f"SELECT {_LOCAL_EVENT} FROM events WHERE session_id = ? AND changed > ? ORDER BY seq",
                    (row["id"], since))]
            if items and budget - len(item.events) < 0:
                break
            budget -= len(item.events)
            items.append(item)
        return items

    # -- 2. send -------------------------------------------------------------------------------------
    def _send(self, items: list[_Item], report: PushReport) -> None:
        """The batch in one transaction; when the server refuses it, each session alone (one bad session costs
        that session)."""
        from psycopg import errors

        try:
            outcomes = self.team.run(lambda conn: self._write(conn, items))
        except Unreachable:
            raise
        except errors.Error as exc:
            if len(items) == 1:
                self._failed(items[0], self.team.scrub(str(exc)), report)
                return
            for item in items:
                self._send([item], report)
            return
        self._settle(items, outcomes, report)

    def _write(self, conn: Any, items: list[_Item]) -> list[str]:
        """The batch's rows, in the caller's transaction. Returns each item's outcome: pushed, theirs, deleted,
        held."""
        p = self.team.provenance
        pushing = [i for i in items if i.action == "push"]
        repos: dict[str, int] = {}
        keys = {repo_key(i.row, self.machine) for i in pushing}  # type: ignore[arg-type]
        wanted = sorted({k for k, _, _ in keys})
        for _ in range(2):  # again for one that another machine emptied and deleted in between
            for key, name, url in sorted(keys):
                if key not in repos:
                    conn.execute(f"INSERT INTO {SCHEMA}.repositories (repo_key, name, origin_url) VALUES (%s, %s, %s) "
                                 "ON CONFLICT (repo_key) DO NOTHING", (key, name, url))
            if wanted:  # KEY SHARE: not deleted (its last session gone) before these sessions reference it
                repos.update(conn.execute(f"SELECT repo_key, id FROM {SCHEMA}.repositories WHERE repo_key = ANY(%s) "
                                          "ORDER BY repo_key FOR KEY SHARE", (wanted,)).fetchall())
            if len(repos) == len(wanted):
                break
        outcomes: list[str] = []
        copies: list[tuple] = []
        changed = 0  # rows this batch inserted, updated or deleted: a batch sent again changes none
        emptied: set[int] = set()  # repositories of the sessions deleted
        for item in items:
            q = item.queued
            if item.action in ("delete", "hold"):
                gone = conn.execute(f"DELETE FROM {SCHEMA}.sessions WHERE harness = %s AND native_id = %s AND "
                                    "machine_id = %s RETURNING repository_id",
                                    (q["harness"], q["native_id"], self.machine)).fetchall()
                changed += len(gone)
                emptied.update(r[0] for r in gone)
                outcomes.append("deleted" if item.action == "delete" else "held")
                continue
            row = item.row
            assert row is not None
            key = repo_key(row, self.machine)[0]
            values = [_clean(strip_credentials(row[c]) if c == "origin_url" else row[c]) for c in SESSION_COLUMNS]
            found = conn.execute(
                f"INSERT INTO {SCHEMA}.sessions AS s (harness, native_id, machine_id, repository_id, host, os_user, "
                f"harvester_version, {', '.join(SESSION_COLUMNS)}) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                f"{', '.join(['%s'] * len(SESSION_COLUMNS))}) ON CONFLICT (harness, native_id) DO UPDATE SET "
                f"{_UPDATED}, pushed_at = now() WHERE s.machine_id = excluded.machine_id AND {_DIFFERS} RETURNING id",
                (row["harness"], row["native_id"], self.machine, repos[key], p["host"], p["os_user"],
                 p["harvester_version"], *values)).fetchone()
            if found is None:  # unchanged, or another machine's
                owner = conn.execute(f"SELECT id, machine_id FROM {SCHEMA}.sessions WHERE harness = %s AND "
                                     "native_id = %s", (row["harness"], row["native_id"])).fetchone()
                if str(owner[1]) != self.machine:
                    outcomes.append("theirs:" + str(owner[1]))
                    continue
                found = owner
            else:
                changed += 1
            session_id = found[0]
            if item.full:
                changed += conn.execute(f"DELETE FROM {SCHEMA}.events WHERE session_id = %s AND NOT (uid = ANY(%s))",
                                        (session_id, [e[0] for e in item.events])).rowcount
            copies.extend((session_id, *e) for e in item.events)
            outcomes.append("pushed")
        if copies:
            changed += self._copy_events(conn, copies)
        if emptied:  # a repository with no session left there (held, forgotten) goes too: its name and origin
            changed += conn.execute(
                f"DELETE FROM {SCHEMA}.repositories r WHERE r.id = ANY(%s) AND NOT EXISTS "
                f"(SELECT 1 FROM {SCHEMA}.sessions s WHERE s.repository_id = r.id)", (sorted(emptied),)).rowcount
        if changed:  # the machine's row too is left as it was by a push that changed nothing
            conn.execute(f"UPDATE {SCHEMA}.machines SET last_push_at = now() WHERE id = %s", (self.machine,))
        return outcomes

    @staticmethod
    def _copy_events(conn: Any, rows: list[tuple]) -> int:
        """Events through COPY into a temporary table, each with its search text (schema.search_text), then one
        INSERT ... ON CONFLICT in key order that makes their search vectors. Returns how many were inserted or
        changed."""
        columns = ("session_id", *EVENT_COLUMNS)
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS push_events (session_id bigint, uid text, seq integer, role text, "
            "kind text, text text, ts text, tool_name text, tool_input text, tool_call_id text, is_error boolean, "
            "model text, tokens_in bigint, tokens_out bigint, tokens_cache_read bigint, tokens_cache_write bigint, "
            "tokens_reasoning bigint, meta text, content_hash text, recall boolean, search_text text) "
            "ON COMMIT DELETE ROWS")
        with conn.cursor().copy(f"COPY push_events ({', '.join(columns)}, search_text) FROM STDIN") as copy:
            for r in rows:
                copy.write_row((*r[:10], bool(r[10]), *r[11:19], bool(r[19]), search_text(r[4], r[5])))
        # Rows there unchanged are left out first: ON CONFLICT ... WHERE would compute each one's search vector
        # before finding it unchanged.
        return conn.execute(
            f"INSERT INTO {SCHEMA}.events AS e ({', '.join(columns)}, search) SELECT {', '.join(columns)}, "
            "to_tsvector('simple'::regconfig, p.search_text) FROM push_events p "
            f"WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.events x WHERE x.session_id = p.session_id AND x.uid = p.uid "
            "AND (x.seq, x.content_hash, x.meta, x.recall, x.ts) IS NOT DISTINCT FROM "
            "(p.seq, p.content_hash, p.meta, p.recall, p.ts)) "
            "ORDER BY session_id, uid ON CONFLICT (session_id, uid) DO UPDATE SET "
            f"{_EVENT_UPDATED}, search = excluded.search WHERE {_EVENT_DIFFERS}").rowcount

    # -- 3. settle -----------------------------------------------------------------------------------
    def _settle(self, items: list[_Item], outcomes: list[str], report: PushReport) -> None:
        """Each session's cursor after the server committed its rows."""
        now = now_iso()
        with self.bank.transaction() as conn:
            for item, outcome in zip(items, outcomes, strict=True):
                q, row = item.queued, item.row
                key = (q["harness"], q["native_id"])
                if outcome == "deleted":
                    report.deleted += 1
                    # Gone here and there; a session of that id read again later starts over.
                    conn.execute("DELETE FROM team_sessions WHERE harness = ? AND native_id = ? AND resync = ?",
                                 (*key, q["resync"]))
                    continue
                if outcome == "held":
                    report.held += 1
                    conn.execute("UPDATE team_sessions SET state = 'held', pushed_clock = -1, pushed_events = 0, "
                                 "resync = 0, last_error = NULL WHERE harness = ? AND native_id = ?", key)
                    continue
                assert row is not None
                if outcome.startswith("theirs:"):
                    report.theirs += 1
                    conn.execute("UPDATE team_sessions SET state = 'theirs', owner = ?, last_error = NULL "
                                 "WHERE harness = ? AND native_id = ?", (outcome.split(":", 1)[1], *key))
                    continue
                report.sessions += 1
                report.events += len(item.events)
                pushed = len(item.events) if item.full else q["pushed_events"] + len(item.events)
                # A resync raised while this was in flight (events deleted meanwhile) keeps it pending.
                conn.execute(
                    "UPDATE team_sessions SET state = CASE WHEN resync > ? THEN 'pending' ELSE 'pushed' END, "
                    "resync = resync - ?, session_pk = ?, pushed_clock = ?, pushed_events = ?, owner = NULL, "
                    "attempts = 0, next_try_at = NULL, last_error = NULL, last_pushed_at = ? "
                    "WHERE harness = ? AND native_id = ?",
                    (q["resync"], q["resync"], row["id"], row["changed"], min(pushed, row["event_count"]), now, *key))

    def _failed(self, item: _Item, error: str, report: PushReport) -> None:
        q = item.queued
        report.failed += 1
        report.errors.append(f"{q['harness']} {q['native_id']}: {error}")
        log.warning("team_push_refused", harness=q["harness"], session=q["native_id"], error=error)
        wait = min(RETRY_MAX, RETRY_BASE * 2 ** q["attempts"])
        with self.bank.transaction() as conn:
            conn.execute("UPDATE team_sessions SET state = 'pending', attempts = attempts + 1, next_try_at = ?, "
                         "last_error = ? WHERE harness = ? AND native_id = ?",
                         (now_iso(wait), error[:500], q["harness"], q["native_id"]))


def outbox_note(bank: SqliteBank, error: str | None) -> None:
    from harvester.bank.outbox import note_outcome

    note_outcome(bank, outbox.SINK, error)
