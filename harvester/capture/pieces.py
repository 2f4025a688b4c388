"""What a chunk adds to the raw archive (:class:`Piece`), prepared where the chunk is read: compressed and digested
on the read's path, written when the chunk commits, inside the bank's transaction (harvester/capture/archive/).
What a chunk drops before that (an excluded or forgotten session's) never reaches disk; a whole file kept as it is
(:func:`file_piece`, a ``.jsonl.zst``) is the one exception: its blob is written at once, content-addressed, and
a chunk that drops it discards it (an unreferenced blob is harmless, and collected by retention).

Here, beside reading rather than in the archive's package: reading makes pieces, and the archive, which reads
sources again to tell whose records are whose (archive/attribute.py), imports reading.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# zstandard and hashlib (OpenSSL's) are imported where they are used: a command that only reads the bank opens
# the archive, and most of them never touch it.

LEVEL = 3  # zstd's default: documents, rows and whole texts, kept at every version read
# Appended bytes are compressed as they are read, on the scan's path: level 1 is a quarter faster than 3,
# for an archive 1.1x the size (bench/bench_scan.py: 18 % of the sources' size, against 16.5 %).
STREAM_LEVEL = 1
PieceKind = Literal["stream", "doc", "rows", "text"]


@dataclass(frozen=True, slots=True)
class Piece:
    """What one chunk adds to the archive, prepared (compressed) where it was read and written when the
    chunk commits: what a chunk drops before that (an excluded or forgotten session's) never reaches disk."""

    kind: PieceKind
    data: bytes = b""  # stream/doc/text: zstd-compressed content (stream: source bytes [src_start, src_end))
    # sha256 of the uncompressed content: doc/text, the blob's name; stream, the frame's digest (the source's
    # bytes, unless a forgotten session's records were blanked out of them)
    digest: str = ""
    src_start: int = 0
    src_end: int = 0
    restart: bool = False  # stream/rows: the source is read again from its start, a new epoch
    part: int = 0  # doc: 0 the document, 1.. its related documents in the order read, -1 its sidecar
    records: tuple[bytes, ...] = ()  # rows: each row's record as read (deduplicated at commit)
    whole: bool = False  # doc: the blob is the source file's bytes as they are (a .jsonl.zst is zstd already)
    written: int = 0  # doc: a blob too large to hold in memory, already written (its size); see file_piece
    session: str = ""  # text: the session whose event it is


def compress(raw: bytes, level: int = LEVEL) -> bytes:
    """One zstd frame with its content checksum (4 bytes): damage is found by decompressing it alone."""
    import zstandard

    return zstandard.ZstdCompressor(level=level, write_checksum=True).compress(raw)


def digest_of(raw: bytes) -> str:
    """sha256 of uncompressed bytes: a frame's digest, a blob's name."""
    import hashlib

    return hashlib.sha256(raw).hexdigest()


def stream_piece(raw: bytes, start: int, end: int, restart: bool) -> Piece:
    # Digested here, on the compressing thread (hashlib lets go of the GIL too).
    return Piece("stream", compress(raw, STREAM_LEVEL), digest=digest_of(raw), src_start=start, src_end=end,
                 restart=restart)


def rows_piece(records: list[bytes], restart: bool) -> Piece:
    return Piece("rows", restart=restart, records=tuple(records))


def doc_piece(raw: bytes, part: int) -> Piece:
    """A document version (a JSON file rewritten whole, a related document, a sidecar)."""
    return Piece("doc", compress(raw), digest=digest_of(raw), part=part)


def file_piece(directory: str | Path, path: str | Path) -> Piece:
    """A whole source file kept as it is (a ``.jsonl.zst``: zstd already), copied in blocks: memory stays
    small whatever the file's size. Its blob is written now; a chunk that drops it calls
    :meth:`Archive.discard`."""
    import hashlib

    digest = hashlib.sha256()
    old = os.umask(0o077)
    try:
        (Path(directory) / "blobs").mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=Path(directory) / "blobs", prefix=".tmp-")
    finally:
        os.umask(old)
    size = 0
    try:
        with os.fdopen(fd, "wb") as out, open(path, "rb") as source:
            while block := source.read(1 << 20):
                digest.update(block)
                out.write(block)
                size += len(block)
        target = blob_path(directory, "blobs", digest.hexdigest())
        target.parent.mkdir(exist_ok=True, mode=0o700)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return Piece("doc", digest=digest.hexdigest(), whole=True, written=size)


def text_piece(text: str, session: str) -> Piece:
    """A whole event text (redacted), for ``show --full``."""
    raw = text.encode("utf-8", "surrogatepass")
    return Piece("text", compress(raw), digest=digest_of(raw), session=session)


def blob_path(directory: str | Path, sub: str, digest: str) -> Path:
    return Path(directory) / sub / digest[:2] / f"{digest}.zst"
