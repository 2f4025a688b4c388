"""Large stores of four shapes, built from the record shapes of the hand-written fixtures.

- Cursor's ``globalStorage/state.vscdb``: the real ``ItemTable``/``cursorDiskKV`` key/value schema in
  rollback-journal mode (as VS Code leaves it), composers cloned from fixtures/cursor/ide (their bubbles,
  ``fullConversationHeadersOnly``, the composer header list), with the heavy fields Cursor keeps beside
  them (file states, code blocks, checkpoints) that the reader drops in SQL.
- opencode's ``opencode.db`` (WAL, as opencode keeps it): sessions, messages and parts cloned from
  fixtures/opencode/hand.
- One Claude Code session of many turns (bench/gen_claude.py's records, realistic sizes).
- One Codex ``rollout-*.jsonl.zst`` cloned from fixtures/codex/hand, its tool output random enough that
  it compresses about as much as a real one.

Each function writes the store where the agent keeps it under ``home`` and returns its size in bytes.
"""

from __future__ import annotations

import base64
import os
import random
import sqlite3
import uuid
from pathlib import Path

import orjson
import zstandard

from bench.gen_claude import ClaudeSession, _listing_templates
from bench.gen_text import Writing

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CURSOR_SQL = FIXTURES / "cursor/ide/hand/User/globalStorage/state.sql"
OPENCODE_SQL = FIXTURES / "opencode/hand/opencode.sql"
CODEX_ROLLOUT = FIXTURES / "codex/hand/archived_sessions/rollout-2026-03-14T15-02-41-019cecde-f96b-7949-b14e-d21724be7d1f.jsonl"
TEMPLATE_COMPOSER = "a1f0c2d4-3b5e-4f6a-8c7d-9e0f1a2b3c4d"


class Text:
    """Prose cut from a pool of words (fast to make in bulk; compresses like prose)."""

    def __init__(self, rng: random.Random) -> None:
        words = ("the parser retry client cache request handler module config test fixture error value index "
                 "session buffer stream token cursor commit branch file line record event offset bank query "
                 "schema table row column migrate worker thread queue lock timeout signal process").split()
        self.rng = rng
        self.pool = " ".join(rng.choice(words) for _ in range(400_000))

    def __call__(self, n: int) -> str:
        start = self.rng.randrange(0, len(self.pool) - n - 1)
        return self.pool[start:start + n]


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _fixture_db(sql: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(sql.read_text())
    return conn


def _fast(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")


# -- Cursor ---------------------------------------------------------------------------------------
def cursor_store(home: Path, size: int, seed: int = 1) -> int:
    rng, text = random.Random(seed), Text(random.Random(seed))
    fixture = _fixture_db(CURSOR_SQL)
    composer = orjson.loads(fixture.execute("SELECT value FROM cursorDiskKV WHERE key = ?",
                                            (f"composerData:{TEMPLATE_COMPOSER}",)).fetchone()[0])
    bubbles = {key.split(":")[2]: orjson.loads(value) for key, value in fixture.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key LIKE ?", (f"bubbleId:{TEMPLATE_COMPOSER}:%",))}
    turn = [bubbles[h["bubbleId"]] for h in composer["fullConversationHeadersOnly"]]
    path = home / ".config/Cursor/User/globalStorage/state.vscdb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    _fast(conn)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    headers, written, n = [], 0, 0
    while written < size:
        cid, rows, heads = _uid(rng), [], []
        for _ in range(rng.randint(5, 30)):  # turns of the template conversation
            for template in turn:
                bid = _uid(rng)
                bubble = {**template, "bubbleId": bid, "createdAt": f"2026-11-{1 + n % 28:02d}T09:00:00.000Z",
                          "codeBlocks": [{"content": text(rng.randint(500, 3000))}],  # dropped in SQL
                          "context": {"notes": text(rng.randint(200, 1500))}}
                if bubble.get("text"):
                    bubble["text"] = text(rng.randint(100, 2500))
                tool = bubble.get("toolFormerData")
                if isinstance(tool, dict) and isinstance(tool.get("result"), str):
                    bubble["toolFormerData"] = {**tool, "toolCallId": bid, "result": orjson.dumps(
                        {"contents": text(rng.randint(500, 6000))}).decode()}
                rows.append((f"bubbleId:{cid}:{bid}", orjson.dumps(bubble)))
                heads.append({"bubbleId": bid, "type": template.get("type")})
            rows.append((f"checkpointId:{cid}:{_uid(rng)}", orjson.dumps({"files": [text(4000)]})))
        value = {**composer, "composerId": cid, "name": text(40), "fullConversationHeadersOnly": heads,
                 "createdAt": 1795165200000 + n * 1000, "lastUpdatedAt": 1795165300000 + n * 1000,
                 "originalFileStates": {f"file:///src/f{i}.py": {"content": text(8000)} for i in range(8)}}
        rows.append((f"composerData:{cid}", orjson.dumps(value)))
        conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows)
        headers.append({"composerId": cid, "name": value["name"], "createdAt": value["createdAt"],
                        "workspaceIdentifier": composer.get("workspaceIdentifier")})
        written += sum(len(k) + len(v) for k, v in rows)
        n += 1
        if n % 200 == 0:
            conn.commit()
    conn.execute("INSERT INTO ItemTable VALUES ('composer.composerHeaders', ?)",
                 (orjson.dumps({"allComposers": headers}),))
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")  # VS Code's storage sets none: a rollback journal
    conn.close()
    return path.stat().st_size


# -- opencode -------------------------------------------------------------------------------------
def opencode_store(home: Path, size: int, seed: int = 2) -> int:
    rng, text = random.Random(seed), Text(random.Random(seed))
    fixture = _fixture_db(OPENCODE_SQL)
    project = fixture.execute("SELECT * FROM project LIMIT 1").fetchone()
    session_cols = [r[1] for r in fixture.execute("PRAGMA table_info(session)")]
    template = dict(zip(session_cols, fixture.execute("SELECT * FROM session WHERE parent_id IS NULL LIMIT 1")
                        .fetchone(), strict=True))
    sid0 = template["id"]
    messages = fixture.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                               (sid0,)).fetchall()
    parts = fixture.execute("SELECT message_id, data FROM part WHERE session_id = ? ORDER BY id", (sid0,)).fetchall()
    path = home / ".local/share/opencode/opencode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    _fast(conn)
    schema = [sql for (sql,) in fixture.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type = 'index'")]
    for sql in schema:
        conn.execute(sql)
    conn.execute(f"INSERT INTO project VALUES ({', '.join('?' * len(project))})", project)
    clock, written, n = 1795165200000, 0, 0
    while written < size:
        sid = f"ses_{uuid.UUID(int=rng.getrandbits(128)).hex[:26]}"
        start = clock
        session_rows, message_rows, part_rows = [], [], []
        for _ in range(rng.randint(5, 40)):  # turns of the template conversation
            ids = {}
            for mid0, data in messages:
                clock += rng.randint(500, 5000)
                mid = ids[mid0] = f"msg_{uuid.UUID(int=rng.getrandbits(128)).hex[:26]}"
                value = orjson.loads(data)
                value.pop("error", None)
                if "parentID" in value:
                    value["parentID"] = ids.get(value["parentID"], value["parentID"])
                value["time"] = {"created": clock, "completed": clock + 1000}
                message_rows.append((mid, sid, clock, clock + 1000, orjson.dumps(value).decode()))
            for mid0, data in parts:
                if mid0 not in ids:
                    continue
                clock += rng.randint(10, 500)
                value = orjson.loads(data)
                if isinstance(value.get("text"), str):
                    value["text"] = text(rng.randint(100, 3000))
                state = value.get("state")
                if isinstance(state, dict) and isinstance(state.get("output"), str):
                    value["state"] = {**state, "output": text(rng.randint(500, 8000))}
                pid = f"prt_{uuid.UUID(int=rng.getrandbits(128)).hex[:26]}"
                part_rows.append((pid, ids[mid0], sid, clock, clock, orjson.dumps(value).decode()))
        session_rows.append({**template, "id": sid, "slug": f"s{n}", "title": text(50), "time_created": start,
                             "time_updated": clock})
        conn.executemany(f"INSERT INTO session ({', '.join(session_cols)}) VALUES "
                         f"({', '.join('?' * len(session_cols))})", [tuple(r.values()) for r in session_rows])
        conn.executemany("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES "
                         "(?, ?, ?, ?, ?)", message_rows)
        conn.executemany("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES "
                         "(?, ?, ?, ?, ?, ?)", part_rows)
        written += sum(len(r[-1]) for r in message_rows) + sum(len(r[-1]) for r in part_rows)
        n += 1
    conn.commit()
    conn.execute("PRAGMA journal_mode = WAL")  # as opencode keeps it; checkpointed: no -wal left
    conn.close()
    return path.stat().st_size


# -- Claude Code ----------------------------------------------------------------------------------
def claude_session(home: Path, size: int, seed: int = 3) -> int:
    writer = ClaudeSession(Writing(random.Random(seed)), "/home/dev/src/big-repo", _listing_templates())
    folder = home / ".claude/projects/-home-dev-src-big-repo"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{writer.sid}.jsonl"
    written = 0
    with open(path, "wb") as out:
        while written < size:
            writer.turn(first=written == 0)
            data = b"\n".join(writer.lines) + b"\n"
            writer.lines.clear()
            out.write(data)
            written += len(data)
    return written


# -- Codex ----------------------------------------------------------------------------------------
def codex_rollout(home: Path, size: int, seed: int = 4) -> int:
    rng, text = random.Random(seed), Text(random.Random(seed))
    lines = [orjson.loads(line) for line in CODEX_ROLLOUT.read_bytes().splitlines() if line.strip()]
    head, body = lines[0], lines[1:]
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    folder = home / ".codex/sessions/2026/03/14"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-03-14T15-02-41-{sid}.jsonl.zst"
    head["payload"]["id"] = sid
    with open(path, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
        out.write(orjson.dumps(head) + b"\n")
        n = 0
        while raw.tell() < size:
            n += 1
            for record in body:
                payload = record.get("payload") or {}
                if payload.get("type") == "function_call_output":
                    # Command output: partly random (hashes, ids, binary-ish logs), so it compresses as real output does.
                    noise = base64.b64encode(os.urandom(rng.randint(300, 3000))).decode()
                    record = {**record, "payload": {**payload, "output": text(rng.randint(200, 2000)) + noise}}
                elif payload.get("type") == "message" and payload.get("role") == "assistant":
                    record = {**record, "payload": {**payload, "content": [
                        {"type": "output_text", "text": text(rng.randint(200, 2000))}]}}
                if isinstance(record.get("payload"), dict) and "call_id" in record["payload"]:
                    record = {**record, "payload": {**record["payload"], "call_id": f"call_{n}_{record['payload']['call_id']}"}}
                out.write(orjson.dumps(record) + b"\n")
    return path.stat().st_size


SHAPES = {  # name -> (generator, bytes at scale 1.0, harness scanned)
    "cursor-vscdb": (cursor_store, 2 * 1024**3, "cursor"),
    "opencode-db": (opencode_store, 1024**3, "opencode"),
    "claude-jsonl": (claude_session, 500 * 1024**2, "claude-code"),
    "codex-zst": (codex_rollout, 200 * 1024**2, "codex"),
}
