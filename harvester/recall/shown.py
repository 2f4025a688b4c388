"""What of a transcript may reach an answer: one sanitizer, and an answer builder that cannot skip it.

Every value an answer shows (a title, a session id, a branch, a cwd, an agent version, a tool name, an
event's text) comes from a transcript, or with ``--team`` from any teammate's rows. Three things could go
wrong with it, and :func:`inert` (for text) and :func:`one_line` (for a field) stop all three:

- It could close the frame, or open another (``</harvester-history>``), in a form a reader still takes for
  the tag: split by zero-width characters, in fullwidth or small-form brackets, with Unicode hyphens, a
  combining mark fused on, Cyrillic letters that look Latin. Tag-like text (a bracket, then past anything
  that is not a letter or digit, the name's first word) is looked for in a folded copy (compatibility
  decomposition, case folded, format characters and combining marks dropped, lookalike letters and
  brackets read as what they look like) and its bracket is written ``&lt;`` in the original.
- Its control characters could be obeyed by a terminal: they are shown (:func:`harvester.terminal.visible`).
- A newline in it could start a line of its own, such as ``## How it ended`` or ``SYSTEM: ...``: a field is
  kept on one line (its line breaks shown as ``␊``), and a multi-line text is quoted (:func:`quote`: every
  line behind ``> ``), so nothing a transcript wrote stands at column 0 as the answer's own structure.

Answers are built as :class:`Md` only: :func:`md` formats a template of the code's own words with every field
made one line, :func:`quote` adds a transcript's text, and ``Md.join``/``+`` join pieces that are already
``Md``. An f-string or a ``str`` concatenation yields a plain ``str``, which ``Md.join`` and
:func:`harvester.recall.frame.frame` refuse: a view that forgets the sanitizer fails on its first call.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable
from typing import Any

from harvester.terminal import visible

_UNSEEN = ("Cf", "Mn", "Me")  # format characters (zero-width, joiners, bidi controls) and combining marks
# Brackets that look like "<" (after case folding), and letters that look like those of the tag's name, from
# the scripts lookalike spoofing uses most: Cyrillic, Greek, Armenian, Latin small capitals. Not every
# confusable of Unicode: enough that the obvious substitutions do not pass.
_LOOKALIKE_BRACKETS = "\u2039\u3008\u27e8\u276e\u276c\u27ea\u02c2\u1438\u00ab\u300a\u29fc"
_LOOKALIKES = str.maketrans({
    **dict.fromkeys(_LOOKALIKE_BRACKETS, "<"),
    "\u04bb": "h", "\u0570": "h", "\u029c": "h", "\u0430": "a", "\u03b1": "a", "\u1d00": "a", "\u0280": "r",
    "\u0433": "r", "\u0475": "v", "\u03bd": "v", "\u1d20": "v", "\u0435": "e", "\u03b5": "e", "\u1d07": "e",
    "\u0455": "s", "\ua731": "s", "\u03c4": "t", "\u1d1b": "t", "\u0456": "i", "\u03b9": "i", "\u026a": "i",
    "\u043e": "o", "\u03bf": "o", "\u0585": "o", "\u1d0f": "o", "\u0443": "y", "\u03b3": "y", "\u028f": "y",
})
# Every character that folds to a bracket: "<", the lookalikes, and those whose compatibility decomposition
# holds one (≮ U+226E, 〈 U+2329, ︽ U+FE3D, ︿ U+FE3F, ﹤ U+FE64, ＜ U+FF1C; tests/test_frame.py checks the list
# against every code point). A text without any cannot hold a tag: it is not folded at all.
_BRACKET_LIKE = re.compile("[<" + _LOOKALIKE_BRACKETS + "\u226e\u2329\ufe3d\ufe3f\ufe64\uff1c]")
NAME = "harvester"  # the tag's first word: a text clipped for a summary may end inside the second
_BREAKS = str.maketrans({"\n": "\u240a", "\u2028": "\\u2028", "\u2029": "\\u2029"})  # the rest: visible()
_QUOTED_BREAKS = re.compile("\n|\u2028|\u2029")


def _fold(text: str) -> str:
    """``text`` as a reader might take it (see the module docstring); may differ in length."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    if not folded.isascii():
        unseen = {c for c in set(folded) if not c.isascii() and unicodedata.category(c) in _UNSEEN}
        if unseen:
            folded = folded.translate(dict.fromkeys(map(ord, unseen)))
        folded = folded.translate(_LOOKALIKES)
    return folded


def _tag_brackets(folded: str) -> list[int]:
    """Where in ``folded`` a tag-like text starts: each "<" in the run of characters that are not letters or
    digits just before the name (``<harvester``, ``< / harvester``, ``<<harvester``). Linear: the runs before
    two occurrences of the name never overlap (a regex would try every start in a run of brackets)."""
    found = []
    at = folded.find(NAME)
    while at != -1:
        i = at
        while i > 0 and not folded[i - 1].isalnum():
            i -= 1
            if folded[i] == "<":
                found.append(i)
        at = folded.find(NAME, at + len(NAME))
    return found


def neutralize(text: str) -> str:
    """``text`` with the bracket of everything that reads as the frame's tag written ``&lt;``; text without
    any is returned as it is. A text without a bracket costs one search for one; clean ASCII a ``lower()``."""
    if _BRACKET_LIKE.search(text) is None:
        return text
    if text.isascii():
        brackets = set(_tag_brackets(text.lower()))  # ASCII: positions as in text
    elif not _tag_brackets(_fold(text)):
        return text
    else:
        brackets = _brackets(text)
    if not brackets:
        return text
    return "".join("&lt;" if i in brackets else c for i, c in enumerate(text))


def _brackets(text: str) -> set[int]:
    """The positions in ``text`` of the characters that fold to the bracket of a tag-like text."""
    folded: list[str] = []
    owner: list[int] = []
    for i, c in enumerate(text):
        piece = c.lower() if c.isascii() else _fold(c)
        folded.append(piece)
        owner.extend([i] * len(piece))
    return {owner[at] for at in _tag_brackets("".join(folded))}


def inert(text: str) -> str:
    """Transcript text made safe to show inside the frame: tag-like text neutralized, controls made visible,
    text that cannot be encoded (lone surrogates) replaced. Line breaks are kept: see :func:`quote`."""
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return visible(neutralize(text))


def one_line(value: Any) -> str:
    """A field (an id, a title, a path, a name) as an answer shows it: :func:`inert`, on one line."""
    return inert(value if isinstance(value, str) else str(value)).translate(_BREAKS)


class Md(str):
    """Markdown safe to frame: made by :func:`md`, :func:`quote`, ``Md.join`` and ``+`` of two ``Md``, or
    ``Md("...")`` of the code's own words (never of a value)."""

    __slots__ = ()

    def join(self, parts: Iterable[str]) -> Md:  # type: ignore[override]
        pieces = list(parts)
        for piece in pieces:
            if not isinstance(piece, Md):
                raise TypeError(f"an answer joins only Md pieces (made by md() or quote()), not {piece[:60]!r}")
        return Md(str.join(self, pieces))

    def __add__(self, other: str) -> str:
        return Md(str.__add__(self, other)) if isinstance(other, Md) else str.__add__(self, other)

    def __radd__(self, other: str) -> str:
        return Md(str.__add__(other, self)) if isinstance(other, Md) else str.__add__(other, self)

    def lines(self) -> list[Md]:
        """Its lines (a line of safe markdown is safe markdown)."""
        return [Md(line) for line in self.split("\n")]


EMPTY = Md("")


class _Fields(string.Formatter):
    """str.format whose every field is shown as :func:`one_line`, unless it is already ``Md``."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, Md):
            return format(str(value), format_spec)
        if value is None:
            return "-"
        if isinstance(value, int | float) and not isinstance(value, bool):
            return format(value, format_spec)
        return format(one_line(value), format_spec)


_FIELDS = _Fields()


def md(template: str, /, *args: Any, **fields: Any) -> Md:
    """``template`` (the code's own words, in ``str.format`` syntax) with every field on one line, made
    inert; ``{!r}`` quotes a field (its repr) before that."""
    return Md(_FIELDS.vformat(template, args, fields))


def quote(text: str | None) -> Md:
    """A transcript's text, whole lines kept: every line behind ``> ``, so that none of them can read as the
    answer's own heading or line; each line made inert."""
    if not text:
        return EMPTY
    lines = _QUOTED_BREAKS.split(inert(text.replace("\r\n", "\n")))  # CRLF is a line end, not a control shown
    return Md("\n".join(f"> {line}" if line else ">" for line in lines))
