"""An opencode 1.18.33 database (``opencode.db``) with the schema of ``fixtures/opencode/real/``.

The tables, indexes and ``migration`` rows are copied from the captured database itself, so the schema is
exactly what opencode created. Rows follow the captures and ``fixtures/opencode/SOURCE.md``: per repository
a ``project`` (id = a root commit hash) and ``project_directory``; per session a ``session`` row; per
turn a user ``message`` with its ``text`` part, then one assistant ``message`` per model call (``finish``
``tool-calls`` until the last, ``stop``) whose parts are ``step-start``, an optional ``reasoning``, an
optional ``text``, ``tool`` parts, and ``step-finish`` with the call's tokens. Ids are opencode's: ``msg_``
and ``prt_`` ascending with time, ``ses_`` descending. Tools other than ``read`` (the only one captured)
take the field names opencode's tool definitions give (``bash`` ``command``/``description``, ``edit``
``filePath``/``oldString``/``newString``, ``grep``/``glob`` ``pattern``). Not written: the ``event``
table (an event-sourcing log repeating every message and part; no importer reads it), so the database's
size is the data an importer reads.
"""

from __future__ import annotations

import random
import sqlite3
import string
from pathlib import Path

import orjson

from bench.gen_common import FIXTURES, Clock
from bench.gen_text import Writing

_CAPTURE = FIXTURES / "opencode" / "real" / "two_turns" / "opencode.db"
VERSION = "1.18.33"
TOOLS = (("read", 0.35), ("bash", 0.35), ("edit", 0.14), ("grep", 0.1), ("glob", 0.06))
TOOL_ERROR_RATE = 0.04
PERMISSION = ('[{"permission":"question","pattern":"*","action":"deny"},{"permission":"plan_enter","pattern":"*",'
              '"action":"deny"},{"permission":"plan_exit","pattern":"*","action":"deny"}]')
_B62 = string.ascii_letters + string.digits


def create_schema(conn: sqlite3.Connection) -> None:
    capture = sqlite3.connect(f"file:{_CAPTURE}?immutable=1", uri=True)
    try:
        statements = [sql for (sql,) in capture.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
        migrations = capture.execute("SELECT id, time_completed FROM migration ORDER BY rowid").fetchall()
    finally:
        capture.close()
    for sql in statements:
        conn.execute(sql)
    conn.executemany("INSERT INTO migration VALUES (?, ?)", migrations)


class Ids:
    """opencode's identifiers: 12 hex digits of ms * 4096 + a counter, then 14 base62 characters."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.last = 0

    def _stamp(self, ms: int) -> int:
        self.last = max(ms * 4096, self.last + 1)
        return self.last

    def ascending(self, prefix: str, ms: int) -> str:
        return f"{prefix}_{self._stamp(ms) & 0xFFFFFFFFFFFF:012x}{''.join(self.rng.choices(_B62, k=14))}"

    def descending(self, prefix: str, ms: int) -> str:
        return f"{prefix}_{~self._stamp(ms) & 0xFFFFFFFFFFFF:012x}{''.join(self.rng.choices(_B62, k=14))}"


class OpencodeWriter:
    def __init__(self, conn: sqlite3.Connection, w: Writing) -> None:
        self.conn = conn
        self.w = w
        self.rng = w.rng
        self.ids = Ids(self.rng)
        self.projects: dict[str, str] = {}
        self.bytes = 0  # of the rows' text: sizes the database before it is on disk

    def project(self, cwd: str, clock: Clock) -> str:
        if cwd not in self.projects:
            pid = self.projects[cwd] = self.w.hexid(40)
            self.conn.execute("INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) "
                              "VALUES (?, ?, 'git', ?, ?, '[]')", (pid, cwd, clock.ms(), clock.ms()))
            self.conn.execute("INSERT INTO project_directory (project_id, directory, time_created) VALUES (?, ?, ?)",
                              (pid, cwd, clock.ms()))
        return self.projects[cwd]

    def session(self, cwd: str, turns: int) -> None:
        w, rng = self.w, self.rng
        clock = Clock(rng)
        project = self.project(cwd, clock)
        sid = self.ids.descending("ses", clock.ms())
        created = clock.ms()
        tokens = [0, 0, 0]
        for _ in range(turns):
            self.turn(sid, cwd, clock, tokens)
        title = w.sentence(rng.randint(3, 9))[:80]
        slug = f"{w.ident().replace('_', '')}-{w.ident().replace('_', '')}"
        model = '{"id":"fake-model","providerID":"fakellm","variant":"default"}'
        self.conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, path, title, version, summary_additions, "
            "summary_deletions, summary_files, cost, tokens_input, tokens_output, tokens_reasoning, permission, "
            "agent, model, time_created, time_updated) VALUES (?, ?, ?, ?, '', ?, ?, 0, 0, 0, 0, ?, ?, ?, ?, "
            "'build', ?, ?, ?)",
            (sid, project, slug, cwd, title, VERSION, *tokens, PERMISSION, model, created, clock.ms()))
        self.bytes += 600

    def message(self, sid: str, clock: Clock, data: dict, completed: bool = True) -> str:
        mid = self.ids.ascending("msg", clock.ms())
        created = clock.ms()
        if completed and data.get("role") == "assistant":
            data["time"]["completed"] = clock.ms() + self.rng.randint(200, 30000)
        text = orjson.dumps(data).decode()
        self.conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                          (mid, sid, created, data["time"].get("completed", created) + 1, text))
        self.bytes += len(text) + 80
        return mid

    def part(self, sid: str, mid: str, clock: Clock, data: dict) -> None:
        clock.tick(0.002, 0.2)
        pid = self.ids.ascending("prt", clock.ms())
        text = orjson.dumps(data).decode()
        self.conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                          (pid, mid, sid, clock.ms(), clock.ms() + self.rng.randint(1, 40), text))
        self.bytes += len(text) + 100

    def turn(self, sid: str, cwd: str, clock: Clock, tokens: list[int]) -> None:
        w, rng = self.w, self.rng
        clock.think()
        model = {"providerID": "fakellm", "modelID": "fake-model"}
        user = self.message(sid, clock, {"role": "user", "time": {"created": clock.ms()}, "agent": "build",
                                         "model": model, "summary": {"diffs": []}})
        self.part(sid, user, clock, {"type": "text", "text": w.prompt(cwd)})
        calls = min(40, int(rng.expovariate(1 / 3.5)))
        for n in range(calls + 1):
            clock.think()
            last = n == calls
            usage = {"total": 0, "input": rng.randint(6000, 150000), "output": rng.randint(20, 2500),
                     "reasoning": 0, "cache": {"write": 0, "read": rng.randint(0, 120000)}}
            usage["total"] = usage["input"] + usage["output"]
            tokens[0] += usage["input"]
            tokens[1] += usage["output"]
            mid = self.message(sid, clock, {
                "parentID": user, "role": "assistant", "mode": "build", "agent": "build",
                "path": {"cwd": cwd, "root": cwd}, "cost": 0, "tokens": usage, "modelID": "fake-model",
                "providerID": "fakellm", "time": {"created": clock.ms()}, "finish": "stop" if last else "tool-calls"})
            snapshot = w.hexid(40)
            self.part(sid, mid, clock, {"snapshot": snapshot, "type": "step-start"})
            if rng.random() < 0.3:
                start = clock.ms()
                self.part(sid, mid, clock, {"type": "reasoning", "text": w.thinking(),
                                            "time": {"start": start, "end": clock.ms()}})
            if last or rng.random() < 0.4:
                start = clock.ms()
                text = w.reply(cwd) if last else w.reply(cwd)[:rng.randint(80, 1000)]
                self.part(sid, mid, clock, {"type": "text", "text": text, "time": {"start": start, "end": clock.ms()}})
            if not last:
                for _ in range(1 if rng.random() < 0.85 else rng.randint(2, 3)):
                    self.part(sid, mid, clock, self.tool(cwd, clock))
            self.part(sid, mid, clock, {"reason": "stop" if last else "tool-calls", "snapshot": snapshot,
                                        "type": "step-finish", "tokens": usage, "cost": 0})

    def tool(self, cwd: str, clock: Clock) -> dict:
        w, rng = self.w, self.rng
        tool = rng.choices([t for t, _ in TOOLS], [s for _, s in TOOLS])[0]
        path = w.path(cwd)
        start = clock.ms()
        clock.tick(0.01, 10.0)
        time = {"start": start, "end": clock.ms()}
        call = f"call_{w.hexid(24)}"
        inputs = {"read": {"filePath": path},
                  "bash": {"command": w.command(cwd), "description": w.sentence(rng.randint(3, 8))},
                  "edit": {"filePath": path, "oldString": w.code(rng.randint(1, 8)), "newString": w.code(rng.randint(1, 10))},
                  "grep": {"pattern": w.ident(), "path": cwd},
                  "glob": {"pattern": f"**/*{w.ident()}*"}}[tool]
        if rng.random() < TOOL_ERROR_RATE:
            state: dict = {"status": "error", "input": inputs, "error": f"{w.sentence(rng.randint(3, 10))} {path}",
                           "time": time}
            return {"type": "tool", "tool": tool, "callID": call, "state": state}
        if tool == "read":
            text = w.file_text()
            lines = text.count("\n") + 1
            output = (f"<path>{path}</path>\n<type>file</type>\n<content>\n{w.numbered(text, style='colon')}\n\n"
                      f"(End of file - total {lines} lines)\n</content>")
            metadata: dict = {"preview": text[:600], "truncated": False, "loaded": [],
                              "display": {"type": "file", "path": path, "text": text[:600], "lineStart": 1,
                                          "lineEnd": lines, "totalLines": lines, "truncated": False}}
        elif tool == "bash":
            output = w.shell_output(cwd, w.output_size())
            metadata = {"output": output[:30000], "exit": 0, "description": inputs["description"], "truncated": False}
        elif tool == "edit":
            output = "Edit applied successfully."
            metadata = {"diff": w.diff(path.removeprefix(cwd + "/"), w.sized((600, 0.8), 12000)),
                        "filediff": {"file": path, "additions": rng.randint(1, 40), "deletions": rng.randint(0, 30)}}
        else:
            output = w.grep_output(cwd, w.output_size() // 2)
            metadata = {"matches": output.count("\n") + 1, "truncated": False}
        state = {"status": "completed", "input": inputs, "output": output, "metadata": metadata,
                 "title": path.rsplit("/", 1)[-1] if tool in ("read", "edit") else inputs.get("pattern", ""),
                 "time": time}
        return {"type": "tool", "tool": tool, "callID": call, "state": state}


def generate(db: Path, target_bytes: int, w: Writing, repos: list[str]) -> int:
    """Sessions into a new ``db`` until its rows hold about ``target_bytes``; the file's size."""
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # as opencode opens it
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        create_schema(conn)
        writer = OpencodeWriter(conn, w)
        while writer.bytes < target_bytes:
            writer.session(w.rng.choice(repos), turns=max(1, min(80, int(w.rng.lognormvariate(1.8, 0.9)))))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db.stat().st_size
