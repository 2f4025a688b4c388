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


def copilot_cli(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    if path.name == "workspace.yaml":
        counts["workspace.yaml files"] += 1
        return counts
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        data = rec.get("data") or {}
        counts["(lines)"] += 1
        counts[f"type={rec['type']}" + (" (agentId)" if "agentId" in rec else "")] += 1
        if rec["type"] == "assistant.message" and data.get("reasoningText"):
            counts["assistant.message has reasoningText"] += 1
        if rec["type"] == "tool.execution_complete":
            counts[f"tool.execution_complete success={data.get('success')}"] += 1
        if rec["type"] == "user.message" and data.get("source"):
            counts["user.message has source"] += 1
    return counts


def pi_family(path: Path) -> Counter[str]:
    """pi and oh-my-pi: entry types, message roles and their block kinds, omp's custom entries."""
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        kind = rec.get("type")
        counts["(lines)"] += 1
        counts[f"type={kind}"] += 1
        if kind == "session" and "parentSession" in rec:
            counts["session has parentSession"] += 1
        if kind == "custom":
            sub = (rec.get("data") or {}).get("kind")
            counts[f"custom.customType={rec.get('customType')}" + (f" ({sub})" if sub else "")] += 1
        msg = rec.get("message") if kind == "message" else None
        if isinstance(msg, dict):
            role = msg.get("role")
            counts[f"message.role={role}"] += 1
            for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
                counts[f"{role}.content[]: {block.get('type')}"] += 1
            if role == "assistant":
                counts[f"assistant.stopReason={msg.get('stopReason')}"] += 1
                usage = msg.get("usage") or {}
                for key in ("reasoning", "reasoningTokens"):
                    if usage.get(key):
                        counts[f"assistant.usage.{key} (non-zero)"] += 1
            if role == "toolResult":
                counts[f"toolResult.isError={msg.get('isError')}"] += 1
    return counts


def cline(path: Path) -> Counter[str]:
    """Cline SDK: messages.json keys, roles, blocks, tool output parts and metadata; manifests; sessions.db."""
    counts: Counter[str] = Counter()
    if path.suffix == ".db":
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            for (status,) in db.execute("SELECT status FROM sessions"):
                counts[f"sessions.db status={status}"] += 1
        finally:
            db.close()
        return counts
    doc = json.loads(path.read_text())
    if not path.name.endswith(".messages.json"):  # the manifest <id>.json
        counts[f"manifest status={doc.get('status')}"] += 1
        for key in doc.get("metadata") or {}:
            counts[f"manifest metadata.{key}"] += 1
        return counts
    for key in doc:
        counts[f"messages.json key {key}"] += 1
    for message in doc.get("messages") or []:
        role = message.get("role")
        counts[f"message.role={role}"] += 1
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            counts[f"{role}.content[]: {block.get('type')}"] += 1
            for part in block.get("content") if block.get("type") == "tool_result" else []:
                kind = part.get("type") if isinstance(part, dict) and "type" in part else "(operation result)"
                counts[f"tool_result.content[]: {kind}" + (f" success={part.get('success')}" if
                                                           "success" in part else "")] += 1
        for key, value in (message.get("metadata") or {}).items():
            counts[f"{role}.metadata.{key}={value}"] += 1
        if message.get("metrics"):
            counts[f"{role} has metrics"] += 1
    return counts


def deepseek_harness(path: Path) -> Counter[str]:
    """dsh: zstd frames (one per append batch) of JSONL; event types, chunk kinds, blocks, sources."""
    import zstandard  # the harvester's own dependency, imported here only

    data = path.read_bytes()
    frames = 0
    if path.suffix == ".zstd":
        out, rest = b"", data
        while rest:
            reader = zstandard.ZstdDecompressor().decompressobj()
            out += reader.decompress(rest)
            rest, frames = reader.unused_data, frames + 1
        data = out
    counts: Counter[str] = Counter({"(zstd frames)": frames} if frames else {})
    for line in data.decode().splitlines():
        rec = json.loads(line)
        kind, body = rec.get("type"), rec.get("data") or {}
        counts["(lines)"] += 1
        counts[f"type={kind}"] += 1
        if kind == "session":
            counts["session: " + ",".join(k for k in rec if k not in ("type", "id", "createdAt"))] += 1
        elif kind == "assistant/chunk":
            counts[f"assistant/chunk {body['chunk'].get('type')}"] += 1
        elif kind == "user/message":
            source = body.get("source") or {}
            counts[f"user/message source.kind={source.get('kind')}" + (" +rpcId" if "rpcId" in source else "")] += 1
        elif kind == "assistant/message":
            for block in body["message"]["content"]:
                counts[f"assistant/message content[]: {block.get('type')}"] += 1
        elif kind == "tool/result":
            counts[f"tool/result isError={body['message']['content'][0].get('isError')}"] += 1
        elif kind in ("session/title", "sandbox/mode", "approval/policy") and "source" in body:
            source = body["source"]
            counts[f"{kind} source={source.get('kind') if isinstance(source, dict) else source}"] += 1
    return counts


def auggie(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    doc = json.loads(path.read_text())
    counts["(session files)"] += 1
    for key in doc:
        counts[f"session key {key}"] += 1
    for item in doc.get("chatHistory") or []:
        counts[f"chatHistory[] completed={item.get('completed')}"] += 1
        exchange = item.get("exchange") or {}
        for node in exchange.get("request_nodes") or []:
            counts[f"request_nodes[] type={node.get('type')}"] += 1
        for node in exchange.get("response_nodes") or []:
            counts[f"response_nodes[] type={node.get('type')}"] += 1
    return counts


def kimi_code(path: Path) -> Counter[str]:
    """Kimi Code: wire.jsonl record types (loop events and context messages by kind), or state.json keys."""
    if path.name == "state.json":
        data = json.loads(path.read_text())
        return Counter(f"state.json has {key}" for key in ("title", "titleKind", "forkedFrom", "cwd", "lastTurnReason")
                       if key in data)
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        kind = rec.get("type")
        counts["(lines)"] += 1
        counts[f"type={kind}" + (" (kind=event)" if rec.get("kind") == "event" else "")] += 1
        if kind == "context.append_loop_event":
            event = rec.get("event") or {}
            part = (event.get("part") or {}).get("type")
            counts[f"loop event {event.get('type')}" + (f" part={part}" if part else "")] += 1
        if kind == "context.append_message":
            message = rec.get("message") or {}
            counts[f"context message role={message.get('role')} origin={(message.get('origin') or {}).get('kind')}"] += 1
        if kind == "turn.ended":
            counts[f"turn.ended reason={rec.get('reason')}"] += 1
    return counts


def openhands(path: Path) -> Counter[str]:
    """One event file (its kind, and an observation's kind), or base_state.json (its execution_status)."""
    data = json.loads(path.read_text())
    if path.name == "base_state.json":
        return Counter({f"base_state execution_status={data.get('execution_status')}": 1})
    observation = data.get("observation") if isinstance(data.get("observation"), dict) else None
    return Counter({f"{data.get('kind')}" + (f" observation={observation.get('kind')}" if observation else ""): 1})


def mistral_vibe(path: Path) -> Counter[str]:
    """Mistral Vibe 3.x: journal record types and projection ops, history entry types in the chunks (a chunk
    of the model's context or of runtime state is counted as such), the documents by name."""
    counts: Counter[str] = Counter()
    if path.suffix == ".jsonl":
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            counts[f"journal type={rec.get('type')}"] += 1
            for op in (rec.get("payload") or {}).get("delta") or []:
                entry = op.get("entry") or {}
                counts[f"projection op={op.get('op')}" + (f" {entry.get('type')}" if entry else "")] += 1
        return counts
    data = json.loads(path.read_text())
    if path.parent.name != "chunks":
        return Counter({path.name: 1})
    for item in data:
        kind = item.get("type") if isinstance(item, dict) and "sessionId" in item else "(context or state item)"
        counts[f"chunk entry type={kind}" + (f" {item.get('kind') or item.get('role')}" if kind == "effect" or
                                                 kind == "message" else "")] += 1
    return counts


READERS = {
    "mistral_vibe": (mistral_vibe, ("meta.json", "CURRENT", "manifest.json", "*.jsonl", "chunks/*.json")),
    "auggie": (auggie, ("*.json",)),
    "deepseek_harness": (deepseek_harness, ("session*.jsonl", "session*.jsonl.zstd")),
    "cline": (cline, ("*.messages.json", "sessions/*/*_?????.json", "sessions.db")),
    "pi/pi": (pi_family, ("*.jsonl",)),
    "pi/oh_my_pi": (pi_family, ("*.jsonl",)),
    "copilot_cli": (copilot_cli, ("events.jsonl", "workspace.yaml")),
    "qwen_code": (qwen_code, ("*.jsonl",)),
    "gemini_cli": (gemini_cli, ("*.jsonl", "projects.json")),
    "continue_cli": (continue_cli, ("*.json",)),
    "aider": (aider, (".aider.chat.history.md", ".aider.input.history")),
    "opencode": (sqlite_store, ("*.db",)),
    "openhands": (openhands, ("base_state.json", "event-*.json")),
    "kilo": (sqlite_store, ("*.db",)),
    "kimi_code": (kimi_code, ("wire.jsonl", "state.json")),
}


def table(harness: str) -> str:
    reader, patterns = READERS[harness]
    columns: dict[str, Counter[str]] = {}
    real = FIXTURES / harness / ("real/sdk" if harness == "cline" else "real")  # Cline: beside hand/sdk
    for scenario in sorted(p for p in real.iterdir() if p.is_dir()):
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
