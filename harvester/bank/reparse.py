"""``harvester reparse``: rebuild sessions with today's parsers from what the archive kept of their sources.

Source by source, in one transaction each: the sessions read from the source are removed from the bank
(events, index, imports, their rows), and the source's archived bytes are read again through the same
reading pipeline a scan uses (parse, type checks, recall marking, redaction, clipping), then written as a
scan would write them. The source's own cursor is left as it is: the live file goes on being read from
where it stood. What a fresh scan of the same bytes would make is what the bank then holds, so a reparse
when nothing changed gives the bank it had; and a parser fixed since gets its fix applied.

A source with nothing archived (read before the archive existed) is read again from its file, when the file
is still there (which also archives it); one with neither is reported.

A run stopped midway (kill -9 included) stands at a source boundary: every source is either as before or
rebuilt. Running the same reparse again goes on with the sources the stopped run had not done.

A source is only ever rebuilt from data that checks out (:mod:`harvester.capture.archive.integrity`). Every archived
frame and blob is checked as it is read; at the first that is damaged the group's transaction rolls back (the
bank is as it was), the sources' archives are surveyed and mended from the agents' files where those hold
what the bank recorded digests of, and the group is rebuilt from the mended archive. What cannot be mended
leaves the group's sessions as the bank has them, recorded as damage (``status``; ``reparse`` exits 3). The
sources' cursors are never touched, so scans go on reading the agents' files from where the bank stood.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

import orjson
import zstandard

from harvester.bank.sqlite_recall import recall_key_of
from harvester.capture.archive import Archive, Damaged
from harvester.capture.archive.integrity import Damage, Mending, damaged, leave, mend
from harvester.capture.archive.purge import Purge
from harvester.capture.compressed import read_frames
from harvester.capture.contract import Cursor, Write
from harvester.capture.ingest import Ingestor
from harvester.capture.reading import Chunk, Outcome, _consume, _whole_record, read_batch, read_source
from harvester.capture.sources import Found, Plan, Stat, match, read_lines
from harvester.config.limits import LIMITS
from harvester.parsers import HARNESSES
from harvester.parsers.base import Harness, Record, SourceRef


@dataclass
class SourceDone:
    path: str
    harness: str
    how: str  # archive | file | skipped | damaged (skipped: its archive is damaged, and could not be mended)
    sessions: int = 0
    events: int = 0
    reason: str = ""
    damage: list[str] = field(default_factory=list)  # damaged: the parts of its archive that are
    mended: list[str] = field(default_factory=list)  # parts of its archive mended from its file


@dataclass
class ReparseReport:
    run: int = 0
    resumed: bool = False
    sources: list[SourceDone] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sources)

    @property
    def damaged(self) -> list[SourceDone]:
        return [s for s in self.sources if s.how == "damaged"]


OnSource = Callable[[SourceDone, int, int], None]  # (what was done, how many done, of how many)


def reparse(ingestor: Ingestor, harnesses: list[str] | None = None, session: str | None = None,
            on_source: OnSource | None = None, should_stop: Callable[[], bool] | None = None) -> ReparseReport:
    bank = ingestor.bank
    conn: sqlite3.Connection = bank.conn  # type: ignore[attr-defined]
    archive: Archive | None = bank.archive  # type: ignore[attr-defined]
    sources = _sources(conn, harnesses, session)
    report = ReparseReport()
    report.run, report.resumed = _run(bank, {"harnesses": sorted(harnesses or []), "session": session})
    todo = [s for s in sources if s["reparse_run"] != report.run]
    done_count = 0
    for group in _groups(conn, todo):
        if should_stop is not None and should_stop():
            return report
        for done in _group(ingestor, conn, archive, group, report.run):
            report.sources.append(done)
            done_count += 1
            if on_source is not None:
                on_source(done, done_count, len(todo))
    with bank.transaction() as c:  # type: ignore[attr-defined]
        c.execute("UPDATE reparse_runs SET finished_at = datetime('now') WHERE id = ?", (report.run,))
    return report


def _sources(conn: sqlite3.Connection, harnesses: list[str] | None, session: str | None) -> list[dict[str, Any]]:
    sql = ("SELECT id, harness, path, format, root, variant, reparse_run, archive_gap, mtime_ns FROM sources "
           "WHERE format != 'unknown'")
    args: list[Any] = []
    if harnesses:
        sql += f" AND harness IN ({', '.join('?' * len(harnesses))})"
        args += harnesses
    if session:
        sql += (" AND (id IN (SELECT e.source_id FROM events e JOIN sessions s ON s.id = e.session_id "
                "WHERE s.native_id = ?) OR id IN (SELECT ss.source_id FROM session_sources ss JOIN sessions s "
                "ON s.id = ss.session_id WHERE s.native_id = ?) OR path IN (SELECT source_path FROM sessions "
                "WHERE native_id = ?))")
        args += [session, session, session]
    names = ("id", "harness", "path", "format", "root", "variant", "reparse_run", "archive_gap", "mtime_ns")
    return [dict(zip(names, row, strict=True)) for row in conn.execute(sql + " ORDER BY id", args)]


def _run(bank: Any, filter_: dict[str, Any]) -> tuple[int, bool]:
    """The run to carry on (the last one with the same filter, if it did not finish), or a new one."""
    key = orjson.dumps(filter_, option=orjson.OPT_SORT_KEYS).decode()
    row = bank.conn.execute("SELECT id, finished_at FROM reparse_runs WHERE filter = ? ORDER BY id DESC LIMIT 1",
                            (key,)).fetchone()
    if row is not None and row[1] is None:
        return row[0], True
    with bank.transaction() as conn:
        cursor = conn.execute("INSERT INTO reparse_runs (filter, started_at) VALUES (?, datetime('now'))", (key,))
        return int(cursor.lastrowid or 0), False


def _groups(conn: sqlite3.Connection, sources: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Sources that share a session (OpenClaw's cold archive and its database) are rebuilt together, in
    the order they were first read: a fresh scan would read them so, and the session's order with them."""
    by_id = {s["id"]: s for s in sources}
    parent = {i: i for i in by_id}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for (sessions,) in conn.execute("SELECT group_concat(source_id) FROM session_sources GROUP BY session_id "
                                    "HAVING count(*) > 1"):
        ids = [int(i) for i in sessions.split(",") if int(i) in by_id]
        for other in ids[1:]:
            parent[find(other)] = find(ids[0])
    groups: dict[int, list[dict[str, Any]]] = {}
    for i in sorted(by_id):
        groups.setdefault(find(i), []).append(by_id[i])
    return [groups[k] for k in sorted(groups)]


def _group(ingestor: Ingestor, conn: sqlite3.Connection, archive: Archive | None, group: list[dict[str, Any]],
           run: int) -> list[SourceDone]:
    """Rebuild a group of sources, only from data that checks out (see the module)."""
    try:
        return _rebuild(ingestor, conn, archive, group, run, set())
    except Damaged:
        pass  # its transaction rolled back: the bank is as it was
    assert archive is not None  # only the archive's reads raise it
    bank = ingestor.bank
    mendings: dict[int, Mending] = {}
    for source in group:
        if _has_archive(conn, source["id"]) and not source["archive_gap"]:
            harness = HARNESSES.get(source["harness"])
            found = _found(harness, source, ingestor) if harness is not None else None
            mendings[source["id"]] = mend(archive, conn, bank.transaction, source, found)  # type: ignore[attr-defined]
    left = {sid: m.left for sid, m in mendings.items() if m.left}
    if not left:
        try:
            dones = _rebuild(ingestor, conn, archive, group, run, {i for i, m in mendings.items() if m.from_file})
        except Damaged as exc:  # damaged since the survey, or where it does not look
            left = {exc.source_id or group[0]["id"]: [damaged(exc)]}
        else:
            for source, done in zip(group, dones, strict=True):
                done.mended = mendings[source["id"]].mended if source["id"] in mendings else []
            return dones
    return _leave(bank, group, left, run)


def _leave(bank: Any, group: list[dict[str, Any]], left: dict[int, list[Damage]], run: int) -> list[SourceDone]:
    """The group's sessions stay as the bank has them; the damage is recorded."""
    now = _now()
    with bank.transaction() as c:
        for source_id, damage in left.items():
            leave(c, source_id, damage, now)
        c.executemany("UPDATE sources SET reparse_run = ? WHERE id = ?", [(run, s["id"]) for s in group])
    dones = []
    for source in group:
        damage = left.get(source["id"])
        if damage:
            dones.append(SourceDone(source["path"], source["harness"], "damaged", damage=[d.part for d in damage],
                                    reason="; ".join(f"{d.part}: {d.detail}" for d in damage)))
        else:
            dones.append(SourceDone(source["path"], source["harness"], "skipped", reason=(
                "it shares sessions with a source whose archive is damaged: they stay as they are")))
    return dones


def _rebuild(ingestor: Ingestor, conn: sqlite3.Connection, archive: Archive | None, group: list[dict[str, Any]],
             run: int, from_file: set[int]) -> list[SourceDone]:
    """One transaction: the group's sessions dropped and read again; :class:`Damaged` (its ``source_id``
    said) rolls it back."""
    plans = [_plan(ingestor, conn, archive, source, source["id"] in from_file) for source in group]
    bank = ingestor.bank
    superseded: list[Purge] = []
    with bank.transaction() as c:  # type: ignore[attr-defined]
        for source, (done, _) in zip(group, plans, strict=True):
            if done.how != "skipped":
                _drop_sessions_of(c, source["id"], source["path"])
                c.execute("DELETE FROM archive_texts WHERE source_id = ?", (source["id"],))  # made again
                c.execute("DELETE FROM problems WHERE source_path = ?", (source["path"],))
        for source, (done, chunks) in zip(group, plans, strict=True):
            if done.how == "skipped":
                continue
            try:
                _read_again(ingestor, c, archive, source, done, chunks, superseded)
            except Damaged as exc:
                exc.source_id = source["id"]
                raise
            c.execute("DELETE FROM archive_damage WHERE source_id = ?", (source["id"],))  # read whole: none left
            c.execute("UPDATE sources SET reparse_run = ? WHERE id = ?", (run, source["id"]))
    for purge in superseded:
        purge.finish(archive, bank.conn)  # type: ignore[arg-type, attr-defined]
    return [done for done, _ in plans]


def _read_again(ingestor: Ingestor, c: sqlite3.Connection, archive: Archive | None, source: dict[str, Any],
                done: SourceDone, chunks: Iterator[Chunk], superseded: list[Purge]) -> None:
    bank = ingestor.bank
    harness = HARNESSES[source["harness"]]
    now = _now()
    # Read from its file: the archive gets the file's bytes anew, after what it held of it (which goes
    # once they are in): the source's archive is then whole again, unless this read finds otherwise.
    anew = _archive_anew(c, source["id"]) if done.how == "file" and archive is not None else None
    for chunk in chunks:
        excluded = ingestor._exclude(harness, chunk)
        cursor = Cursor(harness.name, source["path"], source["format"])
        write = Write(cursor, ingestor._identify(harness, chunk), chunk.batch.events, chunk.batch.problems,
                      prepared=chunk.prepared, excluded=excluded, revise=chunk.batch.revise,
                      marks=chunk.batch.marks)
        added = bank._write_events(c, write, source["id"], now)  # type: ignore[attr-defined]
        done.events += sum(added.values())
        if chunk.archive and archive is not None:  # from the file: all of it; else whole texts
            archive.commit(c, source["id"], anew.pieces(chunk.archive) if anew else chunk.archive, now)
    if anew is not None:
        superseded.append(anew.drop_older(c, archive))  # type: ignore[arg-type]
    done.sessions = c.execute("SELECT count(DISTINCT session_id) FROM events WHERE source_id = ?",
                              (source["id"],)).fetchone()[0]


@dataclass
class _Anew:
    """A source archived again from its file: its new pieces start new epochs and versions after the old."""

    source_id: int
    epochs: dict[str, int]  # kind -> the last epoch held before
    version: int | None  # the last document version held before
    started: set[str] = field(default_factory=set)

    def pieces(self, pieces: list[Any]) -> list[Any]:
        out = []
        for piece in pieces:
            kind = {"stream": "streams", "rows": "rows"}.get(piece.kind)
            if kind in self.epochs and kind not in self.started:
                piece = replace(piece, restart=True)
            if kind is not None:
                self.started.add(kind)
            out.append(piece)
        return out

    def drop_older(self, conn: sqlite3.Connection, archive: Archive) -> Purge:
        purge = Purge()
        for kind, last in self.epochs.items():
            purge.files += [archive.dir / kind / f"{self.source_id}-{e}.zst" for (e,) in conn.execute(
                "SELECT DISTINCT epoch FROM archive_frames WHERE source_id = ? AND kind = ? AND epoch <= ?",
                (self.source_id, kind, last))]
            conn.execute("DELETE FROM archive_frames WHERE source_id = ? AND kind = ? AND epoch <= ?",
                         (self.source_id, kind, last))
        if self.version is not None:
            purge.blobs.update(("blobs", d) for (d,) in conn.execute(
                "SELECT digest FROM archive_docs WHERE source_id = ? AND version <= ?", (self.source_id, self.version)))
            conn.execute("DELETE FROM archive_docs WHERE source_id = ? AND version <= ?", (self.source_id, self.version))
        return purge


def _archive_anew(conn: sqlite3.Connection, source_id: int) -> _Anew:
    epochs = dict(conn.execute("SELECT kind, max(epoch) FROM archive_frames WHERE source_id = ? GROUP BY kind",
                               (source_id,)).fetchall())
    version = conn.execute("SELECT max(version) FROM archive_docs WHERE source_id = ?", (source_id,)).fetchone()[0]
    conn.execute("DELETE FROM archive_rows WHERE source_id = ?", (source_id,))  # every row is read anew
    conn.execute("UPDATE sources SET archive_gap = NULL WHERE id = ?", (source_id,))
    return _Anew(source_id, epochs, version)


def _plan(ingestor: Ingestor, conn: sqlite3.Connection, archive: Archive | None,
          source: dict[str, Any], from_file: bool = False) -> tuple[SourceDone, Iterator[Chunk]]:
    """How a source is read again (its archive, else its file; ``from_file``: its file, which holds all its
    archive did), and the chunks that reading yields."""
    harness = HARNESSES.get(source["harness"])
    done = SourceDone(source["path"], source["harness"], "archive")
    if harness is None:
        done.how, done.reason = "skipped", "no such harness in this version"
        return done, iter(())
    found = _found(harness, source, ingestor)
    if archive is not None and _has_archive(conn, source["id"]) and not source["archive_gap"] and not from_file:
        return done, _from_archive(archive, conn, harness, source, found)
    if found is not None and Path(source["path"]).is_file():
        done.how = "file"
        outcome = Outcome(source["path"])
        return done, read_source(found, harness.name, None, outcome, ingestor.bank.prepare_rows, ingestor.limits)
    done.how = "skipped"
    done.reason = (f"the archive lacks part of it ({source['archive_gap']}), and the file is gone: its sessions "
                   "stay as they are" if source["archive_gap"] else "nothing archived, and the file is gone")
    return done, iter(())


def _drop_sessions_of(conn: sqlite3.Connection, source_id: int, path: str) -> None:
    """Remove what the bank read from a source: its events, and the sessions left with none."""
    sessions = [pk for (pk,) in conn.execute(
        "SELECT DISTINCT session_id FROM events WHERE source_id = ? UNION "
        "SELECT session_id FROM session_sources WHERE source_id = ? UNION "
        "SELECT id FROM sessions WHERE source_path = ?", (source_id, source_id, path))]
    conn.execute("DELETE FROM session_sources WHERE source_id = ?", (source_id,))
    conn.execute("DELETE FROM events WHERE source_id = ? OR (source_id IS NULL AND session_id IN "
                 f"({', '.join('?' * len(sessions)) or 'NULL'}))", (source_id, *sessions))
    for pk in sessions:
        if conn.execute("SELECT 1 FROM events WHERE session_id = ? LIMIT 1", (pk,)).fetchone() is None:
            conn.execute("DELETE FROM imports WHERE session_id = ?", (pk,))
            conn.execute("DELETE FROM session_sources WHERE session_id = ?", (pk,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (pk,))
        else:  # read from several sources: what stays is renumbered after the reparse's own
            conn.execute("UPDATE sessions SET event_count = (SELECT count(*) FROM events WHERE session_id = ?), "
                         "last_seq = (SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?) WHERE id = ?",
                         (pk, pk, pk))


def _has_archive(conn: sqlite3.Connection, source_id: int) -> bool:
    return any(conn.execute(f"SELECT 1 FROM {table} WHERE source_id = ? LIMIT 1", (source_id,)).fetchone()
               for table in ("archive_frames", "archive_docs"))


def _found(harness: Harness, source: dict[str, Any], ingestor: Ingestor) -> Found | None:
    """Where the source was found, as reading needs it (the root and kind recorded; else worked out)."""
    path = Path(source["path"])
    if source["root"]:
        found = match(harness, Path(source["root"]), path)
        if found is not None:
            return found
    for parent in path.parents:  # recorded before roots were: the nearest directory it matches under
        found = match(harness, parent, path)
        if found is not None:
            return found
    return None


def _from_archive(archive: Archive, conn: sqlite3.Connection, harness: Harness, source: dict[str, Any],
                  found: Found | None) -> Iterator[Chunk]:
    """The source's chunks as reading makes them, from the archived bytes (every epoch, every version, in
    the order they were read: what the bank held came from all of them)."""
    fmt = source["format"]
    path = PurePath(source["path"])
    root = PurePath(source["root"] or (found.root if found else path.parent))
    variant = source["variant"] or (found.spec.variant if found else "main")
    sidecar = _latest_sidecar(archive, conn, source["id"])
    ref = SourceRef(path, root, variant, sidecar, source["mtime_ns"] or 0)  # the file as last read
    # Reading again archives nothing again (no stream is given to _consume), but keeps whole texts: a
    # parser fixed since may make them anew.
    texts_only = replace(LIMITS, archive=str(archive.dir), recall_key=recall_key_of(conn))
    stat = Stat(0, 0, 0, 0)
    if fmt in ("jsonl", "lines", "zstd-frames"):
        for (epoch,) in conn.execute("SELECT DISTINCT epoch FROM archive_frames WHERE source_id = ? AND kind = "
                                     "'streams' ORDER BY epoch", (source["id"],)).fetchall():
            data = b"".join(raw for _, raw in archive.frames(conn, source["id"], "streams", epoch))
            stream = io.BytesIO(data)
            pieces = (read_frames(stream, 0, 0) if fmt == "zstd-frames" else
                      read_lines(stream, 0, 0, take_tail=_whole_record if fmt == "jsonl" else None))
            yield from _consume(HARNESSES[harness.name], ref, None, stat, Plan(0, 0, False), None, fmt,
                                Outcome(str(path)), _prepare(), pieces, texts_only)
    elif fmt == "jsonl.zst":
        for (digest,) in conn.execute("SELECT digest FROM archive_docs WHERE source_id = ? AND part = 0 "
                                      "ORDER BY version", (source["id"],)).fetchall():
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(archive.blob("blobs", digest, whole=True)),
                                                                  read_across_frames=True)
            pieces = read_lines(reader, 0, 0, take_tail=_whole_record)  # type: ignore[arg-type]
            yield from _consume(HARNESSES[harness.name], ref, None, stat, Plan(0, 0, False), None, fmt,
                                Outcome(str(path)), _prepare(), pieces, texts_only)
    elif fmt == "sqlite":
        state: dict[str, Any] = {}
        for epoch in [e for (e,) in conn.execute("SELECT DISTINCT epoch FROM archive_frames WHERE source_id = ? AND "
                                                 "kind = 'rows' ORDER BY epoch", (source["id"],))]:
            for _, raw in archive.frames(conn, source["id"], "rows", epoch):
                records = [Record(n, line) for n, line in enumerate(raw.split(b"\n"), start=1) if line]
                chunk = _chunk_of(harness, ref, records, state, texts_only.recall_key, split=True)
                state = chunk.batch.state  # rows read at one poll, then the next: the parser's state carries
                yield chunk
    else:
        versions: dict[int, list[tuple[int, str, int]]] = {}
        for version, part, digest, whole in conn.execute(
                "SELECT version, part, digest, whole FROM archive_docs WHERE source_id = ? AND part >= 0 "
                "ORDER BY version, part", (source["id"],)):
            versions.setdefault(version, []).append((part, digest, whole))
        for parts in versions.values():
            records = [Record(n, archive.blob("blobs", digest, whole=bool(whole)))
                       for n, (_, digest, whole) in enumerate(parts, start=1)]
            records = [r for r in records if r.line > 1 or r.raw.strip()]
            yield _chunk_of(harness, ref, records, {}, texts_only.recall_key, split=False)


def _chunk_of(harness: Harness, ref: SourceRef, records: list[Record], state: dict[str, Any], recall_key: bytes | None,
              split: bool) -> Chunk:
    batch, redactions, texts = read_batch(HARNESSES[harness.name], ref, records, state, split=split, keep_whole=True,
                                          recall_key=recall_key)
    return Chunk(batch, Cursor(harness.name, str(ref.path), "archive"), redactions, _prepare()(batch.events),
                 archive=texts)


def _latest_sidecar(archive: Archive, conn: sqlite3.Connection, source_id: int) -> bytes | None:
    row = conn.execute("SELECT digest, whole FROM archive_docs WHERE source_id = ? AND part = -1 ORDER BY version DESC "
                       "LIMIT 1", (source_id,)).fetchone()
    return None if row is None else archive.blob("blobs", row[0], whole=bool(row[1]))


def _prepare() -> Callable[[list[Any]], list[tuple]]:
    from harvester.bank.sqlite_events import event_rows

    return event_rows


def _now() -> str:
    from harvester.bank.sqlite import utcnow

    return utcnow()

