"""Kimi CLI (MoonshotAI ``kimi-cli``, Python): ``$KIMI_SHARE_DIR`` (default ``~/.kimi``).

Format facts and their sources: ``fixtures/kimi/SOURCE.md``. In short:

- ``sessions/<md5(work dir)>/<session id>/wire.jsonl``: the event log, append-only. Line 1 is
  ``{"type": "metadata", "protocol_version"}``; every other line ``{"timestamp" (epoch s), "message":
  {"type", "payload"}}``, one wire message each (``kimi_cli/wire/types.py``; streamed parts merged
  before they are written). ``TurnBegin`` holds the prompt and is written before the model is asked;
  ``TurnEnd`` closes the turn (absent when the turn was interrupted).
- ``context.jsonl`` beside it is the model's context (rotated on compaction): not read, the wire has
  the same messages with times. ``state.json`` (rewritten) holds the title and the archived flag: a
  source of facts of its own.
- ``subagents/<agent id>/wire.jsonl``: a subagent's own wire (the parent's log repeats its events
  inside ``SubagentEvent``, skipped there).
- cwd: the folder is the md5 of the work dir (``<kaos>_<md5>`` off the local machine); ``kimi.json`` in
  the share dir lists the work dirs, and is every wire's sidecar.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    json_objects,
    render_call,
)

NAME = "kimi"

# The CLI renames its process at start (cli/__init__.py init_process_name: setproctitle "Kimi Code"); a
# web session runs in "kimi-code-worker" (web/runner/worker.py). The console scripts, before the rename.
PROCESSES = ("Kimi Code", "kimi-code-worker", "kimi", "kimi-cli")

_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "prompt", "description")
# Wire messages with nothing for a transcript: step and UI bookkeeping, hooks, MCP loading, approvals
# (the tool call and its result say what happened), status without token usage, streamed call deltas.
BOOKKEEPING = frozenset({
    "StepBegin", "StepRetry", "HookTriggered", "HookResolved", "MCPLoadingBegin", "MCPLoadingEnd",
    "StatusUpdate", "Notification", "ApprovalResponse", "ApprovalRequestResolved", "ApprovalRequest",
    "ToolCallPart", "ToolCallRequest", "QuestionRequest", "HookRequest", "PlanDisplay", "BtwBegin", "BtwEnd",
    "CompactionBegin",
})


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # kimi_cli/share.py get_share_dir: $KIMI_SHARE_DIR, else Path.home() / ".kimi" on every OS.
    override = (env.get("KIMI_SHARE_DIR") or "").strip()
    return [Path(override).expanduser()] if override else [home / ".kimi"]


def _index_of_main(path: PurePath) -> PurePath:
    return path.parents[3] / "kimi.json"  # <share>/sessions/<md5>/<id>/wire.jsonl


def _index_of_subagent(path: PurePath) -> PurePath:
    return path.parents[5] / "kimi.json"  # <share>/sessions/<md5>/<id>/subagents/<agent>/wire.jsonl


SOURCES = (
    SourceSpec("sessions/*/*/wire.jsonl", "jsonl", "main", sidecar=_index_of_main),
    SourceSpec("sessions/*/*/subagents/*/wire.jsonl", "jsonl", "subagent", sidecar=_index_of_subagent),
    SourceSpec("sessions/*/*/state.json", "json", "state"),
)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref, self.state = ref, state
        self.batch = Batch(state=state)
        self.line = 0
        if ref.variant == "subagent":
            parent = ref.path.parents[2].name
            self.sid = f"{parent}:{ref.path.parent.name}"
            self.patch.parent_native_id, self.patch.parent_kind = parent, "subagent"
        else:
            self.sid = ref.path.parent.name
        self.folder = ref.path.parents[3 if ref.variant == "subagent" else 1].name

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: str | None, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, ts=ts, **fields))

    def turn(self, state: str) -> None:
        self.patch.note(last_turn=state)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.variant == "state":
        for _, data in json_objects(records, reader.batch.problems):
            _state(reader, data)
        return reader.batch
    if ref.sidecar and not state.get("cwd"):
        _cwd(reader, ref.sidecar)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        uid = record_uid(record.raw, context=state.get("prev"))
        state["prev"] = uid[2:14]
        try:
            _line(reader, data, uid)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line,
                                                 f"record of unexpected shape: {describe_error(exc)}"))
    return reader.batch


def _cwd(reader: _Reader, index: bytes) -> None:
    """The work dir whose md5 names the session's folder (metadata.py WorkDirMeta.sessions_dir)."""
    with contextlib.suppress(orjson.JSONDecodeError):
        data = orjson.loads(index)
        for entry in data.get("work_dirs") or [] if isinstance(data, dict) else []:
            path = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(path, str):
                continue
            import hashlib  # here, not at the top: the registry's import (status) needs none of it
            digest = hashlib.md5(path.encode("utf-8", "surrogatepass")).hexdigest()
            kaos = entry.get("kaos") or "local"
            if reader.folder == (digest if kaos == "local" else f"{kaos}_{digest}"):
                reader.patch.cwd = path
                reader.state["cwd"] = True
                if kaos != "local":
                    reader.patch.note(kaos=kaos)
                return


def _state(reader: _Reader, data: dict) -> None:
    """state.json (session_state.py SessionState): the title, and whether the user archived it. Nothing
    else: a session patched from it has it as its last source, whose mtime the liveness check reads."""
    title = data.get("custom_title")
    # Until title_generated it is the first prompt shortened (the wire has it whole); then an AI title, the
    # user's /title or the fallback after three failed attempts, which the file does not tell apart.
    if isinstance(title, str) and title.strip() and data.get("title_generated"):
        reader.patch.offer_title(title.strip().splitlines()[0][:80], "ai")
    if data.get("archived"):
        reader.patch.note(archived=True, archived_at=iso_ms((data.get("archived_at") or 0) * 1000))


def _line(reader: _Reader, data: dict, uid: str) -> None:
    if data.get("type") == "metadata":
        reader.patch.note(protocol_version=data.get("protocol_version"))
        return
    message = data["message"]
    kind, payload = message["type"], message.get("payload") or {}
    ts = iso_ms(data["timestamp"] * 1000) if isinstance(data.get("timestamp"), int | float) else None
    if ts and reader.patch.started_at is None and not reader.state.get("started"):
        reader.state["started"] = True
        reader.patch.started_at = ts
    if ts:
        reader.patch.updated_at = ts
    if kind in ("TurnBegin", "SteerInput"):
        text = _input_text(payload.get("user_input"))
        if reader.ref.variant == "subagent":  # the parent agent's task, not the user's words
            reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"from_agent": "parent", "type": kind})
        else:
            reader.emit(uid, ts, role="user", kind="text", text=text, meta={"steer": True} if kind == "SteerInput" else None)
            if text.strip() and not reader.state.get("titled"):
                reader.state["titled"] = True
                reader.patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")
        reader.turn("open")
    elif kind == "TurnEnd":
        reader.turn("complete")
    elif kind == "StepInterrupted":
        reader.emit(uid, ts, role="system", kind="meta", text="[step interrupted]", meta={"type": kind})
        reader.turn("aborted")
    elif kind == "ContentPart":
        _content(reader, payload, uid, ts)
    elif kind == "ToolCall":
        function = payload.get("function") or {}
        name, arguments = str(function.get("name") or "?"), function.get("arguments")
        tool_input: Any = arguments
        if isinstance(arguments, str):
            with contextlib.suppress(orjson.JSONDecodeError):
                tool_input = orjson.loads(arguments) if arguments else None
        call_id = str(payload.get("id") or uid)
        reader.emit(f"call:{call_id}", ts, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
                    tool_name=name, tool_input=tool_input, tool_call_id=call_id)
        reader.state.setdefault("tools", {})[call_id] = name
        reader.state["tools"] = dict(list(reader.state["tools"].items())[-64:])  # results follow their calls
    elif kind == "ToolResult":
        call_id = str(payload.get("tool_call_id") or uid)
        value = payload.get("return_value") or {}
        reader.emit(f"result:{call_id}", ts, role="tool", kind="tool_result", text=_result_text(value),
                    tool_name=(reader.state.get("tools") or {}).get(call_id), tool_call_id=call_id,
                    is_error=bool(value.get("is_error")))
    elif kind == "CompactionEnd":
        reader.emit(uid, ts, role="system", kind="compaction", text="[context compacted]")
    elif kind == "StatusUpdate" and isinstance(payload.get("token_usage"), dict):
        _token_usage(reader, payload, uid, ts)
    elif kind == "SubagentEvent":
        pass  # the subagent's own wire.jsonl holds the same events (subagents/store.py wire_path)
    elif kind not in BOOKKEEPING:
        reader.batch.problems.append(Problem("unknown_type", reader.line, f"wire message type={kind!r}"))


def _token_usage(reader: _Reader, payload: dict, uid: str, ts: str | None) -> None:
    """A model response's usage (soul/kimisoul.py sends the step's ``TokenUsage`` after each response, with the
    response's id), on the response's last event; on an event of its own where this read holds none of it (an
    earlier read committed the response's parts)."""
    raw = payload["token_usage"]

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    message_id = payload.get("message_id")
    usage = Usage(input=count("input_other"), output=count("output"), cache_read=count("input_cache_read"),
                  cache_write=count("input_cache_creation"),
                  response=message_id if isinstance(message_id, str) and message_id else None)
    if not usage.as_dict():
        return
    for event in reversed(reader.batch.events):
        if event.usage is not None or event.role == "user":
            break  # the response before, or the prompt: this one's parts are not in this read
        if event.role == "assistant":
            event.usage = usage
            return
    reader.emit(uid, ts, role="system", kind="meta", text="model call", usage=usage)


def _content(reader: _Reader, payload: dict, uid: str, ts: str | None) -> None:
    part = payload.get("type")
    if part == "text":
        reader.emit(uid, ts, role="assistant", kind="text", text=str(payload.get("text") or ""))
    elif part == "think":
        reader.emit(uid, ts, role="assistant", kind="thinking", text=str(payload.get("think") or ""))
    elif part in ("image_url", "audio_url", "video_url"):
        reader.emit(uid, ts, role="assistant", kind="text", text=f"[{part}]")
    else:
        reader.batch.problems.append(Problem("unknown_type", reader.line, f"content part type={part!r}"))


def _input_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(_part_text(p) for p in value or [] if isinstance(p, dict))


def _part_text(part: dict) -> str:
    return str(part.get("text") or "") if part.get("type") == "text" else f"[{part.get('type')}]"


def _result_text(value: dict) -> str:
    """The tool's output (text, or content parts), after its message to the model when it has one."""
    output = value.get("output")
    text = output if isinstance(output, str) else "\n".join(_part_text(p) for p in output or [] if isinstance(p, dict))
    message = value.get("message")
    return f"{message}\n{text}" if isinstance(message, str) and message and message not in text else text
