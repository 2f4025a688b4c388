"""Kiro IDE (AWS; a VS Code fork): the agent's ``globalStorage/kiro.kiroagent`` folder in Kiro's user dir.

Format facts and their sources: ``fixtures/kiro/SOURCE.md``. The IDE is closed source: every fact comes from
third-party readers of real stores (agentsview above all). In short:

- ``workspace-sessions/<base64(workspace path)>/<sessionId>.json``: ``{sessionId, title, workspaceDirectory,
  history: [{message: {role, content, id}, executionId, promptLogs: [{completion}]}]}``, rewritten whole.
  ``content`` is text or ``[{type: "text", text}]`` blocks. ``sessions.json`` beside it is the index
  (``[{sessionId, title, dateCreated, workspaceDirectory}]``): the sidecar.
- An assistant entry's ``executionId`` names an execution log, ``<sha256(workspace)[:32]>/414d16…/<file>``
  (``{executionId, actions: [{actionId, actionType: say|replace|create|readCode, input, output}]}``): what the
  agent said and did. The session file may hold only an acknowledgement; the log, where present, is the answer.
  The logs of the session's workspace are its related documents.
- Older builds: ``<workspace hash>/<file>.chat``, one execution each: ``{executionId, actionId, chat: [{role:
  human|bot|tool, content}], metadata: {modelId, workflow, startTime, endTime}}``.
- No record carries a time; a session's time is its file's.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    iso_text,
    render_call,
)

NAME = "kiro"
# The editor's process says nothing about which workspace a session is in: sessions end by idle time.
PROCESSES: tuple[str, ...] = ()
EXTENSION = "kiro.kiroagent"
EXEC_DIR = "414d1636299d2b9e4ce7e17fb11f63e9"  # the execution logs' folder in each workspace's (agentsview)
ROLES = frozenset({"user", "assistant", "tool"})
CHAT_ROLES = frozenset({"human", "bot", "tool"})
ACTIONS = frozenset({"say", "replace", "create", "readCode"})
# Human turns of a .chat file that are Kiro's own prompt (system prompt, rules), not the user's words.
SYSTEM_PREFIXES = ("# System Prompt", "# Identity", "<identity>", "## Included Rules", "You are operating in a workspace")
ACK = "I will follow these instructions."  # the bot's reply to the injected rules
_CALL_KEYS = ("file", "path", "command", "query")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """Electron's appData per OS (they need not exist): $XDG_CONFIG_HOME or ~/.config on Linux,
    ~/Library/Application Support on macOS, %APPDATA% on Windows; the user dir is Kiro/User."""
    linux = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    windows = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    bases = (linux, home / "Library" / "Application Support", windows)
    return [base / "Kiro" / "User" / "globalStorage" / EXTENSION for base in bases]


def _index(path: PurePath) -> PurePath:
    return path.with_name("sessions.json")


def workspace_of(folder: str) -> str | None:
    """The workspace path a ``workspace-sessions`` folder is named after (base64, standard or URL-safe)."""
    padded = folder + "=" * (-len(folder) % 4)
    for altchars in (None, b"-_"):
        try:
            path = base64.b64decode(padded.encode(), altchars, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        return path or None
    return None


def _execution_logs(path: PurePath) -> list[PurePath]:
    """The execution logs of the session's workspace: ``<storage>/<sha256(workspace)[:32]>/<EXEC_DIR>/*``."""
    workspace = workspace_of(path.parent.name)
    if not workspace:
        return []
    import hashlib  # here: status imports every parser, and hashlib costs a few milliseconds

    folder = path.parents[2] / hashlib.sha256(workspace.encode()).hexdigest()[:32] / EXEC_DIR
    try:
        with os.scandir(folder) as entries:
            return sorted(PurePath(e.path) for e in entries if not e.name.startswith(".") and e.is_file())
    except OSError:
        return []


def _workspace_index(path: PurePath) -> PurePath:
    """A .chat file's workspace: the ``workspace-sessions`` folder whose path hashes to its folder's name."""
    import hashlib

    sessions = path.parents[1] / "workspace-sessions"
    try:
        with os.scandir(sessions) as entries:
            for entry in entries:
                workspace = workspace_of(entry.name) if entry.is_dir() else None
                if workspace and hashlib.sha256(workspace.encode()).hexdigest()[:32] == path.parent.name:
                    return PurePath(entry.path) / "sessions.json"
    except OSError:
        pass
    return sessions / path.parent.name / "sessions.json"  # none: a path that does not exist


SOURCES = (
    SourceSpec("workspace-sessions/*/*.json", "json", "session", sidecar=_index, related=_execution_logs,
               ignore=("sessions.json",)),
    SourceSpec("*/*.chat", "json", "chat", sidecar=_workspace_index),
)


class _Reader:
    def __init__(self, ref: SourceRef) -> None:
        self.ref = ref
        self.batch = Batch(revise=True)  # the file is rewritten whole: a message may change in place
        self.sid = ""
        self.line = 1

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, **fields))

    def problem(self, kind: Any, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    records = list(records)
    reader = _Reader(ref)
    if not records:
        return reader.batch
    # A whole document that does not decode raises: the source fails and is read again once rewritten.
    document = orjson.loads(records[0].raw)
    if not isinstance(document, dict):
        raise ValueError("the session document is not a JSON object")
    try:
        if ref.variant == "chat":
            _chat(reader, document)
        else:
            _session(reader, document, _logs(reader, records[1:]))
    except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as exc:
        reader.problem("malformed", f"session of unexpected shape: {describe_error(exc)}")
    if reader.sid and ref.mtime_ns:
        reader.patch.updated_at = reader.patch.updated_at or iso_ms(ref.mtime_ns // 1_000_000)
    return reader.batch


def _logs(reader: _Reader, records: list[Record]) -> dict[str, list]:
    """executionId -> its actions, from the workspace's execution logs (another session's are there too)."""
    out: dict[str, list] = {}
    for record in records:
        try:
            log = orjson.loads(record.raw)
        except orjson.JSONDecodeError:
            continue  # one being written, or not a log: the session stands without it
        if isinstance(log, dict) and isinstance(log.get("executionId"), str) and isinstance(log.get("actions"), list):
            out[log["executionId"]] = log["actions"]
    return out


def _session(reader: _Reader, document: dict, logs: dict[str, list]) -> None:
    sid = document.get("sessionId")
    reader.sid = sid if isinstance(sid, str) and sid else reader.ref.path.stem
    patch = reader.patch
    index = _index_entry(reader.ref.sidecar, reader.sid)
    workspace = document.get("workspaceDirectory") or index.get("workspaceDirectory")
    patch.cwd = workspace if isinstance(workspace, str) and workspace else workspace_of(reader.ref.path.parent.name)
    created = index.get("dateCreated")
    patch.started_at = iso_text(created) or iso_ms(int(created) if isinstance(created, str) and created.isdigit()
                                                   else created)
    title = document.get("title") or index.get("title")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "ai")  # who writes it (Kiro or the user) is UNCONFIRMED
    history = document.get("history") if isinstance(document.get("history"), list) else []
    last = None
    for n, entry in enumerate(history):
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            reader.problem("malformed", f"history entry {n} without a message")
            continue
        role = message.get("role")
        if role not in ROLES:
            reader.problem("unknown_type", f"message role={role!r}")
            continue
        uid = message.get("id") if isinstance(message.get("id"), str) and message["id"] else f"history:{n}"
        text = _content(message.get("content"))
        if role == "user":
            if text.strip():
                reader.emit(uid, role="user", kind="text", text=text)
            last = "open"
        elif role == "tool":
            if text.strip():  # tool output as the model saw it
                reader.emit(uid, role="tool", kind="tool_result", text=text)
        else:
            _assistant(reader, entry, uid, text, logs)
            last = "complete"
    if last:
        patch.note(last_turn=last)


def _assistant(reader: _Reader, entry: dict, uid: str, text: str, logs: dict[str, list]) -> None:
    execution = entry.get("executionId")
    actions = logs.get(execution) if isinstance(execution, str) else None
    if actions is None:
        completions = [p.get("completion") for p in entry.get("promptLogs") or [] if isinstance(p, dict)]
        said = text.strip() or "\n\n".join(c.strip() for c in completions if isinstance(c, str) and c.strip())
        if said:
            reader.emit(uid, role="assistant", kind="text", text=said, meta={"executionId": execution} if execution
                        else None)
        return
    for n, action in enumerate(actions):
        action = action if isinstance(action, dict) else {}
        kind = action.get("actionType")
        if kind not in ACTIONS:
            reader.problem("unknown_type", f"execution action actionType={kind!r}")
            continue
        action_id = action.get("actionId") if isinstance(action.get("actionId"), str) else f"{execution}#{n}"
        given = action.get("input") if isinstance(action.get("input"), dict) else {}
        output = action.get("output") if isinstance(action.get("output"), dict) else {}
        if kind == "say":
            if isinstance(output.get("message"), str) and output["message"].strip():
                reader.emit(f"{uid}:{action_id}", role="assistant", kind="text", text=output["message"])
            continue
        tool_input = {k: v for k, v in given.items() if k != "originalContent"}  # the file before: not a call's input
        reader.emit(f"{uid}:{action_id}", role="assistant", kind="tool_call", tool_name=kind, tool_call_id=action_id,
                    tool_input=tool_input, text=render_call(kind, tool_input, _CALL_KEYS))
        if isinstance(output.get("message"), str) and output["message"].strip():
            reader.emit(f"{uid}:{action_id}:result", role="tool", kind="tool_result", text=output["message"],
                        tool_name=kind, tool_call_id=action_id)


def _chat(reader: _Reader, document: dict) -> None:
    """An older build's execution: one file, one session (``<workspace hash>:<file>``, as agentsview names it)."""
    path = reader.ref.path
    reader.sid = f"{path.parent.name}:{path.stem}"
    meta = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    patch = reader.patch
    patch.started_at, patch.updated_at = iso_ms(meta.get("startTime")), iso_ms(meta.get("endTime"))
    model = meta.get("modelId")
    patch.model = model if isinstance(model, str) and model else None
    if isinstance(meta.get("workflow"), str):
        patch.note(workflow=meta["workflow"])
    index = _index_entry(reader.ref.sidecar, None)
    patch.cwd = index.get("workspaceDirectory") if isinstance(index.get("workspaceDirectory"), str) else None
    chat = document.get("chat") if isinstance(document.get("chat"), list) else []
    for n, message in enumerate(chat):
        message = message if isinstance(message, dict) else {}
        role, text = message.get("role"), message.get("content")
        if role not in CHAT_ROLES:
            reader.problem("unknown_type", f"chat role={role!r}")
            continue
        if not isinstance(text, str) or not text.strip():
            continue
        stripped = text.strip()
        if role == "human":
            if stripped.startswith(SYSTEM_PREFIXES):
                reader.emit(f"chat:{n}", role="system", kind="text", text=text, meta={"injected": True})
                continue
            if stripped.startswith("<kiro-ide-message>"):
                text = stripped.removeprefix("<kiro-ide-message>").removesuffix("</kiro-ide-message>").strip()
            reader.emit(f"chat:{n}", role="user", kind="text", text=text)
        elif role == "bot":
            if stripped != ACK:
                reader.emit(f"chat:{n}", role="assistant", kind="text", text=text, model=patch.model)
        else:
            reader.emit(f"chat:{n}", role="tool", kind="tool_result", text=text)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                         and isinstance(b.get("text"), str))
    return ""


def _index_entry(raw: bytes | None, sid: str | None) -> dict:
    """The index entry of session ``sid`` (any entry when None: they share the folder's workspace)."""
    try:
        entries = orjson.loads(raw) if raw else []
    except orjson.JSONDecodeError:
        return {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and (sid is None or entry.get("sessionId") == sid):
            return entry
    return {}
