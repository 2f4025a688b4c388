"""A session as one Hindsight document: what is sent, built from the bank's rows alone (no I/O).

The content is one JSON object per line, ``{"role", "content", "timestamp"}``, the turn-per-line form
Hindsight's own coding-agent integration retains: the user's and the assistant's prose, and each tool call as
a short action line naming the tool and its main target (the command, the file). Left out: tool output
(it is bulky and already summarized by the call), thinking, meta records, events that a rewind or a new
branch abandoned, the harvester's own recall (its MCP tools' calls and the brief it hands out, marked
``recall`` at ingest) and blocks that Hindsight's integrations injected into a prompt
(``<hindsight_memories>``, ``<relevant_memories>``): a memory fed back into memory would echo forever.

Lines are appended as the session grows and never rewritten, so a new turn is an append of new lines
behind an unchanged prefix; anything else (a rewind, a revised event, a re-parse) changes the prefix, which
the fingerprint of the sent lines shows (harvester/sinks/forward.py).
"""

from __future__ import annotations

import hashlib
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from harvester import __version__

LINE_CHARS = 8000  # a line's content past this is cut, saying so: one pasted log is not one memory
ACTION_TARGET_CHARS = 300
DROPPED_META = ("rewound", "abandoned", "removed")  # marks that take an event out of the conversation
_INJECTED = re.compile(r"<(hindsight_memories|relevant_memories)>.*?</\1>", re.DOTALL)
# Hindsight's integrations name a session's document after it: the Claude Code plugin the bare session id
# (its later chunks "<id>-c<n>"), others "conversation:<id>" or "chat:<id>". One of these in the bank means
# the session is filed already.
THEIR_DOCUMENT_IDS = ("conversation:{id}", "chat:{id}", "{id}")


@dataclass(frozen=True, slots=True)
class Document:
    document_id: str
    lines: list[str]  # each a JSON object, without the newline
    context: str
    timestamp: str | None
    metadata: dict[str, str]
    tags: list[str]

    def text(self, start: int = 0) -> str:
        return "\n".join(self.lines[start:])


def document_id(harness: str, native_id: str) -> str:
    return f"harvester:{harness}:{native_id}"


def their_document_ids(native_id: str) -> list[str]:
    return [t.format(id=native_id) for t in THEIR_DOCUMENT_IDS]


def fingerprint(lines: Iterable[str]) -> str:
    """A hash of lines as sent, to tell an unchanged prefix from a rewritten one."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()[:32]


def build(session: Mapping[str, Any], events: Iterable[Mapping[str, Any]], host: str | None = None) -> Document:
    """The document of ``session`` (a bank sessions row) from its events (bank rows, in order)."""
    lines = [orjson.dumps(turn).decode() for turn in turns(events)]
    harness, native_id = session["harness"], session["native_id"]
    metadata = {
        "harness": harness,
        "session_id": native_id,
        "branch": session.get("branch") or "",
        "origin": session.get("origin_url") or "",
        "host": host if host is not None else socket.gethostname(),
        "harvester_version": __version__,
    }
    if session.get("title"):
        metadata["title"] = str(session["title"])[:200]
    return Document(
        document_id=document_id(harness, native_id),
        lines=lines,
        context=f"{harness} coding-agent session, captured by harvester",
        timestamp=session.get("started_at") or None,
        metadata={k: v for k, v in metadata.items() if v},
        tags=[f"harness:{harness}", "source:harvester"],
    )


def turns(events: Iterable[Mapping[str, Any]]) -> Iterable[dict[str, str]]:
    for e in events:
        meta = e.get("meta") or {}
        if e.get("recall") or meta.get("recall") or any(meta.get(k) for k in DROPPED_META):
            continue
        role, kind = e["role"], e["kind"]
        if kind == "text" and role in ("user", "assistant"):
            content = _INJECTED.sub("", e.get("text") or "").strip()
        elif kind == "tool_call":
            if _recalls(e.get("tool_name")):
                continue
            content = action_line(e.get("tool_name"), e.get("tool_input"))
            role = "assistant"
        else:
            continue
        if not content:
            continue
        if len(content) > LINE_CHARS:
            content = f"{content[:LINE_CHARS]} [... {len(content) - LINE_CHARS} more characters]"
        turn = {"role": role, "content": content}
        if e.get("ts"):
            turn["timestamp"] = e["ts"]
        yield turn


def _recalls(tool_name: str | None) -> bool:
    """A call of a memory tool: the harvester's own (also marked at ingest) or Hindsight's (mcp__hindsight__...)."""
    from harvester.capture.recall_seal import is_our_tool

    return is_our_tool(tool_name) or "hindsight" in (tool_name or "").lower()


def action_line(tool_name: str | None, tool_input: Any) -> str:
    """``[tool Bash] npm test``: the tool and its main target (the command, the file, else its first argument)."""
    from harvester.recall.actions import command_of, kind_of, paths_of

    name = tool_name or "tool"
    target: str | None = None
    if kind_of(name) == "command":
        target = command_of(tool_input)
    if not target:
        paths = paths_of(tool_input)
        target = ", ".join(paths[:3]) if paths else None
    if not target and isinstance(tool_input, Mapping):
        for key in ("pattern", "query", "url", "description", "prompt"):
            if isinstance(tool_input.get(key), str) and tool_input[key]:
                target = tool_input[key]
                break
    if not target and isinstance(tool_input, str):
        target = tool_input
    target = " ".join((target or "").split())  # one line
    if len(target) > ACTION_TARGET_CHARS:
        target = target[:ACTION_TARGET_CHARS] + " ..."
    return f"[tool {name}] {target}".rstrip()
