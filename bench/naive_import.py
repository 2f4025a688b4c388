"""The naive importer issue 13 measures harvester against, and the bare decoding floor beneath both.

    python bench/naive_import.py HOME OUT.sqlite   # import; prints what it did as JSON
    python bench/naive_import.py HOME --floor      # only read and decode every line and row

What a competent person writes in an afternoon to put Claude Code, Codex and opencode history into SQLite
with full-text search: one process; every JSONL line decoded with orjson, its text pulled out, one
``INSERT`` per record that has text (a prepared statement, the FTS5 external-content index kept by the
usual trigger), one transaction per file, WAL with ``synchronous=NORMAL``. For opencode one ``SELECT`` of
the parts with their message, one insert per part, one transaction for the database. No redaction, no
cursors, no archive, no repository identity, no sessions table: so harvester's work beyond this is what
those cost, and the floor (``--floor``: read and decode only) is what no importer can go below.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, agent TEXT NOT NULL, session TEXT, source TEXT NOT NULL, line INTEGER NOT NULL,
    ts TEXT, role TEXT, kind TEXT, text TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(text, content='events', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS events_ai AFTER INSERT ON events BEGIN
    INSERT INTO events_fts(rowid, text) VALUES (new.id, new.text);
END;
"""
INSERT = "INSERT INTO events (agent, session, source, line, ts, role, kind, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
OPENCODE_ROWS = ("SELECT p.session_id, p.id, p.data, m.data FROM part p JOIN message m ON m.id = p.message_id "
                 "ORDER BY p.session_id, p.id")


def sources(home: Path) -> Iterator[tuple[str, Path]]:
    """Every store of the three agents under a home directory, in a stable order."""
    for path in sorted((home / ".claude" / "projects").rglob("*.jsonl")):
        yield "claude-code", path
    for folder in ("sessions", "archived_sessions"):
        for path in sorted((home / ".codex" / folder).rglob("rollout-*.jsonl")):
            yield "codex", path
    for path in sorted((home / ".local" / "share" / "opencode").glob("opencode*.db")):
        yield "opencode", path


def source_bytes(home: Path) -> int:
    return sum(path.stat().st_size for _, path in sources(home))


def _blocks_text(content: Any) -> tuple[str, str]:
    """(kind, text) of a Claude message's content: a string, or blocks of text/thinking/tool_use/tool_result."""
    if isinstance(content, str):
        return "text", content
    kind, parts = "text", []
    for block in content or ():
        btype = block.get("type")
        if btype == "text":
            parts.append(block.get("text") or "")
        elif btype == "thinking":
            kind = "thinking"
            parts.append(block.get("thinking") or "")
        elif btype == "tool_use":
            kind = "tool_call"
            parts.append(f"{block.get('name')}: {orjson.dumps(block.get('input')).decode()}")
        elif btype == "tool_result":
            kind = "tool_result"
            inner = block.get("content")
            parts.append(inner if isinstance(inner, str) else _blocks_text(inner)[1])
    return kind, "\n".join(parts)


def claude_event(record: dict) -> tuple[str | None, str, str, str] | None:
    """(session, role, kind, text) of a Claude Code line, or None for bookkeeping."""
    if record.get("type") not in ("user", "assistant"):
        return None
    message = record.get("message") or {}
    kind, text = _blocks_text(message.get("content"))
    return record.get("sessionId"), message.get("role") or record["type"], kind, text


def codex_event(record: dict) -> tuple[str | None, str, str, str] | None:
    """(session, role, kind, text) of a Codex ``response_item`` line (``event_msg`` repeats them)."""
    if record.get("type") != "response_item":
        return None
    item = record.get("payload") or {}
    itype = item.get("type")
    if itype == "message":
        text = "\n".join(c.get("text") or "" for c in item.get("content") or ())
        return None, item.get("role") or "user", "text", text
    if itype == "reasoning":
        return None, "assistant", "thinking", "\n".join(s.get("text") or "" for s in item.get("summary") or ())
    if itype in ("function_call", "custom_tool_call"):
        return None, "assistant", "tool_call", f"{item.get('name')}: {item.get('arguments') or item.get('input')}"
    if itype in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        return None, "tool", "tool_result", output if isinstance(output, str) else orjson.dumps(output).decode()
    return None


def opencode_event(part: dict, message: dict) -> tuple[str, str, str] | None:
    """(role, kind, text) of an opencode part, or None for step markers."""
    ptype = part.get("type")
    role = message.get("role") or "assistant"
    if ptype == "text":
        return role, "text", part.get("text") or ""
    if ptype == "reasoning":
        return role, "thinking", part.get("text") or ""
    if ptype == "tool":
        state = part.get("state") or {}
        result = state.get("output") if state.get("output") is not None else state.get("error")
        call = f"{part.get('tool')}: {orjson.dumps(state.get('input')).decode()}"
        return "tool", "tool_result", f"{call}\n{result or ''}"
    return None


class NaiveImporter:
    def __init__(self, db: Path) -> None:
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        self.events = 0
        self.records = 0

    def close(self) -> None:
        self.conn.close()

    def jsonl(self, agent: str, path: Path) -> None:
        extract = claude_event if agent == "claude-code" else codex_event
        session: str | None = path.stem
        execute = self.conn.execute  # sqlite3 caches the prepared INSERT: same SQL text every time
        execute("BEGIN")
        with path.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                record = orjson.loads(line)
                self.records += 1
                if agent == "codex" and record.get("type") == "session_meta":
                    session = (record.get("payload") or {}).get("id") or session
                event = extract(record)
                if event is None or not event[3]:
                    continue
                recorded, role, kind, text = event
                execute(INSERT, (agent, recorded or session, str(path), number, record.get("timestamp"), role,
                                 kind, text))
                self.events += 1
        execute("COMMIT")

    def opencode(self, path: Path) -> None:
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        execute = self.conn.execute
        execute("BEGIN")
        try:
            for number, (session, _part_id, data, message) in enumerate(source.execute(OPENCODE_ROWS), 1):
                self.records += 1
                event = opencode_event(orjson.loads(data), orjson.loads(message))
                if event is None or not event[2]:
                    continue
                role, kind, text = event
                execute(INSERT, ("opencode", session, str(path), number, None, role, kind, text))
                self.events += 1
        finally:
            source.close()
        execute("COMMIT")


def naive_import(home: Path, db: Path) -> dict[str, Any]:
    started = time.perf_counter()
    importer = NaiveImporter(db)
    try:
        for agent, path in sources(home):
            if agent == "opencode":
                importer.opencode(path)
            else:
                importer.jsonl(agent, path)
    finally:
        importer.close()
    return {"seconds": time.perf_counter() - started, "events": importer.events, "records": importer.records}


def decode_floor(home: Path) -> dict[str, Any]:
    """Read every line and every message/part row and decode it with orjson; nothing else."""
    started = time.perf_counter()
    loads = orjson.loads
    records = 0
    for agent, path in sources(home):
        if agent == "opencode":
            source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                for table in ("message", "part"):
                    for (data,) in source.execute(f"SELECT data FROM {table}"):
                        loads(data)
                        records += 1
            finally:
                source.close()
            continue
        for line in path.read_bytes().splitlines():
            if line:
                loads(line)
                records += 1
    return {"seconds": time.perf_counter() - started, "events": records, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("home", type=Path, help="a home directory holding .claude, .codex, .local/share/opencode")
    parser.add_argument("db", type=Path, nargs="?", help="the SQLite file to create (not with --floor)")
    parser.add_argument("--floor", action="store_true", help="only read and decode")
    args = parser.parse_args()
    if args.floor:
        result = decode_floor(args.home)
    elif args.db is None:
        parser.error("give OUT.sqlite, or --floor")
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{args.db}{suffix}").unlink(missing_ok=True)
        result = naive_import(args.home, args.db)
    result["bytes"] = source_bytes(args.home)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
