"""``harvester forget``: sessions taken out of the bank, its search index and the archive, for good.

For the user who finds a secret in a transcript, or wants a repository's history gone. What goes:

- the sessions chosen (by id, by repository, by age), and the sessions started from them (sub-agents,
  forks), which hold their text too;
- their events, their search index entries, their imports; their bytes in the raw archive
  (:mod:`harvester.capture.archive.purge`: a source of theirs alone goes whole, a shared one is re-packed);
- their files in every folder ``export`` wrote into (recorded in the bank): only regular files of the names
  export gives them, never through a link; what cannot go is said (and a later export there removes it);
- the deleted pages themselves: SQLite's ``secure_delete`` overwrites what is freed, the search index is
  rewritten (FTS5 keeps a deleted row's terms until its segments merge), and the write-ahead log is
  emptied, so that the text is not left in the bank's free space.

The order of operations: one transaction takes them out of the bank and records what is left to do outside
it (the archive's files, the index's merge, the log); that is done after the commit, and a kill -9 before it
is done leaves it recorded, for the next process that opens the bank for writing (every command but those
that can only read it) to finish (:mod:`harvester.bank.sqlite_forget`). The archive's new files are written
before the commit and its old ones removed after (:mod:`harvester.capture.archive.purge`): the bank never names a
file that is not there.

A tombstone (``excluded_sessions``, reason ``forgotten``) keeps each one out of every later scan while the
agent's own file still holds it: harvester never writes into an agent's directory, so that file stays as
the agent left it, and the paths are listed for whoever wants it gone too. Their records leave tombstones too
(a hash of each record's id and content, never the text: :mod:`harvester.bank.sqlite_forget`): a fork or a
resume that copies them, read later, does not bring them back, and the copies other sessions already hold
(a fork nothing links to its parent) go now, with their sources' archive.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import Any

from harvester.bank import NOT_FOUND_HINT, SEVERAL_HINT
from harvester.bank.scope import Scope
from harvester.bank.sqlite import SqliteBank, utcnow
from harvester.terminal import one_line


@dataclass
class Forgotten:
    sessions: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    sources: list[str] = field(default_factory=list)  # the agents' files they were read from
    archive_dropped: int = 0  # sources whose archive went whole
    archive_repacked: int = 0  # shared sources re-packed without them
    inseparable: list[str] = field(default_factory=list)  # shared sources whose whole archive went
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (source, what): its archive went, damaged
    bytes_freed: int = 0
    wal_emptied: bool = True  # False: a reader held the log; its old pages go at the next checkpoint
    exported_removed: list[str] = field(default_factory=list)  # their files in the folders export wrote into
    copies: int = 0  # events of other sessions that were copies of theirs (an unlinked fork): gone too
    copies_sources: list[str] = field(default_factory=list)  # those sessions' sources, whose archive went
    exported_left: list[tuple[str, str]] = field(default_factory=list)  # (path, why it could not go)


def choose(bank: SqliteBank, session: str | None = None, scope: Scope | None = None,
           before: str | None = None) -> list[dict[str, Any]]:
    """The sessions to forget: the one named (its id or an unambiguous prefix; several matching is a
    ValueError naming them), or those of ``scope`` last active before ``before``; with the sessions
    started from each."""
    if session is not None:
        found = bank.find_sessions(session)
        if not found:
            raise ValueError(f"no session matches {session!r}: {NOT_FOUND_HINT}")
        if len(found) > 1:
            raise ValueError(f"{session!r} matches several sessions ({SEVERAL_HINT}): " + ", ".join(
                f"{one_line(s['native_id'])} ({s['harness']})" for s in found))
        rows = found
    else:
        where, args = (scope or Scope("every repository")).sql()
        if before:
            where += " AND coalesce(s.updated_at, s.started_at, s.last_imported_at) < ?"
            args.append(before)
        pks = [pk for (pk,) in bank.conn.execute(f"SELECT s.id FROM sessions s WHERE {where}", args)]
        rows = _sessions(bank, pks)
    return _with_descendants(bank, rows)


def _sessions(bank: SqliteBank, pks: list[int]) -> list[dict[str, Any]]:
    out = []
    for pk in pks:
        out += bank.find_sessions(str(pk))
    return out


def _with_descendants(bank: SqliteBank, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    chosen = {r["id"]: r for r in rows}
    frontier = list(rows)
    while frontier:
        parent = frontier.pop()
        for (pk,) in bank.conn.execute("SELECT id FROM sessions WHERE harness = ? AND parent_native_id = ?",
                                       (parent["harness"], parent["native_id"])):
            if pk not in chosen:
                child = _sessions(bank, [pk])
                chosen.update((c["id"], c) for c in child)
                frontier += child
    return sorted(chosen.values(), key=lambda s: (s.get("started_at") or "", s["id"]))


def sources_of(bank: SqliteBank, pks: list[int]) -> list[str]:
    """The agents' files these sessions were read from."""
    if not pks:
        return []
    marks = ", ".join("?" * len(pks))
    return [p for (p,) in bank.conn.execute(
        f"SELECT path FROM sources WHERE id IN (SELECT DISTINCT source_id FROM events WHERE session_id IN ({marks})) "
        f"UNION SELECT source_path FROM sessions WHERE id IN ({marks}) AND source_path IS NOT NULL ORDER BY 1",
        [*pks, *pks])]


def forget(bank: SqliteBank, sessions: list[dict[str, Any]]) -> Forgotten:
    """Take ``sessions`` out of the bank and the archive, and tombstone them (see the module). One transaction
    does it in the bank and records what is left to do outside it; then that is done
    (:meth:`SqliteBank.finish_purges`), by this process or, if it is killed first, by the next to open the bank."""
    from harvester.bank.sqlite_events import next_clock
    from harvester.bank.sqlite_forget import PurgeWork
    from harvester.capture.archive.purge import purge_sessions
    from harvester.parsers import HARNESSES

    pks = [s["id"] for s in sessions]
    result = Forgotten(sessions=sessions)
    if not pks:
        return result
    conn = bank.conn
    result.sources = sources_of(bank, pks)
    marks = ", ".join("?" * len(pks))
    conn.execute("PRAGMA secure_delete = ON")  # what is freed is overwritten, not left in free pages
    try:
        now = utcnow()
        with bank.transaction() as c:
            result.events = c.execute(f"SELECT count(*) FROM events WHERE session_id IN ({marks})", pks).fetchone()[0]
            source_ids = [i for (i,) in c.execute(
                f"SELECT DISTINCT source_id FROM events WHERE session_id IN ({marks}) AND source_id IS NOT NULL", pks)]
            purge = (purge_sessions(c, bank.archive, HARNESSES.get, pks)
                     if bank.archive is not None and not bank.archive.readonly else None)
            c.execute(f"INSERT INTO excluded_sessions (harness, native_id, excluded_at, reason, source_path) "
                      f"SELECT harness, native_id, ?, 'forgotten', source_path FROM sessions WHERE id IN ({marks}) "
                      "ON CONFLICT DO UPDATE SET reason = 'forgotten', excluded_at = excluded.excluded_at", [now, *pks])
            # Their records leave a key (never their text), which keeps copies out: those a fork or a resume
            # brings later (harvester/bank/sqlite_forget.py), and those other sessions hold already.
            copies = bank.copies_of(c, bank.tombstone_records(c, pks), pks)
            if copies:
                _drop_copies(c, copies, purge, bank, result)
            c.execute(f"DELETE FROM events WHERE session_id IN ({marks})", pks)  # the index follows (a trigger)
            c.execute(f"DELETE FROM imports WHERE session_id IN ({marks})", pks)
            c.execute(f"DELETE FROM session_sources WHERE session_id IN ({marks})", pks)
            # What a sink holds of them goes too: their documents are queued, and the sink deletes them.
            c.execute(f"UPDATE sink_documents SET state = 'pending', next_try_at = NULL WHERE (harness, native_id) IN "
                      f"(SELECT harness, native_id FROM sessions WHERE id IN ({marks}))", pks)
            c.execute(f"DELETE FROM sessions WHERE id IN ({marks})", pks)
            # The change clock moves, though no session is left to stamp: a reader watching it (an open page of
            # `harvester serve`) lists the sessions again, without these.
            next_clock(c)
            # A writer that read these sources before this commit finds its cursor moved, and reads again:
            # the tombstones then keep what it read out.
            c.executemany("UPDATE sources SET generation = generation + 1 WHERE id = ?", [(i,) for i in source_ids])
            work = PurgeWork(sessions=[(s["harness"], s["native_id"]) for s in sessions], folders=bank.export_folders())
            if purge is not None:
                work.archive_files = [str(p.relative_to(bank.archive.dir)) for p in purge.files]  # type: ignore[union-attr]
                work.blobs = sorted(purge.blobs)
                result.archive_dropped, result.archive_repacked = len(purge.dropped), len(purge.repacked)
                result.inseparable, result.damaged = purge.inseparable, purge.damaged
                result.copies_sources = purge.copies
            bank.record_purge(c, work, now)
        _stop_here("committed")
        finished = bank.finish_purges(_stop_here)
        result.bytes_freed = finished.bytes_freed
        result.wal_emptied = finished.wal_emptied
        result.exported_removed, result.exported_left = finished.exported_removed, finished.exported_left
    finally:
        conn.execute("PRAGMA secure_delete = OFF")
    return result


def _drop_copies(c: Any, copies: dict[int, list[tuple[int, int | None]]], purge: Any, bank: SqliteBank,
                 result: Forgotten) -> None:
    """Other sessions' copies of the forgotten records: their events go (the index and the team bank follow,
    by triggers), the sessions are counted again and stamped for the sinks, their sources' archive goes."""
    from harvester.bank.sqlite_events import stamp_changed
    from harvester.capture.archive.purge import drop_copies
    from harvester.model import title_key

    ids = [event for found in copies.values() for event, _ in found]
    texts: dict[int, list[str]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ", ".join("?" * len(part))
        for session, text in c.execute(f"SELECT session_id, text FROM events WHERE id IN ({marks})", part):
            texts.setdefault(session, []).append(text)
        c.execute(f"DELETE FROM events WHERE id IN ({marks})", part)
    forgotten_titles = {k for (k,) in c.execute("SELECT key FROM forgotten_records")}
    for session, title in c.execute(f"SELECT id, title FROM sessions WHERE id IN ({', '.join('?' * len(copies))}) "
                                    "AND title IS NOT NULL", list(copies)).fetchall():
        if title_key(title) in forgotten_titles or any(title.removesuffix("…") in t for t in texts.get(session, [])):
            c.execute("UPDATE sessions SET title = NULL, title_source = NULL WHERE id = ?", (session,))
    c.executemany("UPDATE sessions SET event_count = event_count - ? WHERE id = ?",
                  [(len(found), session) for session, found in copies.items()])
    stamp_changed(c, set(copies))
    result.copies = len(ids)
    if purge is not None:
        drop_copies(c, bank.archive, {source for found in copies.values() for _, source in found  # type: ignore[arg-type]
                                      if source is not None}, purge)


def _stop_here(point: str) -> None:
    """Test-only: ``HARVESTER_TEST_FORGET_STOP=<point>`` kills this process there, as a kill -9 would
    (tests/test_forget.py)."""
    if os.environ.get("HARVESTER_TEST_FORGET_STOP") == point:
        os.kill(os.getpid(), signal.SIGKILL)
