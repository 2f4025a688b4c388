"""Each model response counted once, per agent, on lines in the agents' own shapes (harvester usage, issue 27).

The agents repeat usage in their own ways: Claude Code writes a response's ``usage`` on the line of every content
block, copies lines into forked and resumed sessions and into side-question (``/btw``) sidechains; Codex writes
cumulative ``token_count`` totals (and, since 0.171, an exact ``token_usage_record`` beside them) and copies a
parent's history into forks; Gemini CLI re-appends a message as it grows; opencode updates a step's part as it
streams. What the bank counts is checked after a scan, as the report reads it (the counted usage rows).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.helpers import FIXTURES, claude_dir, copy_tree, scan

CWD = "/home/dev/src/demo-repo"


def counted(bank: Path, harness: str | None = None) -> dict[str, int]:
    """What the counted usage rows add up to (and how many responses)."""
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT count(*), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), "
            "coalesce(sum(tokens_cache_read), 0), coalesce(sum(tokens_cache_write), 0), "
            "coalesce(sum(tokens_cache_write_1h), 0), coalesce(sum(tokens_reasoning), 0) FROM usage "
            "WHERE counted = 1 AND (? IS NULL OR harness = ?)", (harness, harness)).fetchone()
    finally:
        conn.close()
    return dict(zip(("responses", "input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning"), row,
                    strict=True))


# -- Claude Code ---------------------------------------------------------------------------------------------
def claude_line(session: str, uuid: str, message_id: str | None, request_id: str | None, block: dict[str, Any],
                usage: dict[str, Any], ts: str = "2026-11-29T15:34:43.161Z", sidechain: bool = False,
                agent: str | None = None) -> bytes:
    """An assistant line as Claude Code 2.1.197 writes one (fixtures/claude_code/real): one content block, the
    response's whole usage."""
    record: dict[str, Any] = {
        "parentUuid": None, "isSidechain": sidechain,
        "message": {"id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                    "content": [block], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                              "output_tokens": 0, "server_tool_use": {"web_search_requests": 0,
                                                                      "web_fetch_requests": 0},
                              "service_tier": "standard", "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                                             "ephemeral_5m_input_tokens": 0},
                              "inference_geo": "", "iterations": [], "speed": "standard", **usage}},
        "requestId": request_id, "type": "assistant", "uuid": uuid, "timestamp": ts, "userType": "external",
        "entrypoint": "cli", "cwd": CWD, "sessionId": session, "version": "2.1.197", "gitBranch": "main"}
    if message_id is None:
        del record["message"]["id"]
    if request_id is None:
        del record["requestId"]
    if agent:
        record["agentId"] = agent
    return json.dumps(record).encode() + b"\n"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def test_claude_a_response_written_once_per_content_block_counts_once(tmp_path: Path) -> None:
    folder = claude_dir(tmp_path / "home", CWD)
    usage = {"input_tokens": 3, "cache_read_input_tokens": 41000, "output_tokens": 220}
    (folder / "s1.jsonl").write_bytes(
        claude_line("s1", "u1", "msg_1", "req_1", {"type": "thinking", "thinking": "hmm", "signature": "x"}, usage)
        + claude_line("s1", "u2", "msg_1", "req_1", _text("done"), usage)
        + claude_line("s1", "u3", "msg_1", "req_1", {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                      "input": {"file_path": "/x"}}, usage))
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("claude-code",))
    assert counted(tmp_path / "bank.sqlite") == {"responses": 1, "input": 3, "output": 220, "cache_read": 41000,
                                                 "cache_write": 0, "cache_write_1h": 0, "reasoning": 0}


def test_claude_a_forked_session_copying_the_history_counts_each_response_once(tmp_path: Path) -> None:
    """The real capture of ``--continue --fork-session``: the new file copies the original's lines (message ids
    and request ids included); ccusage counts each (message id, request id) once."""
    home = tmp_path / "home"
    copy_tree(FIXTURES / "claude_code" / "real" / "fork", home / ".claude")
    scan(home, tmp_path / "bank.sqlite", ("claude-code",))
    distinct: dict[str, tuple[int, int]] = {}
    for path in (home / ".claude" / "projects").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            message = record.get("message") or {}
            if record.get("type") == "assistant" and message.get("model") != "<synthetic>":
                distinct[message["id"]] = (message["usage"]["input_tokens"], message["usage"]["output_tokens"])
    assert len(distinct) == 2  # the original's answer, copied into the fork, and the fork's own
    got = counted(tmp_path / "bank.sqlite")
    assert (got["responses"], got["input"], got["output"]) == (
        2, sum(i for i, _ in distinct.values()), sum(o for _, o in distinct.values()))


def test_claude_the_complete_count_read_later_replaces_a_placeholder(tmp_path: Path) -> None:
    """Before 2.1.98 a streamed response's first lines held placeholder output counts and its last line the real
    one; read live, the lines arrive in different reads: the complete count is the one counted."""
    folder = claude_dir(tmp_path / "home", CWD)
    path = folder / "s1.jsonl"
    path.write_bytes(claude_line("s1", "u1", "msg_1", "req_1", {"type": "thinking", "thinking": "hmm", "signature": "x"},
                                 {"input_tokens": 1200, "output_tokens": 1}))
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("claude-code",))
    with path.open("ab") as f:
        f.write(claude_line("s1", "u2", "msg_1", "req_1", _text("done"), {"input_tokens": 1200, "output_tokens": 480}))
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("claude-code",))
    got = counted(tmp_path / "bank.sqlite")
    assert (got["responses"], got["input"], got["output"]) == (1, 1200, 480)


def test_claude_a_side_question_replaying_its_parents_response_counts_it_once(tmp_path: Path) -> None:
    """A ``/btw`` side question's sidechain log (under subagents/) replays the parent's messages with their
    message ids but new request ids, cache reads included (ccusage issue 913): the parent's response once; the
    side question's own answer counts."""
    folder = claude_dir(tmp_path / "home", CWD)
    usage = {"input_tokens": 5, "cache_read_input_tokens": 90000, "output_tokens": 300}
    (folder / "s1.jsonl").write_bytes(claude_line("s1", "u1", "msg_parent", "req_a", _text("the answer"), usage))
    side = folder / "s1" / "subagents"
    side.mkdir(parents=True)
    (side / "agent-aside1.jsonl").write_bytes(
        claude_line("s1", "v1", "msg_parent", "req_b", _text("the answer"), usage, sidechain=True, agent="aside1")
        + claude_line("s1", "v2", "msg_side", "req_c", _text("by the way"), {"input_tokens": 7, "output_tokens": 40},
                      ts="2026-11-29T15:35:00.000Z", sidechain=True, agent="aside1"))
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("claude-code",))
    got = counted(tmp_path / "bank.sqlite")
    assert (got["responses"], got["input"], got["cache_read"], got["output"]) == (2, 12, 90000, 340)


def test_claude_hour_long_cache_writes_are_kept_apart(tmp_path: Path) -> None:
    """An hour-long cache write costs more than a five-minute one (Anthropic: 2x input, against 1.25x):
    ``cache_creation`` splits the write, and the split is kept."""
    folder = claude_dir(tmp_path / "home", CWD)
    (folder / "s1.jsonl").write_bytes(claude_line("s1", "u1", "msg_1", "req_1", _text("hi"), {
        "input_tokens": 3, "cache_creation_input_tokens": 9000, "output_tokens": 10,
        "cache_creation": {"ephemeral_1h_input_tokens": 7000, "ephemeral_5m_input_tokens": 2000}}))
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("claude-code",))
    got = counted(tmp_path / "bank.sqlite")
    assert (got["cache_write"], got["cache_write_1h"]) == (9000, 7000)


def test_claude_responses_without_ids_each_count(tmp_path: Path) -> None:
    """Old lines name no message id nor request id: nothing ties two of them together, so each counts (as
    ccusage counts them)."""
    folder = claude_dir(tmp_path / "home", CWD)
    (folder / "s1.jsonl").write_bytes(
        claude_line("s1", "u1", None, None, _text("one"), {"input_tokens": 10, "output_tokens": 1})
        + claude_line("s1", "u2", None, None, _text("two"), {"input_tokens": 20, "output_tokens": 2}))
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("claude-code",))
    got = counted(tmp_path / "bank.sqlite")
    assert (got["responses"], got["input"], got["output"]) == (2, 30, 3)
