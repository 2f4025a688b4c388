"""Claude Code: what the fixtures must read as (fixtures/claude_code/hand/README.md, real/CAPTURE.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import claude_code
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, ClaudeSession, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "claude_code" / "hand"
REAL = FIXTURES / "claude_code" / "real"
MAIN = "6f1d2c9a-4b7e-4e2a-9c31-8d5f0a7b3e12"
LEGACY = "2b8e4f10-7c3d-4a9e-b5f2-0d1c6e9a8b47"


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("claude")
    bank = tmp / "bank.sqlite"
    report = scan(tmp, bank, ("claude-code",), env={"HOME": str(tmp), "CLAUDE_CONFIG_DIR": str(HAND)})
    assert report.harnesses["claude-code"].problems == 0
    return bank


def _final_output_tokens(path: Path) -> int:
    """Independent reckoning: per API message (message.id), the copy with the largest usage."""
    best: dict[str, tuple[int, int]] = {}
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        message = record.get("message") or {}
        if record.get("type") != "assistant" or message.get("model") == "<synthetic>":
            continue
        u = message.get("usage") or {}
        total = sum(
            u.get(k) or 0
            for k in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            )
        )
        key = message["id"]
        if total >= best.get(key, (-1, 0))[0]:
            best[key] = (total, u.get("output_tokens") or 0)
    return sum(out for _total, out in best.values())


def test_human_prompts_are_users_and_injected_text_is_not(hand_bank: Path) -> None:
    events = events_of(hand_bank, MAIN)
    prompts = [e["text"] for e in events if e["role"] == "user" and not (e["meta"] or {}).get("command")]
    assert [p[:30] for p in prompts] == [
        "The retry test in tests/test_c",
        "Don't touch the test. Make Ret",
        "The dashboard still shows retr",
        "[image: image/png, 81 bytes]",
        "also check whether CHANGELOG.m",
        "Add a CHANGELOG entry for the ",
        "retry the CHANGELOG entry",
        "Open a PR for the retry fix, t",
    ]
    queued = [e for e in events if (e["meta"] or {}).get("queued")]
    assert [e["text"] for e in queued] == ["also check whether CHANGELOG.md mentions the retry fix"]
    commands = [e["text"] for e in events if (e["meta"] or {}).get("command")]
    assert commands == ["/model opus", "/compact focus on the retry fix", "/rename retry-clock-fix"]
    injected = [e["text"] for e in events if (e["meta"] or {}).get("injected")]
    assert any(t.startswith("<task-notification>") for t in injected)
    assert sum(t.startswith("<local-command-caveat>") for t in injected) == 3
    assert not any(e["role"] == "user" and e["text"].startswith("[Request interrupted") for e in events)


def test_split_messages_tool_pairs_and_usage_once(hand_bank: Path) -> None:
    events = events_of(hand_bank, MAIN)
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_result"}
    assert [c["tool_name"] for c in calls] == [
        "Bash",
        "Task",
        "Edit",
        "Edit",
        "mcp__playwright__browser_take_screenshot",
        "Bash",
        "Agent",
        "Edit",
        "Bash",
        "Edit",
        "Edit",
        "Workflow",
    ]
    assert all(c["tool_call_id"] in results for c in calls)
    assert [results[c["tool_call_id"]]["tool_name"] for c in calls] == [c["tool_name"] for c in calls]
    errors = [
        results[c["tool_call_id"]]["text"][:20] for c in calls if results[c["tool_call_id"]]["is_error"]
    ]
    assert errors == ["The user doesn't wan", "<tool_use_error>Stri"]
    # 17 API messages from 26 assistant lines; usage counted once each, from the most complete copy.
    with_usage = [e for e in events if e["usage"]]
    assert len(with_usage) == 17
    assert with_usage[0]["usage"]["out"] == 187  # line 6's final count, not the placeholder 9 of lines 4-5
    assert sum(e["usage"]["out"] for e in with_usage) == _final_output_tokens(
        HAND / "projects" / "-home-dev-src-demo-repo" / f"{MAIN}.jsonl"
    )
    assert Counter(e["kind"] for e in events if e["role"] == "assistant") == {
        "text": 11,
        "tool_call": 12,
        "thinking": 3,
    }  # thinking includes one redacted_thinking


def test_compaction_titles_models_and_notices(hand_bank: Path) -> None:
    events = events_of(hand_bank, MAIN)
    compactions = [e for e in events if e["kind"] == "compaction"]
    assert [c["text"][:40] for c in compactions] == [
        "conversation compacted (trigger=manual, ",
        "This session is being continued from a p",
        "conversation compacted (trigger=auto, pr",
    ]
    session = session_of(hand_bank, MAIN)
    assert (session["title"], session["title_source"]) == ("retry-clock-fix", "custom")
    assert session["model"] == "claude-opus-4-8"  # the last real model; <synthetic> never counts
    assert session["agent_version"] == "2.1.239"
    assert session["cwd"] == "/home/dev/src/demo-repo" and session["branch"] == "main"
    api_error = [e for e in events if (e["meta"] or {}).get("api_error")]
    assert len(api_error) == 1 and api_error[0]["role"] == "system" and api_error[0]["usage"] is None
    assert "pull request: https://github.com/dev/demo-repo/pull/42" in [e["text"] for e in events]
    assert session_of(hand_bank, LEGACY)["title"] == "Speed up make lint"


def test_subagents_of_every_layout_are_linked_to_their_parent(hand_bank: Path) -> None:
    children = {s["native_id"]: s for s in sessions_of(hand_bank) if s["parent_native_id"]}
    assert {k: (v["parent_native_id"], v["parent_kind"]) for k, v in children.items()} == {
        f"{MAIN}:agent-a7c31e0f95b2d4e68": (MAIN, "subagent"),
        f"{MAIN}:agent-a4e9b2c70d1f3856b": (MAIN, "subagent"),
        f"{MAIN}:agent-a2d84b6e1f0c9a357": (MAIN, "subagent"),  # workflows/<run>/
        "agent-5e2b7c1d": (LEGACY, "subagent"),  # pre-2.1.2 sibling file
    }
    explore = children[f"{MAIN}:agent-a7c31e0f95b2d4e68"]
    assert explore["title"] == "Explore: Check CHANGELOG for retry fix"  # from agent-*.meta.json
    assert explore["meta"]["toolUseId"] == "toolu_01ucz5rm2g4aGnSb9OjWnS4I"
    assert [e["kind"] for e in events_of(hand_bank, explore["native_id"])] == [
        "text",
        "text",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "text",
    ]


def test_bookkeeping_files_are_not_sources(hand_bank: Path) -> None:
    from harvester.bank import open_bank

    bank = open_bank(hand_bank)
    try:
        paths = [c.path for c in bank.cursors()]
    finally:
        bank.close()
    assert not any(p.endswith(("journal.jsonl", ".meta.json", ".txt")) or "/sessions/" in p for p in paths)


@pytest.mark.parametrize(
    "scenario", ["two_turns", "thinking", "tool_error", "subagent", "compact", "fork", "live"]
)
def test_real_capture_reads_cleanly(tmp_path: Path, scenario: str) -> None:
    bank = tmp_path / "bank.sqlite"
    report = scan(
        tmp_path,
        bank,
        ("claude-code",),
        env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(REAL / scenario)},
    )
    assert report.harnesses["claude-code"].problems == 0
    sessions = sessions_of(bank)
    assert sessions and all(
        s["agent_version"] == "2.1.197" and s["bank_id"] == "coding-agent::demo-repo" for s in sessions
    )
    events = [e for s in sessions for e in events_of(bank, s["native_id"])]
    assert any(e["role"] == "user" for e in events) and any(e["role"] == "assistant" for e in events)


def test_real_two_turns_in_order(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    scan(
        tmp_path,
        bank,
        ("claude-code",),
        env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(REAL / "two_turns")},
    )
    events = [(e["role"], e["kind"], e["text"][:16]) for e in events_of(bank) if e["kind"] != "meta"]
    assert events == [
        ("user", "text", "say hi"),
        ("assistant", "text", "Hi! I am the fak"),
        ("user", "text", "READ_FILE /tmp/c"),
        ("assistant", "tool_call", "Read: /tmp/cap-c"),
        ("tool", "tool_result", "1\tThese are the "),
        ("assistant", "text", "The file says: 1"),
    ]


def test_roots_follow_the_agents_environment(tmp_path: Path) -> None:
    home = tmp_path
    assert claude_code.roots({}, home) == [home / ".claude/projects", home / ".config/claude/projects"]
    assert claude_code.roots({"CLAUDE_CONFIG_DIR": "/a,/b", "XDG_CONFIG_HOME": "/x"}, home) == [
        Path("/a/projects"),
        Path("/b/projects"),
        home / ".claude/projects",
        Path("/x/claude/projects"),
    ]


FORK_PARENT, FORK = "441ce698-7740-413a-818e-55f4bf24a517", "d2be8fea-d3db-40cc-914e-83a27b9614e4"


@pytest.mark.parametrize("fork_read_first", [False, True])
def test_a_fork_session_is_linked_to_the_session_it_copied(tmp_path: Path, fork_read_first: bool) -> None:
    """--fork-session copies the history into a new file with the same uuids and names no parent: the
    session holding the same first record, started earlier, is its parent, whichever is read first."""
    (project,) = (REAL / "fork" / "projects").iterdir()
    store = tmp_path / "claude"
    bank = tmp_path / "bank.sqlite"
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(store)}
    for sid in (FORK, FORK_PARENT) if fork_read_first else (FORK_PARENT, FORK):
        (store / "projects" / project.name).mkdir(parents=True, exist_ok=True)
        (store / "projects" / project.name / f"{sid}.jsonl").write_bytes((project / f"{sid}.jsonl").read_bytes())
        scan(tmp_path, bank, ("claude-code",), env=env)
    parents = {s["native_id"]: (s["parent_native_id"], s["parent_kind"]) for s in sessions_of(bank)}
    assert parents == {FORK_PARENT: (None, None), FORK: (FORK_PARENT, "fork")}


def test_sessions_that_share_no_record_are_not_forks(tmp_path: Path) -> None:
    """Two sessions of one directory (the two_turns and thinking captures, copied into one project)."""
    store = tmp_path / "claude" / "projects"
    for scenario in ("two_turns", "thinking"):
        for path in (REAL / scenario / "projects").glob("*/*.jsonl"):
            target = store / "-tmp-demo-repo" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
            for line in lines:  # one cwd for both (each run had a temporary repo of its own)
                if "cwd" in line:
                    line["cwd"] = "/tmp/demo-repo"
            target.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path, bank, ("claude-code",), env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
    sessions = sessions_of(bank)
    assert [(s["cwd"], s["parent_native_id"]) for s in sessions] == [("/tmp/demo-repo", None)] * 2


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/c/projects/-w/s1.jsonl"), PurePath("/c/projects"))
    raw = b'{"type":"user","message":5}'
    batch = claude_code.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "user record of unexpected shape: a number where an object was expected")]


def test_a_tool_use_without_id_imports_and_nothing_crashes(tmp_path: Path) -> None:
    """A tool_use block with no ``id`` and no result after it: the call is kept (no tool_call_id, the
    line's uuid as uid) and the parser's state stays JSON (it once held the call under a None key)."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    call = s._envelope("assistant", message={"id": "msg_1", "type": "message", "role": "assistant",
                                             "model": "claude-sonnet-4-5",
                                             "content": [{"type": "tool_use", "name": "Read", "input": {}}]})
    s.write(s.user("read it"), orjson.dumps(call) + b"\n")
    report = scan(home, bank, ("claude-code",))
    assert report.harnesses["claude-code"].problems == 0
    events = events_of(bank, s.id)
    assert [(e["kind"], e["tool_name"], e["tool_call_id"], e["uid"]) for e in events[1:]] == [
        ("tool_call", "Read", None, call["uuid"])]
    assert scan(home, bank, ("claude-code",)).events_added == 0


def test_a_line_whose_type_is_not_text_is_drift_not_a_crash() -> None:
    ref = SourceRef(PurePath("/c/projects/-w/s1.jsonl"), PurePath("/c/projects"))
    batch = claude_code.parse(ref, [Record(1, b'{"type":["user"]}'), Record(2, b'{"type":{"a":1}}')], {})
    assert [(p.kind, p.line) for p in batch.problems] == [("unknown_type", 1), ("unknown_type", 2)]


def test_a_queued_task_notification_is_machine_text_not_a_prompt(tmp_path: Path) -> None:
    """A notification that arrives mid-turn is delivered as a ``queued_command`` attachment (2.1.296,
    see SOURCE.md): Claude Code's words, like the same text on a user line; a prompt the user typed
    while the agent was busy stays the user's."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    note = ("<task-notification>\n<task-id>bd38s001c</task-id>\n<status>completed</status>\n"
            "<summary>Background command \"npm test\" completed (exit code 0)</summary>\n</task-notification>")
    queued = [
        {"type": "queued_command", "prompt": note, "commandMode": "task-notification",
         "origin": {"kind": "task-notification", "producer": "session-task"}},
        {"type": "queued_command", "prompt": "also bump node", "commandMode": "prompt"},
    ]
    s.write(s.user("run the tests"), s.tool_use("Bash", {"command": "npm test"}, "toolu_1"),
            *(orjson.dumps(s._envelope("attachment", attachment=a)) + b"\n" for a in queued))
    scan(home, bank, ("claude-code",))
    events = events_of(bank, s.id)
    assert [(e["role"], e["kind"], e["text"][:20], e["meta"]) for e in events[2:]] == [
        ("system", "text", "<task-notification>\n", {"injected": True, "queued": True}),
        ("user", "text", "also bump node", {"queued": True}),
    ]
