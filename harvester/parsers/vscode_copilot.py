"""VS Code's chat (GitHub Copilot Chat and any other chat participant): ``<User>/workspaceStorage/<hash>/chatSessions/``.

Positron (a fork of VS Code, its Positron Assistant a chat participant) keeps the same files in its own
``User`` folder: a harness of its own, read by this parser (``fixtures/positron/SOURCE.md``).

Format facts and their sources: ``fixtures/vscode_copilot/SOURCE.md``. In short:

- One file per chat session, named by its session id, in the workspace's storage folder
  (``workspaceStorage/<hash>/chatSessions/``) or, for a window with no folder open,
  ``globalStorage/emptyWindowChatSessions/``. ``workspace.json`` beside ``chatSessions/`` names the
  workspace folder: the session's cwd.
- Since VS Code 1.109 the file is ``<id>.jsonl``, an operation log (``objectMutationLog.ts``): line 1 is
  ``{"kind": 0, "v": <whole session>}``; then ``kind`` 1 sets ``v`` at path ``k``, 2 pushes ``v`` onto the
  array at ``k`` (cut to length ``i`` first when given), 3 deletes ``k``. Past 1024 entries VS Code
  writes the file anew as one initial entry. It is read whole on every change (a replay needs the
  whole log; a compacted file is just a shorter log). Before 1.109: ``<id>.json``, the session document
  itself, rewritten whole; a ``.json`` beside a ``.jsonl`` is the older copy and is not read.
- The session document (``ISerializableChatData`` v1-v3): ``{version, sessionId, creationDate (ms),
  customTitle | computedTitle, initialLocation, requests, repoData?, inputState?, pendingRequests?}``.
  Each request is one turn: ``{requestId, timestamp, message: {text, parts} | text, modelId, agent,
  modeInfo, response: [parts], result: {metadata, errorDetails, timings}, modelState: {value,
  completedAt}}``. Response parts: Markdown strings (``{value, ...}`` without a kind), ``thinking``,
  ``toolInvocationSerialized`` (a call and, once ``isComplete``, its outcome) and UI parts (kinds in
  ``SKIPPED_PARTS``). The Copilot extension's ``result.metadata`` adds the model's own tool-call rounds
  (``toolCallRounds[].toolCalls[]``: the calls' arguments), token counts and a conversation summary
  (compaction).
- Identity: a request's uid is its ``requestId``; a tool call's its ``toolCallId``; a run of Markdown
  parts the position of its first part in the response. Parts grow while a response streams and a
  tool's outcome is filled in later: events are revised in place (``Batch.revise``).
- Subagents run inside the parent's turn: their tool calls carry ``subAgentInvocationId`` (kept in the
  event's meta); there is no separate session to link.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, SessionPatch, Usage
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, iso_ms, render_call

NAME = "vscode-copilot"
# The VS Code builds whose user-data folder is read: stable and Insiders (VSCodium and other forks
# keep theirs under another name: a `[roots] vscode-copilot` entry adds one).
PRODUCTS = ("Code", "Code - Insiders")


def roots_for(platform: str, env: Mapping[str, str], home: Path, products: tuple[str, ...] = PRODUCTS) -> list[Path]:
    """Each product's ``User`` folder, found as VS Code finds its user-data dir (``paths.ts``):
    ``$VSCODE_PORTABLE/user-data``, else ``$VSCODE_APPDATA/<product>``, else the OS's app-data folder.
    ``--user-data-dir`` is a command-line switch nothing can see: it needs a configured root."""
    if env.get("VSCODE_PORTABLE"):
        return [Path(env["VSCODE_PORTABLE"]) / "user-data" / "User"]
    if env.get("VSCODE_APPDATA"):
        base = Path(env["VSCODE_APPDATA"])
    elif platform.startswith("win"):
        base = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    elif platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return [base / product / "User" for product in products]


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


# Positron (posit-dev/positron), a fork of VS Code: the same chat, its own user-data folder (product.json's
# ``nameShort`` "Positron"); Positron Assistant is a chat participant there, its sessions VS Code's.
POSITRON_NAME = "positron"
POSITRON_PROCESSES = ("positron", "Positron", "Positron.exe")


def positron_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home, ("Positron",))


def _workspace(path: PurePath) -> PurePath:
    return path.parent.parent / "workspace.json"  # workspaceStorage/<hash>/{chatSessions/<id>, workspace.json}


def _log(path: PurePath) -> PurePath:
    return path.with_suffix(".jsonl")


SOURCES = (
    SourceSpec("workspaceStorage/*/chatSessions/*.jsonl", "json", "log", sidecar=_workspace),
    SourceSpec("workspaceStorage/*/chatSessions/*.json", "json", "flat", shadowed_by=_log, sidecar=_workspace),
    SourceSpec("globalStorage/emptyWindowChatSessions/*.jsonl", "json", "log"),
    SourceSpec("globalStorage/emptyWindowChatSessions/*.json", "json", "flat", shadowed_by=_log),
)
# Not read: globalStorage/transferredChatSessions/ (a session handed to another window, deleted once it
# is opened there: the same session again), the index in state.vscdb (titles and times only).

PROCESSES = ("code", "code-insiders", "Code", "Code - Insiders", "Code.exe", "Code - Insiders.exe")

# The operation log's entry kinds (objectMutationLog.ts EntryKind).
INITIAL, SET, PUSH, DELETE = 0, 1, 2, 3
# ResponseModelState: Pending, Complete, Cancelled, Failed, NeedsInput.
TURN_STATES = {0: "open", 1: "complete", 2: "aborted", 3: "failed", 4: "open"}
# Response parts that draw the UI, not the conversation (file trees, edit diffs, buttons, progress,
# confirmations, code block anchors, undo stops...): known, skipped on purpose.
SKIPPED_PARTS = frozenset({
    "codeblockUri", "undoStop", "textEditGroup", "notebookEditGroup", "workspaceEdit", "multiDiffData",
    "treeData", "command", "extensions", "pullRequest", "confirmation", "elicitationSerialized",
    "elicitation", "questionCarousel", "mcpServersStarting", "clearToPreviousToolInvocation", "hook",
    "disabledClaudeHooks", "progressMessage", "progressTask", "progressTaskSerialized", "prepareToolInvocation",
    "toolInvocation", "references", "codeCitation", "usedContext", "move", "todoList",
})
_CALL_KEYS = ("command", "commandLine", "filePath", "file_path", "path", "query", "pattern", "url", "urls",
              "dirPath", "prompt", "description")


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch) -> None:
        self.ref, self.batch = ref, batch
        self.sid = ref.path.name.removesuffix(".jsonl").removesuffix(".json")
        self.line = 1
        self.drifted: set[str] = set()

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def event(self, uid: str, **fields: Any) -> Event:
        event = Event(self.sid, uid, **fields)
        self.batch.events.append(event)
        return event

    def problem(self, kind: Any, detail: str) -> None:  # kind: a ProblemKind
        self.batch.problems.append(Problem(kind, self.line, detail))

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:  # once per read, not once per request
            self.drifted.add(detail)
            self.problem("unknown_type", detail)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, Batch(revise=True, state=state))
    for record in records:
        document = _replay(reader, record.raw) if ref.variant == "log" else _document(reader, record.raw)
        if document is None:
            continue
        reader.line = 1
        try:
            _session(reader, document)
        except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
            reader.problem("malformed", f"session of unexpected shape: {describe_error(exc)}")
    return reader.batch


# -- the two file layouts ------------------------------------------------------------------------
def _document(reader: _Reader, raw: bytes) -> dict | None:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        reader.problem("malformed", f"invalid JSON: {exc}")
        return None
    if not isinstance(data, dict):
        reader.problem("malformed", "session is not an object")
        return None
    return data


def _replay(reader: _Reader, raw: bytes) -> dict | None:
    """The session the log's entries build, applied in order as VS Code's reader applies them."""
    state: Any = None
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, 1):
        reader.line = number
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if number == len(lines) and state is not None:
                break  # no newline yet: VS Code is appending it; the next change has it whole
            reader.problem("malformed", f"invalid JSON: {exc}")
            continue
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind == INITIAL:
            state = entry.get("v")
        elif kind in (SET, PUSH, DELETE):
            if not isinstance(state, dict):
                reader.problem("malformed", "an update before the initial entry")
                continue
            try:
                _apply(state, kind, entry)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                reader.problem("malformed", f"update to a path the session lacks: {describe_error(exc)}")
        else:
            reader.drift(f"log entry kind={kind!r}")
    if state is None:
        return None
    if not isinstance(state, dict):
        reader.problem("malformed", "session is not an object")
        return None
    return state


def _apply(state: dict, kind: int, entry: dict) -> None:
    path = entry["k"]
    if not isinstance(path, list) or not path:
        raise ValueError("empty path")
    parent: Any = state
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if kind == SET:
        parent[last] = entry.get("v")
    elif kind == DELETE:
        if isinstance(parent, dict):
            parent.pop(last, None)
        else:
            parent[last] = None
    else:
        items = parent[last] if isinstance(parent, list) or last in parent else []
        items = items if isinstance(items, list) else []
        if isinstance(entry.get("i"), int):
            del items[entry["i"]:]
        items.extend(entry.get("v") or [])
        parent[last] = items


# -- the session ---------------------------------------------------------------------------------
def _session(reader: _Reader, data: dict) -> None:
    requests = data.get("requests")
    if not isinstance(requests, list):
        reader.problem("malformed", "session without a requests list")
        return
    patch = reader.patch
    patch.started_at = iso_ms(data.get("creationDate"))
    if isinstance(data.get("sessionId"), str) and data["sessionId"] != reader.sid:
        patch.note(recorded_session_id=data["sessionId"])  # VS Code itself goes by the file name
    if reader.ref.sidecar is not None:
        patch.cwd = _folder(reader)
    # v3's customTitle, v2's computedTitle: generated by the model or typed in a rename (not told apart)
    title = data.get("customTitle") or data.get("computedTitle")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "ai")
    for key in ("initialLocation", "responderUsername"):
        if isinstance(data.get(key), str | int) and data[key] != "":
            patch.note(**{key: data[key]})
    _repo(patch, data.get("repoData"))
    last_state, first = None, True
    for position, request in enumerate(requests):
        if not isinstance(request, dict) or not isinstance(request.get("requestId"), str):
            reader.problem("malformed", f"requests[{position}] is not a request")
            continue
        last_state = _request(reader, request, first)
        first = False
    if last_state:
        patch.note(last_turn=last_state)


def _folder(reader: _Reader) -> str | None:
    """The workspace folder ``workspace.json`` names; a ``.code-workspace`` (several folders) names none."""
    try:
        data = orjson.loads(reader.ref.sidecar or b"")
    except orjson.JSONDecodeError:
        return None  # caught mid-rewrite: the next change of the session reads it again
    folder = data.get("folder") if isinstance(data, dict) else None
    if not isinstance(folder, str) or not folder.startswith("file:"):
        if isinstance(data, dict) and (data.get("workspace") or data.get("folder")):
            reader.patch.note(workspace=data.get("workspace") or data.get("folder"))  # remote or multi-root
        return None
    path = unquote(urlsplit(folder).path)
    return path[1:] if len(path) > 2 and path[0] == "/" and path[2] == ":" else path  # file:///c%3A/... on Windows


def _repo(patch: SessionPatch, repo: Any) -> None:
    if not isinstance(repo, dict):
        return
    git = GitFacts(branch=_str(repo.get("localBranch")), commit=_str(repo.get("localHeadCommit")),
                   origin_url=_str(repo.get("remoteUrl")))
    if git.branch or git.commit or git.origin_url:
        patch.git = git


def _request(reader: _Reader, request: dict, first: bool) -> str | None:
    rid = request["requestId"]
    ts = iso_ms(request.get("timestamp"))
    meta: dict[str, Any] = {}
    if isinstance(request.get("agent"), dict) and _str(request["agent"].get("id")):
        meta["agent"] = request["agent"]["id"]
    mode = request.get("modeInfo")
    if isinstance(mode, dict) and (_str(mode.get("modeId")) or _str(mode.get("kind"))):
        meta["mode"] = _str(mode.get("modeId")) or _str(mode.get("kind"))
    if request.get("shouldBeRemovedOnSend") or request.get("isHidden"):
        meta["removed"] = True  # undone (a checkpoint restored): kept, marked
    message = request.get("message")
    text = message if isinstance(message, str) else _str(message.get("text")) if isinstance(message, dict) else ""
    if text.strip():
        reader.event(rid, role="user", kind="text", text=text, ts=ts, meta=meta or None)
        if first:
            reader.patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")
    result = request.get("result") if isinstance(request.get("result"), dict) else {}
    details = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
    model = _str(details.get("resolvedModel")) or _str(request.get("modelId")) or None
    if model:
        reader.patch.model = model
    arguments = _round_arguments(details)
    if isinstance(details.get("summary"), dict) and _str(details["summary"].get("text")):
        # The conversation so far, summarized when this turn started (the context was full): what the
        # model sees from here on in place of the earlier turns, which stay in the file.
        reader.event(f"{rid}:summary", role="system", kind="compaction", text=details["summary"]["text"], ts=ts)
    last = None
    response = request.get("response")
    for event in _response(reader, rid, response if isinstance(response, list) else [], ts, model, arguments):
        last = event
    error = result.get("errorDetails")
    if isinstance(error, dict) and _str(error.get("message")):
        last = reader.event(f"{rid}:error", role="system", kind="text", text=error["message"], ts=ts,
                            meta={"error": True, **({"filtered": True} if error.get("responseIsFiltered") else {})})
    usage = Usage(input=_int(details.get("promptTokens")), output=_int(details.get("outputTokens")))
    if last is not None and (usage.input or usage.output):
        last.usage = usage
    return _turn(request, result)


def _turn(request: dict, result: dict) -> str | None:
    state = request.get("modelState")
    if isinstance(state, dict) and state.get("value") in TURN_STATES:
        return TURN_STATES[state["value"]]
    if request.get("isCanceled"):  # before modelState (1.10x)
        return "aborted"
    if isinstance(result.get("errorDetails"), dict):
        return "failed"
    return "complete" if result else "open"


def _round_arguments(details: dict) -> dict[str, Any]:
    """Tool call id -> the arguments the model sent (the Copilot extension's toolCallRounds)."""
    out: dict[str, Any] = {}
    for round_ in details.get("toolCallRounds") or []:
        for call in (round_.get("toolCalls") or []) if isinstance(round_, dict) else []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                out[call["id"]] = _maybe_json(call.get("arguments"))
    return out


def _response(reader: _Reader, rid: str, parts: list, ts: str | None, model: str | None,
              arguments: dict[str, Any]) -> Iterable[Event]:
    text: list[str] = []
    start = 0

    def flush() -> Event | None:
        joined = "".join(text).strip()
        text.clear()
        return reader.event(f"{rid}:r{start}", role="assistant", kind="text", text=joined, ts=ts,
                            model=model) if joined else None

    for position, part in enumerate(parts):
        kind = part.get("kind") if isinstance(part, dict) else None
        if not isinstance(part, dict):
            reader.problem("malformed", f"{rid}: response part is not an object")
        elif kind is None or kind in ("markdownContent", "markdownVuln"):
            value = part.get("value") if kind is None else _dig(part, "content", "value")
            if not text:
                start = position
            text.append(value if isinstance(value, str) else "")
        elif kind == "inlineReference":
            if not text:
                start = position
            text.append(_reference(part))
        elif kind == "thinking":
            if (event := flush()) is not None:
                yield event
            value = part.get("value")
            thought = "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""
            if thought.strip():
                yield reader.event(f"{rid}:r{position}", role="assistant", kind="thinking", text=thought.strip(),
                                   ts=ts, model=model)
        elif kind == "toolInvocationSerialized":
            if (event := flush()) is not None:
                yield event
            yield from _tool(reader, rid, position, part, ts, model, arguments)
        elif kind == "warning":
            if (event := flush()) is not None:
                yield event
            message = _message(part.get("content"))
            if message:
                yield reader.event(f"{rid}:r{position}", role="system", kind="text", text=message, ts=ts,
                                   meta={"warning": True})
        elif kind not in SKIPPED_PARTS:
            reader.drift(f"response part kind={kind!r}")
    if (event := flush()) is not None:
        yield event


def _tool(reader: _Reader, rid: str, position: int, part: dict, ts: str | None, model: str | None,
          arguments: dict[str, Any]) -> Iterable[Event]:
    name = _str(part.get("toolId")) or "tool"
    call_id = _str(part.get("toolCallId")) or f"{rid}:r{position}"
    data = part.get("toolSpecificData") if isinstance(part.get("toolSpecificData"), dict) else {}
    tool_input = arguments.get(call_id)
    if tool_input is None:  # no model-side record: what the UI kept of the call
        tool_input = _specific_input(data) or _message(part.get("invocationMessage")) or None
    source = part.get("source") if isinstance(part.get("source"), dict) else {}
    meta = {k: v for k, v in (("subagent", part.get("subAgentInvocationId")),  # a call the subagent made
                              ("source", source.get("label") if source.get("type") not in (None, "internal") else None))
            if v}  # an MCP server's or an extension's tool, by name
    yield reader.event(f"tool:{call_id}", role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
                       ts=ts, tool_name=name, tool_input=tool_input, tool_call_id=call_id, model=model,
                       meta=meta or None)
    if not part.get("isComplete"):
        return  # still running, or waiting for the user's approval
    details = part.get("resultDetails") if isinstance(part.get("resultDetails"), dict) else {}
    output = details.get("output")
    texts = [o["value"] for o in output if isinstance(o, dict) and o.get("isText") and isinstance(o.get("value"), str)] \
        if isinstance(output, list) else [output] if isinstance(output, str) else []
    exit_code = _dig(data, "terminalCommandState", "exitCode")
    text = "\n".join(texts) or _str(_dig(data, "terminalCommandOutput", "text")) or _str(data.get("result")) \
        or _message(part.get("pastTenseMessage")) or _message(part.get("invocationMessage"))
    denied = part.get("isConfirmed") is False  # before 1.104 a boolean; after, a reason object
    error = bool(details.get("isError")) or denied or (isinstance(exit_code, int) and exit_code != 0)
    yield reader.event(f"tool:{call_id}:result", role="tool", kind="tool_result", text=text or ("denied" if denied else ""),
                       ts=ts, tool_name=name, tool_call_id=call_id, is_error=error, meta=meta or None)


def _specific_input(data: dict) -> Any:
    """A call's input where the tool's own data holds it: a terminal's command line, a tool's raw
    input, a subagent's prompt."""
    kind = data.get("kind")
    if kind == "terminal":
        command = _dig(data, "commandLine", "original") or data.get("command")
        return {"command": command} if isinstance(command, str) else None
    if kind == "input":
        return data.get("rawInput")
    if kind == "subagent":
        return {k: data[k] for k in ("agentName", "description", "prompt") if isinstance(data.get(k), str)} or None
    return None


# -- helpers -------------------------------------------------------------------------------------
def _reference(part: dict) -> str:
    ref = part.get("inlineReference")
    name = part.get("name")
    path = _dig(ref, "fsPath") or _dig(ref, "path") or _dig(ref, "uri", "fsPath") or _dig(ref, "uri", "path")
    label = name if isinstance(name, str) and name else path
    return f"`{label}`" if isinstance(label, str) and label else ""


def _message(value: Any) -> str:
    """A string or an IMarkdownString ``{value}``."""
    if isinstance(value, dict):
        value = value.get("value")
    return value.strip() if isinstance(value, str) else ""


def _dig(value: Any, *path: str) -> Any:
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _maybe_json(value: Any) -> Any:
    try:  # the model's arguments: JSON held in a string
        return orjson.loads(value) if isinstance(value, str) else value
    except orjson.JSONDecodeError:
        return value or None
