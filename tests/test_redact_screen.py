"""A batch's strings screened in one scan (issue 29, harvester/redact/screen.py): never a string passed over that
``redact`` alone would change, and ``redact_batch`` gives what redacting every string alone gives.

The strings are the secrets corpus, the redaction tests' strings and the bench's planted texts cut at random
points (a secret cut in two across strings, a continued command line, a URL password wrapped onto the next
string, markers in the next string), as a parser's batch holds them: texts, tool input, metadata.
"""

from __future__ import annotations

import copy
import functools
import random
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvester.model import Batch, Event, Mark
from harvester.redact import engine, redact, redact_value, screen
from harvester.redact.batch import _short_strings, redact_batch
from harvester.redact.screen import clean_strings
from tests.test_redact_positions import _texts

PEM_HEAD = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + "Qz7s3cr3tKq9" * 6
PEM_TAIL = "[REDACTED:token] -----END RSA PRIVATE KEY-----"


@functools.cache
def _pieces() -> tuple[str, ...]:
    return tuple(t for t in _texts() if len(t) < 4000)


def _cut(rng: random.Random) -> list[str]:
    """A few strings: texts cut at random points, glued to what may follow a cut."""
    out = []
    for _ in range(rng.randint(1, 6)):
        text = rng.choice(_pieces())
        a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        piece = text[a:b] if rng.random() < 0.7 else text
        piece += rng.choice(["", "", "\\", " \\", "\n", "[REDACTED:token]", "@host/db"])
        out.append(piece)
    return out


def test_a_string_that_loses_a_candidate_to_another_strings_marker_is_not_passed_over() -> None:
    # Alone, the block cut short goes as far as its base64; joined, it would run on to the END line of the next
    # string, over a marker, and lose to it.
    assert redact(PEM_HEAD)[1]
    assert PEM_HEAD not in clean_strings([PEM_HEAD, PEM_TAIL])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(0, 2**32))
def test_no_string_redact_changes_is_screened_clean(seed: int) -> None:
    strings = _cut(random.Random(seed))
    clean = clean_strings(strings)
    assert not [s for s in strings if s in clean and redact(s)[1]], strings


def _reference(batch: Batch) -> Counter[str]:
    """redact_batch as it was: every string redacted alone."""
    redactions: Counter[str] = Counter()
    _short_strings(batch, redactions)
    for event in batch.events:
        n = 0
        if event.text:
            event.text, counts = redact(event.text)
            n += sum(counts.values())
        if event.tool_input is not None:
            event.tool_input, counts = redact_value(event.tool_input)
            n += sum(counts.values())
        if event.meta:
            event.meta, counts = redact_value(event.meta, urls=True)
            n += sum(counts.values())
        if n:
            redactions[event.session] += n
    for patch in batch.sessions.values():
        n = 0
        if patch.title:
            patch.title, counts = redact(patch.title)
            n += sum(counts.values())
        if patch.meta:
            patch.meta, counts = redact_value(patch.meta, urls=True)
            n += sum(counts.values())
        if n:
            redactions[patch.native_id] += n
    for i, mark in enumerate(batch.marks):
        meta, counts = redact_value(mark.meta, urls=True)
        if counts:
            batch.marks[i] = replace(mark, meta=meta)
            redactions[mark.session] += sum(counts.values())
    return redactions


def _batch(rng: random.Random) -> Batch:
    batch = Batch()
    for n in range(rng.randint(1, 5)):
        patch = batch.session(f"s{n % 2}")
        strings = _cut(rng)
        tool_input: Any = rng.choice([None, {}, strings[0], {"command": strings[0], "n": 3},
                                      {"token": strings[-1], "args": strings}, {"name": "DB_PASSWORD",
                                                                                "value": strings[-1]}])
        meta: Any = rng.choice([None, {"cwd": "/home/dev/app"}, {"url": "https://u:" + strings[-1] + "@h/x"},
                                {strings[0][:40]: strings[-1], "list": strings}, {"auth": strings[-1]}])
        batch.events.append(Event(patch.native_id, f"u{n}", "assistant", "tool_call", rng.choice(strings),
                                  tool_input=tool_input, meta=meta))
        if rng.random() < 0.3:
            patch.title, patch.meta = strings[0], {"origin": strings[-1]}
        if rng.random() < 0.2:
            batch.marks.append(Mark(patch.native_id, {"why": strings[-1]}, (f"u{n}",)))
    return batch


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(0, 2**32))
def test_a_screened_batch_is_redacted_as_every_string_alone(seed: int) -> None:
    batch = _batch(random.Random(seed))
    expected = copy.deepcopy(batch)
    assert redact_batch(batch) == _reference(expected)
    assert batch == expected


def test_the_bench_texts_as_one_batch() -> None:
    batch = Batch()
    for n, text in enumerate(_texts()):
        batch.events.append(Event("s", f"u{n}", "user", "message", text, meta={"n": n, "text": text[:50]}))
    expected = copy.deepcopy(batch)
    assert redact_batch(batch) == _reference(expected)
    assert batch == expected
    assert engine._POSITIONS is not None  # screened with the placed scans, as a scan runs


def test_strings_screened_in_groups_as_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # A batch is screened 1 MiB of strings at a time; here 300 characters, so that every group boundary shows.
    monkeypatch.setattr(screen, "_GROUP", 300)
    strings = [s for seed in range(20) for s in _cut(random.Random(seed))]
    clean = clean_strings(strings)
    assert not [s for s in strings if s in clean and redact(s)[1]]
    assert clean >= {s for s in strings if len(s) < 8}
