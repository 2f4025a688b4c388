"""Goose (Block / AAIF, ``goose``): one SQLite database, ``<data>/sessions/sessions.db``, and the JSONL
sessions it replaced.

Format facts and their sources: ``fixtures/goose/SOURCE.md``. In short:

- ``<data>`` is ``$GOOSE_PATH_ROOT/data`` when that variable is an absolute path, else etcetera's app data
  dir: ``$XDG_DATA_HOME/goose`` or ``~/.local/share/goose`` on Linux and macOS (its XDG strategy on every
  OS but Windows), ``%APPDATA%\\Block\\goose\\data`` on Windows.
- ``sessions``: ``id`` (``YYYYMMDD_N``), ``name`` (generated, or the user's when ``user_set_name``),
  ``session_type`` (``user``, ``sub_agent``, ``scheduled``, ``hidden``, ``terminal``, ``gateway``, ``acp``),
  ``working_dir`` (cwd), ``created_at``/``updated_at`` (SQLite ``datetime('now')`` text, UTC),
  ``provider_name``, ``model_config_json``, token totals. Columns come and go with the schema version, so
  both queries select ``*`` and the parser reads what is there.
- ``messages``: ``id`` INTEGER AUTOINCREMENT, ``message_id``, ``session_id``, ``role`` (user/assistant),
  ``content_json`` (a JSON array of ``MessageContent``, tagged by ``type``), ``created_timestamp`` (unix
  seconds), ``metadata_json`` (``{userVisible, agentVisible}``). A compaction or a truncation rewrites a
  session's rows (DELETE then INSERT, new ids): the rows come back with the ``id`` watermark, and the uids
  (a tool call's id, else a hash of the block and its message's time) make the re-read a no-op.
- The JSONL files (before sessions.db, imported into it when it is first created): a first line of
  session metadata (``working_dir``, ``description``, token totals), then one message a line in the same
  shape. Both layouts give the same uids, so an imported session is stored once.
- Compaction: the summary and the continuation note are ``agentVisible`` only (``system``); the originals
  stay, hidden from the model, so nothing is lost. Subagent sessions are ``session_type = 'sub_agent'``.
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
    describe_error,
    iso_ms,
    iso_text,
    json_objects,
    render_call,
)

NAME = "goose"

# The CLI and the desktop app's server (goosed) are native binaries of those names.
PROCESSES = ("goose", "goosed", "goose.exe", "goosed.exe")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """The sessions folder under Goose's data dir (``config/paths.rs``: ``GOOSE_PATH_ROOT`` only when
    absolute; etcetera's ``choose_app_strategy``: XDG, which takes ``$XDG_DATA_HOME`` only when absolute)."""
    override = env.get("GOOSE_PATH_ROOT")
    if override and Path(override).is_absolute():
        return [Path(override) / "data" / "sessions"]
    if platform == "win32":
        return [Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Block" / "goose" / "data" / "sessions"]
    xdg = env.get("XDG_DATA_HOME")
    data = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share"
    return [data / "goose" / "sessions"]


# updated_at is datetime('now') (seconds), taken inside the writing transaction: 10 s back covers a
# transaction that committed after a newer one was read. Rows re-read are harmless (patches, uids).
QUERIES = (
    SqliteQuery(
        "session",
        "SELECT s.*, (SELECT m.role FROM messages m WHERE m.session_id = s.id "
        "ORDER BY m.created_timestamp DESC, m.id DESC LIMIT 1) AS last_role FROM sessions s "
        "WHERE :since = 0 OR s.updated_at >= datetime(:since, '-10 seconds') ORDER BY s.updated_at, s.id",
        "updated_at", ordered=True,
    ),
    SqliteQuery(
        "message",
        # first_user: no user row before it (NOT EXISTS stops at the session's first prompt, a few rows in).
        "SELECT m.*, s.session_type AS session_type, CASE WHEN m.role = 'user' THEN NOT EXISTS (SELECT 1 FROM "
        "messages f WHERE f.session_id = m.session_id AND f.role = 'user' AND (f.created_timestamp < "
        "m.created_timestamp OR (f.created_timestamp = m.created_timestamp AND f.id < m.id))) END AS first_user "
        "FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
        "WHERE m.id >= :since ORDER BY m.id",
        "id", ordered=True,
    ),
)

SOURCES = (
    SourceSpec("sessions.db", "sqlite", "db", watch=False, queries=QUERIES),
    SourceSpec("*.jsonl", "jsonl", "legacy"),
)

# Tables never read: thread_messages copies messages for ACP clients (coalesced text, re-minted ids);
# threads groups sessions for them; schema_version, eval_* and the provider inventory are bookkeeping.
TABLES_NOT_READ = frozenset({"threads", "thread_messages", "schema_version", "eval_datasets", "eval_test_cases",
                             "eval_runs", "usage_ledger"})
# Placeholder names Goose gives a session before one is generated.
PLACEHOLDER_NAMES = frozenset({"", "CLI Session", "ACP Session", "New Chat", "New session"})
# Content types with nothing for a transcript (an encrypted thinking block).
BOOKKEEPING = frozenset({"redactedThinking"})
# The text Goose writes after a compaction summary (context_mgmt/mod.rs *_CONTINUATION_TEXT).
CONTINUATION = "The previous message is a structured summary of "
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "instructions", "task")
_KEPT_TOOLS = 64  # call id -> tool name, kept across reads for results that come in a later read


class _Reader:
    def __init__(self, state: dict[str, Any]) -> None:
        self.batch = Batch(revise=True)  # metadata of a message changes on compaction: the last version wins
        self.line = 0
        self.tools: dict[str, str] = dict(state.get("tools") or {})
        self.last: dict[str, int] = {}  # session -> the row id of its newest message read here
        self.titled = bool(state.get("titled"))  # a JSONL session (one a file) offered its first prompt

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))

    def event(self, session: str, uid: str, role: Role, kind: Kind, text: str, **fields: Any) -> None:
        self.batch.events.append(Event(session, uid, role, kind, text, **fields))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(state)
    if ref.variant == "legacy":
        _legacy(reader, ref.path.stem, records)
    else:
        _database(reader, records)
    reader.batch.state = {"tools": dict(list(reader.tools.items())[-_KEPT_TOOLS:]),
                          **({"titled": True} if reader.titled else {})}
    return reader.batch


def _database(reader: _Reader, records: Iterable[Record]) -> None:
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict):
            reader.problem("malformed", "row is not an object")
        elif table == "session":
            _session(reader, row)
        elif table == "message":
            content = _json(reader, row.get("content_json"), "content_json")
            if content is not None:
                _message(reader, str(row.get("session_id") or ""), row, content, _json(
                    reader, row.get("metadata_json"), "metadata_json", quiet=True))
        else:
            reader.problem("unknown_type", f"table={table!r}")


def _json(reader: _Reader, value: Any, column: str, quiet: bool = False) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        if not quiet:
            reader.problem("malformed", f"{column} is not JSON: {exc}")
        return None


def _session(reader: _Reader, row: dict) -> None:
    sid = row.get("id")
    if not isinstance(sid, str) or not sid:
        reader.problem("malformed", "session without an id")
        return
    patch = reader.batch.session(sid)
    patch.cwd = row.get("working_dir") or None
    patch.started_at = iso_text(row.get("created_at"))
    patch.updated_at = iso_text(row.get("updated_at"))
    config = _json(reader, row.get("model_config_json"), "model_config_json", quiet=True)
    if isinstance(config, dict) and isinstance(config.get("model_name"), str):
        patch.model = config["model_name"]
    name = (row.get("name") or row.get("description") or "").strip()
    if name and name not in PLACEHOLDER_NAMES:
        patch.offer_title(name, "custom" if row.get("user_set_name") else "ai")
    if row.get("parent_session_id"):  # newer schemas only (UNCONFIRMED in Goose's source: SOURCE.md)
        patch.parent_native_id, patch.parent_kind = str(row["parent_session_id"]), "subagent"
    facts: dict[str, Any] = {}
    for column in ("session_type", "provider_name", "goose_mode", "schedule_id", "thread_id", "project_id"):
        if row.get(column) and row[column] != "user":
            facts[column] = row[column]
    tokens = {k: row[f"accumulated_{k}_tokens"] for k in ("input", "output", "total")
              if isinstance(row.get(f"accumulated_{k}_tokens"), int)}
    if tokens:
        facts["tokens"] = tokens
    if row.get("archived_at"):
        facts["archived"] = iso_text(row["archived_at"])
    if row.get("last_role") in ("user", "assistant"):
        # A user row last: the answer has not been stored yet (Goose stores a prompt before its answer).
        facts["last_turn"] = "open" if row["last_role"] == "user" else "complete"
    if facts:
        patch.note(**facts)


def _legacy(reader: _Reader, sid: str, records: Iterable[Record]) -> None:
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        if "role" not in data and record.line == 1:  # the session's metadata line
            patch = reader.batch.session(sid)
            patch.cwd = data.get("working_dir") or None
            if isinstance(data.get("description"), str) and data["description"].strip():
                patch.offer_title(data["description"].strip(), "ai")
            if data.get("schedule_id"):
                patch.note(schedule_id=data["schedule_id"])
            continue
        content = data.get("content")
        first = data.get("role") == "user" and not reader.titled
        reader.titled = reader.titled or first
        _message(reader, sid, {"id": record.line, "role": data.get("role"), "created_timestamp": data.get("created"),
                               "first_user": first}, content, data.get("metadata"))


def _message(reader: _Reader, sid: str, row: dict, content: Any, metadata: Any) -> None:
    role = row.get("role")
    if not sid:
        reader.problem("malformed", "message without a session")
        return
    if role not in ("user", "assistant"):
        reader.problem("unknown_type", f"message role={role!r}")
        return
    if not isinstance(content, list):
        reader.problem("malformed", "content is not an array")
        return
    created = row.get("created_timestamp")
    created = created if isinstance(created, int) and not isinstance(created, bool) else 0
    ts = iso_ms(created * 1000 if created < 10_000_000_000 else created)
    meta = metadata if isinstance(metadata, dict) else {}
    message = _Message(reader, sid, role, created, ts, agent_only=meta.get("userVisible") is False
                       and meta.get("agentVisible") is not False, hidden=meta.get("agentVisible") is False,
                       from_agent=row.get("session_type") == "sub_agent", first=bool(row.get("first_user")))
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            reader.problem("malformed", "content block is not an object")
            continue
        kind = block.get("type")
        handler = BLOCKS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            if kind not in BOOKKEEPING:
                reader.problem("unknown_type", f"content type={kind!r}")
            continue
        try:
            handler(message, index, block)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.problem("malformed", f"{kind} block of unexpected shape: {describe_error(exc)}")
    rid = row.get("id") if isinstance(row.get("id"), int) else 0
    if rid >= reader.last.get(sid, -1):  # the newest message says whether the turn is over
        reader.last[sid] = rid
        reader.batch.session(sid).note(last_turn="open" if role == "user" or message.calls else "complete")


class _Message:
    """One message's context for its blocks."""

    def __init__(self, reader: _Reader, sid: str, role: str, created: int, ts: str | None, *, agent_only: bool,
                 hidden: bool, from_agent: bool, first: bool) -> None:
        self.reader, self.sid, self.role, self.created, self.ts = reader, sid, role, created, ts
        self.agent_only, self.hidden, self.from_agent, self.first = agent_only, hidden, from_agent, first
        self.calls = 0

    def uid(self, index: int, block: dict) -> str:
        """Stable over a rewrite of the session's rows and over the JSONL-to-database import: the message's
        time, role and the block's place and content (its row id and message_id are neither)."""
        import hashlib  # here, not at the top: the registry's import (status) needs none of it
        digest = hashlib.sha256(orjson.dumps(block, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
        return f"{self.created}:{self.role[0]}{index}:{digest}"

    def emit(self, uid: str, role: Role, kind: Kind, text: str, meta: dict | None = None, **fields: Any) -> None:
        flags = {**({"agent_only": True} if self.agent_only else {}), **({"hidden_from_model": True}
                                                                          if self.hidden else {})}
        self.reader.event(self.sid, uid, role, kind, text, ts=self.ts, meta={**flags, **(meta or {})} or None,
                          **fields)


def _text(message: _Message, index: int, block: dict) -> None:
    text = block.get("text")
    if not isinstance(text, str) or not text.strip():
        return
    uid = message.uid(index, {"type": "text", "text": text})
    if message.agent_only and message.role == "assistant" and text.startswith(CONTINUATION):
        message.emit(uid, "system", "compaction", text, {"continuation": True})
    elif message.agent_only:
        # Written for the model only: a compaction's summary (a user-role message), Goose's own notes.
        message.emit(uid, "system", "text", text, {"injected": True})
    elif message.role == "assistant":
        message.emit(uid, "assistant", "text", text)
    elif message.from_agent:  # a subagent's task comes from its parent agent, not from the human
        message.emit(uid, "system", "text", text, {"from_agent": True})
    else:
        message.emit(uid, "user", "text", text)
        if message.first:
            first = text.strip().splitlines()[0]
            message.reader.batch.session(message.sid).offer_title(
                first if len(first) <= 80 else first[:79] + "…", "first-prompt")
            message.first = False


def _image(message: _Message, index: int, block: dict) -> None:
    role: Role = "assistant" if message.role == "assistant" else "user"
    message.emit(message.uid(index, {"type": "image", "mimeType": block.get("mimeType")}), role, "text",
                 f"[image ({block.get('mimeType') or '?'})]", {"block": "image"})


def _thinking(message: _Message, index: int, block: dict) -> None:
    text = block.get("thinking") if block.get("type") == "thinking" else block.get("text")  # old "reasoning"
    if isinstance(text, str) and text.strip():
        message.emit(message.uid(index, {"type": "thinking", "thinking": text}), "assistant", "thinking", text)


def _tool_request(message: _Message, index: int, block: dict) -> None:
    call_id = str(block["id"])
    call = block.get("toolCall") if isinstance(block.get("toolCall"), dict) else {}
    value = call.get("value") if isinstance(call.get("value"), dict) else {}
    name, arguments = value.get("name"), value.get("arguments")
    message.calls += 1
    if call.get("status") != "success":  # the model asked for a tool Goose could not parse
        message.emit(call_id, "assistant", "tool_call", f"invalid tool call: {call.get('error') or call}",
                     {"invalid": True}, tool_call_id=call_id)
        return
    message.reader.tools[call_id] = str(name)
    meta = {"frontend": True} if block.get("type") == "frontendToolRequest" else None
    message.emit(call_id, "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS), meta,
                 tool_name=name, tool_input=arguments, tool_call_id=call_id)


def _tool_response(message: _Message, index: int, block: dict) -> None:
    call_id = str(block["id"])
    result = block.get("toolResult") if isinstance(block.get("toolResult"), dict) else {}
    status = result.get("status")
    if status == "success":
        value = result.get("value")
        items = value.get("content") if isinstance(value, dict) else value  # older builds: the list itself
        failed = bool(value.get("isError")) if isinstance(value, dict) else False
        text = _content_text(items)
    elif status == "error":
        failed, text = True, str(result.get("error") or "error")
    else:
        message.reader.problem("unknown_type", f"tool result status={status!r}")
        return
    message.emit(f"{call_id}:result", "tool", "tool_result", text, tool_call_id=call_id, is_error=failed,
                 tool_name=message.reader.tools.get(call_id))


def _content_text(items: Any) -> str:
    """rmcp Content items as text: their text, a resource's text, a placeholder for binary content."""
    if not isinstance(items, list):
        return "" if items is None else orjson.dumps(items).decode()
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            out.append(item["text"])
        elif isinstance(item.get("resource"), dict) and isinstance(item["resource"].get("text"), str):
            out.append(item["resource"]["text"])
        else:
            out.append(f"[{item.get('type') or 'content'}]")
    return "\n".join(out)


def _confirmation(message: _Message, index: int, block: dict) -> None:
    data = block.get("data") if block.get("type") == "actionRequired" else {**block, "actionType": "toolConfirmation"}
    data = data if isinstance(data, dict) else {}
    action = data.get("actionType")
    what = data.get("toolName") or data.get("message") or data.get("id") or ""
    message.emit(message.uid(index, block), "system", "meta", f"{action}: {what}".strip(),
                 {"block": block.get("type"), "action": action})


def _notification(message: _Message, index: int, block: dict) -> None:
    message.emit(message.uid(index, block), "system", "meta", str(block.get("msg") or ""),
                 {"block": "systemNotification", "notification": block.get("notificationType")})


def _compacted(message: _Message, index: int, block: dict) -> None:  # before Goose 1.14 (message.rs)
    message.emit(message.uid(index, block), "system", "compaction", str(block.get("msg") or "conversation compacted"),
                 {"block": "conversationCompacted"})


BLOCKS: dict[str, Callable[[_Message, int, dict], None]] = {
    "text": _text,
    "image": _image,
    "thinking": _thinking,
    "reasoning": _thinking,
    "toolRequest": _tool_request,
    "frontendToolRequest": _tool_request,
    "toolResponse": _tool_response,
    "toolConfirmationRequest": _confirmation,
    "actionRequired": _confirmation,
    "systemNotification": _notification,
    "conversationCompacted": _compacted,
}

