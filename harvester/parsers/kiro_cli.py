"""Kiro CLI (AWS, ``kiro-cli``): three stores, one per agent engine (``--agent-engine v1|v2|v3``).

Format facts and their sources: ``fixtures/kiro_cli/SOURCE.md``. Kiro CLI is closed source (the
open-source Amazon Q Developer CLI it grew from is not): every fact comes from third-party readers of
real stores and from recordings of real sessions. In short:

- v2: ``$KIRO_HOME/sessions/cli/<uuid>.jsonl`` (default ``~/.kiro``), one line per message
  ``{version: "v1", kind, data}``: ``Prompt`` (``content`` blocks ``{kind: "text", data}``, ``meta.timestamp``
  in epoch seconds), ``AssistantMessage`` (``text`` and ``toolUse`` blocks ``{toolUseId, name, input}``),
  ``ToolResults`` (``toolResult`` blocks ``{toolUseId, content: [{kind: "json"|"text", data}], status}``) and
  ``Clear`` (``/clear``: the context is reset, the file goes on). A whole turn is written at its end, never
  streamed: a turn killed midway leaves nothing. The sidecar ``<uuid>.json`` holds ``session_id``, ``cwd``,
  ``title``, ``created_at``/``updated_at``, ``session_created_reason`` and ``parent_session_id`` (``/rewind``
  forks a new session that starts with a copy of the parent's messages, their ids included) and
  ``session_state`` (the model, and per turn its end and how it ended).
- v3 (KAS, the default engine since about 2.21): ``$KIRO_HOME/sessions/<workspace>/sess_<id>/messages.jsonl``
  (``{timestamp, payload: {type, ...}}``) + ``session.json``; known from one reader only.
- v1 (legacy, the Amazon Q lineage): ``data.sqlite3`` in ``kiro-cli`` under the data-local directory; read in
  :mod:`harvester.parsers.kiro_cli_db`.

The family's other member, Amazon Q Developer CLI (``amazon-q``, ``q chat``; ``fixtures/amazon_q/SOURCE.md``),
keeps only that database, in ``amazon-q`` under the same data-local directory: a folder of its own, so no file
is read under both harnesses. Kiro may copy it into ``kiro-cli`` at its first start (UNCONFIRMED, see
SOURCE.md): the copy is then Kiro's file and the original Amazon Q's, each read once, under its own harness.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch
from harvester.parsers import kiro_cli_db
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

NAME = "kiro-cli"
# `kiro-cli chat` keeps the name kiro-cli; the headless chat binary is kiro-cli-chat.
PROCESSES = ("kiro-cli", "kiro-cli-chat", "kiro-cli.exe", "kiro-cli-chat.exe")

_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task")
KINDS = frozenset({"Prompt", "AssistantMessage", "ToolResults", "Clear"})
PROMPT_BLOCKS = frozenset({"text", "image"})
ASSISTANT_BLOCKS = frozenset({"text", "toolUse", "reasoning"})
# v3 payload types (aws-bench's reader): what each carries is below; others are drift.
V3_TYPES = frozenset({"user", "assistant", "tool_call", "tool_result", "usage_summary"})
_TOOLS_KEPT = 64  # call ids -> tool names carried in the state, for results read in a later call
ROUTING_MODELS = frozenset({"auto"})  # Kiro's own routing label, not a model


AMAZON_Q_NAME = "amazon-q"
# `q chat` runs the chat binary qchat (crates/chat-cli util/consts.rs: CLI_BINARY_NAME "q", CHAT_BINARY_NAME
# "qchat"); the delegate tool starts its agents as `q chat --non-interactive` children.
AMAZON_Q_PROCESSES = ("q", "qchat", "q.exe", "qchat.exe")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    # $KIRO_HOME moves ~/.kiro, sessions included (Kiro's docs, quoted by Irrlicht's adapter); a relative
    # value cannot be resolved from here and is ignored.
    override = Path((env.get("KIRO_HOME") or "").strip()).expanduser()
    out = [override if override.is_absolute() else home / ".kiro"]
    data = _data_local(platform, env, home)
    if platform == "win32":  # %LOCALAPPDATA% by the code; one reader says %APPDATA%: both
        data.append(Path(env.get("APPDATA") or home / "AppData" / "Roaming"))
    return [*out, *(base / "kiro-cli" for base in data)]


def amazon_q_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return amazon_q_roots_for(sys.platform, env, home)


def amazon_q_roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    # GlobalPaths::database_path_static: dirs::data_local_dir()/amazon-q/data.sqlite3, no variable moves it
    # (Q_CLI_DATA_DIR is read only by the agent crate's data_dir, whose database_path nothing calls).
    return [base / "amazon-q" for base in _data_local(platform, env, home)]


def _data_local(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """Rust's dirs::data_local_dir(): %LOCALAPPDATA%, ~/Library/Application Support, $XDG_DATA_HOME (when
    absolute) or ~/.local/share."""
    if platform == "win32":
        return [Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")]
    if platform == "darwin":
        return [home / "Library" / "Application Support"]
    xdg = Path((env.get("XDG_DATA_HOME") or "").strip())
    return [xdg if xdg.is_absolute() else home / ".local" / "share"]


def _meta_of(path: PurePath) -> PurePath:
    return path.with_suffix(".json")


def _session_of(path: PurePath) -> PurePath:
    return path.with_name("session.json")


SOURCES = (
    SourceSpec("sessions/cli/*.jsonl", "jsonl", "v2", sidecar=_meta_of),
    SourceSpec("sessions/*/sess_*/messages.jsonl", "jsonl", "v3", sidecar=_session_of),
    SourceSpec("data.sqlite3", "sqlite", "db", watch=False, queries=kiro_cli_db.QUERIES),
)
AMAZON_Q_SOURCES = (
    SourceSpec("data.sqlite3", "sqlite", "db", watch=False, queries=kiro_cli_db.AMAZON_Q_QUERIES),
)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.batch = Batch(state=state)  # append-only: a line is never rewritten
        self.state = state
        self.tools: dict[str, str] = dict(state.get("tools") or {})
        self.line = 0
        self.ends: dict[str, str] = {}  # message id -> when its turn ended (v2 sidecar)
        meta = _object(ref.sidecar)
        self.sid = ref.path.stem if ref.variant == "v2" else ref.path.parent.name
        if ref.variant == "v2":
            self._v2_meta(meta)
        else:
            self._v3_meta(meta)

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, **fields: Any) -> Event:
        event = Event(self.sid, uid, **fields)
        self.batch.events.append(event)
        return event

    def problem(self, kind: Any, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))

    def _v2_meta(self, meta: dict) -> None:
        if isinstance(meta.get("session_id"), str) and meta["session_id"]:
            self.sid = meta["session_id"]
        patch = self.patch
        patch.cwd = _text(meta.get("cwd"))
        patch.started_at = iso_text(meta.get("created_at"))
        patch.updated_at = iso_text(meta.get("updated_at"))
        if title := _text(meta.get("title")):
            patch.offer_title(title.strip().splitlines()[0][:80], "first-prompt")  # the first prompt, cut
        parent = _text(meta.get("parent_session_id"))
        reason = _text(meta.get("session_created_reason"))
        if parent and parent != self.sid:
            patch.parent_native_id, patch.parent_kind = parent, "fork" if reason == "rewind" else "subagent"
        if reason:
            patch.note(created_reason=reason)
        state = meta.get("session_state") if isinstance(meta.get("session_state"), dict) else {}
        rts = state.get("rts_model_state") if isinstance(state.get("rts_model_state"), dict) else {}
        info = rts.get("model_info") if isinstance(rts.get("model_info"), dict) else {}
        model = _text(info.get("model_id"))
        if model and model not in ROUTING_MODELS:
            patch.model = model
        conversation = state.get("conversation_metadata")
        turns = conversation.get("user_turn_metadatas") if isinstance(conversation, dict) else None
        for turn in turns if isinstance(turns, list) else ():
            if not isinstance(turn, dict) or not isinstance(turn.get("message_ids"), list):
                continue
            end = iso_text(turn.get("end_timestamp"))
            for message_id in turn["message_ids"]:
                if end and isinstance(message_id, str):
                    self.ends[message_id] = end
            if isinstance(turn.get("end_reason"), str):
                patch.note(last_end_reason=turn["end_reason"])

    def _v3_meta(self, meta: dict) -> None:
        if isinstance(meta.get("id"), str) and meta["id"]:
            self.sid = meta["id"]
        patch = self.patch
        patch.updated_at = iso_text(meta.get("lastModifiedAt")) or iso_ms(meta.get("lastModifiedAt"))
        model = _text(meta.get("modelId"))
        if model and model not in ROUTING_MODELS:
            patch.model = model


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == "db":
        return kiro_cli_db.parse(ref, records, state)
    reader = _Reader(ref, state)
    handle = _v2 if ref.variant == "v2" else _v3
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        try:
            handle(reader, data, record)
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as exc:
            reader.problem("malformed", f"record of unexpected shape: {describe_error(exc)}")
    reader.batch.state = {**state, "tools": dict(list(reader.tools.items())[-_TOOLS_KEPT:])}
    return reader.batch


def _v2(reader: _Reader, data: dict, record: Record) -> None:
    kind = data.get("kind")
    if kind not in KINDS:
        reader.problem("unknown_type", f"kind={kind!r}")
        return
    body = data.get("data") if isinstance(data.get("data"), dict) else {}
    uid = _text(body.get("message_id")) or f"line:{record.line}"
    blocks = body.get("content") if isinstance(body.get("content"), list) else []
    if kind == "Clear":
        reader.emit(uid, role="system", kind="meta", text="context cleared (/clear)", meta={"kind": "Clear"})
        reader.patch.note(last_turn="complete")
    elif kind == "Prompt":
        meta = body.get("meta") if isinstance(body.get("meta"), dict) else {}
        ts = _seconds(meta.get("timestamp"))
        texts = []
        for block in blocks:
            block_kind = block.get("kind") if isinstance(block, dict) else None
            if block_kind not in PROMPT_BLOCKS:
                reader.problem("unknown_type", f"Prompt block kind={block_kind!r}")
            elif block_kind == "text" and isinstance(block.get("data"), str):
                texts.append(block["data"])
        if any(t.strip() for t in texts):
            reader.emit(uid, role="user", kind="text", text="\n\n".join(texts), ts=ts)
        reader.patch.note(last_turn="open")
    elif kind == "AssistantMessage":
        _v2_assistant(reader, uid, blocks)
    else:
        _v2_results(reader, uid, blocks)


def _v2_assistant(reader: _Reader, uid: str, blocks: list) -> None:
    ts = reader.ends.get(uid)
    calls = 0
    for index, block in enumerate(blocks):
        block_kind = block.get("kind") if isinstance(block, dict) else None
        if block_kind not in ASSISTANT_BLOCKS:
            reader.problem("unknown_type", f"AssistantMessage block kind={block_kind!r}")
            continue
        payload = block.get("data")
        if block_kind in ("text", "reasoning"):
            if isinstance(payload, str) and payload.strip():
                reader.emit(f"{uid}:{index}", role="assistant", kind="text" if block_kind == "text" else "thinking",
                            text=payload, ts=ts, model=reader.patch.model)
            continue
        if not isinstance(payload, dict):
            reader.problem("malformed", "toolUse block without data")
            continue
        call_id, name = _text(payload.get("toolUseId")) or f"{uid}#{index}", payload.get("name")
        tool_input = payload.get("input")
        if isinstance(name, str):
            reader.tools[call_id] = name
        calls += 1
        reader.emit(f"{uid}:call:{call_id}", role="assistant", kind="tool_call", ts=ts,
                    text=render_call(name, tool_input, _CALL_KEYS), tool_name=name if isinstance(name, str) else None,
                    tool_input=tool_input, tool_call_id=call_id, model=reader.patch.model)
    # A text-only message is the last of its turn: the model answered and waits for the user.
    reader.patch.note(last_turn="open" if calls else "complete")


def _v2_results(reader: _Reader, uid: str, blocks: list) -> None:
    for block in blocks:
        block_kind = block.get("kind") if isinstance(block, dict) else None
        if block_kind != "toolResult":
            reader.problem("unknown_type", f"ToolResults block kind={block_kind!r}")
            continue
        payload = block.get("data") if isinstance(block.get("data"), dict) else {}
        call_id = _text(payload.get("toolUseId"))
        status = payload.get("status")
        # status is the tool harness's verdict ("success" also for a command that exited non-zero).
        reader.emit(f"{uid}:result:{call_id}", role="tool", kind="tool_result", text=_result_text(payload.get("content")),
                    tool_call_id=call_id, tool_name=reader.tools.get(call_id or ""),
                    is_error=isinstance(status, str) and status != "success")
    reader.patch.note(last_turn="open")


def _v3(reader: _Reader, data: dict, record: Record) -> None:
    payload = data.get("payload") if isinstance(data.get("payload"), dict) else {}
    kind = payload.get("type")
    if kind not in V3_TYPES:
        reader.problem("unknown_type", f"payload type={kind!r}")
        return
    ts = iso_text(data.get("timestamp")) or iso_ms(data.get("timestamp"))
    uid = _text(payload.get("id")) or _text(data.get("id")) or f"line:{record.line}"
    if kind == "user":
        text = _plain(payload.get("content"))
        if text.strip():
            reader.emit(uid, role="user", kind="text", text=text, ts=ts)
        reader.patch.note(last_turn="open")
    elif kind == "assistant":
        text = _plain(payload.get("content"))
        operation = payload.get("operationType")
        if text.strip():
            # Say is the answer shown to the user; other operations are kept as the model's notes.
            reader.emit(uid, role="assistant", kind="text" if operation == "Say" else "thinking", text=text, ts=ts,
                        meta=None if operation == "Say" else {"operationType": operation})
            reader.patch.note(last_turn="complete")
    elif kind == "tool_call":
        call_id, name, args = _text(payload.get("toolCallId")) or uid, payload.get("toolName"), payload.get("args")
        if isinstance(name, str):
            reader.tools[call_id] = name
        reader.emit(f"call:{call_id}", role="assistant", kind="tool_call", text=render_call(name, args, _CALL_KEYS),
                    ts=ts, tool_name=name if isinstance(name, str) else None, tool_input=args, tool_call_id=call_id)
        reader.patch.note(last_turn="open")
    elif kind == "tool_result":
        call_id = _text(payload.get("toolCallId"))
        reader.emit(f"result:{call_id or uid}", role="tool", kind="tool_result", text=_plain(payload.get("content")),
                    ts=ts, tool_call_id=call_id, tool_name=reader.tools.get(call_id or ""),
                    is_error=payload.get("success") is False)
        reader.patch.note(last_turn="open")
    else:
        reader.emit(uid, role="system", kind="meta", text="usage summary", ts=ts, meta={"type": "usage_summary"})


def _result_text(content: Any) -> str:
    """Tool output blocks: text as it is, JSON written back (a shell's {exit_status, stdout, stderr})."""
    if not isinstance(content, list):
        return _plain(content)
    parts = []
    for item in content:
        data = item.get("data") if isinstance(item, dict) else item
        parts.append(data if isinstance(data, str) else orjson.dumps(data, default=repr).decode())
    return "\n".join(parts)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value, default=repr).decode()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _seconds(value: Any) -> str | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return iso_ms(value * 1000)


def _object(raw: bytes | None) -> dict:
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}
