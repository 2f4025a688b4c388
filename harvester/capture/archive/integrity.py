"""Damage in the raw archive (harvester/capture/archive): found, mended where the agent's own file still holds what
was archived, recorded where it does not.

:meth:`Archive.frames` and :meth:`Archive.blob` check every read (see harvester/capture/archive) and raise
:class:`Damaged` rather than return other bytes. When a reparse meets one, :func:`mend` surveys every part of
the source's archive that a reparse reads, and mends what a source checked against the bank's own record
can give back:

- a stream frame, from the agent's file when the file's bytes ``[src_start, src_end)`` have the digest the
  bank recorded for the frame (the file grown since is no matter: a prefix is checked). All of a source's
  damaged frames are mended, or none. A frame archived before digests were kept cannot be checked against
  the file, nor can one a forgotten session's records were blanked out of: neither is mended;
- a document blob (a version, a related document, a sidecar, a ``.jsonl.zst`` kept as it was), from the
  file whose content is the one the blob is named after;
- a database's rows, not frame by frame (a poll's rows are its queries', not a range of the file): when the
  database holds today every row the archive held (``archive_rows`` has their digests), the reparse reads
  the source from the database, as a fresh scan would, and archives it anew.

What is not mended stays the source's damage: the reparse leaves the sessions read from it, and from the
sources it shares a session with, as the bank has them, and :func:`leave` records it (``archive_damage``,
which ``status`` shows) until a later reparse mends it or the source's archive goes.

**The order of operations.** A blob is mended by writing it under its name atomically, with the content
that name is the digest of: a reader sees the damaged one or the good one, never half of one. Streams are
mended inside one bank transaction, which holds the write lock (no scan appends meanwhile): the source's
epochs from the first damaged one on are written to new files, numbered after its last epoch and in the
same order, intact frames copied and damaged ones compressed again from the file; the transaction then
replaces the index rows of the old epochs with the new ones. Until it commits, the new files are names the
bank does not know (a crash leaves them to :meth:`Archive.repair` and collection); the old files are
removed only after it. Nothing here touches the bank's events.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from harvester.capture.archive import (
    Archive,
    Damaged,
    check_frame,
    frame_part,
    put_blob,
    record_damage,
    write_new,
)
from harvester.capture.pieces import STREAM_LEVEL, compress, digest_of, file_piece
from harvester.capture.sources import Found, open_regular, read_regular

Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged part of a source's archive: a frame (``kind``, ``epoch``, ``seq``) or a blob (``digest``)."""

    part: str
    detail: str
    kind: str = ""  # streams | rows | blobs
    epoch: int = 0
    seq: int = 0
    digest: str = ""
    whole: bool = False  # a blob kept as the source's bytes were (a .jsonl.zst)


@dataclass
class Mending:
    """What :func:`mend` found in a source's archive and what it mended."""

    found: list[Damage] = field(default_factory=list)
    mended: list[str] = field(default_factory=list)  # parts made whole again
    from_file: bool = False  # the database holds every row archived: read the source from it

    @property
    def left(self) -> list[Damage]:
        return [d for d in self.found if d.part not in self.mended]


def survey(archive: Archive, conn: sqlite3.Connection, source_id: int) -> list[Damage]:
    """Every damaged part of what a reparse reads of the source: each frame of each epoch, each document
    version's blobs and the latest sidecar."""
    found: list[Damage] = []
    for kind, epoch in conn.execute("SELECT DISTINCT kind, epoch FROM archive_frames WHERE source_id = ? "
                                    "ORDER BY kind, epoch", (source_id,)).fetchall():
        found += _survey_epoch(archive, conn, source_id, kind, epoch)
    for digest, whole in conn.execute(
            "SELECT DISTINCT digest, whole FROM archive_docs WHERE source_id = ? AND (part >= 0 OR version = "
            "(SELECT max(version) FROM archive_docs WHERE source_id = ? AND part = -1))", (source_id, source_id)
            ).fetchall():
        try:
            archive.blob("blobs", digest, whole=bool(whole))
        except Damaged as exc:
            found.append(Damage(exc.part, exc.detail, "blobs", digest=digest, whole=bool(whole)))
    return found


def _survey_epoch(archive: Archive, conn: sqlite3.Connection, source_id: int, kind: str, epoch: int) -> list[Damage]:
    rows = archive.frame_rows(conn, source_id, kind, epoch)
    found = []
    try:
        stream = open(archive.dir / kind / f"{source_id}-{epoch}.zst", "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        return [Damage(frame_part(kind, source_id, epoch, r["seq"]), f"the file is gone ({exc.strerror})", kind,
                       epoch, r["seq"]) for r in rows]
    with stream:
        for row in rows:
            stream.seek(row["offset"])
            try:
                check_frame(stream.read(row["length"]), row, frame_part(kind, source_id, epoch, row["seq"]))
            except Damaged as exc:
                found.append(Damage(exc.part, exc.detail, kind, epoch, row["seq"]))
    return found


def mend(archive: Archive, conn: sqlite3.Connection, transaction: Transaction, source: dict,
         found: Found | None) -> Mending:
    """Survey the source's archive and mend what its agent's files can give back (see the module)."""
    mending = Mending(survey(archive, conn, source["id"]))
    if not mending.found:
        return mending
    path = Path(source["path"])
    blobs = {d.digest: d for d in mending.found if d.kind == "blobs"}
    if blobs:
        mending.mended += _mend_blobs(archive, path, found, blobs)
    frames = {(d.epoch, d.seq) for d in mending.found if d.kind == "streams"}
    if frames:
        mending.mended += _mend_streams(archive, transaction, source["id"], path, frames)
    rows = [d.part for d in mending.found if d.kind == "rows"]
    if rows and found is not None:
        mending.from_file = _database_holds_every_row(conn, source["id"], found)
        if mending.from_file:  # and the file gives its sidecar too
            mending.mended = [d.part for d in mending.found]
    return mending


def _mend_blobs(archive: Archive, path: Path, found: Found | None, damaged: dict[str, Damage]) -> list[str]:
    """Blobs written anew from the files (the source's, its related documents, its sidecar) whose content
    is the one they are named after."""
    candidates = [path]
    if found is not None and found.spec.related is not None:
        candidates += [Path(p) for p in found.spec.related(found.path)]
    if found is not None and found.spec.sidecar is not None:
        candidates.append(Path(found.spec.sidecar(found.path)))
    mended = []
    for candidate in candidates:
        digest = _file_digest(candidate)
        blob = damaged.get(digest or "")
        if blob is None or blob.part in mended:
            continue
        if blob.whole:  # copied in blocks, under the name of what it copied
            if file_piece(archive.dir, candidate).digest != digest:
                continue  # changed while copied: still damaged
        else:
            data = read_regular(candidate)
            if digest_of(data) != digest:
                continue
            put_blob(archive.dir, "blobs", digest, compress(data))
        mended.append(blob.part)
    return mended


def _file_digest(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open_regular(path) as f:
            while block := f.read(1 << 20):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _mend_streams(archive: Archive, transaction: Transaction, source_id: int, path: Path,
                  damaged: set[tuple[int, int]]) -> list[str]:
    """Every damaged stream frame from the agent's file, or none (see the module): the parts mended."""
    try:
        source = open_regular(path)
    except OSError:
        return []
    old: list[Path] = []
    try:
        with source, transaction() as conn:
            epochs = [e for (e,) in conn.execute("SELECT DISTINCT epoch FROM archive_frames WHERE source_id = ? AND "
                                                 "kind = 'streams' ORDER BY epoch", (source_id,))]
            layout = {e: archive.frame_rows(conn, source_id, "streams", e) for e in epochs}
            fresh: dict[tuple[int, int], bytes] = {}
            for epoch, seq in damaged:
                row = next((r for r in layout.get(epoch, []) if r["seq"] == seq), None)
                if row is None or not row["digest"]:
                    return []  # not in the index any more, or archived before digests: cannot be checked
                raw = os.pread(source.fileno(), row["src_end"] - row["src_start"], row["src_start"])
                if digest_of(raw) != row["digest"]:
                    return []  # the file does not hold it (rewritten, or a forgotten session's lines blanked)
                fresh[(epoch, seq)] = compress(raw, STREAM_LEVEL)
            first = min(epoch for epoch, _ in damaged)
            base = max(epochs) + 1
            for n, epoch in enumerate(e for e in epochs if e >= first):
                held = archive.dir / "streams" / f"{source_id}-{epoch}.zst"
                frames, rows, offset = [], [], 0
                with _open_or_none(held) as intact:
                    for row in layout[epoch]:
                        part = frame_part("streams", source_id, epoch, row["seq"])
                        frame = fresh.get((epoch, row["seq"]))
                        if frame is None:  # intact: copied as it is, checked again on the way
                            if intact is None:
                                raise Damaged(part, "the file is gone")
                            frame = os.pread(intact.fileno(), row["length"], row["offset"])
                            check_frame(frame, row, part)
                        frames.append(frame)
                        rows.append((source_id, base + n, row["seq"], offset, len(frame), row["src_start"],
                                     row["src_end"], row["records"], row["digest"], row["at"]))
                        offset += len(frame)
                write_new(archive.dir / "streams" / f"{source_id}-{base + n}.zst", b"".join(frames))
                conn.executemany("INSERT INTO archive_frames (source_id, kind, epoch, seq, offset, length, "
                                 "src_start, src_end, records, digest, at) VALUES (?, 'streams', ?, ?, ?, ?, ?, ?, ?, "
                                 "?, ?)", rows)
                old.append(held)
            conn.execute("DELETE FROM archive_frames WHERE source_id = ? AND kind = 'streams' AND epoch >= ? AND "
                         "epoch < ?", (source_id, first, base))
    except Damaged:  # damaged since the survey: nothing is mended (the files written are names the bank lacks)
        return []
    for gone in old:  # committed: the bank names them no more
        with contextlib.suppress(OSError):
            gone.unlink()
    return [frame_part("streams", source_id, epoch, seq) for epoch, seq in sorted(damaged)]


def _open_or_none(path: Path) -> AbstractContextManager[BinaryIO | None]:
    try:
        return open(path, "rb")
    except OSError:
        return contextlib.nullcontext()


def _database_holds_every_row(conn: sqlite3.Connection, source_id: int, found: Found) -> bool:
    """Whether the database holds today every row its archive held (read as a scan reads it, unparsed)."""
    from harvester.capture import paging
    from harvester.capture.foreign_sqlite import open_readonly

    held = {d for (d,) in conn.execute("SELECT digest FROM archive_rows WHERE source_id = ?", (source_id,))}
    path = str(found.path)
    try:
        with open_readonly(path) as db, contextlib.closing(paging.snapshot_rows(db, found.spec.queries, {},
                                                                                path)) as rows:
            for row in rows:
                held.discard(hashlib.blake2b(row.raw, digest_size=16).hexdigest())
                if not held:
                    break
    except (OSError, sqlite3.Error):
        return False
    return not held


def leave(conn: sqlite3.Connection, source_id: int, damage: list[Damage], now: str) -> None:
    """Record what is damaged in the source's archive, as ``status`` shows it: what was found before and is
    still damaged keeps when it was first found; what is no longer damaged goes."""
    parts = [d.part for d in damage]
    conn.execute(f"DELETE FROM archive_damage WHERE source_id = ? AND part NOT IN ({', '.join('?' * len(parts))})",
                 (source_id, *parts))
    known = {p for (p,) in conn.execute("SELECT part FROM archive_damage WHERE source_id = ?", (source_id,))}
    record_damage(conn, source_id, [(d.part, d.detail) for d in damage if d.part not in known], now)


def damaged(exc: Damaged) -> Damage:
    kind = exc.part.split("/", 1)[0]
    return Damage(exc.part, exc.detail, kind)

