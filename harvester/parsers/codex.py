"""OpenAI Codex CLI: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`` (and ``.jsonl.zst``).

Format facts and their sources: ``fixtures/codex/SOURCE.md`` (eras, upstream files, commits). In short:

- Since late 2025 each line is ``{"timestamp", "ordinal"?, "type", "payload"}``. ``session_meta``
  opens the file; ``response_item`` is the model-visible history and the ONE source of truth for
  the transcript. ``event_msg`` is the UI stream: its copies of the same content (``user_message``,
  ``agent_message``, ``agent_reasoning``, ``item_completed``, ``*_end``) are dropped; turn
  boundaries, token counts, rollbacks, reviews, errors and warnings are kept as facts or notices
  (``harvester/parsers/codex_events.py``).
- Injected context (developer instructions, AGENTS.md, environment context, skills, ...) arrives as
  ``message`` items too: it is filed as ``system``, never as the user's words. Codex 0.171 labels
  each content item (``content_item_kinds``); older files are told apart by their markup.
- Forks and subagents are files of their own, linked to their parent. A legacy fork copies the
  parent's records after its own ``session_meta``; a subagent may inherit records below
  ``subagent_history_start_ordinal``: those inherited copies are skipped (the parent holds them).
- Older eras: a TypeScript CLI's single ``rollout-*.json`` document; early Rust JSONL without the
  envelope (a header line, then bare items and ``{"record_type": "state"}`` lines).

TraeX (ByteDance's TRAE CLI 2.0) is a closed-source fork of codex-rs that writes the same rollout JSONL
under ``~/.trae/cli``: a member of this family with its own name, root and processes, read by this same
``parse`` (``fixtures/traex/SOURCE.md``).

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and Codex's
rollouts come in several eras: the format facts above and the functions that read them stay side by side.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, SessionPatch, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    json_objects,
    render_call,
    unknown_fields,
)
from harvester.parsers.codex_events import counts, event_msg, give_usage, usage_of

NAME = "codex"
# 2: each response's usage from token_count before 0.171 (cumulative totals), response ids (harvester usage).
# 3: messages without their type, Chat Completions calls and results, calls told by a summary, TraeX's
# history_mutation lines (issue 30).
VERSION = 3


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("cmd", "command", "path", "query", "message", "input")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex"]


def _without_zst(path: PurePath) -> PurePath:
    return path.with_suffix("")  # rollout-x.jsonl.zst -> rollout-x.jsonl, which wins if both exist


SOURCES = (
    SourceSpec("sessions/**/rollout-*.jsonl", "jsonl"),
    SourceSpec("sessions/**/rollout-*.jsonl.zst", "jsonl.zst", shadowed_by=_without_zst),
    SourceSpec("archived_sessions/**/rollout-*.jsonl", "jsonl", "archived"),
    SourceSpec("archived_sessions/**/rollout-*.jsonl.zst", "jsonl.zst", "archived", shadowed_by=_without_zst),
    SourceSpec("sessions/**/rollout-*.json", "json", "legacy-json"),
)

# The npm package's node launcher (@openai/codex) starts a native binary named codex.
PROCESSES = ("codex", "@openai/codex")

TRAEX_NAME = "traex"


def traex_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # TRAE CLI keeps its rollouts in ~/.trae/cli/{sessions,archived_sessions} (agentsview's registry). It
    # is closed source: no override of its own is known, and CODEX_HOME is deliberately not honoured, so
    # a rollout under $CODEX_HOME is never imported twice, once per member.
    return [home / ".trae" / "cli"]


# The same layout as Codex's (`traex archive` moves a rollout into archived_sessions/, as `codex archive`
# does); TRAE CLI keeps SQLite state beside them in ~/.trae/cli, which these patterns never match.
TRAEX_SOURCES = SOURCES
# `traex resume` (agentsview's notes): the executable is named traex.
TRAEX_PROCESSES = ("traex",)

_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.I)

# Text Codex puts into user-role messages itself (before 0.171 labelled its content items).
INJECTED_PREFIXES = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>",
    "<INSTRUCTIONS>", "<skill>", "<user_shell_command>", "<turn_aborted>", "<subagent_notification>",
    "<user_action>", "<codex_internal_context", "<goal_context>", "<recommended_plugins>", "<external_",
    "<collaboration_mode>", "<model_switch>", "Another language model started to solve this problem",
    "Warning: apply_patch was requested", "Warning: Your account was flagged",
    "Warning: The maximum number of unified exec",
)
_IDE_REQUEST = "## My request for Codex:"  # IDE extensions prepend editor context before this line
_ENV_CWD = re.compile(r"<cwd>([^<]+)</cwd>")
_IMAGE_LABEL = re.compile(r"^</?image\b[^>]*>$")

TOP_LEVEL_SKIPPED = frozenset({"world_state", "inter_agent_communication_metadata", "security_risk_score"})
# trae_extra_info: TraeX's UI-only annotation between items (agentsview's TraeX fixture), nothing of the transcript.
ITEM_SKIPPED = frozenset({"ghost_snapshot", "compaction", "context_compaction", "compaction_summary", "other",
                          "trae_extra_info"})

# The fields of each response item that some Codex version writes (codex-rs/protocol/src/models.rs at the
# commits fixtures/codex/SOURCE.md names, the TypeScript CLI's items, every fixture), and those the
# third-party shapes read here add. Any other field is reported as drift (``unknown_field``): a new
# release's field is noticed the day it appears, before anyone wonders where a text went.
_PASSTHROUGH = "internal_chat_message_metadata_passthrough"
ITEM_FIELDS: dict[str, frozenset[str]] = {
    "message": frozenset({"type", "id", "role", "content", "status", "phase", "end_turn", _PASSTHROUGH,
                          "function_call", "name", "tool_call_id"}),
    "agent_message": frozenset({"type", "id", "author", "recipient", "content", _PASSTHROUGH}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status", "duration_ms",
                            _PASSTHROUGH}),
    "function_call": frozenset({"type", "id", "call_id", "name", "namespace", "arguments", "status", "summary",
                                _PASSTHROUGH}),
    "custom_tool_call": frozenset({"type", "id", "call_id", "name", "namespace", "input", "status", "summary",
                                   _PASSTHROUGH}),
    "local_shell_call": frozenset({"type", "id", "call_id", "action", "status", _PASSTHROUGH}),
    "web_search_call": frozenset({"type", "id", "action", "status", _PASSTHROUGH}),
    "tool_search_call": frozenset({"type", "id", "call_id", "arguments", "execution", "status", _PASSTHROUGH}),
    "image_generation_call": frozenset({"type", "id", "revised_prompt", "result", "status", _PASSTHROUGH}),
    "function_call_output": frozenset({"type", "id", "call_id", "output", "status", _PASSTHROUGH}),
    "custom_tool_call_output": frozenset({"type", "id", "call_id", "name", "output", "status", _PASSTHROUGH}),
    "tool_search_output": frozenset({"type", "id", "call_id", "execution", "status", "tools", _PASSTHROUGH}),
}


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state)
        match = _UUID.search(ref.path.name)
        self.session_id: str = state.get("session") or (match.group(1).lower() if match else ref.path.stem)
        self.line = 0  # the record being parsed, for problems
        self.item_id: Any = None  # id of the response item being parsed, if it has one
        self.line_meta: dict[str, Any] = {}  # the line-level ``metadata`` of a response item
        self.last_assistant: Event | None = None  # receives the usage of the response it ends
        self.fields_seen: set[str] = set()

    def patch(self) -> SessionPatch:
        return self.batch.session(self.session_id)

    def event(self, raw: bytes, ts: Any, suffix: int | None = None, **fields: Any) -> Event:
        # Newer Codex gives response items an id (msg_..., fc_..., rs_...); older ones have none.
        item_id = self.item_id
        uid = f"id:{item_id}" if isinstance(item_id, str) and item_id else record_uid(raw, suffix)
        event = Event(self.session_id, uid, ts=ts if isinstance(ts, str) else None, **fields)
        self.batch.events.append(event)
        self.last_assistant = event if event.role == "assistant" else self.last_assistant
        return event

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def unknown_fields(self, where: str, data: dict, known: frozenset[str]) -> None:
        """Fields no Codex version was seen writing: one problem per kind of record and read."""
        detail = unknown_fields(where, data, known)
        if detail and detail not in self.fields_seen:
            self.fields_seen.add(detail)
            self.batch.problems.append(Problem("unknown_field", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            if ref.variant == "legacy-json":
                _legacy_document(reader, data, record)
            elif "payload" in data and isinstance(data.get("type"), str):
                _envelope(reader, data, record)
            else:
                _bare(reader, data, record)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"record of unexpected shape: {describe_error(exc)}"))
    reader.state["session"] = reader.session_id
    return reader.batch


def _envelope(reader: _Reader, data: dict, record: Record) -> None:
    kind, payload, ts = data["type"], data["payload"], data.get("timestamp")
    if _inherited(reader, kind, payload, data.get("ordinal")):
        if kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count":
            total = counts((payload.get("info") or {}).get("total_token_usage"))
            if total is not None:  # the parent's running total: what this session's own first one grew from
                reader.state["codex_total"] = total
        return
    if isinstance(ts, str):
        reader.patch().updated_at = ts
    handler = TOP_LEVEL.get(kind)
    if handler is not None:
        reader.line_meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        handler(reader, payload, record.raw, ts)
    elif kind not in TOP_LEVEL_SKIPPED:
        reader.drift(f"type={kind!r}")


def _inherited(reader: _Reader, kind: str, payload: Any, ordinal: Any) -> bool:
    """Is this record a copy of the parent's history (already imported with the parent)?"""
    state = reader.state
    below = state.get("inherit_below")
    if below is not None and isinstance(ordinal, int) and ordinal < below:
        return True
    if not state.get("copying"):
        return False
    # A legacy fork copies the parent's lines after its own session_meta. The copy ends where the
    # fork's own work starts: settings applied (2026-05+), or a turn started after the fork was
    # created (turn ids are UUIDv7, ordered by time like the session id).
    if kind == "event_msg" and isinstance(payload, dict):
        if payload.get("type") == "thread_settings_applied":
            state["copying"] = False
            return True
        turn = payload.get("turn_id")
        if payload.get("type") == "task_started" and isinstance(turn, str) and turn >= reader.session_id:
            state["copying"] = False
            return False
    return True


# -- top-level records ---------------------------------------------------------------------
def _session_meta(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    meta = payload.get("meta") if isinstance(payload.get("meta"), dict) else payload
    native = meta.get("id") or meta.get("session_id")
    if reader.state.get("meta_seen"):
        if native and str(native) != reader.session_id:
            reader.state["copying"] = True  # a legacy fork's copy of its parent starts here
        return
    reader.state["meta_seen"] = True
    if native and not _UUID.search(reader.ref.path.name):
        reader.session_id = str(native)
    patch = reader.patch()
    patch.cwd = meta.get("cwd") or None
    reader.state["cwd_known"] = bool(patch.cwd)
    started = meta.get("timestamp") if isinstance(meta.get("timestamp"), str) else ts
    patch.started_at = started if isinstance(started, str) else None
    patch.agent_version = meta.get("cli_version")
    git = meta.get("git")
    if isinstance(git, dict):
        patch.git = GitFacts(branch=git.get("branch"), commit=git.get("commit_hash"),
                             origin_url=git.get("repository_url"))
    if meta.get("forked_from_id"):
        patch.parent_native_id, patch.parent_kind = str(meta["forked_from_id"]), "fork"
    parent = meta.get("parent_thread_id") or _spawn_parent(meta.get("source"))
    if parent:
        patch.parent_native_id, patch.parent_kind = str(parent), "subagent"
    if isinstance(meta.get("subagent_history_start_ordinal"), int):
        reader.state["inherit_below"] = meta["subagent_history_start_ordinal"]
    extras = {k: meta[k] for k in ("originator", "source", "model_provider", "agent_nickname", "agent_role",
                                   "agent_path") if meta.get(k) is not None}
    if extras:
        patch.note(**extras)


def _fallback_cwd(reader: _Reader, cwd: str) -> None:
    """Some eras record no cwd in session_meta; the first turn's cwd is where the session started."""
    if not reader.state.get("cwd_known"):
        reader.state["cwd_known"] = True
        reader.patch().cwd = cwd


def _spawn_parent(source: Any) -> str | None:
    """``source`` of a spawned subagent: ``{"subagent": {"thread_spawn": {"parent_thread_id": ...}}}``."""
    if isinstance(source, dict) and isinstance(source.get("subagent"), dict):
        spawn = source["subagent"].get("thread_spawn")
        if isinstance(spawn, dict) and spawn.get("parent_thread_id"):
            return str(spawn["parent_thread_id"])
    return None


def _turn_context(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    if payload.get("cwd"):
        _fallback_cwd(reader, str(payload["cwd"]))
    if payload.get("model"):
        reader.state["model"] = payload["model"]
        reader.patch().model = payload["model"]


def _compacted(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    message = payload.get("message") or ""
    window = payload.get("window_number")
    label = "conversation compacted" + (f" (window {window})" if window is not None else "")
    if reader.state.pop("summary_seen", False) or not message:
        text = label  # the summary itself was its own record just before (or remote: unreadable)
    else:
        text = message
    reader.event(raw, ts, role="system", kind="compaction", text=text, meta={"window": window})


def _token_usage_record(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    """Exact usage of one model response (0.171+): it follows the response's last item. A rollout that has them
    takes its usage from them alone, not from the token_count written after each (codex_events)."""
    reader.state["exact_usage"] = True
    usage = counts(payload.get("usage"))
    if usage is not None:
        response = payload.get("response_id")
        give_usage(reader, usage_of(usage, response if isinstance(response, str) and response else None), raw, ts)
    reader.last_assistant = None


def _history_mutation(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    """TraeX (TRAE CLI 0.200, agentsview's fixture): ``{operation: "append", items: [response items]}``, the items
    a turn adds, several to a line. Each is read as its own ``response_item`` line would be; another operation
    (one that rewrites history) is drift until a reader knows what it does."""
    operation = payload.get("operation")
    if operation != "append":
        reader.drift(f"history_mutation operation={operation!r}")
        return
    for index, item in enumerate(payload.get("items") or []):
        if isinstance(item, dict):  # items have no ids of their own: the line and the position are theirs
            _response_item(reader, item, raw + f"#{index}".encode(), ts)


def _inter_agent(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    _from_agent(reader, raw, ts, _content_text(payload.get("content")), payload.get("author"),
                payload.get("recipient"))


def _response_item(reader: _Reader, item: dict, raw: bytes, ts: Any) -> None:
    itype = item.get("type")
    if itype is None and "role" in item:
        itype = "message"  # agentsview's fixtures write messages without their type (Codex always names it)
    handler = ITEMS.get(itype) if isinstance(itype, str) else None
    if handler is None:
        if itype not in ITEM_SKIPPED:
            reader.drift(f"response_item={itype!r}")
        return
    reader.unknown_fields(f"response_item {itype}", item, ITEM_FIELDS.get(itype, frozenset()))
    reader.item_id = item.get("id")
    try:
        handler(reader, item, raw, ts)
    finally:
        reader.item_id = None


# -- response items ------------------------------------------------------------------------
def _message(reader: _Reader, item: dict, raw: bytes, ts: Any) -> None:
    role = item.get("role")
    content = item.get("content")
    text = _content_text(content)
    if isinstance(item.get("function_call"), dict) or role in ("function", "tool"):
        _chat_completions(reader, item, raw, ts, text)
        return
    model = reader.state.get("model")
    if role == "assistant":
        if reader.line_meta.get("compaction_output"):
            reader.state["summary_seen"] = True
            summary = reader.event(raw, ts, role="system", kind="compaction", text=text, meta={"summary": True})
            reader.last_assistant = summary  # the model wrote it: its usage record follows
        else:
            phase = item.get("phase")
            reader.event(raw, ts, role="assistant", kind="text", text=text, model=model,
                         meta={"phase": phase} if phase else None)
        return
    if role == "user" and _typed_by_user(item, content, text):
        if _IDE_REQUEST in text:
            text = text.split(_IDE_REQUEST, 1)[1].strip()
        reader.event(raw, ts, role="user", kind="text", text=text)
        if not reader.state.get("titled") and text.strip():
            reader.state["titled"] = True
            _offer_first_line(reader, text)
        return
    if role == "system":  # the TypeScript CLI's own error notices
        reader.event(raw, ts, role="system", kind="meta", text=text, meta={"notice": True})
        return
    reader.event(raw, ts, role="system", kind="text", text=text, meta={"injected": True, "from": role})
    cwd = _ENV_CWD.search(text) if "<environment_context>" in text else None
    if cwd:
        _fallback_cwd(reader, cwd.group(1).strip())


def _chat_completions(reader: _Reader, item: dict, raw: bytes, ts: Any, text: str) -> None:
    """A message in the Chat Completions shape (cass's fixtures): an assistant's ``function_call``, a
    ``function`` (or ``tool``) role message holding its result. No Codex release wrote these; read as what
    they plainly are, calls and results, rather than lost."""
    call = item.get("function_call")
    if isinstance(call, dict):
        if text:
            reader.event(raw, ts, suffix=0, role="assistant", kind="text", text=text, model=reader.state.get("model"))
        _tool_call(reader, {"type": "function_call", "name": call.get("name"), "arguments": call.get("arguments"),
                            "call_id": item.get("tool_call_id")}, raw + b"#call", ts)
        return
    call_id = _call_id(item.get("tool_call_id"))
    name = (reader.state.get("tools", {}).pop(call_id, None) if call_id else None) or item.get("name")
    reader.event(raw, ts, role="tool", kind="tool_result", text=text, tool_call_id=call_id,
                 tool_name=name if isinstance(name, str) else None)


def _typed_by_user(item: dict, content: Any, text: str) -> bool:
    """0.171 labels every content item (``user.text``, ``environments.environment_context``,
    ``multi_agent.subagent_notification``, ...); older files only tell by the text's markup."""
    passthrough = item.get("internal_chat_message_metadata_passthrough")
    kinds = passthrough.get("content_item_kinds") if isinstance(passthrough, dict) else None
    if isinstance(kinds, list) and kinds:
        return all(isinstance(k, str) and k.startswith("user.") for k in kinds)
    parts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "input_text"]
    return not any(p.lstrip().startswith(INJECTED_PREFIXES) for p in parts or [text])


def _agent_message(reader: _Reader, item: dict, raw: bytes, ts: Any) -> None:
    """A message between agents (a subagent's task from its parent, or its answer back)."""
    _from_agent(reader, raw, ts, _content_text(item.get("content")), item.get("author"), item.get("recipient"))


def _from_agent(reader: _Reader, raw: bytes, ts: Any, text: str, author: Any, recipient: Any) -> None:
    reader.event(raw, ts, role="system", kind="text", text=text,
                 meta={"from_agent": author, "to_agent": recipient})
    if not reader.state.get("titled") and text.strip() and reader.patch().parent_kind == "subagent":
        reader.state["titled"] = True  # a subagent's first task names it
        _offer_first_line(reader, text)


def _reasoning(reader: _Reader, item: dict, raw: bytes, ts: Any) -> None:
    parts = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
    parts += [c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict)]
    text = "\n\n".join(p for p in parts if p)
    if text:  # encrypted-only reasoning has nothing readable to keep
        reader.event(raw, ts, role="assistant", kind="thinking", text=text, model=reader.state.get("model"))


def _tool_call(reader: _Reader, item: dict, raw: bytes, ts: Any) -> None:
    itype = item.get("type")
    name = item.get("name")
    tool_input: Any = item.get("arguments") if "arguments" in item else item.get("input")
    if isinstance(tool_input, str) and itype != "custom_tool_call":
        with contextlib.suppress(orjson.JSONDecodeError):
            tool_input = orjson.loads(tool_input)
    text = None
    if itype == "local_shell_call":
        name, tool_input = "local_shell", (item.get("action") or {}).get("command")
    elif itype == "web_search_call":
        name, tool_input = "web_search", item.get("action")
    elif itype == "tool_search_call":
        name = "tool_search"
    elif itype == "image_generation_call":
        name, tool_input = "image_generation", {"prompt": item.get("revised_prompt")}
        text = f"image_generation: {item.get('revised_prompt') or ''} [image generated]"
    if item.get("namespace"):
        name = f"{item['namespace']}.{name}"
    call_id = _call_id(item.get("call_id")) or _call_id(item.get("id"))
    if call_id:  # a call without an id has no result to bridge to (and None cannot key the JSON state)
        tools = reader.state.setdefault("tools", {})
        tools[call_id] = name
        while len(tools) > 64:  # the id -> name map only bridges a call and its result
            tools.pop(next(iter(tools)))
    text = text or render_call(name, tool_input, _CALL_KEYS)
    summary = item.get("summary") if itype in ("function_call", "custom_tool_call") else None
    if isinstance(summary, str) and summary.strip():  # agentsview's fixtures: a call told by a summary line
        text = f"{text}\n{summary}"
    reader.event(raw, ts, role="assistant", kind="tool_call", text=text,
                 tool_name=name, tool_input=tool_input, tool_call_id=call_id, model=reader.state.get("model"))


def _tool_output(reader: _Reader, item: dict, raw: bytes, ts: Any) -> None:
    output = item.get("output") if "output" in item else item.get("tools")
    is_error = False
    if isinstance(output, str) and output.startswith('{"output"'):
        try:  # before the envelope era: {"output": "...", "metadata": {"exit_code": n, ...}}
            wrapped = orjson.loads(output)
            output = wrapped.get("output", output)
            is_error = bool((wrapped.get("metadata") or {}).get("exit_code"))
        except (orjson.JSONDecodeError, AttributeError):
            pass
    if isinstance(output, dict):  # read as {"content", "success"}; Codex writes text or content items
        is_error = output.get("success") is False
        output = output["content"] if "content" in output else orjson.dumps(output).decode()
    if item.get("type") == "tool_search_output" and isinstance(output, list):
        text = "tools: " + ", ".join(str(t.get("name")) for t in output if isinstance(t, dict))
    else:
        text = output if isinstance(output, str) else _content_text(output)
    call_id = _call_id(item.get("call_id"))
    reader.event(raw, ts, role="tool", kind="tool_result", text=text, tool_call_id=call_id,
                 tool_name=reader.state.get("tools", {}).pop(call_id, None) if call_id else None, is_error=is_error)


# -- eras before the envelope --------------------------------------------------------------
def _bare(reader: _Reader, data: dict, record: Record) -> None:
    """Rust CLI, May-Sept 2025: a header line, then bare response items and state lines."""
    if "record_type" in data:
        return  # {"record_type": "state"}: bookkeeping
    if "type" not in data and "id" in data:
        _session_meta(reader, data, record.raw, data.get("timestamp"))
        return
    _response_item(reader, data, record.raw, data.get("timestamp"))


def _legacy_document(reader: _Reader, data: dict, record: Record) -> None:
    """TypeScript CLI: one JSON document ``{"session": {...}, "items": [...]}``, rewritten whole."""
    session = data.get("session") or {}
    _session_meta(reader, session, record.raw, session.get("timestamp"))
    ts = session.get("timestamp")
    for index, item in enumerate(data.get("items") or []):
        if isinstance(item, dict):
            # No ids and no times per item: identity is the item itself at its position.
            raw = orjson.dumps(item, option=orjson.OPT_SORT_KEYS) + f"#{index}".encode()
            _response_item(reader, item, raw, ts)


# -- helpers -------------------------------------------------------------------------------
def _call_id(value: Any) -> str | None:
    """A call id as Codex writes it (``call_...``); anything else is no id."""
    return value if isinstance(value, str) and value else None


def _offer_first_line(reader: _Reader, text: str) -> None:
    first = text.strip().splitlines()[0]
    reader.patch().offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict):
            btype = block.get("type")
            if btype in ("input_text", "output_text", "text"):
                text = block.get("text") or ""
                if not _IMAGE_LABEL.match(text.strip()):
                    parts.append(text)
            elif btype in ("input_image", "image"):
                parts.append("[image]")
            else:
                parts.append(f"[{btype}]")
    return "\n".join(parts)


Handler = Callable[[_Reader, dict, bytes, Any], None]

TOP_LEVEL: dict[str, Handler] = {
    "session_meta": _session_meta,
    "turn_context": _turn_context,
    "response_item": _response_item,
    "event_msg": event_msg,
    "compacted": _compacted,
    "token_usage_record": _token_usage_record,
    "inter_agent_communication": _inter_agent,
    "history_mutation": _history_mutation,
}

ITEMS: dict[str, Handler] = {
    "message": _message,
    "agent_message": _agent_message,
    "reasoning": _reasoning,
    "function_call": _tool_call,
    "custom_tool_call": _tool_call,
    "local_shell_call": _tool_call,
    "web_search_call": _tool_call,
    "tool_search_call": _tool_call,
    "image_generation_call": _tool_call,
    "function_call_output": _tool_output,
    "custom_tool_call_output": _tool_output,
    "tool_search_output": _tool_output,
}
