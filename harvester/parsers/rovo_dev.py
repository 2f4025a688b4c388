"""Atlassian Rovo Dev CLI (``acli rovodev``, newer ``rovo``): ``~/.rovodev/sessions/<id>/`` (``~/.rovo``).

Format facts and their sources: ``fixtures/rovo_dev/SOURCE.md``. In short:

- A session is a folder named by its id (a UUID) under the sessions folder: ``session_context.json``, the
  whole conversation, rewritten as one JSON document, and ``metadata.json`` (title, workspace, fork
  parent), its sidecar. ``sessions.persistenceDir`` in ``config.yml`` moves the folder.
- ``session_context.json`` is ``{id, message_history, usage, timestamp?, initial_prompt?, ...}``; the
  history is pydantic-ai's serialized ``ModelMessage`` list: requests (``kind: "request"``, parts
  ``system-prompt``, ``user-prompt``, ``tool-return``, ``retry-prompt``, ...) and responses (``kind:
  "response"``, ``model_name``, ``usage``, parts ``text``, ``thinking``, ``tool-call``, ...). A part kind
  pydantic-ai does not define is drift.
- No ids on messages: a part's identity is its tool call id, else its own or its message's timestamp and
  its place in the message. ``/prune`` empties tool results in place and ``/clear`` drops the history, so
  the document can shrink: events stay, the last version of each wins (``revise``).
- Rovo Dev's own prompts (title generation, iteration counters, ``<system_reminder>`` blocks) are sent as
  user prompts: they are ``system`` events here, not the user's words.
- No turn-state is written: a history that ends with a request, or with tool calls, is a turn still open.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "rovo-dev"

_CALL_KEYS = ("command", "file_path", "path", "file_paths", "pattern", "query", "url", "issue_key")
_HOMES = (".rovo", ".rovodev")  # the newer `rovo` launcher's, then acli rovodev's


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # <home>/.rovodev (acli rovodev; %USERPROFILE% on Windows) and <home>/.rovo (the newer launcher), each
    # with its config.yml: sessions.persistenceDir moves that one's sessions. No variable of Rovo Dev's own.
    out = []
    for name in _HOMES:
        moved = _persistence_dir(home / name / "config.yml", home)
        if moved is not None:
            out.append(moved)
        out.append(home / name / "sessions")
    return out


def _persistence_dir(config: Path, home: Path) -> Path | None:
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None
    import yaml  # here: the registry imports this module for every command

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))  # scalars stay text
    except yaml.YAMLError:
        return None
    sessions = data.get("sessions") if isinstance(data, dict) else None
    value = sessions.get("persistenceDir") if isinstance(sessions, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    path = Path(value.strip().replace("~", str(home), 1) if value.strip().startswith("~") else value.strip())
    return path if path.is_absolute() else home / path


def _metadata_of(path: PurePath) -> PurePath:
    return path.with_name("metadata.json")


SOURCES = (SourceSpec("*/session_context.json", "json", sidecar=_metadata_of),)

# acli runs the Rovo Dev plugin binary; the IDE extension spawns it by name.
PROCESSES = ("atlassian_cli_rovodev", "rovodev", "rovo")

REQUEST_PARTS = frozenset({"system-prompt", "user-prompt", "tool-return", "builtin-tool-return", "retry-prompt",
                           "instruction", "tool-availability-delta"})
RESPONSE_PARTS = frozenset({"text", "thinking", "tool-call", "builtin-tool-call", "builtin-tool-return",
                            "compaction", "file", "speech"})
# Prompts Rovo Dev sends as the user's (ported by harbor's reader from Rovo Dev's own).
_INTERNAL = tuple(re.compile(p, re.S) for p in (
    r"^Based on these messages, generate a 2-4 word title that captures the main task:.*Respond with ONLY the title",
    r"^You are a helpful assistant that generates short, descriptive titles\.$",
    r"^Before you start working on the next task, please take a look at the workspace\.$",
    r"^You have used \d+ iterations\.$",
    r"^<system_reminder>.*</system_reminder>$",
))
_PARENT_KEYS = ("parent_session_id", "parentSessionId", "forked_from", "parent_id")
_CWD_KEYS = ("workspace_path", "workspacePath", "workspace", "cwd")


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch) -> None:
        self.batch = batch
        self.sid = ref.path.parent.name
        self.line = 1
        self.model: str | None = None
        self.calls: dict[str, str] = {}  # tool_call_id -> tool name
        self.drifted: set[str] = set()
        self.titled = False

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: str | None, **fields: Any) -> Event:
        event = Event(self.sid, uid, ts=ts, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:  # once per document, not once per message
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True, state=state)
    reader = _Reader(ref, batch)
    _metadata(reader, ref.sidecar)
    for record, data in json_objects(records, batch.problems):
        reader.line = record.line
        try:
            _document(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"document of unexpected shape: {describe_error(exc)}"))
    return batch


def _metadata(reader: _Reader, raw: bytes | None) -> None:
    if not raw:
        return
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return  # mid-write: the next rewrite of the session brings it again
    if not isinstance(data, dict):
        return
    patch = reader.patch
    cwd = next((data[k] for k in _CWD_KEYS if isinstance(data.get(k), str) and data[k]), None)
    if cwd:
        patch.cwd = cwd
    parent = next((data[k] for k in _PARENT_KEYS if isinstance(data.get(k), str) and data[k]), None)
    if parent and parent != reader.sid:
        patch.parent_native_id, patch.parent_kind = parent, "fork"
    if isinstance(data.get("title"), str) and data["title"].strip():
        patch.offer_title(data["title"].strip(), "ai")  # generated, or the user's /sessions rename: one field


def _document(reader: _Reader, data: dict) -> None:
    history = data.get("message_history")
    if not isinstance(history, list):
        reader.drift(f"session document without a message_history list (keys: {sorted(data)[:8]})")
        return
    patch = reader.patch
    if isinstance(data.get("id"), str) and data["id"] != reader.sid:
        patch.note(recorded_session_id=data["id"])
    stamp = data.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and stamp > 0:
        with contextlib.suppress(OverflowError, OSError, ValueError):  # epoch seconds (UNCONFIRMED)
            patch.updated_at = iso_text(datetime.fromtimestamp(stamp, UTC).isoformat())
    last = "complete"
    for n, message in enumerate(history):
        if not isinstance(message, dict):
            reader.batch.problems.append(Problem("malformed", reader.line, f"message_history[{n}] is not an object"))
            continue
        kind = message.get("kind")
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        ts = iso_text(message.get("timestamp"))
        if kind == "request":
            last = _request(reader, parts, n, ts) or last
        elif kind == "response":
            patch.started_at = patch.started_at or ts
            last = _response(reader, message, parts, n, ts)
        else:
            reader.drift(f"message kind={kind!r}")
        if message.get("state") in ("interrupted", "incomplete"):
            last = "aborted"
    if reader.model:
        patch.model = reader.model
    patch.note(last_turn=last, messages=len(history))


def _uid(part: dict, n: int, i: int, ts: str | None) -> str:
    """Stable across rewrites that append or prune: the part's own time, else its message's, else its place."""
    return f"{iso_text(part.get('timestamp')) or ts or n}:{i}:{part.get('part_kind')}"


def _request(reader: _Reader, parts: list[dict], n: int, ts: str | None) -> str | None:
    """The request's parts as events; the turn state it leaves (open after a prompt or results)."""
    turn = None
    for i, part in enumerate(parts):
        kind = part.get("part_kind")
        when = iso_text(part.get("timestamp")) or ts
        reader.patch.started_at = reader.patch.started_at or when  # an older request has no time of its own
        if kind == "user-prompt":
            text = _content(part.get("content"))
            if any(p.search(text.strip()) for p in _INTERNAL):
                reader.emit(_uid(part, n, i, ts), when, role="system", kind="meta", text=text, meta={"internal": True})
                continue
            if text.strip():
                reader.emit(_uid(part, n, i, ts), when, role="user", kind="text", text=text)
                turn = "open"
                if not reader.titled:
                    reader.titled = True
                    reader.patch.offer_title(_first_line(text), "first-prompt")
        elif kind in ("tool-return", "builtin-tool-return", "retry-prompt"):
            call_id = str(part.get("tool_call_id") or _uid(part, n, i, ts))
            name = part.get("tool_name") or reader.calls.get(call_id)
            if kind == "retry-prompt" and not part.get("tool_name"):
                reader.emit(_uid(part, n, i, ts), when, role="system", kind="meta", text=_content(part.get("content")),
                            meta={"retry": True})
                continue
            reader.emit(f"result:{call_id}", when, role="tool", kind="tool_result", text=_content(part.get("content")),
                        tool_call_id=call_id, tool_name=name, is_error=kind == "retry-prompt")
            turn = "open"
        elif kind not in REQUEST_PARTS:
            reader.drift(f"request part_kind={kind!r}")
        # system-prompt, instruction, tool-availability-delta: Rovo Dev's own instructions, every session
    return turn


def _response(reader: _Reader, message: dict, parts: list[dict], n: int, ts: str | None) -> str:
    if isinstance(message.get("model_name"), str) and message["model_name"]:
        reader.model = message["model_name"]
    last: Event | None = None
    calls = False
    for i, part in enumerate(parts):
        kind = part.get("part_kind")
        uid = _uid(part, n, i, ts)
        if kind == "text" and _content(part.get("content")).strip():
            last = reader.emit(uid, ts, role="assistant", kind="text", text=_content(part.get("content")),
                               model=reader.model)
        elif kind == "thinking" and _content(part.get("content")).strip():
            last = reader.emit(uid, ts, role="assistant", kind="thinking", text=_content(part.get("content")),
                               model=reader.model)
        elif kind in ("tool-call", "builtin-tool-call"):
            calls = True
            call_id = str(part.get("tool_call_id") or uid)
            name = str(part.get("tool_name") or "tool")
            args: Any = part.get("args")
            with contextlib.suppress(orjson.JSONDecodeError):
                args = orjson.loads(args) if isinstance(args, str) and args.strip() else args
            reader.calls[call_id] = name
            last = reader.emit(f"call:{call_id}", ts, role="assistant", kind="tool_call", tool_name=name,
                               tool_input=args, tool_call_id=call_id, text=render_call(name, args, _CALL_KEYS),
                               model=reader.model)
        elif kind == "builtin-tool-return":
            call_id = str(part.get("tool_call_id") or uid)
            last = reader.emit(f"result:{call_id}", ts, role="tool", kind="tool_result", tool_call_id=call_id,
                               text=_content(part.get("content")), tool_name=part.get("tool_name"))
        elif kind == "compaction":
            last = reader.emit(uid, ts, role="system", kind="compaction", text=_content(part.get("content")))
        elif kind not in RESPONSE_PARTS:
            reader.drift(f"response part_kind={kind!r}")
    usage = _usage(message.get("usage"))
    if usage is not None and last is not None:
        last.usage = usage
    return "open" if calls else "complete"


def _usage(raw: Any) -> Usage | None:
    """pydantic-ai's RequestUsage (input/output/cache_read/cache_write tokens), or the older Usage
    (request_tokens/response_tokens)."""
    if not isinstance(raw, dict):
        return None
    usage = Usage(input=_int(raw.get("input_tokens", raw.get("request_tokens"))),
                  output=_int(raw.get("output_tokens", raw.get("response_tokens"))),
                  cache_read=_int(raw.get("cache_read_tokens")), cache_write=_int(raw.get("cache_write_tokens")))
    return usage if usage.as_dict() else None


def _content(value: Any) -> str:
    """A part's content: text, or a user prompt's list of text and media, or a tool's JSON value."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and item.get("kind") == "text-content":
                out.append(str(item.get("content") or ""))
            elif isinstance(item, dict):
                out.append(f"[{item.get('kind') or 'attachment'}]")
        return "\n".join(out)
    try:
        return orjson.dumps(value, default=str).decode()
    except orjson.JSONEncodeError:
        return str(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:79] + "…"
