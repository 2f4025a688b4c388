"""The scan: the table turned into a few passes over the text, and ``redact`` itself."""

from __future__ import annotations

import bisect
import re

from harvester.redact.contexts import CONTEXTS, PEM
from harvester.redact.locate import Scan, locators
from harvester.redact.positions import Positions
from harvester.redact.providers import TOKENS
from harvester.redact.rule import MARKER, Rule
from harvester.redact.splits import split_match

_SPLIT_AT = (b"\\", b"\n", b"\r")  # a match that stops here may go on after a line break (splits.py)

# The table in priority order: an earlier rule wins an overlap.
RULES: tuple[Rule, ...] = PEM + TOKENS + CONTEXTS


def _plan(rules: tuple[Rule, ...]) -> tuple[Scan, ...]:
    """The passes: one per pattern of a scanned rule (rules sharing a pattern share it), one per locator."""
    shared: dict[re.Pattern[bytes], list[tuple[int, Rule]]] = {}
    for i, rule in enumerate(rules):
        if not rule.hooks:
            shared.setdefault(rule.pattern, []).append((i, rule))
    anchors = {(h.anchor, h.low) for r in rules for h in r.hooks}
    hosts = {}  # a scanned pattern that begins with a locator's anchor becomes that locator's host
    for pattern, rs in list(shared.items()):
        where = (pattern.pattern[:1], rs[0][1].lower)
        if where in anchors and where not in hosts and not rs[0][1].needs:
            hosts[where] = (pattern, tuple(rs))
            del shared[pattern]
    scans = [Scan(pattern, rs[0][1].lower, rs[0][1].needs, tuple(rs)) for pattern, rs in shared.items()]
    return tuple(locators(((i, r) for i, r in enumerate(rules) if r.hooks), hosts)) + tuple(scans)


_PLAN = _plan(RULES)
# None: every scan over the whole text (the tests and the bench compare the two).
_POSITIONS: Positions | None = Positions(_PLAN, RULES)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """The text with each secret replaced by ``[REDACTED:<kind>]``, and how many of each kind.

    Returns ``text`` itself and ``{}`` when nothing was found.

    Idempotent by construction: after a pass that redacted something, the lines holding a marker are
    passed again until a pass finds nothing. A second pass finds more only where markers changed what a
    pattern sees: a rule that lost an overlap to another reads the text differently once the winner is a
    marker, a token glued to a redacted one gains a boundary. Only those lines need it: every match and
    every check's context lies within one line (values, keys and tokens stop at a newline), except a
    PEM block, which outranks every other rule and so never loses an overlap, and a Twilio auth token
    found after its account SID, which goes in the same pass as the SID.
    """
    counts: dict[str, int] = {}
    new = _redact_once(text, counts)
    if new is text:
        return text, counts
    for _ in range(8):  # each pass only turns text into markers, so this ends; 8 is far beyond need
        again = _marked_lines_once(new, counts)
        if again is new:
            break
        new = again
    return new, counts


def _marked_lines_once(text: str, counts: dict[str, int]) -> str:
    """One more pass over each line of ``text`` that holds a marker; ``text`` itself if none changed."""
    parts: list[str] = []
    done = 0  # text[:done] is in parts
    pos = text.find("[REDACTED:")
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[start:end]
        again = _redact_once(line, counts)
        if again is not line:
            parts += (text[done:start], again)
            done = end
        pos = text.find("[REDACTED:", end)
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _redact_once(text: str, counts: dict[str, int]) -> str:
    """One pass of ``redact``: ``text`` itself when nothing was found, adding to ``counts`` otherwise."""
    if len(text) < 8:
        return text  # shorter than any rule's shortest match
    found = candidates(text)
    if not found:
        return text
    return _apply(text, found, counts)


Candidate = tuple[int, int, int, str, int]  # (rule index, start, end, kind, where the rule's match starts)


def candidates(text: str, *, markers_lose: bool = True, whole: bool = False) -> list[Candidate]:
    """Every rule's candidates in ``text``, before overlaps are settled.

    ``markers_lose=False`` keeps a candidate whose span holds a marker (``screen.py``: a string joined to others
    must not lose a candidate to a marker of another string). ``whole``: every scan over the whole text, not
    only where ``positions.py`` says it can match (the same candidates; the tests compare them)."""
    # One byte per character, so a span in the bytes is the same span of the text. Latin-1 because it
    # costs a copy where ASCII with "replace" checks every character; bytes >= 0x80 are neither \s nor
    # \w nor cased, so no rule treats "é" differently from the "?" that stands for "→".
    raw = text.encode("latin-1", "replace")
    found: list[Candidate] = []
    places = None if whole or _POSITIONS is None else _POSITIONS.find(raw)  # None: every scan whole
    if places is not None and not places and not _POSITIONS.whole:  # type: ignore[union-attr]
        return found  # no scan can match anywhere: the common case, clean text, costs the one pass
    low = raw.lower()
    for n, scan in enumerate(_PLAN):
        hay = low if scan.lower else raw
        if scan.needs and not all(b in hay for b in scan.needs):
            continue
        own_end = -1  # the scan's own matches do not overlap (as finditer's), but hooks may lie inside them
        if places is not None and n not in _POSITIONS.whole:  # type: ignore[union-attr]
            for p in sorted(places.get(n, ())):
                m = scan.pattern.match(hay, p)
                if m is not None:
                    own_end = _stop(text, raw, low, hay, scan, m, own_end, found, markers_lose)
            continue
        m = scan.pattern.search(hay)  # the common case, clean text, costs this one call
        while m is not None:
            own_end = _stop(text, raw, low, hay, scan, m, own_end, found, markers_lose)
            m = scan.pattern.search(hay, m.start() + 1)
    return found


def _stop(text: str, raw: bytes, low: bytes, hay: bytes, scan: Scan, m: re.Match[bytes], own_end: int,
          found: list[Candidate], markers_lose: bool) -> int:
    """The candidates where a scan matched; the end of the scan's own last match."""
    located = scan.targets.get(m.lastgroup or "") if scan.targets else None
    if located is None:  # the scan's own rules (or its host's)
        if m.start() >= own_end:
            own_end = m.end()
            for i, rule in scan.rules:
                _consider(text, hay, m, i, rule, found, markers_lose)
        return own_end
    p = m.start()
    siblings = scan.siblings.get(m.lastgroup or "", ()) if scan.siblings else ()
    for i, rule, back, walk, find in located + tuple(
            t for ahead, ts in siblings if ahead.match(hay, p + 1) for t in ts):
        _try_located(text, raw, low, p, i, rule, back, walk, find, found, markers_lose)
    return own_end


def _apply(text: str, found: list[Candidate], counts: dict[str, int]) -> str:
    """The text with the candidates that win their overlaps replaced by markers."""
    # Earlier rules win an overlap (a github token assigned to GITHUB_TOKEN is a github_token): take the
    # candidates by rule, keeping the taken spans sorted to test only the two neighbours of each.
    found.sort()
    starts: list[int] = []
    kept: list[tuple[int, int, str]] = []
    for _, start, end, kind, _ in found:
        j = bisect.bisect_right(starts, start)
        if (j and kept[j - 1][1] > start) or (j < len(kept) and kept[j][0] < end):
            continue
        starts.insert(j, start)
        kept.insert(j, (start, end, kind))
    parts: list[str] = []
    pos = 0
    for start, end, kind in kept:
        parts.append(text[pos:start])
        parts.append(MARKER.format(kind))
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _consider(text: str, hay: bytes, m: re.Match[bytes], i: int, rule: Rule, found: list[Candidate],
              markers_lose: bool = True) -> None:
    """Add the match of a scanned rule to ``found`` unless its checks veto it."""
    start, end = m.span(rule.group)
    if start >= end:
        return
    if rule.keys:
        kend = m.start("kend")
        if not hay[max(0, kend - 24) : kend].endswith(rule.keys):
            return
    verdict = True if rule.check is None else rule.check(text, m)
    if not verdict:
        return
    if verdict is not True:
        start, end = verdict  # the check narrowed the span (a command's argument to its password)
    # A span over a marker is a candidate that lost to another rule the first time round; it must lose
    # again, or a second pass would redact differently.
    if not markers_lose or "[REDACTED:" not in text[start:end]:
        found.append((i, start, end, rule.kind, m.start()))


def _try_located(text: str, raw: bytes, low: bytes, anchor: int, i: int, rule: Rule, back: int,
                 walk: frozenset[int], find: bytes, found: list[Candidate], markers_lose: bool = True) -> None:
    """Match a located rule where a locator found one of its hooks, across escaped breaks if it may."""
    hay = low if rule.lower else raw
    start = hay.rfind(find, max(0, anchor - 64), anchor) if find else anchor - back
    while walk and start > 0:
        if hay[start - 1] in walk:
            start -= 1
        elif rule.split and start > 1 and hay[start - 2 : start] in (b"\\n", b"\\r"):
            start -= 2  # a header cut by an escaped break: walk over it too
        else:
            break
    if start < 0:
        return
    m = rule.pattern.match(hay, start)
    if rule.split and (m is None or hay[m.end() : m.end() + 1] in _SPLIT_AT):
        joined = split_match(rule, hay, start, m)
        if joined is not None:
            jm, jtext, offsets = joined
            s, e = jm.span(rule.group)
            if s < e and (rule.check is None or rule.check(jtext, jm)):
                found.append((i, offsets[s], offsets[e - 1] + 1, rule.kind, start))
                return
    if m is not None:
        _consider(text, hay, m, i, rule, found, markers_lose)
