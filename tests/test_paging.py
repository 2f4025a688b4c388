"""A large SQLite store is read in bounded pages (harvester/capture/paging.py): several chunks, the same bank as
one read, and a read stopped or killed between pages goes on without losing or repeating anything."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture import paging
from harvester.capture.ingest import Ingestor
from harvester.capture.reading import Outcome, read_source
from harvester.capture.sources import Found
from harvester.config.limits import ReadLimits
from harvester.model import Batch, Event
from harvester.parsers import HARNESSES
from harvester.parsers.base import Harness, Record, SourceRef, SourceSpec, SqliteQuery, json_objects
from tests.golden import LAYOUTS, dumps, expected_path, reading, trees
from tests.helpers import KillPoints, bank_rows

ROOT = Path(__file__).resolve().parent.parent
SQLITE_TREES = [t for t in trees() if any(s.format == "sqlite" for s in HARNESSES[LAYOUTS[t[0]].harness].sources)]


@pytest.mark.parametrize(("folder", "name", "root"), SQLITE_TREES, ids=[f"{f}/{n}" for f, n, _ in SQLITE_TREES])
def test_every_database_fixture_reads_the_same_one_row_per_page(folder: str, name: str, root: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each parser's state carries across pages: one row per chunk reads as the reviewed one-read reading."""
    monkeypatch.setattr(paging, "PAGE_ROWS", 1)
    got = orjson.loads(dumps(reading(folder, root)))
    expected = orjson.loads(expected_path(folder, name).read_bytes())
    if folder == "dcode":
        # Known: a message met again in a later page keeps the time it was first committed with (the bank
        # leaves an identical version as it is), where one read gives it the first in history order's.
        for reading_ in (got, expected):
            for session in reading_["sessions"]:
                for event in session["events"]:
                    event.pop("ts")
    assert got == expected


QUERIES = (
    # Not declared ordered: its watermark moves only once all its rows are read.
    SqliteQuery("session", "SELECT id, directory, time_updated FROM session WHERE time_updated >= :since "
                "ORDER BY time_updated", "time_updated"),
    SqliteQuery("part", "SELECT id, session_id, text, time_updated FROM part WHERE time_updated >= :since "
                "ORDER BY time_updated, id", "time_updated", ordered=True),
)


def _parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state={"rows": state.get("rows", 0)})
    for _record, data in json_objects(records, batch.problems):
        row = data["row"]
        batch.state["rows"] += 1
        if data["table"] == "session":
            batch.session(row["id"]).cwd = row["directory"]
        else:
            batch.events.append(Event(row["session_id"], row["id"], "assistant", "text", row["text"]))
    return batch


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """40 sessions, 600 parts; parts share time_updated in runs of 7, so page cuts fall inside ties."""
    harness = Harness("pagedagent", lambda env, home: [home / "agent"],
                      (SourceSpec("agent.db", "sqlite", watch=False, queries=QUERIES),), _parse)
    monkeypatch.setitem(parsers.HARNESSES, "pagedagent", harness)
    path = tmp_path / "home" / "agent" / "agent.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER)")
    conn.execute("CREATE TABLE part (id TEXT PRIMARY KEY, session_id TEXT, text TEXT, time_updated INTEGER)")
    conn.executemany("INSERT INTO session VALUES (?, ?, ?)", [(f"ses_{i:02d}", f"/work/p{i % 3}", i // 4)
                                                               for i in range(40)])
    conn.executemany("INSERT INTO part VALUES (?, ?, ?, ?)", [(f"prt_{i:04d}", f"ses_{i % 40:02d}", f"text {i}",
                                                               i // 7) for i in range(600)])
    conn.commit()
    conn.close()
    return tmp_path / "home"


def _scan(home: Path, bank_path: Path, limits: ReadLimits, should_stop: Any = None) -> Any:
    with open_bank(bank_path) as bank, Ingestor(bank, "coding-agent::{gitProject}", limits=limits) as ingestor:
        return ingestor.scan([HARNESSES["pagedagent"]], {"HOME": str(home)}, home, should_stop=should_stop)


def test_a_store_read_in_small_pages_gives_several_chunks_and_the_same_bank(store: Path, tmp_path: Path) -> None:
    found = Found(store / "agent" / "agent.db", store / "agent", HARNESSES["pagedagent"].sources[0])
    outcome = Outcome(str(found.path))
    chunks = list(read_source(found, "pagedagent", None, outcome, limits=ReadLimits(page_rows=25)))
    assert len(chunks) == 26  # 640 rows, 25 a page
    assert [c.cursor.size for c in chunks[:-1]] == [-1] * 25 and chunks[-1].cursor.size > 0  # last: the stat
    assert sum(len(c.batch.events) for c in chunks) == 600
    # An unordered query keeps its start watermark until it is done; an ordered one its last row's.
    assert "session" not in chunks[0].cursor.state["watermarks"]
    assert chunks[3].cursor.state["watermarks"] == {"session": 9, "part": (100 - 40 - 1) // 7}

    one_read = tmp_path / "one.sqlite"
    _scan(store, one_read, ReadLimits(page_rows=10**9))
    paged = tmp_path / "paged.sqlite"
    _scan(store, paged, ReadLimits(page_rows=25, page_bytes=10**9))
    assert len(bank_rows(one_read)) == 600 and bank_rows(paged) == bank_rows(one_read)
    by_bytes = tmp_path / "by-bytes.sqlite"
    _scan(store, by_bytes, ReadLimits(page_bytes=2000))  # pages cut by bytes alone
    assert bank_rows(by_bytes) == bank_rows(one_read)


def test_a_read_stopped_between_pages_goes_on_from_there(store: Path, tmp_path: Path) -> None:
    one_read = tmp_path / "one.sqlite"
    full = _scan(store, one_read, ReadLimits(page_rows=10**9))
    bank = tmp_path / "stopped.sqlite"
    for stop_after in (2, 5, 8):  # asked between chunks: stopped there, the cursor at the last commit
        asked = iter(range(10**6))
        _scan(store, bank, ReadLimits(page_rows=25), should_stop=lambda n=stop_after, asked=asked: next(asked) > n)
        assert len(bank_rows(bank)) < 600
    with open_bank(bank) as b:
        [cursor] = b.cursors("pagedagent")
    assert cursor.size == -1 and cursor.state["watermarks"]["part"] > 0  # mid-read, watermark reached kept
    rest = _scan(store, bank, ReadLimits(page_rows=25))
    assert rest.bytes_read < full.bytes_read  # went on from the watermark, not from the start
    assert bank_rows(bank) == bank_rows(one_read)


# -- a real agent's database, in real processes ------------------------------------------------
def _opencode_home(tmp_path: Path, megabytes: float) -> Path:
    from bench.gen_stores import opencode_store

    home = tmp_path / "home"
    opencode_store(home, int(megabytes * 1024 * 1024))
    return home


def test_the_second_process_ingests_a_store_page_by_page(tmp_path: Path) -> None:
    """A large scan's second process (harvester.capture.ingest) reads and commits a store in pages of its own."""
    home = _opencode_home(tmp_path, 1)
    inline = tmp_path / "inline.sqlite"
    with open_bank(inline) as bank, Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
        ingestor.scan([HARNESSES["opencode"]], {"HOME": str(home)}, home)
    worker = tmp_path / "worker.sqlite"
    with open_bank(worker) as bank, Ingestor(bank, "coding-agent::{gitProject}", parallel_bytes=0,
                                             limits=ReadLimits(page_rows=40)) as ingestor:
        report = ingestor.scan([HARNESSES["opencode"]], {"HOME": str(home)}, home)
    assert report.harnesses["opencode"].failed == 0
    with open_bank(worker) as bank:
        assert bank.cursors("opencode")[0].generation > 20  # many chunks, each committed as it came
    assert len(bank_rows(inline)) > 500 and bank_rows(worker) == bank_rows(inline)


def _scan_cmd(bank: Path) -> list[str]:
    code = ("import sys; from harvester.capture import paging; paging.PAGE_ROWS = 40; from harvester.cli import cli; "
            "sys.argv[0] = 'harvester'; cli()")
    return [sys.executable, "-c", code, "--bank", str(bank), "scan", "--harness", "opencode", "--json"]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OPENCODE"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), HARVESTER_LOG_LEVEL="error")
    return env


def test_sigkill_between_pages_then_rescan_equals_one_read(tmp_path: Path) -> None:
    home = _opencode_home(tmp_path, 3)
    clean = tmp_path / "clean.sqlite"
    started = time.monotonic()
    subprocess.run(_scan_cmd(clean), env=_env(home), check=True, capture_output=True)
    clean_seconds = time.monotonic() - started
    expected = bank_rows(clean)
    kills = KillPoints((0.5, 0.7, 0.85))
    for n, fraction in enumerate(kills):
        bank = tmp_path / f"killed-{n}.sqlite"
        proc = subprocess.Popen(_scan_cmd(bank), env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(clean_seconds * fraction)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills.landed += 1
        proc.wait()
        subprocess.run(_scan_cmd(bank), env=_env(home), check=True, capture_output=True)
        assert bank_rows(bank) == expected, f"kill at {fraction:.0%} of a scan"
    assert kills.landed >= 2, "the scans finished before they could be killed: make the store bigger"
