"""Search and listings on banks too large to rank every match (harvester/bank/sqlite_recall.py): past
RANKED_AT_MOST matches the newest are shown and counted as "more than"; words in too many events to weigh
are matched, not weighed; every indexed word stays findable and phrases stay phrases; migration 7 upgrades a
bank that holds events; the listing, status's counts and the service's directories say what the tables hold;
reading commands import what they use."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harvester.bank import open_bank, sqlite_recall
from harvester.bank.migrations import MIGRATIONS
from harvester.bank.scope import EVERYTHING, Scope
from harvester.bank.sqlite_recall import plain_words
from harvester.capture.contract import Cursor, SessionWrite, Write
from harvester.cli import cli
from harvester.model import Event, SessionPatch
from harvester.parsers import HARNESSES
from harvester.recall.views import Recall, search_history
from tests.helpers import as_migration_14_left_it

BANK_ID = "coding-agent::demo"


def _write(bank: object, harness: str, session: str, texts: list[str], cwd: str = "/work/demo",
           bank_id: str = BANK_ID, day: int = 1) -> None:
    """One session of ``texts`` (a source of its own), its events a minute apart on ``day``."""
    cursor = Cursor(harness, f"/src/{session}.jsonl", "jsonl")
    events = [Event(session, f"{session}:{i}", "user" if i % 2 else "assistant", "text", text,
                    ts=f"2026-01-{day:02d}T10:{i:02d}:00.000Z") for i, text in enumerate(texts)]
    patch = SessionPatch(session, cwd=cwd, started_at=events[0].ts, updated_at=events[-1].ts)
    bank.apply(Write(cursor, [SessionWrite(harness, patch, bank_id)], events, [], is_new_source=True))  # type: ignore[attr-defined]


def _texts(bank: object) -> dict[int, str]:
    return dict(bank.conn.execute("SELECT id, text FROM events ORDER BY id").fetchall())  # type: ignore[attr-defined]


def test_more_matches_than_are_ranked_are_the_newest_and_counted_as_more(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_recall, "RANKED_AT_MOST", 5)
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "codex", "s1", [f"zebra step {i}" for i in range(8)] + ["okapi", "okapi zebra", "okapi"])
        newest = [i for (i,) in bank.conn.execute(
            "SELECT id FROM events WHERE text LIKE '%zebra%' ORDER BY id DESC")]
        page = bank.search_page('"zebra"', EVERYTHING, 3)
        assert (page.total, page.more, page.ranked) == (5, True, False)
        assert [h["seq"] for h in page.hits] == newest[:3]  # seq is the id here: one session
        whole = bank.search_page('"zebra"', EVERYTHING, 20)  # a limit past it counts that far
        assert (whole.total, whole.more, whole.ranked) == (9, False, False) and len(whole.hits) == 9
        few = bank.search_page('"okapi"', EVERYTHING, 2)
        assert (few.total, few.more, few.ranked) == (3, False, True) and len(few.hits) == 2

        out = CliRunner().invoke(cli, ["--bank", str(tmp_path / "bank.sqlite"), "search", "zebra", "--limit", "3"])
        assert out.output.startswith("More than 5 matches for 'zebra' in every repository, too many to rank; "
                                     "the 3 stored last")
        answer = search_history(Recall(bank, Scope(BANK_ID, bank_id=BANK_ID)), "zebra", limit=3)
        assert "More than 5 matches for 'zebra'" in answer and "too many to rank" in answer
        assert "3 matches for 'okapi'" in search_history(Recall(bank, EVERYTHING), "okapi")


def test_every_indexed_word_is_found_whichever_way_a_query_goes(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Small thresholds put queries on every path (ranked, newest first, weighed or not): the matches are
    always exactly the events that hold every word (or the phrase), and the count says how many."""
    monkeypatch.setattr(sqlite_recall, "RANKED_AT_MOST", 6)
    monkeypatch.setattr(sqlite_recall, "WEIGHED_AT_MOST", 4)
    rng = random.Random(3)
    vocabulary = [f"w{n}" for n in range(30)]
    weights = [1 / (n + 1) for n in range(30)]  # a few common words, many rare ones
    with open_bank(tmp_path / "bank.sqlite") as bank:
        for s in range(6):
            _write(bank, "codex", f"s{s}", [" ".join(rng.choices(vocabulary, weights, k=6)) for _ in range(8)],
                   day=s + 1)
        texts = _texts(bank)
        words = {i: text.split() for i, text in texts.items()}

        def found(query: str) -> set[int]:
            page = bank.search_page(plain_words(query), EVERYTHING, 1000)
            ids = {bank.conn.execute("SELECT e.id FROM events e JOIN sessions s ON s.id = e.session_id "
                                     "WHERE s.native_id = ? AND e.seq = ?", (h["session"], h["seq"])).fetchone()[0]
                   for h in page.hits}
            assert not page.more and page.total == len(ids) == len(page.hits)
            return ids

        for word in vocabulary:
            assert found(word) == {i for i, ws in words.items() if word in ws}, word
        for a, b in [("w0", "w1"), ("w0", "w17"), ("w5", "w22"), ("w2", "w3")]:
            assert found(f"{a} {b}") == {i for i, ws in words.items() if a in ws and b in ws}
            assert found(f'"{a} {b}"') == {i for i, ws in words.items()
                                               if any(ws[k:k + 2] == [a, b] for k in range(len(ws) - 1))}


def test_matches_of_words_too_common_to_weigh_are_shown_oldest_first(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_recall, "WEIGHED_AT_MOST", 2)
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "codex", "late", ["common word", "common common common"], day=9)
        _write(bank, "codex", "early", ["common", "common and a long text after it, common"], day=2)
        hits = bank.search_page('"common"', EVERYTHING, 10).hits
        assert [(h["session"], h["seq"]) for h in hits] == [("early", 1), ("early", 2), ("late", 1), ("late", 2)]
        # Beside a rarer word, the common one is matched, not weighed: only events holding both are found.
        assert [(h["session"], h["seq"]) for h in bank.search_page('"common" "word"', EVERYTHING, 10).hits] == [
            ("late", 1)]


def test_migration_7_upgrades_a_bank_that_holds_events(tmp_path: Path) -> None:
    path = tmp_path / "bank.sqlite"
    with open_bank(path) as bank:
        _write(bank, "codex", "s1", ["alpha beta", "gamma alpha", "delta"])
        _write(bank, "pi", "s2", ["beta epsilon"], cwd="/work/other", bank_id="coding-agent::other", day=3)
        before = {w: len(bank.search_events(f'"{w}"', EVERYTHING, 100)) for w in
                  ("alpha", "beta", "gamma", "delta", "epsilon")}
        as_migration_14_left_it(bank.conn)  # what migration 15 added
        bank.conn.executescript(
            "DROP INDEX events_hit; DROP INDEX sessions_recent; "
            # and what migration 8 added after it (the sinks' outbox)
            "DROP INDEX sessions_changed; ALTER TABLE sessions DROP COLUMN changed; DROP TABLE change_clock; "
            "DROP TABLE sinks; DROP TABLE sink_documents; "
            # and what migration 9 added (the team bank's outbox)
            "DROP TRIGGER team_events_deleted; DROP TRIGGER team_session_deleted; DROP TABLE team_sessions; "
            "DROP TABLE bank_facts; ALTER TABLE events DROP COLUMN changed; "
            # and what migrations 10 to 14 added (the recall key lives in bank_facts; the archive's digests and
            # damage; forget's export folders, record tombstones and pending work; each session's repository
            # identity)
            "ALTER TABLE archive_frames DROP COLUMN digest; DROP TABLE archive_damage; "
            "DROP TABLE export_folders; DROP TABLE forgotten_records; DROP TABLE pending_purges; "
            "DROP INDEX sessions_repo_key; ALTER TABLE sessions DROP COLUMN repo_key; "
            "ALTER TABLE directories DROP COLUMN repo_key; PRAGMA user_version = 6;")
    with open_bank(path) as bank:  # as migration 6 left it, with events
        assert bank.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        indexes = {n for (n,) in bank.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"events_hit", "sessions_recent"} <= indexes
        assert {w: len(bank.search_events(f'"{w}"', EVERYTHING, 100)) for w in before} == before == {
            "alpha": 2, "beta": 2, "gamma": 1, "delta": 1, "epsilon": 1}
        assert [s["native_id"] for s in bank.scoped_sessions(EVERYTHING, 10)] == ["s2", "s1"]


def test_a_listing_shows_what_the_whole_rows_say(tmp_path: Path) -> None:
    from harvester.cli.render import _when

    with open_bank(tmp_path / "bank.sqlite") as bank:
        for n in range(5):
            _write(bank, "codex", f"s{n}", ["text"] * (n + 1), day=5 - n if n != 3 else 9)
        whole = bank.scoped_sessions(EVERYTHING, 100)
        listed = bank.scoped_sessions(EVERYTHING, 100, listed=True)
        assert [s["native_id"] for s in listed] == [s["native_id"] for s in whole] == ["s3", "s0", "s1", "s2", "s4"]
        for short, full in zip(listed, whole, strict=True):
            assert {k: full[k] for k in sqlite_recall.LISTED_COLUMNS} == {k: short[k] for k in sqlite_recall.LISTED_COLUMNS}
            assert short["updated_local"] == _when(full["updated_at"])[:16]


def test_status_counts_are_the_tables_counts_after_writes_and_forget(tmp_path: Path) -> None:
    from harvester.bank.forget import choose, forget

    def counted(bank: object) -> dict[str, tuple[int, int]]:
        stats = bank.harness_stats()  # type: ignore[attr-defined]
        return {h: (e["sessions"], e["events"]) for h, e in stats.items() if e["sessions"]}

    def truth(bank: object) -> dict[str, tuple[int, int]]:
        return {h: (s, e) for h, s, e in bank.conn.execute(  # type: ignore[attr-defined]
            "SELECT s.harness, count(DISTINCT s.id), count(e.id) FROM sessions s LEFT JOIN events e "
            "ON e.session_id = s.id GROUP BY s.harness")}

    with open_bank(tmp_path / "bank.sqlite", archive=False) as bank:
        _write(bank, "codex", "c1", ["a", "b", "c"])
        _write(bank, "codex", "c2", ["d"])
        _write(bank, "pi", "p1", ["e", "f"])
        assert counted(bank) == truth(bank) == {"codex": (2, 4), "pi": (1, 2)}
        forget(bank, choose(bank, "c1"))
        assert counted(bank) == truth(bank) == {"codex": (1, 1), "pi": (1, 2)}
        bank.conn.execute("UPDATE sources SET status = 'missing' WHERE path = '/src/p1.jsonl'")
        assert bank.harness_stats()["pi"]["sessions_originals_gone"] == 1


def test_known_directories_follow_every_write(tmp_path: Path) -> None:
    path = tmp_path / "bank.sqlite"
    with open_bank(path) as bank, open_bank(path) as other:
        _write(bank, "aider", "a1", ["x"], cwd="/work/one")
        assert bank.known_directories() == ["/work/one"]
        _write(bank, "aider", "a2", ["x"], cwd="/work/two")  # this connection's write
        assert bank.known_directories() == ["/work/one", "/work/two"]
        _write(other, "aider", "a3", ["x"], cwd="/work/three")  # another's
        assert bank.known_directories() == ["/work/one", "/work/three", "/work/two"]


def test_the_service_looks_at_processes_only_when_a_session_is_open(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from watchdog.observers import Observer

    from harvester import config
    from harvester.capture.ingest import Ingestor
    from harvester.service import run as service

    calls: list[int] = []
    monkeypatch.setattr(service, "agent_processes", lambda harnesses: calls.append(1) or [])
    env = {"HOME": str(tmp_path), "HARVESTER_BANK": str(tmp_path / "bank.sqlite")}
    s = service.Service(config.load(env, harness_names=HARNESSES), env, tmp_path)
    s.bank = open_bank(tmp_path / "bank.sqlite")
    s.ingestor = Ingestor(s.bank, s.settings.bank_id_template)
    s.observer = Observer()
    try:
        _write(s.bank, "codex", "old", ["x"])
        s.bank.set_states([(1, "ended")])
        s.check_sessions()
        assert calls == []
        s.bank.set_states([(1, "live")])
        s.check_sessions()
        assert calls == [1]
    finally:
        s.ingestor.close()
        s.bank.close()


_LOADED = """
import runpy, sys
sys.argv = ["harvester", *sys.argv[1:]]
try:
    runpy.run_module("harvester", run_name="__main__")
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""


# What writing needs and reading does not: the model's dataclasses, git identities, the archive's compression and
# digests (OpenSSL's hashlib).
_WRITE_SIDE = {"harvester.model", "harvester.gitident", "zstandard", "hashlib"}
# status imports every parser (each harness's roots are there), not what parsing, finding sources, editing agents'
# files (with none of them there to read), or writing unit files needs.
_STATUS_NEEDS_NOT = {"zstandard", "hashlib", "msgpack", "difflib", "tomllib", "harvester.capture.sources", "harvester.connect.jsonc",
                     "harvester.connect.toml_edit", "harvester.connect.yaml_edit", "importlib.resources"}


@pytest.mark.parametrize(("command", "absent"), [
    (["search", "zebra"], {"git", "structlog", "harvester.parsers", "harvester.capture.ingest", "asyncio", *_WRITE_SIDE}),
    (["sessions"], {"git", "structlog", "harvester.parsers", "harvester.capture.ingest", "asyncio", *_WRITE_SIDE}),
    (["status"], {"git", "structlog", "harvester.capture.ingest", "harvester.service", "apscheduler", "yaml", "tomlkit",
                  *_STATUS_NEEDS_NOT}),
])
def test_reading_commands_import_only_what_they_use(tmp_path: Path, command: list[str], absent: set[str]) -> None:
    """Start-up is most of a reading command's time (bench/bench_search.py): these stay out of it."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "codex", "s1", ["zebra"])
    env = {"HOME": str(tmp_path), "HARVESTER_BANK": str(tmp_path / "bank.sqlite"), "PATH": "/usr/bin:/bin",
           "HARVESTER_RUNTIME_DIR": str(tmp_path / "run"), "HARVESTER_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("")
    done = subprocess.run([sys.executable, "-c", _LOADED, *command], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    loaded = set(done.stderr.split())
    assert done.stdout and "harvester.cli" in loaded, done.stderr[-2000:]
    assert absent & loaded == set()


def test_logging_set_up_before_structlog_is_imported_applies(tmp_path: Path) -> None:
    code = ("import io, sys\nfrom harvester import log\nstream = io.StringIO()\nlog.configure('info', stream=stream)\n"
            "assert 'structlog' not in sys.modules\nlog.get_logger('x').info('hello there')\n"
            "log.get_logger('x').debug('not shown')\nprint(stream.getvalue())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "hello there" in out and "not shown" not in out


def test_a_large_import_leaves_the_index_in_one_segment_and_every_word_found(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from harvester.bank import sqlite_index
    from tests.helpers import ClaudeSession, scan

    def segments(path: Path) -> int:
        with open_bank(path) as bank:
            return bank.conn.execute("SELECT count(DISTINCT segid) FROM events_fts_idx").fetchone()[0]

    home = tmp_path / "home"
    words = [f"token{n}" for n in range(12)]
    for n in range(6):  # a source each: a transaction, and a segment, each
        s = ClaudeSession(home, f"/work/p{n}")
        s.write(s.user(f"{words[n]} {words[n + 6]}"), s.assistant(f"answer {words[n]}"))
    monkeypatch.setattr(sqlite_index, "SETTLE_AFTER_EVENTS", 100)  # 12 events: not a large import
    scan(home, tmp_path / "small.sqlite")
    assert segments(tmp_path / "small.sqlite") > 1
    monkeypatch.setattr(sqlite_index, "SETTLE_AFTER_EVENTS", 10)
    monkeypatch.setattr(sqlite_index, "MERGE_PAGES", 1)  # many steps, one transaction each
    scan(home, tmp_path / "large.sqlite")
    assert segments(tmp_path / "large.sqlite") == 1
    with open_bank(tmp_path / "large.sqlite") as bank:
        assert {w: len(bank.search_events(f'"{w}"', EVERYTHING, 10)) for w in words} == {
            w: 2 if n < 6 else 1 for n, w in enumerate(words)}
        assert not bank.settle_index(12)  # one segment: nothing to do
