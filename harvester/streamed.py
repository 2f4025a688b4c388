"""A source read in the reader process, sent back part by part (:mod:`harvester.ingest`).

A reply holding every chunk of a source would hold the whole source, parsed, in both processes at once.
So the reader keeps the source's chunk generator open between tasks and sends back what it read once it
passes :data:`REPLY_BYTES` of the source; the committing process asks for the next part as soon as one
arrives, so the reader reads it while this one commits. Neither process holds more than two parts of a
source. There is one reader process (:data:`harvester.ingest.READERS`): a part asked of a reader that
does not hold the source (another one, or a new one after a crash) says so, and the rest of the source
is then read in the committing process, from the cursor last committed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

import structlog

from harvester.bank import Cursor
from harvester.reading import LIMITS, Chunk, Outcome, Prepare, ReadLimits, failure_of, read_source
from harvester.sources import Found

log = structlog.get_logger("harvester.streamed")

REPLY_BYTES = 8 * 1024 * 1024  # bytes of a source read (about one chunk) before a part goes back

# In the reader process: the sources being read, by token, with how their reading is going.
_OPEN: dict[str, tuple[Iterator[Chunk], Outcome, int]] = {}


class NotHeld(LookupError):
    """This reader process does not hold the source a part was asked of."""


def read_part(token: str, found: Found | None, harness_name: str = "", cursor: Cursor | None = None,
              prepare: Prepare | None = None, limits: ReadLimits = LIMITS,
              reply_bytes: int = REPLY_BYTES) -> tuple[list[Chunk], Outcome | None]:
    """In the reader process: the next chunks of a source, until ``reply_bytes`` of it are read, and its
    outcome once it is all read (None: more to come). ``found`` starts the source anew; None goes on with
    it (and the ``reply_bytes`` it started with). An exception comes back as ``outcome.failure``, after
    the chunks read before it."""
    if found is not None:
        drop(token)
        outcome = Outcome(str(found.path))
        _OPEN[token] = (read_source(found, harness_name, cursor, outcome, prepare, limits), outcome, reply_bytes)
    elif token not in _OPEN:
        raise NotHeld(token)
    chunks, outcome, reply_bytes = _OPEN[token]
    part: list[Chunk] = []
    started = outcome.bytes_read
    try:
        for chunk in chunks:
            part.append(chunk)
            if outcome.bytes_read - started >= reply_bytes:
                return part, None
    except Exception as exc:
        outcome.failure = failure_of(exc, outcome.line)
    del _OPEN[token]
    return part, outcome


def drop(token: str) -> None:
    """In the reader process: stop reading a source (the committing process stopped taking its chunks)."""
    held = _OPEN.pop(token, None)
    if held is not None:
        held[0].close()  # type: ignore[attr-defined]


def chunks_from(first: Future, token: str, outcome: Outcome, submit: Callable[..., Future],
                read_rest: Callable[[Outcome], Iterator[Chunk]]) -> Iterator[Chunk]:
    """In the committing process: the source's chunks as the parts come, ``outcome`` filled in from the
    reader's once the last part is in. ``read_rest`` reads on here, from the cursor last committed, when
    the reader died or does not hold the source. Whoever takes the chunks commits each before asking for
    the next, so that cursor is the one after the last chunk taken."""
    future: Future | None = first
    done = False
    try:
        while future is not None:
            try:
                part, final = future.result()
            except (BrokenProcessPool, NotHeld):
                log.warning("reader process lost a source; reading the rest here", path=outcome.path)
                future, done = None, True
                yield from read_rest(outcome)
                return
            except Exception as exc:  # its part could not come back (pickling): the source failed there
                future, done = None, True
                outcome.failure = failure_of(exc, outcome.line)
                return
            future = submit(read_part, token, None) if final is None else None
            done = final is not None
            for n in range(len(part)):
                chunk, part[n] = part[n], None  # type: ignore[call-overload]  # each let go once committed
                yield chunk
            if final is not None:
                _adopt(outcome, final)
    finally:
        if not done:  # stopped before the end: the reader lets the source go
            _drop_quietly(submit, token, future)


def _adopt(outcome: Outcome, final: Outcome) -> None:
    for f in dataclasses.fields(Outcome):
        setattr(outcome, f.name, getattr(final, f.name))


def _drop_quietly(submit: Callable[..., Future], token: str, pending: Future | None) -> None:
    try:
        if pending is not None:
            pending.cancel()
        submit(drop, token)
    except (BrokenProcessPool, RuntimeError):  # the pool is gone or shutting down: so is the generator
        pass

