"""Omnigent: every conversation in one SQLite database, ``$OMNIGENT_DATA_DIR/chat.db`` (default ``~/.omnigent``).

Format facts and their sources: ``fixtures/omnigent/SOURCE.md`` (Omnigent's own models and migrations, 0.19.1).
In short:

- ``conversations`` (``workspace_id``, ``id``, ``created_at``/``updated_at`` in epoch seconds, ``title``,
  ``parent_conversation_id``, ``root_conversation_id``, ``session_overrides`` JSON with ``model_override``), paired
  1-to-1 with ``omnigent_conversation_metadata`` (``kind`` 1 default / 2 sub-agent, ``sub_agent_name``,
  ``workspace``: the folder, ``git_branch``, ``session_usage``: the session's token and cost totals). Between
  2026-07-10 and 2026-07-20 the model override lived in ``agent_configuration`` instead (read when present).
- ``conversation_items``: one item a row (``id``, ``position``, ``type``, ``created_at``, ``data`` JSON,
  ``search_text``), appended; a compaction rewrites the table's rows for the conversation. ``type`` is a
  SMALLINT code since 2026-07-07 (``ITEM_TYPES``), its name before.
- Ids are 16-byte BLOBs since 2026-07-09 (read as bare lowercase hex, the form Omnigent shows), text before;
  ``session_usage`` is framed text (``0x00`` + codec ``0x00`` raw / ``0x01`` zstd + payload) or plain text.
- Items: ``message`` (``role``, ``content`` parts ``input_text``/``output_text``/``text``, ``is_meta``: text
  Omnigent injected, kept as such), ``function_call`` (``name``, ``arguments`` JSON text, ``call_id``),
  ``function_call_output`` (``call_id``, ``output``), ``reasoning`` (``summary``/``content`` texts),
  ``compaction`` (``summary``), ``error``, ``slash_command``, ``terminal_command``, ``routing_decision``,
  ``native_tool``, ``resource_event``. Another type is drift.
- Identity: an item's uid is its id, its place in the session its ``position``; a session's usage is one event
  a model, after every item, whose response id names the session and the model, revised as the totals grow
  (the bank counts the largest copy). A sub-agent's first user message is its parent's task (``system``). The database also holds
  Omnigent's accounts and tokens: only the tables above are queried.
"""

from __future__ import annotations

import contextlib
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
    iso_ms,
    json_objects,
    render_call,
)

NAME = "omnigent"
PROCESSES = ("omnigent",)
ITEM_TYPES = {1: "message", 2: "function_call", 3: "function_call_output", 4: "reasoning", 5: "error",
              6: "compaction", 7: "native_tool", 8: "resource_event", 9: "routing_decision", 10: "slash_command",
              11: "terminal_command"}
_CALL_KEYS = ("command", "cmd", "path", "file_path", "pattern", "query", "url", "prompt")
MAX_USAGE_BYTES = 1 << 20


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``_local_data_dir()``: ``$OMNIGENT_DATA_DIR``, else ``~/.omnigent``; the folders it had before its rename
    (``~/.omnigents``, ``~/.omniagents``) are moved there by the CLI's first run, and read until then."""
    if env.get("OMNIGENT_DATA_DIR"):
        return [Path(env["OMNIGENT_DATA_DIR"]).expanduser()]
    return [home / ".omnigent", home / ".omnigents", home / ".omniagents"]


def _hex(column: str) -> str:
    """An id as Omnigent shows it: a BLOB as bare lowercase hex, text as written."""
    return f"CASE WHEN typeof({column}) = 'blob' THEN lower(hex({column})) ELSE {column} END"


QUERIES = (
    SqliteQuery(
        "conversation",
        f"SELECT c.workspace_id, {_hex('c.id')} AS id, c.created_at, c.updated_at, c.title, "
        f"{_hex('c.parent_conversation_id')} AS parent_id, {_hex('c.root_conversation_id')} AS root_id, "
        "m.kind, m.sub_agent_name, m.workspace, m.git_branch, "
        "CASE WHEN typeof(m.session_usage) = 'blob' THEN 'hex:' || hex(m.session_usage) ELSE m.session_usage END "
        "AS session_usage FROM conversations c LEFT JOIN omnigent_conversation_metadata m "
        "ON m.workspace_id = c.workspace_id AND m.id = c.id WHERE c.updated_at >= :since ORDER BY c.updated_at",
        "updated_at", ordered=True),
    # Since 2026-07-20 (b7e4d2c9a1f3): the overrides on the conversation row.
    SqliteQuery(
        "overrides",
        f"SELECT c.workspace_id, {_hex('c.id')} AS id, c.updated_at, c.session_overrides FROM conversations c "
        "WHERE c.session_overrides IS NOT NULL AND c.updated_at >= :since ORDER BY c.updated_at",
        "updated_at", optional=True, ordered=True),
    # 2026-07-10 to 07-20 (bb2c3d4e5f6a): a table of their own, its ids as text.
    SqliteQuery(
        "agent_configuration",
        f"SELECT a.workspace_id, {_hex('a.conversation_id')} AS id, a.model_override, c.updated_at "
        "FROM agent_configuration a JOIN conversations c ON c.workspace_id = a.workspace_id "
        f"AND {_hex('c.id')} = lower(replace({_hex('a.conversation_id')}, '-', '')) "
        "WHERE a.model_override IS NOT NULL AND c.updated_at >= :since ORDER BY c.updated_at",
        "updated_at", optional=True, ordered=True),
    SqliteQuery(
        "item",
        f"SELECT i.rowid AS row_id, i.workspace_id, {_hex('i.conversation_id')} AS conversation_id, "
        f"{_hex('i.id')} AS id, i.position, i.type, i.created_at, i.data, i.search_text, m.kind AS conversation_kind "
        "FROM conversation_items i LEFT JOIN omnigent_conversation_metadata m ON m.workspace_id = i.workspace_id "
        "AND m.id = i.conversation_id WHERE i.rowid >= :since ORDER BY i.rowid",
        "row_id", ordered=True),
)
SOURCES = (SourceSpec("chat.db", "sqlite", "db", watch=False, queries=QUERIES),)


def _sid(row: dict, column: str = "id") -> str | None:
    """A conversation's native id: its id, prefixed by its workspace where that is not the default (0)."""
    value = row.get(column)
    if not isinstance(value, str) or not value:
        return None
    workspace = row.get("workspace_id")
    return value if workspace in (0, None, "0") else f"{workspace}:{value}"


def _seconds(value: Any) -> str | None:
    return iso_ms(value * 1000) if isinstance(value, int) and not isinstance(value, bool) else None


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state, revise=True)  # a compaction rewrites items; the usage totals grow
    for record, wrapper in json_objects(records, batch.problems):
        table, row = wrapper.get("table"), wrapper.get("row")
        if not isinstance(row, dict):
            batch.problems.append(Problem("malformed", record.line, "a row that is not an object"))
            continue
        try:
            if table == "conversation":
                _conversation(batch, row)
            elif table in ("overrides", "agent_configuration"):
                _model(batch, row)
            elif table == "item":
                _item(batch, record.line, row)
            else:
                batch.problems.append(Problem("unknown_type", record.line, f"table={table!r}"))
        except (AttributeError, KeyError, TypeError, ValueError, orjson.JSONDecodeError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"{table} row of unexpected shape: "
                                          f"{describe_error(exc)}"))
    batch.events.sort(key=lambda event: event.place or "")  # a new session's first write is kept in this order
    return batch


def _conversation(batch: Batch, row: dict) -> None:
    sid = _sid(row)
    if sid is None:
        raise ValueError("a conversation without an id")
    patch = batch.session(sid)
    patch.started_at, patch.updated_at = _seconds(row.get("created_at")), _seconds(row.get("updated_at"))
    if isinstance(row.get("workspace"), str) and row["workspace"]:
        patch.cwd = row["workspace"]
    if isinstance(row.get("title"), str) and row["title"].strip():
        patch.offer_title(row["title"].strip()[:200], "ai")
    elif isinstance(row.get("sub_agent_name"), str) and row["sub_agent_name"]:
        patch.offer_title(row["sub_agent_name"], "summary")
    parent = _sid(row, "parent_id")
    if parent and parent != sid:
        patch.parent_native_id = parent
        patch.parent_kind = "subagent" if row.get("kind") in (2, "2", "sub_agent") else "fork"
    if isinstance(row.get("git_branch"), str) and row["git_branch"]:
        patch.git = GitFacts(branch=row["git_branch"])
    if isinstance(row.get("sub_agent_name"), str) and row["sub_agent_name"]:
        patch.note(sub_agent=row["sub_agent_name"])
    _usage(batch, sid, row.get("session_usage"), _seconds(row.get("updated_at")))


def _model(batch: Batch, row: dict) -> None:
    sid = _sid(row)
    if sid is None:
        return
    model = row.get("model_override")
    if "session_overrides" in row:
        overrides = orjson.loads(row["session_overrides"]) if isinstance(row["session_overrides"], str) else None
        model = overrides.get("model_override") if isinstance(overrides, dict) else None
    if isinstance(model, str) and model:
        batch.session(sid).model = model


def _decoded(value: Any) -> str | None:
    """``CompressedText`` as the query hands it: plain text, or ``hex:`` and the stored bytes."""
    if not isinstance(value, str) or not value:
        return None
    if not value.startswith("hex:"):
        return value
    raw = bytes.fromhex(value[4:])
    if not raw or raw[0] != 0:
        return raw.decode("utf-8", "replace")
    if len(raw) < 2:
        raise ValueError("a truncated compression frame")
    if raw[1] == 0:
        return raw[2:].decode("utf-8", "replace")
    if raw[1] != 1:
        raise ValueError(f"compression codec {raw[1]}")
    import zstandard  # here: status imports every parser for its roots, and decompresses nothing

    try:
        return zstandard.ZstdDecompressor().decompress(raw[2:], max_output_size=MAX_USAGE_BYTES).decode(
            "utf-8", "replace")
    except zstandard.ZstdError as exc:
        raise ValueError("a zstd frame that does not decode") from exc


def _usage(batch: Batch, sid: str, raw: Any, ts: str | None) -> None:
    text = _decoded(raw)
    totals = orjson.loads(text) if text and text.strip() else None
    if not isinstance(totals, dict):
        return

    def count(source: dict, name: str) -> int:
        value = source.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    def cost(source: dict) -> float | None:
        value = source.get("total_cost_usd")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    by_model = totals.get("by_model") if isinstance(totals.get("by_model"), dict) else {}
    parts = {m: v for m, v in by_model.items() if isinstance(v, dict)} or {str(batch.session(sid).model or ""): totals}
    for model, source in sorted(parts.items()):
        usage = Usage(input=count(source, "input_tokens"), output=count(source, "output_tokens"), cost=cost(source),
                      response=f"omnigent:{sid}:{model}")
        if usage.input or usage.output or usage.cost:
            batch.events.append(Event(sid, f"usage:{model}", "system", "meta", f"session totals{f' ({model})' if model else ''}",
                                      ts=ts, model=model or None, usage=usage, meta={"record": "session_usage"},
                                      place="~"))  # after every item


def _parts(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
            texts.append(part["text"])
        elif isinstance(part, dict) and isinstance(part.get("type"), str) and "image" in part["type"]:
            texts.append("[image]")
    return "\n".join(texts)


def _item(batch: Batch, line: int, row: dict) -> None:
    sid = _sid(row, "conversation_id")
    uid = row.get("id")
    if sid is None or not isinstance(uid, str) or not uid:
        raise ValueError("an item without its conversation or id")
    kind = row.get("type")
    kind = ITEM_TYPES.get(kind, kind) if isinstance(kind, int) else kind
    data = orjson.loads(row["data"]) if isinstance(row.get("data"), str) else row.get("data")
    if not isinstance(data, dict):
        raise ValueError("item data that is not an object")
    ts = _seconds(row.get("created_at"))
    search = row.get("search_text") if isinstance(row.get("search_text"), str) else ""
    meta = {"record": kind, "position": row.get("position")}
    # The agent's name: ``agent`` in Python, written as ``model`` (its serialization alias) on these item kinds.
    agent = next((data[k] for k in ("agent", "model") if isinstance(data.get(k), str) and data[k]), None) \
        if kind in ("message", "function_call", "reasoning", "slash_command") else None
    if agent:
        meta["agent"] = agent

    position = row.get("position")
    place = f"{position:012d}" if isinstance(position, int) and not isinstance(position, bool) and position >= 0 else None

    def add(role: str, event_kind: str, text: str, note: dict[str, Any] | None = None, **fields: Any) -> None:
        batch.events.append(Event(sid, uid, role, event_kind, text, ts=ts, meta={**meta, **(note or {})},  # type: ignore[arg-type]
                                  place=place, **fields))

    if kind == "message":
        text = _parts(data.get("content"))
        role = data.get("role")
        if role not in ("user", "assistant"):
            batch.problems.append(Problem("unknown_type", line, f"message role={role!r}"))
        elif data.get("is_meta"):  # skill instructions and other context Omnigent put in the user's turn
            add("system", "text", text, {"injected": True})
        elif role == "user" and position == 0 and row.get("conversation_kind") in (2, "2", "sub_agent"):
            add("system", "text", text, {"from_agent": True})  # a sub-agent's task, written by its parent
        elif text.strip():
            add(role, "text", text)
            if role == "user" and not batch.state.get(f"titled:{sid}") and len(batch.state) < 256:
                batch.state[f"titled:{sid}"] = True
                batch.session(sid).offer_title(text.strip().splitlines()[0][:80], "first-prompt")
    elif kind == "function_call":
        arguments: Any = data.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(orjson.JSONDecodeError):
                arguments = orjson.loads(arguments)
        name = data.get("name") if isinstance(data.get("name"), str) else None
        call_id = str(data.get("call_id") or uid)
        add("assistant", "tool_call", render_call(name, arguments, _CALL_KEYS), tool_name=name, tool_input=arguments,
            tool_call_id=call_id)
    elif kind == "function_call_output":
        output = data.get("output")
        text = output if isinstance(output, str) else orjson.dumps(output).decode() if output is not None else ""
        add("tool", "tool_result", text, tool_call_id=str(data.get("call_id") or ""))
    elif kind == "reasoning":
        texts = [p["text"] for key in ("summary", "content") for p in data.get(key) or []
                 if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"]]
        if texts:
            add("assistant", "thinking", "\n".join(texts))
    elif kind == "compaction":
        add("system", "compaction", str(data.get("summary") or ""))
    elif kind == "error":
        words = [str(data[k]) for k in ("title", "message", "cause", "remediation") if data.get(k)]
        add("system", "meta", "error: " + " — ".join(words) if words else "error", {"error": True})
    elif kind == "slash_command":
        said = f"/{data.get('name') or ''} {data.get('arguments') or ''}".strip()
        output = data.get("output") if isinstance(data.get("output"), str) else ""
        add("user", "meta", f"{said}\n\n{output}" if output else said)
    elif kind == "terminal_command":
        if data.get("kind") == "input":
            add("user", "meta", f"$ {data.get('input') or ''}")
        else:
            add("tool", "meta", "\n".join(str(data[k]) for k in ("stdout", "stderr") if data.get(k)))
    elif kind == "routing_decision":
        add("system", "meta", f"routed to {data.get('model') or '?'}: {data.get('rationale') or ''}".strip())
    elif kind in ("native_tool", "resource_event"):
        add("system", "meta", search or orjson.dumps(data).decode())
    else:
        batch.problems.append(Problem("unknown_type", line, f"item type={kind!r}"))
