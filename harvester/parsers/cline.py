"""Cline and its family: the Cline SDK store (CLI 3, VS Code 4, JetBrains), and the task folders of the
legacy Cline extension, Roo Code and the old Kilo Code extension. Facts and sources: fixtures/cline/SOURCE.md.

- ``cline``: ``<sessions dir>/<id>/<id>.messages.json`` (``{version, agent, sessionId, origin, messages}``,
  Anthropic-style blocks, rewritten whole) with its manifest ``<id>.json`` (sidecar) and ``<id>.compaction.json``
  (related); subagents' transcripts sit in their root's folder as ``<agentId>[__<teamTaskId>].messages.json``.
  ``<db dir>/sessions.db`` holds each session's ``status``, read by ``updated_at`` watermark: it ends sessions.
- ``cline-legacy``, ``roo-code``, ``kilo-code``: ``<globalStorage>/<extension>/tasks/<taskId>/``, one session each.
  The source is ``api_conversation_history.json`` (what the model saw and said, tool ids included);
  ``ui_messages.json`` (times; a last ``completion_result`` ends the task), ``task_metadata.json`` and Roo's
  ``history_item.json`` are related documents, Cline's ``state/taskHistory.json`` (the cwd) the sidecar.
- Identity: blocks of a legacy message with ``ts`` are keyed by it (Roo inserts truncation markers mid-history);
  other blocks by a hash chained over the block sequence (the SDK re-mints message ids on resume); a tool call
  by its id, its result by the call. A rewrite that appends, re-splits or merges messages adds only what is new.
- The human's words are the inside of ``<task>``, ``<feedback>``, ``<answer>``, ``<user_message>``, the SDK's
  ``<user_input>``; environment details, attachments, notices and instructions around them are ``system``.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and one family's
four stores share their message shapes: the format facts above and the functions that read them stay side by
side.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    describe_error,
    iso_ms,
    iso_text,
    json_objects,
    json_value,
    render_call,
)

# where: the roots functions are in cline_roots (named here too: harvester/parsers/__init__.py uses them)
from harvester.parsers.cline_roots import cline_legacy_roots as cline_legacy_roots
from harvester.parsers.cline_roots import cline_roots as cline_roots
from harvester.parsers.cline_roots import kilo_code_roots as kilo_code_roots
from harvester.parsers.cline_roots import roo_roots as roo_roots

CLINE_NAME = "cline"
CLINE_LEGACY_NAME = "cline-legacy"
ROO_NAME = "roo-code"
KILO_CODE_NAME = "kilo-code"

# -- what ----------------------------------------------------------------------------------------
# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "path", "file_path", "filePath", "regex", "query", "url", "question", "server_name")


def _manifest(path: PurePath) -> PurePath:
    return path.parent / f"{path.parent.name}.json"


def _compaction(path: PurePath) -> list[PurePath]:  # a root session's only (subagents have none)
    return [path.parent / f"{path.parent.name}.compaction.json"] if path.name.startswith(f"{path.parent.name}.") else []


def _task_history(path: PurePath) -> PurePath:
    return path.parents[2] / "state" / "taskHistory.json"


def _task_related(path: PurePath) -> list[PurePath]:
    return [path.parent / name for name in ("ui_messages.json", "task_metadata.json", "history_item.json")]


# A row's updated_at is taken before its write waits for the lock: each read goes back 10 s.
SESSIONS_QUERY = SqliteQuery(
    "sessions",
    "SELECT session_id, source, started_at, ended_at, exit_code, status, provider, model, cwd, workspace_root, "
    "parent_session_id, agent_id, metadata_json, updated_at FROM sessions "
    "WHERE :since = 0 OR updated_at >= strftime('%Y-%m-%dT%H:%M:%fZ', :since, '-10 seconds') "
    "ORDER BY updated_at, session_id",
    "updated_at", ordered=True)
# sessions.db tables never read: the spawn queue and the scheduler's own state.
TABLES_NOT_READ = frozenset({"subagent_spawn_queue", "schedules", "schedule_executions"})
TASK = "tasks/*/api_conversation_history.json"
CLINE_SOURCES = (
    SourceSpec("*/*.messages.json", "json", "sdk", sidecar=_manifest, related=_compaction),
    SourceSpec("sessions.db", "sqlite", "sdk-db", watch=False, queries=(SESSIONS_QUERY,)),
)
CLINE_LEGACY_SOURCES = (SourceSpec(TASK, "json", "cline", sidecar=_task_history, related=_task_related),)
ROO_SOURCES = (SourceSpec(TASK, "json", "roo", related=_task_related),)
KILO_CODE_SOURCES = (SourceSpec(TASK, "json", "kilo", related=_task_related),)

# The npm CLIs: `cline` (a node wrapper that runs the compiled bin/.cline) and `roo`. The extensions run in
# the editor, whose cwd says nothing about a task's workspace: they end by their completion marker or idle time.
CLINE_PROCESSES = ("cline", ".cline", "cline.exe")
CLINE_LEGACY_PROCESSES: tuple[str, ...] = ()
ROO_PROCESSES = ("roo",)
KILO_CODE_PROCESSES: tuple[str, ...] = ()

# -- vocabularies --------------------------------------------------------------------------------
# ui_messages.json ask/say types over the history of Cline, Roo Code and Kilo Code (SOURCE.md).
UI_ASKS = frozenset("""act_mode_respond api_req_failed auto_approval_max_req_reached browser_action_launch
    chat_mode_response checkpoint_restore command command_output completion_result condense consult_advisor
    followup idle invalid_model mistake_limit_reached new_task payment_required_prompt plan_mode_respond
    plan_mode_response report_bug request_limit_reached respond_to_inquiry resume_completed_task resume_task
    summarize_task tool use_mcp_server use_subagents""".split())
UI_SAYS = frozenset("""advisor_response api_req_deleted api_req_finished api_req_rate_limit_wait api_req_retried
    api_req_retry_delayed api_req_started browser_action browser_action_launch browser_action_result
    browser_session_status checkpoint_created checkpoint_saved clineignore_error codebase_search_result command
    command_output command_permission_denied compaction completion_result condense_context condense_context_error
    conditional_rules_applied consult_advisor consult_advisor_request_started consult_advisor_response
    deleted_api_reqs diff_error error error_retry generate_explanation hook hook_output hook_output_stream
    hook_status image info inspect_site_result load_mcp_documentation mcp_notification mcp_server_request_started
    mcp_server_response new_task new_task_started plan_completion_result reasoning rooignore_error
    shell_integration_warning shell_integration_warning_with_suggestion sliding_window_truncation subagent
    subagent_usage subtask_result task task_progress text too_many_tools_warning tool use_mcp_server
    use_subagents user_edit_todos user_feedback user_feedback_diff""".split())
# Last asks that mean the model's turn is over (it asked the human) or failed; others await an approval.
ASKS_TURN_DONE = frozenset({"followup", "plan_mode_respond", "plan_mode_response", "act_mode_respond",
                            "chat_mode_response", "respond_to_inquiry"})
ASKS_FAILED = frozenset({"api_req_failed", "mistake_limit_reached", "auto_approval_max_req_reached",
                         "request_limit_reached", "payment_required_prompt", "invalid_model"})
BLOCKS = frozenset({"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
                    "reasoning", "file", "media", "xml_result"})  # xml_result: ours (see _fold_xml_results)
BOOKKEEPING_BLOCKS = frozenset({"thoughtSignature"})  # Roo: a Gemini signature kept for the next request
SDK_KEYS = frozenset({"version", "updated_at", "agent", "sessionId", "taskType", "origin", "messages", "system_prompt"})
SDK_TERMINAL = frozenset({"completed", "failed", "cancelled"})
SDK_STATUSES = frozenset({"idle", "running", "pending", *SDK_TERMINAL})
# SDK user-role messages the runtime writes (user-run-messages.ts), and its continuation prompts.
SDK_SYNTHETIC_KINDS = frozenset({"auto_compaction", "compaction_budget_emergency", "completion_reminder",
                                 "loop_detection_notice", "manual_compaction", "mistake_stop_notice",
                                 "recovery_notice", "compaction", "compaction_summary"})
SDK_INJECTED_STARTS = ("[TASK RESUMPTION]", "<SYSTEM_NOTICE>", "The user approved switching to act mode.",
                       "Warning: this is a legacy conversation")
INJECTED_STARTS = ("<environment_details>", "[TASK RESUMPTION]", "[ERROR]")  # never part of a tool's output
DISPLAY_SYSTEM = ("system", "status", "error")  # metadata.displayRole of the runtime's own user-role messages
EMPTY_CONTENT = "ERROR: EMPTY CONTENT"  # the SDK's stand-in for a message without content
# Tags whose inside is the human's words; tags inside them that are attachments, not words.
_WORDS = re.compile(r"<(user_input|task|feedback|answer|user_message)\b[^>]*>(.*?)</\1>", re.S)
_COMMAND = re.compile(r'<user_command slash="([^"]+)">(.*?)</user_command>', re.S)
_ATTACHED = re.compile(r"<(file_content|folder_content|url_content|workspace_diagnostics|terminal_output|"
                       r"git_commit|explicit_instructions|mode_notice|hook_context|environment_details)\b[^>]*>"
                       r".*?</\1>", re.S)
_XML_RESULT = re.compile(r"\[([^\]\n]{1,300})\] Result:")
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \(([^)\n]+)\) Files")
_ERROR_STARTS = ("The tool execution failed", "The user denied this operation", "Error executing")


def _d(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


class _Reader:
    def __init__(self, sid: str, bare_is_user: bool) -> None:
        self.sid = sid
        self.batch = Batch(revise=True)  # a message's usage (SDK) or a subtask's parent can come with a later save
        self.bare_is_user = bare_is_user  # SDK: text without a wrapper is the human's (older transcripts)
        self.line = 1
        self.drifted: set[str] = set()
        self.chain: str | None = None
        self.calls: dict[str, tuple[str, str]] = {}  # tool_use id -> (its call event's uid, the tool's name)
        self.model: str | None = None
        self.titled = False
        self.agent_prompted = 0  # how many leading user turns a parent agent wrote (subtasks: 1, subagents: all)
        self.turn = "open"

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def event(self, uid: str, role: str, kind: str, text: str, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, role, kind, text, **fields))  # type: ignore[arg-type]

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def title(self, text: str) -> None:
        first = text.strip().splitlines()[0] if text.strip() and not self.titled else ""
        if first:
            self.titled = True
            self.patch.offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == "sdk-db":
        return _sdk_rows(records)
    docs, problems = [], []
    for record in records:  # arrays and objects: json_objects does not fit
        try:
            docs.append((record.line, json_value(record.raw)))
        except orjson.JSONDecodeError as exc:  # caught mid-write (the SDK writes in place): read again later
            problems.append(Problem("malformed", record.line, f"invalid JSON: {exc}"))
    try:
        reader = _sdk_document(ref, docs) if ref.variant == "sdk" else _task(ref, docs)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return Batch(problems=[*problems, Problem("malformed", 1, f"document of unexpected shape: {describe_error(exc)}")])
    reader.batch.problems[:0] = problems
    return reader.batch


# -- messages (both formats) ---------------------------------------------------------------------
def _messages(r: _Reader, messages: list, keyed: bool, compaction: dict | None = None) -> None:
    at = compaction.get("source_message_count") if compaction else None
    for n, message in enumerate(messages):
        if n == at:
            _compaction_event(r, compaction or {})
        if not isinstance(message, dict):
            r.batch.problems.append(Problem("malformed", r.line, f"messages[{n}] is not an object"))
            continue
        if message.get("role") not in ("user", "assistant"):
            r.drift(f"message role={message.get('role')!r}")
            continue
        start = len(r.batch.events)
        try:
            _message(r, message, message["role"], keyed)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            del r.batch.events[start:]  # one odd message costs that message
            r.batch.problems.append(Problem("malformed", r.line, f"messages[{n}] of unexpected shape: {describe_error(exc)}"))
    if isinstance(at, int) and at >= len(messages):
        _compaction_event(r, compaction or {})


def _message(r: _Reader, message: dict, role: str, keyed: bool) -> None:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    ts = message.get("ts") if isinstance(message.get("ts"), int) and keyed else None
    when = _iso(message.get("ts"))
    info, meta = _d(message.get("modelInfo")), _d(message.get("metadata"))
    if role == "assistant" and meta.get("displayOnly"):  # the runtime's notice (a run's error), never sent on
        text = "\n\n".join(_text_of(b) for b in blocks)
        r.event(_uid(r, ts, role, {"display": text}, Counter()), "system", "meta", text, ts=when,
                meta={"display_role": meta.get("displayRole")})
        r.turn = "failed" if meta.get("displayRole") == "error" else r.turn
        return
    if role == "assistant" and (info.get("id") or info.get("modelId")):  # the SDK's id, Cline legacy's modelId
        r.model = str(info.get("id") or info.get("modelId"))
    injected = role == "user" and (meta.get("kind") in SDK_SYNTHETIC_KINDS or meta.get("displayRole") in DISPLAY_SYSTEM)
    if message.get("isSummary") or message.get("isTruncationMarker"):  # Roo's condense and sliding window
        text = "\n\n".join(_text_of(b) for b in blocks)
        r.event(_uid(r, ts, role, {"summary": text}, Counter()), "system", "compaction", text, ts=when,
                meta={"summary": True} if message.get("isSummary") else {"truncation": True})
        return
    seen: Counter[str] = Counter()
    start = len(r.batch.events)
    for block in _fold_xml_results(blocks) if role == "user" else blocks:
        btype = _d(block).get("type")
        if btype not in BLOCKS or block.get("text") == EMPTY_CONTENT:  # the stand-in must not shift the chain
            if btype not in BLOCKS and btype not in BOOKKEEPING_BLOCKS:
                r.drift(f"content block type={btype!r}")
            continue
        uid = _uid(r, ts, role, block, seen)
        if btype == "tool_use":
            call, name, tool_input = block.get("id"), block.get("name"), block.get("input")
            r.calls[call] = (uid, name)
            r.event(uid, "assistant", "tool_call", render_call(name, tool_input, _CALL_KEYS), ts=when, tool_name=name,
                    tool_input=tool_input, tool_call_id=call, model=r.model)
        elif btype in ("tool_result", "xml_result"):
            _tool_result(r, block, uid, when)
        elif role == "assistant":  # encrypted-only reasoning has nothing to keep
            text = _text_of(block)
            if text.strip():
                kind = "thinking" if btype in ("thinking", "reasoning", "redacted_thinking") else "text"
                r.event(uid, "assistant", kind, text, ts=when, model=r.model)
        elif injected:
            r.event(uid, "system", "text", _text_of(block), ts=when, meta={"injected": True, "kind": meta.get("kind")})
        elif btype == "text":
            _user_text(r, uid, str(block.get("text") or ""), when)
        elif btype == "file":  # an attached file's content (SDK)
            r.event(uid, "system", "text", f"[file: {block.get('path')}]\n{block.get('content') or ''}", ts=when,
                    meta={"injected": True, "path": block.get("path")})
        else:
            r.event(uid, "user", "text", f"[{btype}]", ts=when)
    if role == "assistant":
        _usage(r, message, start)
        r.turn = "open" if any(e.kind == "tool_call" for e in r.batch.events[start:]) else "complete"
    elif any(e.role == "user" or e.kind == "tool_result" for e in r.batch.events[start:]):
        r.turn = "open"


def _uid(r: _Reader, ts: int | None, role: str, block: dict, seen: Counter[str]) -> str:
    """A keyed message's block: its ts, role and content. Else a hash chained over the blocks before it.
    Tool calls and results are keyed by the call id, and the chain goes on from them."""
    raw = orjson.dumps([role, block], option=orjson.OPT_SORT_KEYS)
    call = block.get("id") if block.get("type") == "tool_use" else block.get("tool_use_id")
    if isinstance(call, str) and call:
        if block.get("type") != "tool_use":
            r.chain = f"{r.calls.get(call, ('call:' + call, ''))[0]}:result"
        else:  # an id used twice (some providers number their calls) gets a hash of its own
            r.chain = record_uid(raw, context=r.chain) if call in r.calls else f"call:{call}"
        return r.chain
    if ts is not None:
        digest = record_uid(raw)[2:12]
        seen[digest] += 1  # the same block twice in one message
        return f"{ts}{role[0]}:{digest}" + (f":{seen[digest]}" if seen[digest] > 1 else "")
    r.chain = record_uid(raw, context=r.chain)
    return r.chain


def _tool_result(r: _Reader, block: dict, uid: str, when: str | None) -> None:
    call = block.get("tool_use_id")
    name = r.calls.get(call, ("", None))[1] or block.get("name") or None
    text = _text_of(block)
    body = _XML_RESULT.sub("", text, count=1).lstrip() if text.startswith("[") else text
    failed = block.get("is_error") is True or body.startswith(_ERROR_STARTS) or any(
        _d(part).get("success") is False for part in _parts(block.get("content")))  # SDK: an operation failed
    parsed: Any = None
    with contextlib.suppress(orjson.JSONDecodeError):
        parsed = orjson.loads(body) if body.startswith("{") else None
    parsed = _d(parsed)  # Roo: {"status": "denied"|"error"|"approved", "feedback"?: the user's words, ...}
    failed = failed or parsed.get("status") in ("denied", "error")
    r.event(uid, "tool", "tool_result", text, ts=when, tool_name=name, tool_call_id=call, is_error=failed)
    words = "\n\n".join(m.group(2).strip() for m in _WORDS.finditer(text)) or parsed.get("feedback")
    if isinstance(words, str) and words.strip():  # the human's answer or feedback, carried by the result
        _words(r, f"{uid}:user", _ATTACHED.sub("", words).strip(), when)


def _fold_xml_results(blocks: list) -> list:
    """Before native tool calls, a result was a text "[tool for 'x'] Result:" (its output in the same or
    the following text/image blocks): one xml_result block, the tool's name taken from the marker."""
    out: list = []
    for block in blocks:
        text = block.get("text") if _d(block).get("type") == "text" else None
        marker = _XML_RESULT.match(text) if isinstance(text, str) else None
        if marker:
            out.append({"type": "xml_result", "name": marker.group(1).split(" ")[0], "content": [block]})
        elif (out and _d(out[-1]).get("type") == "xml_result" and _d(block).get("type") in ("text", "image")
              and not str(block.get("text") or "").lstrip().startswith(INJECTED_STARTS)):
            out[-1]["content"].append(block)
        else:
            out.append(block)
    return out


def _user_text(r: _Reader, uid: str, text: str, when: str | None) -> None:
    """One user text block: the human's words, and whatever was injected around or inside them."""
    spans = list(_WORDS.finditer(text)) or list(_COMMAND.finditer(text))
    if spans:
        words = "\n\n".join((f"/{m.group(1)} " if m.re is _COMMAND else "") + m.group(2) for m in spans)
        rest = spans[0].re.sub("", text).strip()
        attached = "\n\n".join(m.group(0) for m in _ATTACHED.finditer(words))
        words, injected = _ATTACHED.sub("", words).strip(), "\n\n".join(p for p in (rest, attached) if p)
    elif r.bare_is_user and not text.lstrip().startswith(SDK_INJECTED_STARTS):
        words, injected = _ATTACHED.sub("", text).strip(), "\n\n".join(m.group(0) for m in _ATTACHED.finditer(text))
    else:
        words, injected = "", text
    if words:
        _words(r, uid, words, when)
    if injected.strip():
        r.event(f"{uid}:ctx" if words else uid, "system", "text", injected, ts=when, meta={"injected": True})
    if not r.patch.cwd and (found := _CWD.search(text)):
        r.patch.cwd = found.group(1).strip()  # the environment details of the first request


def _words(r: _Reader, uid: str, words: str, when: str | None) -> None:
    if r.agent_prompted > 0:  # the task a parent agent gave this subtask or subagent: its title, not the user's
        r.agent_prompted -= 1
        r.event(uid, "system", "text", words, ts=when, meta={"from_agent": True})
    else:
        r.event(uid, "user", "text", words, ts=when)
    r.title(words)


def _usage(r: _Reader, message: dict, start: int) -> None:
    """Cline legacy: metrics {tokens {prompt (cached included), completion, cached}, cost}; the SDK:
    metrics {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cost}."""
    metrics = _d(message.get("metrics"))
    holder = next((e for e in r.batch.events[start:] if e.role == "assistant"), None)
    if not metrics or holder is None:
        return
    n = {k: int(v) for k, v in {**metrics, **_d(metrics.get("tokens"))}.items()
         if isinstance(v, int | float) and not isinstance(v, bool)}
    if "tokens" in metrics:
        usage = Usage(input=max(n.get("prompt", 0) - n.get("cached", 0), 0), output=n.get("completion", 0),
                      cache_read=n.get("cached", 0))
    else:
        usage = Usage(input=n.get("inputTokens", 0), output=n.get("outputTokens", 0),
                      cache_read=n.get("cacheReadTokens", 0), cache_write=n.get("cacheWriteTokens", 0))
    if isinstance(metrics.get("cost"), int | float) and not isinstance(metrics["cost"], bool):
        usage.cost = metrics["cost"]  # what Cline recorded (harvester usage --cost recorded)
        holder.meta = {**(holder.meta or {}), "cost": metrics["cost"]}  # meta changes: the bank revises
    holder.usage = usage if usage.as_dict() or usage.cost is not None else None


def _compaction_event(r: _Reader, doc: dict) -> None:
    """The SDK's compaction sidecar: the messages that replace the first source_message_count ones."""
    texts = []
    for message in [m for m in doc.get("messages") or [] if _d(m).get("metadata")]:
        kind = _d(message["metadata"]).get("kind")
        if kind == "compaction_summary":  # the model's summary
            texts.append(str(message["metadata"].get("summary") or ""))
        elif kind == "compaction":  # the basic one: notices of what was done
            texts.extend(_text_of(b) for b in message.get("content") or [] if "SYSTEM_NOTICE" in _text_of(b))
    r.event(f"compaction:{doc.get('source_prefix_hash') or doc.get('updated_at')}", "system", "compaction",
            "\n\n".join(texts) or "conversation compacted", ts=_iso(doc.get("updated_at")),
            meta={"summary": True, "messages_before": doc.get("source_message_count")})


# -- the SDK ------------------------------------------------------------------------------------
def _sdk_document(ref: SourceRef, docs: list[tuple[int, Any]]) -> _Reader:
    line, doc = next(((n, d) for n, d in docs if "messages" in _d(d) and "source_message_count" not in d), (1, {}))
    folder, stem = ref.path.parent.name, ref.path.name.removesuffix(".messages.json")
    sid = doc["sessionId"] if isinstance(doc.get("sessionId"), str) else (
        folder if stem == folder else f"{folder}__{stem}")
    r = _Reader(sid, bare_is_user=True)
    r.line = line
    if not doc:  # only a compaction sidecar, or a document of another shape
        return r
    for key in doc.keys() - SDK_KEYS:
        r.drift(f"messages.json key={key!r}")
    patch, origin = r.patch, _d(doc.get("origin"))
    if doc.get("agent") not in (None, "lead"):
        r.agent_prompted = 1 << 30  # a subagent or teammate is prompted by its parent agent only
        patch.parent_native_id, patch.parent_kind = origin.get("parentThreadId") or folder, "subagent"
        patch.note(**{k: v for k, v in (("agent", doc.get("agent")), ("task_type", doc.get("taskType"))) if v})
    patch.agent_version = str(origin["version"]) if origin.get("version") else None
    patch.note(**({"source": origin["source"]} if origin.get("source") else {}))
    if ref.sidecar and sid == folder:
        with contextlib.suppress(orjson.JSONDecodeError):
            _sdk_session(patch, orjson.loads(ref.sidecar))
    messages = doc.get("messages") if isinstance(doc.get("messages"), list) else []
    _messages(r, messages, False, next((d for _, d in docs if "source_message_count" in _d(d)), None))
    patch.model = r.model or patch.model
    if messages:
        patch.note(last_turn=r.turn)
    return r


def _sdk_session(patch: SessionPatch, row: Any, from_db: bool = False) -> None:
    """A manifest or a sessions.db row (same fields; the row keeps metadata as JSON text). Only the
    database's status is taken: the manifest is not rewritten at every status change."""
    row = _d(row)
    meta = row.get("metadata")
    with contextlib.suppress(orjson.JSONDecodeError, TypeError):
        meta = orjson.loads(row["metadata_json"]) if isinstance(row.get("metadata_json"), str) else meta
    meta = _d(meta)
    patch.cwd = patch.cwd or row.get("cwd") or row.get("workspace_root") or None
    patch.started_at, patch.model = _iso(row.get("started_at")), row.get("model") or patch.model or None
    fork = _d(meta.get("fork")).get("forkedFromSessionId")
    if row.get("parent_session_id") or fork:
        patch.parent_native_id = row.get("parent_session_id") or fork
        patch.parent_kind = "subagent" if row.get("parent_session_id") else "fork"
    git = _d(meta.get("git"))  # {branch?, url?}: the repository's at the session's start
    if git.get("branch") or git.get("url"):
        patch.git = GitFacts(branch=git.get("branch") or None, origin_url=git.get("url") or None)
    if _d(meta.get("sessionHistoryOrigin")).get("version"):
        patch.agent_version = str(meta["sessionHistoryOrigin"]["version"])
    if isinstance(meta.get("title"), str) and meta["title"].strip():
        # Derived from the first prompt, renamed by the user, or "… (fork)": the store does not say which.
        patch.offer_title(meta["title"].strip(), "summary")
    facts = {"source": row.get("source"), "provider": row.get("provider"), "agent_id": row.get("agent_id"),
             "workspace_root": row.get("workspace_root") if row.get("workspace_root") != patch.cwd else None,
             "legacy_task": True if meta.get("legacyTask") else None,
             "terminal_marker": meta.get("terminal_marker")}  # set by the sweep that fails a dead process's session
    if from_db:
        facts.update(status=row.get("status"), exit_code=row.get("exit_code"), ended_at=_iso(row.get("ended_at")))
        patch.state = "ended" if row.get("status") in SDK_TERMINAL else None
    patch.note(**{k: v for k, v in facts.items() if v not in (None, "")})


def _sdk_rows(records: Iterable[Record]) -> Batch:
    batch = Batch()
    for record, data in json_objects(records, batch.problems):
        row = _d(data.get("row"))
        if data.get("table") != "sessions" or not isinstance(row.get("session_id"), str):
            batch.problems.append(Problem("unknown_type", record.line, f"row of table={data.get('table')!r}"))
            continue
        if row.get("status") not in SDK_STATUSES:
            batch.problems.append(Problem("unknown_type", record.line, f"session status={row.get('status')!r}"))
        patch = SessionPatch(row["session_id"], updated_at=_iso(row.get("updated_at")))
        _sdk_session(patch, row, from_db=True)
        batch.patch(patch)
    return batch


# -- legacy task folders --------------------------------------------------------------------------
def _task(ref: SourceRef, docs: list[tuple[int, Any]]) -> _Reader:
    r = _Reader(ref.path.parent.name, bare_is_user=False)
    api, ui, meta, item = None, None, {}, {}
    for line, doc in docs:  # by shape: a related document that is missing shifts the others' places
        first = _d(doc[0]) if isinstance(doc, list) and doc else {}
        if "role" in first:
            api = api or (line, doc)
        elif first.get("type") in ("ask", "say"):
            ui = (line, doc)
        elif {"files_in_context", "model_usage", "environment_history"} & _d(doc).keys():
            meta = doc
        elif {"id", "task"} <= _d(doc).keys():
            item = doc
        elif doc != []:  # an empty list is a task with nothing in it yet
            r.line = line
            r.drift(f"task document of unexpected shape ({type(doc).__name__})")
    patch, entry = r.patch, _history_entry(ref.sidecar, r.sid) or item
    cwd = entry.get("cwdOnTaskInitialization") or entry.get("workspace")
    patch.cwd = cwd if isinstance(cwd, str) and cwd else None
    if entry.get("parentTaskId"):  # Roo: a subtask new_task started; its first prompt is the parent's
        patch.parent_native_id, patch.parent_kind = entry["parentTaskId"], "subagent"
        r.agent_prompted = 1
    facts = {k: entry.get(k) for k in ("rootTaskId", "mode", "status", "totalCost", "isFavorited", "number")}
    patch.note(**{k: v for k, v in facts.items() if v not in (None, False)})
    envs = [e for e in meta.get("environment_history") or [] if _d(e).get("cline_version")]
    if envs:  # Cline's task_metadata.json: the extension's version and host at each (re)start
        patch.agent_version = str(envs[-1]["cline_version"])
        patch.note(host=envs[-1].get("host_name"))
    models = [str(m["model_id"]) for m in meta.get("model_usage") or [] if _d(m).get("model_id")]
    r.model = str(entry["modelId"]) if entry.get("modelId") else models[-1] if models else None
    if api:
        r.line = api[0]
        _messages(r, api[1], keyed=True)
    if ui:
        r.line = ui[0]
        _ui(r, ui[1])
    patch.state, patch.model = "ended" if entry.get("status") == "completed" else patch.state, r.model
    return r


def _history_entry(sidecar: bytes | None, sid: str) -> dict:
    """This task's HistoryItem in Cline's state/taskHistory.json (a JSON array of them)."""
    items: Any = []
    with contextlib.suppress(orjson.JSONDecodeError):  # caught mid-rewrite: the next change reads it again
        items = orjson.loads(sidecar) if sidecar else []
    return next((i for i in items if _d(i).get("id") == sid), {}) if isinstance(items, list) else {}


def _ui(r: _Reader, messages: list) -> None:
    """ui_messages.json: known ask/say types, start and last times, and whether the task completed."""
    last, times = {}, []
    for m in [m for m in messages if isinstance(m, dict)]:
        kind = m.get("type")
        if kind not in ("ask", "say") or m.get(kind) not in (UI_ASKS if kind == "ask" else UI_SAYS):
            r.drift(f"ui message {kind}={m.get(kind) if kind in ('ask', 'say') else None!r}")
        times += [m["ts"]] if isinstance(m.get("ts"), int) else []
        last = last if m.get("partial") else m
        if m.get("say") == "task" and isinstance(m.get("text"), str):
            r.title(m["text"])
        r.model = r.model or _d(m.get("modelInfo")).get("modelId")
    if times:
        r.patch.started_at, r.patch.updated_at = _iso(min(times)), _iso(max(times))
    ask = last.get("ask") if last.get("type") == "ask" else None
    if last.get("say") == "completion_result" or ask in ("completion_result", "resume_completed_task"):
        r.patch.state, turn = "ended", "complete"
    else:  # resume_task: interrupted, and opened again without going on
        turn = ("complete" if ask in ASKS_TURN_DONE else "failed" if ask in ASKS_FAILED
                else "aborted" if ask == "resume_task" else "open")
    r.patch.note(last_turn=turn)


# -- helpers -------------------------------------------------------------------------------------
def _text_of(block: Any) -> str:
    if not isinstance(block, dict):
        return block if isinstance(block, str) else ""
    btype = block.get("type")
    if btype in ("text", "reasoning") and isinstance(block.get("text"), str):
        return block["text"]
    if btype in ("thinking", "redacted_thinking"):
        return str(block.get("thinking") or "") if btype == "thinking" else "[redacted thinking]"
    if btype == "reasoning":  # Roo: summary parts, or encrypted content only
        return "\n\n".join(str(_d(s).get("text") or "") for s in block.get("summary") or [])
    if btype in ("tool_result", "xml_result"):
        content = block.get("content")
        return content if isinstance(content, str) else "\n".join(_output(c) for c in _parts(content))
    return f"[{btype}]"


def _parts(content: Any) -> list:
    return content if isinstance(content, list) else []


def _output(part: Any) -> str:
    """A part of a tool result: a content block, or (the SDK keeps a tool's array output as it is) one of the
    built-in tools' ToolOperationResult {query, result, error?, success}; any other value as JSON."""
    if not isinstance(part, dict) or "type" in part:
        return _text_of(part)
    if "success" not in part:
        return orjson.dumps(part).decode()
    result = part.get("result")
    body = result if isinstance(result, str) else "\n".join(_output(c) for c in result) if isinstance(
        result, list) else "" if result is None else orjson.dumps(result).decode()
    body = "\n".join(str(x) for x in (body, part.get("error")) if x)
    return f"{part['query']}\n{body}" if part.get("query") else body


def _iso(value: Any) -> str | None:
    """Epoch milliseconds (the extensions) or ISO 8601 text (the SDK)."""
    return iso_text(value) if isinstance(value, str) else iso_ms(value)
