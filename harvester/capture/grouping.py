"""Small sources of a large scan committed together: several whole sources in one bank transaction.

A backfill meets hundreds of small sources (a session file of a few hundred KB), each once a transaction of its
own: a lock taken, some twenty statements, a commit writing the same few pages of the bank's tables again. So a
large scan (one whose sources' writes leave the full-text index to catch up later, where no index segment is
written per write) reads a run of small sources ahead, whole, and commits them in one transaction
(``SqliteBank.grouped``), each source's writes inside it a savepoint of their own.

Why the order of operations is safe: a source's cursor still moves in the transaction that writes its events,
and a group holds whole sources only, never a part of one. A kill -9 before the group's commit leaves every
cursor of the group where it was (the next run reads those sources again, uids make it harmless); after it,
all of them committed. A source that fails in the group rolls back its own savepoint and is recorded as failed,
as alone; the others commit. Only the bank failing (disk full, ...) rolls the whole group back, and that stops
the scan as it did before. Nothing is read ahead but what the group commits: at most :data:`GROUP_BYTES` of
sources, each at most :data:`SMALL_SOURCE_BYTES` (one chunk: its events and archive pieces in memory at once).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

# A source with at most this much to read is committed with others (it is one chunk: CHUNK_BYTES is 2 MiB).
SMALL_SOURCE_BYTES = 1024 * 1024
GROUP_BYTES = 4 * 1024 * 1024  # what a group reads ahead, at most
GROUP_SOURCES = 32

Entry = TypeVar("Entry", bound=tuple)


def units(pending: list[Entry], grouping: bool) -> list[list[Entry]]:
    """``pending`` (entries ending with the bytes each has to read) as the units one process ingests at once: a
    large source alone, small ones in groups (when ``grouping``), in their order."""
    out: list[list[Entry]] = []
    group: list[Entry] = []
    size = 0
    for entry in pending:
        if not grouping or entry[-1] > SMALL_SOURCE_BYTES:
            out.append([entry])
            continue
        group.append(entry)
        size += entry[-1]
        if size >= GROUP_BYTES or len(group) >= GROUP_SOURCES:
            out.append(group)
            group, size = [], 0
    if group:
        out.append(group)
    return out


T = TypeVar("T")


def read_ahead(chunks: Iterator[T]) -> Iterator[T]:
    """A source's chunks read now, handed out as they would have been: what reading raised is raised after the
    chunks read before it, where the lazy read would have raised it (the caller records the failure alike)."""
    got: list[T] = []
    try:
        for chunk in chunks:
            got.append(chunk)
    except Exception as exc:
        return _then_raise(got, exc)
    return iter(got)


def _then_raise(got: list[Any], exc: Exception) -> Iterator[Any]:
    yield from got
    raise exc
