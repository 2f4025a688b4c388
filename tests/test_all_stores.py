"""One machine holding every agent's store at its default place: `scan`, then `status`.

Every harness's hand-written fixture tree is copied where the agent keeps it under a fresh HOME (no
environment overrides), side by side, as on a developer's machine that has used every agent. The scan
must find each store through the harness's default roots, no harness may read another's files
(Antigravity CLI lives inside Gemini CLI's folder, Cline's SDK store inside its legacy data folder, the
VS Code extensions inside Cursor's user folder), and `status` must list every harness with sessions
imported and no drift (or, for a store no parser can read, as present and not readable).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from harvester.parsers import HARNESSES
from tests.golden import LAYOUTS, expected_path
from tests.machine import PLACES, harvester_cli, lay_out_every_store, roots_config


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The machine's directory (HOME, config, bank), every store scanned."""
    tmp = tmp_path_factory.mktemp("machine")
    home = tmp / "home"
    lay_out_every_store(home)
    (tmp / "config.toml").write_text(roots_config(home))
    scanned = harvester_cli(tmp, "scan", "--json")
    assert scanned.returncode == 0, scanned.stderr
    return tmp


@pytest.fixture(scope="module")
def status(machine: Path) -> dict:
    shown = harvester_cli(machine, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    return orjson.loads(shown.stdout)


def _expected_sessions() -> Counter:
    """Sessions per harness as the reviewed golden readings of the same trees say."""
    counts: Counter = Counter()
    for key in PLACES:
        counts[LAYOUTS[key].harness] += len(orjson.loads(expected_path(key, LAYOUTS[key].hand.replace(
            "/", "-")).read_bytes())["sessions"])
    return counts


def test_every_harness_is_placed() -> None:
    assert {LAYOUTS[key].harness for key in PLACES} == set(HARNESSES)


def test_status_lists_every_harness_with_sessions_and_no_drift(status: dict) -> None:
    rows = {h["name"]: h for h in status["harnesses"]}
    assert set(rows) == set(HARNESSES)
    for name, row in rows.items():
        if not HARNESSES[name].sources:  # a store no parser can read (encrypted): said present, not readable
            assert row["sessions"] == 0 and row["not_readable"], f"{name}: {row}"
            continue
        assert row["sessions"] > 0, f"{name}: nothing imported from {row['roots']}"
        # A harness may read one store and only report another it cannot read (Trae's encrypted one).
        declared = {store.reason for store in HARNESSES[name].opaque}
        assert all(n["reason"] in declared for n in row["not_readable"]), f"{name}: {row['not_readable']}"
        assert row["unknown_types"] == 0 and row["drift"] == {}, f"{name}: drift {row['drift']}"
        assert (row["malformed"], row["oversize"], row["unreadable"]) == (0, 0, 0), f"{name}: {row}"
        assert (row["sources_failed"], row["sources_unreadable"]) == (0, 0), f"{name}: {row}"
    assert status["recent_problems"] == []


def test_no_harness_reads_another_ones_files(status: dict) -> None:
    """Nested stores (Antigravity inside ~/.gemini, Cline SDK inside ~/.cline/data, extensions inside
    Cursor's user folder) are each read by their own harness only: counts match the golden readings."""
    got = {h["name"]: h["sessions"] for h in status["harnesses"]}
    assert got == dict(_expected_sessions())


def _expected_usage() -> Counter:
    """Events that carry a model response's token counts, per harness, as the golden readings say."""
    counts: Counter = Counter()
    for key in PLACES:
        reading = orjson.loads(expected_path(key, LAYOUTS[key].hand.replace("/", "-")).read_bytes())
        counts[LAYOUTS[key].harness] += sum(1 for s in reading["sessions"] for e in s["events"] if e["usage"])
    return counts


def test_usage_reports_every_harness_that_records_usage(machine: Path) -> None:
    """`harvester usage` works on every harness whose store records token usage (issue 27): each such harness has
    its responses in the report (at most one per event that carried counts: a response repeated over several
    events counts once), and no other harness appears."""
    done = harvester_cli(machine, "usage", "--json", "--by", "harness", "--timezone", "UTC")
    assert done.returncode == 0, done.stderr
    reported: Counter = Counter()
    tokens: Counter = Counter()
    for row in orjson.loads(done.stdout)["rows"]:
        for part in row["breakdown"]:
            reported[part["harness"]] += part["responses"]
            tokens[part["harness"]] += part["total_tokens"]
    expected = _expected_usage()
    assert set(reported) == {h for h, n in expected.items() if n}
    assert {h: n for h, n in reported.items() if not 0 < n <= expected[h]} == {}
    assert {h for h in reported if tokens[h] <= 0} == set()
