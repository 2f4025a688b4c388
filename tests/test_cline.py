"""Cline family: what the fixtures must read as (fixtures/cline/hand/*/README.md, fixtures/cline/SOURCE.md).

Four harnesses from one module: ``cline`` (the SDK store), ``cline-legacy`` (the extension's task folders),
``roo-code`` and ``kilo-code``. The SDK's sessions.db is kept as SQL text; each test builds it in a copy.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path, PurePath
from typing import Any

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.parsers import cline
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "cline" / "hand"
CWD = "/home/dev/src/demo-repo"
HARNESSES = {
    cline.CLINE_NAME: Harness(cline.CLINE_NAME, cline.cline_roots, cline.CLINE_SOURCES, cline.parse, "Cline",
                              cline.CLINE_PROCESSES),
    cline.CLINE_LEGACY_NAME: Harness(cline.CLINE_LEGACY_NAME, cline.cline_legacy_roots, cline.CLINE_LEGACY_SOURCES,
                                     cline.parse, "Cline (legacy tasks)", cline.CLINE_LEGACY_PROCESSES),
    cline.ROO_NAME: Harness(cline.ROO_NAME, cline.roo_roots, cline.ROO_SOURCES, cline.parse, "Roo Code",
                            cline.ROO_PROCESSES),
    cline.KILO_CODE_NAME: Harness(cline.KILO_CODE_NAME, cline.kilo_code_roots, cline.KILO_CODE_SOURCES, cline.parse,
                                  "Kilo Code (legacy extension)", cline.KILO_CODE_PROCESSES),
}
EXTENSION = {"roo": "rooveterinaryinc.roo-cline", "kilo": "kilocode.kilo-code", "legacy": "saoudrizwan.claude-dev"}

# SDK sessions (hand/sdk): the CLI session, its subagent, a VS Code fork of it, one that died early.
S1, SUB, S2, S3 = ("1785000000000_ab12c", "1785000000000_ab12c__agent_7Qx", "1785000900000_zz9k1",
                   "1785001800000_q0q0q")
L1, L2, L3 = "1755000000000", "1745000000000", "1750000000000"  # legacy Cline tasks
R1, R2 = "0c6b2f1e-5a7d-4e3b-9c21-8f4d6a0b3e57", "7d3e9a4c-1b2f-4c6d-8e5a-2f9b0c7d1a63"  # Roo parent, subtask
K1 = "b8f1c2d3-4e5f-4a6b-9c7d-0e1f2a3b4c5d"  # Kilo Code


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, harness in HARNESSES.items():
        monkeypatch.setitem(parsers.HARNESSES, name, harness)


def build_db(data: Path) -> Path:
    db = data / "db" / "sessions.db"
    conn = sqlite3.connect(db)
    try:
        conn.executescript((data / "db" / "sessions.sql").read_text())
        conn.commit()
    finally:
        conn.close()
    return db


def place(tmp: Path, tree: str) -> tuple[Path, dict[str, str]]:
    """A copy of a hand/ tree where its agent looks for it: (home, env)."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    if tree in ("sdk", "legacy"):  # both live under the Cline data dir ($CLINE_DATA_DIR)
        data = tmp / "cline-data"
        shutil.copytree(HAND / tree, data, dirs_exist_ok=True, ignore=shutil.ignore_patterns("README.md"))
        if tree == "sdk":
            build_db(data)
        return home, {"HOME": str(home), "CLINE_DATA_DIR": str(data)}
    target = home / ".config" / "Code" / "User" / "globalStorage" / EXTENSION[tree]
    shutil.copytree(HAND / tree, target, ignore=shutil.ignore_patterns("README.md"))
    return home, {"HOME": str(home)}


def read(tmp: Path, tree: str, harness: str) -> tuple[Path, Any]:
    home, env = place(tmp, tree)
    bank = tmp / "bank.sqlite"
    return bank, scan(home, bank, (harness,), env=env).harnesses[harness]


def problems(bank: Path) -> list[tuple]:
    handle = open_bank(bank)
    try:
        return [tuple(r) for r in handle.conn.execute("SELECT line, kind, detail FROM problems ORDER BY line")]
    finally:
        handle.close()



def rows(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:24], e["tool_name"], e["tool_call_id"], e["is_error"])
            for e in events_of(bank, sid)]


def facts(bank: Path, sid: str) -> tuple:
    s = session_of(bank, sid)
    return (s["cwd"], s["title"], s["title_source"], s["model"], s["state"], s["parent_native_id"], s["parent_kind"],
            s["agent_version"], s["meta"].get("last_turn"))


# -- the SDK store --------------------------------------------------------------------------------
@pytest.fixture
def sdk_bank(tmp_path: Path) -> Path:
    bank, report = read(tmp_path, "sdk", cline.CLINE_NAME)
    assert report.problems == 0 and problems(bank) == []
    return bank


def test_sdk_sessions(sdk_bank: Path) -> None:
    title = 'Add a /health route to src/server.ts that returns {"ok": true}'
    assert facts(sdk_bank, S1) == (CWD, title, "summary", "claude-sonnet-4-6", "ended", None, None, "3.0.56",
                                   "complete")
    assert facts(sdk_bank, SUB) == (CWD, "Write tests for GET /health in tests/health.test.ts", "summary",
                                    "claude-sonnet-4-6", "ended", S1, "subagent", "3.0.56", "complete")
    # A fork still running: no end state; the database says so, the transcript's last turn is the user's.
    assert facts(sdk_bank, S2) == (CWD, f"{title} (fork)", "summary", "gpt-5.1-codex", "unknown", S1, "fork",
                                   "4.1.13", "open")
    # Only in the database (it died before saving a message): a session without events, ended.
    assert facts(sdk_bank, S3)[:5] == (f"{CWD}/web", "Bump the web package to React 19", "summary",
                                       "claude-sonnet-4-6", "ended")
    assert session_of(sdk_bank, S3)["meta"]["status"] == "failed" and rows(sdk_bank, S3) == []
    assert session_of(sdk_bank, S1)["started_at"] == "2026-07-25T17:20:00.000Z"
    assert session_of(sdk_bank, S2)["meta"]["source"] == "vscode"


def test_sdk_cli_session_in_order(sdk_bank: Path) -> None:
    assert rows(sdk_bank, S1) == [
        ("user", "text", "Add a /health route to s", None, None, False),  # inside <user_input>
        ("system", "text", "[file: /home/dev/src/dem", None, None, False),  # the attached file
        ("assistant", "thinking", "The file is attached; re", None, None, False),
        ("assistant", "text", "I'll read the server fil", None, None, False),
        ("assistant", "tool_call", "read_files: {\"paths\":[\"/", "read_files", "toolu_01Read", False),
        ("tool", "tool_result", "import express from \"exp", "read_files", "toolu_01Read", False),
        ("assistant", "tool_call", "editor: /home/dev/src/de", "editor", "toolu_02Edit", False),
        ("tool", "tool_result", "old_text not found in th", "editor", "toolu_02Edit", True),
        ("assistant", "tool_call", "editor: /home/dev/src/de", "editor", "toolu_03Edit", False),
        ("tool", "tool_result", "Edited src/server.ts", "editor", "toolu_03Edit", False),
        ("assistant", "text", "Added `GET /health`, whi", None, None, False),
        ("system", "compaction", "## Goal\nAdd GET /health ", None, None, False),  # the compaction sidecar
        ("user", "text", "Now have a subagent writ", None, None, False),
        ("system", "text", "<mode_notice>The user sw", None, None, False),  # the runtime's notice
        ("assistant", "tool_call", "spawn_agent: {\"task\":\"Wr", "spawn_agent", "toolu_04Spawn", False),
        ("tool", "tool_result", "Wrote tests/health.test.", "spawn_agent", "toolu_04Spawn", False),
        ("assistant", "text", "The subagent wrote `test", None, None, False),
    ]
    events = events_of(sdk_bank, S1)
    assert events[0]["ts"] == "2026-07-25T17:20:01.000Z" and events[1]["meta"]["injected"]
    assert events[10]["usage"] == {"in": 2100, "out": 150, "cache_read": 1200, "cache_write": 300}
    assert events[10]["meta"] == {"cost": 0.0123} and events[11]["meta"]["messages_before"] == 8


def test_sdk_subagent_and_fork(sdk_bank: Path) -> None:
    assert rows(sdk_bank, SUB) == [
        ("system", "text", "Write tests for GET /hea", None, None, False),  # the parent agent's task
        ("assistant", "tool_call", "run_commands: {\"commands", "run_commands", "toolu_11Bash", False),
        ("tool", "tool_result", " ✓ tests/health.test.ts ", "run_commands", "toolu_11Bash", False),
        ("assistant", "text", "Wrote tests/health.test.", None, None, False),
    ]
    assert events_of(sdk_bank, SUB)[0]["meta"] == {"from_agent": True}
    assert rows(sdk_bank, S2) == [
        ("user", "text", "Add a /health route to s", None, None, False),
        ("assistant", "text", "Added `GET /health`.", None, None, False),
        ("user", "text", "/review the /health hand", None, None, False),  # <user_command slash="review">
        ("user", "text", "[image]", None, None, False),
        ("assistant", "thinking", "[redacted thinking]", None, None, False),
        ("assistant", "text", "The handler is fine; it ", None, None, False),
        ("system", "text", "<SYSTEM_NOTICE>\nYou have", None, None, False),  # metadata.kind completion_reminder
        ("user", "text", "yes, add the version", None, None, False),
    ]


def test_sdk_rewrite_adds_only_new_messages(tmp_path: Path) -> None:
    home, env = place(tmp_path, "sdk")
    bank = tmp_path / "bank.sqlite"
    path = Path(env["CLINE_DATA_DIR"]) / "sessions" / S1 / f"{S1}.messages.json"
    doc = orjson.loads(path.read_bytes())
    doc["messages"].append({"id": "e1", "role": "assistant", "content": []})  # a turn that produced nothing
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    scan(home, bank, (cline.CLINE_NAME,), env=env)
    before = events_of(bank, S1)
    # A resume re-mints message ids, re-splits messages and writes an empty one as the SDK's stand-in text;
    # then one more turn is appended.
    for n, message in enumerate(doc["messages"]):
        message["id"] = f"msg_resumed_{n}"
    doc["messages"][-1]["content"] = [{"type": "text", "text": "ERROR: EMPTY CONTENT"}]
    first = doc["messages"][1]  # thinking, text and a tool call: now two messages
    doc["messages"][1:2] = [{**first, "content": first["content"][:2]},
                            {**first, "id": f"{first['id']}_part_1", "content": first["content"][2:]}]
    doc["messages"] += [
        {"id": "x1", "role": "user", "content": [{"type": "text", "text": '<user_input mode="act">thanks</user_input>'}]},
        {"id": "x2", "role": "assistant", "content": [{"type": "text", "text": "You're welcome."}], "ts": 1785000999000,
         "metrics": {"inputTokens": 10, "outputTokens": 3, "cacheReadTokens": 0, "cacheWriteTokens": 0, "cost": 0.1}}]
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    assert scan(home, bank, (cline.CLINE_NAME,), env=env).harnesses[cline.CLINE_NAME].events_added == 2
    after = events_of(bank, S1)
    assert after[: len(before)] == before
    assert [(e["role"], e["text"]) for e in after[len(before):]] == [("user", "thanks"), ("assistant", "You're welcome.")]


def test_sdk_database_is_read_by_watermark(tmp_path: Path) -> None:
    home, env = place(tmp_path, "sdk")
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, (cline.CLINE_NAME,), env=env)
    assert session_of(bank, S2)["state"] == "unknown"
    conn = sqlite3.connect(Path(env["CLINE_DATA_DIR"]) / "db" / "sessions.db")
    conn.execute("UPDATE sessions SET status = 'cancelled', ended_at = ?, exit_code = 0, updated_at = ? "
                 "WHERE session_id = ?", ("2026-07-25T18:30:00.000Z", "2026-07-25T18:30:00.000Z", S2))  # now: after every row
    conn.commit()
    conn.close()
    scan(home, bank, (cline.CLINE_NAME,), env=env)
    assert (session_of(bank, S2)["state"], session_of(bank, S2)["meta"]["status"]) == ("ended", "cancelled")


# -- captured runs of the real CLI 3.0.65 (real/sdk/<scenario>, see real/CAPTURE.md) ----------------
REAL = FIXTURES / "cline" / "real" / "sdk"


def read_real(tmp: Path, scenario: str, edit: Any = None) -> tuple[Path, str]:
    """A copy of a captured data dir, ``edit(data, session id)`` applied, read: (bank, the session's id)."""
    data, home = tmp / "cline-data", tmp / "home"
    shutil.copytree(REAL / scenario, data)
    home.mkdir()
    sid = next((data / "sessions").iterdir()).name
    if edit:
        edit(data, sid)
    bank = tmp / "bank.sqlite"
    report = scan(home, bank, (cline.CLINE_NAME,), env={"HOME": str(home), "CLINE_DATA_DIR": str(data)})
    assert report.harnesses[cline.CLINE_NAME].problems == 0 and problems(bank) == []
    return bank, sid


def test_real_tool_result_is_the_tools_operation_results(tmp_path: Path) -> None:
    """The SDK keeps a built-in tool's array output as it is: [{query, result, error?, success}], no is_error."""
    bank, sid = read_real(tmp_path, "two_turns")
    result = next(e for e in events_of(bank, sid) if e["kind"] == "tool_result")
    assert (result["tool_name"], result["is_error"]) == ("read_files", False)
    assert result["text"].endswith("/demo-repo/notes.txt\n1 | These are the demo notes.\n2 | The secret word is pelican.")
    bank, sid = read_real(tmp_path / "error", "tool_error")
    result = next(e for e in events_of(bank, sid) if e["kind"] == "tool_result")
    assert result["is_error"] is True and "/missing.txt\nError reading file: ENOENT" in result["text"]


@pytest.mark.parametrize(("content", "text"), [
    ([{"query": "ls", "result": "a\nb", "success": True}, {"query": "pwd", "result": "", "error": "boom",
                                                           "success": False}], "ls\na\nb\npwd\nboom"),
    ([{"query": "/x.png", "result": [{"type": "text", "text": "an image:"}, {"type": "image"}], "success": True}],
     "/x.png\nan image:\n[image]"),
    ([{"result": {"n": 1}, "success": True}, {"other": 2}], '{"n":1}\n{"other":2}'),
    ("plain text", "plain text"),
])
def test_sdk_tool_output_parts(content: Any, text: str) -> None:
    assert cline._text_of({"type": "tool_result", "content": content}) == text


def test_real_sessions_status_branch_and_usage(tmp_path: Path) -> None:
    bank, sid = read_real(tmp_path, "two_turns")  # a one-shot run, then a turn over ACP: left "idle"
    s = session_of(bank, sid)
    assert (s["state"], s["meta"]["status"], s["meta"]["last_turn"], s["branch"], s["model"]) == (
        "unknown", "idle", "complete", "main", "fake-model")
    assert [e["usage"] for e in events_of(bank, sid) if e["usage"]] == [
        {"in": 5444, "out": 20}, {"in": 3074, "out": 59}, {"in": 3195, "out": 53}]  # every model reply has metrics
    bank, sid = read_real(tmp_path / "thinking", "thinking")
    assert [(e["kind"], e["text"][:20]) for e in events_of(bank, sid)][1:] == [
        ("thinking", "The user wrote 6 wor"), ("text", "Hi! I am the fake mo")]
    assert (session_of(bank, sid)["state"], session_of(bank, sid)["meta"]["exit_code"]) == ("ended", 0)


def test_real_run_error_is_a_notice_that_fails_the_turn(tmp_path: Path) -> None:
    """A run that fails appends a display-only assistant message (never sent to the model) with its error."""
    def cline_provider(data: Path, sid: str) -> None:  # such a message names the model of the failed run
        path = data / "sessions" / sid / f"{sid}.messages.json"
        doc = orjson.loads(path.read_bytes())
        doc["messages"][1]["modelInfo"] = {"id": "anthropic/claude-sonnet-5", "provider": "cline"}
        path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))

    bank, sid = read_real(tmp_path, "api_error", cline_provider)
    assert [(e["role"], e["kind"], e["text"][:22], e["meta"]) for e in events_of(bank, sid)] == [
        ("user", "text", "say hi", None),
        ("system", "meta", "Cannot connect to API:", {"display_role": "error"})]
    s = session_of(bank, sid)
    assert (s["state"], s["meta"]["status"], s["meta"]["exit_code"], s["meta"]["last_turn"], s["model"]) == (
        "ended", "failed", 1, "failed", "fake-model")


def test_real_git_origin_and_terminal_marker_from_the_manifest(tmp_path: Path) -> None:
    def reconciled(data: Path, sid: str) -> None:  # what the next start's sweep and a remote make of it
        conn = sqlite3.connect(data / "db" / "sessions.db")
        meta = orjson.loads(conn.execute("SELECT metadata_json FROM sessions").fetchone()[0])
        meta.update(git={"branch": "main", "url": "https://example.invalid/demo.git"},
                    terminal_marker="failed_external_process_exit")
        conn.execute("UPDATE sessions SET status = 'failed', metadata_json = ?", (orjson.dumps(meta).decode(),))
        conn.commit()
        conn.close()

    bank, sid = read_real(tmp_path, "two_turns", reconciled)
    s = session_of(bank, sid)
    assert (s["state"], s["branch"], s["origin_url"], s["meta"]["terminal_marker"]) == (
        "ended", "main", "https://example.invalid/demo.git", "failed_external_process_exit")


# -- legacy Cline task folders --------------------------------------------------------------------
@pytest.fixture
def legacy_bank(tmp_path: Path) -> Path:
    bank, report = read(tmp_path, "legacy", cline.CLINE_LEGACY_NAME)
    assert report.problems == 0 and problems(bank) == []
    return bank


def test_legacy_sessions(legacy_bank: Path) -> None:
    assert facts(legacy_bank, L1) == (CWD, "Add a /health route to 'src/server.ts' (see below for file content)",
                                      "first-prompt", "claude-sonnet-4-5-20250929", "ended", None, None, "3.26.6",
                                      "complete")
    assert facts(legacy_bank, L2) == (CWD, "Why does `npm run build` fail?", "first-prompt", None, "unknown", None,
                                      None, None, "aborted")  # interrupted, then reopened (resume_task)
    # No taskHistory entry: the cwd comes from the first request's environment details.
    assert facts(legacy_bank, L3) == (CWD, "Plan a migration from express to fastify", "first-prompt",
                                      "claude-sonnet-4-5-20250929", "unknown", None, None, None, "complete")
    s = session_of(legacy_bank, L1)
    assert (s["started_at"], s["updated_at"]) == ("2025-08-12T12:00:00.000Z", "2025-08-12T12:00:37.300Z")
    assert s["meta"]["isFavorited"] is True and s["meta"]["host"] == "Visual Studio Code"


def test_legacy_native_tools_in_order(legacy_bank: Path) -> None:
    assert rows(legacy_bank, L1) == [
        ("user", "text", "Add a /health route to '", None, None, False),  # inside <task>
        ("system", "text", "<file_content path=\"src/", None, None, False),  # the @mention's content
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "thinking", "The route belongs next t", None, None, False),
        ("assistant", "text", "I'll check the server fi", None, None, False),
        ("assistant", "tool_call", "read_file: src/server.ts", "read_file", "toolu_01A1", False),
        ("tool", "tool_result", "[read_file for 'src/serv", "read_file", "toolu_01A1", False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "tool_call", "replace_in_file: src/ser", "replace_in_file", "toolu_01A2", False),
        ("tool", "tool_result", "[replace_in_file for 'sr", "replace_in_file", "toolu_01A2", True),  # denied
        ("user", "text", "Use an express.Router in", None, None, False),  # the <feedback> in that result
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "tool_call", "write_to_file: src/healt", "write_to_file", "toolu_01A3", False),
        ("tool", "tool_result", "[write_to_file for 'src/", "write_to_file", "toolu_01A3", False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "text", "The router is in place.", None, None, False),
        ("assistant", "tool_call", "attempt_completion: {\"re", "attempt_completion", "toolu_01A4", False),
    ]
    events = events_of(legacy_bank, L1)
    assert events[3]["usage"] == {"in": 1104, "out": 140, "cache_read": 4096}  # prompt counts the cached part
    assert events[0]["ts"] == "2025-08-12T12:00:01.500Z"


def test_legacy_xml_era_and_resumption(legacy_bank: Path) -> None:
    assert rows(legacy_bank, L2) == [
        ("user", "text", "Why does `npm run build`", None, None, False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "text", "<thinking>\nRun the build", None, None, False),  # the XML tool call stays text
        ("tool", "tool_result", "[execute_command for 'np", "execute_command", None, False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "text", "<ask_followup_question>\n", None, None, False),
        ("tool", "tool_result", "[ask_followup_question f", "ask_followup_question", None, False),
        ("user", "text", "Yes, remove it", None, None, False),  # the <answer>
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "text", "<replace_in_file>\n<path>", None, None, False),
    ]
    assert [r[:3] for r in rows(legacy_bank, L3)][3:7] == [
        ("tool", "tool_result", "[plan_mode_respond] Resu"),
        ("system", "text", "[TASK RESUMPTION] This t"),
        ("user", "text", "Start with step 2 only"),  # inside <user_message>
        ("system", "text", "New instructions for tas"),
    ]


def test_legacy_rewrite_adds_only_new_messages(tmp_path: Path) -> None:
    home = tmp_path / "home"
    task = home / ".config" / "Code" / "User" / "globalStorage" / EXTENSION["legacy"] / "tasks" / "1756000000000"
    bank = tmp_path / "bank.sqlite"
    shutil.copytree(HAND / "rewrite" / "before", task)
    scan(home, bank, (cline.CLINE_LEGACY_NAME,), env={"HOME": str(home)})
    before = events_of(bank, "1756000000000")
    assert session_of(bank, "1756000000000")["meta"]["last_turn"] == "open"
    shutil.copytree(HAND / "rewrite" / "after", task, dirs_exist_ok=True)
    report = scan(home, bank, (cline.CLINE_LEGACY_NAME,), env={"HOME": str(home)}).harnesses[cline.CLINE_LEGACY_NAME]
    after = events_of(bank, "1756000000000")
    assert report.events_added == 3 and after[: len(before)] == before
    assert [(e["role"], e["kind"], e["tool_call_id"]) for e in after[len(before):]] == [
        ("tool", "tool_result", "toolu_R1"), ("system", "text", None), ("assistant", "tool_call", "toolu_R2")]
    assert (session_of(bank, "1756000000000")["state"], session_of(bank, "1756000000000")["meta"]["last_turn"]) == (
        "ended", "complete")


# -- Roo Code and Kilo Code ------------------------------------------------------------------------
def test_roo_parent_and_subtask(tmp_path: Path) -> None:
    bank, report = read(tmp_path, "roo", cline.ROO_NAME)
    assert report.problems == 0 and {s["native_id"] for s in sessions_of(bank)} == {R1, R2}  # not _index.json
    assert facts(bank, R1) == (CWD, "Add a /health route, with tests", "first-prompt", None, "ended", None, None,
                               None, "complete")
    assert facts(bank, R2) == (CWD, "Write tests for GET /health in tests/health.test.ts", "first-prompt", None,
                               "ended", R1, "subagent", None, "complete")
    assert rows(bank, R1) == [
        ("user", "text", "Add a /health route, wit", None, None, False),  # inside <user_message>
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "thinking", "Read the server before e", None, None, False),  # a "reasoning" block
        ("assistant", "text", "Reading the server first", None, None, False),
        ("assistant", "tool_call", "read_file: {\"files\":[{\"p", "read_file", "toolu_R1read", False),
        ("tool", "tool_result", "File: src/server.ts\n1 | ", "read_file", "toolu_R1read", False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "tool_call", "new_task: {\"mode\":\"code\"", "new_task", "toolu_R1task", False),
        ("tool", "tool_result", "Subtask 7d3e9a4c-1b2f-4c", "new_task", "toolu_R1task", False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("system", "compaction", "[Sliding window truncati", None, None, False),  # the truncation marker
        ("assistant", "tool_call", "apply_diff: src/server.t", "apply_diff", "toolu_R1diff", False),
        ("tool", "tool_result", "{\"status\":\"denied\",\"feed", "apply_diff", "toolu_R1diff", True),
        ("user", "text", "Keep it in a separate ro", None, None, False),  # the denial's feedback
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "tool_call", "attempt_completion: {\"re", "attempt_completion", "toolu_R1done", False),
    ]
    assert rows(bank, R2)[0][:2] == ("system", "text") and events_of(bank, R2)[0]["meta"] == {"from_agent": True}


def test_roo_truncation_marker_inserted_mid_history_adds_only_it(tmp_path: Path) -> None:
    home, env = place(tmp_path, "roo")
    bank = tmp_path / "bank.sqlite"
    path = home / ".config" / "Code" / "User" / "globalStorage" / EXTENSION["roo"] / "tasks" / R1 / (
        "api_conversation_history.json")
    history = orjson.loads(path.read_bytes())
    scan(home, bank, (cline.ROO_NAME,), env=env)
    before = len(events_of(bank, R1))
    history.insert(2, {"role": "user", "content": "[Sliding window truncation: 1 messages hidden to reduce context]",
                       "ts": history[2]["ts"] - 1, "isTruncationMarker": True, "truncationId": "trunc-0"})
    path.write_bytes(orjson.dumps(history))
    assert scan(home, bank, (cline.ROO_NAME,), env=env).harnesses[cline.ROO_NAME].events_added == 1
    assert len(events_of(bank, R1)) == before + 1


def test_kilo_code_xml_tools_and_condense(tmp_path: Path) -> None:
    bank, report = read(tmp_path, "kilo", cline.KILO_CODE_NAME)
    assert report.problems == 0
    assert facts(bank, K1) == (CWD, "Rename the `app` export to `server`", "first-prompt", None, "unknown", None,
                               None, None, "complete")  # the last ask is a follow-up question
    assert rows(bank, K1) == [
        ("user", "text", "Rename the `app` export ", None, None, False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "text", "<search_files>\n<path>src", None, None, False),
        ("tool", "tool_result", "[search_files for '\\bapp", "search_files", None, False),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("assistant", "text", "<apply_diff>\n<path>src/s", None, None, False),
        ("tool", "tool_result", "[apply_diff for 'src/ser", "apply_diff", None, True),
        ("system", "text", "<environment_details>\n# ", None, None, False),
        ("system", "compaction", "## Conversation Summary\n", None, None, False),  # isSummary
        ("assistant", "text", "<ask_followup_question>\n", None, None, False),
    ]


# -- drift ---------------------------------------------------------------------------------------
def test_unknown_types_are_drift(tmp_path: Path) -> None:
    home, env = place(tmp_path, "legacy")
    task = Path(env["CLINE_DATA_DIR"]) / "tasks" / L1
    api = orjson.loads((task / "api_conversation_history.json").read_bytes())
    api[1]["content"].append({"type": "hologram", "data": "?"})
    api.append({"role": "critic", "content": "too terse"})
    ui = orjson.loads((task / "ui_messages.json").read_bytes())
    ui.insert(3, {"ts": 1755000003100, "type": "say", "say": "telepathy", "text": "?"})
    (task / "api_conversation_history.json").write_bytes(orjson.dumps(api))
    (task / "ui_messages.json").write_bytes(orjson.dumps(ui))
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (cline.CLINE_LEGACY_NAME,), env=env).harnesses[cline.CLINE_LEGACY_NAME]
    assert report.problems == 3
    # The bank keeps one problem per document (its line: 1 the history, 2 ui_messages.json) and kind.
    assert problems(bank) == [(1, "unknown_type", "message role='critic'"),
                              (2, "unknown_type", "ui message say='telepathy'")]
    assert len(events_of(bank, L1)) == 17  # everything else still reads


def test_sdk_unknown_block_and_status_are_drift(tmp_path: Path) -> None:
    home, env = place(tmp_path, "sdk")
    data = Path(env["CLINE_DATA_DIR"])
    path = data / "sessions" / S2 / f"{S2}.messages.json"
    doc = orjson.loads(path.read_bytes())
    doc["messages"][1]["content"].append({"type": "hologram"})
    doc["sparkles"] = True
    path.write_bytes(orjson.dumps(doc))
    conn = sqlite3.connect(data / "db" / "sessions.db")
    conn.execute("UPDATE sessions SET status = 'hibernating' WHERE session_id = ?", (S3,))
    conn.commit()
    conn.close()
    bank = tmp_path / "bank.sqlite"
    assert scan(home, bank, (cline.CLINE_NAME,), env=env).harnesses[cline.CLINE_NAME].problems == 3
    assert sorted(p[2] for p in problems(bank)) == ["content block type='hologram'", "session status='hibernating'"]


def test_a_torn_document_is_malformed_and_costs_nothing_else(tmp_path: Path) -> None:
    home, env = place(tmp_path, "legacy")
    (Path(env["CLINE_DATA_DIR"]) / "tasks" / L2 / "ui_messages.json").write_bytes(b'[{"ts":1745000000000,"ty')
    bank = tmp_path / "bank.sqlite"
    assert scan(home, bank, (cline.CLINE_LEGACY_NAME,), env=env).harnesses[cline.CLINE_LEGACY_NAME].problems == 1
    assert len(rows(bank, L2)) == 10 and [p[1] for p in problems(bank)] == ["malformed"]


# -- roots ---------------------------------------------------------------------------------------
def test_cline_roots_follow_its_variables(tmp_path: Path) -> None:
    home = tmp_path
    assert cline.cline_roots({}, home) == [home / ".cline/data/sessions", home / ".cline/data/db"]
    assert cline.cline_roots({"CLINE_DIR": "/opt/cline"}, home) == [Path("/opt/cline/data/sessions"),
                                                                   Path("/opt/cline/data/db")]
    assert cline.cline_roots({"CLINE_DIR": "/opt/cline", "CLINE_DATA_DIR": "/srv/d"}, home) == [
        Path("/srv/d/sessions"), Path("/srv/d/db")]
    assert cline.cline_roots({"CLINE_SESSION_DATA_DIR": "/s", "CLINE_DB_DATA_DIR": "/b"}, home) == [
        Path("/s"), Path("/b")]
    assert cline.cline_legacy_roots({"CLINE_DIR": "/opt/cline"}, home)[0] == Path("/opt/cline/data")


def test_extension_roots_cover_every_os_and_editor(tmp_path: Path) -> None:
    home = tmp_path
    roots = cline.cline_legacy_roots({}, home)
    assert roots[0] == home / ".cline" / "data"
    for app in ("Code", "Code - Insiders", "VSCodium", "Cursor"):
        for base in (home / ".config", home / "Library" / "Application Support", home / "AppData" / "Roaming"):
            assert base / app / "User" / "globalStorage" / "saoudrizwan.claude-dev" in roots
    assert home / ".vscode-server/data/User/globalStorage/saoudrizwan.claude-dev" in roots
    moved = cline.roo_roots({"XDG_CONFIG_HOME": "/x", "APPDATA": "C:/Users/d/AppData/Roaming"}, home)
    assert Path("/x/Cursor/User/globalStorage/rooveterinaryinc.roo-cline") in moved
    assert Path("C:/Users/d/AppData/Roaming/Code/User/globalStorage/rooveterinaryinc.roo-cline") in moved
    assert home / ".vscode-mock" / "global-storage" in moved  # the Roo CLI
    assert home / "Library/Application Support/VSCodium/User/globalStorage/kilocode.kilo-code" in (
        cline.kilo_code_roots({}, home))


@pytest.mark.parametrize("variable", ["CLINE_DIR", "CLINE_DATA_DIR", "split"])
def test_a_moved_cline_store_is_found(tmp_path: Path, variable: str) -> None:
    data = tmp_path / "elsewhere" / "data"
    shutil.copytree(HAND / "sdk", data, ignore=shutil.ignore_patterns("README.md"))
    build_db(data)
    env = {"HOME": str(tmp_path / "home"),
           **({"CLINE_DIR": str(data.parent)} if variable == "CLINE_DIR" else
              {"CLINE_DATA_DIR": str(data)} if variable == "CLINE_DATA_DIR" else
              {"CLINE_SESSION_DATA_DIR": str(data / "sessions"), "CLINE_DB_DATA_DIR": str(data / "db")})}
    (tmp_path / "home").mkdir()
    report = scan(tmp_path / "home", tmp_path / "bank.sqlite", (cline.CLINE_NAME,), env=env).harnesses[cline.CLINE_NAME]
    assert len(report.sessions) == 4 and report.problems == 0


@pytest.mark.parametrize("tree", ["roo", "kilo", "legacy"])
def test_extension_stores_are_found_under_macos_and_windows_layouts(tmp_path: Path, tree: str) -> None:
    harness = {"roo": cline.ROO_NAME, "kilo": cline.KILO_CODE_NAME, "legacy": cline.CLINE_LEGACY_NAME}[tree]
    home = tmp_path / "home"
    for base in (home / "Library" / "Application Support" / "Cursor", tmp_path / "roaming" / "VSCodium"):
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(HAND / tree, base / "User" / "globalStorage" / EXTENSION[tree])
        env = {"HOME": str(home), "APPDATA": str(tmp_path / "roaming")}
        report = scan(home, tmp_path / f"{base.name}.sqlite", (harness,), env=env).harnesses[harness]
        assert report.sessions and report.problems == 0
        shutil.rmtree(base)


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/k/tasks/t1/api_conversation_history.json"), PurePath("/k"), "cline")
    raw = b'[{"role":"user","content":5}]'
    batch = cline.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "messages[0] of unexpected shape: a number where an object or an array was expected")]


def test_a_lone_surrogate_in_a_task_history_costs_one_character_not_the_task(tmp_path: Path) -> None:
    """A task's history is one JSON document written by JSON.stringify: a lone surrogate in it (half an emoji,
    cut) is an escape orjson refuses, and the whole task was lost as one malformed record. It is read, the
    half shown as U+FFFD."""
    home = tmp_path / "home"
    task = home / ".config" / "Code" / "User" / "globalStorage" / EXTENSION["legacy"] / "tasks" / "1756000000000"
    bank = tmp_path / "bank.sqlite"
    shutil.copytree(HAND / "rewrite" / "before", task)
    history = task / "api_conversation_history.json"
    history.write_text(history.read_text().replace("say hi", "say hi \\ud83d", 1))
    report = scan(home, bank, (cline.CLINE_LEGACY_NAME,), env={"HOME": str(home)}).harnesses[cline.CLINE_LEGACY_NAME]
    assert report.problems == 0
    assert "say hi \ufffd" in events_of(bank, "1756000000000")[0]["text"]
