"""A SQLite store read in bounded pages: each page a chunk of its own, with the watermarks it reached.

One read of a store is still one snapshot. In WAL mode the read transaction stays open across the pages
(a WAL reader never blocks the agent's writers; it only keeps a checkpoint from passing the snapshot
until the read ends). A store in rollback-journal mode (VS Code's and so Cursor's ``state.vscdb``) would
keep its writer waiting on our lock for as long as the pages take to parse and commit, so there the rows
are first copied, under the lock and no longer than a read always held it, into a compressed spool file
(in the temporary directory, never beside the store), and paged from it once the lock is let go.

What a page holds is bounded by rows and by bytes (:data:`PAGE_ROWS`, :data:`PAGE_BYTES`), except that
one row is never split and rows of one group (:attr:`SqliteQuery.group`) are never parted. Where a page
ends inside a query, the watermark it keeps is the last row's when the query is ``ordered``, so a read
stopped there (killed, told to stop) goes on from that row: ``watermark >= :since`` reads the boundary
value again, and rows tied on it come again rather than go missing (uids make them harmless). An
unordered query's watermark stays where the read started until its last row is in a page.
"""

from __future__ import annotations

import io
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson
import zstandard

from harvester.capture.foreign_sqlite import WAL_MODE, read_header
from harvester.log import get_logger
from harvester.parsers.base import Record, SqliteQuery

log = get_logger("harvester.paging")  # through harvester.log: see there

PAGE_ROWS = 5_000  # rows of a store handed to a parser (and committed) per transaction, at most
# And bytes of those rows (as JSON), roughly. A page costs ~20x its bytes while it is parsed, redacted and
# committed (rows, records, events, row values, archive copy): an opencode database peaked at 190 MB with
# 8 MB pages and 81 MB with 1 MB ones, for the same CPU time (bench/bench_backfill.py's tree).
PAGE_BYTES = 1024 * 1024
SPOOL_LEVEL = 1  # zstd level of the spool: written once, read once


@dataclass(slots=True)
class Row:
    """One row as read: which query, the record the parser gets, its watermark and group values."""

    query: int
    raw: bytes
    mark: Any = None
    group: Any = None


@dataclass(slots=True)
class Page:
    """Records for one chunk, and the watermarks to keep once it is committed."""

    records: list[Record]
    marks: dict[str, Any]
    last: bool = False
    size: int = 0  # bytes of the records


def snapshot_rows(conn: sqlite3.Connection, queries: tuple[SqliteQuery, ...], marks: dict[str, Any],
                  path: str) -> Iterator[Row]:
    """Every query's rows past its watermark, in one read transaction of ``conn`` (the store at ``path``),
    as they are stepped (never a whole result in memory). A store not in WAL mode is spooled (see the
    module). Close it before the connection."""
    conn.row_factory = sqlite3.Row
    conn.execute("BEGIN")
    try:
        rows = _query_rows(conn, queries, marks)
        if _blocks_writers(path):
            spool = _spool(rows)
            conn.execute("ROLLBACK")
            yield from _unspool(spool)
        else:
            yield from rows
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def _blocks_writers(path: str) -> bool:
    """Whether an open read transaction keeps the agent from writing: a rollback journal's shared lock
    does. A database in WAL mode is read as a WAL reader, ``immutable`` or from a private copy (see
    :mod:`harvester.capture.foreign_sqlite`): none of them holds the agent's writer back."""
    header = read_header(path)
    return not (len(header) >= 20 and WAL_MODE in (header[18], header[19]))


def _query_rows(conn: sqlite3.Connection, queries: tuple[SqliteQuery, ...], marks: dict[str, Any]) -> Iterator[Row]:
    for index, query in enumerate(queries):
        try:
            rows = conn.execute(query.sql, {"since": marks.get(query.name, 0)})
        except sqlite3.OperationalError as exc:
            if query.optional and ("no such table" in str(exc) or "no such column" in str(exc)):
                continue
            raise
        for row in rows:
            data = dict(row)
            mark, group = data.get(query.watermark), data.get(query.group) if query.group else None
            yield Row(index, orjson.dumps({"table": query.name, "row": data}, default=_bytes_as_text), mark, group)


def _bytes_as_text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError


def _spool(rows: Iterator[Row]) -> IO[bytes]:
    """The rows in a compressed temporary file (deleted once closed): a line per row, its query, watermark
    and group as JSON, a tab, and the record (orjson writes no newline inside one)."""
    spool = tempfile.TemporaryFile(prefix="harvester-spool-")  # noqa: SIM115 (handed on; closed by _unspool)
    try:
        writer = zstandard.ZstdCompressor(level=SPOOL_LEVEL).stream_writer(spool, closefd=False)
        for row in rows:
            writer.write(orjson.dumps([row.query, row.mark, row.group], default=_bytes_as_text))
            writer.write(b"\t")
            writer.write(row.raw)
            writer.write(b"\n")
        writer.flush(zstandard.FLUSH_FRAME)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def _unspool(spool: IO[bytes]) -> Iterator[Row]:
    with spool, io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(spool, closefd=False)) as lines:
        for line in lines:
            head, _, raw = line.rstrip(b"\n").partition(b"\t")
            query, mark, group = orjson.loads(head)
            yield Row(query, raw, mark, group)


def pages(rows: Iterator[Row], queries: tuple[SqliteQuery, ...], marks: dict[str, Any], line: int = 0,
          page_rows: int | None = None, page_bytes: int | None = None) -> Iterator[Page]:
    """Cut ``rows`` into pages; each says which watermarks hold once it is committed (``marks``, the
    watermarks the read started from, is left as it was). Records are numbered on from ``line``; the
    last page (empty when there were no rows) has ``last`` set."""
    limit_rows = page_rows or PAGE_ROWS
    limit_bytes = page_bytes or PAGE_BYTES
    kept = dict(marks)  # what a page may keep: an ordered query's last row, a query's final watermark once done
    reached = dict(marks)  # the largest watermark read so far, per query
    records: list[Record] = []
    size = 0
    current, group = -1, None
    disordered: set[int] = set()
    for row in rows:
        query = queries[row.query]
        switched = row.query != current
        if switched and current >= 0 and queries[current].name in reached:
            kept[queries[current].name] = reached[queries[current].name]
        if (switched or query.group is None or row.group != group) and records and (
                len(records) >= limit_rows or size >= limit_bytes):
            yield Page(records, dict(kept), size=size)
            records, size = [], 0
        current, group = row.query, row.group
        line += 1
        records.append(Record(line, row.raw))
        size += len(row.raw)
        mark = row.mark
        if mark is None:
            continue
        if query.ordered and row.query not in disordered and query.name in reached and mark < reached[query.name]:
            # Declared ordered, yet it is not: from here its watermark waits for the query's end, as an
            # unordered one's does (what a page kept before could make a resume skip rows: logged).
            log.warning("rows not in watermark order", query=query.name)
            disordered.add(row.query)
            if query.name in marks:
                kept[query.name] = marks[query.name]
            else:
                kept.pop(query.name, None)
        if query.name not in reached or mark > reached[query.name]:
            reached[query.name] = mark
        if query.ordered and row.query not in disordered:
            kept[query.name] = reached[query.name]
    yield Page(records, dict(reached), last=True, size=size)
