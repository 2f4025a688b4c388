"""Factory Droid (``droid``): ``~/.factory/sessions/<cwd slug>/<session id>.jsonl`` + ``<id>.settings.json``.

Format facts and their sources: ``fixtures/droid/SOURCE.md`` (Droid is closed source: the facts come from
the real CLI run here, the zod schemas and writers in its published binary, and third-party readers). In
short:

- The home is ``$FACTORY_HOME_OVERRIDE`` else ``$HOME`` (``%USERPROFILE%``); the data folder ``.factory``
  (``.factory-dev`` for ``FACTORY_ENV=development`` builds). Transcripts sit in ``sessions/<slug>/``
  (the cwd with every ``/`` made ``-``), side questions ("btw") in ``sessions/btw/``, the oldest flat in
  ``sessions/``.
- A transcript is JSONL, appended under a lock (``<id>.jsonl.events.lock``); its first line, the
  ``session_start`` summary, is rewritten (the whole file written again) when the title changes. Lines:
  ``session_start`` (id, title, cwd, ``parent``, ``callingSessionId``/``callingToolUseId``,
  ``forkedAtMessageId``), ``message`` (``{id, parentId, timestamp, message: {role, content[]}}``, Anthropic
  blocks: text, thinking, redacted_thinking, tool_use, tool_result, image), ``agent_turn_outcome`` (a
  turn ended: ``turnId`` is its prompt's id, ``reason``), ``compaction_state`` (a summary replacing older
  messages), ``todo_state`` (the todo list).
- ``visibility``: ``llm_only`` messages are context Droid injects (system reminders), ``user_only`` ones
  are shown and never sent (notices), a ``hookEventName`` marks a hook's message: all ``system``, never
  the user's words. Tool results come back in ``user`` messages.
- ``<id>.settings.json`` (rewritten whole) holds the session's model, autonomy and token totals: the
  transcript's sidecar. Messages carry no usage of their own.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "droid"
# The native binary is named droid (npm's loader, the install script's ~/.local/bin/droid alike).
PROCESSES = ("droid",)
# A tool call's line shows the first of these arguments that holds text (Droid's Read, Execute, Grep...).
_CALL_KEYS = ("command", "file_path", "pattern", "path", "query", "url", "description", "prompt")
# Data folder per build environment (its WN table): production, development.
DATA_DIRS = {"development": ".factory-dev"}


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    base = env.get("FACTORY_HOME_OVERRIDE") or (env.get("USERPROFILE") if platform == "win32" else None)
    folder = DATA_DIRS.get((env.get("FACTORY_ENV") or "").strip().lower(), ".factory")
    return [Path(base).expanduser() / folder if base else home / folder]


def _settings_of(path: PurePath) -> PurePath:
    return path.with_name(f"{path.stem}.settings.json")


SOURCES = (
    SourceSpec("sessions/*.jsonl", "jsonl", sidecar=_settings_of),  # before the per-cwd folders
    SourceSpec("sessions/*/*.jsonl", "jsonl", sidecar=_settings_of),  # <slug>/ and btw/
)

# Record types that carry nothing for a transcript beyond what is read from them below.
START_KEYS = frozenset({
    "type", "id", "title", "sessionTitle", "isSessionTitleManuallySet", "sessionTitleAutoStage", "owner",
    "organizationId", "parent", "callingSessionId", "callingToolUseId", "version", "cwd", "lastCwd", "hostId",
    "forkedAtMessageId", "decompSessionType", "decompMissionId", "tags", "archivedAt",
})
_NOTED = ("owner", "hostId", "decompSessionType", "decompMissionId", "lastCwd", "forkedAtMessageId",
          "sessionTitleAutoStage")
_SETTINGS_NOTED = ("autonomyLevel", "autonomyMode", "interactionMode", "reasoningEffort", "providerLock")
_FAILED = frozenset({"error", "model_provider_unavailable"})


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state)
        self.sid = ref.path.stem  # the file is named by the session id
        self.line = 0
        self.raw = b""  # the record being read (a message without an id is keyed by it)

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, role: Any, kind: Any, text: str, ts: str | None, **fields: Any) -> Event:
        event = Event(self.sid, uid, role, kind, text, ts=ts, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.sidecar:
        with contextlib.suppress(orjson.JSONDecodeError):  # caught mid-rewrite: the next read has it
            settings = orjson.loads(ref.sidecar)
            if isinstance(settings, dict):
                _settings(reader, settings)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line, reader.raw = record.line, record.raw
        kind = data.get("type")
        handler = RECORDS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            reader.drift(f"type={kind!r}")
            continue
        try:
            handler(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line,
                                                 f"{kind} record of unexpected shape: {describe_error(exc)}"))
    return reader.batch


def _settings(reader: _Reader, data: dict) -> None:
    """The session's settings document: its model (a BYOK id ``custom:<name>-<n>`` included) and totals."""
    if isinstance(data.get("model"), str) and data["model"]:
        reader.patch.model = data["model"]
    facts: dict[str, Any] = {k: data[k] for k in _SETTINGS_NOTED if data.get(k) not in (None, "")}
    totals = data.get("inclusiveTokenUsage") or data.get("tokenUsage")
    if isinstance(totals, dict):
        usage = _usage(totals)
        if usage is not None:
            facts["token_totals"] = usage.as_dict()
    if facts:
        reader.patch.note(**facts)


def _session_start(reader: _Reader, data: dict) -> None:
    patch = reader.patch
    if isinstance(data.get("id"), str) and data["id"] and data["id"] != reader.sid:
        patch.note(recorded_session_id=data["id"])
    for key in sorted(data.keys() - START_KEYS):
        reader.drift(f"session_start key={key!r}")
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd:
        patch.cwd = cwd
    title = data.get("title") or data.get("sessionTitle")
    if isinstance(title, str) and title.strip():
        # Droid's own title: the user's, one the model generated at a stage (sessionTitleAutoStage), else
        # the first prompt as Droid shortened it (still its title, over our own first-line fallback).
        source = ("custom" if data.get("isSessionTitleManuallySet") else
                  "ai" if data.get("sessionTitleAutoStage") else "summary")
        patch.offer_title(_first_line(title), source)
    calling = data.get("callingSessionId")
    parent = data.get("parent")
    if isinstance(calling, str) and calling:  # a subagent, started by a Task tool call of the caller
        patch.parent_native_id, patch.parent_kind = calling, "subagent"
        reader.state["subagent"] = True  # its prompts are the caller's words, not the user's
        if isinstance(data.get("callingToolUseId"), str):
            patch.note(parent_tool_call_id=data["callingToolUseId"])
    elif isinstance(parent, str) and parent:  # a fork (/fork, rewind, btw): a copy up to forkedAtMessageId
        patch.parent_native_id, patch.parent_kind = parent, "fork"
    facts = {k: data[k] for k in _NOTED if data.get(k) not in (None, "")}
    if isinstance(data.get("version"), int):
        facts["transcript_version"] = data["version"]
    if facts:
        patch.note(**facts)
    if isinstance(data.get("forkedAtMessageId"), str):
        reader.state["forked_at"] = data["forkedAtMessageId"]


def _message(reader: _Reader, data: dict) -> None:
    message = data["message"]
    # Droid's messages carry an id; the lines of a third-party reader's fixtures (cass) do not: those are
    # keyed by their bytes and their line (the file is appended to, its lines keep their numbers).
    role = message["role"]
    uid = str(data["id"]) if data.get("id") is not None else record_uid(reader.raw, context=f"L{reader.line}")
    ts = iso_text(data.get("timestamp"))
    if ts:  # the bank keeps the first started_at it is given: the first message's
        reader.patch.updated_at = ts
        reader.patch.started_at = reader.patch.started_at or ts
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    model = message.get("modelId") if isinstance(message.get("modelId"), str) else None
    if model:
        reader.patch.model = model
    meta: dict[str, Any] = {}
    if reader.state.get("forked_at") and not reader.state.get("past_fork"):
        meta["copied_from_parent"] = True  # the fork's copy of its parent's history
        reader.state["past_fork"] = uid == reader.state["forked_at"]
    visibility = message.get("visibility")
    injected = visibility == "llm_only" or (role == "user" and isinstance(message.get("hookEventName"), str))
    if visibility == "user_only" or message.get("hookEventName"):
        # Shown to the user only (a notice, a slash command's output) or a hook's message: Droid's own.
        text = "\n".join(_block_text(b) for b in blocks if isinstance(b, dict) and b.get("type") != "tool_result")
        if text.strip():
            extra = {"visibility": visibility, "hook": message.get("hookEventName")}
            reader.emit(uid, "system", "meta", text, ts, meta={**meta, **{k: v for k, v in extra.items() if v}})
        blocks = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    for n, block in enumerate(blocks):
        if not isinstance(block, dict):
            reader.batch.problems.append(Problem("malformed", reader.line, "content block is not an object"))
            continue
        kind = block.get("type")
        handler = BLOCKS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            reader.drift(f"content block type={kind!r}")
            continue
        sub = uid if n == 0 else f"{uid}:{n}"
        handler(reader, block, sub, role, ts, model, {**meta, **({"injected": True} if injected else {})})
    if blocks:  # a prompt, a call, a result: the turn goes on until agent_turn_outcome ends it
        reader.patch.note(last_turn="open")


def _text(reader: _Reader, block: dict, uid: str, role: str, ts: str | None, model: str | None,
          meta: dict) -> None:
    text = str(block.get("text") or "")
    if role == "assistant":
        reader.emit(uid, "assistant", "text", text, ts, model=model, meta=meta or None)
    elif meta.get("injected") or role == "system":
        reader.emit(uid, "system", "text", text, ts, meta={**meta, "injected": True})
    elif reader.state.get("subagent"):
        reader.emit(uid, "system", "text", text, ts, meta={**meta, "from_agent": "parent"})
    elif text.strip():
        reader.emit(uid, "user", "text", text, ts, meta=meta or None)
        if not reader.state.get("titled"):
            reader.state["titled"] = True
            reader.patch.offer_title(_first_line(text), "first-prompt")


def _thinking(reader: _Reader, block: dict, uid: str, role: str, ts: str | None, model: str | None,
              meta: dict) -> None:
    text = block.get("thinking") if block.get("type") == "thinking" else "[redacted thinking]"
    reader.emit(uid, "assistant", "thinking", str(text or ""), ts, model=model, meta=meta or None)


def _tool_use(reader: _Reader, block: dict, uid: str, role: str, ts: str | None, model: str | None,
              meta: dict) -> None:
    call_id, name, arguments = str(block["id"]), block.get("name"), block.get("input")
    reader.state.setdefault("tools", {})[call_id] = name
    if len(reader.state["tools"]) > 256:  # results follow their calls closely: keep the state small
        reader.state["tools"].pop(next(iter(reader.state["tools"])))
    reader.emit(f"call:{call_id}", "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS), ts,
                tool_name=name, tool_input=arguments, tool_call_id=call_id, model=model, meta=meta or None)


def _tool_result(reader: _Reader, block: dict, uid: str, role: str, ts: str | None, model: str | None,
                 meta: dict) -> None:
    call_id = str(block["tool_use_id"])
    content = block.get("content")
    text = content if isinstance(content, str) else "\n".join(_block_text(b) for b in content or [])
    reader.emit(f"result:{call_id}", "tool", "tool_result", text, ts, tool_call_id=call_id,
                tool_name=reader.state.get("tools", {}).get(call_id), is_error=block.get("is_error") is True,
                meta=meta or None)


def _image(reader: _Reader, block: dict, uid: str, role: str, ts: str | None, model: str | None,
           meta: dict) -> None:
    who = "assistant" if role == "assistant" else "system" if meta.get("injected") else "user"
    reader.emit(uid, who, "text", _block_text(block), ts, meta={**meta, "attachment": "image"})


def _turn_outcome(reader: _Reader, data: dict) -> None:
    """A turn ended (its prompt's id is ``turnId``): how, for liveness and for the reader."""
    reason = data.get("reason")
    reader.patch.note(last_turn="failed" if reason in _FAILED else "complete")
    if reason not in ("completed", None):
        reader.emit(f"outcome:{data.get('turnId')}", "system", "meta", f"turn ended: {reason}", None,
                    meta={"turn_outcome": reason, "result_kind": data.get("resultKind")})


def _compaction(reader: _Reader, data: dict) -> None:
    ts = iso_text(data.get("timestamp"))
    meta = {k: data[k] for k in ("summaryKind", "summaryTokens", "removedCount") if data.get(k) is not None}
    reader.emit(f"compaction:{data['id']}", "system", "compaction", str(data.get("summaryText") or ""), ts,
                meta=meta or None)


def _todos(reader: _Reader, data: dict) -> None:
    todos = data.get("todos")
    lines = []
    for todo in todos if isinstance(todos, list) else []:
        if isinstance(todo, dict):
            lines.append(f"[{todo.get('status') or ' '}] {todo.get('content') or todo.get('text') or ''}".rstrip())
    reader.emit(f"todo:{data['id']}", "system", "meta", "\n".join(lines) or "(todo list cleared)",
                iso_text(data.get("timestamp")), meta={"todo_state": True})


RecordHandler = Callable[[_Reader, dict], None]
RECORDS: dict[str, RecordHandler] = {
    "session_start": _session_start, "message": _message, "agent_turn_outcome": _turn_outcome,
    "compaction_state": _compaction, "todo_state": _todos,
}
BlockHandler = Callable[[_Reader, dict, str, str, "str | None", "str | None", dict], None]
BLOCKS: dict[str, BlockHandler] = {
    "text": _text, "thinking": _thinking, "redacted_thinking": _thinking, "tool_use": _tool_use,
    "tool_result": _tool_result, "image": _image,
}


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text") or "")
    if block.get("type") == "image":
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        return f"[image {source.get('media_type') or ''}]".replace(" ]", "]")
    return f"[{block.get('type')}]"


def _usage(totals: dict) -> Usage | None:
    usage = Usage(input=int(totals.get("inputTokens") or 0), output=int(totals.get("outputTokens") or 0),
                  cache_read=int(totals.get("cacheReadTokens") or 0),
                  cache_write=int(totals.get("cacheCreationTokens") or 0),
                  reasoning=int(totals.get("thinkingTokens") or 0))
    return usage if usage.as_dict() else None


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:79] + "…"
