"""Piebald (the desktop app): one SQLite database, ``app.db`` in the app's data folder.

Format facts and their sources: ``fixtures/piebald/SOURCE.md`` (closed source: a third-party reader's facts). In
short: ``chats`` (one row a chat: ``title``, ``created_at``/``updated_at``, ``is_deleted``, ``message_count``,
``current_directory``, ``worktree_path``, ``branch_name``, ``project_id`` -> ``projects.directory``/``name``);
``messages`` (``parent_chat_id``, ``parent_message_id``: a tree, ``enabled``, ``role``, ``model``, token counts,
``finish_reason``, ``error``); ``message_parts`` (``part_type`` ``text`` or ``tool_call``, ``part_index``); a text
part's words are ``message_node_text`` rows under ``message_content_nodes`` (``is_thinking`` in
``message_part_text``); a tool call is ``message_part_tool_call`` (``provider_tool_use_id``, ``tool_name``,
``tool_input`` JSON, ``tool_result``/``tool_error``, ``tool_state``, ``sub_agent_chat_id``: the chat a subagent ran
in).

Order of reading: one query returns each chat whose own time or any of its messages' times moved since the last
read, with its whole message tree as JSON built in SQL (parts and their text nodes inline), so a chat is always
read whole in one row: events are revised in place (``Batch.revise``). A message edited into a second branch
makes the tree fork: the path through the last enabled child at each fork is the chat, every other branch a
session of its own (``<chat>-<first message id>``, a fork of the branch it leaves).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, Usage
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

NAME = "piebald"
PROCESSES = ("piebald", "Piebald")
_CALL_KEYS = ("command", "file_path", "path", "pattern", "query", "url", "prompt", "description")


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """The app's data folder (no variable of Piebald's own is known to move it)."""
    if platform == "darwin":
        return [home / "Library" / "Application Support" / "piebald"]
    if platform.startswith("win"):
        return [Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "piebald"]
    return [Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "piebald"]


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


_TEXT = ("(SELECT group_concat(content, '') FROM (SELECT mnt.content FROM message_content_nodes mcn "
         "JOIN message_node_text mnt ON mnt.node_id = mcn.id WHERE mcn.parent_text_part_id = mp.id "
         "AND mcn.node_type = 'text' ORDER BY mcn.node_index, mcn.id))")
_PARTS = ("(SELECT json_group_array(json(part)) FROM (SELECT json_object('id', mp.id, 'index', mp.part_index, "
          f"'type', CAST(mp.part_type AS TEXT), 'thinking', t.is_thinking, 'text', CAST({_TEXT} AS TEXT), "
          "'call_id', CAST(tc.provider_tool_use_id AS TEXT), 'tool', CAST(tc.tool_name AS TEXT), "
          "'input', CAST(tc.tool_input AS TEXT), 'result', CAST(tc.tool_result AS TEXT), "
          "'error', CAST(tc.tool_error AS TEXT), 'state', CAST(tc.tool_state AS TEXT), 'has_call', tc.message_part_id "
          "IS NOT NULL, 'subagent', tc.sub_agent_chat_id) AS part FROM message_parts mp "
          "LEFT JOIN message_part_text t ON t.message_part_id = mp.id "
          "LEFT JOIN message_part_tool_call tc ON tc.message_part_id = mp.id "
          "WHERE mp.parent_chat_message_id = m.id ORDER BY mp.part_index, mp.id))")
# Text columns are cast: a BLOB where text belongs would stop json_object, and with it the whole read.
_MESSAGES = ("(SELECT json_group_array(json(message)) FROM (SELECT json_object('id', m.id, 'parent', "
             "m.parent_message_id, 'enabled', m.enabled, 'role', CAST(m.role AS TEXT), 'model', CAST(m.model AS TEXT), "
             "'created_at', CAST(m.created_at AS TEXT), 'input', CAST(m.input_tokens AS INTEGER), "
             "'output', CAST(m.output_tokens AS INTEGER), 'reasoning', CAST(m.reasoning_tokens AS INTEGER), "
             "'cache_read', CAST(m.cache_read_tokens AS INTEGER), 'cache_write', CAST(m.cache_write_tokens AS INTEGER), "
             "'status', CAST(m.status AS TEXT), 'finish', CAST(m.finish_reason AS TEXT), 'error', CAST(m.error AS TEXT), "
             f"'parts', json({_PARTS})) AS message FROM messages m WHERE m.parent_chat_id = c.id "
             "ORDER BY m.created_at, m.id))")
# A chat's mark: its own time or its latest message's, whichever is later (a tool result lands in a message).
_MARK = ("max(COALESCE(c.updated_at, c.created_at), COALESCE((SELECT max(COALESCE(m.updated_at, m.created_at)) "
         "FROM messages m WHERE m.parent_chat_id = c.id), ''))")
QUERIES = (
    SqliteQuery("chat", f"SELECT * FROM (SELECT c.id, c.title, c.created_at, {_MARK} AS mark, c.current_directory, "
                "c.worktree_path, c.branch_name, p.directory AS project_directory, p.name AS project_name, "
                f"{_MESSAGES} AS messages FROM chats c LEFT JOIN projects p ON p.id = c.project_id "
                "WHERE COALESCE(c.is_deleted, 0) = 0 AND c.message_count > 0) WHERE mark >= :since "
                "ORDER BY mark, id", "mark", ordered=True),
)
SOURCES = (SourceSpec("app.db", "sqlite", "db", watch=False, queries=QUERIES),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True)  # a chat is read whole whenever it moves: the last reading of an event wins
    for record, data in json_objects(records, batch.problems):
        table, row = data.get("table"), data.get("row")
        if table != "chat":
            batch.problems.append(Problem("unknown_type", record.line, f"table={table!r}"))
            continue
        if not isinstance(row, dict) or not isinstance(row.get("id"), int) or isinstance(row.get("id"), bool):
            batch.problems.append(Problem("malformed", record.line, "chat row without an id"))
            continue
        try:
            _chat(batch, record.line, row)
        except (AttributeError, KeyError, TypeError, ValueError, orjson.JSONDecodeError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"chat of unexpected shape: {describe_error(exc)}"))
    return batch


def _chat(batch: Batch, line: int, row: dict) -> None:
    chat = str(row["id"])
    messages = orjson.loads(row.get("messages") or "[]")
    if not isinstance(messages, list):
        raise ValueError("messages is not a list")
    messages = [m for m in messages if isinstance(m, dict) and isinstance(m.get("id"), int)]
    cwd = next((row[k] for k in ("worktree_path", "current_directory", "project_directory")
                if isinstance(row.get(k), str) and row[k]), None)
    for number, (sid, path, parent) in enumerate(_branches(chat, messages)):
        patch = batch.session(sid)
        patch.cwd = cwd
        if number == 0:
            patch.started_at = iso_text(row.get("created_at"))
            if isinstance(row.get("title"), str) and row["title"].strip():
                patch.offer_title(row["title"].strip(), "ai")
        else:
            patch.parent_native_id, patch.parent_kind = parent, "fork"
        if isinstance(row.get("branch_name"), str) and row["branch_name"]:
            patch.note(branch=row["branch_name"])
        if isinstance(row.get("project_name"), str) and row["project_name"]:
            patch.note(project=row["project_name"])
        for message in path:
            _message(batch, line, sid, message)
        times = [t for t in (iso_text(m.get("created_at")) for m in path) if t]
        if times:
            patch.started_at = patch.started_at or times[0]
        patch.updated_at = iso_text(row.get("mark")) if number == 0 else (times[-1] if times else None)


def _branches(chat: str, messages: list[dict]) -> list[tuple[str, list[dict], str | None]]:
    """(session id, its messages in order, the session it forks from): the chat's main path first."""
    ids = {m["id"] for m in messages}
    children: dict[int, list[dict]] = {}
    roots = []
    for message in messages:
        parent = message.get("parent")
        if isinstance(parent, int) and parent in ids:
            children.setdefault(parent, []).append(message)
        else:
            roots.append(message)
    if len(roots) != 1:  # no single tree (rows without parents): the chat in the order written
        return [(chat, messages, None)]
    out: list[tuple[str, list[dict], str | None]] = []
    pending = [(chat, roots[0], None)]
    while pending:
        sid, current, parent = pending.pop(0)
        path = [current]
        while kids := children.get(current["id"]):
            main = next((k for k in reversed(kids) if k.get("enabled")), kids[-1])
            pending += [(f"{chat}-{k['id']}", k, sid) for k in kids if k is not main]
            current = main
            path.append(current)
        out.append((sid, path, parent))
    return out


def _message(batch: Batch, line: int, sid: str, message: dict) -> None:
    role, uid = message.get("role"), f"m{message['id']}"
    ts = iso_text(message.get("created_at"))
    model = message.get("model") if isinstance(message.get("model"), str) and message["model"] else None
    if role not in ("user", "assistant", "system"):
        batch.problems.append(Problem("unknown_type", line, f"message role={role!r}"))
        return
    if model:
        batch.session(sid).model = model
    parts = message.get("parts") if isinstance(message.get("parts"), list) else []
    usage = _usage(message) if role == "assistant" else None
    for part in parts:  # in the order written: thinking, text and calls interleave
        if not isinstance(part, dict):
            continue
        kind, pid = part.get("type"), f"{uid}:{part.get('id')}"
        if kind == "tool_call":
            _call(batch, line, sid, pid, part, ts, model, usage)
            usage = None
        elif kind != "text":
            batch.problems.append(Problem("unknown_type", line, f"part_type={kind!r}"))
        elif isinstance(part.get("text"), str) and part["text"].strip():
            text = part["text"].strip()
            if part.get("thinking"):
                batch.events.append(Event(sid, pid, "assistant", "thinking", text, ts=ts, model=model))
                continue
            batch.events.append(Event(sid, pid, role, "text", text, ts=ts, model=model if role == "assistant" else None,
                                      usage=usage))
            usage = None
            if role == "user" and batch.session(sid).title is None:
                batch.session(sid).offer_title(text.splitlines()[0][:80], "first-prompt")
    error = message.get("error")
    if isinstance(error, str) and error.strip():
        batch.events.append(Event(sid, f"{uid}:error", "system", "meta", error, ts=ts, meta={"error": True}))


def _call(batch: Batch, line: int, sid: str, uid: str, part: dict, ts: str | None, model: str | None,
          usage: Usage | None) -> None:
    if not part.get("has_call", True):  # the part's own row is missing: damage, not a call to invent
        batch.problems.append(Problem("malformed", line, f"tool_call part {part.get('id')!r} without its call row"))
        return
    call_id = str(part.get("call_id") or f"{uid}:{part.get('id')}")
    name = part.get("tool") if isinstance(part.get("tool"), str) else None
    arguments: Any = part.get("input")
    if isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments)
    meta = None
    if isinstance(part.get("subagent"), int) and not isinstance(part.get("subagent"), bool):
        child = batch.session(str(part["subagent"]))
        child.parent_native_id, child.parent_kind = sid, "subagent"
        meta = {"subagent_chat": part["subagent"]}
    batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS),
                              ts=ts, tool_name=name, tool_input=arguments, tool_call_id=call_id, model=model,
                              usage=usage, meta=meta))
    result, error, state = part.get("result"), part.get("error"), part.get("state")
    if isinstance(result, str):
        text, failed = result, False
    elif isinstance(error, str):
        text, failed = error, True
    elif isinstance(state, str) and state not in ("", "completed", "pending", "running"):
        text, failed = f"[{state}]", state in ("failed", "error", "cancelled", "rejected")
    else:
        return  # not answered yet: the result comes with a later reading of the chat
    batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", text, ts=ts, tool_name=name,
                              tool_call_id=call_id, is_error=failed))


def _usage(message: dict) -> Usage | None:
    def count(name: str) -> int:
        value = message.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    found = Usage(input=count("input"), output=count("output"), cache_read=count("cache_read"),
                  cache_write=count("cache_write"), reasoning=count("reasoning"), response=f"m{message['id']}")
    return found if any(found.as_dict().values()) else None
