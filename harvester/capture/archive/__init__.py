"""The raw archive: the bytes of every harvested source, kept beside the bank, for when the agent's own copy
is gone (Claude Code deletes sessions after 30 days) or a parser fix needs them again (``harvester reparse``).

It is NOT redacted: it holds what the agents wrote, secrets included, in a 0700 directory of 0600 files
beside the bank (``bank.sqlite`` -> ``bank.archive/``). Only the bank's (redacted) data ever leaves the
machine. Three shapes, as the sources come:

- **Streams** (JSONL, Markdown, zstd frame chains: appended in place): the bytes of each committed chunk,
  one zstd frame per chunk, appended to ``streams/<source>-<epoch>.zst``. Growth is the bytes appended,
  compressed; a source read again from its start (replaced, rewritten) begins a new epoch beside the old.
- **Documents** (JSON rewritten whole, a ``.jsonl.zst`` rollout): every version read, content-addressed in
  ``blobs/`` (a version equal to one kept is kept once).
- **Database rows** (SQLite stores): each row as the reader saw it, once per distinct content, in frames
  appended to ``rows/<source>-<epoch>.zst`` (one frame per read), never the whole database per poll.

Whole event texts (a tool output past the bank's 256 KiB copy) are blobs too, redacted, in ``texts/``.

**The order of operations.** What a chunk adds is written inside the bank transaction that commits the
chunk's events and cursor, and the bank's index of it (``archive_frames``, ``archive_docs``,
``archive_rows``) is part of that transaction. So after ``kill -9`` the archive can only be *ahead*: bytes
appended whose transaction never committed. Every append first cuts its file back to the end the bank
recorded, and :meth:`Archive.repair` does the same for every file at start. A blob written for a
transaction that rolled back is unreferenced, harmless, and collected by retention. An archive *behind*
the bank (bytes the OS lost in a power failure after the commit) is found by ``repair`` and reported.

**Nothing read from it is trusted unchecked.** Every frame carries zstd's content checksum, and the bank's
index records each frame's digest (sha256 of its uncompressed bytes: for a stream, the source's bytes
``[src_start, src_end)``); blobs are named by the sha256 of their content. :meth:`Archive.frames` and
:meth:`Archive.blob` check every read against them and raise :class:`Damaged` instead of returning
something else. Frames archived before digests were kept are checked by their structure: one whole zstd
frame filling exactly its recorded length, decoding to the size its header declares (zstd checks it), and
for rows, holding the number of records recorded. A stream frame's size is not held against its source
range: where an excluded or forgotten session's lines were blanked out of it, it is smaller. So a byte
flipped inside such a frame's text can go unseen: only frames with a digest are proof against it. What is
done about damage is :mod:`harvester.capture.archive.integrity`'s.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harvester.capture.pieces import Piece, blob_path, compress, digest_of

# zstandard and hashlib (OpenSSL's) are imported where they are used: a command that only reads the bank opens
# this module, and most of them never touch the archive.


class Damaged(Exception):
    """A part of the archive does not hold what the bank recorded of it: gone, cut short, not zstd, or not
    matching its digest. ``part`` names it as ``status`` shows it (``streams/12-0.zst frame 3``)."""

    def __init__(self, part: str, detail: str) -> None:
        super().__init__(f"{part}: {detail}")
        self.part = part
        self.detail = detail
        self.source_id: int | None = None  # the source being read, when the reader knows it


def blob_part(sub: str, digest: str) -> str:
    return f"{sub}/{digest[:2]}/{digest}.zst"


def frame_part(kind: str, source_id: int, epoch: int, seq: int) -> str:
    return f"{kind}/{source_id}-{epoch}.zst frame {seq}"


def check_blob(data: bytes, sub: str, digest: str, whole: bool = False) -> bytes:
    """A blob's content (``whole``: its bytes as they are), or :class:`Damaged` if it is not the content its
    name is the digest of."""
    import zstandard

    part = blob_part(sub, digest)
    if whole:
        content = data
    else:
        try:
            dobj = zstandard.ZstdDecompressor().decompressobj()
            content = dobj.decompress(data)
        except zstandard.ZstdError as exc:
            raise Damaged(part, f"not readable zstd ({exc})") from exc
        if not dobj.eof:
            raise Damaged(part, "cut short")
    if digest_of(content) != digest:
        raise Damaged(part, "its content is not the one it is named after")
    return content


def check_frame(frame: bytes, row: dict, part: str) -> bytes:
    """A frame's uncompressed bytes, or :class:`Damaged` if they are not what the bank recorded (``row``:
    its index row: length, digest, and for a frame without a digest, kind and records: see the module)."""
    import zstandard

    if len(frame) < row["length"]:
        raise Damaged(part, f"cut short: {len(frame)} of its {row['length']} bytes are on disk")
    dobj = zstandard.ZstdDecompressor().decompressobj()
    try:
        raw = dobj.decompress(frame)
    except zstandard.ZstdError as exc:
        raise Damaged(part, f"not a readable zstd frame ({exc})") from exc
    if not dobj.eof or dobj.unused_data:
        raise Damaged(part, "not one whole zstd frame")
    if row.get("digest"):
        if digest_of(raw) != row["digest"]:
            raise Damaged(part, "its content does not match its digest")
    elif row["kind"] == "rows" and ((raw and not raw.endswith(b"\n"))
                                    or sum(1 for line in raw.split(b"\n") if line) != row["records"]):
        raise Damaged(part, f"does not hold the {row['records']} records recorded")
    return raw


def record_damage(conn: sqlite3.Connection, source_id: int, found: list[tuple[str, str]], now: str) -> None:
    """What was found damaged in a source's archive, (part, detail) each: ``status`` shows it until a reparse
    mends it or the source's archive goes (:mod:`harvester.capture.archive.integrity`)."""
    conn.executemany("INSERT OR REPLACE INTO archive_damage (source_id, part, detail, found_at) VALUES (?, ?, ?, ?)",
                     [(source_id, part, detail, now) for part, detail in found])


def record_lost(conn: sqlite3.Connection, kind: str, source_id: int, epoch: int, size: int, now: str) -> None:
    """An epoch's frames past the ``size`` bytes its file has: lost after their commit."""
    seqs = [seq for (seq,) in conn.execute("SELECT seq FROM archive_frames WHERE source_id = ? AND kind = ? AND "
                                           "epoch = ? AND offset + length > ? ORDER BY seq",
                                           (source_id, kind, epoch, size))]
    record_damage(conn, source_id, [(frame_part(kind, source_id, epoch, seq), f"lost: the file ends at byte {size} "
                                     "(cut short or deleted after its commit)") for seq in seqs], now)
    from harvester.log import get_logger

    get_logger("harvester.archive").warning("archived frames lost on disk after their commit", source_id=source_id,
                                            kind=kind, epoch=epoch, frames=len(seqs))


def put_blob(directory: str | Path, sub: str, digest: str, data: bytes, whole: bool = False) -> None:
    """Write a blob under its content's name, once (atomically: a reader never sees half of one); a damaged
    one already there is written anew."""
    path = blob_path(directory, sub, digest)
    if path.exists():
        try:
            check_blob(path.read_bytes(), sub, digest, whole)
            return
        except (OSError, Damaged):
            pass
    old = os.umask(0o077)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    finally:
        os.umask(old)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_new(path: Path, data: bytes) -> None:
    """A stream or rows file written whole under a name the bank does not know yet (see the module)."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


@dataclass
class ArchiveReport:
    """What :meth:`Archive.repair` found: bytes cut back (a crash before a commit), and frames the bank
    records that the files lack (lost after a commit)."""

    truncated: list[tuple[str, int]] = field(default_factory=list)  # (file, bytes cut)
    missing: list[tuple[int, int, int]] = field(default_factory=list)  # (source id, epoch, frames)


def archive_dir(bank_path: str | Path) -> Path:
    path = Path(bank_path)
    return path.with_name(path.stem + ".archive") if path.suffix else path.with_name(path.name + ".archive")


class Archive:
    """The archive of one bank. ``commit`` runs inside the bank's transaction (see the module)."""

    def __init__(self, directory: str | Path, readonly: bool = False) -> None:
        self.dir = Path(directory)
        self.readonly = readonly
        if not readonly:
            old = os.umask(0o077)
            try:
                for sub in ("streams", "rows", "blobs", "texts"):
                    (self.dir / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
            finally:
                os.umask(old)
            with contextlib.suppress(OSError):
                os.chmod(self.dir, 0o700)

    # -- writing (inside the bank transaction) --------------------------------------------
    def commit(self, conn: sqlite3.Connection, source_id: int, pieces: list[Piece], now: str) -> None:
        for piece in pieces:
            if piece.kind == "stream":
                self._append(conn, "streams", source_id, piece.data, piece.digest, piece.restart, now,
                             src=(piece.src_start, piece.src_end), records=0)
            elif piece.kind == "rows":
                self._rows(conn, source_id, piece, now)
            elif piece.kind == "text":
                put_blob(self.dir, "texts", piece.digest, piece.data)
                conn.execute("INSERT OR IGNORE INTO archive_texts (source_id, digest, size) VALUES (?, ?, ?)",
                             (source_id, piece.digest, len(piece.data)))
        docs = [p for p in pieces if p.kind == "doc"]
        if docs:
            self._doc_version(conn, source_id, docs, now)

    def discard(self, conn: sqlite3.Connection, pieces: list[Piece]) -> None:
        """Pieces a chunk will not commit: a blob already written for one goes, unless the archive holds it."""
        for piece in pieces:
            if piece.written and conn.execute("SELECT 1 FROM archive_docs WHERE digest = ? LIMIT 1",
                                              (piece.digest,)).fetchone() is None:
                with contextlib.suppress(OSError):
                    self.blob_path("blobs", piece.digest).unlink()

    def _append(self, conn: sqlite3.Connection, kind: str, source_id: int, data: bytes, digest: str, restart: bool,
                now: str, src: tuple[int, int] = (0, 0), records: int = 0) -> None:
        row = conn.execute("SELECT max(epoch) FROM archive_frames WHERE source_id = ? AND kind = ?",
                           (source_id, kind)).fetchone()
        epoch = 0 if row[0] is None else row[0] + (1 if restart else 0)
        end, seq = conn.execute(
            "SELECT coalesce(max(offset + length), 0), coalesce(max(seq), 0) FROM archive_frames "
            "WHERE source_id = ? AND kind = ? AND epoch = ?", (source_id, kind, epoch)).fetchone()
        path = self.dir / kind / f"{source_id}-{epoch}.zst"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size < end:  # lost after their commit (deleted, cut short): said, never hidden by what follows
                record_lost(conn, kind, source_id, epoch, size, now)
            if size != end:
                os.ftruncate(fd, end)  # bytes of an append whose transaction never committed
            os.pwrite(fd, data, end)
        finally:
            os.close(fd)
        conn.execute("INSERT INTO archive_frames (source_id, kind, epoch, seq, offset, length, src_start, src_end, "
                     "records, digest, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (source_id, kind, epoch, seq + 1, end, len(data), src[0], src[1], records, digest, now))

    def _rows(self, conn: sqlite3.Connection, source_id: int, piece: Piece, now: str) -> None:
        import hashlib

        digests = [hashlib.blake2b(record, digest_size=16).hexdigest() for record in piece.records]
        held: set[str] = set()
        for start in range(0, len(digests), 500):  # what the archive holds already, 500 at a query
            part = digests[start:start + 500]
            held.update(d for (d,) in conn.execute(
                f"SELECT digest FROM archive_rows WHERE source_id = ? AND digest IN ({','.join('?' * len(part))})",
                (source_id, *part)))
        fresh: list[bytes] = []
        named: list[tuple[int, str]] = []
        for record, digest in zip(piece.records, digests, strict=True):
            if digest not in held:
                held.add(digest)  # a row read twice in one piece is kept once
                fresh.append(record)
                named.append((source_id, digest))
        conn.executemany("INSERT INTO archive_rows (source_id, digest) VALUES (?, ?)", named)
        if fresh:
            raw = b"\n".join(fresh) + b"\n"
            self._append(conn, "rows", source_id, compress(raw), digest_of(raw), piece.restart, now,
                         records=len(fresh))

    def _doc_version(self, conn: sqlite3.Connection, source_id: int, docs: list[Piece], now: str) -> None:
        latest = conn.execute("SELECT max(version) FROM archive_docs WHERE source_id = ?", (source_id,)).fetchone()[0]
        if latest is not None:
            held = [d for (d,) in conn.execute(
                "SELECT digest FROM archive_docs WHERE source_id = ? AND version = ? ORDER BY part",
                (source_id, latest))]
            if held == [p.digest for p in sorted(docs, key=lambda p: p.part)]:
                return  # read again, unchanged (a related document's stat moved)
        version = 0 if latest is None else latest + 1
        for p in docs:
            if not p.written:
                put_blob(self.dir, "blobs", p.digest, p.data)
        conn.executemany("INSERT INTO archive_docs (source_id, version, part, digest, whole, size, at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [(source_id, version, p.part, p.digest, int(p.whole), p.written or len(p.data), now)
                          for p in docs])

    def blob_path(self, sub: str, digest: str) -> Path:
        return blob_path(self.dir, sub, digest)

    # -- reading -------------------------------------------------------------------------
    def frame_rows(self, conn: sqlite3.Connection, source_id: int, kind: str, epoch: int) -> list[dict]:
        """The bank's index of one epoch's frames, in order."""
        names = ("seq", "offset", "length", "src_start", "src_end", "records", "digest", "at")
        return [dict(zip(names, row, strict=True), kind=kind) for row in conn.execute(
            f"SELECT {', '.join(names)} FROM archive_frames WHERE source_id = ? AND kind = ? AND epoch = ? "
            "ORDER BY seq", (source_id, kind, epoch))]

    def frames(self, conn: sqlite3.Connection, source_id: int, kind: str, epoch: int) -> Iterator[tuple[dict, bytes]]:
        """The frames of one epoch of a stream or rows file, in order, decompressed and checked: (frame row,
        bytes). :class:`Damaged` at the first that is not what the bank recorded."""
        rows = self.frame_rows(conn, source_id, kind, epoch)
        if not rows:
            return
        try:
            stream = open(self.dir / kind / f"{source_id}-{epoch}.zst", "rb")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise Damaged(frame_part(kind, source_id, epoch, rows[0]["seq"]), f"the file is gone ({exc.strerror})") \
                from exc
        with stream:
            for row in rows:
                stream.seek(row["offset"])
                yield row, check_frame(stream.read(row["length"]), row, frame_part(kind, source_id, epoch, row["seq"]))

    def blob(self, sub: str, digest: str, whole: bool = False) -> bytes:
        """A blob's content (``whole``: its bytes as they are), checked: :class:`Damaged` if it is not there
        or not the content its name is the digest of."""
        try:
            data = self.blob_path(sub, digest).read_bytes()
        except OSError as exc:
            raise Damaged(blob_part(sub, digest), f"gone ({exc.strerror})") from exc
        return check_blob(data, sub, digest, whole)

    def text(self, digest: str) -> str | None:
        """A whole event text kept for the bank's clipped copy, or None if the archive lacks it (or holds it
        damaged: never a text other than the one the bank's copy was clipped from)."""
        try:
            return self.blob("texts", digest).decode("utf-8", "surrogatepass")
        except Damaged as exc:
            if self.blob_path("texts", digest).exists():
                from harvester.log import get_logger

                get_logger("harvester.archive").warning("archived whole text damaged", part=exc.part,
                                                        detail=exc.detail)
            return None

    def size_bytes(self) -> int:
        total = 0
        for root, _, files in os.walk(self.dir):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.stat(os.path.join(root, name)).st_size
        return total

    # -- keeping it consistent with the bank --------------------------------------------------
    def repair(self, conn: sqlite3.Connection) -> ArchiveReport:
        """Cut every stream and rows file back to what the bank committed; report what is missing."""
        report = ArchiveReport()
        ends = self._ends(conn)
        for kind in ("streams", "rows"):
            for path in (self.dir / kind).glob("*.zst"):
                try:
                    source, epoch = (int(x) for x in path.stem.split("-"))
                except ValueError:
                    continue
                end = ends.get((kind, source, epoch), 0)
                size = path.stat().st_size
                if size > end:
                    with open(path, "r+b") as f:
                        f.truncate(end)
                    report.truncated.append((str(path), size - end))
        report.missing = self.missing(conn, ends)
        return report

    def missing(self, conn: sqlite3.Connection,
                ends: dict[tuple[str, int, int], int] | None = None) -> list[tuple[int, int, int]]:
        """Frames the bank records that the files lack (source id, epoch, frames): bytes lost after a
        commit (a power failure before the OS wrote them, a file deleted by hand)."""
        lost = []
        for (kind, source, epoch), end in (ends if ends is not None else self._ends(conn)).items():
            path = self.dir / kind / f"{source}-{epoch}.zst"
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            if size < end:
                frames = conn.execute("SELECT count(*) FROM archive_frames WHERE kind = ? AND source_id = ? AND "
                                      "epoch = ? AND offset + length > ?", (kind, source, epoch, size)).fetchone()[0]
                lost.append((source, epoch, frames))
        return lost

    @staticmethod
    def _ends(conn: sqlite3.Connection) -> dict[tuple[str, int, int], int]:
        return {(kind, source, epoch): end for kind, source, epoch, end in conn.execute(
            "SELECT kind, source_id, epoch, max(offset + length) FROM archive_frames GROUP BY kind, source_id, epoch")}
