"""OpenHands CLI (V1, on the OpenHands software-agent-sdk): ``~/.openhands/conversations/<hex id>/``.

Format facts and their sources: ``fixtures/openhands/SOURCE.md``. In short:

- A conversation is a folder: ``base_state.json`` (the conversation's state, REWRITTEN whole on every
  change: agent and LLM config, workspace, ``execution_status``, token stats per LLM response) and
  ``events/event-<index, 5+ digits>-<event id>.json``, one immutable JSON document per event, never
  rewritten (``openhands/sdk/conversation/persistence_const.py``, ``event_store.py``); the SDK before 1.0
  named them ``event-<index>.json`` and kept ``agent_finished``-style flags in ``base_state.json``.
- The source is ``base_state.json``; the event files are its related documents, in index order. Each
  change re-reads the conversation; event ids are the uids, so a re-read adds only new events.
- Events carry ``kind`` (the pydantic class name), ``id``, ``timestamp`` (naive local time, written by
  ``datetime.now()``), ``source`` (user / agent / environment). Kinds read: MessageEvent, ActionEvent,
  ObservationEvent, AgentErrorEvent, UserRejectObservation, Condensation(+Request, SummaryEvent),
  ConversationErrorEvent, PauseEvent; kinds that hold nothing for a transcript are skipped by name;
  any other kind is drift.
- Subagents of the ``task`` tool live in ``<conversation>/subagents/<hex id>/`` (same layout). A fork
  (the SDK's ``LocalConversation.fork``; the CLI has no fork command) is a sibling conversation whose first
  events are deep copies, ids and timestamps included, and nothing names its parent or says which came
  first: it reads as a conversation of its own (not linked; Harness.forks_copy_history would link the
  two by their shared first event, in either direction).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
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

NAME = "openhands"
# The CLI's console script runs as ``python .../bin/openhands``: its name is in the command line.
PROCESSES = ("openhands",)
# A tool call's line shows the first of these arguments that holds text: file_editor's path, terminal's command.
_CALL_KEYS = ("path", "command", "pattern", "query", "url", "prompt", "description")
# EVENT_NAME_RE of persistence_const.py: the index has at least five digits; sort by its value.
# event-<index>-<event id>.json since agent-sdk 1.0; event-<index>.json before (the early state.py). The id part
# is taken as any name (the SDK's ids are uuids; a reader's own fixtures name them otherwise).
_EVENT_FILE = re.compile(r"^event-(\d{5,})(?:-[A-Za-z0-9_-]+)?\.json$")
# Kinds with nothing for a transcript: the system prompt (tens of KB, the same every conversation), state
# updates (the same facts as base_state.json), hook runs, raw LLM logs and streaming tokens.
SKIPPED = frozenset({"SystemPromptEvent", "ConversationStateUpdateEvent", "HookExecutionEvent",
                     "LLMCompletionLogEvent", "TokenEvent", "StreamingDeltaEvent", "ACPToolCallEvent"})
# execution_status values (ConversationExecutionStatus) after which the agent waits for nothing.
_OPEN_STATUSES = frozenset({"running", "waiting_for_confirmation"})
_FAILED_STATUSES = frozenset({"error", "stuck"})


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """openhands_cli/locations.py: OPENHANDS_CONVERSATIONS_DIR, else OPENHANDS_PERSISTENCE_DIR/conversations,
    else ~/.openhands/conversations (expanduser: %USERPROFILE% on Windows)."""
    out = []
    if conversations := (env.get("OPENHANDS_CONVERSATIONS_DIR") or "").strip():
        out.append(Path(conversations).expanduser())
    if persistence := (env.get("OPENHANDS_PERSISTENCE_DIR") or "").strip():
        out.append(Path(persistence).expanduser() / "conversations")
    out.append(home / ".openhands" / "conversations")
    return out


def _events_of(path: PurePath) -> list[PurePath]:
    """A conversation's event files in index order (the lock file and anything else left out)."""
    folder = Path(path).parent / "events"
    try:
        names = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _EVENT_FILE.match(p.name))]
    except OSError:
        return []
    return [p for _, p in sorted(names)]


SOURCES = (
    SourceSpec("*/base_state.json", "json", related=_events_of),
    SourceSpec("*/subagents/*/base_state.json", "json", variant="subagent", related=_events_of),
)


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch) -> None:
        self.batch = batch
        self.session_id = ref.path.parent.name  # the folder: what `--resume` and the CLI's list name
        self.line = 1
        self.drifted: set[str] = set()
        self.model: str | None = None
        self.usage: dict[str, Usage] = {}  # per LLM response id, from base_state.json's stats
        self.calls: dict[str, str] = {}  # tool_call_id -> tool name
        self.last: str | None = None  # the kind of the last conversational event, for last_turn
        self.titled = False
        patch = self.patch
        if ref.variant == "subagent":  # <parent>/subagents/<child>/base_state.json
            patch.parent_native_id, patch.parent_kind = ref.path.parents[2].name, "subagent"

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.session_id)

    def event(self, uid: str, **fields: Any) -> Event:
        event = Event(self.session_id, uid, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    # Usage arrives in base_state.json after the event it belongs to: a re-read revises that event.
    batch = Batch(revise=True, state=state)
    reader = _Reader(ref, batch)
    status = None
    for record, data in json_objects(records, batch.problems):
        reader.line = record.line
        start = len(batch.events)
        try:
            if "kind" not in data:  # base_state.json (an event always names its kind)
                status = _base_state(reader, data)
            else:
                _event(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            del batch.events[start:]  # one odd event costs that event, not the conversation
            batch.problems.append(Problem("malformed", record.line, f"document of unexpected shape: "
                                                                    f"{describe_error(exc)}"))
    if reader.model:
        reader.patch.model = reader.model
    _last_turn(reader, status)
    return batch


def _base_state(reader: _Reader, data: dict) -> str | None:
    patch = reader.patch
    workspace = data.get("workspace")
    if isinstance(workspace, dict) and isinstance(workspace.get("working_dir"), str):
        patch.cwd = workspace["working_dir"]
    agent = data.get("agent") if isinstance(data.get("agent"), dict) else {}
    llm = agent.get("llm") if isinstance(agent.get("llm"), dict) else {}
    if isinstance(llm.get("model"), str) and llm["model"]:
        reader.model = llm["model"]
    if isinstance(data.get("id"), str):
        patch.note(conversation_id=data["id"])
    tags = data.get("tags")
    if isinstance(tags, dict) and isinstance(tags.get("title"), str) and tags["title"].strip():
        patch.offer_title(tags["title"].strip(), "custom")  # fork(title=...) and the SDK's tag API
    stats = data.get("stats") if isinstance(data.get("stats"), dict) else {}
    for metrics in (stats.get("usage_to_metrics") or {}).values():
        for usage in (metrics or {}).get("token_usages") or [] if isinstance(metrics, dict) else []:
            if isinstance(usage, dict) and isinstance(usage.get("response_id"), str):
                reader.usage[usage["response_id"]] = _usage(usage)
    status = data.get("execution_status")
    if isinstance(status, str):
        patch.note(execution_status=status)
        return status
    return None


def _event(reader: _Reader, data: dict) -> None:
    kind, uid = data["kind"], data.get("id")
    if kind in SKIPPED:
        return
    if not isinstance(uid, str) or not uid:
        raise ValueError("event without an id")
    ts = iso_text(data.get("timestamp"))
    if ts and reader.patch.started_at is None:
        reader.patch.started_at = ts
    if ts:
        reader.patch.updated_at = ts
    handler = _HANDLERS.get(kind)
    if handler is None:
        reader.drift(f"event kind={kind!r}")
        return
    handler(reader, uid, ts, data)


def _message(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    message = data["llm_message"]
    role = message.get("role")
    text = _content(reader, message.get("content"))
    source = data.get("source")
    if role == "user" or source == "user":
        reader.event(uid, role="user", kind="text", text=text, ts=ts)
        if text.strip() and not reader.titled:
            reader.titled = True
            first = text.strip().splitlines()[0]
            reader.patch.offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")
        reader.last = "user"
    elif role == "assistant":
        usage = reader.usage.get(data.get("llm_response_id") or "")
        _thinking(reader, uid, ts, data, message)
        reader.event(uid, role="assistant", kind="text", text=text, ts=ts, model=reader.model, usage=usage)
        reader.last = "answer"
    else:
        reader.drift(f"message role={role!r}")
        return
    # Skills and knowledge the agent added to this message (injected context, not what the user typed).
    for n, extra in enumerate(data.get("extended_content") or []):
        if isinstance(extra, dict) and extra.get("text"):
            reader.event(f"{uid}:ext:{n}", role="system", kind="text", text=str(extra["text"]), ts=ts,
                         meta={"injected": True, "extended_content": True})
    if data.get("activated_skills"):
        reader.patch.note(activated_skills=data["activated_skills"])


def _thinking(reader: _Reader, uid: str, ts: str | None, data: dict, message: dict | None = None) -> None:
    holder = message or data
    texts = [str(holder["reasoning_content"])] if holder.get("reasoning_content") else []
    for block in holder.get("thinking_blocks") or data.get("thinking_blocks") or []:
        if isinstance(block, dict):
            texts.append(str(block.get("thinking") or "[redacted thinking]"))
    if texts:
        reader.event(f"{uid}:thinking", role="assistant", kind="thinking", text="\n\n".join(texts), ts=ts,
                     model=reader.model)


def _action(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    _thinking(reader, uid, ts, data)
    thought = _content(reader, data.get("thought"))
    usage = reader.usage.get(data.get("llm_response_id") or "")
    if thought.strip():  # the model's text beside its tool call
        reader.event(f"{uid}:thought", role="assistant", kind="text", text=thought, ts=ts, model=reader.model)
    call = data.get("tool_call") if isinstance(data.get("tool_call"), dict) else {}
    name = data.get("tool_name") or call.get("name")
    arguments: Any = call.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments) if arguments.strip() else {}
    call_id = data.get("tool_call_id") or call.get("id")
    reader.calls[str(call_id)] = str(name)
    meta = {k: data[k] for k in ("security_risk", "summary") if data.get(k)}
    reader.event(uid, role="assistant", kind="tool_call", text=render_call(name, arguments, _CALL_KEYS), ts=ts,
                 tool_name=name, tool_input=arguments, tool_call_id=call_id, model=reader.model, usage=usage,
                 meta=meta or None)
    reader.last = "call"


def _observation(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    observation = data["observation"]
    text = _content(reader, observation.get("content"))
    meta = {"observation": observation.get("kind")}
    metadata = observation.get("metadata")
    if isinstance(metadata, dict) and metadata.get("exit_code") is not None:
        meta["exit_code"] = metadata["exit_code"]
    reader.event(uid, role="tool", kind="tool_result", text=text, ts=ts, tool_name=data.get("tool_name"),
                 tool_call_id=data.get("tool_call_id"), is_error=bool(observation.get("is_error")), meta=meta)
    reader.last = "result"


def _agent_error(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    """The scaffold refused a tool call (bad arguments, unknown tool): the model sees it as the result."""
    reader.event(uid, role="tool", kind="tool_result", text=str(data.get("error") or ""), ts=ts,
                 tool_name=data.get("tool_name"), tool_call_id=data.get("tool_call_id"), is_error=True,
                 meta={"agent_error": True})
    reader.last = "result"


def _rejected(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    reader.event(uid, role="tool", kind="tool_result", text=str(data.get("rejection_reason") or "[rejected]"),
                 ts=ts, tool_name=data.get("tool_name"), tool_call_id=data.get("tool_call_id"), is_error=True,
                 meta={"rejected_by": data.get("rejection_source") or "user"})
    reader.last = "result"


def _condensation(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    """Compaction: the events named are dropped from what the model sees (they stay on disk)."""
    forgotten = data.get("forgotten_event_ids") or []
    summary = data.get("summary") or data.get("summary_text")
    reader.event(uid, role="system", kind="compaction", text=str(summary or f"[{len(forgotten)} events forgotten]"),
                 ts=ts, meta={"forgotten": len(forgotten), "summary": bool(summary)})


def _condensation_request(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    reader.event(uid, role="system", kind="meta", text="[condensation requested]", ts=ts)


def _conversation_error(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    reader.event(uid, role="system", kind="text", text=f"{data.get('code') or 'error'}: {data.get('detail') or ''}",
                 ts=ts, meta={"error": True})
    reader.last = "error"


def _pause(reader: _Reader, uid: str, ts: str | None, data: dict) -> None:
    reader.event(uid, role="system", kind="meta", text="[paused]", ts=ts)
    reader.last = "paused"


_HANDLERS = {
    "MessageEvent": _message, "ActionEvent": _action, "ObservationEvent": _observation,
    "AgentErrorEvent": _agent_error, "UserRejectObservation": _rejected, "Condensation": _condensation,
    "CondensationSummaryEvent": _condensation, "CondensationRequest": _condensation_request,
    "ConversationErrorEvent": _conversation_error, "PauseEvent": _pause,
}


def _last_turn(reader: _Reader, status: str | None) -> None:
    """``running`` while a turn runs (and in a store whose process was killed mid-turn); else the shape of
    the last events tells: a prompt or tool result the model has not answered is open."""
    if reader.last is None and status is None:
        return
    if status in _OPEN_STATUSES or reader.last in ("user", "call", "result"):
        state = "open"
    elif status in _FAILED_STATUSES or reader.last == "error":
        state = "failed"
    elif reader.last == "paused" or status == "paused":
        state = "aborted"
    else:
        state = "complete"
    reader.patch.note(last_turn=state)


def _content(reader: _Reader, content: Any) -> str:
    """Text of a content list ({type: text|image, ...}, the SDK's TextContent / ImageContent), or text."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        ptype = part.get("type") if isinstance(part, dict) else None
        if ptype == "text":
            parts.append(str(part.get("text") or ""))
        elif ptype == "image":
            parts.append("[image]")
        else:
            reader.drift(f"content part type={ptype!r}")
    return "\n".join(parts)


def _usage(raw: dict) -> Usage:
    """TokenUsage: prompt_tokens counts the cache's tokens too, read and written (litellm's OpenAI-style usage;
    its Anthropic transformation adds the cache writes as well as the reads)."""
    def num(key: str) -> int:
        value = raw.get(key)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    cached, written = num("cache_read_tokens"), num("cache_write_tokens")
    return Usage(input=max(num("prompt_tokens") - cached - written, 0), cache_read=cached,
                 cache_write=written, output=num("completion_tokens"),
                 reasoning=num("reasoning_tokens"))
