"""Each model response counted once, per agent, on lines in the agents' own shapes (harvester usage, issue 27).

The agents repeat usage in their own ways: Claude Code writes a response's ``usage`` on the line of every content
block, copies lines into forked and resumed sessions and into side-question (``/btw``) sidechains; Codex writes
cumulative ``token_count`` totals (and, since 0.171, an exact ``token_usage_record`` beside them) and copies a
parent's history into forks; Gemini CLI re-appends a message as it grows; opencode updates a step's part as it
streams. What the bank counts is checked after a scan, as the report reads it (the counted usage rows).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


# -- Codex -------------------------------------------------------------------------------------------------------
class Rollout:
    """A Codex rollout in the envelope Codex 0.115 to 0.170 writes (fixtures/codex/hand/archived_sessions): no
    ``token_usage_record`` (0.171 added it), a cumulative ``token_count`` after each response."""

    def __init__(self, codex_home: Path, session: str, day: str = "2026/03/14", fork_of: str | None = None) -> None:
        folder = codex_home / "sessions" / day
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"rollout-{day.replace('/', '-')}T15-02-41-{session}.jsonl"
        self.session, self.lines, self.n = session, [], 0
        self.meta(session, fork_of)

    def emit(self, kind: str, payload: dict[str, Any], ts: str | None = None) -> None:
        self.n += 1
        ts = ts or f"2026-03-14T15:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z"
        self.lines.append(json.dumps({"timestamp": ts, "type": kind, "payload": payload}))

    def meta(self, session: str, fork_of: str | None = None) -> None:
        self.emit("session_meta", {"id": session, "timestamp": "2026-03-14T15:02:41.771Z", "cwd": CWD,
                                   "originator": "codex_cli_rs", "cli_version": "0.115.0", "source": "cli",
                                   "model_provider": "openai", **({"forked_from_id": fork_of} if fork_of else {})})
        self.emit("turn_context", {"cwd": CWD, "model": "gpt-5-codex", "approval_policy": "on-request"})

    def answer(self, text: str, item: str) -> None:
        self.emit("response_item", {"type": "message", "role": "assistant", "id": item,
                                    "content": [{"type": "output_text", "text": text}]})

    def token_count(self, total: dict[str, int] | None, last: dict[str, int] | None, ts: str | None = None) -> None:
        info = None if total is None and last is None else {
            **({"total_token_usage": total} if total else {}), **({"last_token_usage": last} if last else {}),
            "model_context_window": 258400}
        self.emit("event_msg", {"type": "token_count", "info": info, "rate_limits": {"limit_id": "codex"}}, ts)

    def save(self) -> None:
        self.path.write_text("\n".join(self.lines) + "\n")


def _counts(inp: int, cached: int, out: int, reasoning: int = 0) -> dict[str, int]:
    return {"input_tokens": inp, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
            "output_tokens": out, "reasoning_output_tokens": reasoning, "total_tokens": inp + out}


def _scan_codex(tmp_path: Path) -> dict[str, int]:
    home = tmp_path / "home"
    scan(home, tmp_path / "bank.sqlite", ("codex",), env={"HOME": str(home), "CODEX_HOME": str(home / ".codex")})
    return counted(tmp_path / "bank.sqlite", "codex")


def test_codex_each_token_count_gives_its_response(tmp_path: Path) -> None:
    """Before 0.171 a rollout says what a response used only in the ``token_count`` after it: its
    ``last_token_usage`` (``input_tokens`` includes the cached ones)."""
    r = Rollout(tmp_path / "home" / ".codex", "019cecde-f96b-7949-b14e-d21724be7d1f")
    r.answer("first", "msg_1")
    r.token_count(_counts(8410, 0, 96, 40), _counts(8410, 0, 96, 40))
    r.answer("second", "msg_2")
    r.token_count(_counts(17030, 8192, 136, 40), _counts(8620, 8192, 40))
    r.save()
    assert _scan_codex(tmp_path) == {"responses": 2, "input": 8410 + 428, "output": 136, "cache_read": 8192,
                                     "cache_write": 0, "cache_write_1h": 0, "reasoning": 40}


def test_codex_cumulative_totals_alone_give_their_differences(tmp_path: Path) -> None:
    """Early envelopes carry only the running total: each response is what the total grew by (as ccusage and
    Codex's own /status count it)."""
    r = Rollout(tmp_path / "home" / ".codex", "0199b4b7-3618-7493-b30b-60cb76212288")
    r.token_count(None, None)  # the rate limits alone, before any response
    r.answer("first", "msg_1")
    r.token_count(_counts(1000, 0, 50), None)
    r.answer("second", "msg_2")
    r.token_count(_counts(2600, 900, 80), None)
    r.save()
    got = _scan_codex(tmp_path)
    assert (got["responses"], got["input"], got["cache_read"], got["output"]) == (2, 1000 + 700, 900, 80)


def test_codex_a_token_count_repeating_the_running_total_adds_nothing(tmp_path: Path) -> None:
    """Codex writes a token_count again when a turn starts or its context is compacted, with the same running
    total and the last response's ``last_token_usage``: no new response (the real ``compact`` capture does)."""
    r = Rollout(tmp_path / "home" / ".codex", "01a227f1-f0f6-7090-b816-b342dc0e0884")
    r.answer("first", "msg_1")
    r.token_count(_counts(50000, 0, 51), _counts(50000, 0, 51))
    r.token_count(_counts(50000, 0, 51), _counts(50000, 0, 51))  # the next turn starts
    r.answer("second", "msg_2")
    r.token_count(_counts(55886, 0, 152), _counts(5886, 0, 101))
    r.token_count(_counts(55886, 0, 152), _counts(0, 0, 0))  # compacted
    r.save()
    got = _scan_codex(tmp_path)
    assert (got["responses"], got["input"], got["output"]) == (2, 55886, 152)


def test_codex_a_token_count_read_after_its_response_still_counts(tmp_path: Path) -> None:
    """Read live, the response's items and the token_count after it arrive in different reads."""
    r = Rollout(tmp_path / "home" / ".codex", "019cecde-f96b-7949-b14e-d21724be7d1f")
    r.answer("first", "msg_1")
    r.save()
    _scan_codex(tmp_path)
    r.token_count(_counts(8410, 0, 96), _counts(8410, 0, 96))
    r.save()
    got = _scan_codex(tmp_path)
    assert (got["responses"], got["input"], got["output"]) == (1, 8410, 96)


def test_codex_a_legacy_fork_does_not_count_its_parents_copied_history(tmp_path: Path) -> None:
    """A legacy fork copies the parent's records (token counts included) after its own session_meta; its own
    first response's total carries the parent's, so only what it grew by is the fork's."""
    codex = tmp_path / "home" / ".codex"
    parent = Rollout(codex, "019cecde-f96b-7949-b14e-d21724be7d1f")
    parent.answer("first", "msg_1")
    parent.token_count(_counts(1000, 0, 10), None)
    parent.save()
    fork = Rollout(codex, "019ced18-04c9-7864-99ca-661252188bc0", fork_of=parent.session)
    fork.lines.append(parent.lines[0])  # the parent's history, its session_meta first
    fork.lines += parent.lines[2:]
    fork.emit("event_msg", {"type": "task_started", "turn_id": "019ced18-0500-7000-8000-000000000000"})
    fork.answer("the fork's own", "msg_9")
    fork.token_count(_counts(2500, 0, 30), None)
    fork.save()
    got = _scan_codex(tmp_path)
    assert (got["responses"], got["input"], got["output"]) == (2, 2500, 30)


def test_codex_an_exact_usage_record_is_the_response(tmp_path: Path) -> None:
    """0.171 writes each response's exact usage (``token_usage_record``, with its response id) before the
    token_count: counted once, not twice."""
    home = tmp_path / "home"
    copy_tree(FIXTURES / "codex" / "real" / "two_turns", home / ".codex")
    got = _scan_codex(tmp_path)
    assert (got["responses"], got["input"], got["output"]) == (3, 30993, 191)


# -- opencode and Cline: the agent's own cost ---------------------------------------------------------------------
def test_opencode_each_step_counts_once_with_the_cost_it_recorded(tmp_path: Path) -> None:
    """opencode writes a step's usage and cost on its ``step-finish`` part (updated in place as it streams): one
    response per step, its recorded cost kept beside the tokens (``--cost recorded|auto``)."""
    import sqlite3 as sql

    source = FIXTURES / "opencode" / "hand"
    data = tmp_path / "data"
    data.mkdir()
    conn = sql.connect(data / "opencode.db")
    conn.executescript((source / "opencode.sql").read_text())
    conn.commit()
    steps = [json.loads(d) for (d,) in conn.execute("SELECT data FROM part WHERE json_extract(data, '$.type') = "
                                                     "'step-finish'")]
    conn.close()
    home = tmp_path / "home"
    scan(home, tmp_path / "bank.sqlite", ("opencode",), env={"HOME": str(home),
                                                             "OPENCODE_DB": str(data / "opencode.db")})
    got = counted(tmp_path / "bank.sqlite", "opencode")
    assert got["responses"] == len(steps) > 0
    assert got["input"] == sum(s["tokens"]["input"] for s in steps)
    assert got["reasoning"] == sum(s["tokens"]["reasoning"] for s in steps)
    conn = sql.connect(tmp_path / "bank.sqlite")
    recorded = conn.execute("SELECT sum(cost), count(cost) FROM usage WHERE counted = 1").fetchone()
    conn.close()
    assert recorded == (pytest.approx(sum(s["cost"] for s in steps)), len(steps))


def test_cline_a_reply_keeps_the_cost_it_recorded(tmp_path: Path) -> None:
    """Cline's SDK records each reply's metrics with its cost: kept with the reply's usage."""
    data = copy_tree(FIXTURES / "cline" / "hand" / "sdk", tmp_path / "cline-data")
    conn = sqlite3.connect(data / "db" / "sessions.db")
    conn.executescript((data / "db" / "sessions.sql").read_text())
    conn.commit()
    conn.close()
    costs = [m["metrics"]["cost"] for path in data.rglob("*.messages.json")
             for m in json.loads(path.read_text()).get("messages", []) if "cost" in (m.get("metrics") or {})]
    home = tmp_path / "home"
    scan(home, tmp_path / "bank.sqlite", ("cline",), env={"HOME": str(home), "CLINE_DATA_DIR": str(data)})
    conn = sqlite3.connect(tmp_path / "bank.sqlite")
    recorded = conn.execute("SELECT sum(cost), count(cost) FROM usage WHERE harness = 'cline'").fetchone()
    conn.close()
    assert costs and recorded == (pytest.approx(sum(costs)), len(costs))


# -- Gemini CLI and Qwen Code: per-message token records ------------------------------------------------------
def _gemini_home(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    home = tmp_path / "home"
    chats = home / ".gemini" / "tmp" / "demo-repo" / "chats"
    chats.mkdir(parents=True)
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {CWD: "demo-repo"}}))
    path = chats / "session-2026-11-29T17-06-aa0eb573.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _gemini_lines() -> list[dict[str, Any]]:
    """As Gemini CLI 0.61 writes a session (fixtures/gemini_cli/real): a header, then messages appended by id."""
    return [{"sessionId": "aa0eb573-14b6-453d-897b-5f406927a948", "projectHash": "b45e97fd", "startTime":
             "2026-11-29T17:06:19.220Z", "lastUpdated": "2026-11-29T17:06:19.220Z", "kind": "main"},
            {"id": "u1", "timestamp": "2026-11-29T17:06:19.250Z", "type": "user", "content": [{"text": "hi"}]}]


def _gemini_answer(tokens: dict[str, int] | None, text: str = "Hello.") -> dict[str, Any]:
    answer: dict[str, Any] = {"id": "g1", "timestamp": "2026-11-29T17:06:19.282Z", "type": "gemini",
                              "content": text, "model": "gemini-2.5-pro"}
    if tokens is not None:
        answer["tokens"] = tokens
    return answer


def test_gemini_a_message_appended_again_as_it_grows_counts_once(tmp_path: Path) -> None:
    """Gemini CLI appends a message again, by its id, as it grows (its tool calls, its token counts): the last
    version counts, once, thoughts included in the total (Gemini bills them as output)."""
    tokens = {"input": 10200, "output": 15, "cached": 4000, "thoughts": 30, "tool": 0, "total": 10245}
    _gemini_home(tmp_path, [*_gemini_lines(), _gemini_answer(None, "Hel"), _gemini_answer(tokens),
                            _gemini_answer(tokens)])
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("gemini-cli",))
    assert counted(tmp_path / "bank.sqlite", "gemini-cli") == {
        "responses": 1, "input": 6200, "output": 15, "cache_read": 4000, "cache_write": 0, "cache_write_1h": 0,
        "reasoning": 30}


def test_gemini_token_counts_appended_in_a_later_read_count(tmp_path: Path) -> None:
    path = _gemini_home(tmp_path, [*_gemini_lines(), _gemini_answer(None)])
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("gemini-cli",))
    with path.open("a") as f:
        f.write(json.dumps(_gemini_answer({"input": 900, "output": 12, "cached": 0, "thoughts": 0})) + "\n")
    scan(tmp_path / "home", tmp_path / "bank.sqlite", ("gemini-cli",))
    got = counted(tmp_path / "bank.sqlite", "gemini-cli")
    assert (got["responses"], got["input"], got["output"]) == (1, 900, 12)


def test_qwen_each_response_record_counts_once(tmp_path: Path) -> None:
    """Qwen Code writes one record per model response with its ``usageMetadata`` (the prompt count includes the
    cached part): the real capture's three responses, each once."""
    home = tmp_path / "home"
    copy_tree(FIXTURES / "qwen_code" / "real" / "two_turns", home / ".qwen")
    expected = {"responses": 0, "input": 0, "output": 0}
    for path in (home / ".qwen").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            meta = json.loads(line).get("usageMetadata")
            if meta:
                expected["responses"] += 1
                expected["input"] += meta["promptTokenCount"] - meta.get("cachedContentTokenCount", 0)
                expected["output"] += meta["candidatesTokenCount"]
    scan(home, tmp_path / "bank.sqlite", ("qwen-code",))
    got = counted(tmp_path / "bank.sqlite", "qwen-code")
    assert {k: got[k] for k in expected} == expected and expected["responses"] == 3


def test_qwen_thoughts_counted_within_the_output_are_billed_once(tmp_path: Path) -> None:
    """Qwen Code writes an OpenAI-compatible response's ``completion_tokens`` as ``candidatesTokenCount`` and its
    ``reasoning_tokens`` as ``thoughtsTokenCount`` (its convertOpenAIResponseToGemini): the thoughts are already in
    the candidates, as ``totalTokenCount`` (prompt + candidates) says. Qwen Code's reasoning was counted apart from
    the output, as Gemini's API reports it (harvester/usage/harnesses.py), so the real capture's 40 output tokens,
    15 of them thoughts, were billed as 55 and totalled 15 over the file's own total."""
    home = tmp_path / "home"
    copy_tree(FIXTURES / "qwen_code" / "real" / "thinking", home / ".qwen")
    candidates = thoughts = 0
    for path in (home / ".qwen").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            meta = json.loads(line).get("usageMetadata")
            if meta:
                assert meta["totalTokenCount"] == meta["promptTokenCount"] + meta["candidatesTokenCount"]
                candidates += meta["candidatesTokenCount"]
                thoughts += meta.get("thoughtsTokenCount", 0)
    assert thoughts > 0
    scan(home, tmp_path / "bank.sqlite", ("qwen-code",))
    got = counted(tmp_path / "bank.sqlite", "qwen-code")
    assert (got["output"], got["reasoning"]) == (candidates, thoughts)
    done = subprocess.run([sys.executable, "-m", "harvester", "usage", "session", "--json", "--timezone", "UTC"],
                          env={**os.environ, "HOME": str(home), "HARVESTER_BANK": str(tmp_path / "bank.sqlite")},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["total_tokens"] == row["input_tokens"] + row["cache_read_tokens"] + candidates


def test_gemini_shaped_thoughts_apart_from_the_candidates_stay_apart(tmp_path: Path) -> None:
    """Where Qwen Code talks to Gemini's API, the candidates leave the thoughts out (total = prompt + candidates +
    thoughts): both are output, each counted once (the output includes the thoughts, as OpenAI counts them)."""
    home = tmp_path / "home"
    copy_tree(FIXTURES / "qwen_code" / "real" / "thinking", home / ".qwen")
    for path in (home / ".qwen").rglob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        for line in lines:
            if meta := line.get("usageMetadata"):
                meta["totalTokenCount"] += meta["thoughtsTokenCount"]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scan(home, tmp_path / "bank.sqlite", ("qwen-code",))
    got = counted(tmp_path / "bank.sqlite", "qwen-code")
    assert (got["output"], got["reasoning"]) == (55, 15)
