"""Tokens cut in two by a line break: a terminal or a tool that wrapped a long line.

A tool that wraps its output at a width breaks a key with a line break, real (``fold``, a terminal capture)
or, stored as JSON, the two characters ``\\n`` (or ``\\r\\n``): ``"AKIAIOSF\\nODNN7EXAMPLE"``. Neither half
matches a format alone (or the first does and the second leaks). Only rules marked ``split`` are tried this
way, and only where a locator already found their prefix and the plain match failed or stopped right at a
backslash or a line end, so a clean text pays nothing: the candidate is matched again with the breaks after
it taken out one by one. A key too short to be one before the break is always joined to the next line; a
key that is already whole is lengthened only where the next line reads as the rest of a key, and, across a
real line break, holds nothing else (a log line after a key, "2024-06-01 12:00 started", is no key's rest).
"""

from __future__ import annotations

import re

from harvester.redact.rule import Rule

_BREAK = re.compile(rb"\\r\\n|\\n|\\r|\r\n|\n|\r")
_REACH = 4096  # a JWT can be long; a key is cut within a few lines
_CONTEXT = 16  # bytes before the candidate, for the pattern's boundary lookbehinds
_LEAD = re.compile(rb"[A-Za-z0-9_-]*")
_MAX_BREAKS = 8
_LINE_ENDS = (b"", b"\n", b"\r", b'"', b"'")  # after a key's rest alone on its line


def split_match(rule: Rule, hay: bytes, start: int, plain: re.Match[bytes] | None
                ) -> tuple[re.Match[bytes], str, list[int]] | None:
    """The rule's match from ``start`` read across escaped line breaks, or None if it crosses none.

    Returns the match (on the joined bytes), the joined bytes as text for the rule's check, and the map
    from a joined offset to the offset in ``hay``: ``offsets[j]`` for a start, ``offsets[j - 1] + 1`` for
    an end.
    """
    window = hay[start : start + _REACH]
    ctx = hay[max(0, start - _CONTEXT) : start]
    pieces = [ctx]
    offsets = list(range(start - len(ctx), start))
    cur = None if plain is None else plain.end() - start + len(ctx)  # the match's end in joined bytes
    best: re.Match[bytes] | None = None
    seg = 0
    for n, cut in enumerate(_BREAK.finditer(window)):
        pieces.append(window[seg : cut.start()])
        offsets.extend(range(start + seg, start + cut.start()))
        if cur is not None:
            # Cross the break only if the match runs up to it and the next line reads as more of the key.
            lead = _lead(window, cut.end())
            if cur < len(offsets) or not _continues(lead) or (
                    cut.group()[:1] in b"\r\n" and window[cut.end() + len(lead) : cut.end() + len(lead) + 1]
                    not in _LINE_ENDS):
                break
        elif n >= _MAX_BREAKS:
            break
        seg = cut.end()
        nxt = _BREAK.search(window, seg)
        stop = nxt.start() if nxt else len(window)
        m = rule.pattern.match(b"".join(pieces) + window[seg:stop], len(ctx))
        if m is None:
            if cur is None:
                continue  # still too short (AKIA + 4 characters): the next line may complete it
            break
        if m.end() <= len(offsets):
            break  # the match does not reach past the break
        best, cur = m, m.end()
    if best is None:
        return None
    offsets.extend(range(start + seg, start + seg + len(best.string) - len(offsets) + 1))
    return best, best.string.decode("latin-1"), offsets


def _lead(window: bytes, pos: int) -> bytes:
    m = _LEAD.match(window, pos)
    return m.group() if m else b""


def _continues(lead: bytes) -> bool:
    # After a key that already matched, a line that starts with a digit-bearing or long mixed-case run is
    # the rest of it; "Done" or "HTTP/1.1 200" is the next line.
    return any(c in b"0123456789" for c in lead) or (len(lead) >= 8 and not lead.islower()
                                                     and not lead.isupper())
