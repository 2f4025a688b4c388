"""Gemini CLI: ``~/.gemini/tmp/<project>/chats/session-<ts>-<id8>.jsonl`` (``$GEMINI_CLI_HOME/.gemini``).

Format facts and their sources: ``fixtures/gemini_cli/SOURCE.md``. In short:

- Since 0.39 a session is JSONL: a header (``sessionId``, ``projectHash``; each resume appends
  another), messages (``id``; ``type`` user/gemini/info/error/warning), ``{"$set": {...}}`` and
  ``{"$rewindTo": id}``. A message is appended again as it grows (tool calls, results, tokens):
  the last occurrence wins, so batches revise. Up to 0.38: one ``.json`` document, rewritten.
- Tool results live in ``toolCalls[].result``; 0.44+ also records each function response as a
  user-typed message: one event, the tool call's. Masked re-appends never replace a result.
- ``$rewindTo``: that message and all after leave the conversation; their events are marked
  ``rewound`` (when read in the same call) and a meta event names them all.
- ``$set.messages`` checkpoints the model's history (start, resume, compression): ids never seen
  (the injected session context) are added, recorded ones keep their recorded version.
- Text Gemini writes into user-typed messages (session/hook context, @-file contents, compression
  summaries, a subagent's task) is ``system``. Subagents: ``chats/<parentSessionId>/<id>.jsonl``.
- cwd: ``tmp/<slug>/.project_root`` (0.29+), ``projects.json`` for sha256 folders, else any path
  the session names whose ancestor hashes to the header's ``projectHash``.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and Gemini CLI's
JSONL sessions and its earlier JSON files are one format's history: the format facts above and the functions
that read them stay side by side.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Mark, Problem, ProblemKind, SessionPatch, Usage, record_uid
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_objects, render_call
from harvester.parsers.gemini_checkpoint import parse_checkpoint, project_root_marker
from harvester.parsers.gemini_project import find_project, project_marker, registered_project

NAME = "gemini-cli"
# 2: messages typed "model" are answers (they were drift).
VERSION = 2


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "file_path", "absolute_path", "dir_path", "path", "pattern", "query", "url", "prompt")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # GEMINI_CLI_HOME replaces the home directory, not .gemini itself (paths.ts homedir()).
    base = Path(env["GEMINI_CLI_HOME"]).expanduser() if env.get("GEMINI_CLI_HOME") else home
    return [base / ".gemini"]


def _jsonl_twin(path: PurePath) -> PurePath:
    return path.with_name(path.name + "l")  # resuming a .json session continues it as .jsonl


SOURCES = (
    SourceSpec("tmp/*/chats/session-*.jsonl", "jsonl", "main", sidecar=project_marker),
    SourceSpec("tmp/*/chats/*/*.jsonl", "jsonl", "subagent", sidecar=project_marker),
    SourceSpec("tmp/*/chats/session-*.json", "json", "legacy", shadowed_by=_jsonl_twin, sidecar=project_marker),
    SourceSpec("tmp/*/chats/*/*.json", "json", "legacy-subagent", shadowed_by=_jsonl_twin,
               sidecar=project_marker),
    # /chat save <tag>: the model's history when it was saved (before chat recording, the only chat kept).
    SourceSpec("tmp/*/checkpoint-*.json", "json", "checkpoint", sidecar=project_root_marker),
)

# The npm package @google/gemini-cli installs a node script named gemini.
PROCESSES = ("gemini", "@google/gemini-cli")

# $set keys with nothing for a transcript (header repeats; a digest for memory extraction).
SET_BOOKKEEPING = frozenset({"sessionId", "projectHash", "startTime", "kind", "memoryScratchpad"})

# User-typed text parts Gemini CLI writes itself (environmentContext.ts, client.ts, fastAckHelper.ts).
INJECTED_PREFIXES = ("<session_context>", "<hook_context>", "Background execution update:")
_SNAPSHOT = "<state_snapshot>"  # a compression summary (context/chatCompressionService.ts)
# Turns Gemini CLI adds in the model's name (chatCompressionService.ts, geminiChat.ts).
SYNTHETIC_REPLIES = frozenset({
    "Got it. Thanks for the additional context!", "Binary content received. Proceeding with analysis.",
})
CANCELLED = frozenset({"Request cancelled.", "User cancelled the request."})  # useGeminiStream.ts
_TERMINAL = frozenset({"success", "error", "cancelled"})
_MASKED = "<tool_output_masked>"
_WORKSPACE = re.compile(r"Workspace Directories:\**\n((?:[ \t]+- .+\n?)+)")
_PATH_ARGS = ("file_path", "absolute_path", "dir_path", "path", "directory", "cwd")


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state, revise=True)
        self.subagent = ref.variant in ("subagent", "legacy-subagent")
        self.session_id: str = state.get("session") or ref.path.stem
        self.line = 0
        # The conversation as Gemini would load it: message ids in order (dict: ordered set), and
        # ids that left it. Together they are every id seen, which a checkpoint is compared with.
        self.live: dict[str, None] = dict.fromkeys(state.get("ids", []))
        self.gone: set[str] = set(state.get("gone", []))
        self.emitted: dict[str, list[Event]] = {}  # this read's events per message id (rewind marks)
        self.latest = False  # the message being read is the conversation's last one

    def patch(self) -> SessionPatch:
        patch = self.batch.session(self.session_id)
        if self.subagent and patch.parent_native_id is None:
            patch.parent_native_id, patch.parent_kind = self.ref.path.parent.name, "subagent"
        return patch

    def emit(self, out: list[Event], uid: str, ts: Any, **fields: Any) -> None:
        out.append(Event(self.session_id, uid, ts=ts if isinstance(ts, str) else None, **fields))
        self.batch.events.append(out[-1])

    def touch(self, ts: Any) -> None:
        """The session's last activity: the newest time seen (a re-append carries an old one)."""
        if isinstance(ts, str) and ts > self.state.get("updated", ""):
            self.state["updated"] = self.patch().updated_at = ts

    def drift(self, detail: str) -> None:
        self.problem("unknown_type", detail)

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))

    def finish(self) -> Batch:
        for session in {e.session for e in self.batch.events}:
            self.batch.session(session)  # the bank files events under a session patch
        self.state["session"] = self.session_id
        self.state["ids"] = list(self.live)
        self.state["gone"] = sorted(self.gone)
        return self.batch


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == "checkpoint":
        return parse_checkpoint(ref, records, _CALL_KEYS, INJECTED_PREFIXES, SYNTHETIC_REPLIES)
    reader = _Reader(ref, state)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            if not ref.variant.startswith("legacy"):
                _record(reader, data, record.raw)
            elif isinstance(data.get("sessionId"), str):  # up to 0.38: one document, rewritten whole
                _header(reader, data)
            else:
                reader.drift(f"document with keys {sorted(data)[:6]}")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"record of unexpected shape: {describe_error(exc)}"))
    return reader.finish()


def _record(reader: _Reader, data: dict, raw: bytes) -> None:
    # The order Gemini's own loader tests them in (chatRecordingService.ts loadConversationRecord).
    if isinstance(data.get("$rewindTo"), str):
        _rewind(reader, data["$rewindTo"], raw)
    elif isinstance(data.get("id"), str):
        _message(reader, data, checkpoint=False)
    elif isinstance(data.get("$set"), dict):
        _set(reader, data["$set"])
    elif isinstance(data.get("sessionId"), str) and isinstance(data.get("projectHash"), str):
        _header(reader, data)
    elif isinstance(data.get("type"), str) and data["type"] in MESSAGES:
        # Gemini's loader skips it too; unlike a whole document's, a line cannot be told from the
        # re-appends of the same message (they are matched by id).
        reader.problem("malformed", f"{data['type']} message without an id")
    else:
        reader.drift(f"record with keys {sorted(data)[:6]}")


# -- metadata --------------------------------------------------------------------------------
def _header(reader: _Reader, data: dict) -> None:
    """The first line of a file (written again by each resume, same sessionId), or a whole legacy
    document's top level."""
    state = reader.state
    if not state.get("header"):
        state["header"] = True
        reader.session_id = str(data["sessionId"])
        state["hash"] = data.get("projectHash")
        patch = reader.patch()
        patch.started_at = data.get("startTime") if isinstance(data.get("startTime"), str) else None
        if data.get("kind"):
            state["kind"] = data["kind"]
            if data["kind"] != "main":
                patch.note(kind=data["kind"])
        registered_project(reader)
    else:
        state["resumes"] = state.get("resumes", 0) + 1
        reader.patch().note(resumes=state["resumes"])
    _set(reader, {k: v for k, v in data.items() if k in ("lastUpdated", "summary", "directories")})
    # A whole legacy record (a .json document, or one on a single line): its messages as recorded.
    for index, message in enumerate(data.get("messages") or []):
        if not isinstance(message, dict):
            reader.problem("malformed", f"messages[{index}] is not an object")
        elif isinstance(message.get("id"), str):
            _message(reader, message, checkpoint=False)
        else:  # Gemini always names them; one that is not is still a message of the document
            _message(reader, {**message, "id": _place_id(message, index)}, checkpoint=False)


def _place_id(message: dict, index: int) -> str:
    """Identity of a message without ``id`` in a document rewritten as it grows: its place and the
    two fields fixed when it was created (a rewind cuts the tail; what takes a place anew has another
    time), never its content, which grows."""
    return record_uid(orjson.dumps([message.get("type"), message.get("timestamp")]), index)


def _set(reader: _Reader, fields: dict) -> None:
    patch = reader.patch()
    for key, value in fields.items():
        if key == "lastUpdated":
            reader.touch(value)
        elif key == "summary" and isinstance(value, str) and value.strip():
            # Main sessions: a generated one-line title; subagents: their final result, cut short.
            patch.offer_title(_first_line(value), "summary" if _is_subagent(reader) else "ai")
        elif key == "directories" and isinstance(value, list):
            patch.note(directories=[str(d) for d in value])
            find_project(reader, (str(d) for d in value))
        elif key == "messages" and isinstance(value, list):
            _checkpoint(reader, value)
        elif key not in SET_BOOKKEEPING:
            reader.drift(f"$set.{key}")


def _checkpoint(reader: _Reader, messages: list) -> None:
    """The model's history replaces the loaded one. A recorded id keeps its recorded version (the
    copy lacks tokens, may hold masked output; a resume writes a partial checkpoint first); an id
    never seen is a synthetic turn (session context) and is added. Recorded messages missing from
    it only left the model's context: they happened, so they stay, unmarked."""
    valid = [m for m in messages if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if len(valid) < len(messages):  # Gemini's loader skips them: nothing tells one from a recorded message
        reader.problem("malformed", f"$set.messages: {len(messages) - len(valid)} message(s) without an id")
    for message in valid:
        if message["id"] not in reader.live and message["id"] not in reader.gone:
            _message(reader, message, checkpoint=True)
    ids = [m["id"] for m in valid]
    kept = set(ids)
    reader.gone.update(i for i in reader.live if i not in kept)
    reader.gone.difference_update(kept)
    reader.live = dict.fromkeys(ids)


def _rewind(reader: _Reader, target: str, raw: bytes) -> None:
    ids = list(reader.live)
    # Gemini drops everything when the target is unknown (loadConversationRecord).
    removed = ids[ids.index(target):] if target in reader.live else ids
    for mid in removed:
        reader.live.pop(mid)
        reader.gone.add(mid)
        for event in reader.emitted.pop(mid, []):
            reader.batch.events.append(dataclasses.replace(event, meta={**(event.meta or {}), "rewound": True}))
    # Events committed by an earlier read are marked by the bank (it needs no content for that).
    reader.batch.marks.append(Mark(reader.session_id, {"rewound": True}, uids=tuple(removed)))
    uid = record_uid(raw, context=reader.state.get("last_id"))
    reader.batch.events.append(Event(
        reader.session_id, uid, "system", "meta", text=f"rewound: {len(removed)} message(s) left the conversation",
        meta={"rewind_to": target, "rewound_ids": removed[:200], "rewound_count": len(removed)}))
    reader.patch().note(last_turn="complete")  # /rewind is typed between turns


# -- messages --------------------------------------------------------------------------------
def _message(reader: _Reader, msg: dict, checkpoint: bool) -> None:
    mtype = msg.get("type")
    handler = MESSAGES.get(mtype) if isinstance(mtype, str) else None
    if handler is None:
        reader.drift(f"message type={msg.get('type')!r}")
        return
    mid = msg["id"]
    if not checkpoint:
        reader.live.setdefault(mid, None)  # a re-appended id keeps its place
        reader.gone.discard(mid)
        reader.state["last_id"] = mid
    # Only the conversation's last message says where the turn stands (not a re-appended old one).
    reader.latest = not checkpoint and next(reversed(reader.live)) == mid
    reader.touch(msg.get("timestamp"))
    out: list[Event] = []
    handler(reader, msg, out, checkpoint)
    reader.emitted[mid] = out


def _user(reader: _Reader, msg: dict, out: list[Event], checkpoint: bool) -> None:
    mid, ts, parts = msg["id"], msg.get("timestamp"), _parts(msg.get("content"))
    responses = [p for p in parts if isinstance(p.get("functionResponse"), dict)]
    if responses:  # 0.44+: tool results recorded again as a user-typed message
        for part in responses:
            _response_copy(reader, mid, ts, part["functionResponse"], out)
        rest = _join((p for p in parts if p not in responses), True).strip()
        if rest:
            reader.emit(out, f"{mid}:ctx", ts, role="system", kind="text", text=rest, meta={"injected": True})
        _turn(reader, "open")
        return
    full = _join(parts, True)
    if _SNAPSHOT in full:
        reader.emit(out, mid, ts, role="system", kind="compaction", text=full.strip())
        return
    injected = _join((p for p in parts if _injected(p)), True)
    for match in _WORKSPACE.finditer(injected):  # the session context (0.44+) lists the workspace
        find_project(reader, (line.strip()[2:].strip() for line in match.group(1).splitlines()))
    if checkpoint or _is_subagent(reader):
        # Seen only in a checkpoint: Gemini wrote it. In a subagent: the parent agent's words.
        meta = {"injected": True, "from_agent": "parent"} if _is_subagent(reader) else {"injected": True}
        reader.emit(out, mid, ts, role="system", kind="text", text=full.strip(), meta=meta)
        if _is_subagent(reader):  # the task is the last part, after memory and hints
            _title(reader, next((t for t in map(_part_text, reversed(parts)) if t.strip()), ""))
            _turn(reader, "open")
        return
    if msg.get("displayContent") is not None:
        # What the user typed; the content sent to the model adds @-file contents and the like.
        typed, injected = _join(_parts(msg["displayContent"]), True), full
    else:
        typed = _join((p for p in parts if not _injected(p)), True)
    if injected.strip():
        reader.emit(out, f"{mid}:ctx", ts, role="system", kind="text", text=injected.strip(),
                    meta={"injected": True})
    if typed.strip():
        reader.emit(out, mid, ts, role="user", kind="text", text=typed.strip())
        _turn(reader, "open")
        _title(reader, typed)


def _gemini(reader: _Reader, msg: dict, out: list[Event], checkpoint: bool) -> None:
    mid, ts, model = msg["id"], msg.get("timestamp"), msg.get("model")
    if isinstance(model, str) and model:
        reader.patch().model = model
    parts = _parts(msg.get("content"))
    thoughts = [t for t in msg.get("thoughts") or [] if isinstance(t, dict)]
    thinking = "\n\n".join(_thought_text(t) for t in thoughts)
    if not thinking:  # history copies keep thoughts as parts instead
        thinking = "\n\n".join(str(p["text"]) for p in parts if p.get("thought") and isinstance(p.get("text"), str))
    text = _join(p for p in parts if not p.get("thought") and "functionCall" not in p)
    if (text.strip() or thinking.strip()) in SYNTHETIC_REPLIES and not msg.get("toolCalls"):
        reader.emit(out, mid, ts, role="system", kind="text", text=text.strip() or thinking.strip(),
                    meta={"synthetic": True})
        return
    if thinking.strip():
        reader.emit(out, f"{mid}:thinking", ts, role="assistant", kind="thinking", text=thinking.strip(),
                    model=model)
    if text.strip():
        reader.emit(out, mid, ts, role="assistant", kind="text", text=text, model=model)
    calls = _calls(msg, parts)
    statuses = [_tool_call(reader, mid, call, key, model, out) for call, key in calls]
    holder = next((e for e in out if e.kind != "thinking"), out[0] if out else None)
    tokens = msg.get("tokens")
    if holder is not None and isinstance(tokens, dict):
        cached = int(tokens.get("cached") or 0)
        holder.usage = Usage(input=max(int(tokens.get("input") or 0) - cached, 0), cache_read=cached,
                             output=int(tokens.get("output") or 0), reasoning=int(tokens.get("thoughts") or 0))
    if "cancelled" in statuses:
        _turn(reader, "aborted")
    elif calls:
        _turn(reader, "open")  # pending calls, or results the model has yet to answer
    elif text.strip():
        _turn(reader, "complete")


def _notice(reader: _Reader, msg: dict, out: list[Event], checkpoint: bool) -> None:
    """info / warning / error: what the interactive UI showed (useHistoryManager.ts)."""
    text = _join(_parts(msg.get("content"))).strip()
    if not text:
        return  # a compression notice is recorded without text (useHistoryManager.ts): nothing to say
    reader.emit(out, msg["id"], msg.get("timestamp"), role="system", kind="meta", text=text,
                meta={"level": msg["type"]})
    if msg["type"] == "error" or text in CANCELLED:
        _turn(reader, "aborted")


def _calls(msg: dict, parts: list[dict]) -> list[tuple[dict, str]]:
    """A message's tool calls, each with the key of its events: its id, else its place (``#n`` in
    ``toolCalls``, ``#pn`` among the parts), which a re-appended message keeps. Calls known only from
    the history copy's parts (no toolCalls record) count too, unless they copy a recorded call: by id,
    or, for a part without one (the API does not require it), by name."""
    recorded = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)]
    out = [(c, str(c["id"]) if c.get("id") else f"#{n}") for n, c in enumerate(recorded)]
    ids = {key for c, key in out if c.get("id")}
    unmatched = [c.get("name") for c in recorded]
    for n, part in enumerate(parts):
        call = part.get("functionCall")
        if not isinstance(call, dict):
            continue
        copy = {"id": call.get("id"), "name": call.get("name"), "args": call.get("args"), "status": None}
        if call.get("id"):
            if str(call["id"]) not in ids:
                out.append((copy, str(call["id"])))
        elif call.get("name") in unmatched:
            unmatched.remove(call.get("name"))
        else:
            out.append((copy, f"#p{n}"))
    return out


def _tool_call(reader: _Reader, mid: str, call: dict, key: str, model: Any, out: list[Event]) -> str | None:
    call_id = str(call["id"]) if call.get("id") else None
    name, args, status = call.get("name"), call.get("args"), call.get("status")
    meta = {k: call[k] for k in ("status", "agentId") if call.get(k)}
    reader.emit(out, f"{mid}:call:{key}", call.get("timestamp"), role="assistant", kind="tool_call",
                text=render_call(name, args, _CALL_KEYS), tool_name=name, tool_input=args, tool_call_id=call_id, model=model,
                meta=meta or None)
    if isinstance(args, dict) and not reader.state.get("cwd_known"):
        find_project(reader, (str(v) for k, v in args.items() if k in _PATH_ARGS and isinstance(v, str)))
    result = call.get("result")
    has_result = result is not None or status in _TERMINAL
    if call_id:  # bridges a call and the function response recorded after it (matched by id)
        calls = reader.state.setdefault("calls", {})
        calls[call_id] = [mid, has_result]
        while len(calls) > 64:
            calls.pop(next(iter(calls)))
    parts = _parts(result)
    # Masking (toolOutputMaskingService.ts) re-appends old results cut to a pointer at a saved
    # file: the result recorded first, whole, stays.
    if has_result and not any(_MASKED in _part_text(p) for p in parts):
        display = call.get("resultDisplay")  # what the UI showed, when no result was kept
        text = "\n".join(map(_part_text, parts)) if parts else display if isinstance(display, str) else f"[{status}]"
        failed = status in ("error", "cancelled") or any(_response_failed(p.get("functionResponse")) for p in parts)
        reader.emit(out, f"{mid}:result:{key}", call.get("timestamp"), role="tool", kind="tool_result",
                    text=text, tool_name=name, tool_call_id=call_id, is_error=failed)
    return status if isinstance(status, str) else None


def _response_copy(reader: _Reader, mid: str, ts: Any, response: dict, out: list[Event]) -> None:
    """A function response recorded as its own message: the tool call's result already holds it,
    unless that call was recorded without one (or not at all)."""
    call_id = str(response.get("id") or "")
    owner, has_result = reader.state.get("calls", {}).get(call_id, [mid, False])
    if has_result:
        return
    reader.emit(out, f"{owner}:result:{call_id}", ts, role="tool", kind="tool_result",
                text=_part_text({"functionResponse": response}), tool_name=response.get("name"),
                tool_call_id=call_id or None, is_error=_response_failed(response))


MessageHandler = Callable[[_Reader, dict, list[Event], bool], None]
MESSAGES: dict[str, MessageHandler] = {
    "user": _user, "gemini": _gemini, "info": _notice, "warning": _notice, "error": _notice,
    # cass's fixtures type the answers "model" (the API's role); no Gemini release did: read as what they are.
    "model": _gemini,
}


# -- helpers ---------------------------------------------------------------------------------
def _is_subagent(reader: _Reader) -> bool:
    return reader.subagent or reader.state.get("kind") == "subagent"


def _turn(reader: _Reader, state: str) -> None:
    if reader.latest:
        reader.patch().note(last_turn=state)


def _parts(content: Any) -> list[dict]:
    """A PartListUnion (a string, one part, or a list of strings and parts) as a list of parts."""
    items = content if isinstance(content, list) else [content]
    return [{"text": p} if isinstance(p, str) else p for p in items if isinstance(p, str | dict)]


def _thought_text(thought: dict) -> str:
    description = str(thought.get("description") or "")
    return f"**{thought['subject']}** {description}".strip() if thought.get("subject") else description


def _join(parts: Iterable[dict], apart: bool = False) -> str:
    """Parts back to back, as Gemini joins them (a model turn's parts are streamed pieces).
    ``apart``: a user turn's parts are separate pieces (memory, the task, hook context): a newline
    between two that would otherwise run together. An attachment's label is set apart by a space."""
    out = ""
    for part in parts:
        text = _part_text(part)
        if text and out and not out[-1].isspace() and not text[0].isspace():
            if not isinstance(part.get("text"), str):
                text = " " + text
            elif apart:
                text = "\n" + text
        out += text
    return out


def _injected(part: dict) -> bool:
    text = part.get("text")
    return isinstance(text, str) and text.lstrip().startswith(INJECTED_PREFIXES)


def _part_text(part: dict) -> str:
    if isinstance(part.get("text"), str):
        return part["text"]
    if isinstance(part.get("functionResponse"), dict):
        response = part["functionResponse"].get("response")
        if isinstance(response, dict):
            for key in ("output", "error", "content"):
                if isinstance(response.get(key), str):
                    return response[key]
        return orjson.dumps(response).decode() if response is not None else ""
    if isinstance(part.get("inlineData"), dict):
        return f"[{part['inlineData'].get('mimeType') or 'inline data'}]"
    if isinstance(part.get("fileData"), dict):
        return f"[file {part['fileData'].get('fileUri') or ''}]"
    if isinstance(part.get("functionCall"), dict):
        return f"[call {part['functionCall'].get('name')}]"
    if isinstance(part.get("executableCode"), dict):
        return str(part["executableCode"].get("code") or "")
    if isinstance(part.get("codeExecutionResult"), dict):
        return str(part["codeExecutionResult"].get("output") or "")
    return ""


def _response_failed(response: Any) -> bool:
    return isinstance(response, dict) and isinstance(response.get("response"), dict) and "error" in response["response"]


def _title(reader: _Reader, text: str) -> None:
    if text.strip() and not reader.state.get("titled"):
        reader.state["titled"] = True
        reader.patch().offer_title(_first_line(text), "first-prompt")


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:79] + "…"
