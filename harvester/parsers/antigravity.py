"""Antigravity CLI (``agy``): ``~/.gemini/antigravity-cli/brain/<conversation id>/.system_generated/logs/transcript.jsonl``.

Format facts and their sources: ``fixtures/antigravity/SOURCE.md``. agy is closed source: every fact
comes from third-party readers, none from its own code. In short:

- ``transcript.jsonl`` holds one step per line, appended: ``{step_index, source: USER_EXPLICIT | MODEL |
  SYSTEM, type, status, created_at, content?, thinking?, tool_calls?}``. ``USER_INPUT`` wraps what the
  user typed in ``<USER_REQUEST>`` and appends agy's own blocks (``<ADDITIONAL_METADATA>``,
  ``<USER_SETTINGS_CHANGE>``: system, never the user's words). ``PLANNER_RESPONSE`` is the model's turn
  (text, thinking, and the tool calls it makes); the MODEL steps after it (``VIEW_FILE``,
  ``RUN_COMMAND``...) are those calls' results, in order: steps carry no call id, so a result is paired
  with the oldest call still open. ``INVOKE_SUBAGENT`` names the child conversation it started.
- The session id is the brain folder name (the id ``agy --conversation`` takes). The workspace (cwd)
  comes from ``history.jsonl`` at the root (``{display, timestamp, workspace, conversationId}``, one row
  per prompt), read as this source's sidecar; failing that, from a cwd the steps name.
- Not read: ``conversations/<id>.db`` (SQLite of protobuf steps; adds token usage and parent
  references), ``.pb`` files (encrypted), ``brain/<id>/*.md`` artifacts (documents the agent wrote, not
  the conversation), ``transcript_full.jsonl`` (the same steps again).
- Kept apart from Gemini CLI: this root is ``~/.gemini/antigravity-cli``, whose patterns never reach
  ``~/.gemini/tmp``, and Gemini CLI's patterns (``tmp/*/chats/...``) never reach this folder.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, record_uid
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_objects, render_call

NAME = "antigravity"


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("CommandLine", "command", "AbsolutePath", "TargetFile", "path", "Query", "query", "Url")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # No override of agy's own is known (the *_DIR / *_ROOT variables seen are third-party readers');
    # the folder sits in the home directory on every OS (UNCONFIRMED for Windows).
    return [home / ".gemini" / "antigravity-cli"]


def _history(path: PurePath) -> PurePath:
    """``<root>/history.jsonl`` of ``<root>/brain/<id>/.system_generated/logs/transcript.jsonl``."""
    return path.parents[4] / "history.jsonl"


SOURCES = (SourceSpec("brain/*/.system_generated/logs/transcript.jsonl", "jsonl", sidecar=_history),)

PROCESSES = ("agy", "antigravity")

# SYSTEM steps with nothing to say: a content-less marker of where prior history was loaded.
BOOKKEEPING = frozenset({"CONVERSATION_HISTORY"})
# MODEL steps that are a tool's result (the tool named by the step when no call names it).
TOOL_STEPS = frozenset({
    "VIEW_FILE", "VIEW_FILE_OUTLINE", "VIEW_CODE_ITEM", "LIST_DIRECTORY", "FIND", "GREP_SEARCH", "CODEBASE_SEARCH",
    "RUN_COMMAND", "COMMAND_STATUS", "SEND_COMMAND_INPUT", "EDIT_FILE", "CODE_ACTION", "WRITE_TO_FILE",
    "BROWSER_PREVIEW", "READ_URL_CONTENT", "SEARCH_WEB", "MCP_TOOL", "GENERIC", "INVOKE_SUBAGENT",
})
SYSTEM_STEPS = frozenset({"EPHEMERAL_MESSAGE", "SYSTEM_MESSAGE"})
COMPACTION_STEPS = frozenset({"CHECKPOINT"})
DONE = "DONE"
FAILED = frozenset({"ERROR", "FAILED", "CANCELED", "CANCELLED"})
_REQUEST = re.compile(r"<USER_REQUEST>(.*?)</USER_REQUEST>", re.S)
_BLOCK = re.compile(r"<(ADDITIONAL_METADATA|USER_SETTINGS_CHANGE)>(.*?)</\1>", re.S)
_MODEL = re.compile(r"setting `Model Selection` from .+? to (.+?)\. ")
_EXIT = re.compile(r"exited with code (-?\d+)")
_CHILD = re.compile(r'"conversationId"\s*:\s*"([0-9a-fA-F-]{36})"')


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        # A step written again as it finishes (same step_index) replaces the first version.
        self.batch = Batch(state=state, revise=True)
        self.sid = ref.path.parents[2].name
        self.line = 0

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: Any, **fields: Any) -> Event:
        event = Event(self.sid, uid, ts=ts if isinstance(ts, str) else None, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def turn(self, state: str) -> None:
        self.patch.note(last_turn=state)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    _workspace(reader)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        index = data.get("step_index")
        uid = f"step:{index}" if isinstance(index, int) else record_uid(record.raw, context=state.get("prev"))
        state["prev"] = uid
        try:
            _step(reader, data, uid)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"step of unexpected shape: {describe_error(exc)}"))
    reader.batch.session(reader.sid)  # every read names its session, even one with nothing new
    return reader.batch


def _workspace(reader: _Reader) -> None:
    """The workspace of this conversation's rows in history.jsonl (the last one: agy may be resumed in
    another directory, but a session's identity is where it started, which the bank keeps)."""
    if reader.state.get("cwd") or not reader.ref.sidecar:
        return
    workspace = None
    for line in reader.ref.sidecar.splitlines():
        if reader.sid.encode() not in line:
            continue
        with contextlib.suppress(orjson.JSONDecodeError):
            row = orjson.loads(line)
            if isinstance(row, dict) and row.get("conversationId") == reader.sid and row.get("workspace"):
                workspace = str(row["workspace"])
                break  # the first prompt's workspace: where the conversation started
    if workspace:
        _set_cwd(reader, workspace)


def _set_cwd(reader: _Reader, cwd: str) -> None:
    if cwd and not reader.state.get("cwd"):
        reader.state["cwd"] = reader.patch.cwd = cwd


def _step(reader: _Reader, data: dict, uid: str) -> None:
    source, kind, ts = data.get("source"), data.get("type"), data.get("created_at")
    if isinstance(ts, str):
        reader.patch.updated_at = ts
        if not reader.state.get("started"):
            reader.state["started"] = reader.patch.started_at = ts
    if kind == "USER_INPUT" and source == "USER_EXPLICIT":
        _user(reader, data, uid, ts)
    elif kind == "USER_INPUT":  # a prompt the user did not type (a subagent's task, UNCONFIRMED)
        reader.emit(uid, ts, role="system", kind="text", text=str(data.get("content") or ""),
                    meta={"injected": True, "step_source": source})
        reader.turn("open")
    elif kind == "PLANNER_RESPONSE" or (kind is None and source == "MODEL"):
        _planner(reader, data, uid, ts)
    elif kind in TOOL_STEPS:
        _tool_step(reader, data, uid, ts, str(kind))
    elif kind in SYSTEM_STEPS:
        reader.emit(uid, ts, role="system", kind="text", text=str(data.get("content") or ""),
                    meta={"injected": True, "step_type": kind})
    elif kind in COMPACTION_STEPS:
        reader.emit(uid, ts, role="system", kind="compaction", text=str(data.get("content") or "[checkpoint]"),
                    meta={"step_type": kind})
    elif kind not in BOOKKEEPING:
        reader.drift(f"step source={source!r} type={kind!r}")
        if source == "MODEL":  # most likely a new tool: its output is kept rather than lost
            _tool_step(reader, data, uid, ts, str(kind))


def _user(reader: _Reader, data: dict, uid: str, ts: Any) -> None:
    content = str(data.get("content") or "")
    requests = _REQUEST.findall(content)
    typed = "\n".join(r.strip() for r in requests) if requests else _BLOCK.sub("", content).strip()
    injected = [f"<{name}>{body}</{name}>" for name, body in _BLOCK.findall(content)]
    for name, body in _BLOCK.findall(content):
        if name == "USER_SETTINGS_CHANGE" and (model := _MODEL.search(body)):
            reader.state["model"] = reader.patch.model = model.group(1).strip()
        elif name == "ADDITIONAL_METADATA":  # some builds put {"cwd": ...} here
            with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
                _set_cwd(reader, str(orjson.loads(body.strip()).get("cwd") or ""))
    if injected:
        reader.emit(f"{uid}:ctx", ts, role="system", kind="text", text="\n".join(injected),
                    meta={"injected": True})
    if typed:
        reader.emit(uid, ts, role="user", kind="text", text=typed)
        if not reader.state.get("titled"):
            reader.state["titled"] = True
            first = typed.splitlines()[0]
            reader.patch.offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")
    reader.state["open"] = []  # a new prompt: calls left unanswered stay so
    reader.turn("open")


def _planner(reader: _Reader, data: dict, uid: str, ts: Any) -> None:
    model = reader.state.get("model")
    if isinstance(data.get("thinking"), str) and data["thinking"].strip():
        reader.emit(f"{uid}:thinking", ts, role="assistant", kind="thinking", text=data["thinking"].strip(),
                    model=model)
    text = str(data.get("content") or "").strip()
    if text:
        reader.emit(uid, ts, role="assistant", kind="text", text=text, model=model)
    calls = [c for c in data.get("tool_calls") or [] if isinstance(c, dict)]
    for n, call in enumerate(calls):
        _call(reader, call, f"{uid}:call:{n}", ts)
    reader.turn("open" if calls else "complete" if text else "open")


def _call(reader: _Reader, call: dict, uid: str, ts: Any) -> str:
    """A call as a tool_call event; it waits in the state for the step that answers it."""
    name = call.get("name") or call.get("tool_name") or "tool"
    call_id = str(call.get("id") or uid)
    args = call.get("args", call.get("arguments"))
    tool_input = _decode_args(args)
    reader.emit(uid, ts, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS), tool_name=name,
                tool_input=tool_input, tool_call_id=call_id, model=reader.state.get("model"))
    if isinstance(tool_input, dict):  # a command's working directory names the workspace
        for key in ("Cwd", "cwd"):
            if isinstance(tool_input.get(key), str) and tool_input[key].startswith("/"):
                _set_cwd(reader, tool_input[key])
    reader.state.setdefault("open", []).append([call_id, name])
    return call_id


def _tool_step(reader: _Reader, data: dict, uid: str, ts: Any, kind: str) -> None:
    own = [c for c in data.get("tool_calls") or [] if isinstance(c, dict)]
    for n, call in enumerate(own):  # some builds put the call on the result step itself
        _call(reader, call, f"{uid}:call:{n}", ts)
    pending = reader.state.setdefault("open", [])
    call_id, name = pending.pop(0) if pending else (None, kind.lower())
    content = str(data.get("content") or "")
    status = data.get("status")
    code = _EXIT.search(content) if kind in ("RUN_COMMAND", "GENERIC") else None
    failed = status in FAILED or (code is not None and code.group(1) != "0")
    meta = {"step_type": kind, **({"status": status} if status not in (None, DONE) else {})}
    reader.emit(uid, ts, role="tool", kind="tool_result", text=content or f"[{status or kind}]",
                tool_name=name, tool_call_id=call_id, is_error=failed, meta=meta)
    if kind == "INVOKE_SUBAGENT":
        for child in _CHILD.findall(content):
            patch = reader.batch.session(child)
            patch.parent_native_id, patch.parent_kind = reader.sid, "subagent"
            if reader.state.get("cwd"):
                patch.cwd = reader.state["cwd"]  # a subagent works in its parent's workspace
    reader.turn("aborted" if status in ("CANCELED", "CANCELLED") else "open")


def _decode_args(args: Any) -> Any:
    """Arguments as an object. agy writes them as a JSON string, or an object whose values are each
    JSON-encoded themselves (quotes included): every layer is decoded once."""
    if isinstance(args, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            args = orjson.loads(args)
    if isinstance(args, dict):
        out = {}
        for key, value in args.items():
            if isinstance(value, str) and value[:1] in ('"', "[", "{"):
                with contextlib.suppress(orjson.JSONDecodeError):
                    value = orjson.loads(value)
            out[key] = value
        return out
    return args


