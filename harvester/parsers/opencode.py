"""opencode, its forks (Kilo CLI, MiMoCode, iCodeMate) and ZCode: one SQLite database, or the older ``storage/`` tree.

Format facts and their sources: ``fixtures/opencode/SOURCE.md``, ``fixtures/kilo/SOURCE.md``,
``fixtures/zcode/SOURCE.md``, ``fixtures/mimocode/SOURCE.md`` and ``fixtures/icodemate/SOURCE.md``. In short:

- Since opencode 1.2 every session lives in ``$XDG_DATA_HOME/opencode/opencode.db`` (Kilo:
  ``.../kilo/kilo.db``; ``$OPENCODE_DB`` / ``$KILO_DB`` move it; other release channels write
  ``opencode-<channel>.db``). Tables read: ``session`` (cwd = ``directory``, ``parent_id`` for
  subagents, ``title``, ``version``), ``message`` and ``part`` (JSON in ``data``), ``project``
  (worktree). Messages and parts are rewritten in place while they stream, so every query takes the
  rows whose ``time_updated`` moved, and events are revised (``Batch.revise``), never duplicated.
- One event per part, its uid the part's own id (``prt_...``); a tool part gives a call (``prt_...``)
  and, once it finished, a result (``prt_...:result``). A message's error gives ``msg_...:error``.
  ``step-start`` and ``snapshot`` parts are bookkeeping (``BOOKKEEPING_PARTS``); anything else
  unknown is drift.
- Before 1.2: ``storage/session/<projectID>/<sessionID>.json`` with the session's messages in
  ``storage/message/<sessionID>/*.json`` and their parts in ``storage/part/<messageID>/*.json``
  (``harvester/parsers/opencode_storage.py``; joined by those folders, as opencode does, not by the ids the
  documents repeat inside). The JSON-to-SQLite migration (opencode 1.2 until it was
  dropped; Kilo still) copies them into the database with the file names as ids, so both layouts give
  the same uids: a migrated session is stored once, its database version winning.
- ZCode (Z.ai, closed source) keeps ``~/.zcode/cli/db/db.sqlite`` with opencode's ``session`` /
  ``message`` / ``part`` tables as far as its readers show (fewer columns known: ``ZCODE_QUERIES``), and
  parts either opencode-shaped or Anthropic-shaped (``thinking``, ``tool_use``, ``tool_result``).
- MiMoCode (closed source, as its one reader shows it) keeps opencode's tree with the session documents under
  ``storage/session_diff/<projectID>/`` (not ``storage/session/``), and opencode's tables in ``mimocode.db``;
  iCodeMate (a Kilo fork, closed source) the same, its database ``icodemate.db``.
- Text opencode writes on the user's behalf (``synthetic`` parts, command templates of subtasks)
  and the task a subagent gets from its parent are filed as ``system``, never as the user's words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from harvester.model import Batch, Event, Kind, Problem, ProblemKind, Role, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    describe_error,
    iso_ms,
    json_objects,
    render_call,
)
from harvester.parsers.opencode_parts import check_part
from harvester.parsers.opencode_storage import Rows, legacy_rows

# 2: 0.1's messages with inline parts are read (they were drift), and the trees Storage's first migration left.
VERSION = 2


# Parts with nothing for a transcript: a step's git snapshot hash. Skipped on purpose, not drift.
BOOKKEEPING_PARTS = frozenset({"step-start", "snapshot"})
# Tables never read: the event log and v2 projections repeat message/part; the rest is settings,
# accounts, todos, permissions, shares, workspaces, Kilo's agent board (its messages are tool calls).
TABLES_NOT_READ = frozenset({
    "event", "event_sequence", "session_message", "session_input", "session_context_epoch", "todo",
    "permission", "session_share", "workspace", "project_directory", "account", "account_state",
    "control_account", "credential", "data_migration", "migration", "kilo_board", "kilo_board_message",
})
_DEFAULT_TITLE = ("New session - ", "Child session - ")  # + ISO time: opencode's placeholder titles
_CALL_KEYS = ("command", "filePath", "pattern", "path", "url", "query", "description", "prompt", "file_path")


class _Reader:
    """One parse call: rows of one snapshot, turned into patches and time-ordered events."""

    def __init__(self) -> None:
        self.batch = Batch(revise=True)  # parts grow while they stream: the last version wins
        self.pending: list[tuple[tuple, Event]] = []
        self.titled: set[str] = set()  # sessions offered their first prompt's line in this batch
        self.line = 0
        self.fields_seen: set[str] = set()

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))

    def field_drift(self, detail: str) -> None:
        """Fields no opencode version was seen writing: one problem per kind of part and read."""
        if detail not in self.fields_seen:
            self.fields_seen.add(detail)
            self.problem("unknown_field", detail)

    def event(self, key: tuple, session: str, uid: str, role: Role, kind: Kind, text: str, **fields: Any) -> None:
        # Placed (Event.place) in the order this sort gives: a large database is read in pages, messages
        # before parts, so a message's error can reach the bank before the parts it follows.
        self.pending.append((key, Event(session, uid, role, kind, text, place=_place(key), **fields)))


def _place(key: tuple) -> str:
    """The sort key as text: the message's time (fixed width), its id, the part's id ("~" after every
    part: a message's own error) and the event's order within the part; a space sorts before any id."""
    when, *rest = key
    return " ".join([f"{int(when or 0):015d}", *(str(k) for k in rest)])


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Both harnesses, both layouts. Stateless: the queries bring what a row needs to be read alone
    (its message's role, the session's parent and first message), so no per-session state grows."""
    reader = _Reader()
    legacy = ref.variant == "legacy"
    sessions, messages, parts = legacy_rows(reader, records, ref.path) if legacy else _db_rows(reader, records)
    for line, row in sessions:
        reader.line = line
        _session(reader, row)
    # In time order (ids ascend with time), so the newest message speaks last and the first part first.
    for line, row in sorted(messages, key=lambda r: (r[1].get("time_created") or 0, str(r[1].get("id")))):
        reader.line = line
        _message(reader, row)
    shared: dict[tuple[str, str], int] = {}  # (session, part id) -> parts read with that id
    for line, row in sorted(parts, key=lambda r: (r[1].get("message_time") or 0, str(r[1].get("message_id")),
                                                  str(r[1].get("id")))):
        reader.line = line
        if isinstance(row.get("session_id"), str) and isinstance(row.get("id"), str):
            # Two parts with one id (a copied storage/ file; the database's key forbids it): both are
            # kept, the later ones (in time order, which a re-read repeats) as <id>#2, <id>#3...
            n = shared[row["session_id"], row["id"]] = shared.get((row["session_id"], row["id"]), 0) + 1
            row = row if n == 1 else {**row, "uid": f"{row['id']}#{n}"}
        _part(reader, row)
    reader.pending.sort(key=lambda item: item[0])
    reader.batch.events.extend(event for _, event in reader.pending)
    return reader.batch


def _db_rows(reader: _Reader, records: Iterable[Record]) -> Rows:
    sessions, messages, parts = [], [], []
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict):
            reader.problem("malformed", "row is not an object")
            continue
        if table == "session":
            sessions.append((record.line, row))
            continue
        decoded = _decoded(reader, row, "data")
        if decoded is None:
            continue
        if table == "message":
            messages.append((record.line, {**row, "data": decoded, "is_last": bool(row.get("is_last"))}))
        elif table == "part":
            message = _decoded(reader, row, "message") if row.get("message") is not None else None
            parts.append((record.line, {**row, "data": decoded, "message": message}))
        else:
            reader.problem("unknown_type", f"table={table!r}")
    return sessions, messages, parts


def _decoded(reader: _Reader, row: dict, column: str) -> dict | None:
    value = row.get(column)
    try:
        data = orjson.loads(value) if isinstance(value, str) else value
    except orjson.JSONDecodeError as exc:
        reader.problem("malformed", f"{row.get('id')}: {column} is not JSON: {exc}")
        return None
    if not isinstance(data, dict):
        reader.problem("malformed", f"{row.get('id')}: {column} is not an object")
        return None
    return data


# -- rows ----------------------------------------------------------------------------------
def _session(reader: _Reader, row: dict) -> None:
    sid = row.get("id")
    if not isinstance(sid, str):
        reader.problem("malformed", "session without an id")
        return
    patch = reader.batch.session(sid)
    patch.cwd = row.get("directory") or None
    patch.agent_version = row.get("version") or None
    patch.started_at = iso_ms(row.get("time_created"))
    patch.updated_at = iso_ms(row.get("time_updated"))
    if row.get("parent_id"):
        patch.parent_native_id, patch.parent_kind = row["parent_id"], "subagent"
    title = row.get("title")
    if isinstance(title, str) and title.strip() and not title.startswith(_DEFAULT_TITLE):
        # Generated by the small model, set by the user, or "<task> (@agent subagent)": opencode does
        # not record which, and all beat a first prompt.
        patch.offer_title(title.strip(), "ai")
    facts: dict[str, Any] = {}
    if row.get("slug"):
        facts["slug"] = row["slug"]
    if row.get("worktree") and row["worktree"] not in ("/", row.get("directory")):
        facts["worktree"] = row["worktree"]
    if row.get("time_archived"):
        facts["archived"] = iso_ms(row["time_archived"])
    if facts:
        patch.note(**facts)


def _message(reader: _Reader, row: dict) -> None:
    data, sid, mid = row["data"], row.get("session_id"), row.get("id")
    role = data.get("role")
    if not isinstance(sid, str) or not isinstance(mid, str):
        reader.problem("malformed", "message without its ids")
        return
    if role not in ("user", "assistant"):
        reader.problem("unknown_type", f"message role={role!r}")
        return
    patch = reader.batch.session(sid)
    if role == "assistant" and data.get("modelID"):
        patch.model = str(data["modelID"])
    error = data.get("error")
    if role == "assistant" and isinstance(error, dict):
        name = error.get("name") or "error"
        detail = (error.get("data") or {}).get("message") if isinstance(error.get("data"), dict) else None
        time = data.get("time") if isinstance(data.get("time"), dict) else {}
        reader.event((row.get("time_created") or 0, mid, "~"), sid, f"{mid}:error", "system", "meta",
                     f"{name}: {detail}" if detail else str(name), ts=iso_ms(time.get("completed") or time.get("created")),
                     meta={"error": name})
    if row.get("is_last"):
        patch.note(last_turn=_turn_state(data), **({"agent": data["agent"]} if data.get("agent") else {}))


def _turn_state(data: dict) -> str:
    """Whether the session's last turn finished: a user message waits for an answer; an assistant
    message that stopped for tool calls is followed by another one."""
    if data.get("role") == "user":
        return "open"
    error = data.get("error")
    if isinstance(error, dict):
        return "aborted" if error.get("name") == "MessageAbortedError" else "failed"
    time = data.get("time") if isinstance(data.get("time"), dict) else {}
    return "complete" if time.get("completed") and data.get("finish") != "tool-calls" else "open"


class _Part:
    """A part row and what it needs from its message and session."""

    def __init__(self, reader: _Reader, row: dict) -> None:
        self.reader = reader
        self.data: dict = row["data"]
        self.id: str = row["id"]
        self.uid: str = row.get("uid") or self.id
        self.session: str = row["session_id"]
        self.message_id: str = row.get("message_id") or ""
        self.message: dict = row.get("message") or {}
        self.message_time = row.get("message_time") or 0
        self.role = self.message.get("role")
        self.model = self.message.get("modelID") if self.role == "assistant" else None
        self.first = row.get("first_message") == self.message_id
        self.child = bool(row.get("session_parent"))

    def ts(self, ms: Any = None) -> str | None:
        time = self.message.get("time") if isinstance(self.message.get("time"), dict) else {}
        return iso_ms(ms) or iso_ms(time.get("created"))

    def emit(self, role: Role, kind: Kind, text: str, suffix: str = "", order: int = 0, **fields: Any) -> None:
        uid = f"{self.uid}:{suffix}" if suffix else self.uid
        self.reader.event((self.message_time, self.message_id, self.id, order), self.session, uid, role, kind,
                          text, **fields)


def _part(reader: _Reader, row: dict) -> None:
    if not isinstance(row.get("id"), str) or not isinstance(row.get("session_id"), str):
        reader.problem("malformed", "part without its ids")
        return
    if not row.get("message"):
        reader.problem("malformed", f"{row['id']}: part of a message that is not there")
        return
    part = _Part(reader, row)
    check_part(part.data, reader.field_drift)
    ptype = part.data.get("type")
    handler = PART_HANDLERS.get(ptype) if isinstance(ptype, str) else None
    if handler is None:
        if ptype not in BOOKKEEPING_PARTS:
            reader.problem("unknown_type", f"part type={ptype!r}")
        return
    try:
        handler(part)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        reader.problem("malformed", f"{ptype} part of unexpected shape: {describe_error(exc)}")


# -- parts ---------------------------------------------------------------------------------
def _text(part: _Part) -> None:
    data = part.data
    text = data.get("text") or ""
    if not text.strip():
        return  # a text part just opened (it is revised once it has text), or an empty one
    if (data.get("metadata") or {}).get("kilocode.lifecycle") == "transient":
        return  # Kilo's progress line ("⠋ Initializing snapshot…"), removed once the snapshot is taken
    start = (data.get("time") or {}).get("start")
    if part.role == "assistant":
        if data.get("synthetic") or data.get("ignored"):  # Kilo's own notices (a length warning, an import)
            part.emit("system", "text", text, ts=part.ts(start), meta={"injected": True})
        elif part.message.get("summary") is True:  # the summary a compaction wrote
            part.emit("system", "compaction", text, ts=part.ts(start), meta={"summary": True})
        else:
            part.emit("assistant", "text", text, ts=part.ts(start), model=part.model)
    elif data.get("synthetic"):
        meta = {"injected": True, **({"compaction_continue": True}
                                     if (data.get("metadata") or {}).get("compaction_continue") else {})}
        part.emit("system", "text", text, ts=part.ts(start), meta=meta)
    elif part.child:
        # A subagent session is prompted by its parent agent (the task, and a resumed task_id's next
        # one): not the human's words.
        part.emit("system", "text", text, ts=part.ts(start), meta={"from_agent": True})
    else:
        part.emit("user", "text", text, ts=part.ts(start), meta={"ignored": True} if data.get("ignored") else None)
        if part.first and part.session not in part.reader.titled:
            part.reader.titled.add(part.session)
            first = text.strip().splitlines()[0]
            part.reader.batch.session(part.session).offer_title(
                first if len(first) <= 80 else first[:79] + "…", "first-prompt")


def _reasoning(part: _Part) -> None:
    text = part.data.get("text") or ""
    if text.strip():  # encrypted-only reasoning has nothing readable to keep
        part.emit("assistant", "thinking", text, ts=part.ts((part.data.get("time") or {}).get("start")),
                  model=part.model)


def _tool(part: _Part) -> None:
    data = part.data
    state = data.get("state") if isinstance(data.get("state"), dict) else {}
    status = state.get("status")
    name, call_id, tool_input = data.get("tool"), data.get("callID"), state.get("input")
    time = state.get("time") if isinstance(state.get("time"), dict) else {}
    meta = {k: v for k, v in (("status", status), ("title", state.get("title"))) if v}
    part.emit("assistant", "tool_call", render_call(name, tool_input, _CALL_KEYS), ts=part.ts(time.get("start")),
              tool_name=name, tool_input=tool_input, tool_call_id=call_id, model=part.model, meta=meta)
    if status in ("pending", "running"):
        return  # the result comes with a later version of this part
    if status not in ("completed", "error"):
        part.reader.problem("unknown_type", f"tool state status={status!r}")
        return
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    result_meta = {k: v for k, v in (("compacted", bool(time.get("compacted"))),
                                     ("subagent_session", metadata.get("sessionId"))) if v}
    failed = status == "error"
    output = state.get("error") if failed else state.get("output")
    part.emit("tool", "tool_result", output if isinstance(output, str) else orjson.dumps(output).decode(),
              suffix="result", order=1, ts=part.ts(time.get("end")), tool_name=name, tool_call_id=call_id,
              is_error=failed, meta=result_meta or None)


def _file(part: _Part) -> None:
    data = part.data
    url = data.get("url") or ""
    name = data.get("filename") or ("" if url.startswith("data:") else url)  # never the inlined bytes
    role: Role = "assistant" if part.role == "assistant" else "user"
    part.emit(role, "text", f"[file: {name or 'attachment'} ({data.get('mime') or '?'})]", ts=part.ts(),
              meta={"part": "file"})


def _agent(part: _Part) -> None:
    part.emit("user", "meta", f"@{part.data.get('name')}", ts=part.ts(), meta={"part": "agent"})


def _subtask(part: _Part) -> None:
    # A command marked subtask: its template (not the human's words) becomes a subagent's prompt.
    data = part.data
    part.emit("system", "text", f"subtask for @{data.get('agent')}: {data.get('description') or ''}\n"
              f"{data.get('prompt') or ''}".strip(), ts=part.ts(),
              meta={"injected": True, "part": "subtask", "agent": data.get("agent"), "command": data.get("command")})


def _compaction(part: _Part) -> None:
    data = part.data
    how = "auto" if data.get("auto") else "manual"
    text = f"conversation compacted ({how}{', overflow' if data.get('overflow') else ''})"
    part.emit("system", "compaction", text, ts=part.ts(), meta={"auto": bool(data.get("auto")),
                                                                "overflow": bool(data.get("overflow"))})


def _retry(part: _Part) -> None:
    data = part.data
    error = data.get("error") if isinstance(data.get("error"), dict) else {}
    detail = (error.get("data") or {}).get("message") or error.get("name") or "error"
    part.emit("system", "meta", f"retry {data.get('attempt')}: {detail}",
              ts=part.ts((data.get("time") or {}).get("created")), meta={"part": "retry"})


def _patch(part: _Part) -> None:
    files = [str(f) for f in part.data.get("files") or []]
    part.emit("system", "meta", "files changed: " + ", ".join(files), ts=part.ts(),
              meta={"part": "patch", "hash": part.data.get("hash")})


def _source_url(part: _Part) -> None:
    """A web source a 0.1 answer cited (the AI SDK's ``source-url`` part)."""
    data = part.data
    title = data.get("title")
    part.emit("assistant", "meta", f"source: {title + ' ' if title else ''}{data.get('url') or ''}".strip(),
              ts=part.ts(), model=part.model, meta={"part": "source-url"})


def _step_finish(part: _Part) -> None:
    """The usage of one model call (opencode writes it on the part that ends the step)."""
    data = part.data
    tokens = data.get("tokens") if isinstance(data.get("tokens"), dict) else {}
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    cost = data.get("cost")
    usage = Usage(input=int(tokens.get("input") or 0), output=int(tokens.get("output") or 0),
                  reasoning=int(tokens.get("reasoning") or 0), cache_read=int(cache.get("read") or 0),
                  cache_write=int(cache.get("write") or 0),
                  cost=cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None)
    message_time = part.message.get("time") if isinstance(part.message.get("time"), dict) else {}
    end = (data.get("time") or {}).get("end") or message_time.get("completed")  # opencode: no time of its own
    part.emit("assistant", "meta", f"step finished: {data.get('reason')}", ts=part.ts(end), model=part.model,
              usage=usage, meta={"part": "step-finish", "cost": data.get("cost")})


def _thinking(part: _Part) -> None:
    """ZCode's reasoning part, Anthropic-shaped (``{type: thinking, thinking}``; agentsview reads it)."""
    text = part.data.get("thinking") or part.data.get("text") or ""
    if text.strip():
        part.emit("assistant", "thinking", text, ts=part.ts(), model=part.model)


def _tool_use(part: _Part) -> None:
    """ZCode's tool call part, Anthropic-shaped (``{type: tool_use, id, name, input}``)."""
    data = part.data
    name, call_id, tool_input = data.get("name"), data.get("id"), data.get("input")
    part.emit("assistant", "tool_call", render_call(name, tool_input, _CALL_KEYS), ts=part.ts(), tool_name=name,
              tool_input=tool_input, tool_call_id=call_id, model=part.model)


def _tool_result(part: _Part) -> None:
    """ZCode's tool result part (``{type: tool_result, tool_use_id, content, is_error?}``)."""
    data = part.data
    output = data.get("content")
    part.emit("tool", "tool_result", output if isinstance(output, str) else orjson.dumps(output).decode(),
              ts=part.ts(), tool_call_id=data.get("tool_use_id"), is_error=bool(data.get("is_error")))


PART_HANDLERS: dict[str, Callable[[_Part], None]] = {
    "text": _text,
    "reasoning": _reasoning,
    "tool": _tool,
    "file": _file,
    "agent": _agent,
    "subtask": _subtask,
    "compaction": _compaction,
    "retry": _retry,
    "patch": _patch,
    "step-finish": _step_finish,
    "source-url": _source_url,
    "thinking": _thinking,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


# -- helpers -------------------------------------------------------------------------------
