"""Helpers every parser shares (``harvester.parsers.base``): a tool call as one line, times in the bank's form."""

from __future__ import annotations

import pytest

from harvester.model import MAX_EVENT_TEXT
from harvester.parsers.base import describe_error, iso_ms, iso_text, render_call

KEYS = ("command", "path")


@pytest.mark.parametrize(("tool_input", "text"), [
    ({"path": "a.py", "command": "ls -la"}, "Bash: ls -la"),  # the keys' order, not the input's
    ({"path": "a.py", "command": 3}, "Bash: a.py"),  # only text counts
    ({"command": ["git", "status"]}, "Bash: git status"),  # an argv
    ({"other": 1}, 'Bash: {"other":1}'),
    ({}, "Bash"),
    (None, "Bash"),
    ("", "Bash"),
    ([], "Bash"),
    ("raw arguments", "Bash: raw arguments"),
    (["echo", "hi"], "Bash: echo hi"),
    ([1, 2], "Bash: [1,2]"),
    (0, "Bash: 0"),
])
def test_a_call_is_its_name_and_its_most_telling_argument(tool_input: object, text: str) -> None:
    assert render_call("Bash", tool_input, KEYS) == text


def test_an_input_that_is_not_json_is_shown_not_lost() -> None:
    assert render_call("t", {"when": {1, 2}}, KEYS).startswith('t: {"when":"{1')


def test_a_huge_argument_is_kept_whole_for_reading_to_clip() -> None:
    """Parsers hand texts over whole: reading clips the bank's copy and the archive keeps the rest."""
    text = render_call("Write", {"path": "x" * (MAX_EVENT_TEXT * 2)}, KEYS)
    assert len(text) == MAX_EVENT_TEXT * 2 + len("Write: ")


@pytest.mark.parametrize(("value", "iso"), [
    (1787297400123, "2026-08-21T07:30:00.123Z"),
    (1787297400123.9, "2026-08-21T07:30:00.123Z"),  # a fraction of a millisecond is dropped, not rounded up
    (1787297400000, "2026-08-21T07:30:00.000Z"),
    (0, None), (-5, None), (True, None), ("1787297400123", None), (None, None), (10**30, None),
])
def test_epoch_milliseconds(value: object, iso: str | None) -> None:
    assert iso_ms(value) == iso


@pytest.mark.parametrize(("value", "iso"), [
    ("2026-08-21T07:30:00.123Z", "2026-08-21T07:30:00.123Z"),
    ("2026-08-21T09:30:00.123456+02:00", "2026-08-21T07:30:00.123Z"),
    ("2026-08-21T07:30:00", "2026-08-21T07:30:00.000Z"),  # no offset: UTC, whatever this machine's zone
    ("yesterday", None), ("", None), (1787297400123, None),
])
def test_iso_text(value: object, iso: str | None) -> None:
    assert iso_text(value) == iso


@pytest.mark.parametrize(("exc", "said"), [
    (KeyError("uuid"), "no 'uuid' field"),
    (TypeError("'NoneType' object is not subscriptable"), "null where an object or an array was expected"),
    (AttributeError("'list' object has no attribute 'get'"), "an array where an object was expected"),
    (AttributeError("'int' object has no attribute 'strip'"), "a number where text was expected"),
    (TypeError("unhashable type: 'dict'"), "an object where text or a number was expected"),
    (TypeError('can only concatenate str (not "int") to str'), "a number where text was expected"),
    (TypeError("sequence item 0: expected str instance, dict found"), "an object where text was expected"),
    (IndexError("list index out of range"), "an array shorter than expected"),
    (RecursionError("maximum recursion depth exceeded"), "values nested too deep"),
    (ValueError("not a date"), "a value that cannot be used (not a date)"),
])
def test_describe_error_says_what_a_record_lacked_or_held_in_words(exc: BaseException, said: str) -> None:
    assert describe_error(exc) == said
    assert "Error(" not in describe_error(exc)
