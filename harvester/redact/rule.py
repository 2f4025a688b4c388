"""What a rule is, where a located rule is looked for, and the token boundaries every format shares."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER = "[REDACTED:{}]"


@dataclass(frozen=True, slots=True)
class Sure:
    """Where a scan can stop, found without it (``positions.py``): every match of a rule (or of a hook's
    alternative) starts ``at`` bytes after the start of a match of ``expression`` (Hyperscan syntax), on the
    text or, for a rule on its lowercase, in any ASCII case. Hyperscan reports the leftmost start of the matches
    ending at a byte, so no two matches of ``expression`` that start apart may end at the same byte (true of a
    literal, and of a literal followed by bytes that cannot begin it again)."""

    expression: bytes
    at: int


def sure(literal: bytes, at: int) -> Sure:
    """The ``Sure`` of a literal: ``at`` is where the scan stops inside it."""
    return Sure(b"".join(b"\\x%02x" % c for c in literal), at)


@dataclass(frozen=True, slots=True)
class Hook:
    """Where a locator scan finds a candidate for a rule: right after one byte, ``anchor``.

    A locator is one scan for ``anchor`` followed by the alternatives of all the hooks on it (see
    ``locate.py``). ``ahead`` is a regex that follows the anchor; empty, the hook is a prefix that ends
    with the anchor (``hf_`` on ``_``), checked by a lookbehind behind the shared ``gate`` lookahead on
    the token's body. The rule's own pattern is then matched where the candidate starts: ``back`` bytes
    before the anchor, and further back over any bytes in ``walk`` (a head of varying length: the digits
    of a Telegram bot id).
    """

    anchor: bytes
    ahead: bytes = b""  # on the lowercased text when ``low``
    behind: bytes = b""  # the literal that ends at the anchor, when the hook has no ``ahead``
    back: int = 0
    walk: bytes = b""  # a regex class body
    find: bytes = b""  # or: the candidate starts at the last occurrence of this literal before the anchor
    # For hooks without ``ahead``: "narrow", "wide" or "split" (see locate.py); "outer" puts a hook with
    # ``ahead`` behind the first, shared lookahead (most stops at a separator end there).
    gate: str = ""
    low: bool = False  # the locator scans the lowercased text
    sure: Sure | None = None  # where the locator can stop for this hook (None: anywhere, it scans the text)


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str  # the marker's name
    pattern: re.Pattern[bytes]  # matched in the text as Latin-1 bytes, or in their lowercase
    group: int | str = 0  # the part of a match that is replaced
    needs: tuple[bytes, ...] = ()  # skip the scan unless each of these bytes occurs (a memchr each)
    lower: bool = False  # match the lowercased bytes (case-insensitive keys)
    keys: tuple[bytes, ...] = ()  # for a pattern shared by several kinds: the key ends with one of these
    # Vetoes a candidate (gets the text); or narrows it: a (start, end) span of the text is what goes.
    check: Callable[[str, re.Match[bytes]], bool | tuple[int, int]] | None = None
    # Located rules are not scanned for: their pattern is matched where a locator found a hook.
    hooks: tuple[Hook, ...] = ()
    split: bool = False  # also found when an escaped line break cuts it in two (see splits.py)
    # A scanned rule: where its pattern can match (each match starts at one of these); empty: anywhere.
    sure: tuple[Sure, ...] = ()


# A token starts where the byte before is not one of its own class, and also right after a C/JSON escape
# (the "n" of "...\nAKIA..." in JSON tool output is not part of the key) or the end of an ANSI colour code
# ("\x1b[1;32mghp_..." from a coloured terminal: ESC [ parameters m).
_AFTER_ESCAPE = rb"(?<=\\[nrt])"
_AFTER_COLOUR = rb"(?<=[\[;][0-9]m)|(?<=[\[;][0-9][0-9]m)|(?<=[\[;][0-9][0-9][0-9]m)"


def starts(cls: bytes) -> bytes:
    """Regex: a token whose characters are ``cls`` (a class body, ``A-Za-z0-9``) may start here."""
    return rb"(?:(?<![" + cls + rb"])|" + _AFTER_ESCAPE + rb"|" + _AFTER_COLOUR + rb")"


def ends(cls: bytes) -> bytes:
    return rb"(?![" + cls + rb"])"


ALNUM = rb"A-Za-z0-9"
WORD = rb"A-Za-z0-9_"
B64URL = rb"A-Za-z0-9_-"
