"""What reaches a terminal: transcripts are untrusted, so their control characters are shown, not obeyed.

A session's text, title, cwd, file names and problem details can hold escape sequences (OSC 52 writes
the clipboard, OSC 0 the window title, CSI 2J clears the screen, ``\\r`` overwrites a line) and bidi
controls that show text in another order than it is stored in ("Trojan Source"). Every line printed
for a person goes through :func:`visible`; ``--json`` output and the bank are never altered.

The visible forms:

- C0 controls (U+0000-U+001F except ``\\n`` and ``\\t``) and DEL become their Unicode control
  pictures (ESC is ``␛``, CR ``␍``, BEL ``␇``, DEL ``␡``): one column each, so tables stay aligned,
  and the symbol names the character.
- C1 controls (U+0080-U+009F) have no control pictures; they become ``\\x9b``-style escapes. Some
  terminals obey them as 8-bit CSI/OSC; in real text they only appear as mis-decoded bytes, so the
  wider form costs nothing in practice.
- Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) become ``\\u202e``-style
  escapes, so their presence shows and they reorder nothing.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import click

_KEPT = ("\n", "\t")  # layout a terminal only moves the cursor for, and that every transcript has
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))

_SHOWN: dict[str, str] = {chr(c): chr(0x2400 + c) for c in range(0x20) if chr(c) not in _KEPT}
_SHOWN["\x7f"] = "\u2421"
_SHOWN.update({chr(c): f"\\x{c:02x}" for c in range(0x80, 0xA0)})
_SHOWN.update({chr(c): f"\\u{c:04x}" for c in _BIDI})

# One character class: on clean text (the usual case) a single failed search, no copy.
_UNSAFE = re.compile("[" + "".join(re.escape(c) for c in _SHOWN) + "]")


def visible(text: str) -> str:
    """``text`` with every control character a terminal would obey shown instead (``\\n`` and ``\\t``
    kept); clean text is returned as it is. Idempotent: the visible forms are themselves clean."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_shown, text)


def _shown(match: re.Match[str]) -> str:
    return _SHOWN[match[0]]


_LINE_BREAKS = str.maketrans({"\n": "\u240a", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def one_line(value: object) -> str:
    """A value that a table cell or a header line holds (an id, a model, a tool's name, a branch): made
    :func:`visible`, and its line breaks shown too (``\\n`` as ``␊``), so that a transcript's value cannot
    print a line of its own, a forged row or event heading, at column 0."""
    return visible(str(value)).translate(_LINE_BREAKS)


def echo(message: str = "", err: bool = False) -> None:
    """The one way the CLI prints for a person (stdout, or stderr with ``err``)."""
    click.echo(visible(message), err=err)


def page(message: str, no_pager: bool = False) -> None:
    """A long text for a person (``show``): through a pager on a terminal, as git does ($PAGER, else ``less``
    with LESS=FRX unless LESS is set: it quits when the text fits one screen, and leaves it on the screen);
    printed otherwise, or with ``no_pager``. Made visible first either way: a pager, ``less -R`` included, is
    handed no control character to obey."""
    if no_pager or not sys.stdout.isatty():
        echo(message)
        return
    os.environ.setdefault("LESS", "FRX")
    click.echo_via_pager(visible(message))


class VisibleErrors(click.Group):
    """A command group whose error messages reach the terminal through :func:`visible`: they quote
    session ids, paths and queries, and every subcommand's ``ClickException`` passes here."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            exc.message = visible(exc.message)
            raise


# JSON escapes only U+0000-U+001F: DEL, C1 and bidi controls would reach a terminal raw from `--json`.
# Written as \uXXXX escapes they are the same JSON values, and obey nothing.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_text(encoded: str) -> str:
    """JSON text with the code points a terminal obeys that JSON leaves raw written as escapes."""
    if _JSON_UNSAFE.search(encoded) is None:
        return encoded
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", encoded)
