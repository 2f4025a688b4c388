"""Locators: one scan per anchor byte finds every hook on it, so that seventy kinds cost a few scans.

``re`` finds a pattern that begins with a literal byte at C speed (it skips from one occurrence of the
byte to the next); what costs is each pass over the text, and each stop at the byte (~50 ns, whatever
the pattern does there). So the prefixes are not scanned for one by one: each is hooked on a rare byte
it holds (``providers.prefix_hook``), and all the hooks on one byte become the alternatives of one
pattern. At a stop, an alternative that begins with a literal (``A`` then ``KIA``) is dropped after one
comparison; they are grouped by their first byte. Prefixes that end with ``_`` (``hf_``, ``npm_``) are
checked by lookbehinds, which would cost at every one of the many underscores, so they sit behind a
lookahead on the body (16 base64 bytes follow: "narrow"; "wide" and "split" gates exist for hooks that
need them). Each alternative ends in an empty named group, its name telling which rules to match where
it stopped, ``back`` bytes before the anchor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from harvester.redact.rule import Rule

_OUTER = rb"(?=[A-Za-z0-9_+/=.\\-]{8})"
_GATES = {
    "narrow": rb"(?=[A-Za-z0-9+/=]{16})",
    "wide": rb"(?=[A-Za-z0-9_+/=.-]{12})",
    "split": rb"(?=[A-Za-z0-9_.+/=-]{0,40}\\[rn])",
}

# (rule index, rule, back, walk, find): where the rule's pattern is matched for a hit of one alternative.
Target = tuple[int, Rule, int, frozenset[int], bytes]


@dataclass(frozen=True, slots=True)
class Scan:
    """One pass over the text: a rule's own pattern, or a locator with the targets of its alternatives."""

    pattern: re.Pattern[bytes]
    lower: bool = False
    needs: tuple[bytes, ...] = ()  # bytes that must all occur in the text (memchr), or the scan is skipped
    rules: tuple[tuple[int, Rule], ...] = ()  # rules whose pattern this is
    targets: dict[str, tuple[Target, ...]] | None = None  # a locator: group name -> rules to try
    # group name -> the other alternatives of its bucket (the ahead, matched after the anchor) and theirs
    siblings: dict[str, tuple[tuple[re.Pattern[bytes], tuple[Target, ...]], ...]] | None = None
    where: tuple[bytes, bool] | None = None  # a locator: its anchor and whether it scans the lowercase


def _members(cls: bytes) -> frozenset[int]:
    """The bytes of a regex class body (``A-Za-z0-9_-``)."""
    if not cls:
        return frozenset()
    member = re.compile(b"[" + cls + b"]")
    return frozenset(c for c in range(256) if member.fullmatch(bytes([c])))


def locators(rules: Iterable[tuple[int, Rule]], hosts: dict[tuple[bytes, bool], tuple[re.Pattern[bytes],
             tuple[tuple[int, Rule], ...]]] | None = None) -> list[Scan]:
    """The locator scans for the hooks of ``rules`` (pairs of table index and rule), one per anchor.

    ``hosts`` maps an anchor to a scanned rules' pattern that begins with it (and their rules): its scan
    takes the locator's alternatives too, so the two cost one pass (``K_ASSIGN`` hosts the ``k`` hooks).
    """
    hosts = hosts or {}
    # (anchor, lowercase?) -> gate ("" outside any lookahead, "outer" behind the shared one) -> ahead
    # -> targets
    literal: dict[tuple[bytes, bool], dict[str, dict[bytes, list[Target]]]] = {}
    # (anchor, lowercase?) -> gate -> width of the lookbehind -> (literal, target)
    gated: dict[tuple[bytes, bool], dict[str, dict[int, list[tuple[bytes, Target]]]]] = {}
    for i, rule in rules:
        for hook in rule.hooks:
            target = (i, rule, hook.back, _members(hook.walk), hook.find)
            where = (hook.anchor, hook.low)
            if hook.ahead:
                by_gate = literal.setdefault(where, {}).setdefault(hook.gate, {})
                by_gate.setdefault(hook.ahead, []).append(target)
                continue
            gates = [hook.gate, "split"] if rule.split and hook.gate != "split" else [hook.gate]
            for gate in gates:
                by_width = gated.setdefault(where, {}).setdefault(gate, {})
                by_width.setdefault(len(hook.behind), []).append((hook.behind, target))
    scans = []
    for where in sorted(set(literal) | set(gated)):
        anchor, low = where
        targets: dict[str, tuple[Target, ...]] = {}
        siblings: dict[str, tuple[tuple[re.Pattern[bytes], tuple[Target, ...]], ...]] = {}

        def name(found: list[Target], targets: dict[str, tuple[Target, ...]] = targets) -> bytes:
            key = f"h{len(targets)}"
            targets[key] = tuple(found)
            return b"(?P<" + key.encode() + b">)"

        def alternatives(aheads: dict[bytes, list[Target]], siblings: dict[str, tuple[tuple[re.Pattern[bytes],
                         tuple[Target, ...]], ...]] = siblings) -> list[bytes]:
            # Grouped by their first byte where it is a plain one: a stop compares it once. An alternation
            # reports only the first alternative that matches, so each one also knows the others, which are
            # tried on a hit (AC + 32 hex is a Twilio SID and the start of a pair): hits are rare.
            buckets: dict[bytes, list[tuple[bytes, list[Target]]]] = {}
            for ahead, found in sorted(aheads.items(), key=lambda item: -len(item[0])):  # longest first
                first = ahead[:1] if ahead[:1].isalnum() else b""
                buckets.setdefault(first, []).append((ahead, found))
            out = []
            every = [(re.compile(ahead), tuple(found)) for ahead, found in aheads.items()]
            for first, entries in buckets.items():
                alts = []
                for ahead, found in entries:
                    group = name(found)
                    siblings[group[4:-3].decode()] = tuple(e for e in every if e[0].pattern != ahead)
                    alts.append((ahead[1:] if first else ahead) + group)
                out.append(first + b"(?:" + b"|".join(alts) + b")" if first else b"|".join(alts))
            return out

        outside = alternatives(literal.get(where, {}).get("", {}))
        inside = alternatives(literal.get(where, {}).get("outer", {}))
        # Prefixes ending on the anchor: one lookbehind per width (a lookbehind must be fixed-width).
        for gate, by_width in gated.get(where, {}).items():
            checks = []
            for _, entries in sorted(by_width.items()):
                literals = b"|".join(dict.fromkeys(re.escape(b) for b, _ in entries))
                checks.append(b"(?<=" + literals + b")" + name([t for _, t in entries]))
            inside.append(_GATES[gate] + b"(?:" + b"|".join(checks) + b")")
        if len(inside) == 1 and not literal.get(where, {}).get("outer"):
            outside += inside  # one gate alone needs no outer one in front
        elif inside:
            outside.append(_OUTER + b"(?:" + b"|".join(inside) + b")")
        host, hosted = hosts.get(where, (None, ()))
        if host is not None:
            # The host's own alternative first: its matches end in its own groups.
            outside.insert(0, host.pattern[1:])
        pattern = re.compile(re.escape(anchor) + b"(?:" + b"|".join(outside) + b")")
        scans.append(Scan(pattern, low, needs=(anchor,) if anchor == b"~" else (), rules=hosted,
                          targets=targets, siblings={k: v for k, v in siblings.items() if v}, where=where))
    return scans
