"""Kimi Code (MoonshotAI ``@moonshot-ai/kimi-code``, TypeScript): ``$KIMI_CODE_HOME`` (default ``~/.kimi-code``).

Format facts and their sources: ``fixtures/kimi_code/SOURCE.md``. In short:

- ``sessions/<workDirKey>/<session id>/agents/<agent id>/wire.jsonl``: each agent's journal, append-only.
  ``workDirKey`` is ``wd_<slug>_<sha256(work dir)[:12]>`` (not reversible: the cwd comes from the records).
  Line 1 is ``{"type": "metadata", "protocol_version", "created_at"}``; every other line is one durable
  record ``{"type", ...payload, "time" (epoch ms)}`` (agent-core-v2 ``docs/wire-manifest.d.ts``), or one of
  the "human" records the journal mirrors beside them (``agent.message.appended`` and friends, with
  ``"kind": "event"``), which repeat what the durable ones say and are skipped.
- The main agent is ``agents/main``; a subagent (the ``Agent`` tool) is ``agents/agent-<n>`` with a
  journal of its own; the parent's ``subagent.*`` records only say it ran.
- ``turn.prompt`` holds the prompt and is written before the model is asked; ``turn.ended`` closes the
  turn with a reason (absent when the process died mid-turn). The answer comes as
  ``context.append_loop_event`` records (``content.part``, ``tool.call``, ``tool.result``).
- ``context.append_message`` is the model's context: the prompt again, system reminders, and the
  messages a turn gets from elsewhere (a shell command, a task notification, a compaction summary). A
  session imported from Kimi CLI (``kimi migrate``) holds its whole history this way, with no loop events.
- ``state.json`` beside ``agents/`` (rewritten) holds the cwd, the title and its kind, the archived flag and
  ``forkedFrom``: a fork (``kimi fork``) copies the parent's journals whole and appends ``forked``.

Not the Kimi CLI's format (``harvester/parsers/kimi.py``: ``~/.kimi``, ``{"timestamp", "message": {...}}`` lines):
a harness of its own, over a store of its own; a migrated session is a copy, not the Kimi CLI's file.
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

NAME = "kimi-code"

# main() sets process.title = "kimi-code" (apps/kimi-code src/app constants PROCESS_NAME); before that the
# node script the npm bin links to. Not "kimi": the Kimi CLI's console script is named that too.
PROCESSES = ("kimi-code", "@moonshot-ai/kimi-code/dist/main.mjs")
MAIN_AGENT = "main"  # MAIN_AGENT_ID: agents/main is the session's own agent

_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "prompt", "description")
# Durable records with nothing for a transcript: the agent's configuration, tool catalogues, the request
# trace, token counting, permissions, plans, goals, cron, tasks, plugins, file history; the prompt queue
# (prompt.* repeat turn.*); the subagent lifecycle (its own journal holds its words); compaction brackets
# (context.apply_compaction holds the summary). wire-manifest.d.ts (0.38) and the 2.1.0 bundle's registry.
BOOKKEEPING = frozenset({
    "runtime.set_binding", "permission.set_mode",
    "permission.record_approval_result", "llm.request", "llm.tools_snapshot", "mcp.tools_discovered",
    "token_counting.measured", "token_counting.rebased", "token_counting.truncated",
    "token_counting.turn_recorded", "tools.register_user_tool", "tools.reset_active_tools",
    "tools.set_active_tools", "tools.unregister_user_tool", "tools.update_store", "plan_mode.cancel",
    "plan_mode.enter", "plan_mode.exit", "plan.revision", "plugin.session_start", "goal.clear", "goal.create",
    "goal.update", "cron.add", "cron.cursor", "cron.delete", "task.started", "task.terminated",
    "task.waitDelivered", "interaction.request", "interaction.resolved", "interruptionReminder.recorded",
    "staleGuard.cleared", "staleGuard.recorded", "swarm_mode.enter", "swarm_mode.exit", "tower_mode.enter",
    "tower_mode.exit", "file_history.checkpoint", "file_history.tracked", "prompt.accepted",
    "prompt.completed", "prompt.aborted", "prompt.steered", "subagent.spawned", "subagent.started",
    "subagent.completed", "subagent.failed", "subagent.cancelled", "full_compaction.begin",
    "full_compaction.cancel", "full_compaction.complete", "turn.step.retrying",
})
# The journal's "human" records (wire/human.ts AGENT_WIRE_RECORD_TYPES; "human." was their prefix before).
HUMAN = frozenset({"agent.switched", "agent.message.appended", "agent.turn.started", "agent.turn.ended"})
_LOOP_BOOKKEEPING = frozenset({"step.begin", "step.end"})
# Messages of the model's context that say something the loop records do not (PromptOrigin kinds).
_ORIGIN_TEXT = {"shell_command", "skill_activation", "plugin_command", "task", "cron_job", "cron_missed",
                "hook_result", "system_trigger", "retry"}


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # getDataDir (src/app paths): $KIMI_CODE_HOME when set and not empty, else ~/.kimi-code on every OS.
    override = (env.get("KIMI_CODE_HOME") or "").strip()
    return [Path(override).expanduser()] if override else [home / ".kimi-code"]


def _session_state(path: PurePath) -> PurePath:
    return path.parents[2] / "state.json"  # <home>/sessions/<key>/<session>/agents/<agent>/wire.jsonl


SOURCES = (
    # The session's state.json is the wire's sidecar for the cwd a journal may not tell (an imported one's).
    SourceSpec("sessions/*/*/agents/*/wire.jsonl", "jsonl", "wire", sidecar=_session_state),
    SourceSpec("sessions/*/*/state.json", "json", "state"),
)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref, self.state = ref, state
        self.batch = Batch(state=state)
        self.line = 0
        self.step_start = 0  # where the model call's step began among this read's events
        if ref.variant == "state":
            self.sid, self.sub = ref.path.parent.name, False
            return
        agent, session = ref.path.parent.name, ref.path.parents[2].name
        self.sub = agent != MAIN_AGENT
        self.sid = f"{session}:{agent}" if self.sub else session
        if self.sub:
            self.patch.parent_native_id, self.patch.parent_kind = session, "subagent"

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: str | None, **fields: Any) -> None:
        event = Event(self.sid, uid, ts=ts, **fields)
        if event.role == "assistant" and (pending := self.state.pop("pending_usage", None)):
            event.usage, event.model = _call_usage(pending), event.model or pending.get("model")
        self.batch.events.append(event)

    def settle_usage(self, uid: str, ts: str | None) -> None:
        """A model call's usage that no answer of it took (the call failed, or answered nothing): its own event."""
        if pending := self.state.pop("pending_usage", None):
            self.batch.events.append(Event(self.sid, f"{uid}:usage", "system", "meta", "model call", ts=ts,
                                           model=pending.get("model"), usage=_call_usage(pending)))

    def unknown(self, what: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, what))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.variant == "wire" and ref.sidecar and not state.get("cwd"):
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
            cwd = orjson.loads(ref.sidecar).get("cwd")
            if isinstance(cwd, str) and cwd:
                reader.patch.cwd = cwd
                state["cwd"] = True
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            if ref.variant == "state":
                _state(reader, data)
                continue
            uid = record_uid(record.raw, context=state.get("prev"))
            state["prev"] = uid[2:14]
            _line(reader, data, uid)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line,
                                                 f"record of unexpected shape: {describe_error(exc)}"))
    return reader.batch


def _state(reader: _Reader, data: dict) -> None:
    """state.json (sessionMetadataService.ts normalizeSessionMeta): cwd (``workDir`` before version 2),
    title by kind, archived, fork parent; a session imported from Kimi CLI says so in ``custom``."""
    patch = reader.patch
    cwd = data.get("cwd") or data.get("workDir")
    if isinstance(cwd, str) and cwd:
        patch.cwd = cwd
    title, kind = data.get("title"), data.get("titleKind")
    if kind is None and data.get("isCustomTitle") is not None:  # written beside titleKind, alone before it
        kind = "custom" if data.get("isCustomTitle") else "replaceable"
    if isinstance(title, str) and title.strip() and kind in ("custom", "generated"):
        patch.offer_title(title.strip().splitlines()[0][:80], "custom" if kind == "custom" else "ai")
    # A "replaceable" title is the first prompt shortened, or "Fork: <id>": the wire's prompt says more.
    if isinstance(data.get("forkedFrom"), str) and data["forkedFrom"]:
        patch.parent_native_id, patch.parent_kind = data["forkedFrom"], "fork"
    if data.get("archived"):
        patch.note(archived=True)
    if isinstance(data.get("lastTurnReason"), str):
        patch.note(last_turn_reason=data["lastTurnReason"])
    custom = data.get("custom")
    if isinstance(custom, dict) and custom.get("imported_from_kimi_cli") is True:
        patch.note(imported_from="kimi", kimi_session_id=custom.get("kimi_cli_session_id"))


def _line(reader: _Reader, data: dict, uid: str) -> None:
    kind = data["type"]
    if not isinstance(kind, str):
        raise TypeError(f"must be str, not {type(kind).__name__}")
    if kind == "metadata":
        reader.patch.note(protocol_version=data.get("protocol_version"))
        return
    ts = iso_ms(data.get("time"))
    if ts and not reader.state.get("started"):
        reader.state["started"] = True
        reader.patch.started_at = ts
    if ts:
        reader.patch.updated_at = ts
    if kind in HUMAN or kind.startswith("human."):
        return  # the same messages and turns as the durable records around them
    if kind in ("turn.prompt", "turn.steer"):
        _prompt(reader, data, uid, ts, steer=kind == "turn.steer")
    elif kind == "turn.ended":
        reader.settle_usage(uid, ts)
        reason = data.get("reason")
        error = data.get("error") if isinstance(data.get("error"), dict) else {}
        if reason != "completed":
            text = f"[turn {reason}]" + (f" {error['message']}" if isinstance(error.get("message"), str) else "")
            reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"type": kind, "reason": reason})
        reader.patch.note(last_turn="complete" if reason == "completed" else "aborted")
    elif kind == "turn.cancel":
        reader.patch.note(last_turn="aborted")
    elif kind == "turn.step.interrupted":
        reader.emit(uid, ts, role="system", kind="meta", text=f"[step interrupted: {data.get('reason')}]",
                    meta={"type": kind})
    elif kind == "context.append_loop_event":
        _loop(reader, data["event"], uid, ts)
    elif kind == "context.append_message":
        _message(reader, data["message"], uid, ts)
    elif kind == "context.apply_compaction":
        summary = data.get("summary")
        if isinstance(summary, dict):  # a ContextMessage
            summary = _parts_text(summary.get("content"))
        text = summary if isinstance(summary, str) and summary else data.get("contextSummary")
        reader.emit(uid, ts, role="system", kind="compaction", text=str(text or "[context compacted]"))
    elif kind == "context.clear":
        reader.emit(uid, ts, role="system", kind="meta", text="[context cleared]", meta={"type": kind})
    elif kind == "context.undo":
        reader.emit(uid, ts, role="system", kind="meta", text=f"[undo {data.get('count')}]", meta={"type": kind})
    elif kind == "forked":
        # Everything above was copied from the parent's journal (forkTurnSlice.ts); state.json names it.
        reader.emit(uid, ts, role="system", kind="meta", text="[forked]", meta={"type": kind})
    elif kind == "usage.record":
        _usage(reader, data.get("usage"))
        reader.settle_usage(uid, ts)
        usage, model = data.get("usage"), data.get("model")
        if isinstance(usage, dict):
            pending = {"usage": usage, "model": model if isinstance(model, str) else None,
                       "response": f"{data.get('agentId')}:{data.get('time')}"}
            answered = next((e for e in reader.batch.events[reader.step_start:]
                             if e.role == "assistant" and e.usage is None), None)
            if answered is not None:  # written after the call's answer
                answered.usage, answered.model = _call_usage(pending), answered.model or pending["model"]
            else:  # written before it (as 0.x does, after llm.request): the answer takes it (_Reader.emit)
                reader.state["pending_usage"] = pending
    elif kind in ("profile.bind", "config.update"):
        # The work dir the agent was told (EnvironmentDisclosureSnapshot); config.update once held it bare.
        disclosure = data.get("environmentDisclosure")
        cwd = disclosure.get("cwd") if isinstance(disclosure, dict) else data.get("cwd")
        if isinstance(cwd, str) and cwd:
            reader.patch.cwd = cwd
        if isinstance(data.get("modelAlias"), str):
            reader.patch.note(model_alias=data["modelAlias"])
    elif kind not in BOOKKEEPING:
        reader.unknown(f"record type={kind!r}")
    if kind == "llm.request" and isinstance(data.get("model"), str):
        reader.patch.model = data["model"]


def _prompt(reader: _Reader, data: dict, uid: str, ts: str | None, steer: bool) -> None:
    text = _parts_text(data.get("input"))
    origin = (data.get("origin") or {}).get("kind") if isinstance(data.get("origin"), dict) else data.get("origin")
    reader.state["prompt"] = text  # context.append_message repeats it: said once
    if reader.sub or origin not in (None, "user"):
        # A subagent's task is its parent's words; other origins are the agent's own triggers.
        if text.strip():
            reader.emit(uid, ts, role="system", kind="meta", text=text,
                        meta={"from_agent": "parent"} if reader.sub else {"origin": origin})
    else:
        reader.emit(uid, ts, role="user", kind="text", text=text, meta={"steer": True} if steer else None)
        if text.strip() and not reader.state.get("titled"):
            reader.state["titled"] = True
            reader.patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")
    reader.patch.note(last_turn="open")


def _loop(reader: _Reader, event: dict, uid: str, ts: str | None) -> None:
    """One loop event (LoopRecordedEvent): the streamed parts already merged, as the model gave them."""
    kind = event["type"]
    if kind == "content.part":
        part = event["part"]
        if part.get("type") == "text":
            reader.emit(uid, ts, role="assistant", kind="text", text=str(part.get("text") or ""))
        elif part.get("type") == "think":
            reader.emit(uid, ts, role="assistant", kind="thinking", text=str(part.get("think") or ""))
        elif part.get("type") in ("image_url", "audio_url", "video_url"):
            reader.emit(uid, ts, role="assistant", kind="text", text=f"[{part['type']}]")
        else:
            reader.unknown(f"content part type={part.get('type')!r}")
    elif kind == "tool.call":
        _call(reader, str(event.get("toolCallId") or uid), event.get("name"), event.get("args"), ts)
    elif kind == "tool.result":
        call_id = str(event.get("toolCallId") or uid)
        result = event.get("result") if isinstance(event.get("result"), dict) else {}
        text = _parts_text(result.get("output"))
        for extra in (result.get("message"), result.get("note")):  # what the tool told the model beside it
            if isinstance(extra, str) and extra and extra not in text:
                text = f"{text}\n{extra}" if text else extra
        reader.emit(f"result:{call_id}", ts, role="tool", kind="tool_result", text=text,
                    tool_name=(reader.state.get("tools") or {}).get(call_id), tool_call_id=call_id,
                    is_error=bool(result.get("isError")))
    elif kind == "step.begin":
        reader.settle_usage(uid, ts)
        reader.step_start = len(reader.batch.events)
    elif kind == "step.end":
        reader.settle_usage(uid, ts)
    elif kind not in _LOOP_BOOKKEEPING:
        reader.unknown(f"loop event type={kind!r}")


def _call(reader: _Reader, call_id: str, name: Any, arguments: Any, ts: str | None) -> None:
    name = str(name or "?")
    if isinstance(arguments, str):  # a ContextMessage's toolCalls keep the arguments as JSON text
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments) if arguments else None
    reader.emit(f"call:{call_id}", ts, role="assistant", kind="tool_call", text=render_call(name, arguments, _CALL_KEYS),
                tool_name=name, tool_input=arguments, tool_call_id=call_id)
    tools = reader.state.setdefault("tools", {})
    tools[call_id] = name
    reader.state["tools"] = dict(list(tools.items())[-64:])  # results follow their calls


def _message(reader: _Reader, message: dict, uid: str, ts: str | None) -> None:
    """A message of the model's context. The live loop puts only user-side messages here (its answers are
    loop events); an imported Kimi CLI session has its assistant and tool messages here too."""
    role = message["role"]
    origin = message.get("origin") if isinstance(message.get("origin"), dict) else {}
    text = _parts_text(message.get("content"))
    if role == "user":
        kind = origin.get("kind")
        if text == reader.state.get("prompt"):
            reader.state["prompt"] = None
            return  # the turn's prompt (or a subagent's task), already read from turn.prompt
        if kind == "compaction_summary":
            reader.emit(uid, ts, role="system", kind="compaction", text=text)
        elif kind in _ORIGIN_TEXT or kind in (None, "user"):
            reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"origin": kind or "user"})
        # injection: the system reminders (date, permission mode) the agent adds to every turn
    elif role == "assistant":
        for n, part in enumerate(message.get("content") or []):
            if isinstance(part, dict) and part.get("type") == "think":
                reader.emit(f"{uid}:{n}", ts, role="assistant", kind="thinking", text=str(part.get("think") or ""))
            elif isinstance(part, dict):
                reader.emit(f"{uid}:{n}", ts, role="assistant", kind="text", text=_part_text(part))
        for call in message.get("toolCalls") or []:
            _call(reader, str(call.get("id") or uid), call.get("name"), call.get("arguments"), ts)
    elif role == "tool":
        call_id = str(message.get("toolCallId") or uid)
        reader.emit(f"result:{call_id}", ts, role="tool", kind="tool_result", text=text,
                    tool_name=(reader.state.get("tools") or {}).get(call_id), tool_call_id=call_id,
                    is_error=bool(message.get("isError")))
    elif role == "system":
        reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"type": "system"})
    else:
        reader.unknown(f"context message role={role!r}")


def _usage(reader: _Reader, usage: Any) -> None:
    """usage.record (one per model call): the session's running total, kept in the source's state."""
    if not isinstance(usage, dict):
        return
    total = reader.state.setdefault("usage", {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0})
    for ours, theirs in (("input", "inputOther"), ("output", "output"), ("cache_read", "inputCacheRead"),
                         ("cache_write", "inputCacheCreation")):
        value = usage.get(theirs)
        total[ours] += value if isinstance(value, int) and not isinstance(value, bool) else 0
    reader.patch.note(usage=dict(total))


def _call_usage(pending: dict) -> Usage:
    """One model call's usage.record counts; its response id the agent and the time of the record, which a fork's
    copied journal keeps (counted once)."""
    usage = pending["usage"]

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    return Usage(input=count("inputOther"), output=count("output"), cache_read=count("inputCacheRead"),
                 cache_write=count("inputCacheCreation"), response=pending.get("response"))


def _parts_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "\n".join(_part_text(p) for p in value or [] if isinstance(p, dict))


def _part_text(part: dict) -> str:
    if part.get("type") == "text":
        return str(part.get("text") or "")
    return f"[{part.get('type')}]"
