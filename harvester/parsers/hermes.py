"""Hermes Agent (NousResearch ``hermes-agent``): one SQLite store, ``$HERMES_HOME/state.db``.

Format facts and their sources: ``fixtures/hermes/SOURCE.md``. In short:

- ``$HERMES_HOME`` when set, else ``~/.hermes`` (``%LOCALAPPDATA%\\hermes`` on Windows); each profile
  keeps a database of its own in ``profiles/<name>/state.db`` (``hermes -p <name>``).
- WAL mode, one writer and many readers; columns are added declaratively on every writable open, so
  the queries select ``*`` and the parser reads the columns it knows (older stores lack some).
- ``sessions``: one row per session: ``id`` (``YYYYMMDD_HHMMSS_<hex6>``), ``source`` (cli, telegram,
  tool, ...), ``model``, ``model_config`` (JSON with the lineage markers ``_delegate_from``,
  ``_branched_from``, ``_reset_from``), ``parent_session_id``, ``started_at`` / ``ended_at`` (epoch
  seconds) and ``end_reason``, ``cwd``, ``git_branch``, ``git_repo_root``, ``title``. A resumed session
  gets its ``ended_at`` cleared.
- ``messages``: OpenAI-shaped rows, ``id`` AUTOINCREMENT: ``role`` (user, assistant, tool, system),
  ``content``, ``tool_calls`` (JSON), ``tool_call_id``, ``tool_name``, ``reasoning`` /
  ``reasoning_content``, ``finish_reason``, ``timestamp``. Compaction in place sets ``active = 0,
  compacted = 1`` on the old rows and inserts the compacted set as new rows (a summary message and
  copies of the turns kept): the copies are not read again (``kept_copy``); the older compaction
  ends the session (``end_reason = 'compression'``) and continues it in a child session.
- Watermarks: ``messages.id`` (never reused); for sessions, the newest of their start, end and last
  message, re-read a minute back so a title written just after a turn is seen.
- Before ``state.db`` held every message, the gateway kept each session's transcript as
  ``sessions/<id>.jsonl`` (a ``session_meta`` line: model, platform, tools; then the OpenAI-shaped messages,
  each with an ISO ``timestamp``), and the CLI a whole-file snapshot ``sessions/session_<id>.json``
  (``model``, ``platform``, ``session_start``, ``last_updated``, ``messages``). Both are read where no
  ``state.db`` sits beside them (builds that had one wrote the transcript too: the database is read), the
  snapshot only where no transcript of the same id exists.
- Current builds write ``sessions/<id>.jsonl`` beside ``state.db`` only for what the store refused (replaced or
  damaged under a live process: ``divert_session_transcript_jsonl``): bare messages, no ``session_meta`` line,
  none of them in the database. Those are read (``diverted``, keyed ``d:<line>`` apart from the rows'
  ``m:<id>``); a file that opens with ``session_meta`` is a gateway transcript whose messages the database
  holds: not read again.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, ProblemKind
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    iso_ms,
    iso_text,
    json_objects,
    render_call,
)

NAME = "hermes"

# The pip/uv install's console scripts (cmdline: <venv python> <venv>/bin/hermes ...).
PROCESSES = ("hermes", "hermes-agent", "hermes-acp")

# A compaction's summary message begins so (agent/context_compressor.py SUMMARY_PREFIX,
# LEGACY_SUMMARY_PREFIX); the first words are enough to know it.
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")
ROLES = frozenset({"user", "assistant", "tool", "system"})
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "goal", "task")
# Session facts kept in the session's meta (when set).
_NOTED = ("source", "end_reason", "git_repo_root", "profile_name", "title_source", "archived", "chat_type",
          "display_name")

# Newest of a session's start, end and last message: it moves whenever Hermes writes the session.
_ACTIVITY = ("MAX(s.started_at, COALESCE(s.ended_at, 0), COALESCE((SELECT MAX(m.timestamp) FROM messages m "
             "WHERE m.session_id = s.id), 0))")
QUERIES = (
    SqliteQuery(
        "session",
        # system_prompt first as NULL: a row's value by name is its first column of that name (the
        # prompt is kilobytes, the same every session, and not part of the transcript).
        # A delegated run records no cwd of its own (delegate_tool): it works in its parent's.
        f"SELECT NULL AS system_prompt, s.*, {_ACTIVITY} AS activity, "
        "(SELECT p.cwd FROM sessions p WHERE p.id = s.parent_session_id) AS parent_cwd FROM sessions s "
        f"WHERE {_ACTIVITY} >= :since - 60 ORDER BY activity, s.id",
        "activity", ordered=True,
    ),
    SqliteQuery(
        "message",
        "SELECT m.*, "
        # The first prompt of its session names it when Hermes has no title yet.
        "(m.role = 'user' AND NOT EXISTS (SELECT 1 FROM messages p WHERE p.session_id = m.session_id "
        "AND p.id < m.id AND p.role = 'user')) AS first_prompt, "
        # A row compaction re-inserted: the same message is there before, marked compacted.
        "EXISTS (SELECT 1 FROM messages o WHERE o.session_id = m.session_id AND o.id < m.id "
        "AND o.compacted = 1 AND o.role = m.role AND o.content IS m.content AND o.tool_calls IS m.tool_calls "
        "AND o.tool_call_id IS m.tool_call_id) AS kept_copy, "
        # In a delegated subagent run the "user" is the parent agent handing it its task.
        "(SELECT json_extract(s.model_config, '$._delegate_from') IS NOT NULL FROM sessions s "
        "WHERE s.id = m.session_id AND json_valid(s.model_config)) AS delegated "
        "FROM messages m WHERE m.id >= :since ORDER BY m.id",
        "id", ordered=True,
    ),
)



def _db_beside(path: PurePath) -> PurePath:
    return path.parent.parent / "state.db"


def _db_or_transcript_beside(path: PurePath) -> tuple[PurePath, ...]:
    return _db_beside(path), path.with_name(path.name.removeprefix("session_").removesuffix(".json") + ".jsonl")


SOURCES = (
    SourceSpec("state.db", "sqlite", "db", watch=False, queries=QUERIES),
    SourceSpec("profiles/*/state.db", "sqlite", "db", watch=False, queries=QUERIES),
    SourceSpec("sessions/*.jsonl", "jsonl", "transcript", shadowed_by=_db_beside),
    SourceSpec("profiles/*/sessions/*.jsonl", "jsonl", "transcript", shadowed_by=_db_beside),
    # The same files where a state.db sits beside them: what a current build diverted there (below).
    SourceSpec("sessions/*.jsonl", "jsonl", "diverted"),
    SourceSpec("profiles/*/sessions/*.jsonl", "jsonl", "diverted"),
    SourceSpec("sessions/session_*.json", "json", "snapshot", shadowed_by=_db_or_transcript_beside),
    SourceSpec("profiles/*/sessions/session_*.json", "json", "snapshot", shadowed_by=_db_or_transcript_beside),
)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    # hermes_constants._hermes_home_from_env: $HERMES_HOME verbatim when non-empty, else the platform default.
    override = (env.get("HERMES_HOME") or "").strip()
    if override:
        return [Path(override).expanduser()]
    if platform == "win32":
        local = (env.get("LOCALAPPDATA") or "").strip()
        return [(Path(local) if local else home / "AppData" / "Local") / "hermes"]
    return [home / ".hermes"]


class _Reader:
    def __init__(self) -> None:
        self.batch = Batch()  # rows are appended; a message row is never rewritten once its turn is stored
        self.line = 0
        self.turns: dict[str, str] = {}  # session -> how its last message read here leaves the turn

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))

    def emit(self, sid: str, uid: str, ts: str | None, **fields: Any) -> None:
        self.batch.events.append(Event(sid, uid, ts=ts, **fields))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Stateless: each row brings what it needs (the queries say whether a prompt is the first, a row a copy)."""
    if ref is not None and ref.variant in ("transcript", "snapshot", "diverted"):
        return _parse_file(ref, records, state)
    reader = _Reader()
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict):
            reader.problem("malformed", "row is not an object")
        elif table == "session":
            _session(reader, row)
        elif table == "message":
            _message(reader, row)
        else:
            reader.problem("unknown_type", f"table={table!r}")
    for sid, turn in reader.turns.items():
        reader.batch.session(sid).note(last_turn=turn)
    return reader.batch


def _session(reader: _Reader, row: dict) -> None:
    sid = row.get("id")
    if not isinstance(sid, str) or not sid:
        reader.problem("malformed", "session without an id")
        return
    patch = reader.batch.session(sid)
    patch.cwd = _text(row.get("cwd")) or _text(row.get("parent_cwd"))
    patch.started_at = _iso(row.get("started_at"))
    patch.updated_at = _iso(row.get("activity"))
    patch.model = _text(row.get("model"))
    title = _text(row.get("title"))
    if title:
        # Hermes titles a session itself (title_generator); /title sets the user's own.
        patch.offer_title(title, "custom" if row.get("title_source") in ("user", "manual") else "ai")
    config = _json(row.get("model_config"))
    config = config if isinstance(config, dict) else {}
    parent = _text(row.get("parent_session_id")) or _text(config.get("_delegate_from"))
    if parent:
        patch.parent_native_id = parent
        # Delegated subagent runs carry _delegate_from; branches, resets and compaction continuations
        # are the same conversation going on in a new session.
        patch.parent_kind = "subagent" if config.get("_delegate_from") else "fork"
        lineage = next((k[1:-5] for k in ("_branched_from", "_reset_from") if config.get(k)), None)
        patch.note(lineage=lineage or ("delegate" if config.get("_delegate_from") else "continued"))
    if row.get("git_branch"):
        patch.git = GitFacts(branch=str(row["git_branch"]))
    if row.get("ended_at") is not None:
        patch.state = "ended"  # end_session(): first reason wins; a resume clears it (reopened by new rows)
        patch.note(ended_at=_iso(row.get("ended_at")))
    facts = {k: row.get(k) for k in _NOTED if row.get(k) not in (None, "", 0)}
    if facts:
        patch.note(**facts)


def _message(reader: _Reader, row: dict) -> None:
    sid, mid, role = row.get("session_id"), row.get("id"), row.get("role")
    if not isinstance(sid, str) or not isinstance(mid, int):
        reader.problem("malformed", "message without a session or an id")
        return
    if role not in ROLES:
        reader.problem("unknown_type", f"message role={role!r}")
        return
    if row.get("kept_copy"):
        return  # compaction re-inserted a message already read
    uid, ts = f"{'d' if row.get('diverted') else 'm'}:{mid}", _iso(row.get("timestamp"))
    content = _content(row.get("content"))
    meta: dict[str, Any] = {}
    if not row.get("active", 1) and not row.get("compacted"):
        meta["rewound"] = True  # active=0, compacted=0: taken back by /undo or a rewind
    if row.get("display_kind") == "hidden":
        meta["hidden"] = True  # scaffolding the UI does not show
    if role == "user" and content.startswith(SUMMARY_PREFIXES):
        reader.emit(sid, uid, ts, role="system", kind="compaction", text=content, meta=meta or None)
        return
    if role == "user" and row.get("delegated"):
        reader.emit(sid, uid, ts, role="system", kind="meta", text=content, meta={"from_agent": "parent", **meta})
        reader.turns[sid] = "open"
    elif role == "user" and not meta.get("hidden"):
        if row.get("first_prompt") and content.strip():
            reader.batch.session(sid).offer_title(_first_line(content), "first-prompt")
        reader.emit(sid, uid, ts, role="user", kind="text", text=content, meta=meta or None)
        reader.turns[sid] = "open"
    elif role in ("user", "system"):
        reader.emit(sid, uid, ts, role="system", kind="meta", text=content, meta={"role": role, **meta})
    elif role == "assistant":
        _assistant(reader, row, sid, uid, ts, content, meta)
    else:
        _tool_result(reader, row, sid, ts, content, meta)


def _assistant(reader: _Reader, row: dict, sid: str, uid: str, ts: str | None, content: str,
               meta: dict[str, Any]) -> None:
    thinking = _text(row.get("reasoning")) or _text(row.get("reasoning_content"))
    if thinking:
        reader.emit(sid, f"{uid}:think", ts, role="assistant", kind="thinking", text=thinking, meta=meta or None)
    calls = _json(row.get("tool_calls"))
    calls = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    if content.strip():
        meta = {**meta, "finish_reason": row["finish_reason"]} if row.get("finish_reason") else meta
        reader.emit(sid, uid, ts, role="assistant", kind="text", text=content, meta=meta or None)
    for n, call in enumerate(calls):
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = str(function.get("name") or call.get("name") or "?")
        arguments = function.get("arguments", call.get("arguments"))
        tool_input = _json(arguments) if isinstance(arguments, str) else arguments
        if isinstance(arguments, str) and tool_input is None and arguments:
            tool_input = arguments  # not JSON: kept as the text the model wrote
        call_id = _text(call.get("id")) or f"{uid}:{n}"
        reader.emit(sid, f"call:{call_id}", ts, role="assistant", kind="tool_call",
                    text=render_call(name, tool_input, _CALL_KEYS), tool_name=name, tool_input=tool_input,
                    tool_call_id=call_id, meta=meta or None)
    # A reply without calls ends the turn (finish_reason stop, length...); calls leave it waiting on results.
    reader.turns[sid] = "open" if calls else "complete"


def _tool_result(reader: _Reader, row: dict, sid: str, ts: str | None, content: str, meta: dict[str, Any]) -> None:
    call_id = _text(row.get("tool_call_id"))
    uid = f"result:{call_id}" if call_id else f"{'d' if row.get('diverted') else 'm'}:{row['id']}"
    reader.emit(sid, uid, ts, role="tool", kind="tool_result", text=content, tool_name=_text(row.get("tool_name")),
                tool_call_id=call_id, is_error=_is_error(content), meta=meta or None)
    reader.turns[sid] = "open"


def _is_error(content: str) -> bool:
    """Hermes's tools answer JSON; a failed one {"error": "..."} or {"success": false, ...} (tools/*.py)."""
    if not content.startswith("{"):
        return False
    data = _json(content)
    return isinstance(data, dict) and (bool(data.get("error")) or data.get("success") is False)


def _content(value: Any) -> str:
    """Text, or (multimodal turns) a JSON list of OpenAI content parts."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return str(value)
    if value.startswith("[{"):
        parts = _json(value)
        if isinstance(parts, list) and all(isinstance(p, dict) and "type" in p for p in parts):
            return "\n".join(str(p.get("text")) if p.get("type") == "text" else f"[{p.get('type')}]" for p in parts)
    return value


def _json(value: Any) -> Any:
    if isinstance(value, str) and value:
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(value)
    return None


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _iso(value: Any) -> str | None:
    return iso_ms(value * 1000) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0]
    return first if len(first) <= 80 else first[:79] + "…"


def _parse_file(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """A gateway transcript (one message a line) or a CLI snapshot (one document): each message becomes the
    row the database would hold, keyed by its place (``m:<line>``, ``m:<index>``), and is read as one."""
    reader = _Reader()
    sid = ref.path.name.removeprefix("session_").removesuffix(".jsonl").removesuffix(".json")
    prompted = bool(state.get("prompted"))
    diverted = ref.variant == "diverted"
    copy = bool(state.get("gateway_copy"))  # a diverted-place file that is the gateway's copy of the rows
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        if diverted and (copy or (record.line == 1 and data.get("role") == "session_meta")):
            copy = True
            continue
        if ref.variant == "snapshot":
            _snapshot_session(reader, sid, data)
            messages = [(i + 1, m) for i, m in enumerate(data.get("messages") or [])]
        else:
            messages = [(record.line, data)]
        for place, message in messages:
            if not isinstance(message, dict):
                reader.problem("malformed", "message is not an object")
                continue
            if message.get("role") == "session_meta":
                _meta_line(reader, sid, message)
                continue
            row = _row_of(sid, place, message, first_prompt=not prompted and message.get("role") == "user")
            row["diverted"] = diverted
            prompted = prompted or message.get("role") == "user"
            _message(reader, row)
    for turn_sid, turn in reader.turns.items():
        reader.batch.session(turn_sid).note(last_turn=turn)
    reader.batch.state = ({"prompted": True} if prompted and ref.variant != "snapshot" else {}) | (
        {"gateway_copy": True} if copy else {})
    return reader.batch


def _meta_line(reader: _Reader, sid: str, meta: dict) -> None:
    patch = reader.batch.session(sid)
    patch.model = _text(meta.get("model")) or patch.model
    patch.started_at = patch.started_at or iso_text(meta.get("timestamp"))
    if _text(meta.get("platform")):
        patch.note(source=meta["platform"])


def _snapshot_session(reader: _Reader, sid: str, doc: dict) -> None:
    patch = reader.batch.session(sid)
    patch.model = _text(doc.get("model"))
    patch.started_at = iso_text(doc.get("session_start"))
    patch.updated_at = iso_text(doc.get("last_updated"))
    if _text(doc.get("platform")):
        patch.note(source=doc["platform"])


def _row_of(sid: str, place: int, message: dict, first_prompt: bool) -> dict[str, Any]:
    """A transcript message as the ``messages`` row ``_message`` reads (content parts and tool calls as the
    JSON text the database keeps; the ISO time as epoch seconds)."""
    content, calls = message.get("content"), message.get("tool_calls")
    when = iso_text(message.get("timestamp"))
    seconds = datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() if when else None
    return {"session_id": sid, "id": place, "role": message.get("role"),
            "content": orjson.dumps(content).decode() if isinstance(content, list) else content,
            "tool_calls": orjson.dumps(calls).decode() if isinstance(calls, list) else None,
            "tool_call_id": message.get("tool_call_id"), "tool_name": message.get("tool_name") or message.get("name"),
            "reasoning": message.get("reasoning") if isinstance(message.get("reasoning"), str) else None,
            "reasoning_content": message.get("reasoning_content"), "finish_reason": message.get("finish_reason"),
            "timestamp": seconds, "first_prompt": first_prompt}
