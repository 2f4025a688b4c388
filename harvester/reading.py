"""Reading a source: from its cursor to complete, parsed, redacted chunks, ready to commit.

Nothing here touches the bank, so it can run in another process (``scan`` reads in a worker while
the main process commits; see :mod:`harvester.ingest`). Everything it returns is plain picklable
data. The cursor only moves when the bank commits a chunk together with its events.
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote

import orjson
import structlog
import zstandard

from harvester import redact as redaction
from harvester.bank import Cursor
from harvester.model import Batch, Event, Problem
from harvester.sources import (
    Found,
    Lines,
    Plan,
    Stat,
    fingerprints,
    open_zst,
    plan_jsonl,
    read_frames,
    read_lines,
    source_stat,
    unchanged,
)
from parsers import HARNESSES
from parsers.base import Record, SourceRef

log = structlog.get_logger("harvester.reading")

Prepare = Callable[[list[Event]], list[tuple]]


@dataclass(slots=True)
class Chunk:
    """One transaction's worth: parsed, redacted records and the cursor once they are committed."""

    batch: Batch
    cursor: Cursor
    redactions: Counter[str]
    prepared: Any = None  # the bank's row values for batch.events (Bank.prepare_rows)
    is_new_source: bool = False


@dataclass(slots=True)
class Outcome:
    """How reading a source ended, beside its chunks."""

    path: str
    outcome: str = "unchanged"  # new | read | restarted | unchanged | missing | unreadable | failed
    problems: list[Problem] = field(default_factory=list)  # problems not tied to a chunk
    status: tuple[str, str | None] | None = None  # a new source status to record (status, error)
    bytes_read: int = 0
    restart_reason: str = ""


def read_source(found: Found, harness_name: str, cursor: Cursor | None, outcome: Outcome,
                prepare: Prepare | None = None) -> Iterator[Chunk]:
    """Yield the chunks of ``found`` past ``cursor``; ``outcome`` says how it went."""
    harness = HARNESSES[harness_name]
    path = str(found.path)
    fmt = found.spec.format
    try:
        st = source_stat(path, fmt, found.spec.related)
    except FileNotFoundError:
        _vanished(outcome, cursor)
        return
    except OSError as exc:
        _unreadable(outcome, exc)
        return
    if cursor is not None and unchanged(cursor, st):
        return
    ref = SourceRef(found.path, found.root, found.spec.variant, _read_sidecar(found), st.st_mtime_ns)
    try:
        if fmt in ("jsonl", "lines", "zstd-frames"):
            with open(path, "rb") as stream:
                st = os.fstat(stream.fileno())
                plan = plan_jsonl(cursor, st, stream)  # offsets of a frame chain are compressed bytes
                stream.seek(plan.offset)
                yield from _consume(harness, ref, cursor, st, plan, stream, True, outcome, prepare,
                                    read_frames if fmt == "zstd-frames" else read_lines)
        elif fmt == "jsonl.zst":
            # Never appended in place (Codex decompresses it back to .jsonl to resume): any change
            # means reading it again from the start, which uids make harmless.
            with open_zst(path) as stream:
                yield from _consume(harness, ref, cursor, st, Plan(0, 0, cursor is not None), stream, False,
                                    outcome, prepare)
        elif fmt == "sqlite":
            yield from _database(harness, found, ref, cursor, st, outcome, prepare)
        else:
            yield from _document(harness, found, ref, cursor, outcome, prepare)
    except FileNotFoundError:
        _vanished(outcome, cursor)
    except zstandard.ZstdError as exc:
        outcome.outcome = "unreadable"
        outcome.problems.append(Problem("malformed", (cursor.line if cursor else 0) + 1,
                                        f"zstd stream cut short or corrupt: {exc}"))
    except OSError as exc:
        _unreadable(outcome, exc)


def _consume(harness: Any, ref: SourceRef, cursor: Cursor | None, st: os.stat_result | Stat, plan: Plan,
             stream: BinaryIO, seekable: bool, outcome: Outcome, prepare: Prepare | None,
             lines_of: Callable[[BinaryIO, int, int], Iterator[Lines]] = read_lines) -> Iterator[Chunk]:
    path = str(ref.path)
    outcome.restart_reason = plan.reason if plan.restart else ""
    fmt = "zstd-frames" if lines_of is read_frames else ("jsonl" if seekable else "jsonl.zst")
    new = _new_cursor(harness.name, path, fmt, cursor, st)
    new.offset, new.line = plan.offset, plan.line
    new.state = {} if plan.restart or cursor is None else dict(cursor.state)
    is_new = cursor is None
    outcome.outcome = "new" if is_new else ("restarted" if plan.restart else "read")
    pieces = lines_of(stream, plan.offset, plan.line)
    piece = next(pieces, None)
    committed_any = False
    while piece is not None:
        following = next(pieces, None)  # look ahead: only the last chunk may record the stat
        outcome.bytes_read += piece.end_offset - new.offset
        batch = _parse(harness, ref, piece.records, new.state)
        if batch is None:
            _parser_failed(outcome, cursor, piece.records[0].line if piece.records else new.line + 1)
            return
        batch.problems[:0] = piece.problems
        new.offset, new.line, new.state = piece.end_offset, piece.end_line, batch.state
        if seekable:
            position = stream.tell()
            new.head_len, new.head_hash, new.tail_hash = fingerprints(stream, new.offset)
            stream.seek(position)
        # A cursor committed mid-file must never look "unchanged" to the next stat, or the rest of
        # the file would wait for the next append: only the last chunk records the stat.
        new.size, new.mtime_ns = (st.st_size, st.st_mtime_ns) if following is None else (-1, -1)
        yield _chunk(batch, new, is_new and not committed_any, prepare)
        committed_any = True
        new.generation += 1  # what the bank holds once that chunk is committed
        piece = following
    if not committed_any:
        # Nothing complete to read (an empty file, or only a torn line): still remember the file
        # and its stat, so status counts it and the next check costs a stat. The fingerprints must
        # still describe the bytes before the offset, or the next read would take the file for a
        # rewritten one and read it all again.
        if new.offset == 0:
            new.head_len, new.head_hash, new.tail_hash, new.state = 0, None, None, {}
        elif seekable:
            new.head_len, new.head_hash, new.tail_hash = fingerprints(stream, new.offset)
        new.size, new.mtime_ns = st.st_size, st.st_mtime_ns
        yield _chunk(Batch(state=new.state), new, is_new, prepare)


def _document(harness: Any, found: Found, ref: SourceRef, cursor: Cursor | None, outcome: Outcome,
              prepare: Prepare | None) -> Iterator[Chunk]:
    """A whole-document source (JSON rewritten in place), with the documents related to it: read it
    all; uids make re-reads harmless."""
    path = str(ref.path)
    # Taken before reading, and over the related documents too: a change after this stat shows as a
    # difference at the next check, never as something already seen.
    st = source_stat(path, "json", found.spec.related)
    with open(path, "rb") as stream:
        data = stream.read()
    records = [Record(1, data)] if data.strip() else []
    for other in found.spec.related(found.path) if found.spec.related else ():
        try:
            records.append(Record(len(records) + 1, Path(other).read_bytes()))
        except FileNotFoundError:
            continue  # deleted between listing and reading: the next change brings it
    outcome.bytes_read += sum(len(r.raw) for r in records)
    outcome.outcome = "new" if cursor is None else "read"
    new = _new_cursor(harness.name, path, "json", cursor, st)
    new.offset, new.line = len(data), len(records)
    batch = _parse(harness, ref, records, {})
    if batch is None:
        _parser_failed(outcome, cursor, 1)
        return
    yield _chunk(batch, new, cursor is None, prepare)


def _database(harness: Any, found: Found, ref: SourceRef, cursor: Cursor | None, st: Stat, outcome: Outcome,
              prepare: Prepare | None) -> Iterator[Chunk]:
    """A SQLite store the agent keeps open. Opened read-only (never a write, never a lock held past
    the read), every query in one read transaction: one consistent snapshot of a live database.
    The cursor keeps each query's watermark beside the parser's state."""
    path = str(ref.path)
    # A database replaced by another file (restored, recreated) is read from the start: its rows
    # need not be above the old file's watermarks.
    replaced = cursor is not None and (cursor.device, cursor.inode) != (st.st_dev, st.st_ino)
    state = cursor.state if cursor is not None and not replaced else {}
    marks: dict[str, Any] = dict(state.get("watermarks", {}))
    records: list[Record] = []
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error as exc:
        raise OSError(f"cannot open {path} read-only: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN")
        for query in found.spec.queries:
            since = marks.get(query.name, 0)
            try:
                rows = conn.execute(query.sql, {"since": since})
            except sqlite3.OperationalError as exc:
                if query.optional and "no such table" in str(exc):
                    continue
                raise
            for row in rows:
                data = dict(row)
                records.append(Record(len(records) + 1, orjson.dumps({"table": query.name, "row": data},
                                                                     default=_bytes_as_text)))
                mark = data.get(query.watermark)
                if mark is not None and (query.name not in marks or mark > marks[query.name]):
                    marks[query.name] = mark
        conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return  # the agent holds a lock right now: the next poll reads it
        outcome.outcome = "failed"
        outcome.problems.append(Problem("malformed", 0, f"unexpected database shape: {exc}"))
        return
    finally:
        conn.close()
    outcome.bytes_read += sum(len(r.raw) for r in records)
    outcome.outcome = "new" if cursor is None else "read"
    new = _new_cursor(harness.name, path, "sqlite", cursor, st)
    new.offset, new.line = 0, (cursor.line if cursor else 0) + len(records)
    batch = _parse(harness, ref, records, dict(state.get("parser", {})))
    if batch is None:
        _parser_failed(outcome, cursor, 1)
        return
    new.state = {"parser": batch.state, "watermarks": marks}
    yield _chunk(batch, new, cursor is None, prepare)


def _bytes_as_text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError


def _chunk(batch: Batch, cursor: Cursor, is_new: bool, prepare: Prepare | None) -> Chunk:
    redactions = redact_batch(batch)
    snapshot = replace(cursor, state=dict(cursor.state))  # the caller goes on advancing its own
    return Chunk(batch, snapshot, redactions, prepare(batch.events) if prepare else None, is_new)


def _parse(harness: Any, ref: SourceRef, records: list[Record], state: dict[str, Any]) -> Batch | None:
    try:
        return harness.parse(ref, records, dict(state))
    except Exception:  # a parser bug must not stop the scan, nor consume the records it choked on
        log.exception("parser failed", harness=harness.name, path=str(ref.path))
        return None


def _new_cursor(harness: str, path: str, fmt: str, cursor: Cursor | None, st: os.stat_result | Stat) -> Cursor:
    generation = cursor.generation if cursor is not None else 0
    return Cursor(harness, path, fmt, device=st.st_dev, inode=st.st_ino, size=st.st_size,
                  mtime_ns=st.st_mtime_ns, generation=generation)


def _vanished(outcome: Outcome, cursor: Cursor | None) -> None:
    outcome.outcome = "missing"
    outcome.problems.append(Problem("unreadable", (cursor.line if cursor else 0) + 1, "deleted while reading"))
    if cursor is not None:
        outcome.status = ("missing", "deleted")


def _unreadable(outcome: Outcome, exc: OSError) -> None:
    detail = f"{type(exc).__name__}: {exc.strerror or exc}"
    outcome.outcome = "unreadable"
    outcome.problems.append(Problem("unreadable", 0, detail))
    outcome.status = ("unreadable", detail)


def _parser_failed(outcome: Outcome, cursor: Cursor | None, line: int) -> None:
    detail = "parser error (see log); records kept unread for a fixed parser"
    outcome.outcome = "failed"
    outcome.problems.append(Problem("malformed", line, detail))
    if cursor is not None:
        outcome.status = ("failed", detail)


def _read_sidecar(found: Found) -> bytes | None:
    if found.spec.sidecar is None:
        return None
    try:
        return Path(found.spec.sidecar(found.path)).read_bytes()
    except OSError:
        return None


def redact_batch(batch: Batch) -> Counter[str]:
    """Redact everything bound for the bank (texts, tool input, titles, meta); count per session."""
    redactions: Counter[str] = Counter()
    for event in batch.events:
        n = 0
        if event.text:
            event.text, counts = redaction.redact(event.text)
            n += sum(counts.values())
        if event.tool_input is not None:
            event.tool_input, counts = redaction.redact_value(event.tool_input)
            n += sum(counts.values())
        if event.meta:
            event.meta, counts = redaction.redact_value(event.meta)
            n += sum(counts.values())
        if n:
            redactions[event.session] += n
    for patch in batch.sessions.values():
        if patch.title:
            patch.title, counts = redaction.redact(patch.title)
            redactions[patch.native_id] += sum(counts.values())
        if patch.meta:
            patch.meta, counts = redaction.redact_value(patch.meta)
            redactions[patch.native_id] += sum(counts.values())
    return redactions


def read_all(found: Found, harness_name: str, cursor: Cursor | None,
             prepare: Prepare | None) -> tuple[list[Chunk], Outcome]:
    """:func:`read_source` as one picklable result (what a worker process sends back)."""
    outcome = Outcome(str(found.path))
    chunks = list(read_source(found, harness_name, cursor, outcome, prepare))
    return chunks, outcome
