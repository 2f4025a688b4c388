"""Devin CLI: what the hand-written store must read as (fixtures/devin/hand/README.md).

The store is kept as SQL text (``hand/sessions.sql``); each test builds ``sessions.db`` in a temporary
data dir (``$XDG_DATA_HOME/devin/cli``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.parsers import devin
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "devin" / "hand"
A, B, C = "quiet-harbor", "amber-lantern", "tidy-marmot"
CWD = "/home/dev/src/demo-repo"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = Harness(devin.NAME, devin.roots, devin.SOURCES, devin.parse, "Devin CLI", devin.PROCESSES)
    monkeypatch.setitem(parsers.HARNESSES, devin.NAME, harness)


def build_store(tmp: Path) -> Path:
    """``$XDG_DATA_HOME/devin/cli/sessions.db`` built from the fixture's SQL text."""
    db = tmp / "data" / "devin" / "cli" / "sessions.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    try:
        conn.executescript((HAND / "sessions.sql").read_text())
        conn.commit()
    finally:
        conn.close()
    return db


def read(tmp: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    env = {"HOME": str(tmp / "home"), "XDG_DATA_HOME": str(tmp / "data")}
    report = scan(tmp / "home", bank, (devin.NAME,), env=env)
    return bank, report.harnesses[devin.NAME].problems



def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


def write_node(db: Path, sid: str, node: int, parent: int | None, message: dict, at: int) -> None:
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO message_nodes (session_id, node_id, parent_node_id, chat_message, created_at, "
                 "metadata) VALUES (?, ?, ?, ?, ?, 'null')",
                 (sid, node, parent, orjson.dumps(message).decode(), at))
    conn.execute("UPDATE sessions SET last_activity_at = ?, main_chain_id = ? WHERE id = ?", (at, node, sid))
    conn.commit()
    conn.close()


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    db = build_store(tmp_path)
    bank, problems = read(tmp_path)
    assert problems == 0
    return db, bank


def test_every_session(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert {s["native_id"] for s in sessions_of(bank)} == {A, B, C}
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"], s["agent_version"])
           for s in sessions_of(bank)}
    assert got == {
        # sessions.model is the routing mode "adaptive": the model is the one that answered.
        A: (CWD, "Fix parse_row on empty lines", "ai", "claude-sonnet-4-5", None),
        B: (CWD, "Run the benchmarks", "ai", "claude-sonnet-4-5", None),
        C: (CWD, "List the TODOs in src.", "first-prompt", "claude-sonnet-4-5", None),  # no title yet
    }
    assert session_of(bank, A)["meta"] == {"agent_mode": "normal", "last_turn": "complete"}
    assert session_of(bank, B)["meta"]["last_turn"] == "open"  # its tip asked for a tool
    assert session_of(bank, C)["meta"] == {"agent_mode": "bypass", "hidden": True}  # no main chain: no tip
    assert session_of(bank, A)["started_at"] == "2026-11-20T09:00:00.000Z"


def test_main_session_in_order(store: tuple[Path, Path]) -> None:
    _, bank = store
    assert shape(bank, A) == [
        ("system", "text", "<system_info>OS: linux; "),  # context Devin adds: not the user's words
        ("user", "text", "Why does parse_row fail "),
        ("assistant", "thinking", "The split keeps an empty"),
        ("assistant", "text", "Let me run the failing t"),
        ("assistant", "tool_call", "exec: pytest -q tests/te"),
        ("tool", "tool_result", "F.\nFAILED tests/test_par"),
        ("assistant", "tool_call", "read_file: /home/dev/src"),
        ("tool", "tool_result", "File not found: /home/de"),
        ("assistant", "tool_call", "edit: /home/dev/src/demo"),
        ("tool", "tool_result", "Edit applied successfull"),
        ("assistant", "text", "Fixed: `parse_row('')` n"),
        ("system", "text", "continue"),  # Devin's keep-alive prompt (is_user_input false)
        ("assistant", "text", "Nothing is left to do: t"),
        ("user", "text", "Also handle whitespace-o"),
        ("assistant", "text", "I'll hand the tests to a"),
        ("assistant", "tool_call", "run_subagent: Write test"),
        ("system", "text", "Write tests for whitespa"),  # the subagent's task, from the parent agent
        ("assistant", "text", "Added tests/test_parser."),
        ("tool", "tool_result", "Subagent sidekick finish"),
        ("assistant", "text", "Whitespace-only lines no"),
    ]
    events = events_of(bank, A)
    calls = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_call"}
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [(r["tool_name"], r["is_error"]) for r in results] == [
        ("exec", False), ("read_file", True), ("edit", False), ("run_subagent", False)]
    assert all(calls[r["tool_call_id"]]["tool_name"] == r["tool_name"] for r in results)
    assert results[0]["meta"] == {"exit_code": 1}  # the command ran: a failing test is no tool error
    assert calls["exec_0_7f3a#a1"]["tool_input"] == {"command": "pytest -q tests/test_parser.py"}
    assert [e["meta"] for e in events if e["role"] == "system"] == [
        {"injected": True}, {"injected": True}, {"from_agent": True}]
    assert events[1]["uid"] == "m-a-u1" and events[4]["uid"] == "m-a-1:call:exec_0_7f3a#a1"
    assert events[4]["usage"] == {"in": 1200, "out": 180, "cache_read": 900}
    assert events[1]["ts"] == "2026-11-20T09:00:02.000Z"


def test_copies_and_streamed_versions_are_one_event(store: tuple[Path, Path]) -> None:
    _, bank = store
    # The resume re-rendered three of A's messages (same message_ids): nothing was added for them.
    assert sum(e["uid"] == "m-a-u1" for e in events_of(bank, A)) == 1
    # B's answer was written while it streamed, then complete: one event, the complete text.
    assert shape(bank, B) == [
        ("user", "text", "Run the benchmarks and s"),
        ("assistant", "text", "Benchmarks: parse 1.8 ms"),
        ("system", "compaction", "## Summary\nThe user aske"),  # the summary a compaction wrote
        ("system", "compaction", "You are continuing work "),  # and the prompt that carries it on
        ("user", "text", "Now profile dump()."),
        ("assistant", "tool_call", "exec: python -m cProfile"),
    ]
    assert events_of(bank, B)[1]["text"] == "Benchmarks: parse 1.8 ms, dump 0.9 ms per 1k rows."


def test_new_nodes_and_a_node_rewritten_in_place(tmp_path: Path) -> None:
    db = build_store(tmp_path)
    bank, _ = read(tmp_path)
    before = events_of(bank, B)
    at = 1795174300  # after every session of the fixture (last_activity_at is the watermark)
    result = {"message_id": "m-b-t1", "role": "tool", "content": "ncalls tottime ...",
              "tool_call_id": "exec_0_aa11#b1",
              "metadata": {"extensions": {"chisel/tool_result_meta": {"success": True}}}}
    write_node(db, B, 8, 7, result, at)
    answer = {"message_id": "m-b-3", "role": "assistant", "content": "dump() spends",
              "metadata": {"finish_reason": None, "generation_model": "claude-sonnet-4-5"}}
    write_node(db, B, 9, 8, answer, at + 1)
    bank, problems = read(tmp_path)
    assert problems == 0
    assert [e["uid"] for e in events_of(bank, B)] == [e["uid"] for e in before] + ["m-b-t1", "m-b-3"]
    # The agent rewrites its last node in place (same row_id): read again through last_activity_at.
    conn = sqlite3.connect(db)
    done = {**answer, "content": "dump() spends 80% of its time in json.dumps."}
    conn.execute("UPDATE message_nodes SET chat_message = ? WHERE session_id = ? AND node_id = 9",
                 (orjson.dumps(done).decode(), B))
    conn.execute("UPDATE sessions SET last_activity_at = ? WHERE id = ?", (at + 5, B))
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    after = events_of(bank, B)
    assert problems == 0
    assert [e["uid"] for e in after] == [e["uid"] for e in before] + ["m-b-t1", "m-b-3"]  # revised, not added
    assert after[-1]["text"] == "dump() spends 80% of its time in json.dumps."
    assert after[-2]["tool_name"] == "exec" and session_of(bank, B)["meta"]["last_turn"] == "complete"


def test_a_second_scan_adds_nothing(store: tuple[Path, Path], tmp_path: Path) -> None:
    _, bank = store
    first = [(e["uid"], e["seq"], e["text"]) for e in events_of(bank)]
    bank, problems = read(tmp_path)
    assert problems == 0 and [(e["uid"], e["seq"], e["text"]) for e in events_of(bank)] == first


def test_unknown_role_is_drift(tmp_path: Path) -> None:
    db = build_store(tmp_path)
    write_node(db, C, 3, 2, {"message_id": "m-c-x", "role": "narrator", "content": "?"}, 1795174300)
    bank, problems = read(tmp_path)
    assert problems == 1
    with open_bank(bank) as b:
        assert b.harness_stats()[devin.NAME]["drift"] == {"chat_message role='narrator'": 1}
    assert len(events_of(bank, C)) == 2  # the rest still imports


def test_a_half_written_node_is_malformed_and_the_rest_reads(tmp_path: Path) -> None:
    db = build_store(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO message_nodes (session_id, node_id, parent_node_id, chat_message, created_at) "
                 "VALUES (?, 3, 2, '{\"message_id\": \"m-c-2\", \"role\": \"assi', 1795174500)", (C,))
    conn.commit()
    conn.close()
    bank, problems = read(tmp_path)
    assert problems == 1 and len(events_of(bank, C)) == 2


# -- roots ---------------------------------------------------------------------------------------
def test_roots_per_os_and_variables(tmp_path: Path) -> None:
    home = tmp_path
    share = home / ".local/share"
    assert devin.roots_for("linux", {}, home) == [share / "devin/cli", share / "devin/cli-next",
                                                  share / "cognition/cli"]
    assert devin.roots_for("linux", {"XDG_DATA_HOME": "/srv/xdg"}, home)[0] == Path("/srv/xdg/devin/cli")
    mac = devin.roots_for("darwin", {}, home)
    assert mac[0] == home / ".local/share/devin/cli" and home / "Library/Application Support/devin/cli" in mac
    assert devin.roots_for("win32", {"APPDATA": "/c/Users/dev/AppData/Roaming"}, home)[0] == Path(
        "/c/Users/dev/AppData/Roaming/devin/cli")
    assert devin.roots_for("win32", {}, home)[0] == home / "AppData/Roaming/devin/cli"


def test_roots_follow_the_running_os(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(devin.sys, "platform", "darwin")
    assert tmp_path / "Library/Application Support/devin/cli" in devin.roots({}, tmp_path)
    monkeypatch.setattr(devin.sys, "platform", "linux")
    assert tmp_path / "Library/Application Support/devin/cli" not in devin.roots({}, tmp_path)


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    message = {"role": "assistant", "tool_calls": [5]}
    row = {"session_id": "s1", "row_id": 1, "node_id": 7, "chat_message": orjson.dumps(message).decode()}
    raw = orjson.dumps({"table": "node", "row": row})
    batch = devin.parse(SourceRef(PurePath("/v/sessions.db"), PurePath("/v")), [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "assistant node 7 of unexpected shape: a number where an object was expected")]


def test_a_tool_result_whose_call_id_is_not_text_imports(tmp_path: Path) -> None:
    """A tool message naming its call by a list (no Devin writes that): the result imports without a
    tool_call_id; the parser used to crash pairing it with its call's name."""
    db = build_store(tmp_path)
    write_node(db, C, 3, 2, {"message_id": "m-c-x", "role": "tool", "content": "ok", "tool_call_id": ["x"]},
               1795174300)
    bank, problems = read(tmp_path)
    assert problems == 0
    assert [(e["kind"], e["tool_call_id"]) for e in events_of(bank, C)][-1] == ("tool_result", None)
