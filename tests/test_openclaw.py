"""OpenClaw: the SQLite era (2026.8.1+) beside the JSONL era, through harvester/parsers/openclaw.py.

``fixtures/pi/openclaw/hand`` is laid out like ``~/.openclaw``: the JSONL files of the older releases
and ``agents/main/agent/openclaw-agent.sql`` (the agent database as SQL text, a compressed row as an
X'..' literal), which the tests build into ``openclaw-agent.sqlite``. ``hand/README.md`` says what each
session must read as; the golden file holds the whole reading, these tests the points that matter.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path, PurePath
from typing import Any

import orjson
import pytest
import zstandard

from harvester.parsers import openclaw
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, event_identities, events_of, scan, sessions_of

HAND = FIXTURES / "pi" / "openclaw" / "hand"
SQL = HAND / "agents" / "main" / "agent" / "openclaw-agent.sql"
W1 = "7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"  # JSONL era, imported into SQLite, then two more turns
S0 = "1a2b3c4d-5e6f-4a70-8b81-92a3b4c5d6e7"  # agent:main:main yesterday (rolled over)
S1 = "5b0c1d2e-3f40-4a51-8b62-7c8d9e0fa1b2"  # agent:main:main today: branch, label, reset, spawn
S2 = "3c4d5e6f-7a8b-4c9d-8eaf-b0c1d2e3f405"  # the subagent S1 spawned
DB_PATH = PurePath("/s/agents/main/agent/openclaw-agent.sqlite")
REF = SourceRef(DB_PATH, PurePath("/s/agents"), openclaw.DB)


def state_dir(tmp: Path, jsonl: bool = True, db: bool = True) -> Path:
    """``~/.openclaw`` under ``tmp/home``: the JSONL files and/or the built database."""
    root = tmp / "home" / ".openclaw"
    shutil.copytree(HAND, root, ignore=shutil.ignore_patterns("*.md", "*.sql", *([] if jsonl else ["*.jsonl"])))
    if db:
        build(root / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    return root


def build(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SQL.read_text())
        conn.commit()
    finally:
        conn.close()


def read(tmp: Path, bank: str = "bank.sqlite") -> tuple[Path, Any]:
    path = tmp / bank
    report = scan(tmp / "home", path, (openclaw.NAME,), env={"HOME": str(tmp / "home")})
    return path, report.harnesses[openclaw.NAME]


def by_uid(bank: Path, session: str) -> dict[str, dict[str, Any]]:
    return {e["uid"]: e for e in events_of(bank, session)}


def event_row(rid: int, session: str, seq: int, entry: dict[str, Any], since: int = 0) -> Record:
    row = {"rid": rid, "since": since, "session_id": session, "seq": seq, "event_json": orjson.dumps(entry).decode(),
           "event_zstd": None, "event_utf8_bytes": None}
    return Record(rid, orjson.dumps({"table": "event", "row": row}))


def entry(eid: str, parent: str | None, role: str, text: str, minute: int = 0) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
    if role == "assistant":
        message |= {"model": "m", "stopReason": "stop"}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-09-21T07:{minute:02d}:00.000Z",
            "message": message}


# -- the hand-written store --------------------------------------------------------------------------
def test_the_database_reads_without_problems(tmp_path: Path) -> None:
    state_dir(tmp_path)
    bank, report = read(tmp_path)
    assert report.problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} >= {S0, S1, S2, W1}


def test_rows_are_pi_entries_and_a_compressed_row_is_decoded(tmp_path: Path) -> None:
    state_dir(tmp_path, jsonl=False)
    bank, _ = read(tmp_path)
    events = by_uid(bank, S1)
    assert events["b0000001"]["text"] == "model: openai/gpt-5.2"  # model_change
    assert "b0000002" not in events  # custom: bookkeeping
    assert (events["b0000003"]["role"], events["b0000003"]["kind"]) == ("user", "text")
    assert events["b0000004"]["kind"] == "tool_call" and events["b0000004"]["tool_name"] == "read"
    result = events["b0000005"]  # stored as event_zstd
    assert result["kind"] == "tool_result" and "30. Step 30 of the release" in result["text"]
    assert events["b000000c"]["text"] == "label: final list"
    session = next(s for s in sessions_of(bank) if s["native_id"] == S1)
    assert session["cwd"] == "/home/dev/src/demo-repo" and session["model"] == "gpt-5.2"
    assert session["meta"]["agent"] == "main" and session["meta"]["format_version"] == 4


def test_a_leaf_record_is_a_branch_navigation(tmp_path: Path) -> None:
    """The user went back to b0000006; the next prompt's parent is the leaf record, its target counts."""
    state_dir(tmp_path, jsonl=False)
    bank, _ = read(tmp_path)
    events = by_uid(bank, S1)
    assert "b0000009" not in events
    assert events["b0000007"]["meta"] == {"abandoned": True} and events["b0000008"]["meta"] == {"abandoned": True}
    assert events["b000000a"]["meta"] == {"branched_from": "b0000006"}
    assert events["b000000b"]["meta"] is None


def test_a_reset_is_a_boundary_in_its_place(tmp_path: Path) -> None:
    state_dir(tmp_path, jsonl=False)
    bank, _ = read(tmp_path)
    uids = [e["uid"] for e in events_of(bank, S1)]
    reset = by_uid(bank, S1)["b000000d"]
    assert (reset["role"], reset["kind"], reset["text"]) == ("system", "compaction", "history reset (reset)")
    assert reset["meta"] == {"record": "reset", "reason": "reset"}
    assert uids.index("b000000c") < uids.index("b000000d") < uids.index("b000000e")
    assert by_uid(bank, S1)["b000000e"]["meta"] is None  # the tree goes on through the reset


def test_windows_give_titles_parents_and_ends(tmp_path: Path) -> None:
    state_dir(tmp_path, jsonl=False)
    bank, _ = read(tmp_path)
    sessions = {s["native_id"]: s for s in sessions_of(bank)}
    today, yesterday, child, chat = sessions[S1], sessions[S0], sessions[S2], sessions[W1]
    assert (today["title"], today["title_source"]) == ("Release checklist", "custom")  # the node's label
    assert today["meta"]["previous_session"] == S0 and today["meta"]["window_reason"] == "rollover"
    assert yesterday["state"] == "ended" and yesterday["title"] == "good morning"  # rolled over
    assert (child["parent_native_id"], child["parent_kind"]) == (S1, "subagent")
    assert (child["title"], child["title_source"]) == ("changelog check", "ai")
    assert child["meta"]["created_via"] == "spawn"
    assert chat["state"] == "ended" and chat["meta"]["archived_at"] == "2026-09-21T09:30:00.000Z"
    assert today["state"] != "ended"


def test_a_fork_names_its_source_session() -> None:
    row = {"rid": 1, "changed": 5, "session_id": "child", "session_key": "agent:main:fork", "current_session_id":
           "child", "fork_source_session_id": "parent", "parent_session_id": "other"}
    batch = openclaw.parse(REF, [Record(1, orjson.dumps({"table": "window", "row": row}))], {})
    patch = batch.sessions["child"]
    assert (patch.parent_native_id, patch.parent_kind, patch.state) == ("parent", "fork", None)


# -- both eras ---------------------------------------------------------------------------------------
def test_an_imported_transcript_adds_only_what_is_new(tmp_path: Path) -> None:
    """W1 was read from its JSONL file first; the database holds the same entries (imported) and two
    more: the bank gains those two, no copy of the rest."""
    state_dir(tmp_path, db=False)
    bank, _ = read(tmp_path)
    before = [e["uid"] for e in events_of(bank, W1)]
    build(tmp_path / "home" / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    _, report = read(tmp_path)
    after = [e["uid"] for e in events_of(bank, W1)]
    assert report.problems == 0
    assert after == [*before, "d100000a", "d100000b"]
    assert len(after) == len(set(after))


def test_either_order_of_the_eras_gives_the_same_events(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    state_dir(tmp_path / "a")
    state_dir(tmp_path / "b", jsonl=False)
    both, _ = read(tmp_path / "a")
    db_only, _ = read(tmp_path / "b")
    # The JSONL era knows nothing the database lacks: reading it too changes no event of W1.
    assert [e for e in event_identities(both) if e[1] == W1] == [e for e in event_identities(db_only) if e[1] == W1]


def test_a_database_from_before_compression_is_read(tmp_path: Path) -> None:
    """Agent schemas before 23 (2026.8.1 wrote 19) have ``event_json TEXT NOT NULL`` and no compressed
    columns; the same query reads them."""
    root = state_dir(tmp_path, jsonl=False, db=False)
    conn = sqlite3.connect(root / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    ddl = SQL.read_text().split("INSERT", 1)[0]
    conn.executescript(ddl.replace("event_json TEXT,\n  created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes "
                                   "INTEGER, navigation_json TEXT,", "event_json TEXT NOT NULL, created_at INTEGER NOT NULL,"))
    assert "event_zstd" not in [c[1] for c in conn.execute("PRAGMA table_info(transcript_events)")]
    header = {"type": "session", "version": 3, "id": "old", "timestamp": "2026-08-02T10:00:00.000Z", "cwd": "/r"}
    for seq, item in enumerate([header, entry("e1", None, "user", "from 2026.8.1")]):
        conn.execute("INSERT INTO transcript_events VALUES ('old', ?, ?, 0)", (seq, orjson.dumps(item).decode()))
    conn.commit()
    conn.close()
    bank, report = read(tmp_path)
    assert report.problems == 0 and [e["text"] for e in events_of(bank, "old")] == ["from 2026.8.1"]


def test_an_agent_database_without_transcripts_is_no_problem(tmp_path: Path) -> None:
    """2026.7 and before kept auth and memory in ``openclaw-agent.sqlite`` (agent schema 1) and the
    transcripts in JSONL: the database has none of the tables read, which is no unexpected shape."""
    root = state_dir(tmp_path, db=False)
    conn = sqlite3.connect(root / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    conn.execute("CREATE TABLE schema_meta (meta_key TEXT PRIMARY KEY, schema_version INTEGER)")
    conn.execute("INSERT INTO schema_meta VALUES ('primary', 1)")
    conn.commit()
    conn.close()
    bank, report = read(tmp_path)
    assert (report.problems, report.failed, report.sources) == (0, 0, 5)
    assert len(sessions_of(bank)) == 4  # the JSONL files


# -- the watermark -----------------------------------------------------------------------------------
def test_a_second_scan_adds_nothing(tmp_path: Path) -> None:
    state_dir(tmp_path)
    bank, first = read(tmp_path)
    rows = event_identities(bank)
    _, again = read(tmp_path)
    assert first.events_added > 0 and again.events_added == 0
    assert event_identities(bank) == rows


def test_rows_appended_later_are_read_from_the_watermark(tmp_path: Path) -> None:
    root = state_dir(tmp_path, jsonl=False)
    bank, _ = read(tmp_path)
    conn = sqlite3.connect(root / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    conn.execute("PRAGMA journal_mode=WAL")  # as OpenClaw keeps it
    new = entry("b0000012", "b0000011", "user", "and the announcement?", 20)
    conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, 99, ?, 0)",
                 (S1, orjson.dumps(new).decode()))
    conn.commit()
    _, report = read(tmp_path)
    conn.close()
    assert report.events_added == 1 and report.problems == 0
    events = events_of(bank, S1)
    assert events[-1]["uid"] == "b0000012" and events[-1]["meta"] is None  # no branch: pi's state was kept


def test_the_boundary_row_read_again_changes_nothing() -> None:
    rows = [event_row(1, "s", 0, {"type": "session", "version": 4, "id": "s", "timestamp": "2026-09-21T07:00:00Z",
                                  "cwd": "/r"}),
            event_row(2, "s", 1, entry("e1", None, "user", "hi")),
            event_row(3, "s", 2, entry("e2", "e1", "assistant", "hello"))]
    first = openclaw.parse(REF, rows, {})
    state = orjson.loads(orjson.dumps(first.state))  # as the cursor keeps it
    more = [event_row(3, "s", 2, entry("e2", "e1", "assistant", "hello"), since=3),
            event_row(4, "s", 3, entry("e3", "e2", "user", "again", 1), since=3)]
    second = openclaw.parse(REF, more, state)
    assert [e.uid for e in first.events] == ["e1", "e2"]
    assert [e.uid for e in second.events] == ["e3"] and second.marks == [] and second.events[0].meta is None


def test_a_table_read_again_from_the_start_starts_afresh() -> None:
    """Rows deleted at the top leave the watermark above every rowid: the query starts at 0 (``since``
    0) and the parser forgets what it kept, so the same entries give the same events, unmarked."""
    rows = [event_row(1, "s", 0, entry("e1", None, "user", "hi")), event_row(2, "s", 1, entry("e2", "e1", "user", "x"))]
    state = orjson.loads(orjson.dumps(openclaw.parse(REF, rows, {}).state))
    again = openclaw.parse(REF, [event_row(1, "s", 0, entry("e1", None, "user", "hi"))], state)
    assert [e.uid for e in again.events] == ["e1"] and again.marks == []
    assert again.state["rid"] == 1


def test_only_the_latest_sessions_keep_their_state() -> None:
    rows = [event_row(i + 1, f"s{i}", 0, entry(f"e{i}", None, "user", "hi")) for i in range(openclaw.SESSIONS_KEPT + 5)]
    state = openclaw.parse(REF, rows, {}).state
    assert len(state["s"]) == openclaw.SESSIONS_KEPT and f"s{openclaw.SESSIONS_KEPT + 4}" in state["s"]


# -- drift and damage --------------------------------------------------------------------------------
def test_unknown_entry_types_and_tables_are_drift() -> None:
    rows = [event_row(1, "s", 0, {"type": "hologram", "id": "h1", "parentId": None}),
            Record(2, orjson.dumps({"table": "session_goals", "row": {"session_id": "s"}}))]
    batch = openclaw.parse(REF, rows, {})
    assert sorted((p.kind, p.line) for p in batch.problems) == [("unknown_type", 1), ("unknown_type", 2)]
    assert "hologram" in batch.problems[0].detail or "hologram" in batch.problems[1].detail


def test_damaged_rows_are_malformed_and_the_rest_is_read() -> None:
    ok = event_row(4, "s", 2, entry("e1", None, "user", "still here"))
    bad_zstd = {"rid": 1, "since": 0, "session_id": "s", "seq": 0, "event_json": None, "event_zstd": "00ff",
                "event_utf8_bytes": 10}
    empty = {"rid": 2, "since": 0, "session_id": "s", "seq": 1, "event_json": None, "event_zstd": None}
    rows = [Record(1, orjson.dumps({"table": "event", "row": bad_zstd})),
            Record(2, orjson.dumps({"table": "event", "row": empty})),
            Record(3, orjson.dumps({"table": "event", "row": {"rid": 3}})), ok]
    batch = openclaw.parse(REF, rows, {})
    assert [(p.kind, p.line) for p in batch.problems] == [("malformed", 1), ("malformed", 2), ("malformed", 3)]
    assert [e.text for e in batch.events] == ["still here"]


def test_a_compressed_row_of_the_wrong_size_is_malformed() -> None:
    raw = orjson.dumps(entry("e1", None, "user", "x" * 2000))
    row = {"rid": 1, "since": 0, "session_id": "s", "seq": 0, "event_json": None,
           "event_zstd": zstandard.ZstdCompressor(level=1).compress(raw).hex(), "event_utf8_bytes": len(raw)}
    assert openclaw.parse(REF, [Record(1, orjson.dumps({"table": "event", "row": row}))], {}).events[0].text == "x" * 2000
    row["event_utf8_bytes"] = len(raw) + 1
    batch = openclaw.parse(REF, [Record(1, orjson.dumps({"table": "event", "row": row}))], {})
    assert batch.events == [] and batch.problems[0].kind == "malformed"


# -- cold storage, JSONL, roots ------------------------------------------------------------------------
def test_a_cold_archive_is_read_as_its_session(tmp_path: Path) -> None:
    lines = [{"kind": "header", "version": 1, "sessionId": "cold-1", "generation": "g1"},
             {"kind": "event", "row": {"seq": 0, "event_json": orjson.dumps(
                 {"type": "session", "version": 4, "id": "cold-1", "timestamp": "2026-09-01T00:00:00Z",
                  "cwd": "/r"}).decode(), "created_at": 0}},
             {"kind": "event", "row": {"seq": 1, "event_json": orjson.dumps(entry("e1", None, "user", "old")).decode(),
                                       "created_at": 0}},
             {"kind": "identity", "row": {"event_id": "e1", "seq": 1}}, {"kind": "fts", "row": {}}]
    cold = tmp_path / "home" / ".openclaw" / "agents" / "main" / "sessions" / "cold"
    cold.mkdir(parents=True)
    text = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    (cold / f"{'a' * 64}.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    bank, report = read(tmp_path)
    assert report.problems == 0
    session = next(s for s in sessions_of(bank) if s["native_id"] == "cold-1")
    assert session["meta"]["agent"] == "main" and [e["text"] for e in events_of(bank, "cold-1")] == ["old"]


def test_jsonl_files_are_still_read_by_pi(tmp_path: Path) -> None:
    state_dir(tmp_path, db=False)
    bank, report = read(tmp_path)
    assert report.problems == 0 and len(sessions_of(bank)) == 4  # W1..W4 (README.md)


def test_a_jsonl_reset_and_leaf_are_read_as_in_the_database() -> None:
    ref = SourceRef(PurePath("/s/agents/main/sessions/s.jsonl"), PurePath("/s/agents"), "openclaw")
    lines = [entry("e1", None, "user", "a"), entry("e2", "e1", "assistant", "b"),
             {"type": "leaf", "id": "l1", "parentId": "e2", "targetId": "e1"},
             entry("e3", "l1", "assistant", "c"), {"type": "reset", "id": "r1", "parentId": "e3", "reason": "new"}]
    batch = openclaw.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [e.uid for e in batch.events] == ["e1", "e2", "e3", "r1"]
    assert batch.problems == [] and [m.uids for m in batch.marks] == [("e2",)]


def test_roots() -> None:
    home = Path("/home/u")
    assert openclaw.roots({}, home)[0] == home / ".openclaw" / "agents"
    assert openclaw.roots({"OPENCLAW_STATE_DIR": "/srv/oc"}, home)[0] == Path("/srv/oc/agents")
    assert openclaw.roots({"OPENCLAW_PROFILE": "work"}, home)[0] == home / ".openclaw-work" / "agents"
    assert openclaw.roots({"OPENCLAW_PROFILE": "default"}, home)[0] == home / ".openclaw" / "agents"
    assert openclaw.roots({"OPENCLAW_PROFILE": "w", "OPENCLAW_STATE_DIR": "/srv"}, home)[0] == Path("/srv/agents")


@pytest.mark.parametrize("name", ["openclaw-agent", "openclaw-gateway", "openclaw-tui"])
def test_process_titles(name: str) -> None:
    from harvester.capture.liveness import _is_agent

    assert _is_agent(name, [name], openclaw.PROCESSES)


def test_kimis_packaging_keeps_its_agents_in_kimi_openclaw(tmp_path: Path) -> None:
    """Kimi's OpenClaw ("Kimi Claw") keeps the same agents folder in ~/.kimi_openclaw (agentsview's
    AgentOpenClaw default dirs @ 538600744d1b): its sessions are OpenClaw's."""
    home = tmp_path / "home"
    sessions = home / ".kimi_openclaw" / "agents" / "work" / "sessions"
    sessions.mkdir(parents=True)
    shutil.copy(FIXTURES / "pi/openclaw/hand/agents/work/sessions/9e3a4f5b-6c7d-4e8f-a091-b2c3d4e5f607.jsonl", sessions)
    report = scan(home, tmp_path / "bank.sqlite", (openclaw.NAME,), env={"HOME": str(home)})
    assert report.harnesses[openclaw.NAME].problems == 0
    assert [s["native_id"] for s in sessions_of(tmp_path / "bank.sqlite")] == ["9e3a4f5b-6c7d-4e8f-a091-b2c3d4e5f607"]
