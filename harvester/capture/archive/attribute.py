"""Which archived records belong to which session, so that the archive can keep none of a session that is
never to be stored (excluded by the configuration) or no longer (``harvester forget``), in a source that
also holds sessions that stay (an opencode database, an Aider history file).

Parsers say nothing of where an event came from, so the records are parsed again one at a time, the state
carried as a scan carries it, and each record belongs to the sessions it produced something for (an event,
a mark, a session's fields). A record that produced nothing belongs, in a stream, to the sessions the next
record producing events made events for: parsers that gather lines before emitting (Aider's Markdown)
emit the lines' message at the record that closes it. A stream's last records, with nothing after them,
belong with the record before them. A database row that produced nothing belongs to the sessions whose
ids it holds (a step marker of the session's): one that names none (a project, a setting) belongs to no
session and is kept, as the rows of the sessions that stay may need it.

A record is dropped when it belongs to some session and every session it belongs to is dropped. Then the
records left are parsed again: the sessions that stay must read exactly as before (same events, same uids,
same content). If not, the last record of each dropped run is kept back (a session header, which closes the
dropped session and opens the next, or numbers it: Aider's ``#2``), else the first, else both, each checked
again; failing that, the records cannot be told apart (:func:`separate` returns None). What the dropped
sessions would make of the records kept does not count: the tombstones keep it out of the bank, and a
record kept back is one the parser needs to read the others, not the dropped session's text.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
import zstandard

from harvester.capture.compressed import read_frames
from harvester.capture.pieces import LEVEL, Piece, rows_piece, stream_piece
from harvester.capture.sources import read_lines
from harvester.parsers.base import Harness, Record, SourceRef

if TYPE_CHECKING:
    from harvester.model import Event

Owners = list[frozenset[str]]


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(state)) if state else {}


def owners(harness: Harness, ref: SourceRef, records: list[Record], state: dict[str, Any], stream: bool,
           known: frozenset[str] = frozenset()) -> Owners:
    """The sessions each record belongs to (see the module); ``known``: sessions a row may name beside
    those the rows themselves produced."""
    state = _copy(state)
    emitted: list[frozenset[str]] = []
    touched: list[frozenset[str]] = []
    for record in records:
        try:
            one = harness.parse(ref, [record], _copy(state))
        except Exception:  # a record the parser cannot read put nothing in the bank
            emitted.append(frozenset())
            touched.append(frozenset())
            continue
        state = one.state
        events = frozenset(e.session for e in one.events) | frozenset(m.session for m in one.marks)
        emitted.append(events)
        touched.append(events | frozenset(one.sessions))
    if not stream:
        names = [n.encode() for n in known.union(*touched)]
        return [t or frozenset(n.decode() for n in names if n in r.raw) for r, t in zip(records, touched, strict=True)]
    result: Owners = list(touched)
    following: frozenset[str] = frozenset()
    for i in range(len(records) - 1, -1, -1):  # a record that produced nothing: the next emitting one's
        if emitted[i]:
            following = emitted[i]
        elif not touched[i]:
            result[i] = following
    before: frozenset[str] = frozenset()
    for i, owner in enumerate(result):  # nothing emitted after it: the record before's
        if owner:
            before = owner
        elif not touched[i]:
            result[i] = before
    return result


def separate(harness: Harness | None, ref: SourceRef, records: list[Record], state: dict[str, Any], stream: bool,
             dropped: set[str] | None) -> list[bool] | None:
    """Whether each record stays, or None if the dropped sessions' records cannot be told apart from the
    others' (see the module). ``dropped`` None: no record stays (every session of the source goes)."""
    if dropped is None:
        return [False] * len(records)
    if not dropped or not records:
        return [True] * len(records)
    if harness is None:
        return None
    owned = owners(harness, ref, records, state, stream, frozenset(dropped))
    mask = [not (owner and owner <= dropped) for owner in owned]
    if all(mask):
        return mask
    wanted = _events(harness, ref, records, state, dropped)
    if _events(harness, ref, _kept(records, mask), state, dropped) == wanted:
        return mask
    n = len(mask)
    ends = [not stays and (i == n - 1 or mask[i + 1]) for i, stays in enumerate(mask)]
    starts = [not stays and (i == 0 or mask[i - 1]) for i, stays in enumerate(mask)]
    for back in (ends, starts, [a or b for a, b in zip(ends, starts, strict=True)]):
        widened = [stays or again for stays, again in zip(mask, back, strict=True)]
        if _events(harness, ref, _kept(records, widened), state, dropped) == wanted:
            return widened
    return None


def _kept(records: list[Record], mask: list[bool]) -> list[Record]:
    return [r for r, stays in zip(records, mask, strict=True) if stays]


def _events(harness: Harness, ref: SourceRef, records: list[Record], state: dict[str, Any],
            leave_out: set[str]) -> list[tuple[str, str, str]]:
    """What the records make, as the bank would hold it (every session's, but ``leave_out``)."""
    from harvester.capture.reading import read_batch  # imported here: this module is loaded with the bank

    batch, _, _ = read_batch(harness, ref, records, state, split=True)
    return sorted((e.session, e.uid, e.content_hash()) for e in batch.events
                  if e.session not in leave_out)


def without(harness: Harness, ref: SourceRef, fmt: str, state: dict[str, Any], first_line: int,
            pieces: list[Piece], dropped: set[str] | None) -> tuple[list[Piece], list[Piece], bool]:
    """A chunk's archive pieces with nothing of the ``dropped`` sessions (None: of any session): (kept,
    discarded, whether the archive now lacks records of sessions that stay: those that could not be told
    apart went too). ``first_line``: the source line the chunk's stream bytes start after.

    A stream's frame keeps its place (its source range, whether it starts an epoch, its number of lines:
    a record that goes leaves a blank line, so that every later line keeps its number, which uids are made
    of); a document, which cannot be cut, goes whole when any of its sessions is dropped (no agent keeps
    two sessions in one document); a source's sidecar stays while any of its sessions does."""
    kept: list[Piece] = []
    discarded: list[Piece] = []
    partial = False
    for piece in pieces:
        if piece.kind == "stream":
            lines, end = stream_records(piece.data, fmt, first_line)
            mask = separate(harness, ref, lines, state, True, dropped)
            partial = partial or mask is None
            kept.append(stream_piece(blanked(lines, mask or [False] * len(lines), first_line, end, fmt),
                                     piece.src_start, piece.src_end, piece.restart))
        elif piece.kind == "rows":
            rows = [Record(n, raw) for n, raw in enumerate(piece.records, start=1)]
            mask = separate(harness, ref, rows, state, False, dropped)
            partial = partial or mask is None
            kept.append(rows_piece([r.raw for r in _kept(rows, mask or [False] * len(rows))], piece.restart))
        elif dropped is not None and ((piece.kind == "text" and piece.session not in dropped)
                                      or (piece.kind == "doc" and piece.part == -1)):
            kept.append(piece)
        else:
            partial = partial or (dropped is not None and piece.kind == "doc")
            discarded.append(piece)
    return kept, discarded, partial


def without_copies(harness: Harness, ref: SourceRef, fmt: str, state: dict[str, Any], first_line: int,
                   pieces: list[Piece], copied: Callable[[Event], bool]) -> tuple[list[Piece], list[Piece], bool]:
    """A chunk's archive pieces without the records that only copy a forgotten session's (a fork, a resume:
    every event they make is ``copied``), as :func:`without` is for sessions: (kept, discarded, whether the
    archive now lacks records the bank holds). A record that makes nothing goes with the next one that makes
    events in a stream (the last ones with the one before); the records left must make what all of them make
    but the copies, else none of the chunk is kept. A document goes whole if it holds a copy; a whole text
    goes with its copied event."""
    kept: list[Piece] = []
    discarded: list[Piece] = []
    partial = False
    digests: set[str] = set()
    for piece in pieces:
        if piece.kind in ("stream", "rows"):
            stream = piece.kind == "stream"
            if stream:
                records, end = stream_records(piece.data, fmt, first_line)
            else:
                records, end = [Record(n, raw) for n, raw in enumerate(piece.records, start=1)], 0
            made = _made(harness, ref, records, state)
            mask = _without_copied(made, stream, copied)
            if not all(mask) and (_identities(_remade(harness, ref, _kept(records, mask), state), copied)
                                  != _identities(_remade(harness, ref, records, state), copied)):
                mask, partial = [False] * len(records), True
            digests.update(_clipped(e) for es, stays in zip(made, mask, strict=True) if not stays for e in es)
            kept.append(stream_piece(blanked(records, mask, first_line, end, fmt), piece.src_start, piece.src_end,
                                     piece.restart) if stream else rows_piece([r.raw for r in _kept(records, mask)],
                                                                              piece.restart))
        elif piece.kind == "doc" and piece.part != -1:
            records = [Record(1, piece.data)]
            if any(copied(e) for es in _made(harness, ref, records, state, split=False) for e in es):
                discarded.append(piece)
                partial = True
            else:
                kept.append(piece)
        else:
            kept.append(piece)
    if digests:
        texts = [p for p in kept if p.kind == "text" and p.digest in digests]
        kept = [p for p in kept if p not in texts]
        discarded += texts
    return kept, discarded, partial


def _made(harness: Harness, ref: SourceRef, records: list[Record], state: dict[str, Any],
          split: bool = True) -> list[list[Event]]:
    """The events each record makes, as the bank with an archive holds them (parsed one at a time, redacted,
    clipped), ``split`` False for a document (see reading.read_batch)."""
    from harvester.capture.reading import read_batch  # imported here: this module is loaded with the bank

    state = _copy(state)
    out = []
    for record in records:
        try:
            batch, _, _ = read_batch(harness, ref, [record], state, split=split, keep_whole=True)
        except Exception:  # a document the parser cannot read made nothing
            out.append([])
            continue
        out.append(batch.events)
        state = batch.state
    return out


def _without_copied(made: list[list[Event]], stream: bool, copied: Callable[[Event], bool]) -> list[bool]:
    """Whether each record stays: one that makes events stays unless they are all copies; in a stream, one
    that makes none shares the fate of the next that does (or of the one before, at the end)."""
    fate: list[bool | None] = [(not all(copied(e) for e in es)) if es else None for es in made]
    if not stream:
        return [f if f is not None else True for f in fate]
    following: bool | None = None
    for i in range(len(fate) - 1, -1, -1):
        if fate[i] is None:
            fate[i] = following
        else:
            following = fate[i]
    before = True
    for i, f in enumerate(fate):
        if f is None:
            fate[i] = before
        else:
            before = f
    return [bool(f) for f in fate]


def _remade(harness: Harness, ref: SourceRef, records: list[Record], state: dict[str, Any]) -> list[Event]:
    from harvester.capture.reading import read_batch

    batch, _, _ = read_batch(harness, ref, records, state, split=True, keep_whole=True)
    return batch.events


def _identities(events: list[Event], copied: Callable[[Event], bool]) -> list[tuple[str, str, str]]:
    return sorted((e.session, e.uid, e.content_hash()) for e in events if not copied(e))


def _clipped(event: Event) -> str | None:
    return ((event.meta or {}).get("clipped") or {}).get("text")


def stream_records(frame: bytes, fmt: str, first_line: int = 0) -> tuple[list[Record], int]:
    """The records of an archived stream frame, numbered as in the source (its bytes start after line
    ``first_line``), and the number of the frame's last line."""
    data = zstandard.ZstdDecompressor().decompressobj().decompress(frame)
    return records_of(data, fmt, first_line)


def records_of(data: bytes, fmt: str, first_line: int = 0) -> tuple[list[Record], int]:
    stream = io.BytesIO(data)
    pieces = list(read_frames(stream, 0, first_line) if fmt == "zstd-frames" else
                  read_lines(stream, 0, first_line, take_tail=lambda _: True))
    return [r for piece in pieces for r in piece.records], (pieces[-1].end_line if pieces else first_line)


def blanked(records: list[Record], keep: list[bool], first_line: int, end_line: int, fmt: str) -> bytes:
    """The stream's lines again, a blank line for each record that goes (and each blank line it had)."""
    out: list[bytes] = []
    line = first_line
    for record, stays in zip(records, keep, strict=True):
        out.append(b"\n" * (record.line - line - 1))
        out.append(record.raw + b"\n" if stays else b"\n")
        line = record.line
    out.append(b"\n" * (end_line - line))
    data = b"".join(out)
    if fmt == "zstd-frames":  # the source is a chain of zstd frames: so is its archived copy
        return zstandard.ZstdCompressor(level=LEVEL).compress(data)
    return data
