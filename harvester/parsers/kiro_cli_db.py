"""Kiro CLI's v1 engine and Amazon Q Developer CLI: ``data.sqlite3``, read by :mod:`kiro_cli` for both.

Format facts and their sources: ``fixtures/kiro_cli/SOURCE.md`` and ``fixtures/amazon_q/SOURCE.md``. A
conversation is one row holding the whole ``ConversationState`` as JSON, rewritten at every turn's end:

- ``conversations_v2`` (Kiro): ``key`` (the working directory), ``conversation_id``, ``value``, ``created_at``
  and ``updated_at`` (epoch milliseconds). One conversation may sit under several keys: each is read, the
  uids are the same, the bank keeps one.
- ``conversations`` (Amazon Q's migration 007: its only one, and still in older Kiro databases): ``key`` (the
  working directory), ``value``; written with INSERT OR REPLACE, so a new conversation in the same directory
  replaces the row (the bank keeps the old one's events) and every write takes a new rowid.
- ``value``: ``conversation_id``, ``history`` (``{user, assistant, request_metadata}`` per exchange, ``[user,
  assistant]`` pairs in Amazon Q 1.10 to 1.12; the user side is ``{"Prompt": {prompt}}``,
  ``{"ToolUseResults": {tool_use_results}}`` or ``{"CancelledToolUses": {prompt, tool_use_results}}`` with
  ``timestamp`` (not before 1.13) and ``env_context.env_state.current_working_directory``; the assistant side
  ``{"Response": {message_id, content}}`` or ``{"ToolUse": {message_id, content, tool_uses: [{id, name,
  args}]}}``), ``latest_summary`` (``/compact``'s ``[summary, metadata]``, a bare summary before 1.13),
  ``model_info`` (``model`` up to 1.13.3).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SqliteQuery,
    describe_error,
    iso_ms,
    iso_text,
    json_objects,
    render_call,
)

_V2 = SqliteQuery("conversation", "SELECT key, conversation_id, value, created_at, updated_at FROM conversations_v2 "
                  "WHERE updated_at >= :since ORDER BY updated_at, conversation_id, key", "updated_at",
                  optional=True, ordered=True)
# Optional in Amazon Q's own database too: one older than migration 007 (May 2025) has no conversations.
_LEGACY = SqliteQuery("legacy", "SELECT rowid AS row_id, key, value FROM conversations WHERE rowid >= :since "
                      "ORDER BY rowid", "row_id", optional=True, ordered=True)
QUERIES = (_V2, _LEGACY)  # Kiro CLI's
AMAZON_Q_QUERIES = (_LEGACY,)  # Amazon Q never had conversations_v2
# Tables of data.sqlite3 never read: settings, auth, telemetry state, the old shell history.
TABLES_NOT_READ = frozenset({"migrations", "history", "state", "auth_kv"})
USER_CONTENT = frozenset({"Prompt", "ToolUseResults", "CancelledToolUses"})
ASSISTANT_CONTENT = frozenset({"Response", "ToolUse"})
ROUTING_MODELS = frozenset({"auto"})
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task")


class _Row:
    def __init__(self, batch: Batch, line: int, sid: str) -> None:
        self.batch, self.line, self.sid = batch, line, sid

    def emit(self, uid: str, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, **fields))

    def problem(self, kind: Any, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Stateless: every row is a whole conversation; its events' uids come from ids or content."""
    batch = Batch()
    for record, data in json_objects(records, batch.problems):
        table, row = data.get("table"), data.get("row")
        if table not in ("conversation", "legacy") or not isinstance(row, dict):
            batch.problems.append(Problem("unknown_type", record.line, f"table={table!r}"))
            continue
        try:
            _conversation(batch, record.line, row)
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as exc:
            batch.problems.append(Problem("malformed", record.line,
                                          f"conversation of unexpected shape: {describe_error(exc)}"))
    return batch


def _conversation(batch: Batch, line: int, row: dict) -> None:
    try:
        value = orjson.loads(row.get("value") or b"")
    except (orjson.JSONDecodeError, TypeError):
        batch.problems.append(Problem("malformed", line, "conversation value is not JSON"))
        return
    if not isinstance(value, dict):
        batch.problems.append(Problem("malformed", line, "conversation value is not an object"))
        return
    sid = row.get("conversation_id") or value.get("conversation_id")
    if not isinstance(sid, str) or not sid:
        batch.problems.append(Problem("malformed", line, "conversation without an id"))
        return
    reader = _Row(batch, line, sid)
    patch = batch.session(sid)
    patch.started_at = iso_ms(row.get("created_at"))
    patch.updated_at = iso_ms(row.get("updated_at"))
    info = value.get("model_info") if isinstance(value.get("model_info"), dict) else {}
    model = info.get("model_id") if isinstance(info.get("model_id"), str) else value.get("model")
    if isinstance(model, str) and model and model not in ROUTING_MODELS:
        patch.model = model
    key = row.get("key")  # the directory the conversation was started in
    cwd = key if isinstance(key, str) and key else None
    history = value.get("history") if isinstance(value.get("history"), list) else []
    last = None
    for index, entry in enumerate(history):
        if isinstance(entry, list) and len(entry) == 2:  # Amazon Q 1.10-1.12: (UserMessage, AssistantMessage)
            entry = {"user": entry[0], "assistant": entry[1]}
        if not isinstance(entry, dict):
            reader.problem("malformed", f"history entry {index} is not an object")
            continue
        cwd = cwd or _cwd(entry.get("user"))
        last = _exchange(reader, entry, index) or last
    patch.cwd = cwd
    if last is not None:
        patch.note(last_turn=last)
    summary = value.get("latest_summary")
    if isinstance(summary, list):  # (summary, RequestMetadata) since 1.13; the summary alone before
        summary = summary[0] if summary else None
    if isinstance(summary, str) and summary.strip():
        reader.emit(record_uid(summary.encode(), "summary"), role="system", kind="compaction", text=summary)


def _cwd(user: Any) -> str | None:
    context = user.get("env_context") if isinstance(user, dict) else None
    env_state = context.get("env_state") if isinstance(context, dict) else None
    cwd = env_state.get("current_working_directory") if isinstance(env_state, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None


def _exchange(reader: _Row, entry: dict, index: int) -> str | None:
    """One history entry: the user's side, then the assistant's. Returns how the turn stands after it."""
    meta = entry.get("request_metadata") if isinstance(entry.get("request_metadata"), dict) else {}
    user = entry.get("user") if isinstance(entry.get("user"), dict) else {}
    request = meta.get("message_id") if isinstance(meta.get("message_id"), str) and meta["message_id"] else None
    # A request's id names the exchange; without one, the user side's own bytes do (stable across rewrites).
    base = request or record_uid(orjson.dumps(user, option=orjson.OPT_SORT_KEYS), index)
    content = user.get("content") if isinstance(user.get("content"), dict) else {}
    for name, body in content.items():
        if name not in USER_CONTENT:
            reader.problem("unknown_type", f"user content {name!r}")
            continue
        body = body if isinstance(body, dict) else {}
        ts = iso_text(user.get("timestamp"))
        prompt = body.get("prompt")
        if isinstance(prompt, str) and prompt.strip():
            reader.emit(f"{base}:user", role="user", kind="text", text=prompt, ts=ts)
        results = body.get("tool_use_results") if isinstance(body.get("tool_use_results"), list) else []
        for n, result in enumerate(results):
            _result(reader, result, ts, name == "CancelledToolUses", f"{base}:{n}")
    assistant = entry.get("assistant") if isinstance(entry.get("assistant"), dict) else {}
    ts = iso_ms(meta.get("stream_end_timestamp_ms"))
    model = meta.get("model_id") if isinstance(meta.get("model_id"), str) and meta["model_id"] not in ROUTING_MODELS \
        else None
    state = None
    for name, body in assistant.items():
        if name not in ASSISTANT_CONTENT:
            reader.problem("unknown_type", f"assistant message {name!r}")
            continue
        body = body if isinstance(body, dict) else {}
        uid = body.get("message_id") if isinstance(body.get("message_id"), str) and body["message_id"] else base
        text = body.get("content")
        if isinstance(text, str) and text.strip():
            reader.emit(f"{uid}:text", role="assistant", kind="text", text=text, ts=ts, model=model)
        calls = body.get("tool_uses") if isinstance(body.get("tool_uses"), list) else []
        for n, call in enumerate(calls):
            call = call if isinstance(call, dict) else {}
            call_id = call.get("id") if isinstance(call.get("id"), str) and call["id"] else f"{uid}#{n}"
            tool = call.get("name") if isinstance(call.get("name"), str) else None
            reader.emit(f"call:{call_id}", role="assistant", kind="tool_call", ts=ts, model=model,
                        text=render_call(tool, call.get("args"), _CALL_KEYS), tool_name=tool,
                        tool_input=call.get("args"), tool_call_id=call_id)
        # A Response ends the turn; a ToolUse waits for its results (the next entry's user side).
        state = "open" if name == "ToolUse" else "complete"
    return state


def _result(reader: _Row, result: Any, ts: str | None, cancelled: bool, fallback: str) -> None:
    result = result if isinstance(result, dict) else {}
    call_id = result.get("tool_use_id") if isinstance(result.get("tool_use_id"), str) else None
    parts = []
    for block in result.get("content") if isinstance(result.get("content"), list) else []:
        # Serde's externally tagged enum: {"Text": "..."} or {"Json": {...}}.
        if isinstance(block, dict) and isinstance(block.get("Text"), str):
            parts.append(block["Text"])
        elif isinstance(block, dict) and "Json" in block:
            parts.append(orjson.dumps(block["Json"], default=repr).decode())
        else:
            reader.problem("unknown_type", "tool result block other than Text or Json")
    status = result.get("status")
    reader.emit(f"result:{call_id or fallback}", role="tool", kind="tool_result", text="\n".join(parts), ts=ts,
                tool_call_id=call_id, is_error=cancelled or (isinstance(status, str) and status.lower() == "error"),
                meta={"cancelled": True} if cancelled else None)
