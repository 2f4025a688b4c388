"""Hermes Agent: what the hand-written store must read as, and how it reads while Hermes writes.

The store is kept as SQL text (``fixtures/hermes/hand/hermes-state.sql``); each test builds ``state.db``
(and the ``work`` profile's) under a temporary ``$HERMES_HOME``.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from harvester.parsers import hermes
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "hermes" / "hand"
S1, S2, S3, S4 = "20260829_104000_a1b2c3", "20260829_104010_d4e5f6", "20260829_120000_0a0b0c", "20260829_123000_0d0e0f"
S5, S6, S7, PROFILE = "20260830_090000_112233", "20260830_091500_445566", "20260831_200000_778899", "20260901_080000_aabbcc"
REPO = "/home/dev/src/demo-repo"


def build(home: Path) -> Path:
    for sql in HAND.rglob("hermes-state.sql"):
        target = home / sql.relative_to(HAND).with_name("state.db")
        target.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(target)
        conn.executescript(sql.read_text())
        conn.commit()
        conn.close()
    return home / "state.db"


def read(tmp: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    report = scan(tmp, bank, (hermes.NAME,), env={"HOME": str(tmp), "HERMES_HOME": str(tmp / "hermes")})
    return bank, report.harnesses[hermes.NAME].problems


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    db = build(tmp_path / "hermes")
    bank, problems = read(tmp_path)
    assert problems == 0
    return db, bank


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def test_roots_follow_hermes_home_and_the_platform() -> None:
    home = Path("/home/u")
    assert hermes.roots_for("linux", {}, home) == [home / ".hermes"]
    assert hermes.roots_for("darwin", {"HERMES_HOME": "/srv/h"}, home) == [Path("/srv/h")]
    assert hermes.roots_for("win32", {"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, home) == [
        Path("C:/Users/u/AppData/Local/hermes")]


def test_sessions_their_places_titles_and_ends(store: tuple[Path, Path]) -> None:
    _, bank = store
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"], s["state"])
           for s in sessions_of(bank)}
    assert got == {
        S1: (REPO, "Run the test suite", "ai", "hermes-4-70b", "ended"),
        S2: (REPO, None, None, "hermes-4-70b", "ended"),
        S3: (REPO, "Refactor the date parser", "ai", "hermes-4-70b", "ended"),
        S4: (REPO, "Refactor the date parser #2", "ai", "hermes-4-70b", "ended"),
        S5: ("/home/dev/src/other-repo", "Explain the build", "ai", "hermes-4-70b", "ended"),
        S6: ("/home/dev/src/other-repo", "Explain the build (branch)", "ai", "hermes-4-70b", "unknown"),
        S7: (None, "what is in this picture?", "first-prompt", "hermes-4-405b", "ended"),
        PROFILE: ("/home/dev/src/work-repo", "summarize the open issues", "first-prompt", "hermes-4-70b", "unknown"),
    }
    first = session_of(bank, S1)
    assert first["branch"] == "main" and first["meta"]["end_reason"] == "agent_close"
    assert session_of(bank, S6)["meta"]["last_turn"] == "open"  # the user's message waits for an answer


def test_lineage_subagent_branch_and_compression(store: tuple[Path, Path]) -> None:
    _, bank = store
    lineage = {s["native_id"]: (s["parent_native_id"], s["parent_kind"], (s["meta"] or {}).get("lineage"))
               for s in sessions_of(bank) if s["parent_native_id"]}
    assert lineage == {S2: (S1, "subagent", "delegate"), S4: (S3, "fork", "continued"),
                       S6: (S5, "fork", "branched")}
    # A delegated run's "user" is the parent agent's task.
    assert shape(bank, S2)[0] == ("system", "meta", "Find the test file for t")
    # The continuation starts with the summary the compression wrote.
    assert [k for _, k, _ in shape(bank, S4)] == ["compaction", "text", "text"]


def test_a_turn_with_reasoning_a_tool_and_its_result(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert shape(bank, S1) == [
        ("user", "text", "run the tests and tell m"), ("assistant", "thinking", "The user wants the test r"[:24]),
        ("assistant", "tool_call", "terminal: pytest -q"), ("tool", "tool_result", '{"output": "1 failed, 41'),
        ("assistant", "text", "One test fails: test_par")]
    call, result = events_of(bank, S1)[2:4]
    assert call["tool_input"] == {"command": "pytest -q"} and result["tool_call_id"] == call["tool_call_id"]
    assert result["tool_name"] == "terminal" and not result["is_error"]
    failed = [e for e in events_of(bank, S2) if e["kind"] == "tool_result"]
    assert [e["is_error"] for e in failed] == [True]  # {"error": ...}


def test_compaction_in_place_reads_the_summary_once_and_no_copies(store: tuple[Path, Path]) -> None:
    _, bank = store
    texts = [(e["kind"], e["text"][:22]) for e in events_of(bank, S5)]
    assert texts.count(("text", "build, test and dist.")) == 1  # the kept tail re-inserted is not read again
    assert ("compaction", "[CONTEXT SUMMARY]: The") in texts
    undone = [e for e in events_of(bank, S5) if (e["meta"] or {}).get("rewound")]
    assert [e["text"] for e in undone] == ["It uploads to PyPI."]


def test_content_parts_and_system_rows(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert shape(bank, S7) == [("system", "meta", "[System: the user switch"),
                               ("user", "text", "what is in this picture?"),
                               ("assistant", "thinking", "An image of a cat."), ("assistant", "text", "A cat on a keyboard.")]


def test_rows_written_later_are_read_once_and_a_resume_reopens(store: tuple[Path, Path], tmp_path: Path) -> None:
    db, bank = store
    before = len(events_of(bank, S1))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (S1,))  # a resume
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'and now?', ?)",
                 (S1, 1_788_100_000.0))
    conn.commit()
    conn.close()
    read(tmp_path)
    read(tmp_path)  # nothing new: nothing added
    events = events_of(bank, S1)
    assert len(events) == before + 1 and events[-1]["text"] == "and now?"
    assert session_of(bank, S1)["meta"]["last_turn"] == "open"
    fresh, _ = read(tmp_path, "fresh.sqlite")  # a clean scan reads the same
    assert [e["uid"] for e in events_of(fresh, S1)] == [e["uid"] for e in events]


def test_unknown_roles_and_tables_are_drift(tmp_path: Path) -> None:
    db = build(tmp_path / "hermes")
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'developer', 'x', 1)", (S1,))
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 1
    batch = hermes.parse(None, [], {})  # type: ignore[arg-type]
    assert batch.problems == []
    from harvester.parsers.base import Record
    odd = hermes.parse(None, [Record(1, b'{"table": "gateway_routing", "row": {}}')], {})  # type: ignore[arg-type]
    assert [p.kind for p in odd.problems] == ["unknown_type"]
    assert {e["text"] for e in events_of(bank, S1)} >= {"One test fails: test_parse_dates."}


# The transcript files of builds before state.db held everything (and of installs that never had one):
# fixtures/hermes/hand-transcripts, a $HERMES_HOME with sessions/ and no state.db.
TRANSCRIPTS = FIXTURES / "hermes" / "hand-transcripts"
GATEWAY, CLI = "20260403_153620_5a3e2ff1", "20260218_101500_ab12cd"


def read_transcripts(tmp: Path, with_db: bool = False) -> tuple[Path, int]:
    home = tmp / "hermes"
    shutil.copytree(TRANSCRIPTS, home)
    if with_db:
        build(home)
    return read(tmp)


def test_gateway_transcripts_and_cli_snapshots_without_a_database(tmp_path: Path) -> None:
    bank, problems = read_transcripts(tmp_path)
    assert problems == 0
    sessions = {s["native_id"]: s for s in sessions_of(bank)}
    assert set(sessions) == {GATEWAY, CLI}  # the snapshot of the gateway session is redundant beside its .jsonl
    assert (sessions[GATEWAY]["model"], sessions[GATEWAY]["meta"]["source"]) == ("anthropic/claude-sonnet-4", "telegram")
    assert sessions[GATEWAY]["title"] == "Is the nightly backup job still running on the build box?"
    assert sessions[GATEWAY]["started_at"] == "2026-04-03T15:36:20.118Z"
    assert shape(bank, GATEWAY) == [(role, kind, text[:24]) for role, kind, text in [
        ("user", "text", "Is the nightly backup job"), ("assistant", "thinking", "Check the cron log for th"),
        ("assistant", "tool_call", "terminal: tail -n 5 /var/"), ("tool", "tool_result", '{"output": "2026-04-03 0'),
        ("assistant", "text", "Yes: last night's backup "), ("user", "text", "And this alert from the d"),
        ("assistant", "thinking", "The image shows disk usag"), ("assistant", "text", "The alert is the disk at ")]]
    assert events_of(bank, GATEWAY)[5]["text"] == "And this alert from the dashboard?\n[image_url]"
    assert (sessions[CLI]["model"], sessions[CLI]["meta"]["source"]) == ("nousresearch/hermes-4-70b", "cli")
    assert sessions[CLI]["started_at"] == "2026-02-18T10:15:00.501Z"
    events = events_of(bank, CLI)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[6]["is_error"] and events[6]["tool_call_id"] == "call_c02"


def test_transcripts_beside_a_database_are_left_to_it(tmp_path: Path) -> None:
    """Builds with state.db wrote the gateway transcript too: the database is read, the files are not."""
    bank, problems = read_transcripts(tmp_path, with_db=True)
    assert problems == 0
    assert not {GATEWAY, CLI} & {s["native_id"] for s in sessions_of(bank)}


def test_a_transcript_appended_later_adds_only_the_new_lines(tmp_path: Path) -> None:
    bank, _ = read_transcripts(tmp_path)
    before = len(events_of(bank, GATEWAY))
    with (tmp_path / "hermes" / "sessions" / f"{GATEWAY}.jsonl").open("a") as out:
        out.write(json.dumps({"role": "user", "content": "Prune them.", "timestamp": "2026-04-03T15:41:00"}) + "\n")
    bank, problems = read(tmp_path)
    assert problems == 0 and len(events_of(bank, GATEWAY)) == before + 1


def test_unknown_transcript_roles_are_drift() -> None:
    from harvester.parsers.base import Record, SourceRef
    ref = SourceRef(Path("/h/sessions/20260101_000000_abcdef.jsonl"), Path("/h"), "transcript")
    batch = hermes.parse(ref, [Record(1, b'{"role": "narrator", "content": "x"}'), Record(2, b'[1]')], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "malformed"]


def test_a_file_diverted_beside_the_database_is_a_source_of_its_own(tmp_path: Path) -> None:
    """A scan and the service's file events agree: beside state.db a session file is the diverted reading, not
    skipped as the gateway's copy would be (the first source kind that matches it is shadowed there)."""
    from harvester.capture.sources import discover, match
    from harvester.parsers import HARNESSES

    (tmp_path / "sessions").mkdir()
    diverted = tmp_path / "sessions" / "20261120_101000_beef01.jsonl"
    diverted.write_text('{"role": "user", "content": "hi"}\n')
    assert match(HARNESSES["hermes"], tmp_path, diverted).spec.variant == "transcript"
    (tmp_path / "state.db").write_bytes(b"")
    assert match(HARNESSES["hermes"], tmp_path, diverted).spec.variant == "diverted"
    assert [f.spec.variant for f in discover(HARNESSES["hermes"], [tmp_path]) if f.path == diverted] == ["diverted"]
