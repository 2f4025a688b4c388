"""Mistral Vibe (PyPI ``mistral-vibe``): ``$VIBE_HOME/logs/session/`` (default ``~/.vibe``).

Format facts and their sources: ``fixtures/mistral_vibe/SOURCE.md``. In short:

- 3.x, ``unified/<session id>/``: ``meta.json`` (cwd, title, parent, times; rewritten), ``CURRENT`` (the
  published generation), ``generations/<n>/manifest.json`` (which chunks hold the transcript),
  ``chunks/<sha256>.json`` (content-addressed runs of the public history, a JSON array each) and
  ``journal/<first sequence>.jsonl`` (the write-ahead log since that generation: ``projection_delta``
  records append / replace / remove history entries as a turn goes). Only the two newest generations and
  their journal segments are kept: the whole transcript is the current generation's chunks plus the journal
  after its snapshot, read together as one document (the meta.json source and its related files).
- before 3.0, ``session_<date>_<time>_<short id>/messages.jsonl`` (OpenAI-style messages, appended; rewritten
  whole after a rewind) with ``meta.json`` beside it (the sidecar).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, record_uid
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

NAME = "mistral-vibe"

# `vibe` (a Python launcher that execs the bundled Rust TUI, vibe/cli/launcher.py) starts the Python host that
# writes the store as `vibe-app-server` (setproctitle, vibe/app_server/stdio.py); `vibe-acp` for editors.
PROCESSES = ("vibe", "vibe-app-server", "vibe-acp")

_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task", "message", "code")
# Journal records with nothing for a transcript: the runtime's own commands, model/tool actions (their
# results reach the history through projection deltas), process and callback bookkeeping.
JOURNAL_BOOKKEEPING = frozenset({
    "command_reserved", "core_input", "action_intent", "action_result", "process_operation_dispatched",
    "process_state_changed", "process_notification_submitted", "callback_registered", "callback_resolved",
    "receipt_succeeded", "receipt_failed", "session_relocated",
})
_TURN_STATES = {"in_progress": "open", "completed": "complete", "failed": "aborted", "interrupted": "aborted"}
_FORK_PREFIX = "imported-"  # a fork's copied history (mistralai_vibe_local_harness/vibe/_fork.py)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # vibe/utils/vibe_home.py get_vibe_home: $VIBE_HOME (expanded, resolved), else Path.home() / ".vibe" on
    # every OS; sessions in logs/session (vibe/core/paths/_vibe_home.py SESSION_LOG_DIR).
    override = (env.get("VIBE_HOME") or "").strip()
    return [(Path(override).expanduser() if override else home / ".vibe") / "logs" / "session"]


def _unified_related(path: PurePath) -> list[PurePath]:
    """CURRENT first, then every manifest and projection state, the chunk pool and the journal segments. Listed,
    not opened: which of them the current generation names is for the parser to find in what was read."""
    folder = Path(path).parent
    found: list[PurePath] = [folder / "CURRENT"]
    for pattern in ("generations/*/manifest.json", "generations/*/projection-state.json", "chunks/*.json",
                    "journal/*.jsonl"):
        found.extend(sorted(folder.glob(pattern)))
    return found


def _legacy_meta(path: PurePath) -> PurePath:
    return path.parent / "meta.json"


SOURCES = (
    # Polled: one session spans four folders, and a change in journal/ or chunks/ is not beside meta.json, where
    # a file event could be traced back to it.
    SourceSpec("unified/*/meta.json", "json", "unified", related=_unified_related, watch=False),
    SourceSpec("session_*/messages.jsonl", "jsonl", "legacy", sidecar=_legacy_meta),
)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref, self.state = ref, state
        self.batch = Batch(state=state)
        self.sid = ref.path.parent.name
        self.line = 0

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: str | None, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, ts=ts, **fields))

    def problem(self, kind: Any, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == "legacy":
        return _legacy(ref, records, state)
    reader = _Reader(ref, state)
    reader.batch.revise = True  # a whole-document reading: entries grow (an effect gets its output) in place
    _unified(reader, list(records))
    return reader.batch


# -- 3.x: the unified session store ---------------------------------------------------------------------------

def _digest(raw: bytes) -> str:
    import hashlib  # here, not at the top: the registry's import (status) needs none of it

    # A pooled document is its canonical JSON and a newline; its name is the digest of the JSON
    # (_storage.py _write_pooled_chunk, _seal_chunk).
    return hashlib.sha256(raw.rstrip(b"\n")).hexdigest()


def _unified(r: _Reader, records: list[Record]) -> None:
    meta: dict | None = None
    current: dict | None = None
    manifests: dict[str, dict] = {}
    projections: dict[int, dict] = {}
    chunks: dict[str, list] = {}
    journal: list[tuple[int, dict]] = []
    for record in records:
        r.line = record.line
        if not record.raw.strip():
            continue  # an empty journal segment: the tail after a turn that just ended
        try:
            doc = orjson.loads(record.raw)
        except orjson.JSONDecodeError:
            if record.line == 1:  # meta.json, replaced atomically (vibe/core/session/metadata.py): never torn
                r.problem("malformed", "meta.json: invalid JSON")
                continue
            journal.extend(_journal_lines(r, record))  # a journal segment of several records, or one being written
            continue
        if isinstance(doc, list):
            chunks[_digest(record.raw)] = doc
        elif not isinstance(doc, dict):
            r.problem("malformed", "document is not an object")
        elif "start_time" in doc and "session_id" in doc:
            meta = doc
        elif "store_format" in doc:
            current = doc
        elif "manifest_version" in doc:
            manifests[str(doc.get("generation"))] = doc
        elif "projection_state_version" in doc:
            projections[int(doc.get("snapshot_sequence") or 0)] = doc
        elif "recovery_journal_record_version" in doc:
            journal.append((record.line, doc))
        else:
            r.problem("unknown_type", f"document with keys {sorted(doc)[:6]}")
    if meta is not None:
        _meta(r, meta)
    entries, after = _published(r, current, manifests, projections, chunks)
    if entries is None:
        return
    envelope: dict | None = None
    for line, record in sorted(journal, key=lambda item: _sequence(item[1])):
        r.line = line
        if _sequence(record) <= after:
            continue  # already in the generation read
        try:
            envelope = _journal_record(r, record, entries) or envelope
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            r.problem("malformed", f"journal record of unexpected shape: {describe_error(exc)}")
    _entries(r, entries)
    if envelope is None:
        envelope = next((p.get("snapshot") for s, p in projections.items() if s == after), None)
    if isinstance(envelope, dict):
        _envelope(r, envelope)


def _journal_lines(r: _Reader, record: Record) -> list[tuple[int, dict]]:
    out = []
    for n, line in enumerate(record.raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            # The last line of a segment being written, or torn by a crash: the next reading has it whole.
            if n < len(record.raw.splitlines()) or record.raw.endswith(b"\n"):
                r.problem("malformed", f"journal line {n}: invalid JSON")
            continue
        if isinstance(doc, dict):
            out.append((record.line, doc))
    return out


def _sequence(record: dict) -> int:
    value = record.get("sequence")
    return value if isinstance(value, int) else 0


def _published(r: _Reader, current: dict | None, manifests: dict[str, dict], projections: dict[int, dict],
               chunks: dict[str, list]) -> tuple[list[dict] | None, int]:
    """The history of the generation CURRENT names (else the newest there is) and its snapshot sequence."""
    if not manifests:
        return [], 0  # nothing published yet: the journal holds everything
    generation = str((current or {}).get("generation"))
    manifest = manifests.get(generation) or manifests[max(manifests)]
    after = int(manifest.get("snapshot_sequence") or 0)
    descriptor = manifest.get("projection_state") or {}
    names = descriptor.get("chunks")
    if names is None:  # before chunked transcripts (store minor 4): the entries inside projection-state.json
        snapshot = (projections.get(after) or {}).get("snapshot") or {}
        return [e for e in (snapshot.get("history") or {}).get("entries") or [] if isinstance(e, dict)], after
    entries: list[dict] = []
    for name in names:
        if name not in chunks:
            # Collected between listing and reading (a newer generation was published): the next reading
            # sees that one whole. Nothing is read from a half: it would order entries wrongly.
            r.problem("unreadable", f"chunk {name} of generation {manifest.get('generation')} is missing")
            return None, after
        entries.extend(e for e in chunks[name] if isinstance(e, dict))
    return entries, after


def _journal_record(r: _Reader, record: dict, entries: list[dict]) -> dict | None:
    kind, payload = record.get("type"), record.get("payload") or {}
    if kind == "projection_delta":
        envelope = None
        for op in payload["delta"]:
            envelope = _apply(r, op, entries) or envelope
        return envelope
    if kind == "projection_advanced":  # a whole snapshot (the store before projection deltas, minor 2)
        snapshot = payload["snapshot"]
        entries[:] = [e for e in (snapshot.get("history") or {}).get("entries") or [] if isinstance(e, dict)]
        return snapshot
    if kind not in JOURNAL_BOOKKEEPING:
        r.problem("unknown_type", f"journal record type={kind!r}")
    return None


def _apply(r: _Reader, op: dict, entries: list[dict]) -> dict | None:
    """One projection op (_storage.py AppendEntryOp, ReplaceEntryOp, RemoveEntryOp, SetEnvelopeOp,
    SetHistoryEntriesOp) on the history, as the store's own replay does."""
    name = op.get("op")
    if name == "append_entry":
        entries.append(op["entry"])
    elif name == "replace_entry":
        at = next((i for i, e in enumerate(entries) if e.get("id") == op["id"]), None)
        if at is None:
            entries.append(op["entry"])
        else:
            entries[at] = op["entry"]
    elif name == "remove_entry":
        # An effect still open when its turn completed (the projector drops it): what was read of it stays.
        entries[:] = [e for e in entries if e.get("id") != op["id"]]
    elif name == "set_history_entries":
        entries[:] = [e for e in op.get("entries") or [] if isinstance(e, dict)]
    elif name == "set_envelope":
        return op.get("state")
    else:
        r.problem("unknown_type", f"projection op={name!r}")
    return None


def _meta(r: _Reader, meta: dict) -> None:
    """meta.json (vibe/core/types.py SessionMetadata): where, when, the title, the parent."""
    if isinstance(meta.get("session_id"), str):
        r.sid = meta["session_id"]
    env = meta.get("environment") or {}
    cwd = meta.get("origin_directory") or env.get("working_directory")
    if isinstance(cwd, str) and cwd:
        r.patch.cwd = cwd
    r.patch.started_at = iso_text(meta.get("start_time"))
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        r.patch.offer_title(title.strip().splitlines()[0][:80], "custom" if meta.get("title_source") == "manual" else "ai")
    if meta.get("git_branch") or meta.get("git_commit"):
        from harvester.model import GitFacts

        r.patch.git = GitFacts(branch=meta.get("git_branch"), commit=meta.get("git_commit"))
    model = (meta.get("config") or {}).get("model_name")
    if isinstance(model, str):
        r.patch.model = model
    if isinstance(meta.get("parent_session_id"), str):
        r.patch.parent_native_id = meta["parent_session_id"]
        r.patch.parent_kind = "subagent"  # until the history says fork (_entries)
    if meta.get("archived_at"):
        r.patch.note(archived=True, archived_at=iso_text(meta["archived_at"]))


def _entries(r: _Reader, entries: list[dict]) -> None:
    if r.patch.parent_native_id and any(str(e.get("id", "")).startswith(_FORK_PREFIX) for e in entries[:1]):
        r.patch.parent_kind = "fork"
    titled = False
    for index, entry in enumerate(entries):
        r.line = index + 1
        try:
            titled = _entry(r, entry, titled)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            r.problem("malformed", f"history entry of unexpected shape: {describe_error(exc)}")


def _entry(r: _Reader, entry: dict, titled: bool) -> bool:
    kind, uid = entry.get("type"), str(entry.get("id") or record_uid(orjson.dumps(entry)))
    ts = iso_ms(entry.get("createdAt"))
    if iso_ms(entry.get("updatedAt")):
        r.patch.updated_at = iso_ms(entry.get("updatedAt"))
    copied = {"imported": True} if uid.startswith(_FORK_PREFIX) else None
    if kind == "message":
        role, text = entry.get("role"), _blocks_text(entry.get("content"))
        if role == "user":
            r.emit(uid, ts, role="user", kind="text", text=text, meta=copied)
            if not titled and text.strip():
                r.patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")
                titled = True
        elif role == "assistant":
            if entry.get("generationStatus") == "in_progress":
                return titled  # still streaming: the next reading has it whole
            r.emit(uid, ts, role="assistant", kind="text", text=text, meta=copied)
        else:
            r.problem("unknown_type", f"message role={role!r}")
    elif kind == "reasoning":
        text = str(entry.get("text") or "") or "\n".join(str(s) for s in entry.get("summary") or [])
        r.emit(uid, ts, role="assistant", kind="thinking", text=text, meta=copied)
    elif kind == "effect":
        _effect(r, entry, uid, ts)
    elif kind == "checkpoint":
        sub = entry.get("kind")
        if sub == "compaction":
            if entry.get("generationStatus") == "completed":
                r.emit(uid, ts, role="system", kind="compaction", text=str(entry.get("message") or "[compacted]"),
                       meta={"details": entry.get("details")})
        else:  # model_change, agent_change
            r.emit(uid, ts, role="system", kind="meta", text=str(entry.get("message") or sub), meta={"type": sub})
    elif kind == "notice":
        r.emit(uid, ts, role="system", kind="meta", text=str(entry.get("message") or entry.get("title") or ""),
               meta={"type": "notice", "level": entry.get("level")})
    else:
        r.problem("unknown_type", f"history entry type={kind!r}")
    return titled


def _effect(r: _Reader, entry: dict, uid: str, ts: str | None) -> None:
    """A tool run (kind ``tool``) or a subagent started (``subagent``, with the child's session id)."""
    detail = entry.get("detail") or {}
    name = str(detail.get("toolName") or entry.get("title") or "?")
    tool_input = detail.get("input")
    meta = {"child_session": detail["childSessionId"]} if detail.get("childSessionId") else None
    r.emit(f"call:{uid}", ts, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
           tool_name=name, tool_input=tool_input, tool_call_id=uid, meta=meta)
    state = entry.get("state") or {}
    if entry.get("generationStatus") == "in_progress" or state.get("status") in ("running", "pending"):
        return
    output = state.get("output") or {}
    failed = output.get("type") not in (None, "success") or state.get("status") in ("failed", "error")
    r.emit(f"result:{uid}", iso_ms(entry.get("updatedAt")) or ts, role="tool", kind="tool_result",
           text=_output_text(state, output), tool_name=name, tool_call_id=uid, is_error=failed)


def _output_text(state: dict, output: dict) -> str:
    parts = [_blocks_text(output.get("content"))] if output.get("content") else []
    structured = output.get("structured_content")
    if structured is not None:
        parts.append(structured if isinstance(structured, str) else orjson.dumps(structured).decode())
    for key in ("message", "error"):
        if isinstance(output.get(key), str):
            parts.append(output[key])
    text = "\n".join(p for p in parts if p) or str(state.get("outputText") or "")
    return text


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        out.append(str(block.get("text") or "") if kind == "text" else f"[{kind}]")
    return "\n".join(out)


def _envelope(r: _Reader, state: dict) -> None:
    """The public session state (session_protocol.py PublicSessionState): the latest turn's status."""
    turn = state.get("latestTurn") or {}
    if turn.get("status") in _TURN_STATES:
        r.patch.note(last_turn=_TURN_STATES[turn["status"]])
    session = state.get("session") or {}
    title = session.get("title")
    if isinstance(title, str) and title.strip():
        r.patch.offer_title(title.strip().splitlines()[0][:80],
                            "custom" if session.get("titleSource") == "manual" else "ai")


# -- before 3.0: messages.jsonl + meta.json --------------------------------------------------------------------

def _legacy(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    r = _Reader(ref, state)
    if ref.sidecar is not None:
        with contextlib.suppress(orjson.JSONDecodeError):
            meta = orjson.loads(ref.sidecar)
            if isinstance(meta, dict):
                # The id the folder's short one abbreviates (vibe/core/session/session_logger.py save_folder),
                # kept from the first reading so that a later one without its sidecar names the same session.
                state.setdefault("sid", meta.get("session_id") if isinstance(meta.get("session_id"), str) else None)
                r.sid = state.get("sid") or r.sid
                _meta(r, meta)
                if isinstance(meta.get("end_time"), str):
                    r.patch.updated_at = iso_text(meta["end_time"])
    r.sid = state.get("sid") or r.sid
    for record, data in json_objects(records, r.batch.problems):
        r.line = record.line
        uid = record_uid(record.raw, context=state.get("prev"))
        state["prev"] = uid[2:14]
        try:
            _message(r, data, uid)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            r.problem("malformed", f"message of unexpected shape: {describe_error(exc)}")
    return r.batch


def _message(r: _Reader, data: dict, uid: str) -> None:
    """One LLMMessage (vibe/core/types.py), as model_dump(exclude_none=True) wrote it."""
    role = data.get("role", "assistant")
    mid = str(data.get("message_id") or uid)
    text = _blocks_text(data.get("content"))
    flags = {"injected": True} if data.get("injected") else None
    if role == "user":
        if data.get("context_boundary") == "compaction":
            r.emit(mid, None, role="system", kind="compaction", text=text or "[compacted]")
            return
        r.emit(mid, None, role="user", kind="text", text=text, meta=flags)
        if not flags and text.strip() and not r.state.get("titled"):
            r.state["titled"] = True
            r.patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")
    elif role == "assistant":
        if data.get("reasoning_content"):
            r.emit(f"{mid}:thinking", None, role="assistant", kind="thinking", text=_blocks_text(data["reasoning_content"]))
        if text:
            r.emit(mid, None, role="assistant", kind="text", text=text, meta=flags)
        for call in data.get("tool_calls") or []:
            function = call.get("function") or {}
            name, arguments = str(function.get("name") or "?"), function.get("arguments")
            tool_input: Any = arguments
            if isinstance(arguments, str):
                with contextlib.suppress(orjson.JSONDecodeError):
                    tool_input = orjson.loads(arguments) if arguments else None
            call_id = str(call.get("id") or f"{mid}:{name}")
            r.emit(f"call:{call_id}", None, role="assistant", kind="tool_call",
                   text=render_call(name, tool_input, _CALL_KEYS), tool_name=name, tool_input=tool_input,
                   tool_call_id=call_id)
    elif role == "tool":
        call_id = str(data.get("tool_call_id") or uid)
        result = data.get("tool_result") or {}
        r.emit(f"result:{call_id}", None, role="tool", kind="tool_result", text=text, tool_name=data.get("name"),
               tool_call_id=call_id, is_error=bool(result.get("cancelled")))
    elif role != "system":
        r.problem("unknown_type", f"message role={role!r}")
