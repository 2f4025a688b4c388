"""Claude Code: ``~/.claude/projects/<encoded cwd>/<sessionId>.jsonl``, one JSON record per line.

Format facts and their sources: ``fixtures/claude_code/SOURCE.md``. In short:

- ``user`` / ``assistant`` lines carry the conversation; one API response is split over several
  assistant lines that share ``message.id`` (one content block each), so usage is taken once per
  ``message.id``. Tool results ride on ``user`` lines as ``tool_result`` blocks.
- ``system`` lines carry compaction boundaries (``compact_boundary``) and other notices; the summary
  written after a compaction is a ``user`` line flagged ``isCompactSummary``.
- ``summary`` / ``ai-title`` / ``custom-title`` give the title; many other record types
  (``queue-operation``, ``file-history-snapshot``, ``progress``, ...) are bookkeeping: listed in
  ``BOOKKEEPING`` and skipped on purpose. Anything else is counted as drift.
- Subagents live in ``<sessionId>/subagents/agent-<agentId>.jsonl`` (+ ``.meta.json``); older
  versions wrote ``agent-<agentId>.jsonl`` beside the main file. Both become sessions of their own,
  linked to the parent session.
- ``--fork-session`` writes a new session file that copies the history, uuids included, and names no
  parent: the bank links it to the session holding the same first record (``forks_copy_history`` in
  the registry). Before 1.0.124 a resume copied the old records with their old ``sessionId``: linked here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_objects, render_call

NAME = "claude-code"


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    out = []
    # CLAUDE_CONFIG_DIR moves ~/.claude; ccusage accepts a comma-separated list, which costs nothing
    # to honour here.
    for entry in (env.get("CLAUDE_CONFIG_DIR") or "").split(","):
        if entry.strip():
            out.append(Path(entry.strip()).expanduser() / "projects")
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    out += [home / ".claude" / "projects", xdg / "claude" / "projects"]
    return out


def _meta_json(path: PurePath) -> PurePath:
    return path.with_name(path.stem + ".meta.json")


SOURCES = (
    SourceSpec("*/*.jsonl", "jsonl", "main"),  # sessions, and pre-2.1.2 sidechains (agent-*.jsonl)
    SourceSpec("*/*/subagents/agent-*.jsonl", "jsonl", "subagent", sidecar=_meta_json),
    SourceSpec("*/*/subagents/workflows/*/agent-*.jsonl", "jsonl", "subagent", sidecar=_meta_json),
)

# The CLI is a native binary named claude (older releases: node running @anthropic-ai/claude-code).
PROCESSES = ("claude", "@anthropic-ai/claude-code")

# Record types Claude Code writes for its own bookkeeping, with nothing for a transcript: skipped on
# purpose (not drift). The prompt of a queue-operation reappears as a user line when it is sent.
BOOKKEEPING = frozenset({
    "queue-operation", "file-history-snapshot", "file-history-delta", "last-prompt", "progress",
    "agent-setting", "bridge-session", "atis-latch", "frame-link", "worktree-state", "relocated", "cost-state",
})

_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_LOCAL_STDOUT = re.compile(r"<local-command-std(?:out|err)>(.*?)</local-command-std(?:out|err)>", re.S)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_INTERRUPTED = "[Request interrupted by user"
# User-role text that Claude Code (not the human) puts in the conversation.
_MACHINE_PREFIXES = ("<local-command-caveat>", "<task-notification>", "<system-reminder>")


class _Reader:
    """Per-call parsing context. ``state`` persists between calls on the same source."""

    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state)
        self.session_id: str = state.get("session") or _session_from_path(ref)
        self.usage_holder: Event | None = None  # event carrying the current message's usage
        self._patch = self.batch.session(self.session_id)  # one file, one session

    def patch(self) -> SessionPatch:
        return self._patch

    def event(self, record: dict, suffix: int | None, raw: bytes, **fields: Any) -> None:
        uuid = record.get("uuid")
        if uuid:
            uid = str(uuid) if suffix is None else f"{uuid}:{suffix}"
        else:  # mode / pr-link records have no uuid and may repeat byte for byte: place them
            uid = record_uid(raw, suffix, context=self.state.get("last_uuid"))
        self.batch.events.append(Event(self.session_id, uid, ts=record.get("timestamp"), **fields))


def _parent_of_subagent(ref: SourceRef) -> str:
    """``<sid>/subagents/[workflows/<run>/]agent-<id>.jsonl`` belongs to session ``<sid>``."""
    parts = ref.path.parts
    return parts[len(parts) - 1 - parts[::-1].index("subagents") - 1]


def _session_from_path(ref: SourceRef) -> str:
    """Native id: the file name for a main session; ``<parent>:agent-<id>`` for a subagent (agent
    ids are only unique within their parent)."""
    stem = ref.path.stem
    if ref.variant == "subagent":
        return f"{_parent_of_subagent(ref)}:{stem}"
    return stem


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.variant == "subagent" or ref.path.name.startswith("agent-"):
        _link_subagent(reader)
    for record, data in json_objects(records, reader.batch.problems):
        kind = data.get("type")
        handler = HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            if isinstance(kind, str) and kind in BOOKKEEPING:
                _envelope(reader, data)
                continue
            reader.batch.problems.append(Problem("unknown_type", record.line, f"type={kind!r}"))
            continue
        _envelope(reader, data)
        try:
            handler(reader, data, record.raw)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(
                Problem("malformed", record.line, f"{kind} record of unexpected shape: {describe_error(exc)}"))
    reader.state["session"] = reader.session_id
    return reader.batch


def _link_subagent(reader: _Reader) -> None:
    patch = reader.patch()
    ref = reader.ref
    if ref.variant == "subagent":
        patch.parent_native_id = _parent_of_subagent(ref)
        patch.parent_kind = "subagent"
        if reader.ref.sidecar and not reader.state.get("meta_read"):
            reader.state["meta_read"] = True
            try:
                meta = orjson.loads(reader.ref.sidecar)
            except orjson.JSONDecodeError:
                return
            if isinstance(meta, dict):
                label = ": ".join(str(meta[k]) for k in ("agentType", "description") if meta.get(k))
                if label:
                    patch.offer_title(label, "summary")
                patch.meta = {k: meta[k] for k in ("agentType", "toolUseId", "spawnDepth", "parentAgentId")
                              if k in meta}


def _envelope(reader: _Reader, data: dict) -> None:
    """Session facts repeated on every envelope line: cwd, branch, version, times."""
    patch = reader.patch()
    if data.get("uuid"):
        reader.state["last_uuid"] = data["uuid"]
    recorded = data.get("sessionId")
    if recorded and not reader.state.get("linked") and reader.ref.variant != "subagent":
        reader.state["linked"] = True
        if reader.ref.path.name.startswith("agent-"):
            # Pre-2.1.2 layout: the sidechain sits beside its parent and names it in sessionId.
            patch.parent_native_id, patch.parent_kind = recorded, "subagent"
        elif recorded != reader.session_id:
            # Before 1.0.124 a resume wrote a new file that starts with the old session's records.
            patch.parent_native_id, patch.parent_kind = recorded, "fork"
    cwd = data.get("cwd")
    if cwd and not reader.state.get("cwd"):
        reader.state["cwd"] = cwd
        patch.cwd = cwd
    ts = data.get("timestamp")
    if isinstance(ts, str):
        if not reader.state.get("started"):
            reader.state["started"] = ts
            patch.started_at = ts
        patch.updated_at = ts
    branch = data.get("gitBranch")
    if branch and branch != "HEAD" and branch != reader.state.get("branch"):
        reader.state["branch"] = branch
        patch.git = GitFacts(branch=branch)
    version = data.get("version")
    if version and reader.state.get("version") != version:
        reader.state["version"] = version
        patch.agent_version = version


# -- record handlers -----------------------------------------------------------------------
def _user(reader: _Reader, data: dict, raw: bytes) -> None:
    message = data.get("message") or {}
    content = message.get("content")
    if data.get("isCompactSummary"):
        reader.event(data, None, raw, role="system", kind="compaction", text=_plain(content),
                     meta={"compact_summary": True})
        return
    if isinstance(content, str):
        _user_text(reader, data, raw, content, None)
        return
    if not isinstance(content, list):
        raise ValueError("message.content is neither text nor a list of blocks")
    for index, block in enumerate(content):
        suffix = index if len(content) > 1 else None
        btype = block.get("type") if isinstance(block, dict) else None
        if btype == "tool_result":
            use_id = _call_id(block.get("tool_use_id"))
            reader.event(data, suffix, raw, role="tool", kind="tool_result",
                         text=_plain(block.get("content")), tool_call_id=use_id,
                         is_error=bool(block.get("is_error")),
                         tool_name=reader.state.get("tools", {}).pop(use_id, None) if use_id else None)
        elif btype == "text":
            _user_text(reader, data, raw, block.get("text") or "", suffix)
        elif btype in ("image", "document"):
            reader.event(data, suffix, raw, role="user", kind="text", text=_attachment_label(block))
        else:
            reader.event(data, suffix, raw, role="user", kind="meta", text=f"[{btype} block]",
                         meta={"block": btype})


def _user_text(reader: _Reader, data: dict, raw: bytes, text: str, suffix: int | None) -> None:
    command = _COMMAND.search(text)
    if command:
        args = _COMMAND_ARGS.search(text)
        typed = command.group(1).strip() + (f" {args.group(1).strip()}" if args and args.group(1).strip() else "")
        reader.event(data, suffix, raw, role="user", kind="text", text=typed, meta={"command": True})
        return
    stdout = _LOCAL_STDOUT.search(text)
    if stdout:
        reader.event(data, suffix, raw, role="system", kind="meta", text=_ANSI.sub("", stdout.group(1)).strip(),
                     meta={"local_command_output": True})
        return
    if _machine(data, text):
        # Text Claude Code injects on the user's behalf (caveats, reminders, task notifications).
        reader.event(data, suffix, raw, role="system", kind="text", text=text, meta={"injected": True})
        return
    if text.startswith(_INTERRUPTED):
        reader.event(data, suffix, raw, role="system", kind="meta", text=text, meta={"interrupted": True})
        _turn(reader, "aborted")
        return
    reader.event(data, suffix, raw, role="user", kind="text", text=text)
    _turn(reader, "open")
    if not reader.state.get("titled"):
        reader.state["titled"] = True
        reader.patch().offer_title(_first_line(text), "first-prompt")


def _machine(record: dict, text: str) -> bool:
    """Is this user-role text Claude Code's own? Said by the record (``isMeta``, an ``origin`` other
    than a human: task-notification, auto-continuation, ...) or by the text's markup."""
    origin = record.get("origin")
    machine = isinstance(origin, dict) and origin.get("kind") not in (None, "human")
    return bool(record.get("isMeta")) or machine or text.lstrip().startswith(_MACHINE_PREFIXES)


def _assistant(reader: _Reader, data: dict, raw: bytes) -> None:
    message = data.get("message") or {}
    content = message.get("content")
    model = message.get("model")
    if model and model != "<synthetic>":
        reader.patch().model = model
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ValueError("message.content is neither text nor a list of blocks")
    if data.get("isApiErrorMessage") or model == "<synthetic>":
        # Claude Code's own stand-in replies (API errors, "No response requested."): notices, not
        # the model speaking.
        meta = {"api_error": True, "error": data.get("error")} if data.get("isApiErrorMessage") else {}
        reader.event(data, None, raw, role="system", kind="meta", text=_plain(content),
                     meta={"synthetic": True, **meta})
        return
    start = len(reader.batch.events)
    for index, block in enumerate(content):
        suffix = index if len(content) > 1 else None
        btype = block.get("type") if isinstance(block, dict) else None
        common: dict[str, Any] = {"model": model}
        if btype == "text":
            reader.event(data, suffix, raw, role="assistant", kind="text", text=block.get("text") or "",
                         **common)
        elif btype == "thinking":
            reader.event(data, suffix, raw, role="assistant", kind="thinking",
                         text=block.get("thinking") or "", **common)
        elif btype == "redacted_thinking":
            reader.event(data, suffix, raw, role="assistant", kind="thinking", text="[redacted thinking]",
                         **common)
        elif btype in ("tool_use", "server_tool_use"):
            name, tool_input, call_id = block.get("name"), block.get("input"), _call_id(block.get("id"))
            if call_id:  # bridges the call to its result; a call without an id has nothing to bridge
                reader.state.setdefault("tools", {})[call_id] = name
                _trim_tools(reader.state)
            reader.event(data, suffix, raw, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
                         tool_name=name, tool_input=tool_input, tool_call_id=call_id, **common)
        else:
            reader.event(data, suffix, raw, role="assistant", kind="meta", text=f"[{btype} block]",
                         **{**common, "meta": {"block": btype}})
    _attach_usage(reader, message, data, start)
    if message.get("stop_reason") == "end_turn":
        _turn(reader, "complete")


def _turn(reader: _Reader, state: str) -> None:
    """Whether the last turn finished: the service tells an abandoned session (its agent died
    mid-turn) from an ended one by it."""
    if reader.state.get("last_turn") != state:
        reader.state["last_turn"] = state
        reader.patch().note(last_turn=state)


def _attach_usage(reader: _Reader, message: dict, data: dict, start: int) -> None:
    """Count a message's usage once. Its lines (one per content block) all repeat ``usage``; before
    2.1.98 the earlier copies held placeholder output counts, so the most complete copy wins. It
    sits on the first event of the message; a later, larger copy in the same batch replaces it, and one read
    later (a live session's next lines) is given too: the bank counts a response once, its largest copy.

    The response is named by its message id (what ccusage keys on, with the request id: a side question's
    sidechain replays its parent's messages under new request ids, and a fork or an old resume copies them), so
    copies in other files and sessions are counted once too (harvester/bank/sqlite_usage.py)."""
    usage = _usage(message.get("usage"))
    if usage is None or len(reader.batch.events) == start:
        return
    message_id = message.get("id") or data.get("requestId")
    usage.response = message_id or None
    total = _usage_total(usage)
    if message_id and message_id == reader.state.get("last_message"):
        holder = reader.usage_holder
        if holder is not None and holder.usage is not None:
            if total > _usage_total(holder.usage):
                holder.usage = usage
        elif total > reader.state.get("last_total", 0):
            reader.usage_holder = reader.batch.events[start]
            reader.usage_holder.usage = usage
            reader.state["last_total"] = total
        return
    reader.state["last_message"] = message_id
    reader.state["last_total"] = total
    reader.usage_holder = reader.batch.events[start]
    reader.usage_holder.usage = usage


def _usage_total(u: Usage) -> int:
    return u.input + u.output + u.cache_read + u.cache_write


def _system(reader: _Reader, data: dict, raw: bytes) -> None:
    subtype = data.get("subtype") or "notice"
    if subtype == "turn_duration":
        _turn(reader, "complete")
    if subtype in ("compact_boundary", "microcompact_boundary"):
        meta = data.get("compactMetadata") or data.get("microcompactMetadata") or {}
        detail = ", ".join(f"{k}={v}" for k, v in meta.items() if isinstance(v, (str, int, float)))
        reader.event(data, None, raw, role="system", kind="compaction",
                     text=f"conversation compacted ({detail})" if detail else "conversation compacted",
                     meta={"subtype": subtype, **meta})
        return
    text = data.get("content")
    if subtype == "local_command" and isinstance(text, str) and text:
        # Newer versions write the user's slash command and its output as system lines.
        _user_text(reader, data, raw, text, None)
        return
    if not isinstance(text, str) or not text:
        text = subtype.replace("_", " ")
    meta = {"subtype": subtype}
    if data.get("level"):
        meta["level"] = data["level"]
    reader.event(data, None, raw, role="system", kind="meta", text=text, meta=meta)


def _title(source: str, field: str) -> Callable[[_Reader, dict, bytes], None]:
    def handler(reader: _Reader, data: dict, raw: bytes) -> None:
        title = data.get(field)
        if isinstance(title, str) and title.strip():
            reader.patch().offer_title(title.strip(), source)
    return handler


def _noted(label: str, field: str) -> Callable[[_Reader, dict, bytes], None]:
    """Small records worth a line in the transcript (a mode switch, a pull request link)."""
    def handler(reader: _Reader, data: dict, raw: bytes) -> None:
        value = data.get(field)
        reader.event(data, None, raw, role="system", kind="meta", text=f"{label}: {value}",
                     meta={"record": data.get("type")})
    return handler


def _attachment(reader: _Reader, data: dict, raw: bytes) -> None:
    """Attachments are context Claude Code adds (skills, hooks, memory files, ...), except a
    ``queued_command``: a prompt the user typed while the agent was busy, delivered mid-turn, or
    Claude Code's own text queued the same way (a task notification): told apart as on user lines."""
    attachment = data.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return
    prompt = attachment.get("prompt")
    text = prompt if isinstance(prompt, str) else _plain(prompt)
    if _machine(attachment, text) or attachment.get("commandMode") == "task-notification":
        reader.event(data, None, raw, role="system", kind="text", text=text,
                     meta={"injected": True, "queued": True})
        return
    reader.event(data, None, raw, role="user", kind="text", text=text, meta={"queued": True})


def _agent_name(reader: _Reader, data: dict, raw: bytes) -> None:
    name = data.get("agentName")
    if name:
        reader.patch().meta = {"agent_name": name}


HANDLERS: dict[str, Callable[[_Reader, dict, bytes], None]] = {
    "user": _user,
    "assistant": _assistant,
    "system": _system,
    "summary": _title("summary", "summary"),
    "ai-title": _title("ai", "aiTitle"),
    "custom-title": _title("custom", "customTitle"),
    "agent-name": _agent_name,
    "attachment": _attachment,
    "mode": _noted("mode", "mode"),
    "permission-mode": _noted("permission mode", "permissionMode"),
    "pr-link": _noted("pull request", "prUrl"),
}


# -- helpers -------------------------------------------------------------------------------
def _usage(raw: Any) -> Usage | None:
    """A response's usage. ``cache_creation`` splits the cache write into five-minute and hour-long parts (priced
    apart); where it is there its parts are the write, as ccusage counts it."""
    if not isinstance(raw, dict):
        return None
    write = int(raw.get("cache_creation_input_tokens") or 0)
    split = raw.get("cache_creation")
    hour = 0
    if isinstance(split, dict):
        hour = int(split.get("ephemeral_1h_input_tokens") or 0)
        parts = hour + int(split.get("ephemeral_5m_input_tokens") or 0)
        write = parts if parts or not write else write
    return Usage(
        input=int(raw.get("input_tokens") or 0),
        output=int(raw.get("output_tokens") or 0),
        cache_read=int(raw.get("cache_read_input_tokens") or 0),
        cache_write=write,
        cache_write_1h=min(hour, write),
    )


def _plain(content: Any) -> str:
    """Text of a content value: a string, or a list of blocks (text kept, images named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                btype = block.get("type")
                if btype == "text":
                    parts.append(block.get("text") or "")
                elif btype in ("image", "document"):
                    parts.append(_attachment_label(block))
                elif btype == "tool_reference":
                    parts.append(f"[tool {block.get('tool_name') or ''}]")
                else:
                    parts.append(f"[{btype}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return orjson.dumps(content).decode()


def _attachment_label(block: dict) -> str:
    source = block.get("source") or {}
    media = source.get("media_type") or block.get("type")
    size = len(source.get("data") or "")
    return f"[{block.get('type')}: {media}{f', {size * 3 // 4} bytes' if size else ''}]"


def _first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _call_id(value: Any) -> str | None:
    """A tool_use id as written (``toolu_...``); anything else is no id: it can key nothing in the
    state, which must stay JSON (text keys only)."""
    return value if isinstance(value, str) and value else None


def _trim_tools(state: dict[str, Any], keep: int = 64) -> None:
    """The id -> name map only has to bridge a call and its result; keep the state small."""
    tools = state["tools"]
    while len(tools) > keep:
        tools.pop(next(iter(tools)))

