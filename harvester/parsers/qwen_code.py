"""Qwen Code: ``~/.qwen/projects/<sanitized cwd>/chats/<sessionId>.jsonl``, one JSON record per line.

Format facts and their sources: ``fixtures/qwen_code/SOURCE.md``. In short:

- Every record carries ``uuid``/``parentUuid`` (a tree), ``sessionId``, ``timestamp``, ``cwd``,
  ``version``, ``gitBranch`` and a ``type``: ``user`` / ``assistant`` / ``tool_result`` hold a Gemini
  ``Content`` (``message.parts``: ``text``, ``thought``, ``functionCall``, ``functionResponse``);
  ``system`` records carry a ``subtype`` and a ``systemPayload`` (compression checkpoints, slash
  commands, titles, rewinds, telemetry...). Bookkeeping subtypes are listed in ``BOOKKEEPING`` and
  skipped on purpose; any other unknown type or subtype is drift.
- A rewind re-roots the tree: the records after the branch point stay in the file on a dead branch.
  Every event is kept in file order; those of the abandoned branch get ``meta.rewound`` (``_rewind``).
- ``/branch`` copies the whole parent file into a new session, each copy stamped ``forkedFrom``: the
  copies are the parent's (imported with it) and are skipped; the fork is linked to its parent.
- Background subagents write ``projects/<p>/subagents/<sessionId>/agent-<id>.jsonl`` (+ ``.meta.json``).
- Before the JSONL store (0.1.x and older, the Gemini CLI fork era): ``tmp/<sha256(cwd)>/chats/
  session-*.json``, one document rewritten whole, which does not name its cwd.
- Saved chats (``/chat save <tag>``): ``tmp/<sha256(cwd)>/checkpoint-<tag>.json``, read by
  ``harvester/parsers/gemini_checkpoint.py`` (Gemini CLI's are the same).

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and Qwen Code's
record tree is read here whole: the format facts above and the functions that read them stay side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Mark, Problem, SessionPatch, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    json_objects,
    render_call,
    unknown_fields,
)
from harvester.parsers.gemini_checkpoint import parse_checkpoint

NAME = "qwen-code"
# 2: a function response in a user record is a tool result (it was the user's "[functionResponse]").
VERSION = 2


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "file_path", "absolute_path", "path", "pattern", "url", "query", "description")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``QWEN_RUNTIME_DIR`` moves the session store, ``QWEN_HOME`` the whole ``~/.qwen`` (the store with
    it when no runtime dir is set). Both are kept: sessions written before a variable was set stay in
    the other one. Qwen resolves relative values against its own working directory, which differs per
    project: those cannot be followed and are ignored."""
    runtime = _absolute(env.get("QWEN_RUNTIME_DIR"), home)
    qwen_home = _absolute(env.get("QWEN_HOME"), home) or home / ".qwen"
    return [runtime, qwen_home] if runtime is not None and runtime != qwen_home else [qwen_home]


def _absolute(value: str | None, home: Path) -> Path | None:
    value = (value or "").strip()
    if value == "~" or value.startswith(("~/", "~\\")):
        return home / value[2:]
    return Path(value) if value and Path(value).is_absolute() else None


def _meta_json(path: PurePath) -> PurePath:
    return path.with_name(path.stem + ".meta.json")


# Session files are named by their UUID; newer versions keep sidecars beside them that are not
# sessions (<id>.ledger.jsonl, <id>.pr.json).
_SESSION_FILE = "????????-????-????-????-????????????.jsonl"

SOURCES = (
    SourceSpec(f"projects/*/chats/{_SESSION_FILE}", "jsonl"),
    SourceSpec(f"projects/*/chats/archive/{_SESSION_FILE}", "jsonl", "archived"),
    SourceSpec("projects/*/subagents/*/agent-*.jsonl", "jsonl", "subagent", sidecar=_meta_json),
    SourceSpec("tmp/*/chats/session-*.json", "json", "legacy"),
    # /chat save <tag>: the model's history when it was saved (before 0.1, the only chat kept).
    SourceSpec("tmp/*/checkpoint-*.json", "json", "checkpoint"),
)

# The npm package's bin is `qwen` (node running .../@qwen-code/qwen-code/cli.js).
PROCESSES = ("qwen", "@qwen-code/qwen-code")

# system subtypes with nothing for a transcript: state Qwen replays on resume (token telemetry,
# commit attribution, file snapshots), daemon / goal / notes machinery, a fork agent's copied context.
BOOKKEEPING = frozenset({
    "ui_telemetry", "attribution_snapshot", "file_history_snapshot", "session_artifact_event",
    "session_artifact_snapshot", "session_sources_snapshot", "branch_checkpoint", "agent_bootstrap",
    "agent_session_ready", "agent_retry", "goal_state", "goal_turn_end", "omni_recall", "session_notes",
    "session_execution_engine", "session_approval_mode", "user_text_elements", "managed_session_header_v1",
    "managed_session_event_v1", "managed_session_commit_v1",
})
# user subtypes that are Qwen's own messages to the model (a background agent finished, a cron job
# fired, a goal's runtime prompt), never the user's words.
MACHINE_PROMPTS = frozenset({"notification", "cron", "goal_runtime"})
# Every record's fields as Qwen's ChatRecord has them (chatRecordingService.ts: createBaseRecord and each record's
# own; subagent transcripts' agent fields; fixtures/qwen_code/SOURCE.md). Another is drift (``unknown_field``).
RECORD_FIELDS = frozenset({
    "uuid", "parentUuid", "sessionId", "timestamp", "type", "subtype", "cwd", "version", "gitBranch", "message",
    "model", "usageMetadata", "contextWindowSize", "toolCallResult", "systemPayload", "forkedFrom", "agentId",
    "agentName", "agentColor", "isSidechain", "externalInputKind", "provenance", "goalContext",
})
_INJECTED_PREFIXES = ("<system-reminder>", "<qwen:")  # reminders, hook context added to a prompt
_TURNS_KEPT = 400  # live user turns remembered for rewinds (one small pair per prompt)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref, self.state, self.line = ref, state, 0
        # A re-read from the start (in however many chunks) must replace what an earlier read filed:
        # rewind marks seen only now, a legacy document's grown messages. Uids are unique per record part.
        self.batch = Batch(state=state, revise=True)
        self.session_id: str = state.get("session") or (
            f"{ref.path.parent.name}:{ref.path.stem}" if ref.variant == "subagent" else ref.path.stem)
        self.patch: SessionPatch = self.batch.session(self.session_id)
        self.fields_seen: set[str] = set()

    def event(self, data: dict, uid: str, **fields: Any) -> None:
        ts = data.get("timestamp")
        self.batch.events.append(Event(self.session_id, uid, ts=ts if isinstance(ts, str) else None, **fields))

    def turn(self, state: str) -> None:
        """Whether the last turn finished: the service tells an abandoned session from an ended one by it."""
        if self.state.get("last_turn") != state:
            self.state["last_turn"] = state
            self.patch.note(last_turn=state)

    def title(self, text: str) -> None:
        if not self.state.get("titled") and text.strip():
            self.state["titled"] = True
            line = text.strip().splitlines()[0]
            self.patch.offer_title(line if len(line) <= 80 else line[:79] + "…", "first-prompt")

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def unknown_fields(self, data: dict) -> None:
        """Fields no Qwen version was seen writing: one problem per record type and read."""
        detail = unknown_fields(f"{data.get('type')} record", data, RECORD_FIELDS)
        if detail and detail not in self.fields_seen:
            self.fields_seen.add(detail)
            self.batch.problems.append(Problem("unknown_field", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == "checkpoint":
        return parse_checkpoint(ref, records, _CALL_KEYS, _INJECTED_PREFIXES)
    reader = _Reader(ref, state)
    legacy = ref.variant == "legacy"
    if not legacy:
        _source_facts(reader)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            _legacy_document(reader, data) if legacy else _record(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"record of unexpected shape: {describe_error(exc)}"))
    if not legacy:
        reader.state["session"] = reader.session_id
    return reader.batch


def _source_facts(reader: _Reader) -> None:
    """Archive state, or a subagent's parent, label and status (its ``.meta.json``, rewritten as it runs)."""
    patch, ref = reader.patch, reader.ref
    if ref.variant != "subagent":
        patch.note(archived=ref.variant == "archived")
        return
    patch.parent_native_id, patch.parent_kind = ref.path.parent.name, "subagent"
    try:
        meta = orjson.loads(ref.sidecar) if ref.sidecar else None
    except orjson.JSONDecodeError:
        meta = None
    if not isinstance(meta, dict):
        return
    label = ": ".join(str(meta[k]) for k in ("agentType", "description") if meta.get(k))
    if label:
        patch.offer_title(label, "summary")
    if meta.get("parentAgentId"):  # launched by another subagent of the same session
        patch.parent_native_id = f"{ref.path.parent.name}:agent-{meta['parentAgentId']}"
    patch.note(**{k: meta[k] for k in ("agentType", "subagentName", "status", "resumeCount") if k in meta})


def _record(reader: _Reader, data: dict) -> None:
    kind = data.get("type")
    handler = HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        reader.drift(f"type={kind!r}")
        return
    reader.unknown_fields(data)
    forked = data.get("forkedFrom")
    if isinstance(forked, dict):  # the parent's record: its times and version are the parent's
        _copied(reader, data, forked)
        return
    _envelope(reader, data)
    handler(reader, data)


def _envelope(reader: _Reader, data: dict) -> None:
    """Session facts repeated on every record: cwd, branch, version, times."""
    state, patch = reader.state, reader.patch
    if data.get("cwd") and not state.get("cwd"):
        state["cwd"] = patch.cwd = str(data["cwd"])
    ts = data.get("timestamp")
    if isinstance(ts, str):
        if not state.get("started"):
            state["started"] = patch.started_at = ts
        patch.updated_at = ts
    branch = data.get("gitBranch")
    if isinstance(branch, str) and branch and branch != "HEAD" and branch != state.get("branch"):
        state["branch"] = branch
        patch.git = GitFacts(branch=branch)
    version = data.get("version")
    # "unknown" when the CLI has none; the VS Code companion's renames write "vscode".
    if isinstance(version, str) and version[:1].isdigit() and version != state.get("version"):
        state["version"] = patch.agent_version = version


def _copied(reader: _Reader, data: dict, forked: dict) -> None:
    """A record /branch copied from the parent, which holds it. Copied prompts still count as turns
    for rewinds inside the fork."""
    state = reader.state
    if data.get("cwd") and not state.get("cwd"):
        state["cwd"] = reader.patch.cwd = str(data["cwd"])
    if not state.get("fork_parent") and forked.get("sessionId"):
        state["fork_parent"] = str(forked["sessionId"])
        reader.patch.parent_native_id, reader.patch.parent_kind = state["fork_parent"], "fork"
    state["copied"] = state.get("copied", 0) + 1
    reader.patch.note(copied_records=state["copied"], fork_point=forked.get("messageUuid"))
    if data.get("type") == "user" and not data.get("subtype"):
        _push_turn(reader, data)


# -- conversation records --------------------------------------------------------------------
def _user(reader: _Reader, data: dict) -> None:
    subtype, parts, uuid = data.get("subtype"), _parts(data), str(data["uuid"])
    payload = data.get("systemPayload") if isinstance(data.get("systemPayload"), dict) else {}
    display = payload.get("displayText") if isinstance(payload.get("displayText"), str) else None
    if subtype in MACHINE_PROMPTS:
        # The text the model got (a task-notification with the agent's result, the cron prompt).
        reader.event(data, uuid, role="system", kind="text", text=_text_of(parts) or display or "",
                     meta={"subtype": subtype, "injected": True, "display": display})
        reader.turn("open")
        return
    if subtype not in (None, "mid_turn_user_message", "realtime_message"):
        reader.drift(f"user subtype={subtype!r}")
        return
    if subtype is None and any(isinstance(p.get("functionResponse"), dict) for p in parts):
        _tool_result(reader, data)  # a tool's answer in a user record (agentsview's fixtures): a result
        return
    words, context = _split_user_parts(parts)
    # What the user typed, when Qwen kept it apart from the expanded parts (@file contents, hook
    # context): a newer record's displayText, or the @-command record just before.
    typed = display or (reader.state.pop("pending_at", None) if subtype is None else None)
    if typed:  # the first part is the same prompt with its @-paths resolved
        words = "\n".join([typed, *(_media_label(p) for p in parts if not isinstance(p.get("text"), str))])
    # No words at all: the record holds only Qwen's own parts (reminders), filed as context below.
    if words and reader.ref.variant == "subagent":  # a subagent's prompt is its parent agent's words
        reader.event(data, uuid, role="system", kind="text", text=words,
                     meta={"from_agent": "parent", "input": data.get("externalInputKind") or "task"})
    elif words:
        reader.event(data, uuid, role="user", kind="text", text=words,
                     meta={"subtype": subtype} if subtype else None)
    if subtype is None:
        reader.title(words)
        _push_turn(reader, data)
    if context:
        reader.event(data, f"{uuid}:context", role="system", kind="text", text=context, meta={"injected": True})
    reader.turn("open")


def _split_user_parts(parts: list[dict]) -> tuple[str, str]:
    """The user's words (the first plain text part, attachments) and Qwen's additions (further text
    parts: @-file contents, hook context, reminders)."""
    words: list[str] = []
    context: list[str] = []
    typed = False
    for part in parts:
        text = part.get("text")
        if not isinstance(text, str):
            words.append(_media_label(part))
        elif typed or text.lstrip().startswith(_INJECTED_PREFIXES):
            context.append(text)
        else:
            typed = True
            words.append(text)
    return "\n".join(words), "\n".join(context)


def _push_turn(reader: _Reader, data: dict) -> None:
    turns = reader.state.setdefault("turns", [])
    turns.append([data.get("uuid"), data.get("parentUuid")])
    del turns[:-_TURNS_KEPT]


def _assistant(reader: _Reader, data: dict) -> None:
    model = data.get("model") if isinstance(data.get("model"), str) else None
    if model:
        reader.patch.model = model
    parts, uuid = _parts(data), str(data["uuid"])
    start, calls = len(reader.batch.events), 0
    for index, part in enumerate(parts):
        uid = uuid if len(parts) == 1 else f"{uuid}:{index}"
        text, call = part.get("text"), part.get("functionCall")
        if isinstance(call, dict):
            calls += 1
            name, args = call.get("name"), call.get("args")
            tools = reader.state.setdefault("tools", {})
            tools[str(call.get("id"))] = name
            while len(tools) > 64:  # the id -> name map only bridges a call and its result
                tools.pop(next(iter(tools)))
            reader.event(data, uid, role="assistant", kind="tool_call", text=render_call(name, args, _CALL_KEYS),
                         tool_name=name, tool_input=args, tool_call_id=call.get("id"), model=model)
        elif isinstance(text, str):
            kind = "thinking" if part.get("thought") else "text"
            reader.event(data, uid, role="assistant", kind=kind, text=text, model=model)
        else:
            reader.event(data, uid, role="assistant", kind="meta", text=_media_label(part), model=model)
    _usage(reader, start, data.get("usageMetadata"), _GEMINI_USAGE)
    if parts:
        reader.turn("open" if calls else "complete")


def _tool_result(reader: _Reader, data: dict) -> None:
    """One record per tool call: its function response (``output``, or ``error``), plus the status."""
    parts, uuid = _parts(data), str(data["uuid"])
    result = data.get("toolCallResult") if isinstance(data.get("toolCallResult"), dict) else {}
    status = result.get("status")
    responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)] or [{}]
    extra = _text_of(parts)
    for index, response in enumerate(responses):
        body = response.get("response") if isinstance(response.get("response"), dict) else {}
        media = [_media_label(p) for p in response.get("parts") or [] if isinstance(p, dict)]
        call_id = response.get("id") or result.get("callId")
        reader.event(data, uuid if len(responses) == 1 else f"{uuid}:{index}", role="tool", kind="tool_result",
                     text="\n".join(t for t in (_response_text(response), *media, extra) if t),
                     tool_name=reader.state.get("tools", {}).pop(str(call_id), None) or response.get("name"),
                     tool_call_id=call_id, is_error=status in ("error", "cancelled") or body.get("success") is False
                     or ("error" in body and "output" not in body),
                     meta={"status": status} if status not in (None, "success", "error") else None)
    if status == "cancelled":
        reader.turn("aborted")


# -- system records --------------------------------------------------------------------------
def _system(reader: _Reader, data: dict) -> None:
    subtype = data.get("subtype")
    if subtype in BOOKKEEPING:
        return
    handler = SYSTEM.get(subtype) if isinstance(subtype, str) else None
    if handler is None:
        reader.drift(f"system subtype={subtype!r}")
        return
    handler(reader, data, data.get("systemPayload") if isinstance(data.get("systemPayload"), dict) else {})


def _compression(reader: _Reader, data: dict, payload: dict) -> None:
    """The checkpoint holds the new model history: the summary first, then the turns kept."""
    info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
    history = payload.get("compressedHistory")
    first = history[0] if isinstance(history, list) and history and isinstance(history[0], dict) else {}
    summary = _text_of([p for p in first.get("parts") or [] if isinstance(p, dict)])
    before, after = info.get("originalTokenCount"), info.get("newTokenCount")
    label = f"conversation compacted ({before} → {after} tokens)" if before is not None else "conversation compacted"
    reader.event(data, str(data["uuid"]), role="system", kind="compaction", text=summary or label,
                 meta={"subtype": "chat_compression", "tokens_before": before, "tokens_after": after})


def _slash_command(reader: _Reader, data: dict, payload: dict) -> None:
    command = payload.get("rawCommand")
    if payload.get("phase") == "invocation":
        reader.event(data, str(data["uuid"]), role="user", kind="text", text=str(command or ""),
                     meta={"command": True})
        return
    outputs = [o for o in payload.get("outputHistoryItems") or [] if isinstance(o, dict)]
    text = "\n".join(o["text"] if isinstance(o.get("text"), str) else f"[{o.get('type')}]" for o in outputs)
    if text:
        reader.event(data, str(data["uuid"]), role="system", kind="meta", text=text,
                     meta={"subtype": "slash_command", "command": command})


def _at_command(reader: _Reader, data: dict, payload: dict) -> None:
    """Files an @-mention read. It comes just before the user record it expands; on an error no prompt
    is sent, so the typed text is only here."""
    files = ", ".join(str(f) for f in payload.get("filesRead") or [])
    typed = payload.get("userText") if isinstance(payload.get("userText"), str) else None
    uuid = str(data["uuid"])
    if payload.get("status") == "error":
        if typed:
            reader.event(data, f"{uuid}:prompt", role="user", kind="text", text=typed, meta={"not_sent": True})
        reader.event(data, uuid, role="system", kind="meta", text=str(payload.get("message") or files),
                     meta={"subtype": "at_command", "status": "error"})
        return
    if typed:
        reader.state["pending_at"] = typed
    reader.event(data, uuid, role="system", kind="meta", text=f"read {files}" if files else "read files",
                 meta={"subtype": "at_command"})


def _rewind(reader: _Reader, data: dict, payload: dict) -> None:
    """The rewind record hangs off the record just before the user turn rewound to (its
    ``parentUuid``): that turn is the live one with the same parent, and it and everything filed after
    it are abandoned. Events of this batch are marked here; when that turn was read in an earlier
    batch, ``rewound_from`` names it (the abandoned run is from its event up to this one)."""
    point, turns = data.get("parentUuid"), reader.state.get("turns", [])
    found = next((i for i in range(len(turns) - 1, -1, -1) if turns[i][1] == point), None)
    first = turns[found][0] if found is not None else None
    if found is not None:
        del turns[found:]
        events = reader.batch.events
        start = next((i for i, e in enumerate(events) if e.uid.split(":")[0] == first), 0)
        for event in events[start:]:
            event.meta = {**(event.meta or {}), "rewound": True}
    if first is not None:  # events an earlier read committed are marked by the bank
        reader.batch.marks.append(Mark(reader.session_id, {"rewound": True}, since=str(first),
                                       until=str(data["uuid"])))
    count = payload.get("truncatedCount")
    reader.event(data, str(data["uuid"]), role="system", kind="meta",
                 text=f"conversation rewound ({count} items removed)" if count is not None else "conversation rewound",
                 meta={"subtype": "rewind", "rewound_from": first, "branch_point": point})


def _from_parent(reader: _Reader, data: dict, payload: dict) -> None:
    """A fork subagent's task (``agent_launch_prompt``), or a finished background task's notice."""
    text = payload.get("displayText")
    if isinstance(text, str) and text:
        launch = data.get("subtype") == "agent_launch_prompt"
        reader.event(data, str(data["uuid"]), role="system", kind="text" if launch else "meta", text=text,
                     meta={"from_agent": "parent", "input": "task"} if launch else {"subtype": data.get("subtype")})


def _session_fact(reader: _Reader, data: dict, payload: dict) -> None:
    """Its title; and daemon-era facts: who spawned the session, its model binding, what created it."""
    subtype, patch, title = data.get("subtype"), reader.patch, payload.get("customTitle")
    if subtype == "custom_title" and isinstance(title, str) and title.strip():
        # Records older than titleSource count as the user's own, as Qwen itself treats them.
        patch.offer_title(title.strip(), "ai" if payload.get("titleSource") == "auto" else "custom")
    elif subtype == "parent_session" and payload.get("parentSessionId"):
        patch.parent_native_id, patch.parent_kind = str(payload["parentSessionId"]), "subagent"
    elif subtype == "session_model" and isinstance(payload.get("modelId"), str) and payload["modelId"]:
        patch.model = payload["modelId"]
    elif subtype == "session_source" and payload.get("sourceType"):
        patch.note(source=payload["sourceType"])


def _turn_result(reader: _Reader, data: dict, payload: dict) -> None:
    state = payload.get("state")
    reader.turn("complete" if state == "completed" else "aborted")
    if state != "completed":
        error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
        reader.event(data, str(data["uuid"]), role="system", kind="meta",
                     text=f"turn {state}: {error['message']}" if error.get("message") else f"turn {state}",
                     meta={"subtype": "turn_result", "state": state})


HANDLERS: dict[str, Callable[[_Reader, dict], None]] = {
    "user": _user,
    "assistant": _assistant,
    "tool_result": _tool_result,
    "system": _system,
}

SYSTEM: dict[str, Callable[[_Reader, dict, dict], None]] = {
    "chat_compression": _compression,
    "slash_command": _slash_command,
    "at_command": _at_command,
    "custom_title": _session_fact,
    "rewind": _rewind,
    "agent_launch_prompt": _from_parent,
    "background_task_completed": _from_parent,
    "parent_session": _session_fact,
    "session_model": _session_fact,
    "session_source": _session_fact,
    "turn_result": _turn_result,
}


# -- the whole-document era (tmp/<hash>/chats/session-*.json) ---------------------------------
def _legacy_document(reader: _Reader, doc: dict) -> None:
    """``{sessionId, projectHash, startTime, lastUpdated, messages[]}``: the cwd only as its hash."""
    if doc.get("sessionId"):  # the file name holds only its first 8 characters
        reader.batch.sessions.clear()
        reader.session_id = str(doc["sessionId"])
        reader.patch = reader.batch.session(reader.session_id)
    reader.patch.started_at, reader.patch.updated_at = doc.get("startTime"), doc.get("lastUpdated")
    if doc.get("projectHash"):
        reader.patch.note(project_hash=doc["projectHash"])
    for message in doc.get("messages") or []:
        if isinstance(message, dict):
            _legacy_message(reader, message)


def _legacy_message(reader: _Reader, msg: dict) -> None:
    mtype, uid, content = msg.get("type"), str(msg.get("id")), msg.get("content")
    text = content if isinstance(content, str) else _text_of([p for p in content or [] if isinstance(p, dict)])
    if mtype == "user":
        reader.event(msg, uid, role="user", kind="text", text=text)
        reader.title(text)
        reader.turn("open")
        return
    if mtype in ("info", "error", "warning"):
        reader.event(msg, uid, role="system", kind="meta", text=text, meta={"level": mtype})
        return
    if mtype not in ("qwen", "gemini"):
        reader.drift(f"legacy message type={mtype!r}")
        return
    model = msg.get("model") if isinstance(msg.get("model"), str) else None
    reader.patch.model = model or reader.patch.model
    start = len(reader.batch.events)
    for i, thought in enumerate(t for t in msg.get("thoughts") or [] if isinstance(t, dict)):
        body = "\n".join(str(thought[k]) for k in ("subject", "description") if thought.get(k))
        reader.event(msg, f"{uid}:thought:{i}", role="assistant", kind="thinking", text=body, model=model)
    if text:
        reader.event(msg, uid, role="assistant", kind="text", text=text, model=model)
    calls = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)]
    for i, call in enumerate(calls):
        name, args, result = call.get("name"), call.get("args"), call.get("result")
        reader.event(msg, f"{uid}:call:{i}", role="assistant", kind="tool_call", text=render_call(name, args, _CALL_KEYS),
                     tool_name=name, tool_input=args, tool_call_id=call.get("id"), model=model)
        if result is not None:  # the function responses sent back, else the text the UI showed
            parts = [p for p in result if isinstance(p, dict)] if isinstance(result, list) else []
            output = "\n".join(_response_text(p["functionResponse"]) for p in parts
                                if isinstance(p.get("functionResponse"), dict)) or _plain(call.get("resultDisplay"))
            reader.event(msg, f"{uid}:result:{i}", role="tool", kind="tool_result", text=output, tool_name=name,
                         tool_call_id=call.get("id"), is_error=call.get("status") in ("error", "cancelled"))
    _usage(reader, start, msg.get("tokens"), _LEGACY_USAGE)
    reader.turn("open" if calls else "complete")


# -- helpers ---------------------------------------------------------------------------------
def _parts(data: dict) -> list[dict]:
    message = data.get("message") or {}
    parts = message.get("parts", []) if isinstance(message, dict) else None
    if not isinstance(parts, list):
        raise ValueError("message.parts is not a list")
    return [p for p in parts if isinstance(p, dict)]


def _text_of(parts: list[dict]) -> str:
    return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _response_text(response: dict) -> str:
    """A function response's text: ``{"output": ...}``, or ``{"error": ...}`` when the tool failed."""
    body = response.get("response") if isinstance(response.get("response"), dict) else {}
    return _plain(body["output"] if "output" in body else body.get("error", body.get("content")))


def _media_label(part: dict) -> str:
    blob = part.get("inlineData") or part.get("fileData")
    if isinstance(blob, dict):
        size = len(blob.get("data") or "") * 3 // 4
        return f"[{blob.get('mimeType') or 'file'}{f', {size} bytes' if size else ''}]"
    return f"[{next(iter(part), 'part')}]"


def _plain(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        return "\n".join(p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else _plain(p)
                         for p in value)
    return orjson.dumps(value).decode()


# (prompt incl. cached, cached, output, thoughts, total) as each era names them.
_GEMINI_USAGE = ("promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
                 "totalTokenCount")
_LEGACY_USAGE = ("input", "cached", "output", "thoughts", "total")


def _usage(reader: _Reader, start: int, raw: Any, keys: tuple[str, str, str, str, str]) -> None:
    """A response's usage, on its first event; the prompt count includes its cached part. The output includes the
    thoughts, as OpenAI counts reasoning (harvester/usage/harnesses.py): Qwen Code writes an OpenAI-compatible
    response's ``completion_tokens`` as the candidates and its ``reasoning_tokens`` as the thoughts (the total is
    prompt + candidates); where it talks to Gemini's API, the candidates leave the thoughts out (the total adds
    them), and they are added to the output."""
    if isinstance(raw, dict) and len(reader.batch.events) > start:
        prompt, cached, output, thoughts, total = (int(raw.get(k) or 0) for k in keys)
        if thoughts and total == prompt + output + thoughts:
            output += thoughts
        reader.batch.events[start].usage = Usage(input=max(prompt - cached, 0), cache_read=cached, output=output,
                                                 reasoning=thoughts)


