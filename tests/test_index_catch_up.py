"""The full-text index catches up with the events (harvester/bank/sqlite_index.py): a large scan commits its
sources' events unindexed and indexes them afterwards; nothing it committed is ever unsearchable for longer than
until the scan returns, or after a kill -9, until the next process opens the bank for writing."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.parsers import HARNESSES
from tests.helpers import ClaudeSession, scan

ROOT = Path(__file__).resolve().parent.parent

# A scan that dies (as kill -9 would: no clean-up) when its index would catch up at its end, after every source
# committed its events unindexed: with two processes ingesting, each committing sources of its own.
_DIE_BEFORE_CATCH_UP = """
import os, sys
from harvester.bank.sqlite import SqliteBank
from harvester.cli import main

deferred = SqliteBank.defer_index

def dying(self, on=True, catch_up=True):
    if not on and self.index_lag():
        os._exit(9)
    return deferred(self, on, catch_up)

SqliteBank.defer_index = dying
sys.argv = ["harvester", "--bank", sys.argv[1], "scan"]
main()
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_", "XDG_", "HARVESTER_"))}
    # However little there is to read: two processes ingest, and the sources' writes leave the index behind.
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), HARVESTER_LOG_LEVEL="error", HARVESTER_PARALLEL_BYTES="1",
               HARVESTER_DEFER_INDEX_BYTES="1")
    return env


def _tree(home: Path, sessions: int = 6, turns: int = 30) -> None:
    for i in range(sessions):
        s = ClaudeSession(home, f"/work/project-{i % 2}")
        s.write(*s.conversation(turns))


def _index_matches_the_events(bank: Path) -> None:
    """Every event is in the index once, nothing else is, and the index is sound."""
    conn = sqlite3.connect(bank)
    try:
        events = [i for (i,) in conn.execute("SELECT id FROM events ORDER BY id")]
        indexed = [i for (i,) in conn.execute("SELECT id FROM events_fts_docsize ORDER BY id")]
        assert indexed == events
        conn.execute("INSERT INTO events_fts (events_fts) VALUES ('integrity-check')")
        questions = conn.execute("SELECT count(*) FROM events WHERE text LIKE 'question %'").fetchone()[0]
        found = conn.execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH 'question'").fetchone()[0]
        assert found == questions > 0
    finally:
        conn.close()


def test_a_scan_killed_before_its_index_caught_up_is_searchable_after_the_next_start(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _tree(home)
    died = subprocess.run([sys.executable, "-c", _DIE_BEFORE_CATCH_UP, str(bank)], env=_env(home),
                          capture_output=True, text=True)
    assert died.returncode == 9, died.stderr
    conn = sqlite3.connect(bank)
    try:
        held = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        unindexed = held - conn.execute("SELECT count(*) FROM events_fts_docsize").fetchone()[0]
    finally:
        conn.close()
    assert held > 0 and unindexed > 0  # the window was hit: events committed, not yet in the index

    # The next start of anything that writes (here a scan with nothing left to read) catches the index up.
    subprocess.run([sys.executable, "-m", "harvester", "--bank", str(bank), "scan"], env=_env(home),
                   capture_output=True, check=True)
    _index_matches_the_events(bank)
    search = subprocess.run([sys.executable, "-m", "harvester", "--bank", str(bank), "search", "question 29",
                             "--limit", "50"], env=_env(home), capture_output=True, text=True, check=True)
    assert search.stdout.startswith("6 matches for 'question 29'")  # every session's 30th question


def test_a_deferred_scan_returns_with_everything_searchable(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    _tree(home)
    report = scan(home, bank, ("claude-code",), parallel_bytes=0)  # two processes: the index deferred
    assert report.events_added == 6 * 60
    _index_matches_the_events(bank)


def test_events_deleted_or_changed_above_the_watermark_leave_the_index_sound(tmp_path: Path) -> None:
    """Triggers act on what the index holds only: an event not yet indexed is deleted or changed freely, and a
    new event never takes the id of one deleted under the watermark (the index would never look for it)."""
    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    _tree(home, sessions=2, turns=5)
    scan(home, bank_path, ("claude-code",))
    bank = open_bank(bank_path)
    try:
        with bank.transaction() as conn:  # the last events go (as a forget takes them), indexed
            conn.execute("DELETE FROM events WHERE id > (SELECT max(id) - 4 FROM events)")
    finally:
        bank.close()
    s = ClaudeSession(home, "/work/project-9")
    s.write(*s.conversation(3))
    bank = open_bank(bank_path)
    try:
        bank.defer_index(True)  # events committed above the watermark, not indexed ...
        with Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
            ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(home)}, home)
        bank.defer_index(True)
        with bank.transaction() as conn:  # ... then changed in place and deleted before the index caught up
            top = conn.execute("SELECT max(id) FROM events").fetchone()[0]
            conn.execute("DELETE FROM events WHERE id = ?", (top,))
            conn.execute("UPDATE events SET text = 'question rewritten' WHERE id = ?", (top - 1,))
        assert bank.index_lag() > 0
        bank.defer_index(False)
    finally:
        bank.close()
    _index_matches_the_events(bank_path)
