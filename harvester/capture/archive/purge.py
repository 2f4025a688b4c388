"""Taking sessions out of the archive (``harvester forget``, a session the configuration excludes once its
cwd is known), inside the bank transaction that removes them from the bank.

A source that held only these sessions loses its whole archive. One that also holds sessions that stay
(a database of many sessions, an Aider history file) is re-packed: its archived records are told apart
(:mod:`harvester.capture.archive.attribute`), the others' are written to new files, and the re-packed records are
parsed again to check that the sessions that stay read exactly as before and the others not at all. When
that check fails, the records cannot be told apart, and the source's whole archive goes: the sessions
that stay keep their bank copy, and are archived again from their file by ``harvester reparse``.

Files are only created before the commit (new names the bank does not know yet: a crash leaves them
unreferenced, and :meth:`Archive.repair` empties them) and only removed after it (:meth:`Purge.finish`):
the bank never names a file that is not there.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath

import orjson

from harvester.capture.archive import Archive, Damaged, write_new
from harvester.capture.archive.attribute import blanked, records_of, separate
from harvester.capture.pieces import compress, digest_of
from harvester.parsers.base import Harness, Record, SourceRef

STREAMS = ("jsonl", "lines", "zstd-frames")
INSEPARABLE = "a forgotten session's records could not be told apart from the others'"
DAMAGED = "its archive was damaged ({}) when a session of it was forgotten: it went whole"
COPIES = "it held copies of a forgotten session's records (a fork, a resume)"


@dataclass
class Purge:
    """What taking sessions out of the archive did; ``finish`` once the transaction has committed."""

    dropped: list[str] = field(default_factory=list)  # sources whose whole archive went (theirs alone)
    repacked: list[str] = field(default_factory=list)  # sources re-packed without them
    inseparable: list[str] = field(default_factory=list)  # shared sources whose whole archive went
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (source, what): went whole, being damaged
    copies: list[str] = field(default_factory=list)  # sources of other sessions that held copies: archive gone
    files: list[Path] = field(default_factory=list)  # to remove after the commit
    blobs: set[tuple[str, str]] = field(default_factory=set)  # (texts|blobs, digest) no longer referenced?

    def finish(self, archive: Archive, conn: sqlite3.Connection) -> int:
        """Remove the files the committed transaction stopped referencing; the bytes freed."""
        freed = 0
        for path in self.files:
            with contextlib.suppress(OSError):
                freed += path.stat().st_size
                path.unlink()
        for sub, digest in self.blobs:
            table = "archive_texts" if sub == "texts" else "archive_docs"
            if conn.execute(f"SELECT 1 FROM {table} WHERE digest = ? LIMIT 1", (digest,)).fetchone() is None:
                path = archive.blob_path(sub, digest)
                with contextlib.suppress(OSError):
                    freed += path.stat().st_size
                    path.unlink()
        return freed


def purge_sessions(conn: sqlite3.Connection, archive: Archive, harness_of: Callable[[str], Harness | None],
                   pks: list[int]) -> Purge:
    """Take the sessions ``pks`` out of the archive; called before their events leave the bank."""
    purge = Purge()
    if not pks:
        return purge
    marks = ", ".join("?" * len(pks))
    sessions = conn.execute(f"SELECT id, harness, native_id, source_path FROM sessions WHERE id IN ({marks})",
                            pks).fetchall()
    sources = conn.execute(
        f"SELECT id, harness, path, format, root, variant FROM sources WHERE id IN (SELECT DISTINCT source_id "
        f"FROM events WHERE session_id IN ({marks})) OR path IN ({', '.join('?' * len(sessions)) or 'NULL'})",
        [*pks, *(s[3] for s in sessions)]).fetchall()
    dropped_names = {(s[1], s[2]) for s in sessions}
    for sid, harness_name, path, fmt, root, variant in sources:
        _texts_of(conn, sid, pks, purge)
        others = conn.execute(
            f"SELECT 1 FROM events WHERE source_id = ? AND session_id NOT IN ({marks}) UNION ALL "
            f"SELECT 1 FROM sessions WHERE source_path = ? AND id NOT IN ({marks}) LIMIT 1",
            (sid, *pks, path, *pks)).fetchone()
        harness = harness_of(harness_name)
        ref = SourceRef(PurePath(path), PurePath(root or PurePath(path).parent), variant or "main")
        try:
            if others is None:
                if fmt in STREAMS:  # blank lines in their place: what the agent appends later keeps its line numbers
                    _repack(conn, archive, harness, sid, fmt, ref, None, purge)
                drop_source(conn, archive, sid, purge, streams=fmt not in STREAMS)
                purge.dropped.append(path)
            elif harness is None or not _repack(conn, archive, harness, sid, fmt, ref,
                                                {n for h, n in dropped_names if h == harness_name}, purge):
                drop_source(conn, archive, sid, purge, streams=True)
                conn.execute("UPDATE sources SET archive_gap = ? WHERE id = ?", (INSEPARABLE, sid))
                purge.inseparable.append(path)
            else:
                purge.repacked.append(path)
        except Damaged as exc:  # nothing of it was written yet: its whole archive goes, said
            drop_source(conn, archive, sid, purge, streams=True)
            conn.execute("UPDATE sources SET archive_gap = ? WHERE id = ?", (DAMAGED.format(exc), sid))
            purge.damaged.append((path, str(exc)))
    return purge


def drop_copies(conn: sqlite3.Connection, archive: Archive, source_ids: set[int], purge: Purge) -> None:
    """The archive of sources that hold copies of the forgotten records in sessions that stay (a fork made where
    nothing links it to its parent): it goes whole, as an inseparable one does; their sessions stay in the bank,
    and ``harvester reparse`` reads them from their files, the tombstones keeping the copies out."""
    for sid in sorted(source_ids):
        row = conn.execute("SELECT path FROM sources WHERE id = ?", (sid,)).fetchone()
        if row is None or row[0] in purge.dropped or row[0] in purge.inseparable:
            continue
        drop_source(conn, archive, sid, purge, streams=True)
        conn.execute("UPDATE sources SET archive_gap = ? WHERE id = ?", (COPIES, sid))
        purge.copies.append(row[0])


def _texts_of(conn: sqlite3.Connection, sid: int, pks: list[int], purge: Purge) -> None:
    """Whole texts of the sessions' events read from ``sid``, unless an event that stays names them too."""
    marks = ", ".join("?" * len(pks))
    for (meta,) in conn.execute(f"SELECT meta FROM events WHERE source_id = ? AND session_id IN ({marks}) AND "
                                "meta LIKE '%\"clipped\"%'", (sid, *pks)):
        digest = (orjson.loads(meta).get("clipped") or {}).get("text")
        if not digest:
            continue
        if conn.execute(f"SELECT 1 FROM events WHERE source_id = ? AND session_id NOT IN ({marks}) AND meta LIKE ? "
                        "LIMIT 1", (sid, *pks, f"%{digest}%")).fetchone() is None:
            conn.execute("DELETE FROM archive_texts WHERE source_id = ? AND digest = ?", (sid, digest))
            purge.blobs.add(("texts", digest))


def drop_source(conn: sqlite3.Connection, archive: Archive, sid: int, purge: Purge, streams: bool) -> None:
    """The source's archive: its rows, documents and whole texts, and its streams too unless they were
    blanked (``streams`` False)."""
    kinds = ("streams", "rows") if streams else ("rows",)
    for kind, epoch in conn.execute("SELECT DISTINCT kind, epoch FROM archive_frames WHERE source_id = ?", (sid,)):
        if kind in kinds:
            purge.files.append(archive.dir / kind / f"{sid}-{epoch}.zst")
    purge.blobs.update(("blobs", d) for (d,) in conn.execute("SELECT digest FROM archive_docs WHERE source_id = ?",
                                                             (sid,)))
    purge.blobs.update(("texts", d) for (d,) in conn.execute("SELECT digest FROM archive_texts WHERE source_id = ?",
                                                             (sid,)))
    conn.execute(f"DELETE FROM archive_frames WHERE source_id = ? AND kind IN ({', '.join('?' * len(kinds))})",
                 (sid, *kinds))
    for table in ("archive_docs", "archive_rows", "archive_texts", "archive_damage"):
        conn.execute(f"DELETE FROM {table} WHERE source_id = ?", (sid,))


def _repack(conn: sqlite3.Connection, archive: Archive, harness: Harness | None, sid: int, fmt: str,
            ref: SourceRef, dropped: set[str] | None, purge: Purge) -> bool:
    """Write the source's streams or rows again without the dropped sessions' records (None: without any
    record, every line of a stream left blank): False if what is left does not read as before (see the
    module). New epoch numbers, after the old ones, in the same order: the bank names the new files only
    once the transaction commits, and the old ones go after it."""
    if fmt not in STREAMS and fmt != "sqlite":
        return False  # a document holding several sessions cannot be cut (no agent writes one)
    kind = "rows" if fmt == "sqlite" else "streams"
    epochs = [e for (e,) in conn.execute("SELECT DISTINCT epoch FROM archive_frames WHERE source_id = ? AND kind = ? "
                                         "ORDER BY epoch", (sid, kind))]
    base = (max(epochs) + 1) if epochs else 0
    new: list[tuple[bytes, tuple[int, int], list[Record]]] = []
    for epoch in epochs:
        frames = list(archive.frames(conn, sid, kind, epoch))
        data = b"".join(raw for _, raw in frames)
        span = (frames[0][0]["src_start"], frames[-1][0]["src_end"]) if frames else (0, 0)
        if kind == "rows":
            records = [Record(n, line) for n, line in enumerate(data.split(b"\n"), start=1) if line]
            end = len(records)
        else:
            records, end = records_of(data, fmt)
        mask = separate(harness, ref, records, {}, kind == "streams", dropped)
        if mask is None:
            return False
        left = [r for r, k in zip(records, mask, strict=True) if k]
        content = b"".join(r.raw + b"\n" for r in left) if kind == "rows" else blanked(records, mask, 0, end, fmt)
        new.append((compress(content), digest_of(content), span, left))
    for n, (frame, digest, span, left) in enumerate(new):
        write_new(archive.dir / kind / f"{sid}-{base + n}.zst", frame)
        conn.execute("INSERT INTO archive_frames (source_id, kind, epoch, seq, offset, length, src_start, src_end, "
                     "records, digest, at) VALUES (?, ?, ?, 1, 0, ?, ?, ?, ?, ?, datetime('now'))",
                     (sid, kind, base + n, len(frame), span[0], span[1], len(left) if kind == "rows" else 0, digest))
    purge.files += [archive.dir / kind / f"{sid}-{epoch}.zst" for epoch in epochs]
    conn.execute("DELETE FROM archive_frames WHERE source_id = ? AND kind = ? AND epoch < ?", (sid, kind, base))
    if kind == "rows":  # what the archive holds of the database, for deduplicating the next reads
        conn.execute("DELETE FROM archive_rows WHERE source_id = ?", (sid,))
        conn.executemany("INSERT OR IGNORE INTO archive_rows (source_id, digest) VALUES (?, ?)",
                         [(sid, hashlib.blake2b(r.raw, digest_size=16).hexdigest()) for *_, left in new
                          for r in left])
    return True
