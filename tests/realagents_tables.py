"""``python -m tests.realagents_tables HARNESS``: count record types in ``fixtures/<harness>/real/*``.

Prints a Markdown table (one row per record type or notable field, one column per scenario) for the
CAPTURE.md files. What is counted depends on the store format: JSONL ``type``/subtypes and part kinds
(Qwen Code, Gemini CLI), Continue's ``history[]`` items, Aider's Markdown blocks, and for the SQLite
stores (opencode, Kilo) rows per table, ``message.data.role``, ``part.data.type`` and ``event.type``.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tests.realagents import REPO_ROOT

FIXTURES = REPO_ROOT / "fixtures"


def qwen_code(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        kind = rec.get("type")
        counts["(lines)"] += 1
        counts[f"type={kind}"] += 1
        if "subtype" in rec:
            counts[f"{kind}.subtype={rec['subtype']}"] += 1
        for part in (rec.get("message") or {}).get("parts") or []:
            counts[f"{kind}.message.parts[]: {_part_kind(part)}"] += 1
        if isinstance(result := rec.get("toolCallResult"), dict):
            counts[f"tool_result.toolCallResult.status={result.get('status')}"] += 1
        if "usageMetadata" in rec:
            counts[f"{kind} has usageMetadata"] += 1
    return counts


def gemini_cli(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    if path.name == "projects.json":
        counts["projects.json entries"] = len(json.loads(path.read_text()).get("projects", {}))
        return counts
    seen: set[str] = set()
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        counts["(lines)"] += 1
        if "$set" in rec:
            for key in rec["$set"]:
                counts[f"$set.{key}"] += 1
            continue
        if "projectHash" in rec:
            counts["header (sessionId, projectHash, startTime, kind)"] += 1
            continue
        kind = rec.get("type")
        counts[f"type={kind}"] += 1
        if rec.get("id") in seen:
            counts[f"{kind} re-written with an id already seen"] += 1
        seen.add(rec.get("id"))
        content = rec.get("content")
        if isinstance(content, list):
            for part in content:
                counts[f"{kind}.content[]: {_part_kind(part)}"] += 1
        elif isinstance(content, str):
            counts[f"{kind}.content=string{' (empty)' if not content else ''}"] += 1
        if rec.get("thoughts"):
            counts[f"{kind}.thoughts[] (non-empty)"] += 1
        for call in rec.get("toolCalls") or []:
            counts[f"{kind}.toolCalls[].status={call.get('status')}"] += 1
    return counts


def continue_cli(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    doc = json.loads(path.read_text())
    if path.name == "sessions.json":
        counts["sessions.json entries"] = len(doc)
        return counts
    for item in doc.get("history", []):
        role = item["message"].get("role")
        counts[f"history[].message.role={role}"] += 1
        if item["message"].get("toolCalls"):
            counts[f"{role} has message.toolCalls"] += 1
        for state in item.get("toolCallStates") or []:
            counts[f"toolCallStates[].status={state.get('status')}"] += 1
        if item.get("contextItems"):
            counts["contextItems non-empty"] += 1
        if "editorState" in item:
            counts[f"{role} has editorState"] += 1
    return counts


AIDER_BLOCKS = (
    ("# aider chat started at", re.compile(r"^# aider chat started at ")),
    ("#### user prompt", re.compile(r"^#### ")),
    ("> status line (all, incl. Add file and Tokens)", re.compile(r"^> ")),
    ("<thinking-content-…> open tag", re.compile(r"^<thinking-content-[0-9a-f]+>$")),
    ("> Add file to the chat? (confirmation)", re.compile(r"^> Add file to the chat\?")),
    ("> Tokens: line", re.compile(r"^> Tokens: ")),
    ("input.history # <timestamp> entry", re.compile(r"^# \d{4}-\d\d-\d\d \d")),
    ("input.history + line", re.compile(r"^\+")),
)


def aider(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        for label, pattern in AIDER_BLOCKS:
            if pattern.match(line):
                counts[label] += 1
    return counts


def sqlite_store(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            if rows := db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]:
                counts[f"table {table} (rows)"] = rows
        counts["(tables, incl. empty)"] = len(tables)
        for (data,) in db.execute("SELECT data FROM message"):
            counts[f"message.data.role={json.loads(data).get('role')}"] += 1
        for (data,) in db.execute("SELECT data FROM part"):
            part = json.loads(data)
            counts[f"part.data.type={part.get('type')}"] += 1
            if part.get("type") == "tool":
                counts[f"part tool state.status={part['state'].get('status')}"] += 1
        if "event" in tables:
            for (kind,) in db.execute("SELECT type FROM event"):
                counts[f"event.type={kind}"] += 1
    finally:
        db.close()
    return counts


def _part_kind(part: Any) -> str:
    if not isinstance(part, dict):
        return type(part).__name__
    keys = [k for k in ("text", "functionCall", "functionResponse", "inlineData") if k in part]
    return "+".join(keys + (["thought"] if part.get("thought") else [])) or ",".join(part)


READERS = {
    "qwen_code": (qwen_code, ("*.jsonl",)),
    "gemini_cli": (gemini_cli, ("*.jsonl", "projects.json")),
    "continue_cli": (continue_cli, ("*.json",)),
    "aider": (aider, (".aider.chat.history.md", ".aider.input.history")),
    "opencode": (sqlite_store, ("*.db",)),
    "kilo": (sqlite_store, ("*.db",)),
}


def table(harness: str) -> str:
    reader, patterns = READERS[harness]
    columns: dict[str, Counter[str]] = {}
    for scenario in sorted(p for p in (FIXTURES / harness / "real").iterdir() if p.is_dir()):
        total: Counter[str] = Counter()
        for pattern in patterns:
            for path in sorted(scenario.rglob(pattern)):
                total += reader(path)
        columns[scenario.name] = total
    rows = sorted({key for c in columns.values() for key in c})
    lines = ["| record | " + " | ".join(f"`{c}`" for c in columns) + " |"]
    lines.append("|---|" + "---|" * len(columns))
    lines += [f"| `{r}` | " + " | ".join(str(c.get(r, "")) for c in columns.values()) + " |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(READERS):
        print(f"## {name}\n\n{table(name)}\n")
