"""The scan: the rules grouped so that a clean text costs a few scans, and ``redact`` itself."""

from __future__ import annotations

import bisect
import re
from typing import Any

from harvester.redact.rules import RULES, Rule

MARKER = "[REDACTED:{}]"


# The table grouped for scanning, in table order: (prefilter, lowercase?, ((pattern, ((rule index, rule),
# ...)), ...)). Each prefilter and each pattern then runs once per text however many rules share it.
def _plan(rules: tuple[Rule, ...]) -> tuple[tuple[Any, bool, tuple[Any, ...]], ...]:
    groups: dict[tuple[Any, bool], dict[re.Pattern[bytes], list[tuple[int, Rule]]]] = {}
    for i, rule in enumerate(rules):
        groups.setdefault((rule.prefilter, rule.lower), {}).setdefault(rule.pattern, []).append((i, rule))
    return tuple((pre, lower, tuple((pat, tuple(rs)) for pat, rs in pats.items()))
                 for (pre, lower), pats in groups.items())


_PLAN = _plan(RULES)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """The text with each secret replaced by ``[REDACTED:<kind>]``, and how many of each kind.

    Returns ``text`` itself and ``{}`` when nothing was found.

    Idempotent by construction: after a pass that redacted something, the lines holding a marker are
    passed again until a pass finds nothing. A second pass finds more only where markers changed what a
    pattern sees: a rule that lost an overlap to another reads the text differently once the winner is a
    marker, a token glued to a redacted one gains a boundary. Only those lines need it: every match and
    every check's context lies within one line (values, keys and tokens stop at a newline), except a
    PEM block, which outranks every other rule and so never loses an overlap.
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
    # One byte per character, so a span in the bytes is the same span of the text. Latin-1 because it
    # costs a copy where ASCII with "replace" checks every character; bytes >= 0x80 are neither \s nor
    # \w nor cased, so no rule treats "é" differently from the "?" that stands for "→".
    raw = text.encode("latin-1", "replace")
    low = raw.lower()
    found: list[tuple[int, int, int, str]] = []  # (rule index, start, end, kind)
    for pre, lower, scans in _PLAN:
        hay = low if lower else raw
        if pre is not None and (pre not in hay if type(pre) is bytes else pre.search(hay) is None):
            continue
        for pattern, rules in scans:
            first = pattern.search(hay)  # the common case, clean text, costs this one call
            if first is None:
                continue
            for m in pattern.finditer(hay, first.start()):
                for i, rule in rules:
                    start, end = m.span(rule.group)
                    if start >= end:
                        continue
                    if rule.keys:
                        kend = m.start("kend")
                        if not hay[max(0, kend - 24) : kend].endswith(rule.keys):
                            continue
                    # A span over a marker is a candidate that lost to another rule the first time round;
                    # it must lose again, or a second pass would redact differently.
                    if (rule.check is None or rule.check(text, m)) and "[REDACTED:" not in text[start:end]:
                        found.append((i, start, end, rule.kind))
    if not found:
        return text
    # Earlier rules win an overlap (a github token assigned to GITHUB_TOKEN is a github_token): take the
    # candidates by rule, keeping the taken spans sorted to test only the two neighbours of each.
    found.sort()
    starts: list[int] = []
    kept: list[tuple[int, int, str]] = []
    for _, start, end, kind in found:
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
