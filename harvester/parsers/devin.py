"""Devin CLI (Cognition; also the agent in Devin Desktop): one SQLite store, ``<data>/devin/cli/sessions.db``.

Format facts and their sources: ``fixtures/devin/SOURCE.md``. Devin is closed source: every fact comes
from third-party readers of real stores, several of them verified against live databases. In short:

- ``<data>`` is ``$XDG_DATA_HOME`` else ``~/.local/share`` on Linux and macOS (some readers use
  ``~/Library/Application Support`` on macOS: both are roots), ``%APPDATA%`` on Windows. The
  ``cli-next`` channel keeps its own ``sessions.db``; very early builds wrote ``cli_sessions.db``.
- ``sessions``: ``id`` (a two-word slug), ``working_directory`` (cwd), ``title``, ``model`` (may be a
  routing mode such as ``adaptive``), ``agent_mode``, ``created_at``/``last_activity_at`` (epoch
  seconds), ``main_chain_id`` (the node at the tip of the live conversation), ``workspace_dirs``
  (JSON), ``hidden``. No status column and no CLI version.
- ``message_nodes``: a forest (``node_id``, ``parent_node_id``), one row per message, ``row_id``
  AUTOINCREMENT. ``chat_message`` is JSON: ``message_id``, ``role`` (user/assistant/system/tool),
  ``content``, ``thinking.thinking``, ``tool_calls`` (``{id, name, arguments, index, kind}``),
  ``tool_call_id``, ``metadata`` (``is_user_input``, ``created_at`` ISO, ``generation_model``,
  ``metrics``, ``finish_reason``, ``extensions``). The row's own ``metadata`` column holds
  ``is_system_prefix``, ``summarized_from`` (a compaction's output) and ``extensions``.
- One logical message is stored at several nodes under one ``message_id``: the system prefix and the
  conversation are re-rendered on every resume (``compact/prior_node_ids``), forks copy the prefix,
  and a streamed answer is written again as it completes. So the event uid is the ``message_id``,
  the batch revises, and the last version wins at the place of the first.
- Watermarks: ``row_id`` for new nodes (never reused: AUTOINCREMENT), ``last_activity_at`` for
  sessions, and, so that a node rewritten in place is never missed, the newest nodes of every
  session whose ``last_activity_at`` moved are read again (``RECENT_SECONDS``).
- Text Devin writes as a user message (``is_user_input`` not true: keep-alive "continue" prompts,
  a summary agent's pasted conversation) is filed as ``system``, never as the user's words.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Kind, Problem, ProblemKind, Role, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "devin"

# The installer puts a native binary named devin on the PATH (~/.local/bin/devin).
PROCESSES = ("devin", "devin.exe")

# Nodes of a session whose last_activity_at moved are read again when created this many seconds before
# it: a node rewritten in place while it streams keeps its row_id, so the row_id watermark alone would
# never see it again.
RECENT_SECONDS = 120
# How many rows before a tool result its call is looked for (parallel calls answer one after another).
CALL_LOOKBACK = 64
# A session row's last_activity_at is in whole seconds, taken before its write commits.
_SINCE = ":since - 10"

# Where the agent keeps its data, per OS (dirs/xdg conventions; see SOURCE.md).
CHANNEL_DIRS = ("cli", "cli-next")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    if platform == "win32":
        data = [Path(env.get("APPDATA") or home / "AppData" / "Roaming")]
    else:
        data = [Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")]
        if platform == "darwin":
            data.append(home / "Library" / "Application Support")
    out = [base / "devin" / channel for base in data for channel in CHANNEL_DIRS]
    out.append(data[0] / "cognition" / "cli")  # the data dir before the cognition -> devin rename
    return out


def _valid(column: str, path: str) -> str:
    # A row being written can hold invalid JSON for a moment: json_extract on it would fail the query.
    return f"CASE WHEN json_valid({column}) THEN json_extract({column}, '{path}') END"


_HANDOFF = '$.metadata.extensions."subagent/handoff"'


def _prompt(alias: str) -> str:
    """SQL: the node is a prompt the user typed (not Devin's own, not a subagent's task)."""
    return (f"({_valid(f'{alias}.chat_message', '$.role')} = 'user' "
            f"AND {_valid(f'{alias}.chat_message', '$.metadata.is_user_input')} = 1 "
            f"AND {_valid(f'{alias}.chat_message', _HANDOFF)} IS NULL)")


_NODE_COLUMNS = (
    "n.row_id, n.session_id, n.node_id, n.parent_node_id, n.chat_message, n.created_at, n.metadata, "
    "n.node_id = s.main_chain_id AS is_tip, "
    # The session's first prompt names it when it has no title. NOT EXISTS stops at the first earlier
    # prompt, a few rows into the session, so later prompts cost little.
    f"CASE WHEN {_prompt('n')} THEN NOT EXISTS (SELECT 1 FROM message_nodes m "
    f"WHERE m.session_id = n.session_id AND m.row_id < n.row_id AND {_prompt('m')}) END AS first_prompt, "
    # A tool result names no tool: its call is in an assistant node shortly before it.
    f"CASE WHEN {_valid('n.chat_message', '$.role')} = 'tool' THEN (SELECT json_extract(c.value, '$.name') "
    "FROM message_nodes p, json_each(CASE WHEN json_valid(p.chat_message) THEN p.chat_message ELSE '{}' END, "
    "'$.tool_calls') c WHERE p.session_id = n.session_id "
    f"AND p.row_id < n.row_id AND p.row_id >= n.row_id - {CALL_LOOKBACK} "
    f"AND json_extract(c.value, '$.id') = {_valid('n.chat_message', '$.tool_call_id')} "
    "ORDER BY p.row_id DESC LIMIT 1) END AS tool_name"
)
QUERIES = (
    SqliteQuery(
        "session",
        "SELECT id, working_directory, title, model, agent_mode, created_at, last_activity_at, "
        f"main_chain_id, workspace_dirs, hidden FROM sessions WHERE last_activity_at >= {_SINCE} "
        "ORDER BY last_activity_at, id",
        "last_activity_at", ordered=True,
    ),
    SqliteQuery(
        "node",
        f"SELECT {_NODE_COLUMNS} FROM message_nodes n LEFT JOIN sessions s ON s.id = n.session_id "
        "WHERE n.row_id >= :since ORDER BY n.row_id",
        "row_id", ordered=True,
    ),
    SqliteQuery(
        "recent",
        f"SELECT {_NODE_COLUMNS}, s.last_activity_at AS activity FROM sessions s "
        f"JOIN message_nodes n ON n.session_id = s.id WHERE s.last_activity_at >= {_SINCE} "
        f"AND n.created_at >= s.last_activity_at - {RECENT_SECONDS} ORDER BY n.row_id",
        "activity",
    ),
)

SOURCES = (
    SourceSpec("sessions.db", "sqlite", "db", watch=False, queries=QUERIES),
    SourceSpec("cli_sessions.db", "sqlite", "db", watch=False, queries=QUERIES),
)

# Tables never read: tool_call_state repeats the tool calls and results of message_nodes (ACP form);
# prompt_history is the input line history; the rest is rendering, subagent bookkeeping, settings.
TABLES_NOT_READ = frozenset({
    "tool_call_state", "prompt_history", "rendered_commits", "subagent_heads", "app_state",
    "refinery_schema_history",
})
# sessions.model can name a routing mode rather than a model.
ROUTING_MODES = frozenset({"adaptive", "auto", "agent"})
ROLES = frozenset({"user", "assistant", "agent", "system", "tool"})
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task")


class _Reader:
    def __init__(self) -> None:
        self.batch = Batch(revise=True)  # a message is written again as it completes: the last one wins
        self.line = 0
        self.pending: list[tuple[tuple, Event]] = []
        self.tools: dict[str, str] = {}  # tool_call_id -> tool name, for results (they name no tool)

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Stateless: the queries bring what a row needs (its session's tip, whether it is the first prompt)."""
    reader = _Reader()
    sessions: list[tuple[int, dict]] = []
    nodes: dict[tuple[str, int], tuple[int, dict]] = {}
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict):
            reader.problem("malformed", "row is not an object")
        elif table == "session":
            sessions.append((record.line, row))
        elif table in ("node", "recent"):
            # The same node from both queries: the later read is the newer one.
            nodes[(str(row.get("session_id")), int(row.get("row_id") or 0))] = (record.line, row)
        else:
            reader.problem("unknown_type", f"table={table!r}")
    for line, row in sessions:
        reader.line = line
        _session(reader, row)
    for line, row in nodes.values():
        reader.line = line
        _node(reader, row)
    for _, event in reader.pending:
        if event.kind == "tool_result" and not event.tool_name and event.tool_call_id in reader.tools:
            event.tool_name = reader.tools[event.tool_call_id]
    _flush(reader)
    return reader.batch


def _flush(reader: _Reader) -> None:
    """Events in time order; a uid met again (a copy, a later version) replaces the first in place."""
    reader.pending.sort(key=lambda item: item[0])
    placed: dict[tuple[str, str], int] = {}
    for _, event in reader.pending:
        key = (event.session, event.uid)
        if key in placed:
            reader.batch.events[placed[key]] = event
        else:
            placed[key] = len(reader.batch.events)
            reader.batch.events.append(event)


def _session(reader: _Reader, row: dict) -> None:
    sid = row.get("id")
    if not isinstance(sid, str) or not sid:
        reader.problem("malformed", "session without an id")
        return
    patch = reader.batch.session(sid)
    patch.cwd = row.get("working_directory") or None
    patch.started_at = _iso_seconds(row.get("created_at"))
    patch.updated_at = _iso_seconds(row.get("last_activity_at"))
    model = row.get("model")
    if isinstance(model, str) and model and model not in ROUTING_MODES:
        patch.model = model
    title = row.get("title")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "ai")  # who writes it (Devin or the user) is UNCONFIRMED
    facts: dict[str, Any] = {}
    if row.get("agent_mode"):
        facts["agent_mode"] = row["agent_mode"]
    if row.get("hidden"):
        facts["hidden"] = True  # archived, or a summary agent's own session
    workspace = _json(row.get("workspace_dirs"))
    if isinstance(workspace, list) and workspace and workspace != [row.get("working_directory")]:
        facts["workspace_dirs"] = workspace
    if facts:
        patch.note(**facts)


class _Node:
    """One message_nodes row and what it says."""

    def __init__(self, reader: _Reader, row: dict, message: dict) -> None:
        self.reader = reader
        self.row = row
        self.message = message
        self.session = str(row["session_id"])
        meta = message.get("metadata")
        self.meta: dict = meta if isinstance(meta, dict) else {}
        node_meta = _json(row.get("metadata"))
        self.node_meta: dict = node_meta if isinstance(node_meta, dict) else {}
        self.uid = str(message.get("message_id") or f"node:{row.get('node_id')}")
        self.ts = iso_text(self.meta.get("created_at")) or _iso_seconds(row.get("created_at"))
        model = self.meta.get("generation_model")
        self.model = model if isinstance(model, str) and model else None
        self.key = (self.ts or "", int(row.get("row_id") or 0))

    def emit(self, role: Role, kind: Kind, text: str, suffix: str = "", order: int = 0,
             **fields: Any) -> None:
        uid = f"{self.uid}:{suffix}" if suffix else self.uid
        event = Event(self.session, uid, role, kind, text, ts=self.ts, **fields)
        self.reader.pending.append(((*self.key, order), event))


def _node(reader: _Reader, row: dict) -> None:
    if not isinstance(row.get("session_id"), str):
        reader.problem("malformed", "node without a session")
        return
    message = _json(row.get("chat_message"))
    if not isinstance(message, dict):
        reader.problem("malformed", f"node {row.get('node_id')}: chat_message is not a JSON object")
        return
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        reader.problem("unknown_type", f"chat_message role={role!r}")
        return
    try:
        node = _Node(reader, row, message)
        if node.node_meta.get("summarized_from") is not None:
            _compaction(node)
        elif role == "user":
            _user(node, row)
        elif role == "system":
            _system(node)
        elif role == "tool":
            _tool(node)
        else:
            _assistant(node)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        reader.problem("malformed", f"{role} node {row.get('node_id')} of unexpected shape: {describe_error(exc)}")
        return
    if row.get("is_tip"):  # the tip of the main chain: how the session's last turn stands
        reader.batch.session(node.session).note(last_turn=_turn_state(role, message))


def _user(node: _Node, row: dict) -> None:
    text = _text(node.message.get("content"))
    if not text.strip():
        return
    extensions = node.meta.get("extensions") if isinstance(node.meta.get("extensions"), dict) else {}
    if extensions.get("subagent/handoff"):
        # A subagent's task, written by the parent agent (is_user_input is true on it all the same).
        node.emit("system", "text", text, meta={"from_agent": True})
    elif node.meta.get("is_user_input") is True:
        node.emit("user", "text", text)
        if row.get("first_prompt"):
            first = text.strip().splitlines()[0]
            title = first if len(first) <= 80 else first[:79] + "…"
            node.reader.batch.session(node.session).offer_title(title, "first-prompt")
    else:
        # Devin's own user-role messages: keep-alive prompts, summarize requests, a subagent's task.
        node.emit("system", "text", text, meta={"injected": True})


def _compaction(node: _Node) -> None:
    """A compaction writes a summary (assistant) and the continuation prompt (system) that carries it."""
    node.emit("system", "compaction", _text(node.message.get("content")),
              meta={"summarized_from": node.node_meta["summarized_from"], "role": node.message.get("role")})


def _system(node: _Node) -> None:
    text = _text(node.message.get("content"))
    if node.node_meta.get("is_system_prefix"):
        return  # the system prompt, rebuilt at every resume: bookkeeping, not conversation
    elif text.strip():
        node.emit("system", "text", text, meta={"injected": True})


def _assistant(node: _Node) -> None:
    message = node.message
    thinking = message.get("thinking")
    thought = thinking.get("thinking") if isinstance(thinking, dict) else thinking
    if isinstance(thought, str) and thought.strip():
        node.emit("assistant", "thinking", thought, suffix="thinking", model=node.model)
    text = _text(message.get("content"))
    calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
    usage = _usage(node.meta.get("metrics"))
    if node.model:
        node.reader.batch.session(node.session).model = node.model
    if text.strip():
        node.emit("assistant", "text", text, order=1, model=node.model, usage=None if calls else usage)
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = call.get("name") or function.get("name")
        arguments = call.get("arguments", function.get("arguments"))
        if isinstance(arguments, str):
            with contextlib.suppress(orjson.JSONDecodeError):  # else kept as the string the model wrote
                arguments = orjson.loads(arguments)
        call_id = _text_id(call.get("id")) or f"{node.uid}#{index}"
        if isinstance(name, str):
            node.reader.tools[call_id] = name
        last = index == len(calls) - 1
        node.emit("assistant", "tool_call", render_call(name, arguments, _CALL_KEYS), suffix=f"call:{call_id}",
                  order=2 + index, tool_name=name, tool_input=arguments, tool_call_id=call_id,
                  model=node.model, usage=usage if last else None)
    if not calls and not text.strip() and usage is not None:
        node.emit("assistant", "meta", "model call", model=node.model, usage=usage)


def _tool(node: _Node) -> None:
    extensions = node.meta.get("extensions") if isinstance(node.meta.get("extensions"), dict) else {}
    result = extensions.get("chisel/tool_result_meta")
    failed = isinstance(result, dict) and result.get("success") is False
    failed = failed or "chisel/tool_failure" in extensions
    terminal = extensions.get("chisel/terminal_output")
    exit_info = terminal.get("exit") if isinstance(terminal, dict) else None
    exited = isinstance(exit_info, dict) and "exit_code" in exit_info
    node.emit("tool", "tool_result", _text(node.message.get("content")),
              tool_call_id=_text_id(node.message.get("tool_call_id")), tool_name=node.row.get("tool_name"),
              is_error=failed, meta={"exit_code": exit_info["exit_code"]} if exited else None)


def _turn_state(role: str, message: dict) -> str:
    """The tip of the main chain: a prompt or a tool result waits for the model; an answer without
    tool calls ends the turn."""
    if role in ("assistant", "agent"):
        return "open" if message.get("tool_calls") else "complete"
    return "open"


def _usage(metrics: Any) -> Usage | None:
    if not isinstance(metrics, dict):
        return None
    usage = Usage(input=int(metrics.get("input_tokens") or 0), output=int(metrics.get("output_tokens") or 0),
                  cache_read=int(metrics.get("cache_read_tokens") or 0),
                  cache_write=int(metrics.get("cache_creation_tokens") or 0))
    return usage if usage.as_dict() else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks, as some builds write them
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content
                         if not isinstance(b, dict) or b.get("type") in (None, "text"))
    return "" if content is None else orjson.dumps(content).decode()


def _text_id(value: Any) -> str | None:
    """A call id as Devin writes it (text); anything else names no call."""
    return value if isinstance(value, str) and value else None


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _iso_seconds(value: Any) -> str | None:
    """Epoch seconds (readers saw a few stores in milliseconds: told apart by size)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return None
    seconds = value / 1000 if value > 100_000_000_000 else value
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(seconds * 1000) % 1000:03d}Z"


