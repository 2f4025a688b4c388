"""The screen: which strings of a batch can hold anything for ``redact``, found by one scan of them all joined.

A batch holds thousands of strings (texts, and every string of tool input and metadata), most of them short and
nearly all clean. ``redact`` costs a few microseconds a call before it reads a byte (a dozen scans set up), so a
batch's strings are joined by line breaks and scanned once (``engine.candidates``); a string is redacted alone,
as before, only where a candidate of that scan lies on it. The others are returned as they are, which is what
``redact`` returns for a string in which no rule finds anything.

Why a string in which a rule finds something alone is never passed over: the joined text holds the string
unchanged, and a rule reads a line break as it reads the end of a text. Its lookarounds hold no line break
(``(?<![A-Za-z0-9])`` is true after one as at the start; no positive lookbehind holds one), its possessive runs
and values stop at one, so its match where the string starts it is found again in the joined text, or a longer
one where a class crosses breaks (a PEM block's base64 runs on, a Twilio pair, a URL password wrapped on the
next line, a key split by a line break: ``splits.py``), whose checks hold as well (a longer base64 run, more
of a command line above it). A check reads the line around a value (it stops at the break) or, for a command
line, the command back to its start (more words above it can only add a tool). Every candidate is mapped back
by where its rule's match starts and by its span, so the string it came from is marked even when the span
runs into the next one. A candidate over a marker loses to it in ``redact``; here it is kept, since the marker
may be another string's. tests/test_redact_screen.py compares screened batches with ``redact`` called on every
string, on the secrets corpus, the redaction tests' strings and the bench's texts cut at random points.

Remembering the strings found clean from one batch to the next did not pay: on the bench tree 8 % of a batch's
distinct strings had been seen in an earlier one, and the screen measured no faster with a memory of them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from harvester.redact.engine import candidates

_SHORTEST = 8  # redact returns a shorter text as it is (engine._redact_once)
_GROUP = 1 << 20  # characters joined at most (past one string): a batch's copies stay small whatever its size


def clean_strings(strings: Iterable[str]) -> set[str]:
    """The strings among ``strings`` in which ``redact`` finds nothing (some may be missed: never a dirty one)."""
    unique = set(strings)
    dirty: set[str] = set()
    # ASCII strings apart: joined, they make an ASCII text, which turns into bytes as one copy (one other
    # character makes the whole text wide and its encoding a loop over every character).
    groups: dict[bool, list[str]] = {True: [], False: []}
    sizes = {True: 0, False: 0}
    for s in unique:  # in any order: each string is screened alone
        size = len(s)
        if size < _SHORTEST:
            continue
        kind = s.isascii()
        if sizes[kind] + size > _GROUP and groups[kind]:
            dirty |= _dirty(groups[kind])
            groups[kind], sizes[kind] = [], 0
        groups[kind].append(s)
        sizes[kind] += size + 1
    for group in groups.values():
        if group:
            dirty |= _dirty(group)
    return unique - dirty if dirty else unique


def _dirty(todo: list[str]) -> set[str]:
    """The strings of ``todo`` that one scan of them joined finds a candidate on."""
    joined = "\n".join(todo)
    starts: list[int] = []
    pos = 0
    for s in todo:
        starts.append(pos)
        pos += len(s) + 1
    dirty: set[int] = set()
    for _, start, end, _, origin in candidates(joined, markers_lose=False):
        first = bisect.bisect_right(starts, min(start, origin)) - 1
        last = bisect.bisect_right(starts, max(end - 1, origin)) - 1
        dirty.update(range(first, last + 1))
    return {todo[n] for n in dirty}
