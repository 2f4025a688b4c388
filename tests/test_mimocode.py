"""MiMoCode and iCodeMate: opencode forks, read by its parser (fixtures/mimocode/SOURCE.md, fixtures/icodemate/SOURCE.md)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, events_of, scan, session_of

FORKS = {"mimocode": "m", "icodemate": "i"}


@pytest.mark.parametrize("name", sorted(FORKS))
def test_the_storage_tree_and_the_database(tmp_path: Path, name: str) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / name
    shutil.copytree(FIXTURES / name / "hand", data)
    conn = sqlite3.connect(data / f"{name}.db")
    conn.executescript((data / f"{name}.sql").read_text())
    conn.commit()
    conn.close()
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (name,), env={"HOME": str(home)})
    assert report.harnesses[name].problems == 0
    stored, table = f"ses_{FORKS[name]}1a2b3c4d5fffeStorageSession0", f"ses_{FORKS[name]}9f8e7d6c5fffeDatabaseSession0"
    texts = [e["text"] for e in events_of(bank, stored)]  # storage/session_diff/<project>/<session>.json
    assert texts[:5] == ["Which query makes /orders slow?", "The orders page joins line items without an index.",
                         "grep: JOIN line_items", "app/orders.py:88: SELECT * FROM orders JOIN line_items ON ...",
                         "app/orders.py:88 joins line_items on an unindexed order_id; add an index."]
    assert (session_of(bank, stored)["cwd"], session_of(bank, stored)["title"]) == (
        "/home/dev/src/demo-repo", "Find the slow query")
    assert [e["text"] for e in events_of(bank, table)] == [  # <name>.db
        "Add the index and run the migration.", "bash: alembic upgrade head",
        "Running upgrade 3f2a -> 4b1c, add ix_line_items_order_id", "The index is in; /orders drops from 2.1 s to 90 ms."]
    assert {s["native_id"] for s in [session_of(bank, stored), session_of(bank, table)]} == {stored, table}
