"""The pi family: pi, Prime Agent, oh-my-pi (omp) and OpenClaw's JSONL era, one JSONL tree format.

Format facts and their sources: ``fixtures/pi/<member>/SOURCE.md``. In short:

- A file is one session: a header (``type: session``, ``id``, ``cwd``, ``timestamp``, ``version`` 1-3,
  ``parentSession``: the parent's file path), then entries with ``id``/``parentId``/``timestamp``:
  ``message`` (roles in ``ROLES``; blocks ``text``/``thinking``/``toolCall``/``image``) and the kinds in
  ``TYPES``. Bookkeeping kinds (``BOOKKEEPING``) are skipped on purpose; any other type is drift.
- Branches live in the file: an entry whose parent is not the entry before it starts a new branch. All
  entries are kept in file order; those a new branch leaves behind get ``meta.abandoned`` (a ``Mark``,
  so stored events are marked too), and returning to a branch unmarks it (see ``_track``).
- /fork and /clone copy the parent's path into a new file (same ids, timestamps older than the new
  header): the copies are the parent's and are skipped; the fork is linked to its parent.
- Loading a v1/v2 file rewrites it as v3 (the core reads it again from the start). v2 entries keep
  their ids; v1 entries get random ids, so a v1-era entry is identified by its content (``_uid``).
- Members (stores: the ``*_roots`` functions in ``pi_roots``, and ``*_SOURCES``): pi; Prime Agent (RLM
  children in ``session-artifacts/``); oh-my-pi (a fixed-width title slot as line 1, subagents beside the
  session, a ``session_exit`` record when its process goes); OpenClaw before v2026.8.1, which moved its
  transcripts into SQLite.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and four agents
share this one tree format: the format facts above and the functions that read them stay side by side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Mark, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_objects, render_call
from harvester.parsers.pi_roots import omp_roots as omp_roots
from harvester.parsers.pi_roots import openclaw_roots as openclaw_roots
from harvester.parsers.pi_roots import pi_roots as pi_roots
from harvester.parsers.pi_roots import prime_roots as prime_roots

PI_NAME, PRIME_NAME, OMP_NAME, OPENCLAW_NAME = "pi", "prime-agent", "oh-my-pi", "openclaw"

# -- stores (the roots functions are in pi_roots: named here too, as harvester/parsers/__init__.py uses them)
_UUID = "????????-????-????-????-????????????"
PI_SOURCES = (SourceSpec("*/*.jsonl", "jsonl", "pi"), SourceSpec("*.jsonl", "jsonl", "pi"))
PRIME_SOURCES = (
    SourceSpec("*.jsonl", "jsonl", "prime"),
    SourceSpec("--*--/*.jsonl", "jsonl", "prime"),  # per-cwd folders of older releases (moved up on start)
    SourceSpec("*/**/sub-*/*.jsonl", "jsonl", "prime-rlm", ignore=("rlm-subagents.jsonl",)),
)
OMP_SOURCES = (SourceSpec("*/*.jsonl", "jsonl", "omp"), SourceSpec("*/*/**/*.jsonl", "jsonl", "omp-subagent"))
# UUID-shaped names: the folder also holds <id>.trajectory.jsonl and <id>.checkpoint.<uuid>.jsonl (not
# sessions); thread forks are named like pi's (<ts>_<uuid>.jsonl).
OPENCLAW_SOURCES = tuple(SourceSpec(f"*/sessions/{name}.jsonl", "jsonl", "openclaw")
                         for name in (_UUID, f"{_UUID}-topic-*", f"*_{_UUID}"))

# Executable names (each sets process.title) and package paths in a node command line.
PI_PROCESSES = ("pi", "@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent")
PRIME_PROCESSES = ("prime-agent",)
OMP_PROCESSES = ("omp", "@oh-my-pi/pi-coding-agent")
OPENCLAW_PROCESSES = ("openclaw", "openclaw-gateway", "openclaw-tui")

# Entries with nothing for a transcript: extension state and omp's tool-start markers (custom; omp's
# session_exit is read), Prime's usage folded into a parent message (the child sessions carry it
# themselves), omp's rule-injection and account-pin records.
BOOKKEEPING = frozenset({"custom", "child_usage_attributed", "ttsr_injection", "credential_pin"})
SIDE_ENTRIES = frozenset({"model_usage"})  # omp writes them beside the leaf without moving it
_PATH_KEPT, _OFF_KEPT = 2000, 1000  # branch bookkeeping kept in the cursor state
_MIGRATION_KEYS = frozenset({"id", "parentId", "firstKeptEntryId", "firstKeptEntryIndex"})
_FILE_STEM = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d-]+Z_(.+)$")  # <ISO time, ':' '.' as '-'>_<id>
_SKILL = re.compile(r'^<skill name="([^"]+)" location="[^"]+">\n[\s\S]*?\n</skill>(?:\n\n([\s\S]+))?$')
_FILE_ARG = re.compile(r'<file name="[^"]*">(?:\n[\s\S]*?\n)?</file>\n')
_ENVELOPE = re.compile(r"^\[([^\]\n]*?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}[^\]\n]*)\] ")
_TURN_AFTER = {"toolUse": "open", "deferred": "open", "aborted": "aborted", "error": "error"}  # stopReason
_NOT_SESSIONS = (".trajectory.jsonl", ".checkpoint.")  # OpenClaw sidecars the topic glob could match
_PROMPTS = ("user", "bashExecution", "pythonExecution")  # what the user typed


# A tool call's line shows the first of these arguments that holds text (render_call).
_CALL_KEYS = ("command", "path", "file_path", "pattern", "url", "query", "code", "task", "description")


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref, self.state, self.line = ref, state, 0
        self.member = ref.variant.split("-")[0]
        self.batch = Batch(state=state)
        self.session_id: str = state.get("session") or _id_from_path(ref)
        self.patch: SessionPatch = self.batch.session(self.session_id)

    def event(self, data: dict, uid: str, **fields: Any) -> None:
        ts = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
        self.batch.events.append(Event(self.session_id, uid, ts=ts, **fields))

    def say(self, data: dict, uid: str, text: str, kind: str = "meta", usage: Any = None,
            **meta: Any) -> None:
        """A system event: the agent's own notices (meta) or text it put into the model's context."""
        meta = {k: v for k, v in meta.items() if v is not None and v is not False}
        self.event(data, uid, role="system", kind=kind, text=text, usage=_usage(usage),
                   meta=meta or None)

    def turn(self, state: str) -> None:
        """Whether the last turn finished: the service tells an abandoned session from an ended one by it."""
        if self.state.get("last_turn") != state:
            self.state["last_turn"] = state
            self.patch.note(last_turn=state)

    def drift(self, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def title(self, text: Any, source: str) -> None:
        if isinstance(text, str) and text.strip():
            line = text.strip().splitlines()[0]
            self.patch.offer_title(line if len(line) <= 80 else line[:79] + "…", source)


def _id_from_path(ref: SourceRef) -> str:
    """The header's id is the session's; until it is read, the file name's. An omp subagent is named by
    its place, ``<root session>:<agent>[/<agent>...]`` (its header id is referenced nowhere)."""
    if ref.variant == "omp-subagent":
        parts = ref.path.relative_to(ref.root).parts
        return _FILE_STEM.sub(r"\1", parts[1]) + ":" + "/".join([*parts[2:-1], ref.path.stem])
    return _FILE_STEM.sub(r"\1", ref.path.stem)


def _parent_id(value: str) -> str:
    """``parentSession`` is the parent's file path (an id in some omp versions)."""
    if "/" not in value and "\\" not in value and not value.endswith(".jsonl"):
        return value
    name = PurePath(value.replace("\\", "/")).name
    return _FILE_STEM.sub(r"\1", name[:-6] if name.endswith(".jsonl") else name)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.variant == "openclaw" and any(s in ref.path.name for s in _NOT_SESSIONS):
        return reader.batch  # a sidecar, not a session (see OPENCLAW_SOURCES)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            _entry(reader, data, record.raw)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line, f"unexpected shape: {describe_error(exc)}"))
    reader.state["session"] = reader.session_id
    return reader.batch


def _entry(reader: _Reader, data: dict, raw: bytes) -> None:
    kind, state, patch = data.get("type"), reader.state, reader.patch
    if kind == "session":
        _header(reader, data)
        return
    if kind == "title" and data.get("v") == 1:  # omp's title slot, rewritten in place on renames
        state["slot"] = True
        reader.title(data.get("title"), "ai" if data.get("source") == "auto" else "custom")
        return
    ts = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
    if ts and state.get("copies_before") and ts < state["copies_before"]:
        state["copied"] = state.get("copied", 0) + 1  # copied from the parent by /fork: the parent holds it
        patch.note(copied_records=state["copied"])
        _track(reader, data)
        return
    if ts:
        if not state.get("started"):  # no header (it is the first line): the first entry's time
            state["started"], patch.started_at = True, ts
        patch.updated_at = ts
    uid = _uid(reader, data, raw)
    branched_from = _track(reader, data)
    if state.get("exited") and kind == "message" and data["message"].get("role") in _PROMPTS:
        del state["exited"]  # a prompt after omp's exit record (not its teardown's aborted reply): resumed
        patch.state = "live"
    if kind == "custom" and data.get("customType") == "session_exit":
        _session_exit(reader, data, uid)
        return
    if kind in BOOKKEEPING:
        return
    handler = TYPES.get(kind) if isinstance(kind, str) else None
    if handler is None:
        reader.drift(f"type={kind!r}")
        return
    start = len(reader.batch.events)
    handler(reader, data, uid)
    if branched_from and len(reader.batch.events) > start:
        first = reader.batch.events[start]
        first.meta = {**(first.meta or {}), "branched_from": branched_from}


def _header(reader: _Reader, data: dict) -> None:
    state, ref = reader.state, reader.ref
    sid = data.get("id")
    if isinstance(sid, str) and sid and ref.variant != "omp-subagent" and sid != reader.session_id:
        reader.batch.sessions.pop(reader.session_id, None)
        reader.session_id, reader.patch = sid, reader.batch.session(sid)
    patch = reader.patch
    # v1 headers have no version; the migration adds it last (JS keeps insertion order), native ones 2nd.
    state["v1"] = "version" not in data or list(data)[1] != "version"
    patch.note(format_version=data.get("version", 1))
    if isinstance(data.get("cwd"), str) and data["cwd"]:
        patch.cwd = data["cwd"]
    if isinstance(data.get("timestamp"), str):
        patch.started_at, state["started"] = data["timestamp"], True
    model = data.get("modelId") or data.get("model")  # early v1 headers named the model ("provider/id")
    if isinstance(model, str) and model:
        patch.model = model.rpartition("/")[2]
    parent = data.get("parentSession") or data.get("branchedFrom")  # branchedFrom: v1's name for it
    if ref.variant == "omp-subagent":
        own = reader.session_id
        patch.parent_native_id = own.rsplit("/", 1)[0] if "/" in own else own.split(":", 1)[0]
        patch.parent_kind = "subagent"
    elif isinstance(parent, str) and parent:
        child = ref.variant == "prime-rlm" or (isinstance(data.get("rlmDepth"), int) and data["rlmDepth"] > 0)
        patch.parent_native_id, patch.parent_kind = _parent_id(parent), "subagent" if child else "fork"
        state["copies_before"] = data.get("timestamp")
    if reader.member == "prime":
        patch.note(rlm_depth=data.get("rlmDepth", 0))
        _git(reader, data.get("git"))
    elif reader.member == "omp":  # the title slot, when there is one, is newer than the header's title
        if not state.get("slot"):
            reader.title(data.get("title"), "ai" if data.get("titleSource") == "auto" else "custom")
        if data.get("additionalDirectories"):
            patch.note(additional_directories=data["additionalDirectories"])
    elif reader.member == "openclaw":
        patch.note(agent=ref.path.parent.parent.name)


def _uid(reader: _Reader, data: dict, raw: bytes) -> str:
    """The entry's own id. A v1-era entry has none, or a random one its migration appended after its
    other keys: its identity is then a hash of the entry without the keys migration adds (and with the
    role migration renames), chained to the previous one so identical lines at two places stay apart."""
    eid, state = data.get("id"), reader.state
    keys = list(data)
    migrated = isinstance(eid, str) and "timestamp" in keys and keys.index("timestamp") < keys.index("id")
    if state.get("v1") and (not isinstance(eid, str) or migrated):
        canon = {k: v for k, v in data.items() if k not in _MIGRATION_KEYS}
        message = canon.get("message")
        if isinstance(message, dict) and message.get("role") == "hookMessage":
            canon["message"] = {**message, "role": "custom"}
        uid = state["prev_hash"] = record_uid(orjson.dumps(canon), context=state.get("prev_hash"))
        if isinstance(eid, str):  # branch marks name entries by id: remember which uid an id stands for
            aliases = state.setdefault("alias", {})
            aliases[eid] = uid
            if len(aliases) > _PATH_KEPT:  # one in, one out
                aliases.pop(next(iter(aliases)))
        return uid
    return eid if isinstance(eid, str) and eid else record_uid(raw, context=state.get("prev_hash"))


def _track(reader: _Reader, data: dict) -> str | None:
    """Follow the current branch. When this entry starts a new one, mark the entries the old branch
    leaves behind (and unmark a branch returned to) and return the entry it branches from."""
    eid, state = data.get("id"), reader.state
    if not isinstance(eid, str) or data.get("type") in SIDE_ENTRIES:
        return None
    parent = data.get("parentId") if isinstance(data.get("parentId"), str) else None
    path: list[str] = state.setdefault("path", [])
    off: dict[str, str | None] = state.setdefault("off", {})  # entries of left branches -> their parent
    if not path or (parent is not None and parent == path[-1]):
        path.append(eid)
        del path[:-_PATH_KEPT]
        return None
    index = {x: i for i, x in enumerate(path)}
    chain, node = [], parent
    while node is not None and node not in index and node in off and len(chain) <= len(off):
        chain.append(node)
        node = off[node]
    k = index.get(node, -1) if node is not None else -1  # -1: a new root, or beyond what is kept
    left = path[k + 1:]
    for i, x in enumerate(left):
        off[x] = path[k + i] if k + i >= 0 else None
    for x in chain:
        off.pop(x, None)
    while len(off) > _OFF_KEPT:
        off.pop(next(iter(off)))
    state["path"] = [*path[:k + 1], *chain[::-1], eid][-_PATH_KEPT:]
    aliases = state.get("alias", {})
    for ids, value in ((left, True), (chain, None)):  # json_patch: null removes the key again
        if ids:
            reader.batch.marks.append(Mark(reader.session_id, {"abandoned": value},
                                           tuple(aliases.get(x, x) for x in ids)))
    return parent or "root"


# -- messages -------------------------------------------------------------------------------
def _message(reader: _Reader, data: dict, uid: str) -> None:
    message = data["message"]
    handler = ROLES.get(message.get("role"))
    if handler is None:
        reader.drift(f"message role={message.get('role')!r}")
        return
    handler(reader, data, uid, message)


def _user(reader: _Reader, data: dict, uid: str, msg: dict) -> None:
    blocks = _blocks(msg.get("content"))
    # Prompts the agent sent itself: another agent's (omp's attribution, OpenClaw's inter-session
    # provenance), or automatic ones (omp's synthetic continuations, OpenClaw's internal system input).
    source = msg.get("provenance") if isinstance(msg.get("provenance"), dict) else {}
    agent = msg.get("attribution") == "agent" or source.get("kind") == "inter_session"
    if agent or msg.get("synthetic") or source.get("kind") == "internal_system":
        meta = {"from_agent": source.get("sourceSessionKey") or "parent"} if agent else {"injected": True}
        reader.say(data, uid, _plain(blocks), "text", **meta, synthetic=msg.get("synthetic"))
        reader.turn("open")
        return
    words: list[str] = []
    context: list[str] = []
    meta: dict[str, Any] = {}
    for block in blocks:
        text = block.get("text") or "" if block.get("type") == "text" else None
        if text is None:
            words.append(_label(block))
            continue
        skill = _SKILL.match(text)
        if skill:  # /skill:<name> [args], expanded into the skill file's body
            args = skill.group(2)
            words.append(f"/skill:{skill.group(1)}" + (f" {args.strip()}" if args else ""))
            context.append(text[: skill.start(2) - 2] if args else text)
            meta["skill"] = skill.group(1)
            continue
        context += _FILE_ARG.findall(text)  # `pi @file "prompt"`: the files' contents come first
        text = _FILE_ARG.sub("", text)
        envelope = _ENVELOPE.match(text) if reader.member == "openclaw" else None
        if envelope:  # "[Telegram Alice +1555 2026-02-18 11:21 GMT+1] ": the gateway's stamp
            meta["envelope"] = envelope.group(1)
            text = text[envelope.end():]
        if text.strip():
            words.append(text)
    if words:
        reader.event(data, uid, role="user", kind="text", text="\n".join(words), meta=meta or None)
        if not reader.state.get("titled"):
            reader.state["titled"] = True
            reader.title("\n".join(words), "first-prompt")
    if context:
        reader.say(data, f"{uid}:context", "\n".join(context), "text", injected=True)
    reader.turn("open")


def _assistant(reader: _Reader, data: dict, uid: str, msg: dict) -> None:
    model, stop = msg.get("model"), msg.get("stopReason")
    if msg.get("provider") == "openclaw":  # OpenClaw's delivery mirrors and injected notes: not the model
        reader.say(data, uid, _plain(_blocks(msg.get("content"))), synthetic=model)
        return
    if isinstance(model, str) and model:
        reader.patch.model = model
    blocks, start = _blocks(msg.get("content")), len(reader.batch.events)
    for i, block in enumerate(blocks):
        bid, btype = uid if len(blocks) == 1 else f"{uid}:{i}", block.get("type")
        if btype in ("text", "thinking", "redactedThinking"):
            text = block.get(btype) if not block.get("redacted") else None  # omp: redactedThinking blocks
            reader.event(data, bid, role="assistant", kind="text" if btype == "text" else "thinking",
                         text=text or ("" if btype == "text" else "[redacted thinking]"), model=model)
        elif btype == "toolCall":
            name, args = block.get("name"), block.get("arguments")
            reader.event(data, bid, role="assistant", kind="tool_call", text=render_call(name, args, _CALL_KEYS),
                         tool_name=name, tool_input=args, tool_call_id=block.get("id"), model=model)
        else:
            reader.event(data, bid, role="assistant", kind="meta", text=_label(block), model=model,
                         meta={"block": btype})
    if len(reader.batch.events) > start:
        reader.batch.events[start].usage = _usage(msg.get("usage"))
    if stop in ("error", "aborted") and msg.get("errorMessage"):
        reader.say(data, f"{uid}:error", f"{stop}: {msg['errorMessage']}", stop_reason=stop)
    reader.turn(_TURN_AFTER.get(stop, "complete"))


def _tool_result(reader: _Reader, data: dict, uid: str, msg: dict) -> None:
    reader.event(data, uid, role="tool", kind="tool_result", text=_plain(_blocks(msg.get("content"))),
                 tool_name=msg.get("toolName"), tool_call_id=msg.get("toolCallId"),
                 is_error=bool(msg.get("isError")))
    reader.turn("open")


def _execution(reader: _Reader, data: dict, uid: str, msg: dict) -> None:
    """A command the user ran (``!cmd``, ``!!cmd`` outside the model's context, omp's Python cells)."""
    python, excluded = msg.get("role") == "pythonExecution", bool(msg.get("excludeFromContext"))
    typed = msg.get("code") if python else ("!!" if excluded else "!") + str(msg.get("command") or "")
    reader.event(data, f"{uid}:0", role="user", kind="text", text=str(typed or ""),
                 meta={"python" if python else "bash": True})
    code, cancelled = msg.get("exitCode"), bool(msg.get("cancelled"))
    reader.event(data, f"{uid}:1", role="tool", kind="tool_result", text=str(msg.get("output") or ""),
                 tool_name="python" if python else "bash", is_error=cancelled or code not in (0, None),
                 meta={"exit_code": code, "cancelled": cancelled, "excluded": excluded})


def _custom(reader: _Reader, data: dict, uid: str, msg: dict | None = None) -> None:
    """Text an extension, the agent (omp's developer role, @-file contents) or another agent (Prime's
    agent messages) put into the model's context: never the user's words."""
    msg = data if msg is None else msg
    details = msg.get("details") if isinstance(msg.get("details"), dict) else {}
    ctype, files = msg.get("customType"), [f for f in msg.get("files") or [] if isinstance(f, dict)]
    if ctype == "agent_message" and isinstance(details.get("message"), str):
        relation = details.get("fromRelationship") or "agent"
        reader.say(data, uid, details["message"], "text", from_agent=relation, custom_type=ctype)
    elif files:
        text = "\n".join(f"<file path=\"{f.get('path')}\">\n{f.get('content') or ''}\n</file>" for f in files)
        reader.say(data, uid, text, "text", injected=True, file_mention=[f.get("path") for f in files])
    else:
        reader.say(data, uid, _plain(_blocks(msg.get("content"))), "text", injected=True, custom_type=ctype,
                   developer=msg.get("role") == "developer", display=msg.get("display"))


def _system_message(reader: _Reader, data: dict, uid: str, msg: dict) -> None:
    """pi's prompt and tool loadout (all of it first, patches later). The sections are pi's built-in
    prompt, the same in every session: their names and the tool changes are kept, not their text."""
    sections = msg.get("sections") if isinstance(msg.get("sections"), dict) else {}
    parts = [_plain(_blocks(msg.get("content")))] if msg.get("content") else []
    if sections:
        parts.append("sections: " + ", ".join(k if v is not None else f"-{k}" for k, v in sections.items()))
    for key, sign in (("toolsAdded", "+"), ("toolsRemoved", "-")):
        names = [str(t.get("name")) for t in msg.get(key) or [] if isinstance(t, dict)]
        if names:
            parts.append(f"tools {sign}" + f", {sign}".join(names))
    reader.say(data, uid, "\n".join(parts) or "system prompt", system_prompt=True)


ROLES: dict[Any, Callable[[_Reader, dict, str, dict], None]] = {
    "user": _user,
    "assistant": _assistant,
    "toolResult": _tool_result,
    "bashExecution": _execution,
    "pythonExecution": _execution,  # omp
    "custom": _custom,
    "hookMessage": _custom,  # v2's name of custom (renamed by the v3 migration)
    "developer": _custom,  # omp
    "fileMention": _custom,  # omp
    "system": _system_message,  # pi 1.x
}  # branchSummary / compactionSummary are built from entries for the model, never stored as messages


# -- other entries ---------------------------------------------------------------------------
def _noted(label: str, field: str) -> Callable[[_Reader, dict, str], None]:
    """Small records worth a line in the transcript (a thinking level, a service tier, a mode)."""
    def handler(reader: _Reader, data: dict, uid: str) -> None:
        value = data.get(field)
        text = value if isinstance(value, str) or value is None else orjson.dumps(value).decode()
        reader.say(data, uid, f"{label}: {text or 'off'}", record=data.get("type"))
    return handler


def _model_change(reader: _Reader, data: dict, uid: str) -> None:
    model, provider, role = data.get("modelId"), data.get("provider"), data.get("role")
    if model is None and isinstance(data.get("model"), str):  # omp: "provider/id", and a role
        provider, _, model = data["model"].rpartition("/")
    if isinstance(model, str) and model and role in (None, "default"):
        reader.patch.model = model
    reader.say(data, uid, f"model: {f'{provider}/' if provider else ''}{model}", record="model_change",
               **({"role": role} if role else {}))


def _compaction(reader: _Reader, data: dict, uid: str) -> None:
    before = data.get("tokensBefore")
    reader.say(data, uid, data.get("summary") or f"conversation compacted ({before} tokens)", "compaction",
               data.get("usage"), tokens_before=before, tokens_after=data.get("tokensAfter"),
               first_kept=data.get("firstKeptEntryId"), method=data.get("method"),  # omp: soft, handoff...
               from_hook=bool(data.get("fromHook") or data.get("fromExtension")))


def _branch_summary(reader: _Reader, data: dict, uid: str) -> None:
    """The model's summary of the branch the user left, put into the new branch's context."""
    reader.say(data, uid, data.get("summary") or "", "text", data.get("usage"), branch_summary=True,
               from_id=data.get("fromId"), injected=True)


def _usage_entry(reader: _Reader, data: dict, uid: str) -> None:
    """Model calls outside the conversation (pi's cache warming, omp's side calls): their tokens count."""
    purpose = data.get("kind") or data.get("purpose")
    reader.say(data, uid, f"usage ({purpose}): {data.get('provider')}/{data.get('model')}", "meta",
               data.get("usage"), record=data.get("type"), purpose=purpose)


def _context_edit(reader: _Reader, data: dict, uid: str) -> None:
    """An earlier entry left out of (or replaced in) the model's later context; the entry itself stays."""
    target, how = data.get("targetId"), "omitted" if data.get("replacement") is None else "replaced"
    if isinstance(target, str):
        target_uid = reader.state.get("alias", {}).get(target, target)
        reader.batch.marks.append(Mark(reader.session_id, {"context_edit": how}, (target_uid,)))
    reader.say(data, uid, f"context edit: {target} {how}", record="context_edit", target=target)


def _session_state(reader: _Reader, data: dict, uid: str) -> None:
    """Prime's daemon: ``active`` while it holds the session, ``archived`` (``sleep``) once closed."""
    status = (data.get("state") or {}).get("status")
    reader.patch.note(session_status=status)
    if status in ("archived", "sleep", "crash"):
        reader.patch.state = "abandoned" if status == "crash" else "ended"


def _git(reader: _Reader, git: Any) -> None:
    if isinstance(git, dict) and any(git.get(k) for k in ("branch", "commit", "repoUrl")):
        reader.patch.git = GitFacts(git.get("branch"), git.get("commit"), git.get("repoUrl"))


def _session_exit(reader: _Reader, data: dict, uid: str) -> None:
    """omp's record of its process going away: ``normal`` (disposed), ``signal``, ``fatal`` or
    ``process_exit``, with the tool calls left without a result. Like omp itself, a turn counts as
    interrupted only after an abnormal exit or with calls pending; a clean exit is the session's end."""
    info = data.get("data") if isinstance(data.get("data"), dict) else {}
    kind = info.get("kind")
    pending = [str(p.get("toolName")) for p in info.get("pendingToolCalls") or [] if isinstance(p, dict)]
    interrupted = kind != "normal" or bool(pending)
    reader.state["exited"] = True
    reader.patch.state = "abandoned" if interrupted and reader.state.get("last_turn") == "open" else "ended"
    if interrupted:
        text = f"process exit ({kind}: {info.get('reason')})" + (f"; tools left running: {', '.join(pending)}"
                                                                 if pending else "")
        reader.say(data, uid, text, record="session_exit", exit_kind=kind)


def _session_init(reader: _Reader, data: dict, uid: str) -> None:
    """An omp subagent's definition; its task arrives as the next (agent-attributed) prompt."""
    task = data.get("task") if isinstance(data.get("task"), str) else ""
    reader.title(": ".join(x for x in (data.get("agent"), task.strip()) if x), "summary")
    reader.patch.note(agent=data.get("agent"), tools=data.get("tools"))


TYPES: dict[str, Callable[[_Reader, dict, str], None]] = {
    "message": _message,
    "model_change": _model_change,
    "thinking_level_change": _noted("thinking level", "thinkingLevel"),
    "service_tier_change": _noted("service tier", "serviceTier"),  # Prime, omp
    "mode_change": _noted("mode", "mode"),  # omp (plan mode...)
    "compaction": _compaction,
    "branch_summary": _branch_summary,
    "custom_message": _custom,
    "label": lambda r, d, u: r.say(d, u, f"label: {d.get('label') or '(cleared)'}", record="label",
                                   target=d.get("targetId")),
    "session_info": lambda r, d, u: r.title(d.get("name"), "custom"),  # /name
    "usage": _usage_entry,  # pi 1.x
    "model_usage": _usage_entry,  # omp
    "context_edit": _context_edit,  # pi 0.87+
    "title_change": lambda r, d, u: r.title(d.get("title"), "ai" if d.get("source") == "auto" else "custom"),
    "session_init": _session_init,  # omp subagents
    "reset_boundary": lambda r, d, u: r.say(d, u, "context cleared (/clear)", record="reset_boundary"),  # omp
    "session_state": _session_state,  # Prime
    "agent_status": lambda r, d, u: r.patch.note(agent_status=(d.get("status") or {}).get("summary"),
                                                 task_state=(d.get("status") or {}).get("taskState")),
    "git_state": lambda r, d, u: _git(r, d.get("git")),  # Prime
}


# -- helpers ---------------------------------------------------------------------------------
def _blocks(content: Any) -> list[dict]:
    if content is None or isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise ValueError("content is neither text nor a list of blocks")
    return [b for b in content if isinstance(b, dict)]


def _plain(blocks: list[dict]) -> str:
    # Text blocks (OpenClaw's tool results also have "toolResult" blocks with text); others are named.
    return "\n".join((b.get("text") or "") if b.get("type") in ("text", "toolResult") else _label(b)
                     for b in blocks)


def _label(block: dict) -> str:
    if block.get("type") == "image":
        size = len(block.get("data") or "") * 3 // 4
        return f"[{block.get('mimeType') or 'image'}{f', {size} bytes' if size else ''}]"
    return f"[{block.get('type')} block]"


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    usage = Usage(input=int(raw.get("input") or 0), output=int(raw.get("output") or 0),
                  cache_read=int(raw.get("cacheRead") or 0), cache_write=int(raw.get("cacheWrite") or 0),
                  # part of output; pi names it reasoning, omp reasoningTokens
                  reasoning=int(raw.get("reasoning") or raw.get("reasoningTokens") or 0))
    return usage if usage.as_dict() else None


