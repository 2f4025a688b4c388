"""opencode and Kilo CLI: what the fixtures must read as (fixtures/{opencode,kilo}/hand/README.md, real/).

The hand-written databases are kept as SQL text (``hand/opencode.sql``, ``hand/kilo.sql``); each test
builds the ``.db`` it needs in a temporary copy of the data dir.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.parsers import opencode, opencode_stores
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, event_identities, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "opencode" / "hand"
KILO_HAND = FIXTURES / "kilo" / "hand"
REAL = {"opencode": FIXTURES / "opencode" / "real", "kilo": FIXTURES / "kilo" / "real"}
VERSION = {"opencode": "1.18.33", "kilo": "7.7.7"}
DB_NAME = {"opencode": "opencode.db", "kilo": "kilo.db"}
DB_ENV = {"opencode": "OPENCODE_DB", "kilo": "KILO_DB"}

# Sessions of hand/opencode.sql (README.md), of the storage/ tree, and of hand/kilo.sql.
A = "ses_e07d0e17fffeSbXOIkDj8Q6xzR"  # main session: every part type, a subagent, an API error
B = "ses_e07cfef4fffel6lzeSLXVOv12o"  # the subagent A's task tool started
C = "ses_e0799f2fffferXW6t7tUyyX8w4"  # compaction, then an aborted turn
D = "ses_e0763047fffegkIsm1EI6VQWjZ"  # a turn still running
L = "ses_43e0b44ffffeN4jcuU1Ns36mWu"  # storage/ tree (opencode 1.1), ends with a provider error
L2 = "ses_43e0aa8bfffefXS1CLijpuXRNA"  # its subagent
K = "ses_e02aa857fffe7OoSoqSO3qamCk"  # Kilo


def opencode_harness() -> Harness:
    return Harness(opencode_stores.OPENCODE_NAME, opencode_stores.opencode_roots, opencode_stores.OPENCODE_SOURCES, opencode.parse,
                   "opencode", opencode_stores.OPENCODE_PROCESSES)


def kilo_harness() -> Harness:
    return Harness(opencode_stores.KILO_NAME, opencode_stores.kilo_roots, opencode_stores.KILO_SOURCES, opencode.parse, "Kilo CLI",
                   opencode_stores.KILO_PROCESSES)


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(parsers.HARNESSES, "opencode", opencode_harness())
    monkeypatch.setitem(parsers.HARNESSES, "kilo", kilo_harness())


def build_db(db: Path, *scripts: Path) -> Path:
    """The agent's database from the fixture's SQL text (a binary .db is not kept in the repository)."""
    conn = sqlite3.connect(db)
    try:
        for script in scripts:
            conn.executescript(script.read_text())
        conn.commit()
    finally:
        conn.close()
    return db


def data_dir(tmp: Path, source: Path, *sql: str) -> Path:
    """A copy of a hand/ data dir, with its database built from the named SQL files."""
    target = tmp / "data"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.sql", "README.md"))
    if sql:
        build_db(target / ("kilo.db" if source == KILO_HAND else "opencode.db"), *(source / s for s in sql))
    return target


def read(tmp: Path, harness: str, root: Path, bank_name: str = "bank.sqlite") -> tuple[Path, int]:
    """Scan ``root`` as the harness's data dir (named through its database variable); (bank, problems)."""
    bank = tmp / bank_name
    env = {"HOME": str(tmp / "home"), DB_ENV[harness]: str(root / DB_NAME[harness])}
    report = scan(tmp / "home", bank, (harness,), env=env)
    return bank, report.harnesses[harness].problems



def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24]) for e in events_of(bank, sid)]


# -- hand-written database ----------------------------------------------------------------------
@pytest.fixture
def hand_bank(tmp_path: Path) -> Path:
    bank, problems = read(tmp_path, "opencode", data_dir(tmp_path, HAND, "opencode.sql"))
    assert problems == 0
    return bank


def test_every_session_of_the_database(hand_bank: Path) -> None:
    # The storage/ tree beside the database is read too (its sessions were never migrated here).
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, D, L, L2}
    for sid in (A, B, C, D):
        s = session_of(hand_bank, sid)
        assert (s["cwd"], s["agent_version"], s["model"]) == ("/home/dev/src/demo-repo", "1.18.33",
                                                              "claude-sonnet-4-5")
        assert s["bank_id"] == "coding-agent::demo-repo"


def test_main_session_in_order(hand_bank: Path) -> None:
    assert shape(hand_bank, A) == [
        ("user", "text", "Why does parse_row fail "),
        ("system", "text", "Called the Read tool wit"),  # synthetic: opencode's, not the user's
        ("system", "text", "<path>/home/dev/src/demo"),
        ("user", "text", "[file: src/parser.py (te"),
        ("assistant", "thinking", "The split keeps an empty"),
        ("assistant", "text", "Let me run the failing t"),
        ("assistant", "tool_call", "bash: pytest -q tests/te"),
        ("tool", "tool_result", "F.\nFAILED tests/test_par"),
        ("assistant", "tool_call", "read: /home/dev/src/demo"),
        ("tool", "tool_result", "File not found: /home/de"),
        ("assistant", "meta", "step finished: tool-call"),
        ("assistant", "tool_call", "edit: /home/dev/src/demo"),
        ("tool", "tool_result", "Edit applied successfull"),
        ("system", "meta", "files changed: /home/dev"),
        ("assistant", "text", "Fixed: `parse_row('')` n"),
        ("assistant", "meta", "step finished: stop"),
        ("user", "text", "@general run the benchma"),
        ("user", "meta", "@general"),
        ("system", "text", "Use the above message an"),
        ("assistant", "tool_call", "task: Run the benchmarks"),
        ("tool", "tool_result", '<task id="ses_e07cfef4ff'),
        ("assistant", "meta", "step finished: tool-call"),
        ("assistant", "text", "Benchmarks: parse 1.8 ms"),
        ("assistant", "meta", "step finished: stop"),
        ("system", "text", "subtask for @general: re"),  # a command's template
        ("system", "meta", "retry 1: Overloaded"),
        ("system", "meta", "APIError: Overloaded"),
    ]
    events = events_of(hand_bank, A)
    calls = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_call"}
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [(r["tool_name"], r["is_error"]) for r in results] == [
        ("bash", False), ("read", True), ("edit", False), ("task", False)]
    assert all(calls[r["tool_call_id"]]["tool_name"] == r["tool_name"] for r in results)
    assert all(r["uid"] == calls[r["tool_call_id"]]["uid"] + ":result" for r in results)
    assert results[2]["meta"] == {"compacted": True}  # pruned by a later compaction: output still stored
    assert results[3]["meta"] == {"subagent_session": B}
    assert calls["toolu_01"]["tool_input"] == {"command": "pytest -q tests/test_parser.py",
                                               "description": "Run the parser tests"}
    usage = [e["usage"] for e in events if e["usage"]]
    assert usage[0] == {"in": 2100, "out": 180, "cache_read": 1200, "reasoning": 40}
    assert sum(u["out"] for u in usage) == 180 + 220 + 90 + 60
    s = session_of(hand_bank, A)
    assert (s["title"], s["title_source"]) == ("Fix parse_row on empty lines", "ai")
    assert s["meta"]["last_turn"] == "failed" and s["meta"]["slug"] == "quiet-harbor"


def test_subagent_session(hand_bank: Path) -> None:
    s = session_of(hand_bank, B)
    assert (s["parent_native_id"], s["parent_kind"], s["title"]) == (A, "subagent",
                                                                    "Run the benchmarks (@general subagent)")
    events = events_of(hand_bank, B)
    # The task its parent agent wrote arrives as a user message: it is not the human's words.
    assert (events[0]["role"], events[0]["meta"]) == ("system", {"from_agent": True})
    assert [e["kind"] for e in events[1:]] == ["tool_call", "tool_result", "text", "meta"]


def test_compaction_and_aborted_turn(hand_bank: Path) -> None:
    assert shape(hand_bank, C) == [
        ("user", "text", "Summarize the repository"),
        ("assistant", "text", "src/ holds the parser, t"),
        ("assistant", "meta", "step finished: stop"),
        ("system", "compaction", "conversation compacted ("),
        ("system", "compaction", "## Summary\nThe user aske"),  # the summary the compaction agent wrote
        ("assistant", "meta", "step finished: stop"),
        ("system", "text", "Continue if you have nex"),
        ("assistant", "tool_call", "bash: make docs"),
        ("tool", "tool_result", "Tool execution aborted"),
        ("system", "meta", "MessageAbortedError: The"),
    ]
    s = session_of(hand_bank, C)
    # The placeholder "New session - <time>" is no title: the first prompt's first line is.
    assert (s["title"], s["title_source"]) == ("Summarize the repository layout", "first-prompt")
    assert s["meta"]["last_turn"] == "aborted"


def test_running_turn_is_open(hand_bank: Path) -> None:
    assert [(e["kind"], e["meta"]) for e in events_of(hand_bank, D)] == [
        ("text", None), ("tool_call", {"status": "running", "title": "Run all tests"})]
    assert session_of(hand_bank, D)["meta"]["last_turn"] == "open"


def test_kilo_database(tmp_path: Path) -> None:
    bank, problems = read(tmp_path, "kilo", data_dir(tmp_path, KILO_HAND, "kilo.sql"))
    assert problems == 0  # kilo_board and storage/session_diff are not sessions
    [s] = sessions_of(bank)
    assert (s["native_id"], s["agent_version"], s["model"], s["title"]) == (K, "7.7.7", "kilo-auto/balanced",
                                                                            "List the TODOs in src")
    assert shape(bank, K) == [
        ("user", "text", '"list the TODOs in src"'),  # `kilo run` quoted its argument: kept as stored
        ("assistant", "tool_call", "grep: TODO"),
        ("tool", "tool_result", "src/parser.py:3: # TODO:"),
        ("assistant", "meta", "step finished: tool-call"),
        ("assistant", "text", "One TODO: src/parser.py "),
        ("assistant", "meta", "step finished: stop"),
        ("user", "text", "Explain how to handle qu"),
        ("assistant", "text", "Quoted fields need a sma"),
        ("assistant", "meta", "step finished: length"),
        ("system", "text", "The model hit its output"),  # Kilo's notice (an ignored part), not the model's
    ]
    assert s["meta"]["last_turn"] == "complete"


def test_kilos_transient_progress_line_is_not_a_message(tmp_path: Path) -> None:
    """Kilo 7.7.7 writes "⠋ Initializing snapshot…" as a text part while a snapshot takes over half a second,
    advances its spinner, then removes the part: read live, it must not become an event a clean read lacks."""
    root = data_dir(tmp_path, KILO_HAND, "kilo.sql")
    agent = sqlite3.connect(root / "kilo.db")
    message = agent.execute("SELECT id FROM message WHERE session_id = ? AND json_extract(data, '$.role') = "
                            "'assistant' ORDER BY id LIMIT 1", (K,)).fetchone()[0]
    agent.execute("INSERT INTO part VALUES ('prt_aaaaaaaaaaaa00000000000001', ?, ?, 1, 1, ?)", (message, K, orjson.dumps(
        {"type": "text", "text": "\u280b Initializing snapshot\u2026", "synthetic": True,
         "metadata": {"kilocode.lifecycle": "transient"}}).decode()))
    agent.commit()
    agent.close()
    bank, problems = read(tmp_path, "kilo", root)
    assert problems == 0
    assert not any("Initializing snapshot" in e["text"] for e in events_of(bank, K))


# -- the storage/ tree, and both layouts ---------------------------------------------------------
def test_legacy_tree(tmp_path: Path) -> None:
    bank, problems = read(tmp_path, "opencode", HAND)  # no database: only the tree
    assert problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {L, L2}
    s = session_of(bank, L)
    assert (s["cwd"], s["agent_version"], s["title"], s["meta"]["last_turn"]) == (
        "/home/dev/src/demo-repo", "1.1.48", "Add a --strict flag", "failed")
    assert shape(bank, L) == [
        ("user", "text", "Add a --strict flag that"),
        ("assistant", "thinking", "A flag in cli.py, passed"),
        ("assistant", "tool_call", "edit: /home/dev/src/demo"),
        ("tool", "tool_result", "Edit applied successfull"),
        ("assistant", "tool_call", "task: Write the tests"),
        ("tool", "tool_result", "Added tests/test_strict."),
        ("assistant", "meta", "step finished: tool-call"),
        ("assistant", "text", "Done: `--strict` rejects"),
        ("assistant", "meta", "step finished: stop"),
        ("user", "text", "Now document it in the R"),
        ("system", "meta", "ProviderAuthError: Inval"),
    ]
    assert (session_of(bank, L2)["parent_native_id"], events_of(bank, L2)[0]["role"]) == (L, "system")


def test_both_layouts_store_each_session_once(tmp_path: Path) -> None:
    root = data_dir(tmp_path, HAND)
    bank, _ = read(tmp_path, "opencode", root)
    legacy = event_identities(bank)
    # The upgrade: opencode migrates the tree into its new database (same ids), then goes on in it.
    build_db(root / "opencode.db", HAND / "opencode.sql", HAND / "migrated.sql")
    bank, problems = read(tmp_path, "opencode", root)
    assert problems == 0
    both = event_identities(bank)
    assert len(both) == len({(h, s, uid) for h, s, uid, *_ in both})  # no uid twice
    assert [i for i in both if i[1] in (L, L2)] == legacy  # the migrated rows added nothing
    # The database alone (the tree deleted) gives the very same identities: ids are the file names.
    alone = tmp_path / "alone"
    alone.mkdir()
    build_db(alone / "opencode.db", HAND / "opencode.sql", HAND / "migrated.sql")
    db_bank, _ = read(tmp_path, "opencode", alone, "alone.sqlite")
    assert [i for i in event_identities(db_bank) if i[1] in (L, L2)] == legacy
    # A fresh bank reading the upgraded install gives the same.
    fresh, problems = read(tmp_path, "opencode", root, "fresh.sqlite")
    assert problems == 0 and event_identities(fresh) == both
    assert {s["native_id"] for s in sessions_of(fresh)} == {A, B, C, D, L, L2}


# -- live updates --------------------------------------------------------------------------------
def test_a_part_updated_after_a_read_is_revised(tmp_path: Path) -> None:
    root = data_dir(tmp_path, HAND, "opencode.sql")
    bank, _ = read(tmp_path, "opencode", root)
    before = events_of(bank, D)
    agent = sqlite3.connect(root / "opencode.db")
    [(part_id, data)] = agent.execute(
        "SELECT id, data FROM part WHERE session_id = ? AND json_extract(data, '$.type') = 'tool'", (D,)).fetchall()
    tool = orjson.loads(data)
    tool["state"] = {**tool["state"], "status": "completed", "output": "212 passed", "time": {
        "start": tool["state"]["time"]["start"], "end": tool["state"]["time"]["start"] + 40000}}
    later = 1795172500000
    agent.execute("UPDATE part SET data = ?, time_updated = ? WHERE id = ?", (orjson.dumps(tool).decode(), later,
                                                                             part_id))
    [(message_id, message)] = agent.execute(
        "SELECT id, data FROM message WHERE session_id = ? AND json_extract(data, '$.role') = 'assistant'",
        (D,)).fetchall()
    done = {**orjson.loads(message), "finish": "stop"}
    done["time"]["completed"] = later
    agent.execute("UPDATE message SET data = ?, time_updated = ? WHERE id = ?", (orjson.dumps(done).decode(), later,
                                                                                message_id))
    agent.commit()
    agent.close()
    bank, problems = read(tmp_path, "opencode", root)
    after = events_of(bank, D)
    assert problems == 0
    assert [e["uid"] for e in after] == [e["uid"] for e in before] + [f"{part_id}:result"]
    assert after[1]["seq"] == before[1]["seq"] and after[1]["meta"]["status"] == "completed"  # in place
    assert (after[2]["text"], after[2]["tool_call_id"]) == ("212 passed", after[1]["tool_call_id"])
    assert session_of(bank, D)["meta"]["last_turn"] == "complete"


def test_an_unknown_part_type_is_drift(tmp_path: Path) -> None:
    root = data_dir(tmp_path, HAND, "opencode.sql")
    agent = sqlite3.connect(root / "opencode.db")
    message = agent.execute("SELECT id FROM message WHERE session_id = ? ORDER BY id LIMIT 1", (D,)).fetchone()[0]
    agent.execute("INSERT INTO part VALUES ('prt_zzzzzzzzzzzz00000000000000', ?, ?, 1, 1, ?)",
                  (message, D, '{"type": "hologram", "text": "?"}'))
    agent.commit()
    agent.close()
    bank, problems = read(tmp_path, "opencode", root)
    assert problems == 1
    with open_bank(bank) as b:
        assert b.harness_stats()["opencode"]["drift"] == {"part type='hologram'": 1}
    assert len(events_of(bank, D)) == 2  # the rest still imports


# -- real captures -------------------------------------------------------------------------------
def captures() -> list[tuple[str, str]]:
    return [(h, p.name) for h, base in REAL.items() if base.is_dir()
            for p in sorted(base.iterdir()) if (p / DB_NAME[h]).exists()]


def real_copy(tmp: Path, harness: str, scenario: str) -> Path:
    """A copy of a capture: opening a database, even read-only, leaves -wal/-shm files beside it."""
    if not (REAL[harness] / scenario / DB_NAME[harness]).exists():
        pytest.skip(f"no real {harness} capture {scenario!r}")
    return Path(shutil.copytree(REAL[harness] / scenario, tmp / "real" / scenario,
                                ignore=shutil.ignore_patterns("*-wal", "*-shm", "dump.json")))


@pytest.mark.parametrize(("harness", "scenario"), captures())
def test_real_capture_reads_cleanly(tmp_path: Path, harness: str, scenario: str) -> None:
    bank, problems = read(tmp_path, harness, real_copy(tmp_path, harness, scenario))
    assert problems == 0
    sessions = sessions_of(bank)
    dump = orjson.loads((REAL[harness] / scenario / "dump.json").read_bytes())
    rows = {r["id"]: r for r in dump["session"]["rows"]}
    assert {s["native_id"] for s in sessions} == set(rows)
    for s in sessions:
        row = rows[s["native_id"]]
        assert (s["cwd"], s["agent_version"], s["parent_native_id"]) == (row["directory"], VERSION[harness],
                                                                         row["parent_id"])
        assert s["bank_id"] == "coding-agent::demo-repo" and s["model"] == "fake-model"
        assert events_of(bank, s["native_id"])
    parts = [r for r in dump["part"]["rows"] if r["data"]["type"] not in opencode.BOOKKEEPING_PARTS]
    tools = [r for r in parts if r["data"]["type"] == "tool"]
    assert len(events_of(bank)) == len(parts) + len(tools)  # one event a part, two a finished tool


def real_bank(tmp_path: Path, harness: str, scenario: str) -> Path:
    return read(tmp_path, harness, real_copy(tmp_path, harness, scenario), f"{scenario}.sqlite")[0]


@pytest.mark.parametrize("harness", ["opencode", "kilo"])
def test_real_two_turns_in_order(tmp_path: Path, harness: str) -> None:
    bank = real_bank(tmp_path, harness, "two_turns")
    [s] = sessions_of(bank)
    events = events_of(bank)
    assert [(e["role"], e["kind"], e["text"][:16]) for e in events] == [
        ("user", "text", '"say hi"'),  # `run` re-quotes an argument with spaces: stored, and kept, so
        ("assistant", "text", "Hi! I am the fak"),
        ("assistant", "meta", "step finished: s"),
        ("user", "text", '"READ_FILE /tmp/'),
        ("assistant", "tool_call", "read: /tmp/cap-k" if harness == "kilo" else "read: /tmp/cap-o"),
        ("tool", "tool_result", "<path>/tmp/cap-k" if harness == "kilo" else "<path>/tmp/cap-o"),
        ("assistant", "meta", "step finished: t"),
        ("assistant", "text", "The file says: <"),
        ("assistant", "meta", "step finished: s"),
    ]
    assert events[4]["tool_call_id"] == events[5]["tool_call_id"] and events[5]["tool_name"] == "read"
    assert s["native_id"].startswith("ses_") and s["parent_native_id"] is None
    assert (s["title"], s["title_source"]) == ("Fake session title", "ai")  # the small model's answer
    assert s["meta"]["last_turn"] == "complete"


@pytest.mark.parametrize("harness", ["opencode", "kilo"])
def test_real_thinking_and_tool_error(tmp_path: Path, harness: str) -> None:
    thinking = real_bank(tmp_path, harness, "thinking")
    assert [e["kind"] for e in events_of(thinking)] == ["text", "thinking", "text", "meta"]
    [s] = sessions_of(thinking)
    # `kilo run` exits before its title request is answered: the placeholder stays, the prompt names it.
    expected = ('"THINK about it, then say hi"', "first-prompt") if harness == "kilo" else ("Fake session title",
                                                                                           "ai")
    assert (s["title"], s["title_source"]) == expected
    errored = real_bank(tmp_path, harness, "tool_error")
    results = [e for e in events_of(errored) if e["kind"] == "tool_result"]
    assert [(r["is_error"], r["text"][:15]) for r in results] == [(True, "File not found:")]


# -- roots ---------------------------------------------------------------------------------------
def test_roots_follow_the_agents_variables(tmp_path: Path) -> None:
    home = tmp_path
    assert opencode_stores.opencode_roots({}, home) == [home / ".local/share/opencode"]
    assert opencode_stores.kilo_roots({}, home) == [home / ".local/share/kilo"]
    assert opencode_stores.opencode_roots({"XDG_DATA_HOME": "/srv/xdg"}, home) == [Path("/srv/xdg/opencode")]
    assert opencode_stores.kilo_roots({"XDG_DATA_HOME": "/srv/xdg"}, home) == [Path("/srv/xdg/kilo")]
    assert opencode_stores.opencode_roots({"OPENCODE_DB": "/srv/oc/opencode.db"}, home) == [
        home / ".local/share/opencode", Path("/srv/oc")]
    assert opencode_stores.kilo_roots({"KILO_DB": "/srv/k/kilo.db"}, home) == [home / ".local/share/kilo", Path("/srv/k")]
    # Relative to the data dir, as the agents resolve it; ":memory:" is no store at all.
    assert opencode_stores.opencode_roots({"OPENCODE_DB": "alt/opencode.db"}, home)[1] == home / ".local/share/opencode/alt"
    assert opencode_stores.kilo_roots({"KILO_DB": ":memory:"}, home) == [home / ".local/share/kilo"]


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    row = {"id": "prt_1", "message_id": "msg_1", "session_id": "ses_1", "data": '{"type":"reasoning","text":"x","time":5}',
           "message": '{"role":"assistant"}'}
    raw = orjson.dumps({"table": "part", "row": row})
    batch = opencode.parse(SourceRef(PurePath("/o/opencode.db"), PurePath("/o"), "db"), [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "reasoning part of unexpected shape: a number where an object was expected")]


# -- the storage/ tree as opencode joins it ------------------------------------------------------
L2_PROMPT = "msg_bc1f4c7e40013YcT1Pd1weppwU"  # L2's first message (the task), one text part
L2_REPLY = "msg_bc1f4caa0001wkFII5xLhsHv41"
L2_TASK = "prt_bc1f4c7ee001t51V65NBoga3bc"


def _storage(tmp: Path) -> Path:
    return data_dir(tmp, HAND) / "storage"


def _rewrite(path: Path, **fields: object) -> None:
    path.write_bytes(orjson.dumps({**orjson.loads(path.read_bytes()), **fields}, option=orjson.OPT_INDENT_2))


def test_a_part_belongs_to_the_message_whose_folder_holds_it(tmp_path: Path) -> None:
    """opencode lists ``part/<messageID>/`` and ``message/<sessionID>/`` (its migration takes every id
    from the paths, "not JSON content"): a document naming another message or session is still the
    one its folder says."""
    storage = _storage(tmp_path)
    _rewrite(storage / "part" / L2_PROMPT / f"{L2_TASK}.json", messageID="msg_elsewhere")
    _rewrite(storage / "message" / L2 / f"{L2_REPLY}.json", sessionID=L)
    bank, problems = read(tmp_path, "opencode", storage.parent)
    assert problems == 0
    assert shape(bank, L2)[0] == ("system", "text", "Write tests for --strict")
    assert {s["native_id"] for s in sessions_of(bank)} == {L, L2}


def test_a_session_file_named_for_another_session_is_said(tmp_path: Path) -> None:
    """Its messages are looked for under the file's name (as the migration does); a document holding
    another id is no silent loss."""
    storage = _storage(tmp_path)
    (session,) = (storage / "session").glob(f"*/{L2}.json")
    _rewrite(session, id="ses_other")
    bank, problems = read(tmp_path, "opencode", storage.parent)
    assert problems == 1
    with open_bank(bank) as b:
        (detail,) = [r[0] for r in b.conn.execute("SELECT detail FROM problems")]
    assert detail == f"session file {L2}.json holds session ses_other: its messages are read from message/{L2}/"


def test_two_parts_sharing_an_id_are_both_kept(tmp_path: Path) -> None:
    """The same part id in two messages' folders (a copied file): each is kept, the later one under
    ``<id>#2``, and a second reading gives the same uids."""
    storage = _storage(tmp_path)
    copy = orjson.loads((storage / "part" / L2_PROMPT / f"{L2_TASK}.json").read_bytes())
    (storage / "part" / L2_REPLY / f"{L2_TASK}.json").write_bytes(
        orjson.dumps({**copy, "messageID": L2_REPLY, "text": "the copy"}, option=orjson.OPT_INDENT_2))
    bank, problems = read(tmp_path, "opencode", storage.parent)
    again, _ = read(tmp_path, "opencode", storage.parent, "again.sqlite")
    assert problems == 0
    texts = {e["uid"]: e["text"] for e in events_of(bank, L2) if e["uid"].startswith(L2_TASK)}
    assert texts == {L2_TASK: "Write tests for --strict.", f"{L2_TASK}#2": "the copy"}
    assert event_identities(again) == event_identities(bank)
