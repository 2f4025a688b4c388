"""DeepAgents Code (dcode): what the hand-written profile must read as (fixtures/dcode/hand/README.md).

``hand/`` is laid out like ``~/.deepagents``: ``.state/*.sql`` (the LangGraph checkpoint store as SQL
text, blobs as X'..' literals) and ``transcripts/`` (the Hooks v2 projection). Each test copies it under a
temporary home and builds ``.state/sessions.db`` from the SQL it needs.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.model import Batch
from harvester.parsers import dcode
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, event_identities, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "dcode" / "hand"
T1 = "0196f3a2-7c4e-7b1a-9e3f-2d8c5a1b4e70"  # DeltaChannel era: messages in writes, one snapshot
T2 = "0196f3b0-2a4b-7c6d-8e0f-1a2b3c4d5e6f"  # before DeltaChannel: every checkpoint holds the list
T3 = "0196f3c1-5b6c-7d8e-9f0a-1b2c3d4e5f6a"  # a seeded thread: one checkpoint, no writes
T4 = "0196f3d7-8e9f-7a0b-8c1d-2e3f4a5b6c7d"  # only in transcripts/
AGENT = f"{T4}/general-purpose:call_7f3e"
CWD = "/home/dev/src/demo-repo"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = Harness(dcode.NAME, dcode.roots, dcode.SOURCES, dcode.parse, "DeepAgents Code", dcode.PROCESSES)
    monkeypatch.setitem(parsers.HARNESSES, dcode.NAME, harness)


def profile(tmp: Path, *sql: str) -> Path:
    """``~/.deepagents`` under a temporary home, its database built from the named SQL files (none: no
    database at all)."""
    root = tmp / "home" / ".deepagents"
    shutil.copytree(HAND, root, ignore=shutil.ignore_patterns("*.sql", "*.md"))
    if sql:
        apply(root, *sql)
    return root


def apply(root: Path, *sql: str) -> None:
    conn = sqlite3.connect(root / ".state" / "sessions.db")
    try:
        for name in sql:
            conn.executescript((HAND / ".state" / name).read_text())
        conn.commit()
    finally:
        conn.close()


def read(tmp: Path, env: dict[str, str] | None = None, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    bank = tmp / bank_name
    report = scan(tmp / "home", bank, (dcode.NAME,), env={"HOME": str(tmp / "home"), **(env or {})})
    return bank, report.harnesses[dcode.NAME].problems



def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


@pytest.fixture
def db_bank(tmp_path: Path) -> Path:
    profile(tmp_path, "sessions.sql")
    bank, problems = read(tmp_path)
    assert problems == 0
    return bank


def test_threads_of_the_database(db_bank: Path) -> None:
    # transcripts/ is not read beside a database: T4 is not there.
    assert {s["native_id"] for s in sessions_of(db_bank)} == {T1, T2, T3}
    got = {s["native_id"]: (s["cwd"], s["title"], s["title_source"], s["model"], s["agent_version"])
           for s in sessions_of(db_bank)}
    assert got == {
        T1: (CWD, "Fix parse_row on empty lines", "ai", "claude-sonnet-4-5", "0.2.2"),  # thread_name
        T2: (CWD, "Run the benchmarks and summarize them.", "first-prompt", "gpt-5.1", "0.1.40"),
        T3: (CWD, "List the TODOs in src.", "first-prompt", "claude-sonnet-4-5", None),
    }
    s1 = session_of(db_bank, T1)
    assert (s1["branch"], s1["commit_sha"]) == ("main", "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39")
    assert (s1["started_at"], s1["updated_at"]) == ("2026-11-20T09:00:00.000Z", "2026-11-20T09:00:20.000Z")
    assert s1["meta"] == {"agent": "agent", "last_turn": "complete"}
    assert session_of(db_bank, T3)["meta"]["last_turn"] == "open"  # ends with dcode's interruption notice


def test_delta_channel_thread_in_order(db_bank: Path) -> None:
    assert shape(db_bank, T1) == [
        ("user", "text", "Why does parse_row fail "),  # from the input checkpoint's snapshot
        ("system", "text", "<local_context>cwd: /hom"),  # a middleware's message: not the user's words
        ("assistant", "thinking", "The split keeps an empty"),
        ("assistant", "text", "Let me run the failing t"),
        ("assistant", "tool_call", "execute: pytest -q tests"),
        ("tool", "tool_result", "F.\nFAILED tests/test_par"),
        ("assistant", "tool_call", "read_file: /home/dev/src"),
        ("tool", "tool_result", "Error: File '/home/dev/s"),
        ("assistant", "text", "Fixed: `parse_row('')` n"),
    ]
    events = events_of(db_bank, T1)
    calls = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_call"}
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [(r["tool_name"], r["tool_call_id"], r["is_error"]) for r in results] == [
        ("execute", "toolu_01", False), ("read_file", "toolu_02", True)]
    assert all(calls[r["tool_call_id"]]["tool_name"] == r["tool_name"] for r in results)
    assert calls["toolu_01"]["tool_input"] == {"command": "pytest -q tests/test_parser.py"}
    # input_tokens 2100 counts the 1,200 read from the cache (LangChain's sum of every input type)
    assert calls["toolu_01"]["usage"] == {"in": 900, "out": 180, "cache_read": 1200, "reasoning": 40}
    assert events[0]["uid"] == "3b9e2f1a-6c7d-4e8f-9a0b-1c2d3e4f5a6b"  # the message's own id
    assert events[1]["meta"] == {"injected": True, "source": "local_context"}
    assert [e["ts"] for e in events[:3]] == ["2026-11-20T09:00:00.000Z", "2026-11-20T09:00:01.000Z",
                                             "2026-11-20T09:00:01.000Z"]  # the step's checkpoint id (UUIDv6)


def test_inline_lists_and_seeded_threads(db_bank: Path) -> None:
    # T2 repeats its whole list in every checkpoint: each message once; the raw input (no id) is skipped.
    assert shape(db_bank, T2) == [
        ("user", "text", "Run the benchmarks and s"),
        ("assistant", "text", "Benchmarks: parse 1.8 ms"),
        ("system", "compaction", "Here is a summary of the"),  # the _summarization_event channel
    ]
    assert events_of(db_bank, T2)[2]["meta"] == {"cutoff_index": 1,
                                                 "file_path": "/conversation_history/0196f3b0.md"}
    assert shape(db_bank, T3) == [
        ("user", "text", "List the TODOs in src."),
        ("assistant", "tool_call", "grep: src"),
        ("tool", "tool_result", "src/parser.py:3: # TODO:"),
        ("system", "text", "[SYSTEM] Task interrupte"),  # dcode's notice, a HumanMessage all the same
    ]


def test_a_new_checkpoint_adds_only_new_messages(tmp_path: Path) -> None:
    root = profile(tmp_path, "sessions.sql")
    bank, _ = read(tmp_path)
    before = [(e["uid"], e["seq"]) for e in events_of(bank, T1)]
    # Turn 2: a prompt and an answer as writes, the answer rewritten under its id by an Overwrite of the
    # whole list, then a snapshot checkpoint holding all nine messages again.
    apply(root, "turn2.sql")
    bank, problems = read(tmp_path)
    assert problems == 0
    after = events_of(bank, T1)
    assert [(e["uid"], e["seq"]) for e in after[:len(before)]] == before
    assert [(e["role"], e["kind"], e["text"]) for e in after[len(before):]] == [
        ("user", "text", "Also handle whitespace-only lines."),
        ("assistant", "text", "Done: whitespace-only lines now parse to `[]`."),  # revised, not added
    ]
    assert session_of(bank, T1)["meta"]["last_turn"] == "complete"
    # A fresh bank reading both at once holds the very same events.
    fresh, problems = read(tmp_path, bank_name="fresh.sqlite")
    assert problems == 0 and event_identities(fresh) == event_identities(bank)


def test_an_unknown_message_type_is_drift(tmp_path: Path) -> None:
    profile(tmp_path, "sessions.sql", "drift.sql")
    bank, problems = read(tmp_path)
    assert problems == 1
    with open_bank(bank) as b:
        assert b.harness_stats()[dcode.NAME]["drift"] == {"message type='function'": 1}
    assert len(events_of(bank, T3)) == 4  # the rest still imports


def test_transcripts_are_read_only_without_the_database(tmp_path: Path) -> None:
    profile(tmp_path)  # no .state/sessions.db
    bank, problems = read(tmp_path)
    assert problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {T4, AGENT}
    assert shape(bank, T4) == [
        ("user", "text", "Rename parse_row to pars"),
        ("assistant", "text", "Renaming it everywhere."),
        ("assistant", "tool_call", "edit_file: src/parser.py"),  # from the content's tool_use block
        ("tool", "tool_result", "Successfully replaced 3 "),
        ("system", "text", "[SYSTEM] Task interrupte"),
        ("assistant", "text", "Renamed; tests pass."),
    ]
    agent = session_of(bank, AGENT)
    assert (agent["parent_native_id"], agent["parent_kind"]) == (T4, "subagent")
    assert [(e["role"], e["meta"]) for e in events_of(bank, AGENT)] == [("system", {"from_agent": True}),
                                                                       ("assistant", None)]


def test_deepagents_home_moves_the_root(tmp_path: Path) -> None:
    home = tmp_path
    assert dcode.roots({}, home) == [home / ".deepagents"]
    assert dcode.roots({"DEEPAGENTS_HOME": "/srv/profiles/work"}, home) == [Path("/srv/profiles/work")]
    assert dcode.roots({"DEEPAGENTS_HOME": "~/profiles/work"}, home) == [home / "profiles/work"]
    assert dcode.roots({"DEEPAGENTS_HOME": "rel/dir"}, home) == [home / ".deepagents"]  # dcode refuses it
    # Read end to end from a relocated profile.
    other = tmp_path / "elsewhere"
    shutil.copytree(HAND, other, ignore=shutil.ignore_patterns("*.sql", "*.md"))
    apply(other, "sessions.sql")
    bank, problems = read(tmp_path, env={"DEEPAGENTS_HOME": str(other)})
    assert problems == 0 and {s["native_id"] for s in sessions_of(bank)} == {T1, T2, T3}


def test_msgpack_formats() -> None:
    assert dcode.unpack(bytes.fromhex("93c0c3c2")) == [None, True, False]
    assert dcode.unpack(bytes.fromhex("82a161cd0100a162d1ff00")) == {"a": 256, "b": -256}
    assert dcode.unpack(bytes.fromhex("cb3ff8000000000000")) == 1.5
    assert dcode.unpack(b"\xd9\x20" + b"x" * 32) == "x" * 32
    assert dcode.unpack(bytes.fromhex("d40790")) == dcode.Snapshot([])  # an empty DeltaChannel snapshot
    with pytest.raises(ValueError, match="incomplete input"):
        dcode.unpack(bytes.fromhex("92c0"))


# -- real stores (fixtures/dcode/real/, captured from deepagents-code 0.1.88; see real/CAPTURE.md) -----------
REAL = FIXTURES / "dcode" / "real"


def real_bank(tmp: Path, scenario: str) -> Path:
    shutil.copytree(REAL / scenario, tmp / "home" / ".deepagents", ignore=shutil.ignore_patterns("dump.json"))
    bank, problems = read(tmp)
    assert problems == 0
    return bank


def test_real_first_prompt_is_a_write_on_the_first_checkpoint(tmp_path: Path) -> None:
    # No checkpoint holds the list: "say hi" is a write of task __start__ on the step -1 checkpoint, the
    # only place that says it is the thread's first prompt (the resumed run's input is at step 21).
    bank = real_bank(tmp_path, "two_turns")
    (s,) = sessions_of(bank)
    assert (s["title"], s["title_source"]) == ("say hi", "first-prompt")
    assert [(e["role"], e["kind"]) for e in events_of(bank, s["native_id"])] == [
        ("user", "text"), ("assistant", "text"), ("user", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text")]
    # metadata.updated_at is stamped when a run starts (17:59:59.9 and 18:00:25.8 here); the session was
    # last written by the newest checkpoint (its UUIDv6 time).
    assert (s["started_at"], s["updated_at"]) == ("2026-11-29T17:59:59.905Z", "2026-11-29T18:00:53.582Z")
    assert (s["model"], s["agent_version"], s["branch"]) == ("fake-model", "0.1.88", "main")


def test_real_tool_error_and_reasoning(tmp_path: Path) -> None:
    bank = real_bank(tmp_path, "tool_error")
    (result,) = [e for s in sessions_of(bank) for e in events_of(bank, s["native_id"]) if e["kind"] == "tool_result"]
    assert (result["tool_name"], result["is_error"]) == ("read_file", True)  # ToolMessage.status "error"
    bank = real_bank(tmp_path / "thinking", "thinking")
    (s,) = sessions_of(bank)
    events = events_of(bank, s["native_id"])
    assert [e["kind"] for e in events] == ["text", "thinking", "text"]  # Responses API reasoning summary
    assert events[-1]["usage"] == {"in": 11994, "out": 91, "reasoning": 23}


def test_real_subagent_is_a_child_session(tmp_path: Path) -> None:
    # The task tool runs a forked general-purpose subagent in namespace tools:<task id>: its checkpoints
    # hold the whole list, starting with what it inherited (the parent's prompt, same id) and its task.
    bank = real_bank(tmp_path, "subagent")
    parent, child = sorted(sessions_of(bank), key=lambda s: len(s["native_id"]))
    assert child["native_id"] == f"{parent['native_id']}/tools:0edc744f-e079-4348-4f56-e77633dc9dc4"
    assert (child["parent_native_id"], child["parent_kind"]) == (parent["native_id"], "subagent")
    assert child["meta"] == {"agent": "general-purpose", "last_turn": "complete"}
    assert child["title"] is None and child["started_at"] > parent["started_at"]
    events = events_of(bank, child["native_id"])
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "text"), ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[0]["meta"] == {"from_agent": True} and events[0]["text"].startswith(dcode.FORK_PREAMBLE)
    assert [e["kind"] for e in events_of(bank, parent["native_id"])] == [
        "text", "tool_call", "tool_result", "text"]  # the task call and the subagent's answer


def test_nested_subagent_namespaces() -> None:
    reader = dcode._Reader()
    assert dcode._session_of(reader, {"thread_id": "t", "ns": ""}) == "t"
    assert dcode._session_of(reader, {"thread_id": "t", "ns": "tools:a|tools:b"}) == "t/tools:a|tools:b"
    patch = reader.batch.session("t/tools:a|tools:b")
    assert (patch.parent_native_id, patch.parent_kind) == ("t/tools:a", "subagent")
    # A subagent that is not forked starts with its task: nothing is inherited, the task is the agent's.
    task = {"type": "human", "content": "Count the TODOs.", "id": "m1"}
    assert dcode._own(True, [task]) == [(0, {**task, "additional_kwargs": {"lc_source": "subagent_task"}})]
    assert dcode._own(False, [task]) == [(0, task)]


def test_a_write_stored_late_takes_its_place_and_leaves_the_turn_state(tmp_path: Path) -> None:
    """LangGraph stores a step's writes in the background, in any order: a live read met the tool result
    and the answer of the second turn before the assistant message that called the tool (rowid 91 of
    91, for the step-33 checkpoint; seen under `harvester run` with the real dcode 0.1.88)."""
    root = tmp_path / "home" / ".deepagents"
    shutil.copytree(REAL / "two_turns", root, ignore=shutil.ignore_patterns("dump.json"))
    clean, _ = read(tmp_path, bank_name="clean.sqlite")
    db = sqlite3.connect(root / ".state" / "sessions.db")
    calls = [row for row in db.execute("SELECT rowid, * FROM writes WHERE channel = 'messages'")
             if "function_call" in repr(dcode.unpack(row[-1]))]
    (late,) = calls
    db.execute("DELETE FROM writes WHERE rowid = ?", (late[0],))
    db.commit()
    live, problems = read(tmp_path, bank_name="live.sqlite")  # the call not stored yet
    assert problems == 0
    assert [e["kind"] for e in events_of(live)][-3:] == ["text", "tool_result", "text"]
    db.execute(f"INSERT INTO writes VALUES ({','.join('?' * (len(late) - 1))})", late[1:])  # a new, higher rowid
    db.commit()
    db.close()
    live, problems = read(tmp_path, bank_name="live.sqlite")
    assert problems == 0
    order = [(e["seq"], e["uid"], e["kind"]) for e in events_of(live)]
    assert order == [(e["seq"], e["uid"], e["kind"]) for e in events_of(clean)]
    assert [kind for _, _, kind in order] == ["text", "text", "text", "tool_call", "tool_result", "text"]
    # The late message ended a step, not the turn: the turn is still the answer's, complete.
    assert sessions_of(live)[0]["meta"]["last_turn"] == sessions_of(clean)[0]["meta"]["last_turn"] == "complete"


def test_a_late_write_read_on_its_own_does_not_reopen_the_turn(tmp_path: Path) -> None:
    """The read that brings only the late tool call: its step came before the answer already read."""
    db_path = REAL / "two_turns" / ".state" / "sessions.db"
    conn = sqlite3.connect(f"file:{db_path}?immutable=1", uri=True)
    conn.row_factory = sqlite3.Row
    query = next(q for q in dcode.QUERIES if q.name == "write")
    rows = [dict(r) for r in conn.execute(query.sql, {"since": 0})]
    conn.close()
    call = next(r for r in rows if "function_call" in repr(dcode.unpack(bytes.fromhex(r["blob"]))))
    answer = rows[-1]  # the second turn's answer: the last message written
    ref = dcode.SOURCES[0]
    source = SourceRef(db_path, db_path.parent.parent, ref.variant)

    def parse(*picked: dict, state: dict | None = None) -> Batch:
        records = [Record(i, orjson.dumps({"table": "write", "row": r})) for i, r in enumerate(picked, 1)]
        return dcode.parse(source, records, state or {})

    after_answer = parse(answer)
    (thread,) = after_answer.sessions
    assert after_answer.sessions[thread].meta["last_turn"] == "complete"
    late = parse(call, state=after_answer.state)
    assert "last_turn" not in (late.sessions[thread].meta or {})  # the step, not the turn
    assert [e.kind for e in late.events] == ["tool_call"]
    assert late.events[0].place < after_answer.events[-1].place  # and it goes before the answer
    alone = parse(call)  # with no state (a thread not kept): the last message read decides, as before
    assert alone.sessions[thread].meta["last_turn"] == "open"


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/d/transcripts/t1.jsonl"), PurePath("/d"), "transcript")
    raw = b'{"schema_version":1,"thread_id":"t1","role":"assistant","content":[{"type":[1]}]}'
    batch = dcode.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "ai record of unexpected shape: an array where text or a number was expected")]


def test_usage_input_leaves_out_the_cache_it_counts() -> None:
    """LangChain's ``usage_metadata.input_tokens`` is the sum of every input token type (langchain-core
    UsageMetadata; langchain-anthropic adds the cache reads and writes to Anthropic's own input count), and the
    cache writes, where Anthropic splits them by lifetime, are under ``ephemeral_5m_input_tokens`` /
    ``ephemeral_1h_input_tokens`` with ``cache_creation`` zeroed. The bank's input is what neither the cache read
    nor wrote: a cached prompt was counted once as input and again as a cache read, and split writes as input."""
    # As langchain-anthropic 1.x's _create_usage_metadata writes them (input 300, read 1200, written 600 for 1h).
    split = {"input_tokens": 2100, "output_tokens": 180, "total_tokens": 2280,
             "input_token_details": {"cache_read": 1200, "cache_creation": 0, "ephemeral_5m_input_tokens": 0,
                                     "ephemeral_1h_input_tokens": 600},
             "output_token_details": {"reasoning": 40}}
    got = dcode._usage(split)
    assert got is not None
    assert (got.input, got.cache_read, got.cache_write, got.cache_write_1h, got.output, got.reasoning) == (
        300, 1200, 600, 600, 180, 40)
    plain = {"input_tokens": 2100, "output_tokens": 180, "total_tokens": 2280,
             "input_token_details": {"cache_read": 1200, "cache_creation": 400}}
    got = dcode._usage(plain)
    assert got is not None and (got.input, got.cache_read, got.cache_write) == (500, 1200, 400)
