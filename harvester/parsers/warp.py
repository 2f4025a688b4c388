"""Warp (the terminal's agent mode): one SQLite database, ``warp.sqlite``, in the app's state directory.

Format facts and their sources: ``fixtures/warp/SOURCE.md``. In short:

- The state dir is ``$XDG_STATE_HOME/warp-terminal`` (``~/.local/state/warp-terminal``) on Linux, the app
  group container's ``Library/Application Support/dev.warp.Warp-Stable`` (else ``~/Library/Application
  Support/dev.warp.Warp-Stable``) on macOS, ``%LOCALAPPDATA%\\warp\\Warp\\data`` on Windows; the Preview and
  OSS channels have their own, and the ``warp-tui`` front end keeps its database in ``<state dir>/tui``.
- ``agent_conversations``: one row a conversation (``conversation_id``, ``conversation_data`` JSON: parent
  conversation, usage; ``summary`` JSON: title, first working directory). ``agent_tasks``: one row a task,
  ``task`` the protobuf ``warp.multi_agent.v1.Task`` (prost), its ``messages`` the whole transcript: user
  queries, agent output, reasoning, tool calls and their results, summaries. Both are upserted whole on
  every save; triggers move ``last_modified_at`` (seconds), the watermark. ``ai_queries`` (the prompt
  history) gives each conversation's last exchange's ``output_status``: the turn state.
- uids are the messages' own ids; events are placed by the message's timestamp, so the tasks of one
  conversation (a subtask is a row of its own) interleave in time order.
- Before 2025-06-09 (``create_agent_conversations_table``) Warp kept no transcript table: ``ai_queries`` holds
  each exchange's prompt (``input`` ``[{"Query": {"text"}}]``), working directory, model and status, and the
  answers went to ``ai_blocks`` (dropped with its rows by ``remove_persisted_ai_blocks``, 2025-11-19). The
  prompts of conversations from before that date with no task are read (``prompt``), in a database of that
  era too (``prompt_v0``, where ``agent_tasks`` does not exist): the user's side of those conversations.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and Warp's one
database holds conversations, tasks and tool calls (protobuf fields): the format facts above and the functions
that read them stay side by side.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Kind, Problem, ProblemKind, Role
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    iso_ms,
    iso_text,
    json_objects,
    render_call,
)

NAME = "warp"
# The terminal runs all day: its process says nothing about whether a conversation is in use.
PROCESSES: tuple[str, ...] = ()

# App names per channel (warp_core paths.rs / paths_tests.rs): Linux project paths, macOS bundle ids,
# Windows organization\application folders.
LINUX_APPS = ("warp-terminal", "warp-terminal-preview", "warp-oss")
MACOS_BUNDLES = ("dev.warp.Warp-Stable", "dev.warp.Warp-Preview", "dev.warp.WarpOss")
WINDOWS_APPS = ("Warp", "WarpPreview", "WarpOss")
APP_GROUP = "2BBY89MBSN.dev.warp"  # APPLE_TEAM_ID + ".dev.warp" (Entitlements.plist)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    if platform == "darwin":
        group = home / "Library" / "Group Containers" / APP_GROUP / "Library" / "Application Support"
        bases = [base / b for b in MACOS_BUNDLES for base in (group, home / "Library" / "Application Support")]
    elif platform == "win32":
        local = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")
        bases = [local / "warp" / app / "data" for app in WINDOWS_APPS]
    else:
        xdg = env.get("XDG_STATE_HOME")
        state = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "state"
        bases = [state / app for app in LINUX_APPS]
    return [root for base in bases for root in (base, base / "tui")]


# The migration that created agent_conversations and agent_tasks (2025-06-09-013710): builds since keep every
# agent conversation as tasks.
_TASKS_SINCE = "2025-06-09"
# The conversation's first exchange: its prompt names the conversation, its time starts it.
_FIRST = ("(SELECT MIN(o.id) FROM ai_queries o WHERE o.conversation_id = q.conversation_id) = q.id AS first_prompt, "
          "(SELECT MIN(o.start_ts) FROM ai_queries o WHERE o.conversation_id = q.conversation_id) AS first_query")
# last_modified_at is CURRENT_TIMESTAMP (seconds), set by a trigger after the row's write: 10 s back.
_SINCE = ":since = 0 OR {0} >= datetime(:since, '-10 seconds')"
QUERIES = (
    SqliteQuery(
        "conversation",
        "SELECT c.*, (SELECT q.output_status FROM ai_queries q WHERE q.conversation_id = c.conversation_id "
        "ORDER BY q.start_ts DESC, q.id DESC LIMIT 1) AS last_status, (SELECT q.model_id FROM ai_queries q "
        "WHERE q.conversation_id = c.conversation_id ORDER BY q.start_ts DESC, q.id DESC LIMIT 1) AS last_model, "
        "(SELECT MIN(q.start_ts) FROM ai_queries q WHERE q.conversation_id = c.conversation_id) AS first_query "
        f"FROM agent_conversations c WHERE {_SINCE.format('c.last_modified_at')} ORDER BY c.last_modified_at, c.id",
        "last_modified_at", ordered=True, optional=True,  # from 2025-06-09
    ),
    SqliteQuery(
        "task",
        "SELECT id, conversation_id, task_id, hex(task) AS task, last_modified_at FROM agent_tasks "
        f"WHERE {_SINCE.format('last_modified_at')} ORDER BY last_modified_at, id",
        "last_modified_at", ordered=True, optional=True,  # from 2025-06-09
    ),
    # Prompts of the conversations from before agent_tasks (a conversation begun since has its task, which
    # holds the prompt too: not read from here, so nothing is read twice, whatever a poll sees first).
    SqliteQuery(
        "prompt",
        f"SELECT q.*, {_FIRST} FROM ai_queries q WHERE q.start_ts < '{_TASKS_SINCE}' AND NOT EXISTS (SELECT 1 FROM "
        "agent_tasks t WHERE t.conversation_id = q.conversation_id) AND q.id >= :since ORDER BY q.id",
        "id", ordered=True, optional=True,
    ),
    SqliteQuery(
        "prompt_v0",
        f"SELECT q.*, {_FIRST} FROM ai_queries q WHERE NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'agent_tasks') "
        "AND q.id >= :since ORDER BY q.id",
        "id", ordered=True, optional=True,
    ),
)
SOURCES = (SourceSpec("warp.sqlite", "sqlite", "db", watch=False, queries=QUERIES),)

# Tables of warp.sqlite never read: blocks, panes, tabs, windows, settings, Warp Drive objects, MCP servers…
# (none holds the agent's conversation; ai_queries is read only for the turn state).
TURN_STATES = {"Pending": "open", "Completed": "complete", "Cancelled": "aborted", "Failed": "failed"}
_CALL_KEYS = ("command", "files", "queries", "patterns", "query", "uri", "name", "summary", "task_id")


# -- protobuf wire format ---------------------------------------------------------------------------
Fields = list[tuple[int, int, Any]]  # (field number, wire type, value: int or bytes)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> Fields:
    """One message's fields in order. Raises ValueError on bytes that are not a protobuf message."""
    out: Fields = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > len(data):
            raise ValueError("truncated field")
        out.append((number, wire, value))
    return out


def _get(msg: Fields, number: int) -> Any:
    return next((v for n, _, v in msg if n == number), None)


def _str(msg: Fields, number: int) -> str:
    value = _get(msg, number)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _strs(msg: Fields, number: int) -> list[str]:
    return [v.decode("utf-8", "replace") for n, w, v in msg if n == number and w == 2]


def _sub(msg: Fields, number: int) -> Fields:
    value = _get(msg, number)
    return fields(value) if isinstance(value, bytes) else []


def _texts(data: bytes, depth: int = 0) -> list[str]:
    """Every text inside a message whose schema is not spelled out here (a tool result's payload): a
    length-delimited field that is readable text is text, else it is read as a nested message."""
    out: list[str] = []
    try:
        parsed = fields(data)
    except ValueError:
        return out
    for _, wire, value in parsed:
        if wire != 2 or not value:
            continue
        text = value.decode("utf-8", "replace")
        nested = None
        if depth < 8 and any(b < 0x20 and b not in (9, 10, 13) for b in value):
            with_nested = _texts(value, depth + 1)
            nested = with_nested if with_nested else None
        if nested is not None:
            out += nested
        elif "\ufffd" not in text and all(c >= " " or c in "\t\n\r" for c in text):
            out.append(text)
    return out


# -- the store ----------------------------------------------------------------------------------------
class _Reader:
    def __init__(self) -> None:
        self.batch = Batch(revise=True)  # a task is rewritten whole: the last version of a message wins
        self.line = 0
        self.tools: dict[str, str] = {}
        self.titled = False

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader()
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict) or not isinstance(row.get("conversation_id"), str):
            reader.problem("malformed", "row without a conversation_id")
        elif table == "conversation":
            _conversation(reader, row)
        elif table == "task":
            _task(reader, row)
        elif table in ("prompt", "prompt_v0"):
            _prompt(reader, row)
        else:
            reader.problem("unknown_type", f"table={table!r}")
    # In time order: the bank takes a new session's events in the order given (a subtask's row, saved
    # earlier, can come before its parent's).
    reader.batch.events.sort(key=lambda e: e.place or "")
    return reader.batch


def _json(value: Any) -> Any:
    try:
        return orjson.loads(value) if isinstance(value, str) else None
    except orjson.JSONDecodeError:
        return None


def _conversation(reader: _Reader, row: dict) -> None:
    patch = reader.batch.session(row["conversation_id"])
    patch.updated_at = iso_text(row.get("last_modified_at"))
    patch.started_at = iso_text(row.get("first_query"))  # the first exchange (the row keeps no creation time)
    summary = _json(row.get("summary"))
    summary = summary if isinstance(summary, dict) else {}
    if isinstance(summary.get("initial_working_directory"), str) and summary["initial_working_directory"]:
        patch.cwd = summary["initial_working_directory"]
    title = str(summary.get("title") or "").strip()
    if title:  # the root task's description (the server's title), else the first query
        patch.offer_title(title[:200], "first-prompt" if title == summary.get("initial_query") else "ai")
    data = _json(row.get("conversation_data"))
    data = data if isinstance(data, dict) else {}
    if data.get("parent_conversation_id"):
        patch.parent_native_id, patch.parent_kind = str(data["parent_conversation_id"]), "subagent"
    facts: dict[str, Any] = {}
    for key in ("agent_name", "forked_from_server_conversation_token", "run_id"):
        if data.get(key):
            facts[key] = data[key]
    usage = (data.get("conversation_usage_metadata") or {}) if isinstance(data.get("conversation_usage_metadata"),
                                                                          dict) else {}
    tokens = [u for u in usage.get("token_usage") or [] if isinstance(u, dict)]
    if tokens:
        facts["tokens"] = {str(u.get("model_id")): int(u.get("warp_tokens") or 0) + int(u.get("byok_tokens") or 0)
                           for u in tokens}
    status = _json(row.get("last_status"))
    if status in TURN_STATES:
        facts["last_turn"] = TURN_STATES[status]
    if row.get("last_model"):
        facts["model_choice"] = row["last_model"]  # what the user picked ("auto" …); model_used says which ran
    if summary.get("is_unlisted_auto_code_diff"):
        facts["unlisted"] = True
    if facts:
        patch.note(**facts)


def _prompt(reader: _Reader, row: dict) -> None:
    """One exchange of a conversation from before agent_tasks: its prompt (the answer is not kept)."""
    sid = row["conversation_id"]
    patch = reader.batch.session(sid)
    ts = iso_text(row.get("start_ts"))
    patch.started_at = iso_text(row.get("first_query")) or ts
    patch.updated_at = ts
    if row.get("working_directory") and not patch.cwd:
        patch.cwd = row["working_directory"]
    if row.get("model_id") and row["model_id"] != "auto":
        patch.model = row["model_id"]
    status = _json(row.get("output_status"))
    if status in TURN_STATES:
        patch.note(last_turn=TURN_STATES[status])
    inputs = _json(row.get("input"))
    texts = [item["Query"]["text"] for item in inputs or [] if isinstance(item, dict)
             and isinstance(item.get("Query"), dict) and isinstance(item["Query"].get("text"), str)] \
        if isinstance(inputs, list) else []
    if not texts and inputs:
        kinds = [next(iter(item), None) if isinstance(item, dict) else None for item in inputs] \
            if isinstance(inputs, list) else [type(inputs).__name__]
        reader.problem("unknown_type", f"ai_queries input={kinds[0]!r}")
        return
    text = "\n".join(texts)
    if text.strip():
        reader.batch.events.append(Event(sid, f"query:{row.get('exchange_id') or row.get('id')}", "user", "text",
                                         text, ts=ts, place=ts or ""))
        if row.get("first_prompt"):
            patch.offer_title(text.strip().splitlines()[0][:200], "first-prompt")


def _task(reader: _Reader, row: dict) -> None:
    sid = row["conversation_id"]
    try:
        task = fields(bytes.fromhex(row.get("task") or ""))
    except ValueError as exc:
        reader.problem("malformed", f"task {row.get('task_id')} is not a protobuf Task: {exc}")
        return
    parent_task = _str(_sub(task, 3), 1)
    reader.titled = bool(parent_task)  # the root task's first query names the conversation (as Warp's summary)
    for index, (number, wire, value) in enumerate(task):
        if number != 5 or wire != 2:
            continue
        try:
            _message(reader, sid, fields(value), index, bool(parent_task))
        except (ValueError, KeyError, TypeError) as exc:
            reader.problem("malformed", f"task {row.get('task_id')}: message of unexpected shape: {exc}")
    if not parent_task and _str(task, 2):
        reader.batch.session(sid).offer_title(_str(task, 2)[:200], "ai")


class _Message:
    def __init__(self, reader: _Reader, sid: str, msg: Fields, index: int, subtask: bool) -> None:
        self.reader, self.sid, self.msg, self.subtask = reader, sid, msg, subtask
        self.id = _str(msg, 1) or f"task-message-{index}"
        stamp = _sub(msg, 14)
        seconds, nanos = int(_get(stamp, 1) or 0), int(_get(stamp, 2) or 0)
        self.ts = iso_ms(seconds * 1000 + nanos // 1_000_000)
        self.place = f"{seconds:012d}.{nanos:09d} {_str(msg, 11)} {index:06d}"

    def emit(self, role: Role, kind: Kind, text: str, suffix: str = "", **fields_: Any) -> None:
        uid = f"{self.id}:{suffix}" if suffix else self.id
        self.reader.batch.events.append(Event(self.sid, uid, role, kind, text, ts=self.ts, place=self.place,
                                              **fields_))


def _message(reader: _Reader, sid: str, msg: Fields, index: int, subtask: bool) -> None:
    message = _Message(reader, sid, msg, index, subtask)
    patch = reader.batch.session(sid)
    if message.ts and (patch.started_at is None or message.ts < patch.started_at):
        patch.started_at = message.ts  # without a query in ai_queries: the first message read
    kind = next((n for n, w, _ in msg if n in KINDS or (w == 2 and n not in BOOKKEEPING_FIELDS)), None)
    if kind is None:
        return  # a message with only bookkeeping fields (server data, citations)
    handler = KINDS.get(kind)
    if handler is None:
        reader.problem("unknown_type", f"message field {kind}")
        return
    handler(message, _sub(msg, kind))


# Message fields that are not its content: id, server_message_data, citations, task_id, request_id, timestamp.
BOOKKEEPING_FIELDS = frozenset({1, 7, 8, 11, 13, 14})


def _user_query(message: _Message, query: Fields) -> None:
    text = _str(query, 1)
    pwd = _str(_sub(_sub(query, 2), 1), 1)
    if pwd and message.reader.batch.session(message.sid).cwd is None:
        message.reader.batch.session(message.sid).cwd = pwd
    if not text.strip():
        return
    if message.subtask:  # a subtask's query is written by the agent that started it
        message.emit("system", "text", text, meta={"from_agent": True})
    else:
        message.emit("user", "text", text)
        if not message.reader.titled:
            message.reader.titled = True
            first = text.strip().splitlines()[0]
            message.reader.batch.session(message.sid).offer_title(first if len(first) <= 80 else first[:79] + "…",
                                                                   "first-prompt")


def _agent_output(message: _Message, output: Fields) -> None:
    if _str(output, 1).strip():
        message.emit("assistant", "text", _str(output, 1))


def _reasoning(message: _Message, reasoning: Fields) -> None:
    if _str(reasoning, 1).strip():
        message.emit("assistant", "thinking", _str(reasoning, 1))


# ToolCall's oneof (task.proto): field number -> (tool name, {field number: argument name}).
TOOLS: dict[int, tuple[str, dict[int, str]]] = {
    2: ("run_shell_command", {1: "command"}), 3: ("search_codebase", {1: "query", 3: "codebase_path"}),
    4: ("server", {}), 5: ("read_files", {1: "files"}), 6: ("apply_file_diffs", {1: "summary"}),
    7: ("suggest_plan", {1: "summary"}), 8: ("suggest_create_plan", {}), 9: ("grep", {1: "queries", 2: "path"}),
    10: ("file_glob", {1: "patterns", 2: "path"}), 11: ("read_mcp_resource", {1: "uri", 2: "server_id"}),
    12: ("call_mcp_tool", {1: "name", 3: "server_id"}), 13: ("write_to_long_running_shell_command", {3: "command_id"}),
    14: ("suggest_new_conversation", {1: "message_id"}), 15: ("file_glob_v2", {1: "patterns", 2: "search_dir"}),
    16: ("suggest_prompt", {}), 17: ("open_code_review", {}), 18: ("init_project", {}),
    19: ("subagent", {1: "task_id", 2: "payload"}), 20: ("read_documents", {}), 21: ("edit_documents", {}),
    22: ("create_documents", {}), 23: ("read_shell_command_output", {1: "command_id"}), 24: ("use_computer", {3: "summary"}),
    25: ("insert_review_comments", {1: "repo_path"}), 26: ("read_skill", {1: "skill_path", 3: "name"}),
    27: ("request_computer_use", {1: "summary"}), 28: ("fetch_conversation", {1: "conversation_id"}),
    29: ("start_agent", {1: "name", 2: "prompt"}), 30: ("send_message_to_agent", {2: "subject", 3: "message"}),
    31: ("transfer_shell_command_control_to_user", {1: "reason"}),
}
_REPEATED = frozenset({"queries", "patterns"})


def _tool_call(message: _Message, call: Fields) -> None:
    call_id = _str(call, 1)
    number = next((n for n, w, _ in call if n != 1 and w == 2), None)
    if number not in TOOLS:
        message.reader.problem("unknown_type", f"tool call field {number}")
        return
    name, keys = TOOLS[number]
    body = _sub(call, number)
    arguments: dict[str, Any] = {}
    for field_number, key in keys.items():
        if key == "files":  # ReadFiles.files: {name 1, line_ranges 2}
            values = [_str(fields(v), 1) for n, w, v in body if n == 1 and w == 2]
        else:
            values = _strs(body, field_number)
        if values:
            arguments[key] = values if key in _REPEATED or key == "files" else values[0]
    if name == "apply_file_diffs":  # the files it touches: diffs, new, deleted, V4A updates (file_path = 1)
        arguments["files"] = [_str(fields(v), 1) for n, w, v in body if n in (2, 3, 4, 5) and w == 2]
    message.reader.tools[call_id] = name
    message.emit("assistant", "tool_call", render_call(name, arguments, _CALL_KEYS), tool_name=name,
                 tool_input=arguments or None, tool_call_id=call_id or None)


# ToolCallResult's oneof numbers whose result is {1 success, 2 error {1 message}} (task.proto).
SUCCESS_OR_ERROR = frozenset({3, 5, 6, 9, 10, 15, 16, 19, 24, 25, 26, 28, 30, 32, 33, 34})


def _tool_result(message: _Message, result: Fields) -> None:
    call_id = _str(result, 1)
    number = next((n for n, w, _ in result if n not in (1, 11) and w == 2), None)
    body_bytes = _get(result, number) if number is not None else b""
    body = fields(body_bytes) if isinstance(body_bytes, bytes) else []
    failed = False
    if number == 2:  # RunShellCommandResult: command 3, command_finished 5 {output 1, exit_code 2}, legacy 1/2
        finished = _sub(body, 5)
        text = _str(finished, 1) or _str(body, 1)
        code = int(_get(finished, 2) or _get(body, 2) or 0)
        code = code - (1 << 64) if code >= 1 << 63 else code  # int32 negatives are 10-byte varints
        failed = code != 0 or _get(body, 6) is not None
        if _get(body, 6) is not None:
            text = "permission denied"
        elif _get(body, 4) is not None:
            text = "\n".join(_texts(_get(body, 4))) or text
    elif number == 14:
        failed, text = True, "cancelled"
    else:
        if number in SUCCESS_OR_ERROR and _get(body, 2) is not None:
            failed = True
        text = "\n".join(_texts(body_bytes)) if isinstance(body_bytes, bytes) else ""
    message.emit("tool", "tool_result", text, tool_call_id=call_id or None, is_error=failed,
                 tool_name=message.reader.tools.get(call_id) or (TOOLS.get(number or 0, ("",))[0] or None))


# SystemQuery's type oneof: the client's own prompts (not typed by the user).
SYSTEM_QUERIES = {1: "auto_code_diff", 3: "resume_conversation", 4: "generate_passive_suggestions",
                  5: "create_new_project", 6: "clone_repository", 7: "summarize_conversation", 8: "fetch_review_comments"}


def _system_query(message: _Message, query: Fields) -> None:
    number = next((n for n, w, _ in query if n != 2 and w == 2), None)
    if number not in SYSTEM_QUERIES:
        message.reader.problem("unknown_type", f"system query field {number}")
        return
    text = " ".join(t for t in _texts(_get(query, number) or b"") if t.strip())
    message.emit("system", "meta", f"{SYSTEM_QUERIES[number]}: {text}".strip(": "), meta={"system_query": SYSTEM_QUERIES[number]})


def _summarization(message: _Message, summary: Fields) -> None:
    conversation = _sub(summary, 1)
    if conversation:
        message.emit("system", "compaction", _str(conversation, 1) or "conversation summarized",
                     meta={"token_count": int(_get(conversation, 2) or 0)})
    else:
        message.emit("system", "meta", "tool call result summarized", meta={"summarization": "tool_call_result"})


def _model_used(message: _Message, used: Fields) -> None:
    if _str(used, 1):
        message.reader.batch.session(message.sid).model = _str(used, 1)


def _invoke_skill(message: _Message, skill: Fields) -> None:
    names = _texts(_get(skill, 1) or b"")
    message.emit("system", "meta", f"skill: {names[0] if names else '?'}", meta={"skill": True})
    if _sub(skill, 2):
        _user_query(message, _sub(skill, 2))


def _other(label: str) -> Callable[[_Message, Fields], None]:
    """Messages shown as a line of what they say (todos, web search, review comments, agent mail)."""
    def handler(message: _Message, body: Fields) -> None:
        raw = next((v for n, _, v in message.msg if n == NUMBERS[label]), b"")
        text = "; ".join(t for t in _texts(raw) if t.strip())[:2000]
        message.emit("system", "meta", f"{label}: {text}" if text else label, meta={"message": label})
    return handler


def _skip(message: _Message, body: Fields) -> None:
    """server_event (an opaque payload the server keeps for itself) and debug_output (dev builds only)."""


NUMBERS = {"update_todos": 10, "code_review": 17, "update_review_comments": 18, "web_search": 19, "web_fetch": 20,
           "artifact_event": 22, "messages_received_from_agents": 24, "events_from_agents": 26}
KINDS: dict[int, Callable[[_Message, Fields], None]] = {
    2: _user_query, 3: _agent_output, 4: _tool_call, 5: _tool_result, 6: _skip, 9: _system_query,
    15: _reasoning, 16: _summarization, 21: _skip, 23: _invoke_skill, 25: _model_used,
    **{number: _other(label) for label, number in NUMBERS.items()},
}
