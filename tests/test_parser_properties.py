"""Property: whatever value any known field of any record holds, reading never stops.

Every harness's hand-written store is scanned once to capture what its parser is given (records, as the
reader hands them over). Then hypothesis replaces one value anywhere in one record with an arbitrary JSON
value (text, numbers, huge integers, nulls, arrays, objects, deep nesting) or the record with arbitrary
bytes, and the mutated run goes through what a scan does with it: parse, type checks, redaction, the
bank's row values, and a commit into a real bank. Nothing may raise, except a whole document that its
parser cannot read (that source then fails, to be read again: the boundary's job), and what is committed
is what the bank can hold.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvester.bank import open_bank
from harvester.bank.sqlite_events import event_rows
from harvester.capture.contract import Cursor
from harvester.capture.ingest import Ingestor
from harvester.capture.reading import Chunk, Outcome, ParserFailed, read_batch
from harvester.capture.validate import repair
from harvester.parsers import HARNESSES
from harvester.parsers.base import Record, SourceRef
from tests.helpers import scan
from tests.machine import lay_out_every_store, roots_in_repositories

# Harnesses with sources to read (a harness may only report a store it cannot read: Windsurf's).
READ = sorted(name for name, harness in HARNESSES.items() if harness.sources)


@dataclass(frozen=True)
class Call:
    """One parser call of the clean scan: what the parser was given."""

    harness: str
    ref: SourceRef
    records: tuple[Record, ...]
    split: bool  # a run of records (JSONL lines, database rows), not one whole document


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Call]]:
    tmp = tmp_path_factory.mktemp("properties")
    home = tmp / "home"
    lay_out_every_store(home)
    seen: dict[str, list[Call]] = {name: [] for name in HARNESSES}
    originals = dict(HARNESSES)

    def recording(name: str):  # type: ignore[no-untyped-def]
        parse = originals[name].parse

        def parse_and_note(ref: SourceRef, records: Any, state: dict[str, Any]) -> Any:
            records = list(records)
            if records and not state:
                seen[name].append(Call(name, ref, tuple(records), ref.path.suffix != ".json"))
            return parse(ref, records, state)
        return parse_and_note

    roots = {name: [Path(p) for p in paths] for name, paths in roots_in_repositories(home).items()}
    try:
        for name in originals:
            HARNESSES[name] = replace(originals[name], parse=recording(name))
        scan(home, tmp / "bank.sqlite", extra_roots=roots)
    finally:
        HARNESSES.update(originals)
    return seen


def test_every_harness_was_seen(calls: dict[str, list[Call]]) -> None:
    assert all(calls[n] for n in READ), [name for name in READ if not calls[name]]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _paths(value: Any, prefix: tuple = (), depth: int = 0) -> list[tuple]:
    """Every place in a JSON value a mutation can go: each key of each object, each item of each array."""
    out: list[tuple] = []
    if depth > 8:
        return out
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append((*prefix, key))
        out += _paths(child, (*prefix, key), depth + 1)
    return out


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _set(value[head], rest, new)
    return copy


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"content": value}
    return value


EXAMPLES = itertools.count()
MUTATION = st.one_of(JSON, st.integers(100, 600).map(_deep), st.just(_deep(900)))


def _mutated(call: Call, data: st.DataObject) -> list[Record]:
    records = list(call.records)
    index = data.draw(st.integers(0, len(records) - 1), label="record")
    record = records[index]
    try:
        decoded = orjson.loads(record.raw)
    except orjson.JSONDecodeError:
        decoded = None
    paths = _paths(decoded) if isinstance(decoded, dict | list) else []
    if not paths or data.draw(st.integers(0, 9), label="raw?") == 0:
        raw = data.draw(st.binary(max_size=200) | st.text(max_size=200).map(str.encode), label="raw")
    else:
        path = data.draw(st.sampled_from(paths), label="field")
        raw = json.dumps(_set(decoded, path, data.draw(MUTATION, label="value"))).encode()
    records[index] = Record(record.line, raw)
    return records


@pytest.mark.parametrize("name", READ)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_no_value_in_any_known_field_stops_reading(name: str, calls: dict[str, list[Call]], data: st.DataObject,
                                                   tmp_path: Path) -> None:
    harness = HARNESSES[name]
    call = data.draw(st.sampled_from(calls[name]), label="source")
    records = _mutated(call, data)
    try:
        batch, redactions, _ = read_batch(harness, call.ref, records, {}, split=call.split)
    except ParserFailed:
        assert not call.split, "only a whole document may fail its source"
        return
    assert repair(batch, {}) == [], "read_batch hands over only values of their declared types"
    orjson.dumps(batch.state)
    rows = event_rows(batch.events)
    # And the bank takes it: the same commit a scan makes (sessions filed, events, problems, cursor).
    bank_path = tmp_path / f"{name}.sqlite"
    with open_bank(bank_path) as bank, Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
        path = f"{call.ref.path}.{next(EXAMPLES)}"  # a new source each time: never one a former example moved
        chunk = Chunk(batch, Cursor(name, path, "jsonl", offset=1, line=len(records)), redactions, rows, True, 1)
        result = ingestor._commit_source(harness, iter([chunk]), Outcome(path, "new"))
        assert result.outcome == "new", result
