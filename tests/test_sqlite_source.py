"""SQLite stores (opencode, Kilo, ...): read-only, incremental by watermark, while the agent writes."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.model import Batch, Event
from harvester.parsers.base import Harness, Record, SourceRef, SourceSpec, SqliteQuery, json_objects
from tests.helpers import scan

QUERIES = (
    SqliteQuery(
        "session",
        "SELECT id, directory, time_updated FROM session WHERE time_updated >= :since ORDER BY time_updated",
        "time_updated",
    ),
    SqliteQuery(
        "part",
        "SELECT id, session_id, text, time_updated FROM part WHERE time_updated >= :since "
        "ORDER BY time_updated",
        "time_updated",
    ),
)


def _parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state={"rows": state.get("rows", 0)}, revise=True)  # parts grow while they stream
    for _record, data in json_objects(records, batch.problems):
        row = data["row"]
        batch.state["rows"] += 1
        if data["table"] == "session":
            batch.session(row["id"]).cwd = row["directory"]
        else:
            batch.events.append(Event(row["session_id"], row["id"], "assistant", "text", row["text"]))
    return batch


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> sqlite3.Connection:
    harness = Harness(
        "dbagent",
        lambda env, home: [home / ".local/share/dbagent"],
        (SourceSpec("agent.db", "sqlite", watch=False, queries=QUERIES),),
        _parse,
    )
    monkeypatch.setitem(parsers.HARNESSES, "dbagent", harness)
    path = tmp_path / "home" / ".local/share/dbagent" / "agent.db"
    path.parent.mkdir(parents=True)
    agent = sqlite3.connect(path, isolation_level=None)  # the agent's own connection stays open
    agent.execute("PRAGMA journal_mode = WAL")
    agent.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER)")
    agent.execute("CREATE TABLE part (id TEXT PRIMARY KEY, session_id TEXT, text TEXT, time_updated INTEGER)")
    agent.execute("INSERT INTO session VALUES ('ses_1', '/work/app', 100)")
    agent.execute("INSERT INTO part VALUES ('prt_1', 'ses_1', 'hello', 101), ('prt_2', 'ses_1', 'wor', 102)")
    return agent


def _texts(bank: Path) -> list[str]:
    with open_bank(bank) as b:
        return [e["text"] for s in b.list_sessions() for e in b.events(s["id"])]


def test_incremental_reads_revise_rows_rewritten_in_place(tmp_path: Path, store: sqlite3.Connection) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    assert scan(home, bank, ("dbagent",)).events_added == 2
    assert _texts(bank) == ["hello", "wor"]
    assert scan(home, bank, ("dbagent",)).bytes_read == 0  # db and wal unchanged: a stat, no query
    store.execute("UPDATE part SET text = 'world', time_updated = 103 WHERE id = 'prt_2'")  # streamed on
    store.execute("INSERT INTO part VALUES ('prt_3', 'ses_1', 'again', 104)")
    report = scan(home, bank, ("dbagent",))
    assert report.events_added == 1
    assert _texts(bank) == ["hello", "world", "again"]
    with open_bank(bank) as b:
        [session] = b.list_sessions()
        assert session["bank_id"] == "coding-agent::app"


def test_the_agents_database_is_never_written(tmp_path: Path, store: sqlite3.Connection) -> None:
    store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = tmp_path / "home" / ".local/share/dbagent" / "agent.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("dbagent",))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not Path(f"{db}-journal").exists()


def test_a_locked_database_is_read_at_the_next_poll(tmp_path: Path, store: sqlite3.Connection) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    store.execute("PRAGMA journal_mode = DELETE")  # an agent without WAL, holding an exclusive lock
    store.execute("BEGIN EXCLUSIVE")
    report = scan(home, bank, ("dbagent",))
    assert report.events_added == 0 and report.harnesses["dbagent"].problems == 0
    store.execute("COMMIT")
    assert scan(home, bank, ("dbagent",)).events_added == 2


def test_a_replaced_database_is_read_from_the_start(tmp_path: Path, store: sqlite3.Connection) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    scan(home, bank, ("dbagent",))
    db = tmp_path / "home" / ".local/share/dbagent" / "agent.db"
    store.close()
    other = tmp_path / "restored.db"  # another file put in its place, with rows below the watermarks
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER)")
    conn.execute("CREATE TABLE part (id TEXT PRIMARY KEY, session_id TEXT, text TEXT, time_updated INTEGER)")
    conn.execute("INSERT INTO session VALUES ('ses_1', '/work/app', 1)")
    conn.execute("INSERT INTO part VALUES ('prt_9', 'ses_1', 'older but new to us', 2)")
    conn.commit()
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    other.replace(db)
    assert scan(home, bank, ("dbagent",)).events_added == 1
    assert "older but new to us" in _texts(bank)


def test_a_database_caught_before_its_tables_exist_is_not_left_as_a_problem(
        tmp_path: Path, store: sqlite3.Connection) -> None:
    """An agent creates its database, then its tables: a poll in between sees no such table. That is
    shown while it lasts (status says why nothing is read) and gone once the database reads cleanly."""
    store.execute("ALTER TABLE part RENAME TO part_being_created")
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, ("dbagent",))
    with open_bank(bank) as b:
        rows = b.conn.execute("SELECT line, kind, detail FROM problems").fetchall()
    assert rows == [(0, "malformed", "unexpected database shape: no such table: part")]
    store.execute("ALTER TABLE part_being_created RENAME TO part")
    scan(tmp_path / "home", bank, ("dbagent",))
    with open_bank(bank) as b:
        assert b.conn.execute("SELECT count(*) FROM problems").fetchone()[0] == 0
        assert b.harness_stats()["dbagent"]["malformed"] == 0
    assert _texts(bank) == ["hello", "wor"]
