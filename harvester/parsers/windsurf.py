"""Windsurf (Codeium's VS Code fork): Cascade's encrypted store, and the editor's older chat panel.

Format facts and their sources: ``fixtures/windsurf/SOURCE.md``. In short:

- Cascade (the agent) keeps each conversation (a "trajectory") as one UUID-named protobuf file,
  ``~/.codeium/windsurf/cascade/<uuid>.pb``, encrypted (AES-GCM, per a third-party spec) with a key only
  Windsurf's language server holds; the only readable form is that server's localhost RPC while Windsurf
  runs, which a reader of files on disk cannot use. That store is declared opaque: ``status`` says it is
  present and not readable, with how many conversations it holds.
- The editor's chat panel (before Cascade) kept its chats in the workspace's VS Code state database,
  ``<Windsurf user dir>/User/workspaceStorage/<id>/state.vscdb`` (``ItemTable``; the folder is named in
  ``workspace.json`` beside it), under ``workbench.panel.aichat.view.aichat.chatdata`` or
  ``aiChat.chatdata``: either ``{"tabs": [{tabId, chatTitle, bubbles: [{type, text|rawText|initText}]}]}``
  (type ``user``/``1`` or ``ai``/``2``) or one VS Code chat session (``sessionId``, ``requests``:
  ``message.text``, ``response[].value``). Each value is rewritten whole: read again, the batch revises.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson

from harvester.model import Batch, Event, Problem
from harvester.parsers.base import (
    OpaqueStore,
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    iso_ms,
    json_objects,
)

NAME = "windsurf"
CHAT_KEYS = ("workbench.panel.aichat.view.aichat.chatdata", "aiChat.chatdata")
_USER_TYPES = {"user", "1", "human"}
_AI_TYPES = {"ai", "2", "assistant"}


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    # The language server's data folder sits in the home directory on every OS (%USERPROFILE% on Windows);
    # Windsurf Next keeps its own beside it. No override of Windsurf's own is known. The editor's user data
    # folder is VS Code's, per OS, for both channels.
    if platform == "darwin":
        editor = home / "Library" / "Application Support"
    elif platform == "win32":
        editor = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        xdg = env.get("XDG_CONFIG_HOME")
        editor = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
    return [home / ".codeium" / "windsurf", home / ".codeium" / "windsurf-next",
            editor / "Windsurf", editor / "Windsurf - Next"]


_KEYS = ", ".join(f"'{key}'" for key in CHAT_KEYS)
# ItemTable rows are replaced whole (a new rowid each write): rowid is the watermark.
QUERIES = (SqliteQuery("chat", "SELECT rowid AS rid, key, CAST(value AS TEXT) AS value FROM ItemTable "
                               f"WHERE key IN ({_KEYS}) AND rowid >= :since ORDER BY rowid", "rid", ordered=True),)
SOURCES: tuple[SourceSpec, ...] = (
    SourceSpec("User/workspaceStorage/*/state.vscdb", "sqlite", "workspace", watch=False, queries=QUERIES,
               sidecar=lambda path: path.with_name("workspace.json")),
)
OPAQUE = (OpaqueStore("cascade/*.pb", "Cascade conversations, encrypted protobuf: only the running Windsurf "
                                      "language server can read them"),)
PROCESSES = ("windsurf", "Windsurf", "Windsurf.exe", "language_server_linux_x64", "language_server_macos_arm")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True)  # a chat value is rewritten whole: the last version of an event wins
    cwd = _workspace_folder(ref.sidecar)
    fallback = f"workspace-{ref.path.parent.name}"
    for record, data in json_objects(records, batch.problems):
        row = data.get("row") if isinstance(data.get("row"), dict) else {}
        if data.get("table") != "chat" or row.get("key") not in CHAT_KEYS:
            batch.problems.append(Problem("unknown_type", record.line, f"table={data.get('table')!r}"))
            continue
        try:
            value = orjson.loads(row.get("value") or "null")
        except orjson.JSONDecodeError as exc:
            batch.problems.append(Problem("malformed", record.line, f"{row.get('key')} is not JSON: {exc}"))
            continue
        if isinstance(value, dict) and isinstance(value.get("requests"), list):
            _session(batch, value, str(value.get("sessionId") or fallback), cwd, record.line)
        elif isinstance(value, dict) and isinstance(value.get("tabs"), list):
            for tab in value["tabs"]:
                if isinstance(tab, dict) and isinstance(tab.get("tabId"), str) and tab.get("bubbles"):
                    _tab(batch, tab, cwd, record.line)
        elif value:
            batch.problems.append(Problem("unknown_type", record.line, f"{row.get('key')}: neither tabs nor requests"))
    return batch


def _workspace_folder(sidecar: bytes | None) -> str | None:
    """``workspace.json``'s ``folder`` (a file URI) as a path."""
    try:
        doc = orjson.loads(sidecar) if sidecar else None
    except orjson.JSONDecodeError:
        return None
    folder = doc.get("folder") if isinstance(doc, dict) else None
    if not isinstance(folder, str) or not folder.startswith("file://"):
        return None
    return unquote(urlparse(folder).path) or None


def _tab(batch: Batch, tab: dict, cwd: str | None, line: int) -> None:
    tid = tab["tabId"]
    patch = batch.session(tid)
    patch.cwd = cwd
    patch.updated_at = iso_ms(tab.get("lastSendTime"))
    if isinstance(tab.get("chatTitle"), str) and tab["chatTitle"].strip() not in ("", "New chat"):
        patch.offer_title(tab["chatTitle"].strip(), "ai")
    for index, bubble in enumerate(tab["bubbles"]):
        if not isinstance(bubble, dict):
            batch.problems.append(Problem("malformed", line, "chat bubble is not an object"))
            continue
        kind = str(bubble.get("type")).strip().lower()
        text = next((v for v in (bubble.get(k) for k in ("text", "rawText", "initText"))
                     if isinstance(v, str) and v.strip()), "")
        if kind not in _USER_TYPES | _AI_TYPES:
            batch.problems.append(Problem("unknown_type", line, f"chat bubble type={bubble.get('type')!r}"))
        elif text:
            role = "user" if kind in _USER_TYPES else "assistant"
            batch.events.append(Event(tid, f"{tid}:{bubble.get('id') or index}", role, "text", text))
            if role == "user":
                patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")


def _session(batch: Batch, doc: dict, sid: str, cwd: str | None, line: int) -> None:
    patch = batch.session(sid)
    patch.cwd = cwd
    patch.started_at = iso_ms(doc.get("creationDate"))
    patch.updated_at = iso_ms(doc.get("lastMessageDate"))
    if isinstance(doc.get("customTitle"), str) and doc["customTitle"].strip():
        patch.offer_title(doc["customTitle"].strip(), "custom")
    for index, request in enumerate(doc["requests"]):
        if not isinstance(request, dict):
            batch.problems.append(Problem("malformed", line, "chat request is not an object"))
            continue
        rid, ts = str(request.get("requestId") or index), iso_ms(request.get("timestamp"))
        message = request.get("message") if isinstance(request.get("message"), dict) else {}
        if isinstance(message.get("text"), str) and message["text"].strip():
            batch.events.append(Event(sid, f"{rid}:q", "user", "text", message["text"], ts=ts))
            patch.offer_title(message["text"].strip().splitlines()[0][:80], "first-prompt")
        answer = "".join(_response_text(part) for part in request.get("response") or [])
        if answer.strip():
            batch.events.append(Event(sid, f"{rid}:a", "assistant", "text", answer, ts=ts))


def _response_text(part: Any) -> str:
    """A VS Code chat response part: ``{"value": markdown}`` or ``{"kind": "markdownContent", "content": {"value"}}``."""
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("value"), str):
        return part["value"]
    content = part.get("content")
    return content["value"] if isinstance(content, dict) and isinstance(content.get("value"), str) else ""
