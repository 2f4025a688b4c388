"""Transcript content reaches a terminal shown, never obeyed: escape sequences, C1 controls, bidi overrides."""

from __future__ import annotations

import unicodedata

import pytest

from harvester.terminal import visible

BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
UNSAFE = [c for c in range(0x20) if c not in (0x09, 0x0A)] + [0x7F, *range(0x80, 0xA0), *BIDI]
HOSTILE = ("\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write the clipboard
           "\x1b]0;pwned\x07"  # OSC 0: the window title
           "\x1b[2J"  # clear the screen
           "looks fine\rcovered"  # \r: overwrite what the line showed
           "\x9b31m"  # C1 CSI, obeyed by terminals that take 8-bit controls
           "if admin\u202e } \u2066")  # Trojan Source: shown in another order than stored


def is_unsafe(ch: str) -> bool:
    return ord(ch) in UNSAFE


@pytest.mark.parametrize("text", [
    "", "plain ascii", "lines\nand\ttabs\n", "naïve — ünïcödé ✓ 日本語 🙂", "control pictures ␛ ␍ stay",
    "a backslash \\x1b is just text", "\u200f\u200e marks and \ufeff stay",
])
def test_clean_text_is_returned_as_it_is(text: str) -> None:
    assert visible(text) is text


@pytest.mark.parametrize("code", UNSAFE, ids=lambda c: f"U+{c:04X}")
def test_every_control_is_shown_visibly(code: int) -> None:
    shown = visible(f"a{chr(code)}b")
    assert shown.startswith("a") and shown.endswith("b") and len(shown) > 2
    assert not any(is_unsafe(ch) for ch in shown)
    assert all(ch.isprintable() for ch in shown)


def test_c0_and_del_become_one_column_control_pictures() -> None:
    assert visible("\x1b[2J\r\x07\x00\x7f") == "␛[2J␍␇␀␡"
    for code in [*range(0x09), *range(0x0B, 0x20), 0x7F]:
        picture = visible(chr(code))
        assert len(picture) == 1 and unicodedata.name(picture).startswith("SYMBOL FOR ")
        assert unicodedata.east_asian_width(picture) in ("N", "Na")  # one column on every terminal


def test_c1_and_bidi_become_escapes() -> None:
    assert visible("\x9b31m\x85") == "\\x9b31m\\x85"
    assert visible("x\u202ey\u2066z\u2069") == "x\\u202ey\\u2066z\\u2069"


def test_newlines_and_tabs_are_kept() -> None:
    assert visible("a\n\tb\x1b\n") == "a\n\tb␛\n"


def test_it_is_idempotent() -> None:
    once = visible(HOSTILE)
    assert visible(once) is once
    assert "␛]52;c;cHduZWQ=␇" in once and "looks fine␍covered" in once and "\\x9b31m" in once


def test_every_code_point_outside_the_set_is_left_alone() -> None:
    for code in range(0x3000):
        if 0xD800 <= code < 0xE000:
            continue
        ch = chr(code)
        assert (visible(ch) != ch) == (is_unsafe(ch)), f"U+{code:04X}"
