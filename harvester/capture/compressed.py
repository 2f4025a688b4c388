"""zstd-compressed sources: a whole compressed stream (Codex's cold ``.jsonl.zst`` rollouts, OpenClaw's
cold archives) and a chain of frames appended one by one (DeepSeek Harness's ``session.jsonl.zstd``).

Two things python-zstandard does not do for us, and a reader of untrusted files must:

- **Say when a stream is cut short.** Its stream reader stops at the end of the input without a word
  when the last frame is incomplete; half a rollout would import as if it were all of it.
  :func:`cut_at` walks the frames by their own headers (RFC 8878) and says where the stream stops
  being whole.
- **Bound what decompressing costs.** A few KB can decompress to many GB. Every read counts the
  decompressed bytes and stops at a cap (:class:`TooLarge`), which the reader records as ``oversize``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import BinaryIO

import zstandard

from harvester.capture.sources import CHUNK_BYTES, Lines, open_regular
from harvester.config.limits import MAX_DECOMPRESSED_BYTES
from harvester.model import Problem
from harvester.parsers.base import Record


class TooLarge(Exception):
    """A compressed source decompressed past the cap."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"decompresses to more than {cap} bytes")
        self.cap = cap


class CappedReader:
    """A decompressed stream that raises :class:`TooLarge` once it has given more than ``cap`` bytes."""

    def __init__(self, reader: BinaryIO, cap: int) -> None:
        self.reader = reader
        self.cap = cap
        self.total = 0

    def read(self, size: int = -1) -> bytes:
        data = self.reader.read(size)
        self.total += len(data)
        if self.total > self.cap:
            raise TooLarge(self.cap)
        return data

    def close(self) -> None:
        self.reader.close()

    def __enter__(self) -> CappedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_zst(path: str | PurePath, cap: int = MAX_DECOMPRESSED_BYTES) -> CappedReader:
    """A decompressed read stream over a .zst file (all frames, as Codex may append frames)."""
    raw = open_regular(path)
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
    return CappedReader(reader, cap)  # type: ignore[arg-type]


Read = Callable[[int, int], bytes]  # (offset, length) -> bytes, shorter at the end of the input


def frame_length(read: Read, size: int, start: int) -> int | None:
    """Compressed length of the zstd frame at ``start`` (RFC 8878), or None when it is cut short.
    Garbage that is no frame at all counts as one frame running to the end (a corrupt stream)."""
    if size - start < 8:
        return None
    head = read(start, 18)
    magic = int.from_bytes(head[:4], "little")
    if 0x184D2A50 <= magic <= 0x184D2A5F:  # a skippable frame: size in its header
        length = 8 + int.from_bytes(head[4:8], "little")
        return length if start + length <= size else None
    try:
        position = start + zstandard.frame_header_size(head)
        checksum = zstandard.get_frame_parameters(head).has_checksum
    except zstandard.ZstdError:
        return None if size - start < 18 else size - start
    while True:
        if position + 3 > size:
            return None
        header = int.from_bytes(read(position, 3), "little")
        last, kind, block = header & 1, (header >> 1) & 3, header >> 3
        position += 3 + (1 if kind == 1 else block)  # an RLE block stores one byte
        if position > size:
            return None
        if last:
            break
    position += 4 if checksum else 0
    return position - start if position <= size else None


def cut_at(path: str | PurePath) -> int | None:
    """The compressed offset where the file stops being a chain of whole frames, or None when it is
    whole. Reads only frame and block headers (a few bytes per 128 KB block)."""
    with open_regular(path) as stream:
        size = os.fstat(stream.fileno()).st_size

        def read(offset: int, length: int) -> bytes:
            stream.seek(offset)
            return stream.read(length)

        position = 0
        while position < size:
            length = frame_length(read, size, position)
            if length is None:
                return position
            position += length
    return None


def _decompress_frame(frame: bytes, cap: int) -> bytes:
    """One whole frame, decompressed in pieces so that a bomb stops at the cap instead of filling memory."""
    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(frame, read_across_frames=False) as reader:
        while piece := reader.read(CHUNK_BYTES):
            out += piece
            if len(out) > cap:
                raise TooLarge(cap)
    return bytes(out)


def read_frames(stream: BinaryIO, offset: int, line: int, chunk_bytes: int = CHUNK_BYTES,
                cap: int = MAX_DECOMPRESSED_BYTES) -> Iterator[Lines]:
    """Complete lines from a chain of zstd frames appended one after another (DeepSeek Harness),
    from the compressed ``offset`` (already positioned) on. Offsets are compressed bytes: a cursor
    moves frame by frame. A last frame not yet complete (still being written, or torn by a crash)
    waits for a later read, like a last line without its newline; a complete frame that does not
    decompress is corrupt: counted and skipped. Linear in the file: each frame is located by its
    own block headers and decompressed from an exact slice. What one read decompresses is capped."""
    # One frame in memory at a time (not the whole file): located by its headers, read by its offsets.
    base = stream.tell()
    length_read = stream.seek(0, os.SEEK_END) - base
    position = 0
    records: list[Record] = []
    problems: list[Problem] = []
    size = 0
    total = 0
    pending = b""  # a frame that ends mid-line leaves its tail here, for the next frame
    # The cursor can only stand after a frame that ends on a line end: what is handed out stops there.
    committed, safe, safe_line = offset, 0, line

    def read(at: int, length: int) -> bytes:
        stream.seek(base + at)
        return stream.read(max(0, min(length, length_read - at)))

    while position < length_read:
        length = frame_length(read, length_read, position)
        if length is None:
            break  # not complete yet
        frame = read(position, length)
        position += length
        try:
            text = pending + _decompress_frame(frame, cap - total)
        except zstandard.ZstdError as exc:
            problems.append(Problem("malformed", line + 1,
                                    f"corrupt zstd frame at byte {offset + position - length}: {exc}"))
            text = b""  # skipped, with whatever partial line it would have finished
        total += len(text) - len(pending)
        cut = text.rfind(b"\n")
        pending = text[cut + 1:]
        for raw in text[:cut].split(b"\n") if cut >= 0 else ():
            line += 1
            if raw.strip():
                records.append(Record(line, raw[:-1] if raw.endswith(b"\r") else raw))
                size += len(raw)
        if not pending:
            committed, safe, safe_line = offset + position, len(records), line
            if size >= chunk_bytes:
                yield Lines(records, committed, line, problems)
                records, problems, size, safe = [], [], 0, 0
    if safe or problems or committed != offset:
        yield Lines(records[:safe], committed, safe_line, problems)
