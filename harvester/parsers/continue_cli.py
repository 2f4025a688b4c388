"""Continue (``cn`` CLI and the VS Code / JetBrains extensions): ``~/.continue/sessions/<sessionId>.json``.

Format facts and their sources: ``fixtures/continue_cli/SOURCE.md``. In short:

- One JSON document per session, ``{sessionId, title, workspaceDirectory, history, mode?,
  chatModelTitle?, usage?}``, REWRITTEN whole on every change (``core/util/history.ts``). Beside it
  ``sessions.json`` indexes every session (title, ``dateCreated`` in epoch ms, workspace): it is no
  session itself; it is read as each session's sidecar for the start time the session file lacks.
- ``history`` is a list of items ``{message: {role, content, toolCalls?, toolCallId?, usage?, id?},
  contextItems, toolCallStates?, reasoning?, conversationSummary?, promptLogs?, ...}``. The CLI keeps
  a tool's result inside the calling item's ``toolCallStates[].output``; the IDE also adds a separate
  ``tool`` item. Both are read as one result per call id. Nothing carries a timestamp.
- Identity: the CLI writes no ids at all, the IDE gives each message an ``id``. An item's uid is its
  id plus a hash of what it says, else a hash chained on the previous item's uid and what it says
  (never its tool states, which change as tools run). A rewrite that appends a turn leaves every
  earlier uid as it was, so only the new turn is added; an edited or regenerated message (Continue
  truncates the history there and appends anew) gets new uids and is added after the old version,
  which stays in the bank. Tool results are keyed by call id and revised in place (Batch.revise).
- The CLI's ``workspaceDirectory`` is ``process.cwd()``; the IDE's is a workspace folder URI
  (``file:///...``). There is no version, no subagent and no fork link in the store.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import unquote, urlsplit

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

NAME = "continue"
INDEX_NAME = "sessions.json"


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "filepath", "file_path", "filePath", "pattern", "query", "url", "path", "dirPath")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    out = []
    override = (env.get("CONTINUE_GLOBAL_DIR") or "").strip()
    if override:
        # Continue resolves a relative value against its own cwd, which we cannot know; the home
        # directory is where a login service runs.
        path = Path(override).expanduser()
        out.append(path if path.is_absolute() else home / path)
    # The variable is meant for tests: an IDE started without it still writes to ~/.continue.
    out.append(home / ".continue")
    return out


def _index(path: PurePath) -> PurePath:
    return path.with_name(INDEX_NAME)


# sessions.json matches the pattern too (globs cannot exclude it): parse() reads it as nothing.
SOURCES = (SourceSpec("sessions/*.json", "json", sidecar=_index),)

# The npm package's bin is dist/cn.js, run by node as ``node .../bin/cn``.
PROCESSES = ("cn", "@continuedev/cli")

# Placeholder titles until one is generated: the CLI's and the IDE's.
PLACEHOLDER_TITLES = frozenset({"", "Untitled Session", "New Session"})

SESSION_KEYS = frozenset({"sessionId", "title", "workspaceDirectory", "history", "mode", "chatModelTitle",
                          "usage"})
# History item keys read below, and the ones that only drive the editor UI (skipped on purpose):
# editorState (TipTap JSON, or the CLI's copy of the content), modifiers, isGatheringContext,
# appliedRules (which rules went into the system prompt), promptLogs (read for the model name only).
ITEM_KEYS = frozenset({"message", "contextItems", "toolCallStates", "toolCallState", "reasoning",
                       "conversationSummary", "promptLogs"})
ITEM_SKIPPED = frozenset({"editorState", "modifiers", "isGatheringContext", "appliedRules"})
ROLES = frozenset({"user", "assistant", "thinking", "system", "tool"})
TERMINAL = frozenset({"done", "errored", "canceled"})  # a tool status with a result to keep
PENDING = frozenset({"generating", "generated", "calling"})
# After an automatic compaction the CLI sends this as a user message on its own.
AUTO_CONTINUE = "continue"
_THINK = re.compile(r"<think>(.*?)</think>", re.S)


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch) -> None:
        self.ref = ref
        self.line = 1  # where the item being read starts in the file, for problems
        self.raw = b""
        self.batch = batch
        self.session_id = ref.path.stem
        self.drifted: set[str] = set()
        self.model: str | None = None  # the model of the latest response seen
        self.titled = False  # the first prompt is the title until Continue generates one

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.session_id)  # made on first use: a bad document makes none

    def event(self, uid: str, **fields: Any) -> Event:
        event = Event(self.session_id, uid, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:  # once per document, not once per item
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.path.name == INDEX_NAME:
        return Batch(state=state)
    batch = Batch(revise=True, state=state)  # tool results and context items are updated in place
    reader = _Reader(ref, batch)
    for record, data in json_objects(records, batch.problems):
        reader.line, reader.raw = record.line, record.raw
        try:
            _session(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"document of unexpected shape: {describe_error(exc)}"))
    return batch


def _session(reader: _Reader, data: dict) -> None:
    history = data.get("history")
    if not isinstance(history, list):
        # The 2023 Python-server sessions and the pre-Aug-2025 CLI's {timestamp, chatHistory} have
        # no history list: a shape this parser does not read.
        reader.drift(f"session document without a history list (keys: {sorted(data)[:8]})")
        return
    for key in data.keys() - SESSION_KEYS:
        reader.drift(f"session key={key!r}")
    patch = reader.patch
    index = _index_entry(reader)
    workspace = data.get("workspaceDirectory") or index.get("workspaceDirectory")
    if isinstance(workspace, str) and workspace:
        patch.cwd = _workspace_path(workspace)
        if patch.cwd != workspace:
            patch.note(workspace=workspace)
    started = _epoch_ms(index.get("dateCreated"))
    if started:
        patch.started_at = started
    if isinstance(data.get("sessionId"), str) and data["sessionId"] != reader.session_id:
        patch.note(recorded_session_id=data["sessionId"])  # Continue itself trusts the file name
    if isinstance(data.get("mode"), str):
        patch.note(mode=data["mode"])
    _session_usage(patch, data.get("usage"))
    if isinstance(data.get("chatModelTitle"), str) and data["chatModelTitle"]:
        reader.model = data["chatModelTitle"]
    _history(reader, history)
    if reader.model:
        patch.model = reader.model
    title = data.get("title")
    if isinstance(title, str) and title.strip() not in PLACEHOLDER_TITLES:
        # Generated by the model, or set by /title or a rename in the IDE: the file does not say.
        patch.offer_title(title.strip(), "ai")


def _index_entry(reader: _Reader) -> dict:
    """This session's entry in sessions.json (a list of {sessionId, title, dateCreated, ...})."""
    if not reader.ref.sidecar:
        return {}
    try:
        entries = orjson.loads(reader.ref.sidecar)
    except orjson.JSONDecodeError:
        return {}  # caught mid-rewrite: the next change of the session file reads it again
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("sessionId") == reader.session_id:
            return entry
    return {}


def _history(reader: _Reader, history: list) -> None:
    tool_items = {item["message"].get("toolCallId"): item["message"] for item in history
                  if isinstance(item, dict) and isinstance(item.get("message"), dict)
                  and item["message"].get("role") == "tool"}
    answered: set[str] = set()  # call ids whose result was read from the calling item
    prev: str | None = None
    after_summary = False
    last: tuple[str, dict, dict] | None = None
    lines = _item_lines(reader.raw, len(history))
    for position, item in enumerate(history):
        reader.line = lines[position]
        if not isinstance(item, dict) or not isinstance(item.get("message"), dict):
            reader.batch.problems.append(Problem("malformed", reader.line, f"history[{position}] is not an item"))
            continue
        for key in item.keys() - ITEM_KEYS - ITEM_SKIPPED:
            reader.drift(f"history item key={key!r}")
        message = item["message"]
        role = message.get("role")
        uid = _item_uid(message, prev)
        prev = uid
        if role not in ROLES:
            reader.drift(f"role={role!r}")
            continue
        start = len(reader.batch.events)
        try:
            _item(reader, uid, role, message, item, after_summary, tool_items, answered)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            del reader.batch.events[start:]  # one odd item costs that item, not the session
            reader.batch.problems.append(
                Problem("malformed", reader.line, f"history[{position}] of unexpected shape: {describe_error(exc)}"))
        after_summary = isinstance(item.get("conversationSummary"), str)
        if role != "system":
            last = (role, message, item)
    _last_turn(reader, last)


def _item(reader: _Reader, uid: str, role: str, message: dict, item: dict, after_summary: bool,
          tool_items: dict[Any, dict], answered: set[str]) -> None:
    model = _item_model(reader, message, item)
    if role == "user":
        _user(reader, uid, message, item, injected=after_summary)
    elif role == "assistant":
        _assistant(reader, uid, message, item, model, tool_items, answered)
    elif role == "thinking":
        text = "[redacted thinking]" if message.get("redactedThinking") else _content_text(reader, message)
        reader.event(uid, role="assistant", kind="thinking", text=text, model=model)
    elif role == "tool":
        if message.get("toolCallId") not in answered:  # no calling item in this file holds it
            reader.event(uid, role="tool", kind="tool_result", text=_content_text(reader, message),
                         tool_call_id=message.get("toolCallId"))
    else:  # system: the CLI drops these before saving; anything kept is context, not the user
        reader.event(uid, role="system", kind="text", text=_content_text(reader, message),
                     meta={"injected": True, "system_message": True})


def _item_lines(raw: bytes, count: int) -> list[int]:
    """The line each history item starts on. Continue writes ``JSON.stringify(session, null, 2)``:
    history items, and nothing else, open a line with four spaces and ``{``. Any other layout: the
    document's first line for all."""
    lines: list[int] = []
    line, scanned = 1, 0
    at = raw.find(b"\n    {")
    while at != -1:
        line += raw.count(b"\n", scanned, at + 1)
        scanned = at + 1
        lines.append(line)
        at = raw.find(b"\n    {", at + 1)
    return lines if len(lines) == count else [1] * count


def _item_uid(message: dict, prev: str | None) -> str:
    """What an item says, never its tool states or context items (they change as tools run)."""
    calls = [(c.get("id"), c["function"].get("name") if isinstance(c.get("function"), dict) else None)
             for c in message.get("toolCalls") or [] if isinstance(c, dict)]
    said = orjson.dumps([message.get("role"), message.get("content"), calls, message.get("toolCallId"),
                         message.get("redactedThinking")], option=orjson.OPT_SORT_KEYS)
    own = message.get("id")
    if isinstance(own, str) and own:
        return f"{own}:{record_uid(said)[2:10]}"
    return record_uid(said, context=prev)


def _user(reader: _Reader, uid: str, message: dict, item: dict, injected: bool) -> None:
    text = _content_text(reader, message)
    if injected and text.strip() == AUTO_CONTINUE:
        reader.event(uid, role="system", kind="text", text=text, meta={"injected": True, "auto_continue": True})
    else:
        reader.event(uid, role="user", kind="text", text=text)
        if text.strip() and not reader.titled:
            reader.titled = True
            first = text.strip().splitlines()[0]
            reader.patch.offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")
    _context_items(reader, uid, item)
    _summary(reader, uid, message, item)


def _context_items(reader: _Reader, uid: str, item: dict) -> None:
    """Files and snippets attached to a prompt: what the model read, not what the user typed."""
    for n, ctx in enumerate(item.get("contextItems") or []):
        if not isinstance(ctx, dict):
            continue
        ident = ctx.get("id") if isinstance(ctx.get("id"), dict) else {}
        uri = ctx.get("uri") if isinstance(ctx.get("uri"), dict) else {}
        name = ctx.get("name") or ctx.get("description") or "context"
        meta = {"injected": True, "context_item": name, "provider": ident.get("providerTitle"),
                "uri": uri.get("value")}
        reader.event(f"{uid}:ctx:{ident.get('itemId') or n}", role="system", kind="text",
                     text=f"[{name}]\n{ctx.get('content') or ''}",
                     meta={k: v for k, v in meta.items() if v is not None})


def _assistant(reader: _Reader, uid: str, message: dict, item: dict, model: str | None,
               tool_items: dict[Any, dict], answered: set[str]) -> None:
    reasoning = item.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("text"):
        reader.event(f"{uid}:reasoning", role="assistant", kind="thinking", text=str(reasoning["text"]),
                     model=model, ts=_epoch_ms(reasoning.get("startAt")))
    text = _content_text(reader, message)
    summary = item.get("conversationSummary")
    if isinstance(summary, str) and summary == text:
        # The CLI's compaction: the history is replaced by one assistant item holding the summary.
        reader.event(uid, role="system", kind="compaction", text=summary, model=model,
                     usage=_usage(message.get("usage")), meta={"summary": True})
        return
    holder = None
    thoughts = _THINK.findall(text) if "<think>" in text else []
    if thoughts:
        # Models that think in <think> tags: the CLI stores them in the content as streamed (its
        # --silent only strips them from what it prints); the IDE splits them into ``reasoning``.
        holder = reader.event(f"{uid}:think", role="assistant", kind="thinking", model=model,
                              text="\n\n".join(t.strip() for t in thoughts))
        text = _THINK.sub("", text).strip()
    if text:
        event = reader.event(uid, role="assistant", kind="text", text=text, model=model)
        holder = holder or event
    states = _states(item)
    calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
    known = {c.get("id") for c in calls}
    calls += [s["toolCall"] for s in states.values() if isinstance(s.get("toolCall"), dict)
              and s["toolCall"].get("id") not in known]
    for call in calls:
        event = _tool_call(reader, uid, call, states.get(call.get("id")), model)
        holder = holder or event
        _tool_result(reader, uid, call, states.get(call.get("id")), tool_items, answered)
    if holder is not None:
        holder.usage = _usage(message.get("usage"))
    _summary(reader, uid, message, item)


def _states(item: dict) -> dict[Any, dict]:
    states = item.get("toolCallStates")
    if states is None and isinstance(item.get("toolCallState"), dict):
        states = [item["toolCallState"]]  # before parallel tool calls (July 2025)
    return {s.get("toolCallId"): s for s in states or [] if isinstance(s, dict)}


def _tool_call(reader: _Reader, uid: str, call: dict, state: dict | None, model: str | None) -> Event:
    function = call.get("function")
    if not isinstance(function, dict):
        raise ValueError(f"tool call {call.get('id')!r} has no function")
    name = function.get("name")
    tool_input: Any = function.get("arguments")
    if isinstance(tool_input, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            tool_input = orjson.loads(tool_input) if tool_input.strip() else {}
    if not isinstance(tool_input, dict) and state and isinstance(state.get("parsedArgs"), dict):
        tool_input = state["parsedArgs"]
    return reader.event(f"{uid}:call:{call.get('id')}", role="assistant", kind="tool_call",
                        text=render_call(name, tool_input, _CALL_KEYS), tool_name=name, tool_input=tool_input,
                        tool_call_id=call.get("id"), model=model)


def _tool_result(reader: _Reader, uid: str, call: dict, state: dict | None, tool_items: dict[Any, dict],
                 answered: set[str]) -> None:
    call_id = call.get("id")
    status = state.get("status") if state else None
    if status is not None and status not in TERMINAL | PENDING:
        reader.drift(f"tool status={status!r}")
    separate = tool_items.get(call_id)
    if status not in TERMINAL and separate is None:
        return  # still running (or awaiting approval): its result comes with a later rewrite
    output = state.get("output") if state else None
    if isinstance(output, list) and output:
        text = "\n\n".join(str(o.get("content") or "") for o in output if isinstance(o, dict))
    elif separate is not None:
        text = _content_text(reader, separate)
    else:
        text = f"[tool call {status}]"
    answered.add(call_id)
    name = ((call.get("function") or {}).get("name"))
    reader.event(f"{uid}:result:{call_id}", role="tool", kind="tool_result", text=text, tool_name=name,
                 tool_call_id=call_id, is_error=status in ("errored", "canceled"),
                 meta={"status": status} if status else None)


def _summary(reader: _Reader, uid: str, message: dict, item: dict) -> None:
    """The IDE's compaction: a summary attached to the item where the conversation was compacted."""
    summary = item.get("conversationSummary")
    if isinstance(summary, str) and summary and summary != _content_text(reader, message):
        reader.event(f"{uid}:summary", role="system", kind="compaction", text=summary,
                     meta={"summary": True})


def _last_turn(reader: _Reader, last: tuple[str, dict, dict] | None) -> None:
    """Continue persists no turn boundary: the shape of the last item tells whether it ended."""
    if last is None:
        return
    role, message, item = last
    if role != "assistant":
        state = "open"  # a prompt or a tool result the model has not answered yet
    else:
        statuses = [s.get("status") for s in _states(item).values()]
        if any(s in PENDING for s in statuses):
            state = "open"
        elif statuses:
            # A refused tool ends the turn (headless, or the IDE's default); otherwise the model
            # still has to answer the results.
            state = "aborted" if "canceled" in statuses else "open"
        else:
            state = "complete" if _content_text(reader, message).strip() else "open"
    reader.patch.note(last_turn=state)


# -- helpers -------------------------------------------------------------------------------
def _content_text(reader: _Reader, message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        ptype = part.get("type") if isinstance(part, dict) else None
        if ptype == "text":
            parts.append(str(part.get("text") or ""))
        elif ptype == "imageUrl":
            parts.append("[image]")  # a data: URL of the whole image; nothing to read in a transcript
        else:
            reader.drift(f"content part type={ptype!r}")
            parts.append(f"[{ptype}]")
    return "\n".join(parts)


def _item_model(reader: _Reader, message: dict, item: dict) -> str | None:
    """The CLI writes the model into each response's usage; the IDE logs the model title per prompt."""
    usage = message.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("model"), str) and usage["model"]:
        reader.model = usage["model"]
        return reader.model
    logs = item.get("promptLogs")
    if isinstance(logs, list) and logs and isinstance(logs[-1], dict) and logs[-1].get("modelTitle"):
        reader.model = str(logs[-1]["modelTitle"])
        return reader.model
    return reader.model


def _usage(raw: Any) -> Usage | None:
    """Usage as the CLI saves it (OpenAI snake_case, + model, cost_cents) or as typed (camelCase)."""
    if not isinstance(raw, dict):
        return None

    def pick(source: Any, *keys: str) -> int:
        if isinstance(source, dict):
            for key in keys:
                if isinstance(source.get(key), (int, float)):
                    return int(source[key])
        return 0

    details = raw.get("prompt_tokens_details") or raw.get("promptTokensDetails") or {}
    prompt = pick(raw, "prompt_tokens", "promptTokens")
    cached = pick(details, "cache_read_tokens", "cached_tokens", "cachedTokens")
    written = pick(details, "cache_write_tokens", "cacheWriteTokens")
    # OpenAI counts cached tokens inside prompt_tokens; the Anthropic adapters (the ones that report
    # cache writes) do not.
    anthropic = isinstance(details, dict) and ({"cache_read_tokens", "cache_write_tokens", "cacheWriteTokens"}
                                               & details.keys())
    usage = Usage(input=prompt if anthropic else max(prompt - cached, 0), cache_read=cached, cache_write=written,
                  output=pick(raw, "completion_tokens", "completionTokens"),
                  reasoning=pick(raw.get("completion_tokens_details") or raw.get("completionTokensDetails"),
                                 "reasoning_tokens", "reasoningTokens"))
    return usage if usage.as_dict() else None


def _session_usage(patch: SessionPatch, raw: Any) -> None:
    if isinstance(raw, dict):
        tokens = {k: raw[k] for k in ("promptTokens", "completionTokens", "promptTokensDetails") if k in raw}
        patch.note(tokens=tokens, **({"cost_usd": raw["totalCost"]} if "totalCost" in raw else {}))


_DRIVE = re.compile(r"^/[A-Za-z]:")


def _workspace_path(workspace: str) -> str:
    """The CLI writes a path; the IDEs write the workspace folder's URI (file:///home/u/app,
    file:///c%3A/Users/u/app, vscode-remote://ssh-remote%2Bhost/home/u/app): its path."""
    if "://" not in workspace:
        return workspace
    path = unquote(urlsplit(workspace).path)
    return path[1:] if _DRIVE.match(path) else (path or workspace)


def _epoch_ms(value: Any) -> str | None:
    """sessions.json's dateCreated is String(Date.now()); reasoning.startAt is a number."""
    return iso_ms(int(value) if isinstance(value, str) and value.isdigit() else value)
