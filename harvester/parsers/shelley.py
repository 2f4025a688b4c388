"""Shelley (exe.dev's coding agent, boldsoftware/shelley): ``~/.config/shelley/shelley.db``, one database.

Format facts and their sources: ``fixtures/shelley/SOURCE.md`` (upstream source). In short:

- ``conversations(conversation_id, slug, user_initiated, created_at, updated_at, cwd, parent_conversation_id,
  model, archived, ...)``: a conversation that is not ``user_initiated`` is a subagent's, else a parent names
  the conversation it continues. ``messages(message_id, conversation_id, sequence_id, type, llm_data,
  user_data, usage_data, created_at, model_name, ...)`` are appended, never rewritten (``user_data`` aside):
  read by rowid. Columns a migration added after the first schema (``cwd``, ``parent_conversation_id``,
  ``model``, ``model_name``) are read where present.
- ``type``: ``user``, ``agent``, ``tool`` (results), ``system`` (the prompt the agent sends), ``error``,
  ``gitinfo`` (the repository's state: branch and commit), ``warning``, ``modelchange`` (notices the user
  sees), ``slug`` (only the usage of the call that named the conversation).
- ``llm_data`` is a serialized ``llm.Message``: ``Role`` (0 user, 1 assistant) and ``Content`` blocks whose
  ``Type`` is a Go iota sharing its block with the roles: 2 text, 3 thinking, 4 redacted thinking, 5 tool use
  (``ID``, ``ToolName``, ``ToolInput``), 6 tool result (``ToolUseID``, ``ToolError``, ``ToolResult`` blocks),
  7 server tool use, 8 web search tool result, 9 web search result (``Title``, ``URL``). ``usage_data`` is
  ``llm.Usage`` (``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``,
  ``output_tokens``, ``cost_usd``, ``model``).
- Times are SQLite ``DATETIME`` text in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, Usage
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

NAME = "shelley"
PROCESSES = ("shelley",)
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "prompt")
TEXT, THINKING, REDACTED, TOOL_USE, TOOL_RESULT, SERVER_TOOL_USE, SEARCH_RESULTS, SEARCH_RESULT = range(2, 10)
NOTICES = frozenset({"error", "gitinfo", "warning", "modelchange"})  # shown to the user, not sent to the model
TYPES = frozenset({"user", "agent", "tool", "system", "slug"}) | NOTICES
TITLED_KEPT = 64  # conversations remembered as titled by their first prompt (past them, the slug's wins)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".config" / "shelley"]  # $HOME/.config/shelley: no variable moves it (the db is a flag)


# Columns later migrations added: a natural join with a row of NULLs names them either way (the table's own
# column where it has one, the NULL where it lacks it).
_CONVERSATION = (
    "SELECT CAST(c.updated_at AS TEXT) AS changed, c.conversation_id, c.slug, c.user_initiated, "
    "c.created_at, c.updated_at, cwd, parent_conversation_id, model, archived FROM conversations c "
    "NATURAL LEFT JOIN (SELECT NULL AS cwd, NULL AS parent_conversation_id, NULL AS model, NULL AS archived) "
    "WHERE CAST(c.updated_at AS TEXT) >= :since ORDER BY changed, c.conversation_id"
)
_MESSAGE = (
    "SELECT m.rowid AS rid, m.message_id, m.conversation_id, m.sequence_id, m.type, m.llm_data, m.user_data, "
    "m.usage_data, m.created_at, model_name FROM messages m NATURAL LEFT JOIN (SELECT NULL AS model_name) "
    "WHERE m.rowid >= :since ORDER BY m.rowid"
)
QUERIES = (
    SqliteQuery("conversation", _CONVERSATION, "changed", ordered=True),
    SqliteQuery("message", _MESSAGE, "rid", ordered=True),
)
# watch=False: a WAL database is polled.
SOURCES = (SourceSpec("shelley.db", "sqlite", watch=False, queries=QUERIES),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state)
    for record, data in json_objects(records, batch.problems):
        table, row = data.get("table"), data.get("row")
        try:
            if not isinstance(row, dict):
                raise TypeError("row is not an object")
            if table == "conversation":
                _conversation(batch, row)
            elif table == "message":
                _message(batch, record.line, row, state)
            else:
                batch.problems.append(Problem("unknown_type", record.line, f"table={table!r}"))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line,
                                          f"row of unexpected shape: {describe_error(exc)}"))
    return batch


def _conversation(batch: Batch, row: dict) -> None:
    patch = batch.session(str(row["conversation_id"]))
    if isinstance(row.get("cwd"), str) and row["cwd"].strip():
        patch.cwd = row["cwd"].strip()
    if isinstance(row.get("slug"), str) and row["slug"].strip():
        patch.offer_title(row["slug"].strip(), "ai")  # the model names the conversation
    patch.started_at = iso_text(row.get("created_at"))
    patch.updated_at = iso_text(row.get("updated_at"))
    if isinstance(row.get("model"), str) and row["model"]:
        patch.model = row["model"]
    parent = row.get("parent_conversation_id")
    if isinstance(parent, str) and parent.strip() and parent != patch.native_id:
        subagent = row.get("user_initiated") in (0, False)
        patch.parent_native_id, patch.parent_kind = parent.strip(), "subagent" if subagent else "fork"
    if row.get("archived"):
        patch.note(archived=True)


def _message(batch: Batch, line: int, row: dict, state: dict[str, Any]) -> None:
    sid, uid, kind = str(row["conversation_id"]), str(row["message_id"]), row.get("type")
    if kind not in TYPES:
        batch.problems.append(Problem("unknown_type", line, f"message type={kind!r}"))
        return
    ts = iso_text(row.get("created_at"))
    usage, model = _usage(row.get("usage_data"))
    model = row["model_name"] if isinstance(row.get("model_name"), str) and row["model_name"] else model
    user_data = _json(row.get("user_data"))
    if kind == "gitinfo" and isinstance(user_data, dict):  # the repository's state: its branch and commit
        branch, commit = (user_data.get(k) if isinstance(user_data.get(k), str) and user_data[k] else None
                          for k in ("Branch", "Commit"))
        if branch or commit:
            batch.session(sid).git = GitFacts(branch=branch, commit=commit)
    start = len(batch.events)
    llm = _json(row.get("llm_data"))
    if llm is None and isinstance(row.get("llm_data"), str) and row["llm_data"].strip() not in ("", "null"):
        batch.problems.append(Problem("malformed", line, "message llm_data is not JSON"))
    blocks = llm.get("Content") if isinstance(llm, dict) and isinstance(llm.get("Content"), list) else []
    for index, block in enumerate(b for b in blocks if isinstance(b, dict)):
        _block(batch, line, sid, f"{uid}:{index}" if index else uid, kind, ts, block, state)
    if len(batch.events) == start and kind != "slug":
        text = _user_text(user_data)  # some rows keep what the user sees in user_data only
        if text:
            role, event_kind = ("user", "text") if kind == "user" else ("system", "meta")
            batch.events.append(Event(sid, uid, role, event_kind, text, ts=ts, meta={"type": kind}))
    if usage is not None or model:
        if len(batch.events) == start:  # a row that only carries a call's usage (the slug's, an error's)
            batch.events.append(Event(sid, uid, "system", "meta", f"{kind}: model call", ts=ts,
                                      meta={"type": kind}))
        batch.events[start].usage = usage
        for event in batch.events[start:]:
            event.model = model if event.role == "assistant" or event is batch.events[start] else None


def _block(batch: Batch, line: int, sid: str, uid: str, kind: str, ts: str | None, block: dict,
           state: dict[str, Any]) -> None:
    content = block.get("Type")
    if content in (TEXT, SEARCH_RESULT):
        text = block.get("Text") if content == TEXT else " ".join(
            str(block.get(k) or "") for k in ("Title", "URL")).strip()
        if not isinstance(text, str) or not text.strip():
            return
        if kind == "user":
            batch.events.append(Event(sid, uid, "user", "text", text, ts=ts))
            titled = state.setdefault("titled", [])  # the conversations whose first prompt was seen (bounded)
            if sid not in titled:
                state["titled"] = [*titled, sid][-TITLED_KEPT:]
                batch.session(sid).offer_title(text.strip().splitlines()[0][:80], "first-prompt")
        elif kind == "agent":
            batch.events.append(Event(sid, uid, "assistant", "text", text, ts=ts))
        elif kind == "system":
            batch.events.append(Event(sid, uid, "system", "text", text, ts=ts, meta={"injected": True}))
        else:  # a notice, or a tool row's text
            batch.events.append(Event(sid, uid, "system", "meta", text, ts=ts, meta={"type": kind}))
    elif content == THINKING:
        if isinstance(block.get("Thinking"), str) and block["Thinking"].strip():
            batch.events.append(Event(sid, uid, "assistant", "thinking", block["Thinking"], ts=ts))
    elif content == REDACTED:
        return  # encrypted reasoning: no text to keep
    elif content in (TOOL_USE, SERVER_TOOL_USE):
        name = block.get("ToolName") if isinstance(block.get("ToolName"), str) else None
        call_id = str(block.get("ID") or uid)
        tool_input = block.get("ToolInput")
        batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                  render_call(name, tool_input, _CALL_KEYS), ts=ts, tool_name=name,
                                  tool_input=tool_input, tool_call_id=call_id))
    elif content in (TOOL_RESULT, SEARCH_RESULTS):
        call_id = str(block.get("ToolUseID") or uid)
        batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result",
                                  _result_text(block.get("ToolResult")), ts=ts, tool_call_id=call_id,
                                  is_error=block.get("ToolError") is True))
    else:
        batch.problems.append(Problem("unknown_type", line, f"content type={content!r}"))


def _result_text(blocks: Any, depth: int = 0) -> str:
    parts = []
    for block in blocks if isinstance(blocks, list) and depth < 8 else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("Text"), str) and block["Text"]:
            parts.append(block["Text"])
        elif isinstance(block.get("ToolResult"), list) and block["ToolResult"]:
            parts.append(_result_text(block["ToolResult"], depth + 1))
        elif block.get("Title") or block.get("URL"):
            parts.append(" ".join(str(block.get(k) or "") for k in ("Title", "URL")).strip())
    return "\n".join(p for p in parts if p)


def _json(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _user_text(user_data: Any) -> str:
    if isinstance(user_data, str):
        return user_data.strip()
    if isinstance(user_data, dict):
        for key in ("text", "Text", "content", "prompt", "message"):
            if isinstance(user_data.get(key), str) and user_data[key].strip():
                return user_data[key].strip()
    return ""


def _usage(raw: Any) -> tuple[Usage | None, str | None]:
    data = _json(raw)
    if not isinstance(data, dict):
        return None, None

    def count(name: str) -> int:
        value = data.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40 else 0

    model = data["model"] if isinstance(data.get("model"), str) and data["model"] else None
    cost = data.get("cost_usd")
    if not (isinstance(cost, int | float) and not isinstance(cost, bool) and 0 < cost < 1e9):
        cost = None
    usage = Usage(input=count("input_tokens"), output=count("output_tokens"),
                  cache_read=count("cache_read_input_tokens"), cache_write=count("cache_creation_input_tokens"),
                  cost=float(cost) if cost is not None else None)
    return (usage if any(usage.as_dict().values()) else None), model
