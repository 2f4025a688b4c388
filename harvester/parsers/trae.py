"""Trae (ByteDance's VS Code fork) IDE agent: ``<Trae data dir>/User/{globalStorage,workspaceStorage/<hash>}/state.vscdb``.

Trae is closed source: every fact here comes from third-party readers of real stores, named in
``fixtures/trae/SOURCE.md``. In short:

- The agent panel's session list is a VS Code memento: ``ItemTable`` key ``memento/icube-ai-agent-storage``
  in the workspace's ``state.vscdb`` (and in ``globalStorage/state.vscdb``), one JSON document
  ``{"list": [session...], "currentSessionId"}``. A session is ``{sessionId, isCurrent?, createdAt?,
  updatedAt?, model?, messages: [{role, content, agentTaskContent?, timestamp?, model?, turnIndex?}]}``;
  times are epoch milliseconds (or seconds, or RFC 3339 text). An assistant message with no ``content``
  keeps its text in ``agentTaskContent`` (text, or ``{content | text | proposal}``, or a plan:
  ``guideline.planItems[].content``). ``workspace.json`` beside a workspace's ``state.vscdb`` names the
  folder: the sessions' cwd.
- Older builds keep the messages in that document. Current builds keep only stubs there
  (``messages: []``) and the conversations in ``ModularData/ai-agent/database.db``, whose header is not
  SQLite's (encrypted): that file is declared opaque, never opened, and ``status`` says it is present and
  not readable. A stub has nothing to show: it is skipped, as agentsview skips it.
- Not read: ``icube-ai-agent-storage-input-history`` (the prompts typed in a workspace, with no session
  id and no time: they cannot be placed in a session) and the panel's other keys (``ChatStore``,
  ``icube_session_agent_map``, ``<user id>_ai-chat:sessionRelation:*``).
- The memento is rewritten whole (VS Code's storage writes ``ItemTable`` with INSERT into a UNIQUE ON
  CONFLICT REPLACE key, so every write gets a new rowid): the row is read again on each change and its
  events are revised in place. Messages carry no id: a message's uid is its position in the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch
from harvester.parsers import cursor
from harvester.parsers.base import (
    OpaqueStore,
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    iso_ms,
    iso_text,
    json_objects,
)

NAME = "trae"

# The international build and the two Chinese builds each keep a data folder of their own.
_PRODUCTS = ("Trae", "Trae CN", "TRAE SOLO CN")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # Electron's user-data folder per OS (Trae is an Electron app): %APPDATA% on Windows, Application
    # Support on macOS, $XDG_CONFIG_HOME (~/.config) on Linux. Trae has no override of its own that is
    # known; agentsview's TRAE_DIR is that reader's own setting.
    bases = [Path(env.get("XDG_CONFIG_HOME") or home / ".config"), home / "Library" / "Application Support"]
    bases.append(Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming")
    return [base / product for base in bases for product in _PRODUCTS]


STORAGE_KEY = "memento/icube-ai-agent-storage"
# One row; its rowid changes on every write (see the module docstring), so it is the watermark.
QUERIES = (SqliteQuery(
    "memento", "SELECT rowid AS rid, key, CAST(value AS TEXT) AS value FROM ItemTable "
    f"WHERE key = '{STORAGE_KEY}' AND rowid >= :since", "rid", ordered=True),)
SOURCES = (
    SourceSpec("User/globalStorage/state.vscdb", "sqlite", "global", watch=False, queries=QUERIES),
    SourceSpec("User/workspaceStorage/*/state.vscdb", "sqlite", "workspace", watch=False, queries=QUERIES,
               sidecar=lambda path: path.with_name("workspace.json")),
)
OPAQUE = (OpaqueStore("ModularData/ai-agent/database.db", "the agent's conversations, an encrypted database "
                                                          "(not SQLite): only the running Trae can read it"),)
PROCESSES = ("trae", "Trae", "Trae.exe", "Trae CN", "Trae CN.exe")

ROLES = ("user", "assistant")
# Keys of agentTaskContent that hold an assistant's text, in agentsview's order of preference.
_TASK_TEXT = ("content", "text", "proposal")


class _Reader:
    def __init__(self) -> None:
        self.batch = Batch(revise=True)  # the document is rewritten whole: a message may have grown
        self.line = 0
        self.drifted: set[str] = set()

    def problem(self, kind: Any, detail: str) -> None:  # kind: a ProblemKind
        self.batch.problems.append(Problem(kind, self.line, detail))

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:  # once per read, not once per message
            self.drifted.add(detail)
            self.problem("unknown_type", detail)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader()
    cwd = _cwd(reader, ref) if ref.variant == "workspace" else None
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        row = data.get("row")
        if data.get("table") != "memento" or not isinstance(row, dict):
            reader.problem("malformed", "row is not a memento row")
            continue
        try:
            storage = orjson.loads(str(row.get("value") or ""))
        except orjson.JSONDecodeError as exc:
            reader.problem("malformed", f"{STORAGE_KEY}: not JSON: {exc}")
            continue
        if not isinstance(storage, dict):
            reader.problem("malformed", f"{STORAGE_KEY}: not an object")
            continue
        _storage(reader, storage, cwd)
    return reader.batch


def _cwd(reader: _Reader, ref: SourceRef) -> str | None:
    """The folder ``workspace.json`` names (VS Code's own file; a ``.code-workspace`` names none)."""
    if not ref.sidecar:
        return None
    try:
        data = orjson.loads(ref.sidecar)
    except orjson.JSONDecodeError:
        return None  # caught mid-rewrite: the next change reads it again
    return cursor._uri_path(data.get("folder")) if isinstance(data, dict) else None


def _storage(reader: _Reader, storage: dict, cwd: str | None) -> None:
    sessions = storage.get("list")
    if not isinstance(sessions, list):
        # agentsview treats a document without an explicit list ({} or {"list": null}) as one it does
        # not know: so do we.
        reader.drift(f"{STORAGE_KEY} without a session list")
        return
    current = storage.get("currentSessionId")
    seen: set[str] = set()
    for position, session in enumerate(sessions):
        sid = session.get("sessionId") if isinstance(session, dict) else None
        if not isinstance(sid, str) or not sid.strip():
            reader.problem("malformed", f"list[{position}] is not a session with a sessionId")
            continue
        sid = sid.strip()
        if sid in seen:
            reader.problem("malformed", f"session {sid} listed twice")
            continue
        seen.add(sid)
        messages = session.get("messages")
        if messages is None or messages == []:
            continue  # a stub: its conversation is in the encrypted store (see the module docstring)
        if not isinstance(messages, list):
            reader.problem("malformed", f"session {sid}: messages is not an array")
            continue
        _session(reader, sid, session, messages, cwd, current)


def _session(reader: _Reader, sid: str, session: dict, messages: list, cwd: str | None, current: Any) -> None:
    patch = SessionPatch(sid, cwd=cwd, model=_text(session.get("model")))
    patch.started_at = _time(session.get("createdAt"))
    patch.updated_at = _time(session.get("updatedAt"))
    events = []
    for position, message in enumerate(messages):
        event = _message(reader, sid, position, message, patch.model)
        if event is not None:
            events.append(event)
    if not events:
        return  # messages with no text: nothing to show, as a stub
    patch.started_at = patch.started_at or next((e.ts for e in events if e.ts), None)
    patch.updated_at = patch.updated_at or next((e.ts for e in reversed(events) if e.ts), None)
    patch.model = patch.model or next((e.model for e in reversed(events) if e.model), None)
    patch.note(current=session.get("isCurrent") is True or sid == current)
    reader.batch.patch(patch)
    reader.batch.events.extend(events)


def _message(reader: _Reader, sid: str, position: int, message: Any, model: str | None) -> Event | None:
    if not isinstance(message, dict):
        reader.problem("malformed", f"session {sid}: messages[{position}] is not an object")
        return None
    role = message.get("role")
    role = role.strip().lower() if isinstance(role, str) else role
    if role not in ROLES:
        reader.drift(f"message role={message.get('role')!r}")
        return None
    text = _text(message.get("content"))
    if not text and role == "assistant" and message.get("agentTaskContent") is not None:
        text = _text(_task_text(reader, message["agentTaskContent"]))
    if not text:
        return None  # an empty turn (a prompt cleared, an answer not yet written)
    turn = message.get("turnIndex")
    meta = {"turn": turn} if isinstance(turn, int) and not isinstance(turn, bool) and 0 <= turn < 2**31 else None
    return Event(sid, str(position), role, "text", text, ts=_time(message.get("timestamp")),
                 model=_text(message.get("model")) or model, meta=meta)  # role: one of ROLES


def _task_text(reader: _Reader, task: Any) -> str:
    """An assistant's text kept in ``agentTaskContent``: text, a ``content``/``text``/``proposal`` field,
    or a plan's items (agentsview's ``traeAssistantFallback``)."""
    if isinstance(task, str):
        return task
    if not isinstance(task, dict):
        reader.drift("agentTaskContent neither text nor an object")
        return ""
    for key in _TASK_TEXT:
        if _text(task.get(key)):
            return task[key]
    items = task.get("guideline", {}).get("planItems") if isinstance(task.get("guideline"), dict) else None
    if isinstance(items, list):
        steps = [i["content"] for i in items if isinstance(i, dict) and isinstance(i.get("content"), str)]
        return "\n".join(steps).strip()
    if task:
        reader.drift(f"agentTaskContent with fields {sorted(task)[:6]}")
    return ""


def _time(value: Any) -> str | None:
    """Epoch milliseconds, epoch seconds (below 1e11, as agentsview reads them) or RFC 3339 text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return iso_ms(value * 1000 if 0 < value < 1e11 else value)
    return iso_text(value)


def _text(value: Any) -> str | None:
    """Text that says something (not blank), as the store wrote it; None for anything else."""
    return value if isinstance(value, str) and value.strip() else None
