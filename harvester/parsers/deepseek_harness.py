"""DeepSeek Harness (``dsh``): ``$DSH_HOME/sessions/<project>/<session>/session.jsonl[.zstd]``.

Format facts and their sources (upstream repository, paths, commit, npm versions):
``fixtures/deepseek_harness/SOURCE.md``. In short:

- One append-only log per session. The first line is the immutable header ``{"type": "session",
  "version": 0, "id", "createdAt", "cwd"?, "parentSession"?, "seedLength"?, "origin"?,
  "delegationDepth", "agentPreset"?}``; every other line is an event ``{"type", "seq", "time" (epoch
  ms), "data", "sourceEventSeqs"?, "surfaceOp"?}`` with ``seq`` contiguous from 0. ``seq`` is the
  event's identity: the same event has the same ``seq`` in the plain and the compressed form, and
  after dsh's crash repair re-encodes a torn tail.
- The default encoding is ``session.jsonl.zstd``: the same lines in a chain of checksummed zstd
  frames, one for the header line and one per durable append batch (format ``zstd-frames``). A
  root configured ``compression: 'none'`` writes plain ``session.jsonl``. dsh never keeps both for
  one session; if both exist the compressed one (the default) is read and the plain one shadowed.
- ``user/message``, ``assistant/message`` and ``tool/result`` are the transcript ("surface"); only
  ``surfaceOp: "append"`` adds to it, a ``replace`` is compaction rewriting the model's context.
  The human is ``source.kind == "user"``; every other source (plugins, AGENTS.md, skills, other
  agents) is injected context. In a subagent's log, the task its parent gives is also
  ``kind: "user"``: it is filed as the parent agent's words.
- Raw stream deltas (``assistant/chunk`` and the packed rows that hold runs of them) repeat what
  the assembled ``assistant/message`` carries; they are skipped (see ``STREAM_RECORDS``).
- Subagents (``origin: "subagent"``) and forks are logs of their own naming ``parentSession``; a
  child's first ``seedLength`` events are copies of the parent's and are skipped.
- No record says a session ended: ``turn/start``/``turn/end`` give the last turn's state.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and its log comes
plain and as checksummed zstd frames: the format facts above and the functions that read them stay side by
side.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping
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

NAME = "deepseek-harness"
FORMAT_VERSION = 0  # the header version this parser reads (dsh's SESSION_FORMAT_VERSION up to 0.1.1-rc.2)


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "pattern", "query", "file_path", "path", "url", "description", "prompt", "code")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # dsh-home-paths: a non-blank $DSH_HOME (with ~ expanded), else <os home>/.dsh on every OS;
    # the base bundle mounts the session store at <home>/sessions.
    configured = env.get("DSH_HOME") or ""
    base = Path(configured).expanduser() if configured.strip() else home / ".dsh"
    return [base / "sessions"]


def _compressed_twin(path: PurePath) -> PurePath:
    return path.with_name(path.name + ".zstd")  # session.jsonl -> session.jsonl.zstd, which wins


SOURCES = (
    SourceSpec("*/*/session.jsonl.zstd", "zstd-frames"),
    SourceSpec("*/*/session.jsonl", "jsonl", shadowed_by=_compressed_twin),
    # Later dsh releases write format generations beside the v0 log (session.v<N>.jsonl[.zstd],
    # seen in third-party readers only): read so that their header is reported as drift.
    SourceSpec("*/*/session.v*.jsonl.zstd", "zstd-frames", "generation"),
    SourceSpec("*/*/session.v*.jsonl", "jsonl", "generation", shadowed_by=_compressed_twin),
)

# The npm bin is a node script: `dsh ...` runs as `node .../bin/dsh ...` (seen with 0.1.0-rc.8 for
# `--profile headless` and `dsh web`, one process each; under node 24 its name is "MainThread", so
# only the command line tells); npx and local installs run `node .../@deepseek-ai/dsh/lib/bin.js`.
PROCESSES = ("dsh", "@deepseek-ai/dsh/")

# Stream deltas of the assistant message being generated. The assembled assistant/message that
# follows carries the same text, reasoning and tool calls (a cancelled stream too, marked
# interrupted), so they are skipped. The packed rows are storage-only: a run of >= 3 consecutive
# same-block assistant/chunk deltas written as one line (lossless, dsh-session chunk-rows.ts).
# Only a stream cut off by a failed request or a crash has no message; that is said in a notice.
STREAM_RECORDS = frozenset({"assistant/chunk", "text-chunks", "reasoning-chunks", "tool-call-chunks"})

# Records with nothing for a transcript, skipped on purpose (not drift):
BOOKKEEPING = frozenset({
    "step/start",  # step boundaries: step/end is read only to notice a lost stream
    "tool/call",  # the dispatch record of a tool-call block the assistant/message already holds
    "session/end-seed",  # where a seed (resume, fork) ends; seedLength in the header is used instead
    "compaction/start",  # the compaction's lock; its summary and end are read
    "session/title-llm-request", "web/deepseek-search-llm-request",  # side requests' prompts
    "llm/retry", "llm/retry-started",  # retry scheduling; the retried step's message follows
    "hook/invoked", "hook/result",  # hook audit; a blocked tool shows in its tool/result
    "todo/write",  # snapshot written by the todo_write tool, whose call and result are read
    "schedule/change",  # cron bookkeeping; a fired schedule arrives as an injected user/message
    "agent/inbox/spliced",  # queued input; claimed messages arrive as user/message
    "team/member", "team/task", "team/message/queued", "team/message/delivered",  # team lead state
    "tool-workflow/run-start", "tool-workflow/run-end",  # workflow runs: members are sessions
    "tool-workflow/agent-start", "tool-workflow/agent-end",
})

# Sources of user-role messages written by another agent (its words, not the human's).
_RELAYED = frozenset({"coordinator", "subagent-report", "team-message"})
_ESCAPED = re.compile(r"~([0-9A-Fa-f]{4})")


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state)
        self.session_id: str = state.get("session") or _session_from_path(ref.path)
        self.line = 0
        self.seq: int | None = None  # seq of the record being read
        self.raw = b""
        self.ts: str | None = None

    def patch(self) -> SessionPatch:
        return self.batch.session(self.session_id)

    def event(self, suffix: int | str | None = None, **fields: Any) -> Event:
        if self.seq is None:  # not seen in dsh's writer; still stable across re-reads
            uid = record_uid(self.raw, suffix)
        else:
            uid = f"seq:{self.seq}" if suffix is None else f"seq:{self.seq}:{suffix}"
        event = Event(self.session_id, uid, ts=self.ts, **fields)
        self.batch.events.append(event)
        return event

    def notice(self, text: str, **meta: Any) -> None:
        self.event(role="system", kind="meta", text=text, meta=meta or None)

    def turn(self, value: str) -> None:
        """Whether the last turn finished: the service tells an abandoned session (its agent died
        mid-turn) from an ended one by it."""
        if self.state.get("last_turn") != value:
            self.state["last_turn"] = value
            self.patch().note(last_turn=value)

    def title_from(self, text: str) -> None:
        if not self.state.get("titled") and text.strip():
            self.state["titled"] = True
            first = text.strip().splitlines()[0]
            self.patch().offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line, reader.raw = record.line, record.raw
        kind = data.get("type")
        try:
            _record(reader, kind, data)
        except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
            reader.batch.problems.append(
                Problem("malformed", record.line, f"{kind} record of unexpected shape: {describe_error(exc)}"))
    reader.state["session"] = reader.session_id
    return reader.batch


def _record(reader: _Reader, kind: Any, data: dict) -> None:
    if kind == "session":
        _header(reader, data)
        return
    if reader.state.get("foreign"):
        return  # a format generation this parser does not read: reported once, at its header
    seq = data.get("seq0") if kind in STREAM_RECORDS and "seq0" in data else data.get("seq")
    reader.seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
    if reader.seq is not None and reader.seq < reader.state.get("seed", 0):
        return  # inherited from the parent's log (a fork's or subagent's seed): the parent holds it
    reader.ts = iso_ms(data.get("time0") if "time0" in data else data.get("time"))
    if reader.ts:
        reader.patch().updated_at = reader.ts
    handler = HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is not None:
        handler(reader, data.get("data"), data)
    elif kind in STREAM_RECORDS:
        reader.state["streamed"] = reader.state.get("streamed", 0) + 1
    elif kind not in BOOKKEEPING:
        reader.batch.problems.append(Problem("unknown_type", reader.line, f"type={kind!r}"))


def _header(reader: _Reader, data: dict) -> None:
    version = data.get("version")
    if version != FORMAT_VERSION:
        reader.state["foreign"] = True
        reader.batch.problems.append(Problem(
            "unknown_type", reader.line, f"session format version={version!r} (this parser reads {FORMAT_VERSION})"))
        return
    if isinstance(data.get("id"), str) and data["id"]:
        reader.session_id = data["id"]
    patch = reader.patch()
    patch.cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None  # absent: started without one
    patch.started_at = iso_ms(data.get("createdAt"))
    parent = data.get("parentSession")
    if isinstance(parent, str) and parent:
        # origin is only ever "subagent"; a parent without it is a fork (a user's, or a seeded copy).
        patch.parent_native_id = parent
        patch.parent_kind = "subagent" if data.get("origin") == "subagent" else "fork"
        reader.state["parent"] = parent
    reader.state["subagent"] = data.get("origin") == "subagent"
    seed = data.get("seedLength")
    if isinstance(seed, int) and seed > 0:
        reader.state["seed"] = seed
    facts = {key: data[field] for key, field in (("delegation_depth", "delegationDepth"),
                                                 ("agent_preset", "agentPreset"), ("seed_length", "seedLength"))
             if data.get(field) is not None}
    patch.note(format_version=version, **facts)


# -- the transcript ------------------------------------------------------------------------
def _user_message(reader: _Reader, message: dict, envelope: dict) -> None:
    if envelope.get("surfaceOp", "append") != "append":
        return  # a replacement node: the compaction record just before it says what it replaced
    source = message.get("source") if isinstance(message.get("source"), dict) else {}
    text = _content_text(message["content"])
    origin = source.get("kind")
    if origin == "user":
        # A subagent's task comes from its parent agent as a plain user message; a human typing into
        # the child through a client carries the client's rpcId.
        if reader.state.get("subagent") and "rpcId" not in source:
            reader.event(role="system", kind="text", text=text,
                         meta={"injected": True, "from_agent": reader.state.get("parent")})
        else:
            reader.event(role="user", kind="text", text=text)
        reader.title_from(text)
        return
    meta: dict[str, Any] = {"injected": True, "source": origin}
    for key in ("plugin", "form", "name"):
        if isinstance(source.get(key), str):
            meta[key] = source[key]
    if origin in _RELAYED:
        meta["from_agent"] = source.get("senderSessionId") or source.get("senderName")
    reader.event(role="system", kind="text", text=text, meta=meta)


def _assistant_message(reader: _Reader, payload: dict, envelope: dict) -> None:
    reader.state.pop("streamed", None)  # the stream was assembled into this message
    if envelope.get("surfaceOp", "append") != "append":
        return
    message = payload["message"]
    source = message.get("source") if isinstance(message.get("source"), dict) else {}
    model = source.get("model") if isinstance(source.get("model"), str) else reader.state.get("model")
    if model:
        reader.state["model"] = model
        reader.patch().model = model
    blocks = [b for b in message["content"] if isinstance(b, dict)]
    start = len(reader.batch.events)
    extra = {"interrupted": True} if payload.get("interrupted") else None
    for index, block in enumerate(blocks):
        suffix = index if len(blocks) > 1 else None
        btype = block.get("type")
        if btype in ("text", "reasoning"):
            reader.event(suffix, role="assistant", kind="text" if btype == "text" else "thinking",
                         text=block.get("text") or "", model=model, meta=extra)
        elif btype == "tool-call":
            name, call_id = block.get("name"), block.get("id")
            tool_input = _arguments(block.get("arguments"))
            _remember_tool(reader.state, call_id, name)
            reader.event(suffix, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
                         tool_name=name, tool_input=tool_input, tool_call_id=call_id, model=model)
        else:
            reader.event(suffix, role="assistant", kind="meta", text=_content_text([block]), model=model,
                         meta={"block": btype})
    usage = payload.get("usage")
    if isinstance(usage, dict) and len(reader.batch.events) > start:
        reader.batch.events[start].usage = _usage(usage)


def _tool_result(reader: _Reader, payload: dict, envelope: dict) -> None:
    if envelope.get("surfaceOp", "append") != "append":
        return  # a pruned copy replacing an earlier result in the model's context (see compaction/prune)
    message = payload["message"]
    block = message["content"][0]
    source = message.get("source") if isinstance(message.get("source"), dict) else {}
    call_id = block.get("toolCallId") or source.get("callId")
    error = payload.get("error") if isinstance(payload.get("error"), dict) else None
    reader.event(role="tool", kind="tool_result", text=_content_text(block.get("content")),
                 tool_call_id=call_id, tool_name=reader.state.get("tools", {}).pop(str(call_id), None),
                 is_error=bool(block.get("isError")) or error is not None, meta={"error": error} if error else None)


def _code_dispatch_start(reader: _Reader, data: dict, envelope: dict) -> None:
    """A tool a run_code program called: the model wrote the program, so the call is the model's."""
    name, call_id = data.get("name"), data.get("subCallId")
    _remember_tool(reader.state, call_id, name)
    reader.event(role="assistant", kind="tool_call", text=render_call(name, data.get("arguments"), _CALL_KEYS), tool_name=name,
                 tool_input=data.get("arguments"), tool_call_id=call_id,
                 model=reader.state.get("model"), meta={"via_call": data.get("parentCallId")})


def _code_dispatch(reader: _Reader, data: dict, envelope: dict) -> None:
    call_id = data.get("subCallId")
    reader.event(role="tool", kind="tool_result", text=_content_text(data.get("content")),
                 tool_call_id=call_id, tool_name=reader.state.get("tools", {}).pop(str(call_id), data.get("name")),
                 is_error=bool(data.get("isError")), meta={"via_call": data.get("parentCallId")})


# -- turns, compaction, session facts ------------------------------------------------------
_TURN_ENDS = {  # turn/end reason.kind -> (last_turn, notice); completed says nothing
    "completed": ("complete", None),
    "max-tokens": ("complete", "turn stopped at the output token limit"),
    "blocked": ("complete", "turn blocked before the model was called"),
    "error": ("complete", "turn failed"),
    "aborted": ("aborted", "turn aborted"),
    "interrupted": ("aborted", "turn interrupted: closed by dsh on reload after its process stopped"),
}


def _turn_end(reader: _Reader, data: dict, envelope: dict) -> None:
    _stream_lost(reader)
    reason = data.get("reason") if isinstance(data.get("reason"), dict) else {}
    kind = reason.get("kind")
    state, notice = _TURN_ENDS.get(kind, ("complete", f"turn ended: {kind}"))
    reader.turn(state)
    if notice is None:
        return
    if kind == "error" and isinstance(reason.get("error"), dict):
        notice += f": {reason['error'].get('message')} ({reason['error'].get('code')})"
    elif kind == "aborted" and isinstance(reason.get("reason"), dict):
        notice += f" ({reason['reason'].get('kind')})"
    reader.notice(notice, turn_end=kind)


def _stream_lost(reader: _Reader) -> None:
    """A step whose stream never became a message (the request failed, or dsh stopped mid-stream)."""
    streamed = reader.state.pop("streamed", 0)
    if streamed:
        reader.notice(f"model output not kept: {streamed} streamed record(s) never became a message",
                      streamed=streamed)


def _compaction_summary(reader: _Reader, data: dict, envelope: dict) -> None:
    model = data.get("model") if isinstance(data.get("model"), str) else None
    shadowed = [s for s in data.get("shadowedSeqs") or [] if isinstance(s, int)]
    event = reader.event(role="system", kind="compaction", text=_content_text(data.get("summary")),
                         model=model, meta={"compaction_id": data.get("compactionId"), "replaces": len(shadowed)})
    if isinstance(data.get("usage"), dict):
        event.usage = _usage(data["usage"])
    _mark_shadowed(reader, shadowed, {"compacted": data.get("compactionId")})


def _compaction_prune(reader: _Reader, data: dict, envelope: dict) -> None:
    """A tool result cut down in the model's context; the full result stays as it was imported."""
    _mark_shadowed(reader, [s for s in data.get("shadowedSeqs") or [] if isinstance(s, int)], {"pruned": True})


def _mark_shadowed(reader: _Reader, seqs: list[int], meta: dict[str, Any]) -> None:
    if seqs:
        reader.batch.marks.append(Mark(reader.session_id, meta, uids=tuple(f"seq:{s}" for s in seqs)))


def _compaction_end(reader: _Reader, data: dict, envelope: dict) -> None:
    if data.get("error"):
        reader.notice(f"compaction failed: {data['error']}", compaction_id=data.get("compactionId"))


def _title(reader: _Reader, data: dict, envelope: dict) -> None:
    source = data.get("source") if isinstance(data.get("source"), dict) else {}
    # A user rename pins the title; a model-generated one beats dsh's first-words fallback.
    rank = {"user": "custom", "provider": "ai", "fallback": "first-prompt"}.get(source.get("kind"), "summary")
    if isinstance(data.get("title"), str) and data["title"].strip():
        reader.patch().offer_title(data["title"].strip(), rank)


def _request_header(reader: _Reader, data: dict, envelope: dict) -> None:
    config = (data.get("header") or {}).get("config") or {}
    _route(reader, config.get("provider"), config.get("model"))


def _route(reader: _Reader, provider: Any, model: Any) -> None:
    if isinstance(model, str) and model:
        reader.state["model"] = model
        reader.patch().model = model
    if isinstance(provider, str) and provider:
        reader.patch().note(provider=provider)


def _descriptor(reader: _Reader, data: dict, envelope: dict) -> None:
    label = data.get("label")
    if isinstance(label, str) and label.strip():
        reader.patch().offer_title(label.strip(), "summary")
    # Descriptor version 2 (dsh 0.1.0-rc.8, a continuable child) names the child's model route.
    _route(reader, data.get("agentProvider"), data.get("agentModel"))
    facts = {"subagent_mode": data.get("mode"), "subagent_provider": data.get("provider")}
    reader.patch().note(**{k: v for k, v in facts.items() if v is not None})


def _setting(label: str, field: str) -> Callable[[_Reader, dict, dict], None]:
    """A mode or policy: always a session fact (its current value); once a turn has run, a switch is also a
    line in the transcript, as the user changed how the agent works. dsh logs a new session's starting
    preset, sandbox mode and approval policy before its first turn (a subagent's with ``source:
    "delegation"``): those are how the session began, not a change."""
    fact = label.replace(" ", "_")
    def handler(reader: _Reader, data: dict, envelope: dict) -> None:
        value = data.get(field)
        if isinstance(value, bool):
            value = "on" if value else "off"
        reader.patch().note(**{fact: value})
        if reader.state.get("turned"):
            reader.notice(f"{label}: {value}", record=envelope.get("type"))
    return handler


def _turn_start(reader: _Reader, data: dict, envelope: dict) -> None:
    reader.state["turned"] = True
    reader.turn("open")


def _approval_asked(reader: _Reader, data: dict, envelope: dict) -> None:
    asked = reader.state.setdefault("approvals", {})
    asked[str(data.get("id"))] = data.get("toolName")
    while len(asked) > 16:
        asked.pop(next(iter(asked)))
    reason = f": {data['reason']}" if data.get("reason") else ""
    reader.notice(f"approval asked for {data.get('toolName')}{reason}", approval=data.get("id"))


def _approval_decided(reader: _Reader, data: dict, envelope: dict) -> None:
    tool = reader.state.get("approvals", {}).pop(str(data.get("id")), None)
    reader.notice(f"approval{f' for {tool}' if tool else ''}: {data.get('outcome')}", approval=data.get("id"))


def _command_run(reader: _Reader, data: dict, envelope: dict) -> None:
    """A slash command the human typed (its only source today is a human-facing UI)."""
    args = data.get("args") if isinstance(data.get("args"), str) else ""
    reader.event(role="user", kind="text", text=f"/{data.get('name')}{args}".strip(), meta={"command": True})


def _command_done(reader: _Reader, data: dict, envelope: dict) -> None:
    text = data.get("text") if isinstance(data.get("text"), str) and data.get("text") else f"command {data.get('kind')}"
    reader.notice(text, command_result=data.get("kind"))


def _feedback(reader: _Reader, data: dict, envelope: dict) -> None:
    """The human's remark about the session: their words, though never sent to the model."""
    reader.event(role="user", kind="meta", text=str(data.get("text") or ""), meta={"feedback": True})


def _goal(reader: _Reader, data: dict, envelope: dict) -> None:
    goal = data.get("goal") if isinstance(data.get("goal"), dict) else {}
    objective = f": {goal['objective']}" if isinstance(goal.get("objective"), str) else ""
    reader.notice(f"goal {data.get('operation')}{objective}", record="goal/change")


Handler = Callable[[_Reader, Any, dict], None]

HANDLERS: dict[str, Handler] = {
    "user/message": _user_message,
    "assistant/message": _assistant_message,
    "tool/result": _tool_result,
    "tool/code-dispatch-start": _code_dispatch_start,
    "tool/code-dispatch": _code_dispatch,
    "turn/start": _turn_start,
    "turn/end": _turn_end,
    "step/end": lambda reader, data, envelope: _stream_lost(reader),
    "compaction/summary": _compaction_summary,
    "compaction/prune": _compaction_prune,
    "compaction/end": _compaction_end,
    "session/title": _title,
    "request/header": _request_header,
    "request/context": lambda reader, data, envelope: _route(reader, data.get("provider"), data.get("model")),
    "subagent/descriptor": _descriptor,
    "agent-preset/selected": lambda reader, data, envelope: reader.patch().note(agent_preset=data.get("agentPreset")),
    "plan/mode": _setting("plan mode", "active"),
    "sandbox/mode": _setting("sandbox mode", "mode"),
    "approval/policy": _setting("approval policy", "policy"),
    "permission/preset": _setting("permission preset", "preset"),
    "approval/asked": _approval_asked,
    "approval/decided": _approval_decided,
    "command/run": _command_run,
    "command/done": _command_done,
    "feedback/record": _feedback,
    "goal/change": _goal,
}


# -- helpers -------------------------------------------------------------------------------
def _session_from_path(path: PurePath) -> str:
    """Before the header is read: the session directory's name, which dsh writes with every
    character outside [A-Za-z0-9._-] as ~XXXX (UTF-16 code unit)."""
    name = path.parent.name
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), name) if name else path.stem


def _usage(raw: dict) -> Usage:
    # dsh counts are disjoint: inputTokens is uncached input only (dsh-llm TokenUsage).
    def count(key: str) -> int:
        value = raw.get(key)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
    return Usage(input=count("inputTokens"), output=count("outputTokens"), cache_read=count("cacheReadTokens"),
                 cache_write=count("cacheWriteTokens"), reasoning=count("reasoningTokens"))


def _remember_tool(state: dict[str, Any], call_id: Any, name: Any) -> None:
    """The id -> name map only bridges a call and its result; keep the state small."""
    tools = state.setdefault("tools", {})
    tools[str(call_id)] = name
    while len(tools) > 64:
        tools.pop(next(iter(tools)))


def _arguments(raw: Any) -> Any:
    """Tool arguments are the model's raw JSON string: parsed when they are JSON, else kept."""
    if isinstance(raw, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(raw)
    return raw


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype in ("text", "reasoning"):
            parts.append(block.get("text") or "")
        elif btype == "image":
            ref = block.get("attachment") if isinstance(block.get("attachment"), dict) else {}
            size = f" {ref['width']}x{ref['height']}" if "width" in ref and "height" in ref else ""
            parts.append(f"[image: {ref.get('name') or ref.get('mediaType') or 'image'}{size}]")
        elif btype == "tool-result":
            parts.append(_content_text(block.get("content")))
        elif btype == "tool-call":
            parts.append(f"[tool call {block.get('name')}]")
        else:
            parts.append(f"[{btype}]")
    return "\n".join(parts)


