"""How one write's events land in their sessions in the SQLite bank: numbering what is new,
revising what the agent rewrote, keeping events in their agent's order (``Event.place``), marking
events already held, and linking forks that copy their parent's history. Used by :mod:`sqlite`."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from harvester.model import Event, Mark


def split_known(conn: sqlite3.Connection, pk: int, rows: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """(rows whose uid the session lacks, once each and in order; rows it holds already).
    A re-read of a file offers events the bank has; numbering them would leave gaps in ``seq``."""
    uids = [row[0] for row in rows]
    held: set[str] = set()
    for start in range(0, len(uids), 500):
        part = uids[start:start + 500]
        held.update(uid for (uid,) in conn.execute(
            f"SELECT uid FROM events WHERE session_id = ? AND uid IN ({','.join('?' * len(part))})", (pk, *part)))
    new, known = [], []
    for row in rows:
        if row[0] in held:
            known.append(row)
        else:
            held.add(row[0])
            new.append(row)
    return new, known


def last_versions(rows: list[tuple]) -> list[tuple]:
    """One row per uid: the last version, at the first one's place."""
    latest: dict[str, tuple] = {}
    for row in rows:
        latest[row[0]] = row  # dicts keep the first insertion's position
    return list(latest.values())


_REVISED_COLUMNS = ("role", "kind", "text", "ts", "tool_name", "tool_input", "tool_call_id", "is_error", "model",
                    "tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "tokens_reasoning", "meta",
                    "content_hash", "recall", "injected")


def revise_events(conn: sqlite3.Connection, pk: int, rows: list[tuple], clock: int) -> int:
    """Rewrite events the agent rewrote; an identical version changes nothing. Position stays; the
    full-text index follows through its update trigger. ``clock``: the write's change clock."""
    sets = ", ".join(f"{c} = ?" for c in _REVISED_COLUMNS)
    # A version that only adds token counts (Gemini re-appends a finished message with them) is a revision too.
    return conn.executemany(
        f"UPDATE events SET {sets}, changed = ? WHERE session_id = ? AND uid = ? "
        "AND (content_hash IS NOT ? OR meta IS NOT ? OR tokens_in IS NOT ? OR tokens_out IS NOT ? "
        "OR tokens_cache_read IS NOT ? OR tokens_cache_write IS NOT ? OR tokens_reasoning IS NOT ?)",
        # A row ends (..., meta, content_hash, recall, injected); its token counts are row[ROW_TOKENS].
        [(*row[1:], clock, pk, row[0], row[-3], row[-4], *row[ROW_TOKENS]) for row in rows]).rowcount


def places_of(events: list[Event]) -> dict[str, dict[str, str]]:
    """session -> uid -> the lowest place the write gives it (only harnesses that place events)."""
    out: dict[str, dict[str, str]] = {}
    for event in events:
        if event.place is not None:
            mine = out.setdefault(event.session, {})
            if event.uid not in mine or event.place < mine[event.uid]:
                mine[event.uid] = event.place
    return out


def place_events(conn: sqlite3.Connection, pk: int, places: dict[str, str], held: int, clock: int) -> None:
    """Events whose agent stores them out of order: each keeps the lowest place it was given, and the
    session is renumbered when one lands before events the bank held already (a live read saw a later
    step's messages first). ``held``: the session's last seq before this write."""
    conn.executemany("UPDATE events SET place = ? WHERE session_id = ? AND uid = ? AND (place IS NULL OR place > ?)",
                     [(place, pk, uid, place) for uid, place in places.items()])
    if not held:
        return  # a new session: the parser gave this write's events in their order
    (latest,) = conn.execute("SELECT max(place) FROM events WHERE session_id = ? AND seq <= ?", (pk, held)).fetchone()
    if latest is not None and min(places.values()) < latest:
        conn.execute("UPDATE events SET seq = o.n, changed = ? FROM (SELECT id, row_number() OVER "
                     "(ORDER BY place, seq) AS n FROM events WHERE session_id = ?) AS o "
                     "WHERE events.id = o.id AND events.seq <> o.n", (clock, pk))


def link_forks(conn: sqlite3.Connection, pk: int) -> None:
    """A session that just got its first events, of a harness whose forks copy their parent's records
    with their ids: another session of the same cwd holding its first such record is its parent (if
    that one started first) or a fork of it read earlier (if it started later). A fork of a fork copies
    the root's records too, so it is linked to the root."""
    me = conn.execute("SELECT harness, cwd, started_at FROM sessions WHERE id = ?", (pk,)).fetchone()
    first = conn.execute("SELECT uid FROM events WHERE session_id = ? AND uid NOT LIKE 'h:%' ORDER BY seq LIMIT 1",
                         (pk,)).fetchone()  # "h:" uids hash a record's bytes: not the agent's own id
    if me is None or me[1] is None or first is None:
        return
    others = conn.execute(
        "SELECT s.id, s.started_at FROM sessions s WHERE s.harness = ? AND s.cwd = ? AND s.id <> ? AND EXISTS "
        "(SELECT 1 FROM events e WHERE e.session_id = s.id AND e.uid = ?) ORDER BY s.started_at, s.id",
        (me[0], me[1], pk, first[0])).fetchall()
    for other, started in others:
        child, parent = (pk, other) if (started or "") < (me[2] or "") else (other, pk)
        conn.execute("UPDATE sessions SET parent_native_id = (SELECT native_id FROM sessions WHERE id = ?), "
                     "parent_kind = 'fork' WHERE id = ? AND parent_native_id IS NULL", (parent, child))


def mark_events(conn: sqlite3.Connection, pk: int, mark: Mark, clock: int) -> None:
    patch = orjson.dumps(mark.meta).decode()
    # An event of a record, or of one of its parts (uids <record id>:<part>).
    one = "(uid = ? OR uid LIKE ? ESCAPE '\\')"

    def like(uid: str) -> str:
        return uid.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ":%"

    if mark.since is not None:
        bound, args = "", [patch, clock, pk, pk, mark.since, like(mark.since)]
        if mark.until is not None:
            bound = f" AND seq < coalesce((SELECT min(seq) FROM events WHERE session_id = ? AND {one}), seq + 1)"
            args += [pk, mark.until, like(mark.until)]
        conn.execute("UPDATE events SET meta = json_patch(coalesce(meta, '{}'), ?), changed = ? "
                     "WHERE session_id = ? AND seq >= "
                     f"(SELECT min(seq) FROM events WHERE session_id = ? AND {one}){bound}", args)
    for uid in mark.uids:
        conn.execute(f"UPDATE events SET meta = json_patch(coalesce(meta, '{{}}'), ?), changed = ? "
                     f"WHERE session_id = ? AND {one}", (patch, clock, pk, uid, like(uid)))


def next_clock(conn: sqlite3.Connection) -> int:
    """The next value of the bank's change clock, for the write in this transaction (migration 8): the
    sessions and events it changes carry it."""
    return conn.execute("UPDATE change_clock SET n = n + 1 RETURNING n").fetchone()[0]


def stamp_changed(conn: sqlite3.Connection, pks: set[int], clock: int | None = None) -> None:
    """Stamp the sessions a write changed (events added, revised or marked, facts updated) with the write's
    change clock (``clock``, else the next value), in the write's transaction: what a sink or the team push
    has not seen is whatever is stamped after its watermark (harvester/bank/outbox.py)."""
    if not pks:
        return
    n = next_clock(conn) if clock is None else clock
    conn.executemany("UPDATE sessions SET changed = ? WHERE id = ? AND changed <> ?",
                     [(n, pk, n) for pk in sorted(pks)])


# Where an event row (event_rows) holds what is read back from it before it is written: its uid and content hash.
ROW_UID = 0
ROW_CONTENT_HASH = 16
ROW_TOKENS = slice(10, 15)  # tokens_in, tokens_out, tokens_cache_read, tokens_cache_write, tokens_reasoning


def event_rows(events: list[Event]) -> list[tuple]:
    return [_event_values(e) for e in events]


def _event_values(e: Event) -> tuple:
    """An event's column values after (session_id, seq)."""
    u = e.usage
    return (
        e.uid, e.role, e.kind, e.text, e.ts, e.tool_name,
        None if e.tool_input is None else orjson.dumps(e.tool_input).decode(),
        e.tool_call_id, 1 if e.is_error else 0, e.model,
        u.input if u else None, u.output if u else None, u.cache_read if u else None,
        u.cache_write if u else None, u.reasoning if u else None,
        None if not e.meta else orjson.dumps(e.meta).decode(),
        e.content_hash(),
        1 if e.meta and e.meta.get("recall") else 0,
        1 if e.meta and e.meta.get("injected") else 0,  # harvester.model.is_injected (not imported: see sqlite.py)
    )
