"""JetBrains Junie CLI (``junie``): ``$JUNIE_HOME/sessions/session-<yymmdd-hhmmss-xxxx>/events.jsonl``
(default ``~/.junie``).

Format facts and their sources: ``fixtures/junie/SOURCE.md``. In short:

- ``events.jsonl`` is appended, one event a line, each ``{kind, timestampMs, ...}``. Top-level kinds carry
  the user's side (``UserPromptEvent`` with ``requestId``, ``prompt`` and the shown ``presentablePrompt``;
  answers to Junie's questions; history commits and drops), titles, system notices, task starts and
  failures. ``SessionA2uxEvent`` wraps the agent's side: ``{event: {state, agentEvent: {kind, stepId,
  agent, ...}}}``.
- Agent blocks (``*BlockUpdatedEvent``) are replacements, not deltas: each carries the whole current
  content of its ``stepId`` and a later line for the same step supersedes it (the bank keeps the last,
  ``revise``). The answer is the ``ResultBlockUpdatedEvent`` (``<!-- ANSWER -->`` prefix dropped);
  ``cancelled`` marks a turn the user stopped.
- ``event.state`` is the live signal: ``IN_PROGRESS``, ``INPUT_REQUIRED``, ``COMPLETED``, ``FAILED``.
- ``agentEvent.agent`` names the agent a block belongs to: ``MainAgent``, or a ``CustomAgent`` (a
  subagent run in-process): those blocks make a child session ``<session>:<agent id>``.
- ``sessions/index.jsonl`` (the sidecar, appended: the last line of a session wins) gives ``projectDir``
  (the cwd), ``taskName`` (the title) and the creation time. ``state.json``, ``summary.json`` and
  ``transcript.md`` beside the log are snapshots and a rendering of it: not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Mark, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    json_objects,
    render_call,
)

NAME = "junie"

_CALL_KEYS = ("command", "path", "file", "query", "task", "name", "text")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # $JUNIE_HOME when set (hooks run in it; third-party launchers set it), else <home>/.junie on every OS
    # (a JVM's user.home). A relative value is relative to Junie's own cwd: the home stands in for it.
    override = (env.get("JUNIE_HOME") or "").strip()
    if override:
        path = Path(override).expanduser()
        return [path if path.is_absolute() else home / path]
    return [home / ".junie"]


def _index_of(path: PurePath) -> PurePath:
    return path.parent.parent / "index.jsonl"


SOURCES = (SourceSpec("sessions/*/events.jsonl", "jsonl", sidecar=_index_of),)

# The npm package installs a shell shim that execs a JVM launcher named junie.
PROCESSES = ("junie",)

# Top-level kinds known and carrying nothing for a transcript (cost snapshots, bookkeeping).
SKIPPED = frozenset({"SessionCostTrajectorySnapshotEvent", "UserMessagesCommittedToHistory"})
# Agent events known and skipped: progress lines, state snapshots (the blob is Junie's own memory),
# plans and patches (their content is in the file-change blocks).
AGENT_SKIPPED = frozenset({"AgentCurrentStatusUpdatedEvent", "AgentStateUpdatedEvent", "AgentPatchCreatedEvent",
                           "AgentPlanUpdatedEvent"})
# Tool-like blocks: kind -> the tool name they stand for.
TOOL_BLOCKS = {"ToolBlockUpdatedEvent": "tool", "TerminalBlockUpdatedEvent": "terminal",
               "ViewFilesBlockUpdatedEvent": "view_files", "FileChangesBlockUpdatedEvent": "file_changes",
               "McpBlockUpdatedEvent": "mcp"}
_TURN = {"IN_PROGRESS": "open", "INPUT_REQUIRED": "open", "COMPLETED": "complete", "FAILED": "failed"}
_ANSWER = "<!-- ANSWER -->"


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state, revise=True)  # a block is rewritten by later lines of its step
        self.sid = ref.path.parent.name
        self.line = 0
        self.last: Event | None = None  # the latest assistant-side event, for the usage that follows it

    def patch(self, sid: str | None = None) -> SessionPatch:
        return self.batch.session(sid or self.sid)

    def emit(self, sid: str, uid: str, ts: str | None, **fields: Any) -> Event:
        event = Event(sid, uid, ts=ts, **fields)
        self.batch.events.append(event)
        if event.role != "user":
            self.last = event
        return event

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    _index(reader, ref.sidecar)  # each call: Junie renames a task in the index as it goes
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            _event(reader, record, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line,
                                                 f"event of unexpected shape: {describe_error(exc)}"))
    return reader.batch


def _index(reader: _Reader, sidecar: bytes | None) -> None:
    """The session's last line in ``sessions/index.jsonl``: cwd, title, creation time."""
    entry: dict[str, Any] | None = None
    for line in (sidecar or b"").splitlines():
        if reader.sid.encode() not in line:
            continue
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # the index is Junie's, and may be mid-append: the log is the source
        if isinstance(data, dict) and data.get("sessionId") == reader.sid:
            entry = data
    if entry is None:
        return
    patch = reader.patch()
    if isinstance(entry.get("projectDir"), str) and entry["projectDir"]:
        patch.cwd = entry["projectDir"]
    patch.started_at = iso_ms(entry.get("createdAt"))
    patch.updated_at = iso_ms(entry.get("updatedAt"))
    if isinstance(entry.get("taskName"), str) and entry["taskName"].strip():
        patch.offer_title(entry["taskName"].strip(), "ai")


def _event(reader: _Reader, record: Record, data: dict) -> None:
    kind = data.get("kind")
    ts = iso_ms(data.get("timestampMs"))
    sid = reader.sid
    if ts:
        reader.patch().updated_at = ts
    if kind == "UserPromptEvent":
        text = data.get("presentablePrompt") or data.get("prompt") or ""
        rid = data.get("requestId")
        uid = f"prompt:{rid}" if rid else record_uid(record.raw)
        meta = {"delivery": data["delivery"]} if data.get("delivery") not in (None, "Delivered") else None
        if str(text).strip():
            reader.emit(sid, uid, ts, role="user", kind="text", text=str(text), meta=meta)
            if not reader.state.get("titled"):
                reader.state["titled"] = True
                reader.patch().offer_title(_first_line(str(text)), "first-prompt")
        reader.patch().note(last_turn="open")
    elif kind == "UserResponseEvent":
        reader.emit(sid, record_uid(record.raw), ts, role="user", kind="text", text=str(data.get("prompt") or ""))
    elif kind == "UserAsyncResponseEvent":
        answers = [f"{e.get('question') or ''}\n{e.get('answer') or ''}".strip()
                   for e in data.get("entries") or [] if isinstance(e, dict)]
        reader.emit(sid, record_uid(record.raw), ts, role="user", kind="text", text="\n\n".join(a for a in answers if a))
    elif kind in ("UserMessagesDroppedFromHistory", "UserMessagesFailedInHistory"):
        ids = tuple(f"prompt:{i}" for i in data.get("userMessageIds") or [] if isinstance(i, str))
        if ids:  # they stay in the bank, marked: Junie no longer sends them to the model
            reader.batch.marks.append(Mark(sid, {"dropped_from_history": kind}, uids=ids))
    elif kind == "SessionTitleSetEvent" and isinstance(data.get("name"), str) and data["name"].strip():
        reader.patch().offer_title(data["name"].strip(), "custom")
    elif kind == "SystemMessageEvent":
        text = "\n\n".join(str(v) for v in (data.get("text"), data.get("details")) if v)
        reader.emit(sid, record_uid(record.raw), ts, role="system", kind="meta", text=text,
                    meta={"level": data.get("level")} if data.get("level") else None)
    elif kind == "AgentTaskFailedEvent":
        reader.emit(sid, record_uid(record.raw), ts, role="system", kind="meta", text="Agent task failed")
        reader.patch().note(last_turn="failed")
    elif kind == "TaskStartedEvent":
        reader.patch().note(last_turn="open", task=data.get("taskId"))
    elif kind == "SessionA2uxEvent":
        _agent(reader, record, data, ts)
    elif kind not in SKIPPED:
        reader.drift(f"event kind={kind!r}")


def _agent(reader: _Reader, record: Record, data: dict, ts: str | None) -> None:
    wrapper = data.get("event") if isinstance(data.get("event"), dict) else {}
    event = wrapper.get("agentEvent") if isinstance(wrapper.get("agentEvent"), dict) else {}
    kind = event.get("kind")
    sid = _owner(reader, event.get("agent"))
    if sid != reader.sid and ts:  # a subagent's times are its blocks'
        child = reader.patch(sid)
        child.started_at, child.updated_at = child.started_at or ts, ts
    step = event.get("stepId")
    uid = f"step:{step}" if isinstance(step, str) and step else record_uid(record.raw)
    live = wrapper.get("state")
    if isinstance(live, str):
        reader.patch(sid).note(junie_state=live)
        if live in _TURN and kind != "LlmResponseMetadataEvent":
            reader.patch(sid).note(last_turn=_TURN[live])
    if kind in ("MarkdownBlockUpdatedEvent", "ResultBlockUpdatedEvent"):
        text = event.get("text") if kind == "MarkdownBlockUpdatedEvent" else event.get("result")
        text = str(text or "").removeprefix(_ANSWER).strip()
        meta = {"block": "result"} if kind == "ResultBlockUpdatedEvent" else None
        if kind == "ResultBlockUpdatedEvent" and event.get("cancelled"):
            meta, text = {"block": "result", "cancelled": True}, text if text != "Empty" else ""
            reader.patch(sid).note(last_turn="aborted")
        if text:  # a block is opened empty, then filled
            reader.emit(sid, uid, ts, role="assistant", kind="text", text=text, meta=meta, model=reader.state.get("model"))
    elif kind in TOOL_BLOCKS:
        _tool(reader, sid, uid, ts, TOOL_BLOCKS[kind], event)
    elif kind == "AskAsyncRequestUpdatedEvent":
        request = event.get("request") if isinstance(event.get("request"), dict) else {}
        options = [o.get("title") for o in request.get("options") or [] if isinstance(o, dict) and o.get("title")]
        text = str(request.get("question") or "") + "".join(f"\n- {o}" for o in options)
        reader.emit(sid, uid, ts, role="assistant", kind="text", text=text, meta={"question": True})
    elif kind == "SubagentSpawnedEvent":
        tool_input = {"name": event.get("name"), "task": event.get("task")}
        if isinstance(event.get("name"), str) and isinstance(event.get("task"), str):  # the child's prompt, until it runs
            reader.state.setdefault("spawns", {})[event["name"]] = [uid, event["task"], ts]
        reader.emit(sid, uid, ts, role="assistant", kind="tool_call", tool_name="subagent", tool_input=tool_input,
                    tool_call_id=uid, text=render_call("subagent", tool_input, _CALL_KEYS))
    elif kind == "CustomAgentBlockUpdatedEvent":
        reader.patch(sid).note(subagent_status=event.get("status"))
    elif kind == "LlmResponseMetadataEvent":
        _usage(reader, sid, event.get("modelUsage"))
    elif kind == "AgentTaskNameUpdatedEvent":
        name = event.get("name") or event.get("taskName")
        if isinstance(name, str) and name.strip():
            reader.patch(sid).offer_title(name.strip(), "ai")
    elif kind == "AgentFailureEvent":
        reader.emit(sid, uid if step else record_uid(record.raw), ts, role="system", kind="meta",
                    text=str(event.get("message") or "Agent failure"), meta={"error": event.get("errorCode")})
        reader.patch(sid).note(last_turn="failed")
    elif kind not in AGENT_SKIPPED:
        reader.drift(f"agent event kind={kind!r}")


def _owner(reader: _Reader, agent: Any) -> str:
    """The session a block belongs to: the main one, or a child session for a custom agent (subagent)."""
    if not isinstance(agent, dict) or agent.get("kind") != "CustomAgent" or not agent.get("id"):
        return reader.sid
    child = f"{reader.sid}:{agent['id']}"
    patch = reader.patch(child)
    if patch.parent_native_id is None:
        patch.parent_native_id, patch.parent_kind = reader.sid, "subagent"
        patch.cwd = reader.patch().cwd
        if isinstance(agent.get("name"), str) and agent["name"]:
            patch.offer_title(agent["name"], "summary")
    spawn = reader.state.get("spawns", {}).pop(agent.get("name"), None)
    if spawn:  # the custom agent of that name takes the task its spawn gave (the spawn names no agent id)
        reader.emit(child, f"task:{spawn[0]}", spawn[2], role="user", kind="text", text=spawn[1])
        patch.note(spawned_by=spawn[0])
    return child


def _tool(reader: _Reader, sid: str, uid: str, ts: str | None, name: str, event: dict) -> None:
    """A tool block: the call, and its output once the block has one (both rewritten with the block)."""
    if name == "terminal":
        tool_input: Any = {"command": event.get("command")}
        output = event.get("presentableOutput") or event.get("output")
    elif name == "view_files":
        tool_input = {"path": ", ".join(str(f.get("relativePath")) for f in event.get("files") or []
                                        if isinstance(f, dict))}
        output = None
    elif name == "file_changes":
        changes = [c for c in event.get("changes") or [] if isinstance(c, dict)]
        tool_input = {"path": ", ".join(str(c.get("afterRelativePath") or c.get("beforeRelativePath"))
                                        for c in changes)}
        output = None
    else:
        tool_input = {k: event[k] for k in ("toolName", "name", "text", "arguments") if event.get(k) is not None}
        name = str(event.get("toolName") or event.get("name") or name)
        output = event.get("details") or event.get("result")
    reader.emit(sid, uid, ts, role="assistant", kind="tool_call", tool_name=name, tool_input=tool_input,
                tool_call_id=uid, text=render_call(name, tool_input, _CALL_KEYS))
    status = event.get("status")
    if output:
        reader.emit(sid, f"{uid}:result", ts, role="tool", kind="tool_result", text=str(output), tool_call_id=uid,
                    tool_name=name, is_error=status in ("FAILED", "ERROR"))


def _usage(reader: _Reader, sid: str, entries: Any) -> None:
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("model"), str) and entry["model"]:
            reader.state["model"] = reader.patch(sid).model = entry["model"]
        usage = Usage(input=_int(entry.get("inputTokens")), output=_int(entry.get("outputTokens")),
                      cache_read=_int(entry.get("cacheInputTokens")), cache_write=_int(entry.get("cacheCreateTokens")))
        if reader.last is not None and reader.last.session == sid and reader.last.usage is None:
            reader.last.usage = usage  # the model call that made the block just before it
        if isinstance(entry.get("cost"), int | float) and not isinstance(entry["cost"], bool):
            reader.state["cost"] = round(reader.state.get("cost", 0) + entry["cost"], 6)
            reader.patch().note(cost_usd=reader.state["cost"])  # what Junie recorded, subagents included


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:79] + "…"
