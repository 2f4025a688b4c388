"""The bank file itself: creation races, migrations, permissions."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from harvester.bank import open_bank
from harvester.bank.migrations import MIGRATIONS


def _open_and_close(path: str, barrier: multiprocessing.synchronize.Barrier) -> None:  # type: ignore[name-defined]
    barrier.wait()
    open_bank(path).close()


def test_several_processes_can_create_one_bank_at_once(tmp_path: Path) -> None:
    """`harvester status` beside a starting service: both may be first to create the file."""
    for round_ in range(3):
        path = str(tmp_path / f"bank-{round_}.sqlite")
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(4)
        procs = [ctx.Process(target=_open_and_close, args=(path, barrier)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0, 0, 0, 0]
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


def test_an_old_bank_is_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "bank.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with open_bank(path) as bank:
        assert bank.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert bank.excluded_sessions("codex", ["x"]) == set()  # a table of migration 2
