"""Forge (antinomyhq/forge, the ``forge`` CLI): one SQLite database, ``<base>/.forge.db``.

Format facts and their sources: ``fixtures/forge/SOURCE.md``. In short:

- ``<base>`` is ``$FORGE_CONFIG``, else ``~/forge`` where it exists (the older default), else ``~/.forge``.
- ``conversations``: one row a conversation (``conversation_id``, ``title``, ``workspace_id``, ``context``
  JSON, ``created_at`` / ``updated_at`` as Diesel writes a ``NaiveDateTime``: ``2026-03-02 09:14:05.120391``
  UTC; ``metrics`` from October 2025), upserted whole on every save. ``context`` stays NULL until a message.
- ``context.messages`` is a list of serde's externally tagged ``ContextMessage`` (``{"text": TextMessage}``,
  ``{"tool": ToolResult}``, ``{"image": Image}``); from v1.12 (December 2025) each is wrapped as
  ``{"message": …, "usage": …}``. Both shapes are read (Forge itself still reads both).
- A ``TextMessage`` has ``role`` (``System``/``User``/``Assistant``), ``content``, the user's own words in
  ``raw_content`` (``{"Text": …}`` or ``{"Command": {name, …}}``), ``tool_calls`` (``name``, ``call_id``,
  ``arguments``), ``reasoning_details`` (``text``), ``model`` and ``droppable`` (context Forge adds and drops on
  compaction: todo lists, piped input, attachments). A ``ToolResult``'s ``output.values`` are ``text``,
  ``ai`` (a sub-agent's report, naming its conversation: the child session, linked as the caller's
  subagent, as is the conversation a ``task`` call's ``session_id`` continues), ``image``, ``empty``, and the
  ``markdown``, ``fileDiff`` and ``pair`` values builds of early 2026 wrote.
- No message carries an id or a time. An event is keyed by what it says (its role, text and call ids) and how
  many times the conversation said it before: a compaction that replaces old messages by a summary frame
  leaves the events already read, adds the summary, and a re-save adds only what is new.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Kind, Problem, ProblemKind, Role, Usage, record_uid
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

NAME = "forge"
PROCESSES = ("forge",)
# 2: a sub-agent's conversation is linked to its caller's (its parent, kind subagent).
VERSION = 2


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``ForgeConfig::base_path`` (crates/forge_config/src/reader.rs): both defaults are read, since a user who
    ran ``forge config migrate`` keeps the older folder's history beside the new one."""
    if env.get("FORGE_CONFIG"):
        return [Path(env["FORGE_CONFIG"])]
    return [home / "forge", home / ".forge"]


QUERIES = (
    SqliteQuery("conversation", "SELECT conversation_id, title, context, created_at, "
                "COALESCE(updated_at, created_at) AS updated FROM conversations "
                "WHERE context IS NOT NULL AND COALESCE(updated_at, created_at) >= :since "
                "ORDER BY updated, conversation_id", "updated", ordered=True),
)
SOURCES = (SourceSpec(".forge.db", "sqlite", "db", watch=False, queries=QUERIES),)

_CALL_KEYS = ("command", "file_path", "path", "pattern", "regex", "query", "url", "name", "tasks", "content")
_CWD = re.compile(r"<current_working_directory>\s*(.*?)\s*</current_working_directory>", re.S)
# templates/forge-partial-summary-frame.md: the user message a compaction puts in place of what it summarized.
_SUMMARY_FRAME = "Use the following summary frames as the authoritative reference"
_ROLES = {"System": "system", "User": "user", "Assistant": "assistant"}


class _Conversation:
    def __init__(self, batch: Batch, cid: str, line: int) -> None:
        self.batch, self.cid, self.line = batch, cid, line
        self.seen: dict[bytes, int] = {}  # what a message says -> how many times before

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))

    def key(self, *parts: Any) -> str:
        raw = orjson.dumps(parts, default=str)
        count = self.seen.get(raw, 0)
        self.seen[raw] = count + 1
        return record_uid(raw, context=str(count) if count else None)

    def emit(self, uid: str, role: Role, kind: Kind, text: str, **fields: Any) -> Event:
        event = Event(self.cid, uid, role, kind, text, **fields)
        self.batch.events.append(event)
        return event


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True)  # a conversation is saved whole: the last version of an event wins
    for record, data in json_objects(records, batch.problems):
        table, row = data.get("table"), data.get("row")
        if table != "conversation":
            batch.problems.append(Problem("unknown_type", record.line, f"table={table!r}"))
        elif not isinstance(row, dict) or not isinstance(row.get("conversation_id"), str):
            batch.problems.append(Problem("malformed", record.line, "conversation row without an id"))
        else:
            _conversation(_Conversation(batch, row["conversation_id"], record.line), row)
    return batch


def _conversation(conv: _Conversation, row: dict) -> None:
    try:
        context = orjson.loads(row.get("context") or "null")
    except orjson.JSONDecodeError as exc:
        conv.problem("malformed", f"conversation {conv.cid}: context is not JSON: {exc}")
        return
    messages = context.get("messages") if isinstance(context, dict) else None
    if not isinstance(messages, list):
        conv.problem("malformed", f"conversation {conv.cid}: context has no messages array")
        return
    patch = conv.batch.session(conv.cid)
    patch.started_at = iso_text(row.get("created_at"))
    patch.updated_at = iso_text(row.get("updated")) or patch.started_at
    if isinstance(row.get("title"), str) and row["title"].strip():
        patch.offer_title(row["title"].strip(), "ai")
    wrapped = 0
    for entry in messages:
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            wrapped += 1
            message, usage = entry["message"], entry.get("usage")
        else:
            message, usage = entry, None
        try:
            _message(conv, message, usage)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            conv.problem("malformed", f"conversation {conv.cid}: message of unexpected shape: {describe_error(exc)}")
    patch.note(format="entries" if wrapped else "messages")


def _message(conv: _Conversation, message: Any, usage: Any) -> None:
    kind = next(iter(message), None) if isinstance(message, dict) and len(message) == 1 else None
    value = message[kind] if kind else None
    if kind == "text" and isinstance(value, dict):
        _text(conv, value, usage)
    elif kind == "tool" and isinstance(value, dict):
        _tool_result(conv, value)
    elif kind == "image":
        conv.emit(conv.key("image", value), "user", "text", "[image]", meta={"block": "image"})
    else:
        conv.problem("unknown_type", f"message={kind!r}")


def _text(conv: _Conversation, message: dict, usage: Any) -> None:
    role = _ROLES.get(message.get("role"))  # type: ignore[arg-type]
    if role is None:
        conv.problem("unknown_type", f"role={message.get('role')!r}")
        return
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    uid = conv.key(role, content, [c.get("call_id") for c in calls])
    model = message.get("model") if isinstance(message.get("model"), str) else None
    patch = conv.batch.session(conv.cid)
    if role == "system":
        if patch.cwd is None and (found := _CWD.search(content)):
            patch.cwd = found[1]
        conv.emit(uid, "system", "text", content, meta={"injected": True})
        return
    if role == "user":
        _user(conv, uid, message, content)
        return
    if model:
        patch.model = model
    for index, detail in enumerate(message.get("reasoning_details") or []):
        if isinstance(detail, dict) and isinstance(detail.get("text"), str) and detail["text"].strip():
            conv.emit(f"{uid}:r{index}", "assistant", "thinking", detail["text"], model=model)
    if content.strip():
        conv.emit(uid, "assistant", "text", content, model=model, usage=_usage(usage))
    for call in calls:
        arguments = call.get("arguments")
        if isinstance(arguments, str):  # an unparsed argument string (ToolCallArguments::Unparsed)
            with contextlib.suppress(orjson.JSONDecodeError):
                arguments = orjson.loads(arguments)
        if call.get("name") == "task" and isinstance(arguments, dict) and arguments.get("session_id"):
            _subagent(conv, arguments["session_id"])  # continues that sub-agent's conversation
        call_id = str(call.get("call_id") or f"{uid}:{call.get('name')}")
        conv.emit(f"call:{call_id}", "assistant", "tool_call", render_call(call.get("name"), arguments, _CALL_KEYS),
                  tool_name=call.get("name"), tool_input=arguments, tool_call_id=call_id, model=model,
                  usage=None if content.strip() else _usage(usage))


def _subagent(conv: _Conversation, child: Any) -> None:
    """A sub-agent runs in a conversation of its own that names no parent (agent_executor.rs): its caller's
    ``task`` call or ``ai`` result is the only link, so the caller's reading marks the child."""
    if isinstance(child, str) and child and child != conv.cid:
        patch = conv.batch.session(child)
        patch.parent_native_id, patch.parent_kind = conv.cid, "subagent"


def _user(conv: _Conversation, uid: str, message: dict, content: str) -> None:
    if content.startswith(_SUMMARY_FRAME):
        conv.emit(uid, "system", "compaction", content, meta={"message": "summary frame"})
        return
    if message.get("droppable"):
        conv.emit(uid, "system", "text", content, meta={"injected": True, "droppable": True})
        return
    raw = message.get("raw_content")
    words, meta = content, None
    if isinstance(raw, dict) and isinstance(raw.get("Text"), str) and raw["Text"].strip():
        words = raw["Text"]
    elif isinstance(raw, dict) and isinstance(raw.get("Command"), dict):
        meta = {"command": raw["Command"].get("name")}
        words = re.sub(r"^<(task|feedback)>(.*?)</\1>.*", r"\2", content, flags=re.S) or content
    if not words.strip():
        return
    conv.emit(uid, "user", "text", words, meta=meta)
    first = words.strip().splitlines()[0]
    conv.batch.session(conv.cid).offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")


def _tool_result(conv: _Conversation, result: dict) -> None:
    output = result.get("output") if isinstance(result.get("output"), dict) else {}
    texts: list[str] = []
    meta: dict[str, Any] = {}
    for value in output.get("values") or []:
        texts += _values(conv, value, meta)
    call_id = str(result.get("call_id") or conv.key("tool", result.get("name"), texts))
    conv.emit(f"result:{call_id}", "tool", "tool_result", "\n".join(t for t in texts if t),
              tool_call_id=call_id, tool_name=result.get("name"), is_error=bool(output.get("is_error")),
              meta=meta or None)


def _values(conv: _Conversation, value: Any, meta: dict[str, Any]) -> list[str]:
    """The texts of one ``ToolValue`` (camelCase externally tagged; ``empty`` is a bare string)."""
    if value == "empty" or value is None:
        return []
    kind = next(iter(value), None) if isinstance(value, dict) and len(value) == 1 else None
    inner = value[kind] if kind else None
    if kind in ("text", "markdown") and isinstance(inner, str):
        return [inner]
    if kind == "ai" and isinstance(inner, dict):
        if inner.get("conversation_id"):
            meta["conversation_id"] = inner["conversation_id"]
            _subagent(conv, inner["conversation_id"])
        return [str(inner.get("value") or "")]
    if kind == "image":
        return ["[image]"]
    if kind == "fileDiff" and isinstance(inner, dict):
        return [f"[file diff: {inner.get('path')}]\n{inner.get('new_text') or ''}"]
    if kind == "pair" and isinstance(inner, list):
        # The first value is what the model was shown, the second what the terminal displayed: both kept.
        out: list[str] = []
        for part in inner:
            out += [t for t in _values(conv, part, meta) if t not in out]
        return out
    conv.problem("unknown_type", f"tool value={kind if kind else type(value).__name__!r}")
    return []


def _usage(usage: Any) -> Usage | None:
    """``UsageRecord``: each count ``{"actual": n}`` or ``{"approx": n}`` (``Actual``/``Approx`` before)."""
    if not isinstance(usage, dict):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        if isinstance(value, dict):
            value = next((v for k, v in value.items() if k.lower() in ("actual", "approx")), 0)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    found = Usage(input=count("prompt_tokens"), output=count("completion_tokens"), cache_read=count("cached_tokens"))
    return found if any(found.as_dict().values()) else None
