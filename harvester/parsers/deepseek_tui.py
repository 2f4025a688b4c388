"""DeepSeek TUI (Hmbown/DeepSeek-TUI, the ``deepseek`` Rust CLI): ``~/.deepseek/sessions/<id>.json``.

Format facts and their sources: ``fixtures/deepseek_tui/SOURCE.md``. In short:

- One JSON document per session (``SavedSession``), rewritten whole through a temp file and a rename
  (``write_atomic``) after each turn: ``{schema_version, metadata: {id, title, created_at,
  updated_at, message_count, total_tokens, model, workspace, mode?, cost, parent_session_id?,
  forked_from_message_count?}, messages: [{role, content: [block...]}], system_prompt,
  context_references?, artifacts?}``. Blocks: ``text``, ``thinking``, ``tool_use``, ``tool_result``,
  ``server_tool_use``, ``tool_search_tool_result``, ``code_execution_tool_result`` (Anthropic-style;
  a tool's result comes back in the next ``user`` message).
- Messages carry no id and no time, and the file is not append-only in position: past 500 messages
  the oldest are dropped, and a compaction replaces the summarized ones with a summary in
  ``system_prompt``. So an event's uid is a hash of its message's role and content (with the count of
  earlier identical messages): a message keeps its uid wherever it moves in the file.
- ``checkpoints/latest.json`` (the in-flight turn) and ``checkpoints/offline_queue.json`` live below
  ``sessions/`` and are not read: the pattern takes the top level only.
- A fork (``deepseek fork``) is a new file naming ``parent_session_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Kind, Problem, Role, SessionPatch
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "deepseek-tui"

# DeepSeek TUI's tools: exec_shell, read_file, write_file, edit_file, list_dir, grep_files, web_search ...
_CALL_KEYS = ("command", "cmd", "path", "file_path", "pattern", "query", "url", "prompt")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # default_sessions_dir() is dirs::home_dir()/.deepseek/sessions on every OS, no variable moves it
    # (DEEPSEEK_HOME is read by the metrics command only). ~/.codewhale is the renamed project's home
    # (agentsview reads both; UNCONFIRMED in the agent's own source, see SOURCE.md).
    return [home / ".deepseek", home / ".codewhale"]


SOURCES = (SourceSpec("sessions/*.json", "json", ignore=("latest.json", "offline_queue.json")),)

PROCESSES = ("deepseek", "deepseek-tui", "deepseek.exe", "codewhale")

SESSION_KEYS = frozenset({"schema_version", "metadata", "messages", "system_prompt", "context_references",
                          "artifacts"})
BLOCK_TYPES = frozenset({"text", "thinking", "tool_use", "server_tool_use", "tool_result",
                         "tool_search_tool_result", "code_execution_tool_result"})
_SUMMARY = "## 📋 Conversation Summary (Auto-Generated)"  # compaction.rs: the summary system block
_SESSION_NOTE = "[Session note]\nNote: "  # session_manager.rs: older messages dropped past 500


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch, sid: str) -> None:
        self.ref, self.batch, self.sid = ref, batch, sid
        self.line = 1
        self.drifted: set[str] = set()
        self.model: str | None = None
        self.ts: str | None = None
        self.calls: dict[str, str] = {}  # tool_use id -> tool name, for the results
        self.first_prompt: str | None = None

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def emit(self, uid: str, role: Role, kind: Kind, text: str, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, role=role, kind=kind, text=text, ts=self.ts, **fields))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    # revise: the whole file is rewritten each turn; a message read before comes back with its uid.
    batch = Batch(revise=True, state=state)
    for record, data in json_objects(records, batch.problems):
        metadata = data.get("metadata")
        if not isinstance(metadata, dict) or not isinstance(data.get("messages"), list):
            batch.problems.append(Problem("unknown_type", record.line, "document without metadata and messages"))
            continue
        sid = metadata.get("id") if isinstance(metadata.get("id"), str) and metadata["id"] else ref.path.stem
        reader = _Reader(ref, batch, sid)
        reader.line = record.line
        try:
            _session(reader, data, metadata)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line,
                                          f"document of unexpected shape: {describe_error(exc)}"))
    return batch


def _session(reader: _Reader, data: dict, metadata: dict) -> None:
    for key in sorted(data.keys() - SESSION_KEYS):
        reader.drift(f"session key={key!r}")
    version = data.get("schema_version")
    if isinstance(version, int) and version > 1:
        reader.drift(f"schema_version={version}")
    patch = reader.patch
    patch.cwd = metadata.get("workspace") or None
    patch.started_at = iso_text(metadata.get("created_at"))
    patch.updated_at = iso_text(metadata.get("updated_at"))
    reader.model = metadata.get("model") or None
    if reader.model:
        patch.model = reader.model
    parent = metadata.get("parent_session_id")
    if isinstance(parent, str) and parent and parent != reader.sid:
        patch.parent_native_id, patch.parent_kind = parent, "fork"
    facts = {k: metadata[k] for k in ("mode", "total_tokens", "message_count", "forked_from_message_count")
             if metadata.get(k) not in (None, "", 0)}
    if facts:
        patch.note(**facts)
    # Messages have no time of their own: each event takes the session's last write (updated_at) only
    # where nothing better is known; the bank orders a session's events by their position.
    reader.ts = patch.updated_at
    _system(reader, data.get("system_prompt"))
    seen: dict[str, int] = {}
    last_role = None
    for n, message in enumerate(data["messages"]):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list | str):
            reader.batch.problems.append(Problem("malformed", reader.line, f"messages[{n}] is not a message"))
            continue
        import hashlib  # here, not at the top: the registry's import (status) needs none of it
        digest = hashlib.sha1(orjson.dumps([message.get("role"), message.get("content")],
                                           option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
        seen[digest] = seen.get(digest, 0) + 1
        _message(reader, message, f"{digest}.{seen[digest]}")
        last_role = message.get("role")
    title = metadata.get("title")
    if isinstance(title, str) and title.strip() and title != "New Session":
        # The title is the first prompt cut to 50 characters unless `/rename` set one of its own.
        title = title.strip()
        own = reader.first_prompt is None or not reader.first_prompt.startswith(title.removesuffix("..."))
        patch.offer_title(title, "custom" if own else "first-prompt")
    # A session whose last message is the user's (a prompt, or tool results) waits for the model.
    patch.note(last_turn="open" if last_role == "user" else "complete")


def _system(reader: _Reader, prompt: Any) -> None:
    if not isinstance(prompt, str):
        return
    if prompt.startswith(_SESSION_NOTE):
        reader.patch.note(truncated=prompt[len(_SESSION_NOTE):].split(" ", 1)[0])
    at = prompt.find(_SUMMARY)
    if at >= 0:
        summary = prompt[at:]
        import hashlib  # here, not at the top: the registry's import (status) needs none of it
        digest = hashlib.sha1(summary.encode()).hexdigest()[:16]
        reader.emit(f"summary.{digest}", "system", "compaction", summary, meta={"summary": True})


def _message(reader: _Reader, message: dict, uid: str) -> None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        reader.drift(f"message role={role!r}")
        return
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for i, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            reader.drift(f"content block type={kind!r}")
            continue
        _block(reader, role, block, kind, f"{uid}:{i}")


def _block(reader: _Reader, role: str, block: dict, kind: str, uid: str) -> None:
    if kind == "text":
        text = block.get("text") or ""
        if not text.strip():
            return
        if role == "user":
            text, turn_meta = _turn_meta(text)
            if not text:
                return
            reader.emit(uid, "user", "text", text, meta={"turn_meta": turn_meta} if turn_meta else None)
            if reader.first_prompt is None:
                reader.first_prompt = text.strip()
                first = reader.first_prompt.splitlines()[0]
                reader.patch.offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")
        else:
            reader.emit(uid, "assistant", "text", text, model=reader.model)
    elif kind == "thinking":
        text = block.get("thinking") or ""
        if text.strip():
            reader.emit(uid, "assistant", "thinking", text, model=reader.model)
    elif kind in ("tool_use", "server_tool_use"):
        name, call_id, tool_input = block.get("name") or "tool", block.get("id"), block.get("input")
        if isinstance(call_id, str):
            reader.calls[call_id] = name
        reader.emit(f"call:{call_id}" if call_id else uid, "assistant", "tool_call",
                    render_call(name, tool_input, _CALL_KEYS), tool_name=name, tool_input=tool_input,
                    tool_call_id=call_id, model=reader.model,
                    meta={"server_tool": True} if kind == "server_tool_use" else None)
    else:  # a result: tool_result (text), or a server tool's result (JSON)
        call_id = block.get("tool_use_id")
        output = block.get("content")
        text = output if isinstance(output, str) else orjson.dumps(output).decode()
        reader.emit(f"result:{call_id}" if call_id else uid, "tool", "tool_result", text, tool_call_id=call_id,
                    tool_name=reader.calls.get(call_id) if isinstance(call_id, str) else None,
                    is_error=bool(block.get("is_error")))


def _turn_meta(text: str) -> tuple[str, str | None]:
    """The prompt without the ``<turn_meta>...</turn_meta>`` prefix the TUI puts before it (cache
    hints, not the user's words: extract_user_prompt strips it too), and that prefix's body."""
    trimmed = text.lstrip()
    if not trimmed.startswith("<turn_meta>"):
        return text, None
    body, sep, rest = trimmed[len("<turn_meta>"):].partition("</turn_meta>")
    return (rest.lstrip(), body) if sep else (body.lstrip(), None)
