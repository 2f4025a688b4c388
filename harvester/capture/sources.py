"""Sources: finding session files under each harness's roots, and reading their new records.

Readers hand parsers *complete* records only. For JSONL that means whole lines: a last line without
its newline is still being written (or was torn by a crash) and waits for the next read. The
reader also decides, from the cursor, whether a file can be continued from its offset or must be
re-read from the start (replaced, shrunk, or rewritten in place); a re-read is harmless because the
bank ignores events it already holds.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, BinaryIO

from harvester.capture.contract import Cursor

# Where a harness's sources are: beside the Harness interface, so that status says it without importing this module.
from harvester.parsers.base import Harness, Record, SourceSpec, existing_roots, harness_roots  # noqa: F401

if TYPE_CHECKING:  # the model and hashlib (OpenSSL's) are for reading a source: a rescan with nothing new needs neither
    from harvester.model import Problem

# Records handed to a parser (and committed) per transaction, roughly. A chunk costs ~15-20x its bytes while
# it is parsed, redacted and committed: one 131 MB session peaked at 131 MB with 8 MB chunks (bench_memory).
CHUNK_BYTES = 2 * 1024 * 1024
MAX_LINE_BYTES = 32 * 1024 * 1024  # a longer line is skipped as oversize (counted, not parsed)
FINGERPRINT_BYTES = 4096  # head and tail fingerprints of the consumed part of a file


@dataclass(frozen=True, slots=True)
class Found:
    """A session file discovered under a harness root."""

    path: Path
    root: Path
    spec: SourceSpec


def discover(harness: Harness, roots: list[Path],
             unlisted: list[tuple[Path, str]] | None = None) -> Iterator[Found]:
    """Every source file of a harness under the given roots, each path once. A directory that cannot
    be listed is put in ``unlisted`` with the reason (the scan records it), never skipped in silence.
    Entries that are not regular files (a FIFO named like a session) are found too: reading refuses
    them and says so."""
    seen: set[str] = set()
    for root in roots:
        for spec in harness.sources:
            for path in sorted(glob_files(root, spec.pattern, unlisted)):
                key = str(path)
                if key in seen or ignored(spec, path.name):
                    continue
                if shadowed(spec, path):
                    continue
                seen.add(key)
                yield Found(path, root, spec)


def ignored(spec: SourceSpec, name: str) -> bool:
    """Whether a file the pattern matches is not a session (``SourceSpec.ignore``: names, or name globs)."""
    return name in spec.ignore or any("*" in p and fnmatch.fnmatchcase(name, p) for p in spec.ignore)


def shadowed(spec: SourceSpec, path: Path) -> bool:
    """Whether a file that makes this one redundant exists (``SourceSpec.shadowed_by``): one path or
    several, each of which may hold ``*`` segments (any directory there: Cursor's ``chats/*/<id>``)."""
    if spec.shadowed_by is None:
        return False
    found = spec.shadowed_by(path)
    return any(_exists(PurePath(p)) for p in ((found,) if isinstance(found, PurePath | str) else found))


def _exists(path: PurePath) -> bool:
    parts = path.parts
    if "*" not in parts:
        return os.path.exists(path)
    at = parts.index("*")
    rest = parts[at + 1:]
    try:
        with os.scandir(PurePath(*parts[:at])) as entries:
            return any(_exists(PurePath(entry.path, *rest)) for entry in entries if entry.is_dir())
    except OSError:  # no such directory, or one that cannot be listed: nothing shadows the file
        return False


def glob_files(root: Path, pattern: str, unlisted: list[tuple[Path, str]] | None = None) -> list[Path]:
    """What ``root.glob(pattern)`` finds that is not a directory (``*`` and ``**`` segments; ``**``
    follows links to directories once each), but a directory it cannot list is reported in ``unlisted``
    instead of being passed over without a word."""
    out: list[Path] = []
    _walk(root, tuple(pattern.split("/")), out, unlisted, set())
    return out


def _walk(directory: Path, parts: tuple[str, ...], out: list[Path], unlisted: list[tuple[Path, str]] | None,
          visiting: set[tuple[int, int]]) -> None:
    head, rest = parts[0], parts[1:]
    if head == "**":
        if rest:
            _walk(directory, rest, out, unlisted, visiting)
        for sub in _entries(directory, unlisted, dirs=True):
            key = _identity(sub)
            if key is not None and key not in visiting:  # a link back up would loop for ever
                visiting.add(key)
                _walk(sub, parts, out, unlisted, visiting)
                visiting.discard(key)
        return
    if rest and not _WILDCARD.search(head):  # a fixed name: no need to list a large directory
        sub = directory / head
        if sub.is_dir():
            _walk(sub, rest, out, unlisted, visiting)
        return
    for entry in _entries(directory, unlisted, dirs=bool(rest)):
        if fnmatch.fnmatchcase(entry.name, head):
            if rest:
                _walk(entry, rest, out, unlisted, visiting)
            else:
                out.append(entry)


_WILDCARD = re.compile(r"[*?\[]")


def _entries(directory: Path, unlisted: list[tuple[Path, str]] | None, dirs: bool) -> list[Path]:
    """The subdirectories (``dirs``) or the other entries of a directory, links followed; broken links
    are left out (nothing is behind them)."""
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except FileNotFoundError:
        return []
    except OSError as exc:
        if unlisted is not None:
            unlisted.append((directory, exc.strerror or str(exc)))
        return []
    out = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
            if not is_dir and not dirs and not entry.is_file():
                os.stat(entry.path)  # a FIFO, a socket, a device: found (reading refuses it); a broken link: not
        except OSError:
            continue
        if is_dir == dirs:
            out.append(Path(entry.path))
    return out


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def match(harness: Harness, root: Path, path: Path) -> Found | None:
    """The source a file event's path is, if it is one (same rules as :func:`discover`)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    for spec in harness.sources:
        if not ignored(spec, path.name) and _glob_match(rel.parts, tuple(spec.pattern.split("/"))):
            if shadowed(spec, path):
                continue  # as a scan does: a later spec may read the file where this one does not (Hermes)
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


class NotRegular(OSError):
    """A path that is not a regular file (a FIFO, a socket, a device): never opened for reading, as
    opening a FIFO blocks until someone writes to it."""


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def open_regular(path: str | PurePath) -> BinaryIO:
    """Open a file for reading only if it is a regular file. The open itself cannot block (O_NONBLOCK:
    a FIFO that appeared under the path is refused, not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "not a regular file")
            raise NotRegular(0, f"{kind}, not a regular file: not read", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | PurePath) -> bytes:
    with open_regular(path) as stream:
        return stream.read()


def fingerprint(data: bytes) -> str:
    import hashlib

    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(slots=True)
class Lines:
    """A run of complete lines read past the cursor, and where the cursor goes once they are committed."""

    records: list[Record]
    end_offset: int
    end_line: int
    problems: list[Problem] = field(default_factory=list)
    waiting: int = 0  # bytes of an unterminated last line left for a later read


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


def plan_jsonl(cursor: Cursor | None, st: os.stat_result | Stat, stream: BinaryIO, lines: bool = True) -> Plan:
    """Continue from the cursor unless the file is not the one the cursor describes any more.
    ``lines``: offsets are bytes of text (not of compressed frames)."""
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
    offset = cursor.offset
    if lines:
        stream.seek(offset - 1)
        around = stream.read(2)
        if around[:1] != b"\n" and around[1:] == b"\n":
            offset += 1  # a last line taken whole before its newline came (read_lines take_tail): its newline
    return Plan(offset, cursor.line, False)


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
               max_line: int = MAX_LINE_BYTES, take_tail: Callable[[bytes], bool] | None = None) -> Iterator[Lines]:
    """Yield chunks of complete lines from ``offset`` (already positioned) to the last newline.

    A line longer than ``max_line`` is not kept in memory: it is skipped up to its newline and
    reported as oversize. A last line without a newline is left for a later read (a final ``Lines``
    says how many bytes wait), unless ``take_tail`` accepts it as a whole record.
    """
    from harvester.model import Problem

    pending = b""  # bytes after the last newline seen, not yet consumed
    consumed = offset  # offset just past the last newline handed out
    skipping_from: int | None = None  # line number of an oversize line being skipped
    skipped = 0
    while True:
        data = stream.read(chunk_bytes)
        if not data:
            if pending and skipping_from is None:
                if take_tail is not None and pending.strip() and take_tail(pending):
                    line += 1
                    yield Lines([Record(line, pending[:-1] if pending.endswith(b"\r") else pending)],
                                consumed + len(pending), line)
                else:
                    yield Lines([], consumed, line, waiting=len(pending))
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
