"""Grok Build (xAI ``grok``): ``$GROK_HOME/sessions/<encoded cwd>/<session id>/`` (default ``~/.grok``).

Format facts and their sources: ``fixtures/grok/SOURCE.md``. In short:

- ``summary.json`` is the session's index entry, rewritten whole (``info {id, cwd}``, ``generated_title``
  / ``title_is_manual``, ``session_summary``, ``created_at``, ``last_active_at``, ``current_model_id``,
  ``parent_session_id`` + ``session_kind``, git facts). It is a source of its own (facts, no events)
  and the sidecar of the two transcripts, so the first read of a transcript already knows the cwd.
- ``updates.jsonl`` is the authoritative log (append-only; ``/resume`` replays it): one line per
  session update, ``{timestamp, method: "session/update" | "_x.ai/session/update", params: {sessionId,
  update: {sessionUpdate, ...}, _meta}}``, or (older) the bare ACP notification. ACP kinds carry the
  conversation (prompts, replies, thoughts, tool calls and their results); ``_x.ai`` kinds carry turn
  ends, rewinds, compactions, subagent spawns and UI bookkeeping (``BOOKKEEPING``, skipped on purpose).
- ``chat_history.jsonl`` is a cache derived from ``updates.jsonl`` (rebuilt from it, replaced whole on
  compaction): it is read only for a session without ``updates.jsonl``. Two layouts: typed
  ``ConversationItem`` rows (``chat_format_version`` 1) and role-based rows (0, legacy).
- cwd: ``summary.json`` ``info.cwd``; the folder name (URL-encoded cwd) only when no summary names it.
- Injected text (host turns, synthetic user items, the ``<user_query>`` envelopes of interjections) is
  ``system``; only what the user typed is ``user``.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and a Grok session
is several files read together: the format facts above and the functions that read them stay side by side.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import unquote

import orjson

from harvester.model import Batch, Event, GitFacts, Mark, Problem, SessionPatch, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "grok"


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "target_file", "file_path", "path", "pattern", "query", "url")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # $GROK_HOME verbatim when non-empty, else <home>/.grok on every OS (xai-grok-home lib.rs). A
    # relative value is relative to grok's own cwd, unknowable here: the home stands in for it.
    override = (env.get("GROK_HOME") or "").strip()
    if override:
        path = Path(override).expanduser()
        return [path if path.is_absolute() else home / path]
    return [home / ".grok"]


def _summary_of(path: PurePath) -> PurePath:
    return path.with_name("summary.json")


def _updates_of(path: PurePath) -> PurePath:
    return path.with_name("updates.jsonl")


SOURCES = (
    SourceSpec("sessions/*/*/updates.jsonl", "jsonl", "updates", sidecar=_summary_of),
    # A derived cache: imported only where no updates.jsonl exists, so a session is read once.
    SourceSpec("sessions/*/*/chat_history.jsonl", "jsonl", "chat", shadowed_by=_updates_of, sidecar=_summary_of),
    SourceSpec("sessions/*/*/summary.json", "json", "summary"),
)

# The installer puts the binary at $GROK_HOME/bin/grok.
PROCESSES = ("grok",)

# summary.json keys (persistence.rs Summary): the ones read below, and the rest known and unused.
SUMMARY_KEYS = frozenset({
    "info", "cwd_generation", "previous_cwd", "pending_cwd_switch_reminder", "cwd_switch_bookkeeping_generation",
    "session_summary", "created_at", "updated_at", "num_messages", "num_chat_messages", "current_model_id",
    "parent_session_id", "forked_at", "collection_id", "next_trace_turn", "chat_format_version",
    "prompt_display_cwd", "session_kind", "fork_context_source", "fork_parent_prompt_id", "inherited_prefix_len",
    "hidden", "source_workspace_dir", "git_root_dir", "git_remotes", "head_commit", "head_branch", "request_id",
    "grok_home", "last_active_at", "generated_title", "title_is_manual", "worktree_label", "agent_name",
    "sandbox_profile", "reasoning_effort", "last_turn_summary", "last_turn_summary_prompt_id", "last_recap",
})
_NOTED = ("session_kind", "agent_name", "worktree_label", "source_workspace_dir", "git_root_dir",
          "previous_cwd", "sandbox_profile", "last_turn_summary")

# Update kinds with nothing for a transcript: UI state, progress, telemetry, and kinds whose content
# another record already carries (a subagent's output is its tool result; a plan is plan.json).
BOOKKEEPING = frozenset({
    "plan", "available_commands_update", "current_mode_update", "config_option_update", "session_info_update",
    "usage_update", "diff_review", "retry_state", "auto_compact_started", "auto_compact_cancelled",
    "auto_continue_completed", "memory_flush_started", "memory_flush_completed", "memory_dream_completed",
    "memory_session_saved", "feedback_request", "relay_sync_status", "auto_recovery_started", "hook_execution",
    "hooks_changed", "plugins_changed", "plugin_updates_installed", "session_status", "session_recap_unavailable",
    "last_turn_summary", "task_completed", "subagent_progress", "subagent_finished", "task_backgrounded",
    "scheduled_task_created", "scheduled_task_fired", "scheduled_task_deleted", "monitor_event",
    "tool_call_delta_chunk", "image_compressed", "image_dropped", "memory_files", "workflow_updated", "goal_updated",
    "pending_interaction", "interaction_resolved", "response_completed", "reasoning_completed",
})
# Notices shown to the user, kept as system meta events: kind -> the field holding the text.
NOTICES = {"auto_compact_completed": "summary_preview", "auto_compact_failed": "error",
           "auto_recovery_exhausted": "error", "model_auto_switched": "reason", "hook_annotation": "message",
           "session_recap": "summary"}
METHODS = frozenset({"session/update", "_x.ai/session/update"})
# Chat-history rows skipped on purpose: the system prompt is Grok's own instructions, every session.
CHAT_SKIPPED = frozenset({"system"})
_NOTES = ("The user sent a message while you were working:", "The user interrupted the previous turn:")
_QUERY_OPEN, _QUERY_CLOSE = "<user_query>", "</user_query>"
_CANCELLED = frozenset({"cancelled", "canceled", "aborted"})
_FAILED = frozenset({"error", "rate_limit"})  # a turn the model or the API ended (grok-build's StopReason)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state, revise=True)  # a tool call's input may arrive with a later update
        self.sid = ref.path.parent.name
        self.line = 0

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: str | None = None, **fields: Any) -> Event:
        event = Event(self.sid, uid, ts=ts, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def turn(self, state: str) -> None:
        self.patch.note(last_turn=state)

    def title(self, text: str) -> None:
        if text.strip() and not self.state.get("titled"):
            self.state["titled"] = True
            self.patch.offer_title(_first_line(text), "first-prompt")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.variant == "summary":
        for record, data in json_objects(records, reader.batch.problems):
            reader.line = record.line
            _summary(reader, data, own=True)
        return reader.batch
    if ref.sidecar:
        with contextlib.suppress(orjson.JSONDecodeError):  # caught mid-rewrite: the next read has it
            data = orjson.loads(ref.sidecar)
            if isinstance(data, dict):
                _summary(reader, data, own=False)
    if reader.patch.cwd is None:
        _cwd_from_folder(reader)
    handler = _update if ref.variant == "updates" else _chat_row
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        uid = record_uid(record.raw, context=state.get("prev"))
        state["prev"] = uid[2:14]
        try:
            handler(reader, data, uid)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"record of unexpected shape: {describe_error(exc)}"))
    return reader.batch


# -- summary.json ----------------------------------------------------------------------------
def _summary(reader: _Reader, data: dict, own: bool) -> None:
    """Facts of the rewritten index entry. As the transcripts' sidecar it only adds what they lack."""
    patch = reader.patch
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    if isinstance(info.get("cwd"), str) and info["cwd"]:
        patch.cwd = info["cwd"]
    if own:
        for key in sorted(data.keys() - SUMMARY_KEYS):
            reader.drift(f"summary.json key={key!r}")
        if isinstance(info.get("id"), str) and info["id"] != reader.sid:
            patch.note(recorded_session_id=info["id"])
    title = data.get("generated_title")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "custom" if data.get("title_is_manual") else "ai")
    elif isinstance(data.get("session_summary"), str) and data["session_summary"].strip():
        patch.offer_title(_first_line(data["session_summary"]), "summary")
    if isinstance(data.get("current_model_id"), str) and data["current_model_id"]:
        patch.model = data["current_model_id"]
    patch.started_at = iso_text(data.get("created_at")) or patch.started_at
    patch.updated_at = iso_text(data.get("last_active_at")) or iso_text(data.get("updated_at")) or patch.updated_at
    parent = data.get("parent_session_id")
    if isinstance(parent, str) and parent:
        kind = data.get("session_kind")
        patch.parent_native_id = parent
        patch.parent_kind = "subagent" if isinstance(kind, str) and "subagent" in kind else "fork"
    if isinstance(data.get("session_kind"), str) and "subagent" in data["session_kind"]:
        reader.state["subagent"] = True
    remotes = data.get("git_remotes") if isinstance(data.get("git_remotes"), list) else []
    if data.get("head_branch") or data.get("head_commit") or remotes:
        patch.git = GitFacts(branch=data.get("head_branch"), commit=data.get("head_commit"),
                             origin_url=remotes[0] if remotes and isinstance(remotes[0], str) else None)
    facts = {k: data[k] for k in _NOTED if data.get(k) not in (None, "")}
    if facts:
        patch.note(**facts)


def _cwd_from_folder(reader: _Reader) -> None:
    """No summary names it: the folder is the URL-encoded cwd, unless it is the long-path slug form
    (``<slug>-<hash16>``, whose ``.cwd`` file this source cannot see)."""
    decoded = unquote(reader.ref.path.parent.parent.name)
    if decoded.startswith("/") or (len(decoded) > 2 and decoded[1] == ":" and decoded[2] in "\\/"):
        reader.patch.cwd = decoded


# -- updates.jsonl ---------------------------------------------------------------------------
def _update(reader: _Reader, data: dict, uid: str) -> None:
    if "method" in data:
        if data["method"] not in METHODS:
            reader.drift(f"method={data['method']!r}")
            return
        params = data.get("params")
    else:
        params = data  # before the envelope: the bare ACP notification
    update = params["update"]
    kind = update.get("sessionUpdate")
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    ts = _epoch(meta.get("agentTimestampMs"), 1000) or _epoch(data.get("timestamp"), 1)
    if ts:
        reader.patch.updated_at = ts
    handler = (UPDATES.get(kind) or (_notice if kind in NOTICES else None)) if isinstance(kind, str) else None
    if handler is not None:
        handler(reader, update, uid, ts)
    elif kind not in BOOKKEEPING:
        reader.drift(f"sessionUpdate={kind!r}")


def _user_chunk(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    chunk_meta = update.get("_meta") if isinstance(update.get("_meta"), dict) else {}
    text = _block_text(update.get("content"))
    if isinstance(chunk_meta.get("modelId"), str) and chunk_meta["modelId"]:
        reader.state["model"] = reader.patch.model = chunk_meta["modelId"]
    if chunk_meta.get("hostTurn"):  # a prompt grok itself sent (auto-wake, scheduled task...)
        reader.emit(uid, ts, role="system", kind="text", text=text, meta={"injected": True, "host_turn": True})
        return
    if isinstance(chunk_meta.get("promptIndex"), int):
        reader.state.setdefault("prompts", {}).setdefault(str(chunk_meta["promptIndex"]), uid)
    _user_text(reader, uid, ts, text)
    reader.turn("open")


def _user_text(reader: _Reader, uid: str, ts: str | None, text: str) -> None:
    """What the user typed; a ``<user_query>`` envelope (interjections, interrupts) holds it among
    grok's own words, which are kept apart as system text. A subagent's prompts are its parent's."""
    if reader.state.get("subagent"):
        reader.emit(uid, ts, role="system", kind="text", text=text, meta={"injected": True, "from_agent": "parent"})
        return
    typed, wrapper = _unwrap(text)
    if wrapper:
        reader.emit(f"{uid}:ctx", ts, role="system", kind="text", text=wrapper, meta={"injected": True})
    if typed.strip():
        meta = {"interjection": True} if wrapper.startswith(_NOTES[0]) else None
        reader.emit(uid, ts, role="user", kind="text", text=typed.strip(), meta=meta)
        reader.title(typed)


def _agent_chunk(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    text = _block_text(update.get("content"))
    chunk_meta = update.get("_meta") if isinstance(update.get("_meta"), dict) else {}
    if chunk_meta.get("hostTurn"):  # a slash command's output, written by grok, not the model
        reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"host_turn": True})
        return
    reader.emit(uid, ts, role="assistant", kind="text", text=text, model=reader.state.get("model"))
    if text.strip():
        reader.turn("complete")  # unless a tool call follows; a turn_completed says for sure


def _thought_chunk(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    reader.emit(uid, ts, role="assistant", kind="thinking", text=_block_text(update.get("content")),
                model=reader.state.get("model"))


def _tool_call(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    call_id = str(update["toolCallId"])
    name = update.get("title") or update.get("kind") or "tool"
    tool_input = update.get("rawInput")
    calls = reader.state.setdefault("calls", {})
    calls[call_id] = [name, tool_input is not None, ts]
    while len(calls) > 64:  # bridges a call and its later updates only
        calls.pop(next(iter(calls)))
    _emit_call(reader, call_id, name, tool_input, ts, update.get("kind"))
    reader.turn("open")
    if update.get("status") in ("completed", "failed"):
        _emit_result(reader, call_id, name, update, ts)


def _tool_update(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    call_id = str(update["toolCallId"])
    name, has_input, call_ts = reader.state.get("calls", {}).get(call_id, [update.get("title"), True, ts])
    if not has_input and update.get("rawInput") is not None:  # arguments known only now: revise the call
        reader.state["calls"][call_id][1] = True
        _emit_call(reader, call_id, name, update["rawInput"], call_ts, update.get("kind"))
    if update.get("status") in ("completed", "failed"):
        _emit_result(reader, call_id, name, update, ts)


def _emit_call(reader: _Reader, call_id: str, name: Any, tool_input: Any, ts: str | None, kind: Any) -> None:
    reader.emit(f"call:{call_id}", ts, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
                tool_name=name, tool_input=tool_input, tool_call_id=call_id, model=reader.state.get("model"),
                meta={"tool_kind": kind} if isinstance(kind, str) else None)


def _emit_result(reader: _Reader, call_id: str, name: Any, update: dict, ts: str | None) -> None:
    reader.emit(f"result:{call_id}", ts, role="tool", kind="tool_result", text=_tool_output(update),
                tool_name=name, tool_call_id=call_id, is_error=update.get("status") == "failed")


def _turn_completed(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    reason = str(update.get("stop_reason") or "")
    reader.turn("aborted" if reason.lower() in _CANCELLED else "failed" if reason.lower() in _FAILED else "complete")
    reader.patch.note(stop_reason=reason)


def _rewind(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    """Prompts from ``target_prompt_index`` on leave the conversation; their events stay, marked."""
    target = int(update["target_prompt_index"])
    prompts = reader.state.setdefault("prompts", {})
    first = prompts.get(str(target))
    reader.emit(uid, ts, role="system", kind="meta", text=f"rewound to prompt {target}",
                meta={"rewind_to_prompt": target, "rewind_from": first})
    if first is not None:
        reader.batch.marks.append(Mark(reader.sid, {"rewound": True}, since=first, until=uid))
    for index in [k for k in prompts if int(k) >= target]:
        del prompts[index]
    reader.turn("complete")


def _compaction(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    file = update.get("checkpoint_file")
    text = f"conversation compacted at prompt {update.get('prompt_index_at_compaction')}"
    reader.emit(uid, iso_text(update.get("created_at")) or ts, role="system", kind="compaction", text=text,
                meta={"checkpoint_file": file} if isinstance(file, str) else None)
    auto = update.get("auto_continue")
    if isinstance(auto, dict) and isinstance(auto.get("prompt_text"), str):
        reader.emit(f"{uid}:continue", ts, role="system", kind="text", text=auto["prompt_text"],
                    meta={"injected": True, "auto_continue": True})


def _subagent_spawned(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    child = update.get("child_session_id")
    if isinstance(child, str) and child:
        patch = reader.batch.session(child)
        patch.parent_native_id, patch.parent_kind = reader.sid, "subagent"
        patch.note(subagent_type=update.get("subagent_type"), description=update.get("description"))


def _model(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    model = update.get("model") or update.get("model_id") or update.get("new_model_id")
    if isinstance(model, str) and model:
        reader.state["model"] = reader.patch.model = model


def _title_generated(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    if isinstance(update.get("session_summary"), str) and update["session_summary"].strip():
        reader.patch.offer_title(_first_line(update["session_summary"]), "ai")


def _notice(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    text = update.get(NOTICES[update["sessionUpdate"]])
    if isinstance(text, str) and text.strip():
        reader.emit(uid, ts, role="system", kind="meta", text=text.strip(),
                    meta={"update": update["sessionUpdate"]})


def _model_switched(reader: _Reader, update: dict, uid: str, ts: str | None) -> None:
    """The persisted model was no longer available: a notice, and the model moves."""
    _model(reader, update, uid, ts)
    _notice(reader, update, uid, ts)


UpdateHandler = Callable[[_Reader, dict, str, "str | None"], None]
UPDATES: dict[str, UpdateHandler] = {
    "user_message_chunk": _user_chunk, "agent_message_chunk": _agent_chunk, "agent_thought_chunk": _thought_chunk,
    "tool_call": _tool_call, "tool_call_update": _tool_update, "turn_completed": _turn_completed,
    "rewind_marker": _rewind, "compaction_checkpoint": _compaction, "subagent_spawned": _subagent_spawned,
    "model_changed": _model, "response_started": _model, "session_summary_generated": _title_generated,
    "model_auto_switched": _model_switched,
}


# -- chat_history.jsonl (only where updates.jsonl is missing) --------------------------------
def _chat_row(reader: _Reader, data: dict, uid: str) -> None:
    kind = data.get("type")
    if kind is None and isinstance(data.get("role"), str):
        kind = {"tool": "tool_result"}.get(data["role"], data["role"])  # version 0: role-based rows
    handler = CHAT_ROWS.get(kind) if isinstance(kind, str) else None
    if handler is not None:
        handler(reader, data, uid)
    elif kind not in CHAT_SKIPPED:
        reader.drift(f"chat_history row type={kind!r}")


def _chat_user(reader: _Reader, data: dict, uid: str) -> None:
    text = _parts_text(data.get("content"))
    reason = data.get("synthetic_reason")
    if isinstance(reason, str) and reason != "interjection":  # project instructions, reminders...
        reader.emit(uid, role="system", kind="text", text=text, meta={"injected": True, "synthetic": reason})
        return
    _user_text(reader, uid, None, text)
    reader.turn("open")


def _chat_assistant(reader: _Reader, data: dict, uid: str) -> None:
    model = data.get("model_id") if isinstance(data.get("model_id"), str) else None
    if model:
        reader.patch.model = model
    if isinstance(data.get("reasoning_content"), str) and data["reasoning_content"].strip():  # version 0
        reader.emit(f"{uid}:thinking", role="assistant", kind="thinking", text=data["reasoning_content"],
                    model=model)
    text = _parts_text(data.get("content"))
    if text.strip():
        reader.emit(uid, role="assistant", kind="text", text=text, model=model)
    calls = [c for c in data.get("tool_calls") or [] if isinstance(c, dict)]
    for n, call in enumerate(calls):
        function = call.get("function") if isinstance(call.get("function"), dict) else call  # v0 / v1
        name, arguments = function.get("name"), function.get("arguments")
        with contextlib.suppress(orjson.JSONDecodeError, TypeError):
            arguments = orjson.loads(arguments) if isinstance(arguments, str) and arguments.strip() else arguments
        call_id = str(call["id"]) if isinstance(call.get("id"), str | int) and call["id"] != "" else None
        if call_id is not None:  # bridges the call to its result row; one without an id has none to find
            reader.state.setdefault("calls", {})[call_id] = [name, True, None]
        reader.emit(f"call:{call_id}" if call_id is not None else f"{uid}:call:{n}", role="assistant",
                    kind="tool_call", text=render_call(name, arguments, _CALL_KEYS), tool_name=name,
                    tool_input=arguments, tool_call_id=call_id, model=model)
    reader.turn("open" if calls else "complete")


def _chat_tool_result(reader: _Reader, data: dict, uid: str) -> None:
    call_id = str(data["tool_call_id"])
    name = reader.state.get("calls", {}).get(call_id, [None])[0]
    reader.emit(f"result:{call_id}", role="tool", kind="tool_result", text=_parts_text(data.get("content")),
                tool_name=name, tool_call_id=call_id)
    reader.turn("open")


def _chat_reasoning(reader: _Reader, data: dict, uid: str) -> None:
    text = "\n\n".join(str(s.get("text") or "") for s in data.get("summary") or [] if isinstance(s, dict))
    if text.strip():
        reader.emit(uid, role="assistant", kind="thinking", text=text)


def _chat_backend_tool(reader: _Reader, data: dict, uid: str) -> None:
    """A tool the xAI backend ran itself (web search): its call, and its status as the result."""
    kind = data.get("kind") if isinstance(data.get("kind"), dict) else {}
    call_id, name, action = str(kind.get("id") or uid), kind.get("tool_type") or "backend_tool", kind.get("action")
    reader.emit(f"call:{call_id}", role="assistant", kind="tool_call", text=render_call(name, action, _CALL_KEYS),
                tool_name=name, tool_input=action, tool_call_id=call_id, meta={"backend": True})
    reader.emit(f"result:{call_id}", role="tool", kind="tool_result", text=f"[{kind.get('status') or 'done'}]",
                tool_name=name, tool_call_id=call_id, is_error=kind.get("status") == "failed")


ChatHandler = Callable[[_Reader, dict, str], None]
CHAT_ROWS: dict[str, ChatHandler] = {
    "user": _chat_user, "assistant": _chat_assistant, "tool_result": _chat_tool_result,
    "reasoning": _chat_reasoning, "backend_tool_call": _chat_backend_tool,
}


# -- helpers -----------------------------------------------------------------------------------
def _unwrap(text: str) -> tuple[str, str]:
    """(what the user typed, the envelope around it) for text holding a ``<user_query>`` block."""
    start = text.find(_QUERY_OPEN)
    end = text.find(_QUERY_CLOSE, start + 1)
    if start == -1 or end == -1:
        return text, ""
    typed = text[start + len(_QUERY_OPEN):end].strip("\n")
    wrapper = (text[:start] + text[end + len(_QUERY_CLOSE):]).strip()
    return typed, wrapper


def _block_text(block: Any) -> str:
    """An ACP ContentBlock (text, image, audio, resource_link, resource) as text."""
    if isinstance(block, list):
        return "".join(_block_text(b) for b in block)
    if not isinstance(block, dict):
        return str(block or "")
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('uri') or block.get('mimeType') or ''}]".replace(" ]", "]")
    if kind == "resource_link":
        return f"[{block.get('name') or block.get('uri')}]"
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        return str(resource.get("text") or f"[{resource.get('uri')}]")
    return f"[{kind}]"


def _tool_output(update: dict) -> str:
    """A finished call's output: its content (text, diffs, terminals), else its raw output."""
    parts, terminals = [], []
    for item in update.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "content":
            parts.append(_block_text(item.get("content")))
        elif item.get("type") == "diff":
            parts.append(f"[diff {item.get('path')}]\n{item.get('newText') or ''}")
        elif item.get("type") == "terminal":  # a reference to live output: the raw output says more
            terminals.append(f"[terminal {item.get('terminalId')}]")
    text = "\n".join(p for p in parts if p)
    raw = update.get("rawOutput")
    if text or raw is None:
        return text or "\n".join(terminals) or f"[{update.get('status')}]"
    return raw if isinstance(raw, str) else orjson.dumps(raw).decode()


def _parts_text(content: Any) -> str:
    """A chat-history content: a string, or parts ({type: text|image_url|...})."""
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict):
            out.append(str(part.get("text")) if part.get("type") == "text" else f"[{part.get('type')}]")
    return "\n".join(out)


def _epoch(value: Any, per_second: int) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        with contextlib.suppress(OverflowError, OSError, ValueError):
            return _utc(datetime.fromtimestamp(value / per_second, tz=UTC))
    return None


def _utc(stamp: datetime) -> str:
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:79] + "…"
