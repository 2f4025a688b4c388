"""GitHub Copilot CLI: ``~/.copilot/session-state/<id>/events.jsonl`` (+ ``workspace.yaml``), older layouts.

Format facts, their sources (the npm bundle @github/copilot 0.0.340 … 1.0.62 and the app 1.0.102 unpacks,
read as text; real 1.0.102 runs in ``fixtures/copilot_cli/real``) and the versions of each layout:
``fixtures/copilot_cli/SOURCE.md``. In short:

- 0.0.343+: one ``{type, data, id, timestamp, parentId}`` event per line, in ``session-state/<id>.jsonl``
  (to 0.0.376) or ``session-state/<id>/events.jsonl`` (0.0.380+; a flat file is moved there when its session
  is next written). A subagent's events sit in its parent's file, tagged ``agentId`` (the spawning tool
  call's id; 1.0.102: the instance's own id, which its ``subagent.started`` pairs with the call) or
  ``data.parentToolCallId``: they become session ``<id>:<toolCallId>``. Text the CLI
  sends by itself (``system.message``, a ``user.message`` with a ``source``) is injected system text.
  ``session.shutdown`` ends a session; ``/fork`` copies the source's events (ids kept) before a
  ``session.info`` of infoType ``fork``: the copies are the source's, dropped here.
- Before: ``history-session-state/session_<id>_<ms>.json``, a document rewritten whole, whose ``timeline``
  entries have ids; a newer CLI resuming it copies it into ``session.import_legacy``: same ids, same events.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and every
version's layout is read here: the format facts above and the functions that read them stay side by side.
"""

from __future__ import annotations

import contextlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Mark, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_objects, render_call

NAME = "copilot-cli"


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "path", "pattern", "query", "url", "description", "prompt", "intent")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    bases = [Path(env["COPILOT_HOME"]).expanduser()] if env.get("COPILOT_HOME") else []
    bases.append(home / ".copilot")  # releases before 1.0 ignored COPILOT_HOME: their sessions stay here
    if env.get("XDG_STATE_HOME"):  # up to 0.0.423 state went there when it was set
        bases.append(Path(env["XDG_STATE_HOME"]).expanduser() / ".copilot")
    # The state folders, not ~/.copilot itself: the service watches roots recursively, and ~/.copilot
    # also holds pkg/ (auto-updated CLI packages) and logs/.
    return [base / folder for base in bases for folder in ("session-state", "history-session-state")]


def _workspace_yaml(path: PurePath) -> PurePath:
    return path.with_name("workspace.yaml")


def _flat_workspace_yaml(path: PurePath) -> PurePath:
    return path.with_suffix("") / "workspace.yaml"


def _moved_events(path: PurePath) -> PurePath:
    return path.with_suffix("") / "events.jsonl"  # a flat <id>.jsonl is copied here, then deleted


SOURCES = (
    SourceSpec("*/events.jsonl", "jsonl", "events", sidecar=_workspace_yaml),
    SourceSpec("*.jsonl", "jsonl", "flat", shadowed_by=_moved_events, sidecar=_flat_workspace_yaml),
    SourceSpec("*.json", "json", "legacy"),  # history-session-state/session_<id>_<ms>.json
)

# `copilot`: node running the npm package (index.js, npm-loader.js), or since 1.0.6x a native binary of
# that name from @github/copilot-<platform>.
PROCESSES = ("copilot", "@github/copilot")

# Written to events.jsonl but nothing for a transcript (approvals, hooks, bookkeeping), then every type the
# CLI marks ephemeral (never written; listed in case a version does): skipped on purpose, not drift.
BOOKKEEPING = frozenset({
    "session.compaction_start", "session.workspace_file_changed", "session.remote_steerable_changed",
    "hook.start", "hook.end", "permission.requested", "permission.completed", "external_tool.requested",
    # 1.0.102: receipts, restore state, HydraFusion phases (the answer is an assistant.message), ask_user.
    *"""subagent.configured session.usage_checkpoint session.completion_receipt session.binary_asset
    session.request_body_compression_disabled session.session_limits_changed session.mode_notice_delivered
    session.schedule_rearmed session.canvas.recorded session.canvas.removed tool_search.activated
    mcp.oauth_recovery_completed human_response.recorded skill.context_delivered_ref permission.assentDetected
    permission.carriedForward permission.contextualAuthorization permission.messageAuthorization
    permission.messageAuthorizationDegraded permission.messageAuthorizationRead session.fusion_change_checkpoint
    session.fusion_commit_started session.fusion_completed session.fusion_handoff session.fusion_resolved
    session.fusion_route_failed assistant.fusion_phase_completed assistant.fusion_phase_failed""".split(),
    *"""session.idle session.title_changed session.usage_info session.snapshot_rewind session.todos_changed
    pending_messages.modified assistant.intent assistant.reasoning_delta assistant.streaming_delta
    assistant.message_start assistant.message_delta assistant.usage model.call_failure hook.progress
    tool.execution_partial_result tool.execution_progress user_input.requested user_input.completed
    elicitation.requested elicitation.completed sampling.requested sampling.completed mcp.oauth_required
    mcp.oauth_completed session.custom_notification external_tool.completed command.queued command.execute
    command.completed auto_mode_switch.requested auto_mode_switch.completed commands.changed
    capabilities.changed exit_plan_mode.requested exit_plan_mode.completed session.tools_updated
    session.background_tasks_changed session.skills_loaded session.custom_agents_updated
    session.mcp_servers_loaded session.mcp_server_status_changed session.extensions_loaded
    session.canvas.opened session.canvas.registry_changed session.canvas.closed
    session.extensions.attachments_pushed mcp_app.tool_call_complete""".split(),
})
# user.message sources the CLI itself shows as the user's (remote commands, prompts the user scheduled);
# any other source is text the CLI sent on its own.
TYPED_SOURCES = ("command-", "schedule-")
# custom_agent.* (0.0.372-0.0.380) are the same records under their first name.
SUBAGENT_LIFECYCLE = frozenset({"subagent.started", "subagent.completed", "subagent.failed",
                                "custom_agent.started", "custom_agent.completed", "custom_agent.failed"})

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_LEGACY_NAME = re.compile(r"^session_(.+)_(\d+)$")
_TRUSTED = re.compile(r"^Folder (.+) has been added to trusted folders\.$")
_CWD_RANK = {"context": 3, "workspace": 2, "resume": 2, "trusted": 1}


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.state = state
        self.batch = Batch(state=state, revise=ref.variant == "legacy")  # a document's streamed text grows
        self.sid: str = state.get("session") or _session_from_path(ref)
        self.line = 0
        self.kind = ""  # type of the record being read
        self.uid = ""  # id of the record (or timeline entry) being read
        self.ts: str | None = None
        self.target = self.sid  # the session the record's events belong to
        self.read_before = "first" in state  # events of this file were committed by an earlier read
        self.batch.session(self.sid)

    def main(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def event(self, suffix: str | None = None, **fields: Any) -> None:
        uid = self.uid if suffix is None else f"{self.uid}:{suffix}"
        self.batch.events.append(Event(self.target, uid, ts=self.ts, **fields))
        if self.target == self.sid:
            self.state.setdefault("first", uid)

    def meta(self, text: str, **extra: Any) -> None:
        self.event(role="system", kind="meta", text=text, meta={"event": self.kind, **extra})

    def call(self, suffix: str | None, call_id: Any, name: Any, arguments: Any, **fields: Any) -> None:
        if call_id:  # bridges a call to its result, and to its subagent; a call without an id bridges nothing
            calls = self.state.setdefault("calls", {})
            calls[str(call_id)] = [name, self.target]
            _trim(calls, 64)
        arguments = _arguments(arguments)
        fields = {"role": "assistant", "model": self.state.get("model"), **fields}
        self.event(suffix, kind="tool_call", text=_render_call(name, arguments), tool_name=name,
                   tool_input=arguments, tool_call_id=call_id, **fields)

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def child(self, key: str) -> str:
        """The session of a subagent, spawned by tool call ``key`` of whichever session made that call."""
        agents = self.state.setdefault("agents", {})
        if key not in agents:
            agents[key] = (self.state.get("calls", {}).get(key) or [None, self.sid])[1]
            _trim(agents, 32)
        native = f"{self.sid}:{key}"
        patch = self.batch.session(native)
        patch.parent_native_id, patch.parent_kind = agents[key], "subagent"
        patch.cwd = patch.cwd or self.state.get("cwd")
        if self.ts:
            patch.started_at = min(patch.started_at or self.ts, self.ts)  # the bank keeps the earliest
            patch.updated_at = self.ts
        return native

    def set_cwd(self, cwd: Any, rank: str) -> None:
        if isinstance(cwd, str) and cwd and _CWD_RANK[rank] > self.state.get("cwd_rank", 0):
            self.state["cwd"], self.state["cwd_rank"] = cwd, _CWD_RANK[rank]
            self.main().cwd = cwd

    def turn(self, value: str) -> None:
        """Whether the last turn finished: the service tells an abandoned session from an ended one by it."""
        legacy = self.kind.startswith("timeline")  # a document has no turns, only its entries
        if self.target == self.sid and self.state.get("turn") != value and not legacy:
            self.state["turn"] = value
            self.main().note(last_turn=value)


def _session_from_path(ref: SourceRef) -> str:
    if ref.variant == "events":
        return ref.path.parent.name
    match = _LEGACY_NAME.match(ref.path.stem)
    return match.group(1) if match and ref.variant == "legacy" else ref.path.stem


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.sidecar is not None:
        _workspace(reader, ref.sidecar)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            (_legacy_document if ref.variant == "legacy" else _record)(reader, data, record.raw)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"unexpected shape: {describe_error(exc)}"))
    state["session"] = reader.sid
    return reader.batch


def _record(reader: _Reader, data: dict, raw: bytes) -> None:
    if data.get("ephemeral") is True:
        return  # never written by the CLI; a copy from elsewhere (an SDK replay) has nothing to keep
    kind = data.get("type")
    handler = HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        if kind not in BOOKKEEPING:
            reader.drift(f"type={kind!r}")
        return
    payload = data.get("data") if isinstance(data.get("data"), dict) else {}
    reader.kind = kind
    reader.uid = str(data["id"]) if data.get("id") else record_uid(raw, context=reader.state.get("last_id"))
    reader.state["last_id"] = reader.uid
    reader.ts = data["timestamp"] if isinstance(data.get("timestamp"), str) else None
    if reader.ts:
        reader.main().updated_at = reader.ts
    # Tagged with the spawning call, or (1.0.102) an id its subagent.started pairs with the call.
    agent, aliases = data.get("agentId"), reader.state.setdefault("aliases", {})
    key = payload.get("toolCallId") if kind in SUBAGENT_LIFECYCLE else (
        aliases.get(str(agent), agent) if agent else payload.get("parentToolCallId"))
    if agent and key and kind in SUBAGENT_LIFECYCLE:
        aliases[str(agent)] = str(key)
        _trim(aliases, 32)
    reader.target = reader.child(str(key)) if key else reader.sid
    handler(reader, payload)


# -- session facts ---------------------------------------------------------------------------
def _start(reader: _Reader, p: dict) -> None:
    """session.start (the first one: a legacy import writes one more), and session.resume."""
    patch = reader.main()
    if reader.kind == "session.resume":
        patch.state = "live"
        reader.meta("session resumed")
    elif reader.state.get("started"):
        return
    else:
        reader.state["started"] = True
        patch.started_at = p["startTime"] if isinstance(p.get("startTime"), str) else reader.ts
        patch.agent_version = p.get("copilotVersion") or None
        parent = p.get("detachedFromSpawningParentSessionId")  # a headless run continuing its parent's work
        if parent:
            patch.parent_native_id, patch.parent_kind = str(parent), "subagent"
    _model(reader, p.get("selectedModel"))
    _context(reader, p.get("context"), "resume" if reader.kind == "session.resume" else "context")


def _context(reader: _Reader, context: Any, rank: str) -> None:
    if not isinstance(context, dict):
        return
    reader.set_cwd(context.get("cwd"), rank)
    host, repo = context.get("repositoryHost"), context.get("repository")
    origin = None
    if isinstance(host, str) and isinstance(repo, str) and repo:  # repositoryHost: 1.0.6x; never guessed
        owner, _, name = repo.rpartition("/")  # Azure DevOps: org/project/repo
        origin = f"https://{host}/" + (f"{owner}/_git/{name}" if context.get("hostType") == "ado" else repo)
    if context.get("branch") or context.get("headCommit") or origin:
        reader.main().git = GitFacts(context.get("branch"), context.get("headCommit"), origin)
    if context.get("repository"):  # owner/name: the identity when no origin URL was recorded
        reader.main().note(repository=context["repository"])


def _model(reader: _Reader, model: Any) -> None:
    if isinstance(model, str) and model and reader.target == reader.sid:
        reader.state["model"] = reader.main().model = model


def _shutdown(reader: _Reader, p: dict) -> None:
    patch = reader.main()
    patch.state = "ended"
    if not reader.state.get("model"):
        _model(reader, p.get("currentModel"))
    if isinstance(p.get("modelMetrics"), dict):
        patch.note(usage={m: v.get("usage") for m, v in p["modelMetrics"].items() if isinstance(v, dict)})
    error = p.get("errorReason") if p.get("shutdownType") == "error" else None
    reader.meta(f"session ended with an error: {error}" if error else "session ended",
                shutdown=p.get("shutdownType"))


def _info(reader: _Reader, p: dict) -> None:
    """session.info, and the info / warning / error entries of a legacy timeline."""
    info, message = p.get("infoType"), str(p.get("message") or "")
    trusted = _TRUSTED.match(message)
    if trusted:  # before 0.0.388 session.start has no cwd; the folder trusted at start is the best hint
        reader.set_cwd(trusted.group(1), "trusted")
    parent = _UUID.search(message) if info == "fork" and message.startswith("Forked from") else None
    if parent and reader.target == reader.sid and not reader.state.get("forked"):
        # Every event before this one is the source session's, copied with its ids (and its subagents').
        reader.state["forked"] = True
        reader.main().parent_native_id, reader.main().parent_kind = parent.group(0), "fork"
        reader.batch.events.clear()
        for native in [n for n in reader.batch.sessions if n != reader.sid]:
            del reader.batch.sessions[native]
        if reader.read_before:  # copies committed by an earlier read: marked, they cannot be taken back
            reader.batch.marks.append(Mark(reader.sid, {"inherited_from": parent.group(0)},
                                           since=reader.state["first"], until=reader.uid))
    reader.meta(message, info=info)


def _context_changed(reader: _Reader, p: dict) -> None:
    _context(reader, {k: v for k, v in p.items() if k != "cwd"}, "context")  # cwd: where it started
    reader.meta(f"working directory: {p.get('cwd')}" + (f" ({p['branch']})" if p.get("branch") else ""))


def _import_legacy(reader: _Reader, p: dict) -> None:
    """A pre-0.0.343 session resumed by a newer CLI: its whole document, whose file is then deleted."""
    legacy = p.get("legacySession") or {}
    _model(reader, legacy.get("selectedModel"))
    reader.main().note(legacy_file=p.get("sourceFile"))
    _timeline(reader, legacy.get("timeline") or [])


# -- conversation ----------------------------------------------------------------------------
def _user(reader: _Reader, p: dict) -> None:
    content = p.get("content") if isinstance(p.get("content"), str) else ""
    names = [a.get("displayName") or a.get("path") for a in p.get("attachments") or [] if isinstance(a, dict)]
    text = content or (f"[attachments: {', '.join(map(str, names))}]" if names else "")
    source = p.get("source")
    meta: dict[str, Any] = {k: v for k, v in (("source", source), ("attachments", names)) if v}
    reader.turn("open")
    if (isinstance(source, str) and not source.startswith(TYPED_SOURCES)) or p.get("isAutopilotContinuation"):
        reader.event(role="system", kind="text", text=text, meta={"injected": True, **meta})
    elif text:
        reader.event(role="user", kind="text", text=text, meta=meta or None)
        if not reader.state.get("titled") and reader.target == reader.sid and content.strip():
            reader.state["titled"] = True
            reader.main().offer_title(_first_line(content), "first-prompt")


def _assistant(reader: _Reader, p: dict) -> None:
    _model(reader, p.get("model"))
    model = p.get("model") or reader.state.get("model")
    start = len(reader.batch.events)
    _thinking(reader, p.get("reasoningText"), "thinking", model)
    if isinstance(p.get("content"), str) and p["content"].strip():
        reader.event(role="assistant", kind="text", text=p["content"], model=model,
                     meta={"phase": p["phase"]} if p.get("phase") else None)
    requests = [r for r in p.get("toolRequests") or [] if isinstance(r, dict)]
    for n, r in enumerate(requests):
        call_id = r.get("toolCallId") if isinstance(r.get("toolCallId"), str) and r["toolCallId"] else None
        reader.call(call_id or f"call#{n}", call_id, r.get("name"), r.get("arguments"), model=model)
    counts = reader.state.setdefault("usage", {}).pop(reader.target, None) or [0] * 5  # its usage_record
    if isinstance(p.get("outputTokens"), int):  # before 1.0.102 the message's own count
        counts[1] = p["outputTokens"]
    if (any(counts) or isinstance(p.get("outputTokens"), int)) and len(reader.batch.events) > start:
        reader.batch.events[start].usage = Usage(*counts)
    if reader.target == reader.sid:
        reader.state["pending"] = bool(requests)  # the agent loop goes on after the tool results


def _usage_record(reader: _Reader, p: dict) -> None:
    """1.0.102: one per model call, before the (countless) assistant.message; input includes the cache."""
    u = p.get("usage") if isinstance(p.get("usage"), dict) else {}
    n = {k: u[k] if isinstance(u.get(k), int) else 0 for k in (
        "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")}
    uncached = max(n["inputTokens"] - n["cacheReadTokens"] - n["cacheWriteTokens"], 0)
    reader.state.setdefault("usage", {})[reader.target] = [uncached, *list(n.values())[1:]]


def _thinking(reader: _Reader, text: Any, suffix: str | None, model: Any) -> None:
    if not isinstance(text, str) or not text.strip():
        return
    import hashlib  # here: status imports every parser for its roots; OpenSSL's is a cost of its own

    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    if reader.state.get("thought") != digest:  # assistant.reasoning repeats the message's reasoningText
        reader.state["thought"] = digest
        reader.event(suffix, role="assistant", kind="thinking", text=text, model=model)


def _tool_start(reader: _Reader, p: dict) -> None:
    """A call no assistant message announced, or a tool the user ran (``!command``: tool.user_requested)."""
    if str(p.get("toolCallId")) in reader.state.get("calls", {}):
        return  # announced by the assistant message's toolRequests
    by_user = reader.kind == "tool.user_requested"
    fields = ({"role": "user", "model": None, "meta": {"user_requested": True}} if by_user
              else {"model": p.get("model") or reader.state.get("model")})
    reader.call(None, p.get("toolCallId"), p.get("toolName"), p.get("arguments"), **fields)


def _tool_done(reader: _Reader, p: dict) -> None:
    result = p.get("result") if isinstance(p.get("result"), dict) else {}
    error = p.get("error") if isinstance(p.get("error"), dict) else {}
    text = result.get("content") or result.get("detailedContent") or ""
    if p.get("success") is False and error.get("message"):
        text = str(error["message"]) + (f" ({error['code']})" if error.get("code") else "")
    call = reader.state.get("calls", {}).get(str(p.get("toolCallId"))) or [None]
    _model(reader, p.get("model"))
    reader.event(role="tool", kind="tool_result", text=str(text), tool_call_id=p.get("toolCallId"),
                 tool_name=call[0], is_error=p.get("success") is False,
                 meta={"user_requested": True} if p.get("isUserRequested") else None)


def _injected(reader: _Reader, p: dict) -> None:
    """Text the CLI puts before the model by itself: system prompts, notifications, skill files."""
    extra = {k: p[k] for k in ("role", "name") if isinstance(p.get(k), str)}
    if isinstance(p.get("kind"), dict):
        extra["notification"] = p["kind"].get("type")
    reader.event(role="system", kind="text", text=str(p.get("content") or ""),
                 meta={"injected": True, "from": reader.kind, **extra})


def _compaction(reader: _Reader, p: dict) -> None:
    if p.get("success") is False:
        return reader.meta(f"compaction failed: {p.get('error') or '?'}")
    summary = p.get("summaryContent")
    text = summary if isinstance(summary, str) and summary.strip() else "conversation compacted"
    reader.event(role="system", kind="compaction", text=text,
                 meta={"checkpoint": p.get("checkpointNumber"), "messages_removed": p.get("messagesRemoved")})


def _subagent(reader: _Reader, p: dict) -> None:
    """subagent.started / completed / failed: the subagent's session opens and closes."""
    patch = reader.batch.session(reader.target)
    patch.model = p.get("model") or patch.model
    label = ": ".join(str(p[k]) for k in ("agentDisplayName", "agentDescription") if p.get(k))
    if reader.kind.endswith(".started"):
        patch.offer_title(_first_line(label or str(p.get("agentName"))), "summary")
        patch.note(agent=p.get("agentName"))
        reader.meta(f"subagent started: {label or p.get('agentName')}")
        return
    patch.state = "ended"
    units = (("totalToolCalls", "tool calls"), ("totalTokens", "tokens"))
    stats = ", ".join(f"{p[k]} {unit}" for k, unit in units if p.get(k) is not None)
    done = "subagent completed" + (f": {stats}" if stats else "")
    reader.meta(f"subagent failed: {p.get('error')}" if reader.kind.endswith(".failed") else done)


def _notice(reader: _Reader, p: dict) -> None:
    reader.meta(NOTICES[reader.kind].format_map(defaultdict(lambda: "?", p)))
    if reader.kind == "abort":
        reader.turn("aborted")
    elif reader.kind == "session.model_change":
        _model(reader, p.get("newModel"))


# -- the pre-0.0.343 document ----------------------------------------------------------------
def _legacy_document(reader: _Reader, data: dict, raw: bytes) -> None:
    """``{sessionId, startTime, chatMessages, timeline, selectedModel}``: the timeline is what the user saw,
    and its entries have ids; chatMessages (what the model got) would only repeat it without them."""
    if not isinstance(data.get("timeline"), list) or "sessionId" not in data:
        reader.drift("not a Copilot history-session document (no sessionId / timeline)")
        return
    if str(data["sessionId"]) != reader.sid:
        reader.batch.sessions.pop(reader.sid, None)
        reader.sid = reader.target = str(data["sessionId"])
    reader.main().started_at = data["startTime"] if isinstance(data.get("startTime"), str) else None
    _model(reader, data.get("selectedModel"))
    _timeline(reader, data["timeline"])


def _timeline(reader: _Reader, entries: list) -> None:
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        handler = TIMELINE.get(entry.get("type")) if isinstance(entry.get("type"), str) else None
        if handler is None:
            reader.drift(f"timeline entry type={entry.get('type')!r}")
            continue
        raw = orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
        reader.uid = str(entry["id"]) if entry.get("id") else record_uid(raw)
        reader.ts = entry["timestamp"] if isinstance(entry.get("timestamp"), str) else reader.ts
        reader.kind = f"timeline.{entry['type']}"
        handler(reader, entry)


def _tl_tool(reader: _Reader, entry: dict) -> None:
    """A call, and its result once ``tool_call_requested`` became ``tool_call_completed`` (same id)."""
    name, call_id = entry.get("name"), entry.get("callId")
    reader.call(None, call_id, name, entry.get("arguments"))
    result = entry.get("result")
    if entry.get("type") == "tool_call_completed" and isinstance(result, dict):
        outcome = result.get("type")  # success, failure, rejected, denied
        text = str(result.get("log") or outcome or "")
        reader.event("result", role="tool", kind="tool_result", text=text, tool_name=name,
                     tool_call_id=call_id, is_error=outcome != "success",
                     meta=None if outcome == "success" else {"outcome": outcome})


# -- workspace.yaml --------------------------------------------------------------------------
def _workspace(reader: _Reader, raw: bytes) -> None:
    """``{id, cwd, git_root, repository, branch, name, user_named, summary, ...}``; name is the title."""
    try:
        fields = _yaml_mapping(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return
    patch = reader.main()
    name, summary = fields.get("name"), fields.get("summary")
    if isinstance(name, str) and name.strip():
        # Before user_named (1.0.6x) only /rename and --name set a name; since, an automatic name (the
        # first prompt, or an SDK summary) says user_named: false.
        patch.offer_title(_first_line(name), "summary" if fields.get("user_named") == "false" else "custom")
    elif isinstance(summary, str) and summary.strip():  # up to 1.0.5x: the automatic name
        patch.offer_title(_first_line(summary), "summary")
    reader.set_cwd(fields.get("cwd"), "workspace")
    if isinstance(fields.get("branch"), str) and patch.git is None:
        patch.git = GitFacts(branch=fields["branch"])


def _yaml_mapping(text: str) -> dict[str, Any]:
    """workspace.yaml as a mapping of text: a branch ``1.0`` or a name ``yes`` stays what was written."""
    import yaml  # here: the registry imports this module for every command, and yaml costs a third of all parsers

    loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # every scalar stays text: no type guessing
    try:
        value = yaml.load(text, Loader=loader)  # BaseLoader constructs no object: safe
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc
    return value if isinstance(value, dict) else {}


# -- helpers ---------------------------------------------------------------------------------
def _arguments(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(value)
    return value


def _render_call(name: Any, arguments: Any) -> str:
    if isinstance(arguments, dict) and isinstance(arguments.get("command"), str) and isinstance(arguments.get("path"), str):
        return f"{name}: {arguments['command']} {arguments['path']}"  # str_replace_editor
    return render_call(name, arguments, _CALL_KEYS)

def _first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _trim(mapping: dict, keep: int) -> None:
    while len(mapping) > keep:
        mapping.pop(next(iter(mapping)))


Handler = Callable[[_Reader, dict], None]

# Records shown as one line of the transcript: the line, from the record's data fields.
NOTICES: dict[str, str] = {
    "abort": "turn aborted: {reason}",
    "session.model_change": "model: {previousModel} → {newModel}",
    "session.error": "error ({errorType}): {message}",
    "session.warning": "warning ({warningType}): {message}",
    "session.truncation": "context truncated: {messagesRemovedDuringTruncation} messages, "
                          "{tokensRemovedDuringTruncation} tokens removed",
    "session.mode_changed": "mode: {previousMode} → {newMode}",
    "session.permissions_changed": "allow all permissions: {allowAllPermissions}",
    "session.plan_changed": "plan: {operation}",
    "session.handoff": "handed off from a {sourceType} session ({remoteSessionId}): {summary}",
    "session.schedule_created": "scheduled prompt #{id}: {prompt}",
    "session.schedule_cancelled": "scheduled prompt #{id} cancelled",
    "session.autopilot_objective_changed": "autopilot objective #{id}: {operation} ({status})",
    "subagent.selected": "custom agent: {agentDisplayName}",
    "custom_agent.selected": "custom agent: {agentDisplayName}",
    "subagent.deselected": "custom agent deselected",
    "session.context_cleared": "context cleared: {messagesCleared} messages",
    "session.model_deselected": "model {previousModel} withdrawn: {reason}",
    "session.auto_mode_resolved": "auto model: {chosenModel}",
    "skill.invoked_ref": "skill invoked again: {name}",
}

HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(NOTICES, _notice),
    "session.start": _start,
    "session.resume": _start,
    "session.shutdown": _shutdown,
    "session.info": _info,
    "session.context_changed": _context_changed,
    "session.import_legacy": _import_legacy,
    "user.message": _user,
    "assistant.message": _assistant,
    "assistant.reasoning": lambda r, p: _thinking(r, p.get("content"), None, r.state.get("model")),
    "assistant.turn_start": lambda r, p: r.turn("open"),
    # One model call of the agent loop: the turn is over unless its message asked for tools.
    "assistant.turn_end": lambda r, p: None if r.state.get("pending") else r.turn("complete"),
    "tool.execution_start": _tool_start,
    "tool.user_requested": _tool_start,
    "tool.execution_complete": _tool_done,
    "system.message": _injected,
    "system.notification": _injected,
    "skill.invoked": _injected,
    "skill.context_delivered": _injected,
    "session.usage_record": _usage_record,
    "session.compaction_complete": _compaction,
    **dict.fromkeys(SUBAGENT_LIFECYCLE, _subagent),
    # The agent's own closing summary of a task (autopilot).
    "session.task_complete": lambda r, p: (r.turn("complete"), r.event(
        role="assistant", kind="text", text=str(p.get("summary") or "task complete"),
        model=r.state.get("model"), meta={"task_complete": True, "success": p.get("success")})),
}

TIMELINE: dict[str, Handler] = {
    "user": lambda r, e: _user(r, {"content": e.get("text")}),
    "copilot": lambda r, e: r.event(role="assistant", kind="text", text=str(e.get("text") or ""),
                                    model=r.state.get("model")),
    **dict.fromkeys(("info", "warning", "error"),
                    lambda r, e: _info(r, {"infoType": e["type"], "message": e.get("text")})),
    "tool_call_requested": _tl_tool,
    "tool_call_completed": _tl_tool,
}
