"""Generated agent histories shaped like real ones, for the usage parity tests (tests/test_usage_parity.py).

The sessions are the benchmarks' (bench/gen_claude.py, bench/gen_codex.py: the captured agents' records, real-sized
texts, timestamps spread over a year), then given what real usage has and those generators leave out:

Claude Code: several models (each session its own), hour-long cache writes on some responses, a streamed
response's early lines with a placeholder output count (before 2.1.98), forked sessions (``--fork-session``: the
history copied with its uuids, message ids, request ids and times, under the new session id), old resumes (before
1.0.124: a new file that starts with the old session's lines, their session id kept), and side-question sidechains
(``/btw``: the parent's responses replayed under new request ids, then an answer of its own).

Codex: several models; rollouts in the shapes of the eras: 0.171's (``token_usage_record`` and ``token_count``),
0.115 to 0.170's (``token_count`` with ``last_token_usage`` alone), early envelopes' (the running total alone),
rollouts where Codex writes the running total again as a turn starts, and legacy forks (a new rollout that copies
its parent's records after its own ``session_meta``, then works on). Deterministic for a seed, on any checkout:
the texts draw from a pinned vocabulary (fixtures/recall/long-session-words.txt, as tests/test_handoff.py's long
session), not the generators' default one (this repository's words, which change with every commit and, through
text lengths, how much of the seeded stream each session draws, so its times and days).
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from bench import gen_claude, gen_codex
from bench.gen_common import repositories, uuid4, uuid7
from bench.gen_text import Writing
from tests.helpers import FIXTURES

CLAUDE_MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001",
                 "claude-opus-4-8", "claude-sonnet-4-20250514")
CODEX_MODELS = ("gpt-5-codex", "gpt-5", "gpt-5.1-codex", "gpt-5.2")


def _pinned_words() -> tuple[list[str], list[float]]:
    """The vocabulary and its weights, one ``word count`` a line."""
    pairs = [line.split(" ") for line in (FIXTURES / "recall" / "long-session-words.txt").read_text().splitlines()]
    return [w for w, _ in pairs], [float(n) for _, n in pairs]


def claude_tree(projects: Path, sessions: int = 40, seed: int = 27) -> None:
    """``sessions`` Claude Code sessions (and their subagents, forks, resumes, side questions) under ``projects``."""
    writing = Writing(random.Random(f"{seed}:claude"), words=_pinned_words())
    rng = random.Random(seed)
    repos = repositories(random.Random(seed), writing.words, count=5)
    listings = gen_claude._listing_templates()
    for _ in range(sessions):
        gen_claude.write_session(writing, projects, rng.choice(repos), listings)
    files = sorted(p for p in projects.rglob("*.jsonl"))
    hour_long: dict[str, bool] = {}  # message id -> whether its cache write lasts an hour (on all its lines)
    for n, path in enumerate(files):
        model = CLAUDE_MODELS[n % len(CLAUDE_MODELS)]
        path.write_bytes(_lines(_claude_usage(orjson.loads(line), model, rng, hour_long) for line in _records(path)))
    mains = [p for p in files if p.parent.name != "subagents"]
    for n, path in enumerate(mains):
        kind = n % 5
        if kind == 1:
            _fork(path, rng, keep_session=False)
        elif kind == 2:
            _fork(path, rng, keep_session=True)
        elif kind == 3:
            _side_question(path, rng)


def _records(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _lines(records: object) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)  # type: ignore[attr-defined]


def _claude_usage(record: dict, model: str, rng: random.Random, hour_long: dict[str, bool]) -> dict:
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, dict):
        return record
    message["model"] = model
    usage = message.get("usage") or {}
    hour = hour_long.setdefault(message["id"], rng.random() < 0.3)
    write = usage.get("cache_creation_input_tokens", 0)
    usage["cache_creation"] = {"ephemeral_1h_input_tokens": write if hour else 0,
                               "ephemeral_5m_input_tokens": 0 if hour else write}
    block = (message.get("content") or [{}])[0]
    if block.get("type") == "thinking" and rng.random() < 0.5:  # a streamed response's early line (pre-2.1.98)
        usage = {**usage, "output_tokens": 1}
        message["usage"] = usage
    return record


def _assistant_lines(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("type") == "assistant"]


def _fork(path: Path, rng: random.Random, keep_session: bool) -> None:
    """A fork (``keep_session=False``: the copy under the new session id, as 2.1 writes it) or an old resume (the
    copy keeps the old session id), then a response of its own a little later."""
    records = [orjson.loads(line) for line in _records(path)]
    if not _assistant_lines(records):
        return
    cut = max(i for i, r in enumerate(records) if r.get("type") == "assistant") + 1
    new_id = uuid4(rng)
    copied = [dict(r, sessionId=r.get("sessionId") if keep_session else new_id) for r in records[:cut]]
    own = dict(_assistant_lines(records)[-1])
    message = dict(own["message"], id=f"msg_{rng.getrandbits(96):024x}")
    message["usage"] = dict(message["usage"], output_tokens=rng.randint(20, 900),
                            cache_read_input_tokens=rng.randint(20000, 150000))
    own.update(message=message, requestId=f"req_{rng.getrandbits(96):024x}", uuid=uuid4(rng), sessionId=new_id,
               timestamp=_later(own["timestamp"], rng))
    path.with_name(f"{new_id}.jsonl").write_bytes(_lines([*copied, own]))


def _side_question(path: Path, rng: random.Random) -> None:
    """A ``/btw`` sidechain: the parent's responses replayed (new request ids), then its own answer."""
    records = [orjson.loads(line) for line in _records(path)]
    answers = _assistant_lines(records)
    if not answers:
        return
    agent = f"aside{rng.getrandbits(40):010x}"
    replayed = [dict(r, isSidechain=True, agentId=agent, requestId=f"req_{rng.getrandbits(96):024x}",
                     uuid=uuid4(rng)) for r in answers[:3]]
    own = dict(replayed[-1], uuid=uuid4(rng), requestId=f"req_{rng.getrandbits(96):024x}",
               timestamp=_later(answers[-1]["timestamp"], rng))
    own["message"] = dict(own["message"], id=f"msg_{rng.getrandbits(96):024x}",
                          usage=dict(own["message"]["usage"], output_tokens=rng.randint(10, 300)))
    folder = path.with_suffix("") / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"agent-{agent}.jsonl").write_bytes(_lines([*replayed, own]))


def _later(ts: str, rng: random.Random) -> str:
    from datetime import datetime, timedelta

    when = datetime.fromisoformat(ts.replace("Z", "+00:00")) + timedelta(seconds=rng.uniform(30, 4000))
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def codex_tree(sessions_dir: Path, rollouts: int = 24, seed: int = 27) -> None:
    """``rollouts`` Codex rollouts in the eras' shapes (and legacy forks of some) under ``sessions_dir``."""
    writing = Writing(random.Random(f"{seed}:codex"), words=_pinned_words())
    rng = random.Random(seed)
    repos = repositories(random.Random(seed), writing.words, count=5)
    opening = gen_codex.opening_templates()
    for _ in range(rollouts):
        gen_codex.write_rollout(writing, sessions_dir, rng.choice(repos), opening)
    for n, path in enumerate(sorted(sessions_dir.rglob("rollout-*.jsonl"))):
        records = [orjson.loads(line) for line in _records(path)]
        model, era = CODEX_MODELS[n % len(CODEX_MODELS)], n % 4
        out: list[dict] = []
        running = {k: 0 for k in _COUNTS}
        for record in records:
            payload = record.get("payload")
            if record.get("type") == "turn_context":
                payload["model"] = model
            if record.get("type") == "token_usage_record":
                _cached_within_input(payload["usage"])
            if record.get("type") == "event_msg" and payload.get("type") == "token_count":
                last = _cached_within_input(payload["info"]["last_token_usage"])
                running = {k: running[k] + last.get(k, 0) for k in _COUNTS}
                payload["info"]["total_token_usage"] = dict(running)
            if era and record.get("type") == "token_usage_record":
                continue  # before 0.171
            if era == 2 and record.get("type") == "event_msg" and payload.get("type") == "token_count":
                payload["info"].pop("last_token_usage", None)  # an early envelope: the running total alone
            out.append(record)
            if era == 3 and record.get("type") == "event_msg" and payload.get("type") == "task_started" and out:
                previous = next((r for r in reversed(out[:-1]) if r.get("type") == "event_msg"
                                 and r["payload"].get("type") == "token_count"), None)
                if previous is not None:  # the running total written again as a turn starts
                    out.append(dict(previous, timestamp=record["timestamp"]))
        path.write_bytes(_lines(out))
        if era == 1 and n % 8 == 1:
            _codex_fork(path, out, model, rng)


_COUNTS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens",
           "reasoning_output_tokens", "total_tokens")


def _cached_within_input(counts: dict) -> dict:
    """The cached input is part of the input (bench/gen_codex draws them apart)."""
    counts["cached_input_tokens"] = min(counts["cached_input_tokens"], counts["input_tokens"])
    return counts


def _codex_fork(parent: Path, records: list[dict], model: str, rng: random.Random) -> None:
    """A legacy fork: its own session_meta, the parent's records (its session_meta first), then a turn of its own
    whose running total carries the parent's."""
    meta = next(r for r in records if r.get("type") == "session_meta")
    last_ts = records[-1]["timestamp"]
    start = _later(last_ts, rng)
    from datetime import datetime

    seconds = datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp()
    thread = uuid7(rng, seconds)
    own_meta = orjson.loads(orjson.dumps(meta))
    own_meta["payload"]["id"] = thread
    own_meta["payload"]["forked_from_id"] = meta["payload"]["id"]
    own_meta["timestamp"] = start
    totals = next(r for r in reversed(records) if r.get("type") == "event_msg"
                  and r["payload"].get("type") == "token_count")["payload"]["info"]["total_token_usage"]
    used = {"input_tokens": rng.randint(8000, 90000), "cached_input_tokens": 0, "cache_write_input_tokens": 0,
            "output_tokens": rng.randint(20, 900), "reasoning_output_tokens": 0}
    used["cached_input_tokens"] = rng.randint(0, used["input_tokens"])
    used["total_tokens"] = used["input_tokens"] + used["output_tokens"]
    after = {k: totals.get(k, 0) + v for k, v in used.items()}
    later = _later(start, rng)
    own = [
        {"timestamp": later, "type": "event_msg", "payload": {"type": "task_started", "turn_id": uuid7(rng, seconds + 1)}},
        {"timestamp": later, "type": "turn_context", "payload": {"cwd": meta["payload"].get("cwd"), "model": model}},
        {"timestamp": later, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "id": f"msg_{rng.getrandbits(96):024x}",
            "content": [{"type": "output_text", "text": "the fork's own answer"}]}},
        {"timestamp": later, "type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": after, "last_token_usage": used, "model_context_window": 258400}}},
    ]
    name = f"rollout-{start[:10]}T{start[11:13]}-{start[14:16]}-{start[17:19]}-{thread}.jsonl"
    folder = parent.parents[2] / start[:4] / start[5:7] / start[8:10]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(_lines([own_meta, *records, *own]))
