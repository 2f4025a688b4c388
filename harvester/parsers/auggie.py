"""Augment's Auggie CLI (``@augmentcode/auggie``): ``~/.augment/sessions/<sessionId>.json``.

Format facts and their sources: ``fixtures/auggie/SOURCE.md``. In short:

- One JSON document per session (conversation), ``{sessionId, created, modified, chatHistory,
  agentState, rootTaskUuid, title?, customTitle?, parentConversationId?, summarizations?, subAgents?,
  queue?, ...}``, written whole through a ``<file>.<ms>.tmp`` and a rename after every model call
  (``SessionStore.updateSession``); ``<id>-backupN.json`` beside it are copies kept by ``/clear`` and
  rewinds, not sessions of their own.
- ``chatHistory[]`` holds one item per model call: ``{exchange: {request_message, response_text,
  request_id, request_nodes, response_nodes, model_id?}, completed, sequenceId, finishedAt,
  isHistorySummary?, ...}``. Request nodes: 0 text (what the user typed), 1 a tool result, 2 image,
  4 IDE state (the workspace folder: the cwd), 8 file, 10 a history summary (compaction). Response
  nodes (only these are stored): 0 text, 5 tool use, 8 thinking, 9 billing, 10 token usage.
- A turn that calls tools spans several exchanges: the results come back as the next exchange's
  request nodes (with no text), so only an exchange with text nodes opens a user turn.
- Identity: ``request_id`` plus the node's ``id`` (tool calls and results by ``tool_use_id``): a
  rewrite that appends an exchange leaves every earlier uid as it was.
- Nothing is written while the model answers: a turn appears once its exchange is done, so a session
  is never seen mid-answer (``completed`` false only when Auggie stopped the call).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    iso_text,
    json_objects,
    render_call,
)

NAME = "auggie"

# A tool call's line shows the first of these arguments that holds text (render_call): Auggie's own
# tools are view, str-replace-editor, save-file, launch-process, codebase-retrieval, web-fetch ...
_CALL_KEYS = ("command", "path", "file_path", "query", "information_request", "url", "pattern", "instruction")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # Auggie's home is $HOME, else %USERPROFILE%, else os.homedir(), on every OS; the store is
    # <home>/.augment unless a run is given --augment-cache-dir (a flag: invisible here). No variable.
    return [home / ".augment"]


SOURCES = (SourceSpec("sessions/*.json", "json"),)

# The npm bin is augment.mjs (a node script): its command line names it, the executable is node.
PROCESSES = ("auggie", "augment.mjs")

_BACKUP = re.compile(r"-backup\d+\.json$")
SESSION_KEYS = frozenset({
    "sessionId", "created", "modified", "chatHistory", "agentState", "rootTaskUuid", "workspaceId",
    "remoteCreatedAt", "title", "customTitle", "terminalId", "subAgentCreditsUsed", "subAgentCostUsd",
    "summarizations", "subAgents", "poseidonAgentId", "parentConversationId", "isCloudAgent", "queue",
})
ITEM_KEYS = frozenset({
    "exchange", "completed", "sequenceId", "finishedAt", "changedFiles", "changedFilesSkipped",
    "changedFilesSkippedCount", "isHistorySummary", "historySummaryVersion", "source", "doesNotDisableAskMode",
})
EXCHANGE_KEYS = frozenset({"request_message", "response_text", "request_id", "request_nodes", "response_nodes",
                           "model_id"})
# Request nodes: text, tool result, image, IDE state, file, history summary (AgentState builders).
REQ_TEXT, REQ_RESULT, REQ_IMAGE, REQ_IDE, REQ_FILE, REQ_SUMMARY = 0, 1, 2, 4, 8, 10
# Response nodes kept in an exchange (AgentState.responseNodes filters to exactly these).
RESP_TEXT, RESP_TOOL, RESP_THINKING, RESP_BILLING, RESP_USAGE = 0, 5, 8, 9, 10


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch) -> None:
        self.ref = ref
        self.batch = batch
        self.sid = ref.path.stem
        self.line = 1
        self.drifted: set[str] = set()
        self.titled = False
        self.model: str | None = None
        self.calls: dict[str, str] = {}  # tool_use_id -> tool name, for the results

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, **fields: Any) -> Event:
        event = Event(self.sid, uid, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:  # once per document, not once per exchange
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True, state=state)  # an exchange Auggie stopped may be rewritten complete
    if _BACKUP.search(ref.path.name):
        return batch  # a copy of a session this harness reads from its own file
    reader = _Reader(ref, batch)
    for record, data in json_objects(records, batch.problems):
        reader.line = record.line
        try:
            _session(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"document of unexpected shape: {describe_error(exc)}"))
    return batch


def _session(reader: _Reader, data: dict) -> None:
    history = data.get("chatHistory")
    if not isinstance(history, list):
        reader.drift(f"session document without a chatHistory list (keys: {sorted(data)[:8]})")
        return
    for key in sorted(data.keys() - SESSION_KEYS):
        reader.drift(f"session key={key!r}")
    patch = reader.patch
    if isinstance(data.get("sessionId"), str) and data["sessionId"] != reader.sid:
        patch.note(recorded_session_id=data["sessionId"])
    patch.started_at = iso_text(data.get("created")) or iso_text(data.get("remoteCreatedAt"))
    patch.updated_at = iso_text(data.get("modified"))
    agent = data.get("agentState") if isinstance(data.get("agentState"), dict) else {}
    if isinstance(agent.get("modelId"), str) and agent["modelId"]:
        reader.model = agent["modelId"]
    parent = data.get("parentConversationId")
    if isinstance(parent, str) and parent and parent != reader.sid:
        patch.parent_native_id, patch.parent_kind = parent, "subagent"
    for key in ("rootTaskUuid", "workspaceId", "isCloudAgent", "subAgentCostUsd"):
        if data.get(key) not in (None, "", 0, False):
            patch.note(**{key: data[key]})
    for n, item in enumerate(history):
        if not isinstance(item, dict) or not isinstance(item.get("exchange"), dict):
            reader.batch.problems.append(Problem("malformed", reader.line, f"chatHistory[{n}] is not an exchange"))
            continue
        _item(reader, item, n)
    if reader.model:
        patch.model = reader.model
    _queue(reader, data.get("queue"))
    custom, title = data.get("customTitle"), data.get("title")
    if isinstance(custom, str) and custom.strip():
        patch.offer_title(custom.strip(), "custom")
    elif isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "ai")


def _item(reader: _Reader, item: dict, position: int) -> None:
    for key in sorted(item.keys() - ITEM_KEYS):
        reader.drift(f"chatHistory item key={key!r}")
    exchange = item["exchange"]
    for key in sorted(exchange.keys() - EXCHANGE_KEYS):
        reader.drift(f"exchange key={key!r}")
    rid = str(exchange.get("request_id") or f"seq{item.get('sequenceId', position)}")
    finished = iso_text(item.get("finishedAt"))
    if isinstance(exchange.get("model_id"), str) and exchange["model_id"]:
        reader.model = exchange["model_id"]
    request = [n for n in exchange.get("request_nodes") or [] if isinstance(n, dict)]
    response = [n for n in exchange.get("response_nodes") or [] if isinstance(n, dict)]
    ts = _first_stamp(response) or finished
    summary = bool(item.get("isHistorySummary"))
    _request(reader, exchange, request, rid, ts, summary)
    last = _response(reader, response, rid, finished)
    text = exchange.get("response_text")
    if not response and isinstance(text, str) and text.strip():  # fetched from the backend: the text alone
        last = reader.emit(f"{rid}:resp:text", ts=finished, role="assistant", kind="text", text=text, model=reader.model)
    usage = _usage(response)
    if usage is not None and last is not None:
        last.usage = usage
    reader.patch.note(last_turn="complete" if item.get("completed", True) and not _calls(response) else "open")
    if item.get("completed") is False:
        reader.patch.note(last_turn="aborted")


def _request(reader: _Reader, exchange: dict, nodes: list[dict], rid: str, ts: str | None, summary: bool) -> None:
    if not any(n.get("type") in (REQ_TEXT, REQ_RESULT, REQ_SUMMARY) for n in nodes):
        message = exchange.get("request_message")  # an exchange fetched from the backend: the message alone
        if isinstance(message, str) and message.strip():
            _prompt(reader, f"{rid}:req:message", ts, message, summary)
    for node in nodes:
        kind = node.get("type")
        uid = f"{rid}:req:{node.get('id')}:{kind}"
        if kind == REQ_TEXT:
            _prompt(reader, uid, ts, str((node.get("text_node") or {}).get("content") or ""), summary)
        elif kind == REQ_RESULT:
            result = node.get("tool_result_node") or {}
            call_id = str(result.get("tool_use_id") or uid)
            reader.emit(f"result:{call_id}", ts=iso_ms(result.get("start_time_ms")) or ts, role="tool",
                        kind="tool_result", text=_result_text(result), tool_call_id=call_id,
                        tool_name=reader.calls.get(call_id), is_error=bool(result.get("is_error")))
        elif kind == REQ_SUMMARY:
            node_summary = node.get("history_summary_node") or node.get("text_node") or {}
            text = node_summary.get("summary_text") or node_summary.get("content") or ""
            reader.emit(uid, ts=ts, role="system", kind="compaction", text=str(text))
        elif kind == REQ_IDE:
            _cwd(reader, node.get("ide_state_node") or {})
        elif kind in (REQ_IMAGE, REQ_FILE):
            reader.emit(uid, ts=ts, role="user", kind="text", text="[image]" if kind == REQ_IMAGE else "[file]",
                        meta={"attachment": True})
        else:
            reader.drift(f"request node type={kind!r}")


def _prompt(reader: _Reader, uid: str, ts: str | None, text: str, summary: bool) -> None:
    if summary:  # the exchange that stands for the history it summarized
        reader.emit(uid, ts=ts, role="system", kind="compaction", text=text)
    elif text.strip():
        reader.emit(uid, ts=ts, role="user", kind="text", text=text)
        if not reader.titled:
            reader.titled = True
            reader.patch.offer_title(_first_line(text), "first-prompt")


def _response(reader: _Reader, nodes: list[dict], rid: str, finished: str | None) -> Event | None:
    """Consecutive text nodes (stream chunks) make one text event; returns the exchange's last event."""
    last: Event | None = None
    text_event: Event | None = None
    for node in nodes:
        kind = node.get("type")
        ts = iso_ms(node.get("timestamp_ms")) or finished
        if kind == RESP_TEXT:
            if text_event is None:
                text_event = last = reader.emit(f"{rid}:resp:{node.get('id')}", ts=ts, role="assistant", kind="text",
                                                text="", model=reader.model)
            text_event.text += str(node.get("content") or "")
            continue
        text_event = None
        if kind == RESP_TOOL:
            use = node.get("tool_use") or {}
            call_id = str(use.get("tool_use_id") or f"{rid}:resp:{node.get('id')}")
            name = use.get("tool_name") or "tool"
            tool_input: Any = use.get("input_json")
            with contextlib.suppress(orjson.JSONDecodeError, TypeError):
                tool_input = orjson.loads(tool_input) if isinstance(tool_input, str) and tool_input.strip() else tool_input
            reader.calls[call_id] = name
            last = reader.emit(f"call:{call_id}", ts=ts, role="assistant", kind="tool_call",
                               text=render_call(name, tool_input, _CALL_KEYS), tool_name=name, tool_input=tool_input,
                               tool_call_id=call_id, model=reader.model)
        elif kind == RESP_THINKING:
            thinking = node.get("thinking") or {}
            text = thinking.get("content") or thinking.get("summary") or ""
            if str(text).strip():
                last = reader.emit(f"{rid}:resp:{node.get('id')}", ts=ts, role="assistant", kind="thinking",
                                   text=str(text), model=reader.model)
        elif kind == RESP_BILLING:
            billing = node.get("billing_metadata") or {}
            if isinstance(billing.get("effective_model_name"), str) and billing["effective_model_name"]:
                reader.model = billing["effective_model_name"]
        elif kind != RESP_USAGE:
            reader.drift(f"response node type={kind!r}")
    return last


def _queue(reader: _Reader, queue: Any) -> None:
    """Messages typed while a turn ran, not yet sent: only counted. Each is sent as the next exchange's
    prompt (read then), so an event for it now would stand twice in the bank."""
    messages = queue.get("messages") if isinstance(queue, dict) else None
    if isinstance(messages, list) and messages:
        reader.patch.note(queued_messages=len(messages))


def _cwd(reader: _Reader, ide: dict) -> None:
    if reader.patch.cwd is not None:
        return
    folders = [f for f in ide.get("workspace_folders") or [] if isinstance(f, dict)]
    terminal = ide.get("current_terminal") if isinstance(ide.get("current_terminal"), dict) else {}
    path = (folders[0].get("folder_root") or folders[0].get("repository_root")) if folders else None
    path = path or terminal.get("current_working_directory")
    if isinstance(path, str) and path:
        reader.patch.cwd = path
        if folders and folders[0].get("repository_root") not in (None, path):
            reader.patch.note(repository_root=folders[0]["repository_root"])


def _result_text(result: dict) -> str:
    content = result.get("content")
    if isinstance(content, str) and content:
        return content
    parts = []
    for node in result.get("content_nodes") or []:
        if isinstance(node, dict):
            parts.append(str(node.get("text_content") or ("[image]" if node.get("image_content") else "")))
    return "\n".join(p for p in parts if p)


def _usage(nodes: list[dict]) -> Usage | None:
    for node in nodes:
        if node.get("type") == RESP_USAGE and isinstance(node.get("token_usage"), dict):
            t = node["token_usage"]
            return Usage(input=_int(t.get("input_tokens")), output=_int(t.get("output_tokens")),
                         cache_read=_int(t.get("cache_read_input_tokens")),
                         cache_write=_int(t.get("cache_creation_input_tokens")))
    return None


def _calls(nodes: list[dict]) -> bool:
    return any(n.get("type") == RESP_TOOL for n in nodes)


def _first_stamp(nodes: list[dict]) -> str | None:
    return next((s for n in nodes if (s := iso_ms(n.get("timestamp_ms")))), None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:79] + "…"
