"""OpenClaw: pi's JSONL tree format, in JSONL files (until 2026.7) and in per-agent SQLite (2026.8.1+).

Format facts and their sources: ``fixtures/pi/openclaw/SOURCE.md``. In short:

- The state dir (``OPENCLAW_STATE_DIR``, else ``~/.openclaw``; see :func:`roots`) holds ``agents/<agent>/``.
  The JSONL era wrote ``sessions/<sessionId>.jsonl`` (read by :func:`parsers.pi.parse`, variant
  ``openclaw``). Since 2026.8.1 ``agent/openclaw-agent.sqlite`` (WAL) keeps every transcript:
  ``transcript_events(session_id, seq, event_json | event_zstd + event_utf8_bytes)``, one pi entry per
  row (a row of 1 KiB or more may be stored zstd-compressed; the blob is selected as hex and decoded
  here). ``session_windows`` (one row per session id) and ``session_nodes`` (one per session key: the
  conversation, whose current session id changes on a daily/idle rollover) carry the metadata.
- Rows are read in rowid order (a rowid watermark: ``created_at`` is the entry's own time, old for
  imported history) and fed, session by session, to pi's parser, whose state is kept per session (the
  most recently active ones). Entry ids are the uids in both eras and the session id is the same, so a
  transcript ``openclaw doctor --fix`` imported from JSONL (it then moves the file to
  ``session-sqlite-import-archive/``) adds nothing the JSONL era already gave.
- Two entry types are OpenClaw's: ``reset`` (``/new``, ``/reset``: a fresh history window in the same
  session) becomes a compaction event; ``leaf`` (a branch navigation record) is no event, and an entry
  whose parent is a leaf record is re-parented to the leaf's target, so pi sees the branch.
- A session ends when its conversation moved on to another session id or was archived.
- Cold storage (``sessions/cold/<sha256>.jsonl.zst``) holds whole transcripts moved out of SQLite:
  a header record names the session, event records carry the rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch
from harvester.parsers import pi
from harvester.parsers.base import Record, SourceRef, SourceSpec, SqliteQuery, iso_ms, json_objects

NAME = pi.OPENCLAW_NAME
# Each command sets its process title: openclaw-gateway, openclaw-tui, openclaw-agent (a local run).
PROCESSES = (*pi.OPENCLAW_PROCESSES, "openclaw-agent")
DB, COLD = "openclaw-db", "openclaw-cold"
SESSIONS_KEPT = 16  # sessions whose pi state the database cursor keeps (the most recently written)
LEAVES_KEPT = 200  # leaf records remembered per session (they are written on branch navigation only)
MAX_EVENT_BYTES = 4 * 1024 * 1024  # OpenClaw's own bound on a stored (and a decompressed) row
NOT_SESSIONS = (".trajectory.jsonl", ".checkpoint.")  # sidecars beside the JSONL sessions


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """pi's OpenClaw roots, and a named profile's state dir (``--profile x`` / ``OPENCLAW_PROFILE``:
    ``~/.openclaw-x``) when no state dir is set explicitly."""
    found = pi.openclaw_roots(env, home)
    profile = (env.get("OPENCLAW_PROFILE") or "").strip()
    if profile and profile.lower() != "default" and not (env.get("OPENCLAW_STATE_DIR") or "").strip():
        base = Path(env["OPENCLAW_HOME"]) if Path(env.get("OPENCLAW_HOME") or "").is_absolute() else home
        found.insert(0, base / f".openclaw-{profile}" / "agents")
    return list(dict.fromkeys(found))


def _since(table: str) -> str:
    # Rows deleted at the top (a session deleted) would leave the watermark above every rowid: the
    # table is then read from the start (uids make that harmless) and the parser is told so.
    return f"(CASE WHEN :since > (SELECT coalesce(max(rowid), 0) FROM {table}) THEN 0 ELSE :since END)"


_WINDOW = (
    "SELECT w.rowid AS rid, max(w.updated_at, coalesce(n.updated_at, 0)) AS changed, w.session_id, "
    "w.session_key, w.previous_session_id, w.reason, w.created_at, w.ended_at, w.status, w.chat_type, "
    "w.channel, w.model, w.display_name, n.current_session_id, n.label, n.display_name AS node_name, "
    "n.archived_at, n.created_via, n.fork_source_session_id, p.current_session_id AS parent_session_id "
    "FROM session_windows w LEFT JOIN session_nodes n ON n.session_key = w.session_key "
    "LEFT JOIN session_nodes p ON p.session_key = coalesce(w.spawned_by, w.parent_session_key, "
    "n.spawned_by, n.parent_session_key) AND p.session_key != w.session_key "
)
# Agent schemas before 23 (2026.8.x) have no compressed columns: a natural join with a row of NULLs
# names them either way (a column the table has is the table's; one it lacks is the NULL).
_COMPRESSED = "NATURAL LEFT JOIN (SELECT NULL AS event_zstd, NULL AS event_utf8_bytes)"
QUERIES = (
    SqliteQuery(
        "event",
        f"SELECT e.rowid AS rid, {_since('transcript_events')} AS since, e.session_id, e.seq, e.event_json, "
        "CASE WHEN event_zstd IS NULL THEN NULL ELSE hex(event_zstd) END AS event_zstd, event_utf8_bytes "
        f"FROM transcript_events e {_COMPRESSED} WHERE e.rowid >= {_since('transcript_events')} ORDER BY e.rowid",
        "rid", ordered=True,
        optional=True,  # the agent database of 2026.7 and before holds no transcripts
    ),
    # New windows (imported ones carry old times), then windows or their conversation changed since.
    SqliteQuery("window", f"{_WINDOW} WHERE w.rowid >= {_since('session_windows')} ORDER BY w.rowid", "rid",
                optional=True, ordered=True),
    SqliteQuery("window_change", f"{_WINDOW} WHERE max(w.updated_at, coalesce(n.updated_at, 0)) >= :since "
                "ORDER BY changed", "changed", optional=True, ordered=True),
)
SOURCES = (
    *pi.OPENCLAW_SOURCES,
    SourceSpec("*/agent/openclaw-agent.sqlite", "sqlite", DB, watch=False, queries=QUERIES),
    SourceSpec("*/sessions/cold/*.jsonl.zst", "jsonl.zst", COLD),
)


# -- parsing ----------------------------------------------------------------------------------------
def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == DB:
        return _database(ref, records, state)
    if ref.variant == COLD:
        return _cold(ref, records, state)
    out = Batch(state=state)  # a JSONL file
    if not any(marker in ref.path.name for marker in NOT_SESSIONS):
        out.state = _feed(out, ref, records, state)
    return out


_OWN = re.compile(rb'"type"\s*:\s*"(?:leaf|reset)"')  # OpenClaw's entry types (the rest is pi's)


def _feed(out: Batch, ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> dict[str, Any]:
    """Hand one session's entries to pi (in runs, so that OpenClaw's own events keep their place);
    return pi's state. ``state`` is pi's, with the leaf records met so far under ``oc_leaf``."""
    pending: list[Record] = []

    def flush() -> None:
        nonlocal state
        if pending:
            batch = pi.parse(ref, pending, state)
            for patch in batch.sessions.values():
                out.patch(patch)
            out.events.extend(batch.events)
            out.problems.extend(batch.problems)
            out.marks.extend(batch.marks)
            state = batch.state
            pending.clear()

    for record in records:
        leaves: dict[str, str | None] = state.get("oc_leaf") or {}
        if not _OWN.search(record.raw) and not any(leaf.encode() in record.raw for leaf in leaves):
            pending.append(record)
            continue
        try:
            data = orjson.loads(record.raw)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            pending.append(record)  # pi reports it
            continue
        kind, parent = data.get("type"), data.get("parentId")
        if isinstance(parent, str) and parent in leaves:  # appended after a navigation: to its target
            data["parentId"] = leaves[parent]
            record = Record(record.line, orjson.dumps(data))
        if kind == "leaf" and isinstance(data.get("id"), str):
            target = data.get("targetId")
            leaves[data["id"]] = leaves.get(target, target) if isinstance(target, str) else None
            while len(leaves) > LEAVES_KEPT:
                leaves.pop(next(iter(leaves)))
            state["oc_leaf"] = leaves
        elif kind == "reset":  # pi follows the tree through it; the event is ours
            tracked = {k: data.get(k) for k in ("id", "parentId", "timestamp")}
            pending.append(Record(record.line, orjson.dumps({"type": "custom", **tracked})))
            flush()
            _reset(out, str(state.get("session") or ""), data)
        else:
            pending.append(record)
    flush()
    return state


def _reset(out: Batch, session: str, data: dict[str, Any]) -> None:
    reason, uid = data.get("reason"), data.get("id")
    ts = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
    meta = {"record": "reset", "reason": reason, "first_kept": data.get("firstKeptEntryId")}
    out.events.append(Event(session, uid if isinstance(uid, str) and uid else f"reset:{ts}", "system",
                            "compaction", f"history reset ({reason or 'new'})", ts=ts,
                            meta={k: v for k, v in meta.items() if v is not None}))


def _session_ref(ref: SourceRef, agent_dir: PurePath, session: str) -> SourceRef:
    """What pi would have been handed for this session's JSONL file: ``<agent>/sessions/<id>.jsonl``
    (the id before the header, and the agent's name)."""
    return SourceRef(agent_dir / "sessions" / f"{session}.jsonl", ref.root, "openclaw", None, ref.mtime_ns)


def _database(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    out = Batch(state=state)
    sessions: dict[str, dict[str, Any]] = state.setdefault("s", {})
    agent_dir = ref.path.parent.parent
    runs: list[tuple[str, list[Record]]] = []
    for record, data in json_objects(records, out.problems):
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict) or not isinstance(row.get("session_id"), str):
            out.problems.append(Problem("malformed", record.line, f"{table} row without its session"))
        elif table == "event":
            rid = row.get("rid") if isinstance(row.get("rid"), int) else 0
            # Read again from the start (the table shrank below the watermark): rows below what the state
            # holds. A later page of a first read (since 0 too) goes on above it.
            if row.get("since") == 0 and 0 < rid < state.get("rid", 0):
                sessions.clear()
                state["rid"] = 0
            if 0 < rid <= state.get("rid", 0):
                continue  # the watermark's own row, read again
            state["rid"] = max(rid, state.get("rid", 0))
            entry = _row_entry(out, record, row)
            if entry is not None:
                if not runs or runs[-1][0] != row["session_id"]:
                    runs.append((row["session_id"], []))
                runs[-1][1].append(entry)
        elif table in ("window", "window_change"):
            out.patch(_window(row, agent_dir))
        else:
            out.problems.append(Problem("unknown_type", record.line, f"table={table!r}"))
    for session, items in runs:
        kept = sessions.pop(session, {})
        sessions[session] = _feed(out, _session_ref(ref, agent_dir, session), items, kept)
        while len(sessions) > SESSIONS_KEPT:
            sessions.pop(next(iter(sessions)))
    return out


def _row_entry(out: Batch, record: Record, row: dict[str, Any]) -> Record | None:
    """A transcript row as the JSONL line it would have been, decompressed if need be."""
    text, packed = row.get("event_json"), row.get("event_zstd")
    if isinstance(text, str):
        raw = text.encode()
    elif isinstance(packed, str) and packed:
        import zstandard  # here: status imports every parser for its roots, and decompresses nothing

        try:
            size = int(row.get("event_utf8_bytes") or 0)
            raw = zstandard.ZstdDecompressor().decompress(bytes.fromhex(packed), max_output_size=MAX_EVENT_BYTES)
            if size and len(raw) != size:
                raise ValueError(f"{len(raw)} bytes, the row says {size}")
        except (ValueError, zstandard.ZstdError) as exc:
            out.problems.append(Problem("malformed", record.line,
                                        f"{row['session_id']} seq {row.get('seq')}: zstd event: {exc}"))
            return None
    else:
        out.problems.append(Problem("malformed", record.line, f"{row['session_id']} seq {row.get('seq')}: no event"))
        return None
    return Record(record.line, raw)


def _window(row: dict[str, Any], agent_dir: PurePath) -> SessionPatch:
    """A session window: its conversation, how it began, and whether it is over."""
    sid, key = row["session_id"], row.get("session_key")
    patch = SessionPatch(sid)
    current = row.get("current_session_id")
    # The conversation's names (a label is the user's) belong to its current session; a window keeps
    # the name it had (generated titles are display names too).
    names = [(row.get("label"), "custom"), (row.get("node_name"), "ai")] if current == sid else []
    for name, source in [*names, (row.get("display_name"), "ai")]:
        if isinstance(name, str) and name.strip():
            patch.offer_title(name.strip(), source)
            break
    if isinstance(row.get("model"), str) and row["model"]:
        patch.model = row["model"]
    fork, parent = row.get("fork_source_session_id"), row.get("parent_session_id")
    if isinstance(fork, str) and fork and fork != sid:
        patch.parent_native_id, patch.parent_kind = fork, "fork"
    elif isinstance(parent, str) and parent and parent != sid:
        patch.parent_native_id, patch.parent_kind = parent, "subagent"
    if row.get("archived_at") or (isinstance(current, str) and current and current != sid):
        patch.state = "ended"  # archived, or its conversation went on in another session (reset, rollover)
    facts = {"agent": agent_dir.name, "session_key": key, "previous_session": row.get("previous_session_id"),
             "window_reason": row.get("reason"), "channel": row.get("channel"), "chat_type": row.get("chat_type"),
             "run_status": row.get("status"), "created_via": row.get("created_via"),
             "ended_at": iso_ms(row.get("ended_at")), "archived_at": iso_ms(row.get("archived_at"))}
    patch.note(**{k: v for k, v in facts.items() if v is not None})
    return patch


def _cold(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """A cold archive: ``{"kind": "header", "sessionId"}``, then ``event`` records (``row.event_json``)
    and the indexes' rows (``identity``, ``active``, ``index``, ``fts``), which hold nothing new."""
    out = Batch(state=state)
    items: list[Record] = []
    session = state.get("session")
    for record, data in json_objects(records, out.problems):
        kind, row = data.get("kind"), data.get("row")
        if kind == "header" and isinstance(data.get("sessionId"), str):
            session = data["sessionId"]
        elif kind == "event":
            if isinstance(row, dict) and isinstance(row.get("event_json"), str):
                items.append(Record(record.line, row["event_json"].encode()))
            else:
                out.problems.append(Problem("malformed", record.line, "cold archive event without its row"))
        elif kind not in ("header", "identity", "active", "index", "fts"):
            out.problems.append(Problem("unknown_type", record.line, f"cold archive record kind={kind!r}"))
    if not isinstance(session, str):
        if items:
            out.problems.append(Problem("malformed", items[0].line, "cold archive without its header"))
        return out
    pistate = _feed(out, _session_ref(ref, ref.path.parents[2], session), items, state.get("pi") or {})
    out.state = {"session": session, "pi": pistate}
    return out
