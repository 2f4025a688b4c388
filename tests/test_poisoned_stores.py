"""A machine holding every harness's store, and beside each a poisoned source of that harness: garbage
lines, values of every wrong type, a document cut short, a corrupt database, a zstd stream cut short.

`scan` exits 0 and imports every good session; each poisoned source is counted (malformed, unreadable,
failed) with its reason in `status --json`; `run` over the same HOME stays up, keeps capturing appends to
good sources, and stops cleanly on SIGTERM within 2 s.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import orjson
import pytest
import zstandard

from harvester.capture.sources import shadowed
from harvester.parsers import HARNESSES
from harvester.parsers.base import Harness, SourceSpec
from tests.daemon import Daemon, wait_for
from tests.golden import LAYOUTS, expected_path
from tests.helpers import ClaudeSession
from tests.machine import PLACES, harvester_cli, lay_out_every_store, roots_in_repositories

WRONG_TYPES = [
    {"type": 5, "timestamp": {"x": 1}, "cwd": 12, "sessionId": [], "id": {}, "role": [], "content": 3},
    {"type": "user", "uuid": 7, "message": {"content": {"a": [1]}, "model": {}}, "timestamp": [],
     "payload": {"type": "message", "content": 5}},
    {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": {"n": 1}, "input": 5}]}},
    {"type": "response_item", "payload": {"type": "function_call", "name": [], "arguments": {"x": {}}}},
    {"type": "message", "id": None, "parentId": [1], "message": {"role": 1, "content": None}},
]


def _deep(levels: int) -> dict:
    value: dict = {"x": 1}
    for _ in range(levels):
        value = {"type": "user", "nested": value}
    return value


def _poisoned_lines() -> bytes:
    lines = [b"this is not json", b"\xff\xfe{\"type\": \"user\"}", b"[1, 2, 3]", b'"just text"',
             *(json.dumps(record).encode() for record in WRONG_TYPES), json.dumps(_deep(400)).encode()]
    return b"\n".join(lines) + b"\n"


def _poison(path: Path, spec: SourceSpec) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.format in ("jsonl", "lines"):
        path.write_bytes(_poisoned_lines())
    elif spec.format == "json":
        path.write_bytes(b'{"id": "poisoned", "messages": [{"role": "user", "content": "cut sh')
    elif spec.format == "sqlite":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(16384))
    elif spec.format == "jsonl.zst":
        whole = zstandard.ZstdCompressor().compress(_poisoned_lines() * 50)
        path.write_bytes(whole[: len(whole) // 2])
    elif spec.format == "zstd-frames":
        path.write_bytes(zstandard.ZstdCompressor().compress(b'{"type": 5}\n') + os.urandom(512))
    else:
        raise AssertionError(f"no poison for {spec.format}")


def _concrete(pattern: str) -> str:
    """A path the pattern matches, with "poisoned" for every wildcard."""
    parts = [p.replace("*", "poisoned").replace("?", "x") for p in pattern.split("/") if p != "**"]
    return "/".join(parts)


def poison_every_harness(home: Path, roots: dict[str, list[str]]) -> dict[str, Path]:
    """One poisoned source per harness, where the harness looks: harness -> its path. ``roots``: the configured
    roots of the harnesses whose stores live in repositories (Aider, Crush), which a poisoned one joins."""
    env = {"HOME": str(home)}
    out: dict[str, Path] = {}
    for name, harness in HARNESSES.items():
        if harness.roots_in_repositories:  # a repository of its own, added to the configured roots
            repo = home / "src" / f"poisoned-{name}"
            out[name] = repo / _concrete(harness.sources[0].pattern)
            out[name].parent.mkdir(parents=True, exist_ok=True)
            roots.setdefault(name, []).append(str(repo))
            _poison(out[name], harness.sources[0])
            continue
        root = next((r for r in harness.roots(env, home) if r.is_dir()), None)
        assert root is not None, f"{name}: no root laid out"
        target = _poisonable(harness, root)
        if target is not None:
            out[name] = target[0]
            _poison(*target)
    # DeepAgents Code keeps every thread in one database, beside which no second source is read:
    # its poisoned source is that database with a checkpoint write that does not decode.
    store = home / ".deepagents" / ".state" / "sessions.db"
    conn = sqlite3.connect(store)
    conn.execute("INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
                 "type, value) VALUES ('poisoned-thread', '', 'c1', 't1', '', 0, 'messages', 'msgpack', ?)",
                 (os.urandom(64),))
    conn.commit()
    conn.close()
    out["dcode"] = store
    # Amazon Q, Zed, Warp, Kiro CLI (its v1 engine's), ZCode, Forge, Shelley, Omnigent and Piebald likewise keep one
    # database each, whose fixed name the good store holds: a conversation that is not JSON, a thread whose blob does
    # not decompress, a task whose protobuf does not decode, a chat whose tool-call part lost its call row.
    conn = sqlite3.connect(home / ".local/share/piebald/app.db")
    conn.execute("INSERT INTO chats VALUES (90, 'poisoned', '2026-11-02T10:00:00Z', '2026-11-02T10:00:00Z', 0, 1, NULL, "
                 "NULL, NULL, NULL)")
    conn.execute("INSERT INTO messages VALUES (900, 90, NULL, 'assistant', ?, '2026-11-02T10:00:01Z', "
                 "'2026-11-02T10:00:01Z', NULL, NULL, NULL, NULL, NULL, 'completed', NULL, NULL, 1)", (os.urandom(16),))
    conn.execute("INSERT INTO message_parts VALUES (9000, 900, 0, 'tool_call')")
    conn.commit()
    conn.close()
    out["piebald"] = home / ".local/share/piebald/app.db"
    for name, store, sql, args in (
            ("amazon-q", home / ".local/share/amazon-q/data.sqlite3",
             "INSERT INTO conversations (key, value) VALUES ('/poisoned', ?)", ("{not json",)),
            ("zed", home / ".local/share/zed/threads/threads.db",
             "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('poisoned-thread', 'poisoned', "
             "'2026-11-02T10:00:00Z', 'zstd', ?)", (os.urandom(64),)),
            ("warp", home / ".local/state/warp-terminal/warp.sqlite",
             "INSERT INTO agent_tasks (conversation_id, task_id, task) VALUES ('poisoned-conversation', "
             "'poisoned-task', ?)", (b"\xff" * 64,)),
            ("kiro-cli", home / ".local/share/kiro-cli/data.sqlite3",
             "INSERT INTO conversations_v2 (key, conversation_id, value, created_at, updated_at) VALUES ('/poisoned', "
             "'poisoned-conversation', ?, 1790000099000, 1790000099000)", ("{not json",)),
            ("zcode", home / ".zcode/cli/db/db.sqlite",
             "INSERT INTO message (id, session_id, time_created, data) VALUES ('poisoned-message', 'poisoned-session', "
             "1790000099000, ?)", ("{not json",)),
            ("forge", home / ".forge/.forge.db",
             "INSERT INTO conversations (conversation_id, workspace_id, context, created_at, updated_at) VALUES "
             "('poisoned-conversation', 7, ?, '2026-11-02 10:00:00', '2026-11-02 10:00:00')", ("{not json",)),
            ("shelley", home / ".config/shelley/shelley.db",
             "INSERT INTO messages (message_id, conversation_id, sequence_id, type, llm_data) VALUES "
             "('poisoned-message', 'cs1a2b3c4d', 99, 'agent', ?)", ("{not json",)),
            ("omnigent", home / ".omnigent/chat.db",
             "INSERT INTO conversation_items (conversation_id, id, response_id, created_at, status, position, type, "
             "data, search_text) VALUES (X'00ff', X'01ff', 'r', 1790000099, 1, 0, 1, ?, '')", ("{not json",))):
        conn = sqlite3.connect(store)
        conn.execute(sql, args)
        conn.commit()
        conn.close()
        out[name] = store
    return out


def _poisonable(harness: Harness, root: Path) -> tuple[Path, SourceSpec] | None:
    for spec in harness.sources:
        path = root / _concrete(spec.pattern)
        if path.exists() or path.name in spec.ignore:  # a fixed name already taken by the good store
            continue
        if shadowed(spec, path):
            continue
        return path, spec
    return None


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path], dict]:
    tmp = tmp_path_factory.mktemp("poisoned")
    home = tmp / "home"
    lay_out_every_store(home)
    roots = roots_in_repositories(home)
    sources = poison_every_harness(home, roots)
    (tmp / "config.toml").write_text("[roots]\n" + "".join(f"{name} = {orjson.dumps(paths).decode()}\n"
                                                            for name, paths in roots.items()))
    scanned = harvester_cli(tmp, "scan", "--json")
    assert scanned.returncode == 0, scanned.stderr
    status = harvester_cli(tmp, "status", "--json")
    assert status.returncode == 0, status.stderr
    return tmp, sources, orjson.loads(status.stdout)


def test_every_harness_has_a_poisoned_source(poisoned: tuple) -> None:
    _, sources, _ = poisoned
    assert set(sources) == {name for name, harness in HARNESSES.items() if harness.sources}  # not Windsurf's: unread


def test_every_good_session_is_imported(poisoned: tuple) -> None:
    tmp, _, _ = poisoned
    conn = sqlite3.connect(tmp / "bank.sqlite")
    have = {(h, n) for h, n in conn.execute("SELECT harness, native_id FROM sessions")}
    conn.close()
    for key in PLACES:
        layout = LAYOUTS[key]
        expected = orjson.loads(expected_path(key, layout.hand.replace("/", "-")).read_bytes())["sessions"]
        missing = {s["native_id"] for s in expected} - {n for h, n in have if h == layout.harness}
        assert not missing, f"{layout.harness}: not imported: {missing}"


def test_each_poisoned_source_is_counted_with_its_reason(poisoned: tuple) -> None:
    _, sources, status = poisoned
    rows = {h["name"]: h for h in status["harnesses"]}
    for name, path in sources.items():
        row = rows[name]
        seen = [p for p in row["problems"] if p["path"] == str(path)] + [
            f for f in row["failures"] if f["path"] == str(path)]
        assert seen, f"{name}: {path} not in status: {row['problems']} {row['failures']}"
        assert all(p.get("detail") or p.get("reason") for p in seen)
        assert row["malformed"] + row["unreadable"] + row["oversize"] + row["sources_failed"] > 0, row
        assert not any("Error(" in (p.get("detail") or p.get("reason")) for p in seen), seen


def test_run_over_the_poisoned_machine_stays_up_captures_and_stops_on_sigterm(poisoned: tuple) -> None:
    tmp, _, _ = poisoned
    daemon = Daemon(tmp)  # its config: the machine's roots, and fast timings
    daemon.config.write_text(daemon.config.read_text() + "\n[timings]\ndebounce_ms = 20\nunfinished_seconds = 0.3\n"
                             "poll_seconds = 0.3\nheartbeat_seconds = 0.3\n")
    daemon.start()
    try:
        s = ClaudeSession(daemon.home, "/work/after-the-poison")
        s.write(*s.conversation(1))
        wait_for(lambda: daemon.query("SELECT count(*) FROM events e JOIN sessions x ON x.id = e.session_id "
                                      "WHERE x.native_id = ?", s.id) == [(2,)], 20, "a new good session")
        s.write(*s.conversation(1, start=1))
        wait_for(lambda: daemon.query("SELECT count(*) FROM events e JOIN sessions x ON x.id = e.session_id "
                                      "WHERE x.native_id = ?", s.id) == [(4,)], 20, "an append to it")
        assert daemon.proc is not None and daemon.proc.poll() is None
        started = time.monotonic()
        assert daemon.stop(signal.SIGTERM) == 0
        assert time.monotonic() - started < 2
    finally:
        if daemon.proc is not None:
            daemon.proc.kill()
