"""Sources: finding session files under each harness's roots, and reading their new records.

Readers hand parsers *complete* records only. For JSONL that means whole lines: a last line without
its newline is still being written (or was torn by a crash) and waits for the next read. The
reader also decides, from the cursor, whether a file can be continued from its offset or must be
re-read from the start (replaced, shrunk, or rewritten in place); a re-read is harmless because the
bank ignores events it already holds.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import BinaryIO

import zstandard

from harvester.bank import Cursor
from harvester.model import Problem
from parsers.base import Harness, Record, SourceSpec

CHUNK_BYTES = 8 * 1024 * 1024  # records handed to a parser (and committed) per transaction, roughly
MAX_LINE_BYTES = 32 * 1024 * 1024  # a longer line is skipped as oversize (counted, not parsed)
FINGERPRINT_BYTES = 4096  # head and tail fingerprints of the consumed part of a file


@dataclass(frozen=True, slots=True)
class Found:
    """A session file discovered under a harness root."""

    path: Path
    root: Path
    spec: SourceSpec


def existing_roots(harness: Harness, env: Mapping[str, str], home: Path,
                   extra: tuple[Path, ...] = ()) -> list[Path]:
    seen: set[str] = set()
    out = []
    for root in [*harness.roots(env, home), *extra]:
        key = os.path.realpath(root)
        if key not in seen and os.path.isdir(root):
            seen.add(key)
            out.append(Path(root))
    return out


def discover(harness: Harness, roots: list[Path]) -> Iterator[Found]:
    """Every source file of a harness under the given roots, each path once."""
    seen: set[str] = set()
    for root in roots:
        for spec in harness.sources:
            for path in sorted(root.glob(spec.pattern)):
                key = str(path)
                if key in seen or path.name in spec.ignore or not path.is_file():
                    continue
                if spec.shadowed_by is not None and os.path.exists(spec.shadowed_by(path)):
                    continue
                seen.add(key)
                yield Found(path, root, spec)


def match(harness: Harness, root: Path, path: Path) -> Found | None:
    """The source a file event's path is, if it is one (same rules as :func:`discover`)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    for spec in harness.sources:
        if path.name not in spec.ignore and _glob_match(rel.parts, tuple(spec.pattern.split("/"))):
            if spec.shadowed_by is not None and os.path.exists(spec.shadowed_by(path)):
                return None
            return Found(path, root, spec)
    return None


def owner(harness: Harness, root: Path, path: Path) -> Found | None:
    """The source a changed sidecar or related document belongs to, when it sits beside it (Cline's
    ui_messages.json, Copilot's workspace.yaml): a change to it alone is a change to that source."""
    if root not in path.parents or not any(spec.sidecar or spec.related for spec in harness.sources):
        return None
    try:
        with os.scandir(path.parent) as entries:
            siblings = [Path(e.path) for e in entries if e.name != path.name and e.is_file()]
    except OSError:
        return None
    for sibling in siblings:
        found = match(harness, root, sibling)
        if found is None:
            continue
        spec = found.spec
        if (spec.sidecar is not None and Path(spec.sidecar(sibling)) == path) or (
                spec.related is not None and path in {Path(p) for p in spec.related(sibling)}):
            return found
    return None


def _glob_match(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_glob_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _glob_match(parts[1:], pattern[1:])


def fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(slots=True)
class Lines:
    """A run of complete lines read past the cursor, and where the cursor goes once they are committed."""

    records: list[Record]
    end_offset: int
    end_line: int
    problems: list[Problem] = field(default_factory=list)


@dataclass(slots=True)
class Plan:
    """Where to start reading a source: from the cursor, or from the start."""

    offset: int
    line: int
    restart: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Stat:
    """What change detection compares: identity, size and time of a source."""

    st_dev: int
    st_ino: int
    st_size: int
    st_mtime_ns: int


def source_stat(path: str | Path, fmt: str, related: Callable[[PurePath], list[PurePath]] | None = None) -> Stat:
    """A source's stat. A SQLite database's writes land in its -wal file first and leave the main
    file untouched until a checkpoint; a document's related documents change on their own: all count."""
    st = os.stat(path)
    size, mtime = st.st_size, st.st_mtime_ns
    others = [f"{path}-wal"] if fmt == "sqlite" else [str(p) for p in related(PurePath(path))] if related else []
    for other in others:
        try:
            extra = os.stat(other)
        except FileNotFoundError:
            continue
        size, mtime = size + extra.st_size, max(mtime, extra.st_mtime_ns)
    return Stat(st.st_dev, st.st_ino, size, mtime)


def unchanged(cursor: Cursor, st: os.stat_result | Stat) -> bool:
    return (cursor.status == "ok" and cursor.device == st.st_dev and cursor.inode == st.st_ino
            and cursor.size == st.st_size and cursor.mtime_ns == st.st_mtime_ns)


def plan_jsonl(cursor: Cursor | None, st: os.stat_result | Stat, stream: BinaryIO) -> Plan:
    """Continue from the cursor unless the file is not the one the cursor describes any more."""
    if cursor is None or cursor.offset == 0:
        return Plan(0, 0, restart=cursor is not None and cursor.offset == 0)
    if (cursor.device, cursor.inode) != (st.st_dev, st.st_ino):
        return Plan(0, 0, True, "replaced")
    if st.st_size < cursor.offset:
        return Plan(0, 0, True, "shrunk")
    stream.seek(0)
    if fingerprint(stream.read(cursor.head_len)) != cursor.head_hash:
        return Plan(0, 0, True, "head changed")
    tail_len = min(cursor.offset, FINGERPRINT_BYTES)
    stream.seek(cursor.offset - tail_len)
    if fingerprint(stream.read(tail_len)) != cursor.tail_hash:
        return Plan(0, 0, True, "rewritten")
    return Plan(cursor.offset, cursor.line, False)


def fingerprints(stream: BinaryIO, offset: int) -> tuple[int, str, str]:
    """Head length, head hash and tail hash of the first ``offset`` bytes of a seekable stream."""
    head_len = min(offset, FINGERPRINT_BYTES)
    stream.seek(0)
    head = fingerprint(stream.read(head_len))
    tail_len = min(offset, FINGERPRINT_BYTES)
    stream.seek(offset - tail_len)
    tail = fingerprint(stream.read(tail_len))
    return head_len, head, tail


def read_lines(stream: BinaryIO, offset: int, line: int, chunk_bytes: int = CHUNK_BYTES,
               max_line: int = MAX_LINE_BYTES) -> Iterator[Lines]:
    """Yield chunks of complete lines from ``offset`` (already positioned) to the last newline.

    A line longer than ``max_line`` is not kept in memory: it is skipped up to its newline and
    reported as oversize. A last line without a newline is left for a later read.
    """
    pending = b""  # bytes after the last newline seen, not yet consumed
    consumed = offset  # offset just past the last newline handed out
    skipping_from: int | None = None  # line number of an oversize line being skipped
    skipped = 0
    while True:
        data = stream.read(chunk_bytes)
        if not data:
            return
        if skipping_from is not None:
            newline = data.find(b"\n")
            if newline == -1:
                skipped += len(data)
                continue
            skipped += newline + 1
            consumed += skipped
            line += 1
            problem = Problem("oversize", skipping_from, f"line of {skipped} bytes skipped")
            skipping_from, skipped = None, 0
            data = data[newline + 1:]
            if not data:
                yield Lines([], consumed, line, [problem])
                continue
            pending = b""
            problems = [problem]
        else:
            problems = []
        buffer = pending + data if pending else data
        last = buffer.rfind(b"\n")
        if last == -1:
            if len(buffer) > max_line:
                skipping_from, skipped, pending = line + 1, len(buffer), b""
            else:
                pending = buffer
            if problems:
                yield Lines([], consumed, line, problems)
            continue
        records = []
        for raw in buffer[:last].split(b"\n"):
            line += 1
            if len(raw) > max_line:
                problems.append(Problem("oversize", line, f"line of {len(raw)} bytes skipped"))
            elif raw.strip():
                records.append(Record(line, raw[:-1] if raw.endswith(b"\r") else raw))
        consumed += last + 1
        pending = buffer[last + 1:]
        if len(pending) > max_line:
            skipping_from, skipped, pending = line + 1, len(pending), b""
        yield Lines(records, consumed, line, problems)


def read_frames(stream: BinaryIO, offset: int, line: int, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Lines]:
    """Complete lines from a chain of zstd frames appended one after another (DeepSeek Harness),
    from the compressed ``offset`` (already positioned) on. Offsets are compressed bytes: a cursor
    moves frame by frame. A last frame not yet complete (still being written, or torn by a crash)
    waits for a later read, like a last line without its newline; a complete frame that does not
    decompress is corrupt: counted and skipped. Linear in the file: each frame is located by its
    own block headers and decompressed from an exact slice."""
    data = memoryview(stream.read())
    decompressor = zstandard.ZstdDecompressor()
    position = 0
    records: list[Record] = []
    problems: list[Problem] = []
    size = 0
    pending = b""  # a frame that ends mid-line leaves its tail here, for the next frame
    # The cursor can only stand after a frame that ends on a line end: what is handed out stops there.
    committed, safe, safe_line = offset, 0, line
    while position < len(data):
        length = _frame_length(data, position)
        if length is None:
            break  # not complete yet
        frame = data[position:position + length]
        position += length
        try:
            text = pending + decompressor.decompressobj().decompress(frame)
        except zstandard.ZstdError as exc:
            problems.append(Problem("malformed", line + 1,
                                    f"corrupt zstd frame at byte {offset + position - length}: {exc}"))
            text = b""  # skipped, with whatever partial line it would have finished
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


def _frame_length(data: memoryview, start: int) -> int | None:
    """Compressed length of the zstd frame at ``start`` (RFC 8878), or None when it is cut short."""
    if len(data) - start < 8:
        return None
    magic = int.from_bytes(data[start:start + 4], "little")
    if 0x184D2A50 <= magic <= 0x184D2A5F:  # a skippable frame: size in its header
        length = 8 + int.from_bytes(data[start + 4:start + 8], "little")
        return length if start + length <= len(data) else None
    head = bytes(data[start:start + 18])
    try:
        position = start + zstandard.frame_header_size(head)
        checksum = zstandard.get_frame_parameters(head).has_checksum
    except zstandard.ZstdError:
        return None if len(data) - start < 18 else len(data) - start  # too short, or garbage: all of it
    while True:
        if position + 3 > len(data):
            return None
        header = int.from_bytes(data[position:position + 3], "little")
        last, kind, block = header & 1, (header >> 1) & 3, header >> 3
        position += 3 + (1 if kind == 1 else block)  # an RLE block stores one byte
        if position > len(data):
            return None
        if last:
            break
    position += 4 if checksum else 0
    return position - start if position <= len(data) else None


def open_zst(path: str | PurePath) -> BinaryIO:
    """A decompressed read stream over a .zst file (all frames, as Codex may append frames)."""
    raw = open(path, "rb")  # noqa: SIM115 - closed with the returned reader
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
    return reader  # type: ignore[return-value]
