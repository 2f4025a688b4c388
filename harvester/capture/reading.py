"""Reading a source: from its cursor to complete, parsed, redacted chunks, ready to commit.

Nothing here touches the bank: reading has no side effects, and everything it returns is plain data.
The cursor only moves when the bank commits a chunk together with its events (:mod:`harvester.capture.ingest`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

import orjson
import zstandard

from harvester.capture import paging
from harvester.capture.compressed import TooLarge, cut_at, open_zst, read_frames
from harvester.capture.contract import Cursor
from harvester.capture.foreign_sqlite import NotADatabase, open_readonly
from harvester.capture.pieces import Piece, doc_piece, file_piece, rows_piece, stream_piece, text_piece
from harvester.capture.recall_seal import mark_recall
from harvester.capture.sources import (
    Found,
    Lines,
    Plan,
    Stat,
    fingerprints,
    open_regular,
    plan_jsonl,
    read_lines,
    read_regular,
    source_stat,
    unchanged,
)
from harvester.capture.validate import describe, repair
from harvester.config.limits import LIMITS, ReadLimits
from harvester.log import get_logger
from harvester.model import MAX_EVENT_TEXT, Batch, Event, Problem, clip
from harvester.parsers import HARNESSES
from harvester.parsers.base import Record, SourceRef, describe_error, problem_detail

log = get_logger("harvester.reading")  # through harvester.log: see there

Prepare = Callable[[list[Event]], list[tuple]]


@dataclass(slots=True)
class Chunk:
    """One transaction's worth: parsed, redacted records and the cursor once they are committed."""

    batch: Batch
    cursor: Cursor
    redactions: Counter[str]
    prepared: Any = None  # the bank's row values for batch.events (Bank.prepare_rows)
    is_new_source: bool = False
    first_line: int = 0  # where the chunk's records start (a failure to commit it names this line)
    archive: list[Piece] = field(default_factory=list)  # what the raw archive keeps of it
    # The source as its parser saw it, the parser state the chunk began with and the line its stream bytes
    # start after: what it takes to tell which archived records are whose (harvester.capture.archive.attribute),
    # when a session is not to be kept.
    origin: tuple[SourceRef, dict[str, Any], int] | None = None
    # The version of the forgotten records' tombstones the archive pieces were cut by (Write.forgotten_as_of).
    forgotten_as_of: int | None = None


@dataclass(slots=True)
class Outcome:
    """How reading a source ended, beside its chunks."""

    path: str
    outcome: str = "unchanged"  # new | read | restarted | unchanged | missing | unreadable | failed
    problems: list[Problem] = field(default_factory=list)  # problems not tied to a chunk
    status: tuple[str, str | None] | None = None  # a new source status to record (status, error)
    bytes_read: int = 0
    restart_reason: str = ""
    line: int = 0  # the line being read (what a failure names)
    failure: Failure | None = None  # reading raised: the source failed there


@dataclass(frozen=True, slots=True)
class Failure:
    """An exception that stopped a source: where, in words, and the traceback for the log."""

    line: int
    detail: str
    trace: str = ""


class ParserFailed(Exception):
    """A parser raised on a whole document: the source fails (retried later), nothing is consumed."""


def failure_of(exc: BaseException, line: int) -> Failure:
    if isinstance(exc, ParserFailed):
        detail = str(exc)
    elif isinstance(exc, sqlite3.InterfaceError | sqlite3.ProgrammingError | sqlite3.DataError | OverflowError):
        detail = f"a value the bank cannot store ({exc})"  # a binding error: what validate.py missed
    else:
        detail = describe_error(exc)
    # The bank keeps the detail (the source's error, a problem): an exception may quote what it read.
    from harvester.redact import redact  # here: a rescan with nothing new compiles no rule

    return Failure(line, redact(detail)[0], "".join(traceback.format_exception(exc)))


def read_source(found: Found, harness_name: str, cursor: Cursor | None, outcome: Outcome,
                prepare: Prepare | None = None, limits: ReadLimits = LIMITS) -> Iterator[Chunk]:
    """Yield the chunks of ``found`` past ``cursor``; ``outcome`` says how it went. What the source
    itself makes impossible (gone, unreadable, not a regular file, corrupt) ends up in ``outcome``;
    anything else raised is the caller's to record as a failure of this source."""
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
    try:
        ref = SourceRef(found.path, found.root, found.spec.variant, _read_sidecar(found), st.st_mtime_ns)
        # The sidecar the parser is given (a subagent's meta.json, Copilot's workspace.yaml) is kept too.
        sidecar = [doc_piece(ref.sidecar, -1)] if limits.archive and ref.sidecar else []
        if fmt in ("jsonl", "lines", "zstd-frames"):
            with open_regular(path) as stream:
                st = os.fstat(stream.fileno())
                plan = plan_jsonl(cursor, st, stream, lines=fmt != "zstd-frames")  # frames: compressed offsets
                stream.seek(plan.offset)
                pieces = (read_frames(stream, plan.offset, plan.line, cap=limits.max_decompressed_bytes)
                          if fmt == "zstd-frames" else
                          read_lines(stream, plan.offset, plan.line, take_tail=_tail_rule(fmt, st, limits)))
                yield from _consume(harness, ref, cursor, st, plan, stream, fmt, outcome, prepare, pieces, limits,
                                    sidecar)
        elif fmt == "jsonl.zst":
            # Never appended in place (Codex decompresses it back to .jsonl to resume): any change
            # means reading it again from the start, which uids make harmless.
            cut = cut_at(path)
            kept = [file_piece(limits.archive, path), *sidecar] if limits.archive else []  # zstd already: as it is
            with open_zst(path, limits.max_decompressed_bytes) as zst:
                pieces = read_lines(zst, 0, 0, take_tail=_whole_record)  # type: ignore[arg-type]
                yield from _consume(harness, ref, cursor, st, Plan(0, 0, cursor is not None), None, fmt,
                                    outcome, prepare, pieces, limits, kept)
            if cut is not None:
                outcome.problems.append(Problem("malformed", outcome.line or 1, (
                    f"zstd stream cut short at byte {cut} of {st.st_size}: what it held after that is lost")))
        elif fmt == "sqlite":
            yield from _database(harness, found, ref, cursor, st, outcome, prepare, limits, sidecar)
        else:
            yield from _document(harness, found, ref, cursor, outcome, prepare, limits, sidecar)
    except FileNotFoundError:
        _vanished(outcome, cursor)
    except zstandard.ZstdError as exc:
        outcome.outcome = "unreadable"
        outcome.problems.append(Problem("malformed", (cursor.line if cursor else 0) + 1,
                                        f"zstd stream cut short or corrupt: {exc}"))
    except OSError as exc:  # NotRegular included: a FIFO is refused, never waited on
        _unreadable(outcome, exc)


def _tail_rule(fmt: str, st: os.stat_result, limits: ReadLimits) -> Callable[[bytes], bool] | None:
    """Whether a last line without its newline may be taken: only a JSON record (which cannot grow
    into another valid record), and only once the file has been quiet. Markdown (Aider) has no way
    to tell a whole line from the start of one."""
    if fmt != "jsonl" or time.time() - st.st_mtime_ns / 1e9 < limits.quiet_seconds:
        return None
    return _whole_record


def _whole_record(raw: bytes) -> bool:
    try:
        return isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


def _consume(harness: Any, ref: SourceRef, cursor: Cursor | None, st: os.stat_result | Stat, plan: Plan,
             stream: BinaryIO | None, fmt: str, outcome: Outcome, prepare: Prepare | None,
             pieces: Iterator[Lines], limits: ReadLimits = LIMITS, kept: list[Piece] | None = None) -> Iterator[Chunk]:
    """Chunks from a run of line pieces. ``stream``: the seekable file (None for a decompressed one), whose
    bytes each chunk consumed go to the archive with it (from the committed offset, the newline a taken
    last line lacked included: the archive holds the file as it was, byte for byte). ``kept``: what the
    archive keeps of a source read whole (a .jsonl.zst), with the first chunk."""
    path = str(ref.path)
    outcome.restart_reason = plan.reason if plan.restart else ""
    new = _new_cursor(harness.name, path, fmt, cursor, st, ref)
    new.offset, new.line = plan.offset, plan.line
    new.state = {} if plan.restart or cursor is None else dict(cursor.state)
    is_new = cursor is None
    outcome.outcome = "new" if is_new else ("restarted" if plan.restart else "read")
    piece = _next(pieces, outcome, new.line)
    committed_any = False
    archived_from = 0 if plan.restart or cursor is None else cursor.offset
    first_archive = list(kept or [])
    while piece is not None:
        following = _next(pieces, outcome, piece.end_line)  # look ahead: only the last chunk may record the stat
        if following is not None and not following.records and not following.problems \
                and following.end_offset == piece.end_offset:
            piece.waiting, following = following.waiting, None  # the final "a line waits" note
        outcome.line = piece.records[0].line if piece.records else new.line + 1
        outcome.bytes_read += piece.end_offset - new.offset
        start, line_before = new.state, new.line
        compressing = None
        if limits.archive and stream is not None and piece.end_offset > archived_from:
            # Compressed on another thread while the records are parsed (zstd lets go of the GIL).
            raw = os.pread(stream.fileno(), piece.end_offset - archived_from, archived_from)
            compressing = _compressor().submit(stream_piece, raw, archived_from, piece.end_offset,
                                               archived_from == 0 and cursor is not None)
            archived_from = piece.end_offset
        batch, redactions, archive = read_batch(harness, ref, piece.records, start, split=True,
                                                keep_whole=bool(limits.archive), recall_key=limits.recall_key)
        if compressing is not None:
            archive.insert(0, compressing.result())
        archive[:0], first_archive = first_archive, []
        batch.problems[:0] = piece.problems
        new.offset, new.line, new.state = piece.end_offset, piece.end_line, batch.state
        if stream is not None:
            position = stream.tell()
            new.head_len, new.head_hash, new.tail_hash = fingerprints(stream, new.offset)
            stream.seek(position)
        # A cursor committed mid-file must never look "unchanged" to the next stat, or the rest of
        # the file would wait for the next append: only the last chunk records the stat; nor may one
        # with a last line still waiting for its newline (it is taken once the file is quiet).
        done = following is None and not (piece.waiting and stream is not None)
        new.size, new.mtime_ns = (st.st_size, st.st_mtime_ns) if done else (-1, -1)
        yield _chunk(batch, redactions, new, is_new and not committed_any, prepare, outcome.line, archive,
                     (ref, start, line_before) if limits.archive else None)
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
        elif stream is not None:
            new.head_len, new.head_hash, new.tail_hash = fingerprints(stream, new.offset)
        new.size, new.mtime_ns = st.st_size, st.st_mtime_ns
        yield _chunk(Batch(state=new.state), Counter(), new, is_new, prepare, new.line + 1, first_archive)


_COMPRESSOR: ThreadPoolExecutor | None = None


def _compressor() -> ThreadPoolExecutor:
    global _COMPRESSOR
    if _COMPRESSOR is None:
        _COMPRESSOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="archive")
    return _COMPRESSOR


def _next(pieces: Iterator[Lines], outcome: Outcome, line: int) -> Lines | None:
    """The next piece; a compressed source that decompresses past the cap ends here, recorded."""
    try:
        return next(pieces, None)
    except TooLarge as exc:
        outcome.problems.append(Problem("oversize", line + 1, f"{exc}: read no further"))
        return None


def _document(harness: Any, found: Found, ref: SourceRef, cursor: Cursor | None, outcome: Outcome,
              prepare: Prepare | None, limits: ReadLimits = LIMITS, sidecar: list[Piece] | None = None
              ) -> Iterator[Chunk]:
    """A whole-document source (JSON rewritten in place), with the documents related to it: read it
    all; uids make re-reads harmless."""
    path = str(ref.path)
    # Taken before reading, and over the related documents too: a change after this stat shows as a
    # difference at the next check, never as something already seen.
    st = source_stat(path, "json", found.spec.related)
    data = read_regular(path)
    records = [Record(1, data)] if data.strip() else []
    for other in found.spec.related(found.path) if found.spec.related else ():
        try:
            records.append(Record(len(records) + 1, read_regular(other)))
        except FileNotFoundError:
            continue  # deleted between listing and reading: the next change brings it
        except OSError as exc:  # NotRegular included
            outcome.problems.append(Problem("unreadable", len(records) + 1, f"{other}: {_reason(exc)}"))
    outcome.bytes_read += sum(len(r.raw) for r in records)
    outcome.outcome = "new" if cursor is None else "read"
    outcome.line = 1
    new = _new_cursor(harness.name, path, "json", cursor, st, ref)
    new.offset, new.line = len(data), len(records)
    batch, redactions, archive = read_batch(harness, ref, records, {}, split=False, keep_whole=bool(limits.archive),
                                            recall_key=limits.recall_key)
    if limits.archive:  # every version read: the archive keeps what the agent rewrote since
        archive[:0] = [*(sidecar or []), *(doc_piece(r.raw, part) for part, r in enumerate(records))]
    yield _chunk(batch, redactions, new, cursor is None, prepare, 1, archive, (ref, {}, 0) if limits.archive else None)


def _database(harness: Any, found: Found, ref: SourceRef, cursor: Cursor | None, st: Stat, outcome: Outcome,
              prepare: Prepare | None, limits: ReadLimits = LIMITS, sidecar: list[Piece] | None = None
              ) -> Iterator[Chunk]:
    """A SQLite store the agent keeps open. Opened so that nothing beside it is created or changed
    (:mod:`harvester.capture.foreign_sqlite`), every query in one read transaction: one consistent snapshot
    of a live database, read in bounded pages (:mod:`harvester.capture.paging`), each its own chunk. The cursor
    keeps each query's watermark beside the parser's state."""
    path = str(ref.path)
    # A database replaced by another file (restored, recreated) is read from the start: its rows
    # need not be above the old file's watermarks.
    replaced = cursor is not None and (cursor.device, cursor.inode) != (st.st_dev, st.st_ino)
    state = cursor.state if cursor is not None and not replaced else {}
    marks: dict[str, Any] = dict(state.get("watermarks", {}))
    new = _new_cursor(harness.name, path, "sqlite", cursor, st, ref)
    new.offset, new.line, new.state = 0, cursor.line if cursor else 0, {"parser": dict(state.get("parser", {}))}
    first = True
    try:
        with open_readonly(path) as conn, contextlib.closing(paging.snapshot_rows(
                conn, found.spec.queries, marks, path)) as rows:
            for page in paging.pages(rows, found.spec.queries, marks, page_rows=limits.page_rows,
                                     page_bytes=limits.page_bytes):
                outcome.bytes_read += page.size
                outcome.outcome = "new" if cursor is None else "read"
                outcome.line = page.records[0].line if page.records else 1
                start = new.state["parser"]
                batch, redactions, archive = read_batch(harness, ref, page.records, start, split=True,
                                                        keep_whole=bool(limits.archive),
                                                        recall_key=limits.recall_key)
                if limits.archive and page.records:  # each row as read, once per content (Archive.commit dedups)
                    archive.insert(0, rows_piece([r.raw for r in page.records], restart=first and (
                        replaced or cursor is None)))
                if limits.archive and first:
                    archive[:0] = sidecar or []
                new.line += len(page.records)
                new.state = {"parser": batch.state, "watermarks": page.marks}
                # Only the last page records the stat: a cursor committed mid-read must not look unchanged.
                new.size, new.mtime_ns = (st.st_size, st.st_mtime_ns) if page.last else (-1, -1)
                yield _chunk(batch, redactions, new, cursor is None and first, prepare, outcome.line, archive,
                             (ref, start, 0) if limits.archive else None)
                first = False
                new.generation += 1  # what the bank holds once that chunk is committed
    except NotADatabase as exc:  # empty (caught mid-creation) or another format
        _unreadable(outcome, exc)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return  # the agent holds a lock right now: the next poll reads it (from the last page committed)
        outcome.outcome = "failed"
        outcome.problems.append(Problem("malformed", 0, f"unexpected database shape: {exc}"))
    except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
        _unreadable(outcome, OSError(0, f"not a readable SQLite database ({exc})"))


def _chunk(batch: Batch, redactions: Counter[str], cursor: Cursor, is_new: bool, prepare: Prepare | None,
           first_line: int, archive: list[Piece] | None = None,
           origin: tuple[SourceRef, dict[str, Any], int] | None = None) -> Chunk:
    # The caller goes on advancing its own state; the bank keeps this one, redacted like all it keeps (a parser
    # may hold a branch, a cwd or a prompt there).
    from harvester.redact.batch import redact_state  # here: a rescan with nothing new compiles no rule

    snapshot = replace(cursor, state=dict(redact_state(cursor.state)))
    return Chunk(batch, snapshot, redactions, prepare(batch.events) if prepare else None, is_new, first_line,
                 archive or [], origin)


def read_batch(harness: Any, ref: SourceRef, records: list[Record], state: dict[str, Any], split: bool,
               keep_whole: bool = False, recall_key: bytes | None = None) -> tuple[Batch, Counter[str], list[Piece]]:
    """Parse, check and redact records: what reaches the bank from them. One bad record costs that
    record. A run of records is parsed in one call; if the parser raises, or what it returns has
    values of the wrong type (:func:`harvester.capture.validate.repair`), the run is parsed again one record
    at a time, so that each fault is counted against its own line and every other record imports.
    ``split`` is False for a whole document (its related documents are not records of their own):
    there a parser error fails the source (:class:`ParserFailed`), to be read again later.

    Last, a text past the bank's copy (:data:`MAX_EVENT_TEXT`) is clipped there, marked ``meta.clipped``;
    ``keep_whole`` (a bank with an archive): the whole (redacted) text goes there, the third value.
    ``recall_key``: the bank's, which marks the harvester's own answers seen again (before redaction).
    ``state`` is left as it was (the start of a chunk is what attributing its records needs)."""
    start = _copy(state)
    try:
        batch = harness.parse(ref, records, _copy(start))
    except Exception as exc:
        if not split:
            raise ParserFailed(f"the {harness.name} parser could not read this document: "
                               f"{describe_error(exc)}") from exc
        batch = _parse_each(harness, ref, records, start)
    else:
        faults = repair(batch, start)
        if faults and split and len(records) > 1:
            batch = _parse_each(harness, ref, records, start)
        elif faults:
            batch.problems.append(Problem("malformed", records[0].line if records else 1, describe(faults)))
    mark_recall(batch, recall_key)
    from harvester.redact.batch import redact_batch

    redactions = redact_batch(batch)
    for problem in batch.problems:  # what a record was, never what it said (harvester/parsers/base.py)
        problem.detail = problem_detail(problem.detail)
    return batch, redactions, keep_whole_texts(batch, keep_whole)


def keep_whole_texts(batch: Batch, keep_whole: bool) -> list[Piece]:
    """Clip the texts the bank keeps a part of; the archive keeps them whole (read by ``show --full``)."""
    kept = []
    for event in batch.events:
        if len(event.text) > MAX_EVENT_TEXT:
            clipped: dict[str, Any] = {"chars": len(event.text)}
            if keep_whole:
                piece = text_piece(event.text, event.session)
                kept.append(piece)
                clipped["text"] = piece.digest
            event.text = clip(event.text, where="in the archive (harvester show --full)" if keep_whole else "not kept")
            event.meta = {**(event.meta or {}), "clipped": clipped}
    return kept


def _parse_each(harness: Any, ref: SourceRef, records: list[Record], state: dict[str, Any]) -> Batch:
    out = Batch(state=state)
    for record in records:
        try:
            one = harness.parse(ref, [record], _copy(out.state))
        except Exception as exc:
            log.warning("parser failed on a record", harness=harness.name, path=str(ref.path), line=record.line,
                        exc_info=True)
            out.problems.append(Problem("malformed", record.line, (
                f"the {harness.name} parser could not read this record: {describe_error(exc)}")))
            continue
        faults = repair(one, out.state)
        if faults:
            one.problems.append(Problem("malformed", record.line, describe(faults)))
        out.events += one.events
        for patch in one.sessions.values():
            out.patch(patch)
        out.problems += one.problems
        out.marks += one.marks
        out.revise = out.revise or one.revise
        out.state = one.state
    return out


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    """A deep copy: a parser that fails half-way through a record must not leave its state half-changed."""
    return orjson.loads(orjson.dumps(state)) if state else {}


def _new_cursor(harness: str, path: str, fmt: str, cursor: Cursor | None, st: os.stat_result | Stat,
                ref: SourceRef | None = None) -> Cursor:
    generation = cursor.generation if cursor is not None else 0
    return Cursor(harness, path, fmt, device=st.st_dev, inode=st.st_ino, size=st.st_size,
                  mtime_ns=st.st_mtime_ns, generation=generation, root=str(ref.root) if ref else "",
                  variant=ref.variant if ref else "")


def _vanished(outcome: Outcome, cursor: Cursor | None) -> None:
    outcome.outcome = "missing"
    outcome.problems.append(Problem("unreadable", (cursor.line if cursor else 0) + 1, "deleted while reading"))
    if cursor is not None:
        outcome.status = ("missing", "deleted")


def _reason(exc: OSError) -> str:
    """Why a file could not be read, in words (``Permission denied``, ``a FIFO, not a regular file``)."""
    return exc.strerror or str(exc) or type(exc).__name__


def _unreadable(outcome: Outcome, exc: OSError) -> None:
    detail = _reason(exc)
    outcome.outcome = "unreadable"
    outcome.problems.append(Problem("unreadable", 0, detail))
    outcome.status = ("unreadable", detail)


def _read_sidecar(found: Found) -> bytes | None:
    if found.spec.sidecar is None:
        return None
    try:
        return read_regular(found.spec.sidecar(found.path))
    except OSError:
        return None
