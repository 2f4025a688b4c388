"""Cursor's agent transcripts: ``<config>/projects/<slug>/agent-transcripts/``, read as part of ``cursor-cli``.

Both the CLI agent and the IDE's agent write one transcript per conversation under the Cursor config dir
(``$CURSOR_CONFIG_DIR``, else ``~/.cursor``), in folders named after the workspace (``/`` and other
non-alphanumerics turned into ``-``: lossy, never decoded). Cursor is closed source: every fact here comes
from third-party readers, named field by field in ``fixtures/cursor/transcripts/SOURCE.md``. In short:

- ``<id>/<id>.jsonl`` (flat ``<id>.jsonl`` in early builds; subagents in ``<id>/subagents/<sub>.jsonl``):
  one line per message, ``{"role", "message": {"content": str | [blocks]}}`` with Anthropic-style blocks
  (``text``, ``thinking``, ``tool_use``, ``tool_result``), and ``{"type": "turn_ended", "status"}`` lines.
  No ids, no times, no model. Append-only: each event's uid is the hash of its line and line number.
- ``<id>.txt`` (older builds): ``user:`` / ``assistant:`` blocks with ``[Thinking]``, ``[Tool call] <name>``
  and ``[Tool result] <name>`` sections, indented bodies. Read whole on each change, revised.
- ``<slug>/.workspace-trusted``: JSON holding ``workspacePath``, the cwd (else the ``Workspace Path`` line of
  the ``<user_info>`` Cursor injects into the first prompt).

A CLI conversation also has ``chats/<md5(cwd)>/<id>/store.db``, the richer record (tool results, models,
ids): a transcript beside such a store is not read (``shadowed_by``). The IDE's own composer store
(``state.vscdb``, the ``cursor`` harness) cannot be checked from a path, so an IDE conversation that is in
both shows under both harnesses (same id).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

import orjson

from harvester.model import Batch, record_uid
from harvester.parsers import cursor
from harvester.parsers.base import Record, SourceRef, SourceSpec, iso_ms, json_objects

_Reader = cursor._Reader  # the CLI store's reading of a message block is the transcript's too
_cli_block = cursor._cli_block

# The roles and block types read; any other is drift. Cursor's system prompt is not transcribed, but
# a line that has it is skipped like the store's.
_SKIPPED_ROLES = frozenset({"system"})
_BLOCKS = {"user": ("text", "image", "tool_result"), "assistant": ("text", "thinking", "tool_use", "image")}
_SKIPPED_BLOCKS = frozenset({"redacted_thinking"})  # encrypted reasoning: nothing to read
_LINE_TYPES = ("turn_ended",)
# turn_ended statuses: only the record's existence is documented; its values are guessed from the
# store's composer statuses, and any other is kept as it is (never drift: the turn did end).
_ENDED = {"completed": "complete", "complete": "complete", "success": "complete", "error": "failed",
          "failed": "failed", "aborted": "aborted", "cancelled": "aborted", "canceled": "aborted"}
_WORKSPACE = re.compile(r"^(?:Workspace Path:\s*|The absolute path of the user's workspace is\s+)(/\S.*?)\.?\s*$",
                        re.M)
_TXT_ROLE = re.compile(r"^(user|assistant):\s*$")
_TXT_SECTION = re.compile(r"^\[(Thinking|Tool call|Tool result)\]\s?(.*)$")


# -- where: paths relative to the transcript -------------------------------------------------
def _store(path: PurePath, up: int) -> PurePath:
    """The CLI store of the same conversation: ``<config>/chats/<md5(cwd)>/<id>/store.db``. The bucket
    is the md5 of the cwd, which the lossy folder name cannot give: any bucket holding the id."""
    return path.parents[up] / "chats" / "*" / path.stem / "store.db"


def _trusted(up: int) -> Any:
    return lambda path: path.parents[up] / ".workspace-trusted"


def _txt_shadows(up: int) -> Any:
    return lambda path: (path.with_suffix(".jsonl"), _store(path, up))  # a .jsonl twin is the newer form


# Relative to the config dir: projects/<slug>/agent-transcripts/...; parents[n] of a file is the config dir.
_BASE = "projects/*/agent-transcripts"
SOURCES = (
    SourceSpec(f"{_BASE}/*/*.jsonl", "jsonl", "transcript", shadowed_by=lambda p: _store(p, 4),
               sidecar=_trusted(2)),
    SourceSpec(f"{_BASE}/*/subagents/*.jsonl", "jsonl", "subagent", shadowed_by=lambda p: _store(p, 5),
               sidecar=_trusted(3)),
    SourceSpec(f"{_BASE}/*.jsonl", "jsonl", "transcript-flat", shadowed_by=lambda p: _store(p, 3),
               sidecar=_trusted(1)),
    SourceSpec(f"{_BASE}/*/*.txt", "json", "text", shadowed_by=_txt_shadows(4), sidecar=_trusted(2)),
    SourceSpec(f"{_BASE}/*.txt", "json", "text-flat", shadowed_by=_txt_shadows(3), sidecar=_trusted(1)),
)
VARIANTS = frozenset(spec.variant for spec in SOURCES)
# The cursor-cli harness: its store and the transcripts, both under the config dir.
CLI_SOURCES = (*cursor.CLI_SOURCES, *SOURCES)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """The cursor-cli harness: transcripts here, the store (and the IDE's databases) in :mod:`cursor`."""
    if ref.variant not in VARIANTS:
        return cursor.parse(ref, records, state)
    reader = _Reader(Batch(state=dict(state), revise=ref.variant.startswith("text")))
    sid = ref.path.stem
    patch = reader.batch.session(sid)
    if ref.variant == "subagent":  # <parent>/subagents/<id>.jsonl
        patch.parent_native_id, patch.parent_kind = ref.path.parent.parent.name, "subagent"
    patch.updated_at = iso_ms(ref.mtime_ns // 1_000_000)  # no record has a time: the file's
    patch.note(source="agent-transcript")
    if ref.sidecar:
        trusted = cursor._object(reader, ref.sidecar, ".workspace-trusted") or {}
        if isinstance(trusted.get("workspacePath"), str) and trusted["workspacePath"].strip():
            patch.cwd = trusted["workspacePath"].strip()
    last = _parse_text(reader, sid, records) if ref.variant.startswith("text") else \
        _parse_jsonl(reader, sid, records)
    if last:
        patch.note(last_turn=last)
    if not patch.cwd and reader.batch.state.get("cwd"):
        patch.cwd = reader.batch.state["cwd"]
    return reader.batch


# -- JSONL --------------------------------------------------------------------------------------
def _parse_jsonl(reader: _Reader, sid: str, records: Iterable[Record]) -> str | None:
    last = None
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        role = data.get("role")
        if role is None and "type" in data:
            if data["type"] not in _LINE_TYPES:
                reader.problem("unknown_type", f"line type={data['type']!r}")
            else:
                status = data.get("status")
                last = _ENDED.get(status, status if isinstance(status, str) and status else "complete")
            continue
        if role in _SKIPPED_ROLES:
            continue
        if role not in _BLOCKS:
            reader.problem("unknown_type", f"role={role!r}")
            continue
        message = data.get("message") if isinstance(data.get("message"), dict) else {}
        content = message.get("content", data.get("content"))
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            reader.problem("malformed", "message without content")
            continue
        blocks = [b for b in content if isinstance(b, dict)]
        for j, block in enumerate(blocks):
            _jsonl_block(reader, sid, role, record_uid(record.raw, j, str(record.line)), block)
        calls = any(b.get("type") == "tool_use" for b in blocks)
        last = "complete" if role == "assistant" and not calls else "open"
    return last


def _jsonl_block(reader: _Reader, sid: str, role: str, uid: str, block: dict) -> None:
    """One Anthropic-style block, in the AI SDK shape the store's reading takes."""
    kind = block.get("type")
    if kind in _SKIPPED_BLOCKS:
        return
    if kind not in _BLOCKS[role]:
        reader.problem("unknown_type", f"{role} block type={kind!r}")
        return
    if kind == "text" and role == "user":
        _context_cwd(reader, str(block.get("text") or ""))
    if kind == "tool_use":
        _cli_block(reader, sid, role, "tool-call", uid, {"toolName": block.get("name"), "args": block.get(
            "input"), "toolCallId": block.get("id") or uid}, None, None)
    elif kind == "tool_result":
        result = block.get("content")
        _cli_block(reader, sid, "tool", "tool-result", uid, {"result": "" if result is None else result,
                   "toolCallId": block.get("tool_use_id"), "toolName": block.get("name"),
                   "isError": block.get("is_error") is True}, None, None)
    else:
        _cli_block(reader, sid, role, kind, uid, block, None, None)


def _context_cwd(reader: _Reader, text: str) -> None:
    """The cwd Cursor names in the ``<user_info>`` it injects (where ``.workspace-trusted`` is absent)."""
    if not reader.batch.state.get("cwd") and (found := _WORKSPACE.search(text)):
        reader.batch.state["cwd"] = found[1]


# -- plain text (older builds) -------------------------------------------------------------------
def _parse_text(reader: _Reader, sid: str, records: Iterable[Record]) -> str | None:
    """The whole document: ``user:`` / ``assistant:`` blocks, each event's uid its block and section."""
    last = None
    for record in records:
        reader.line = record.line
        blocks, stray = _txt_blocks(record.raw.decode("utf-8", "replace"))
        if stray:
            reader.problem("unknown_type", "text before the first user:/assistant: line")
        for b, (role, lines) in enumerate(blocks):
            if role == "user":
                body = "\n".join(lines).strip()
                _context_cwd(reader, body)
                if body:
                    _cli_block(reader, sid, "user", "text", f"txt:{b}", {"text": body}, None, None)
                last = "open"
                continue
            calls: dict[str, str] = {}  # a result names its tool, not its call: the last call of that name
            for s, (section, name, body) in enumerate(_txt_sections(lines)):
                uid = f"txt:{b}:{s}"
                if section == "Tool call":
                    calls[name] = uid
                    _cli_block(reader, sid, "assistant", "tool-call", uid, {
                        "toolName": name, "args": _txt_args(body), "toolCallId": uid}, None, None)
                elif section == "Tool result":
                    _cli_block(reader, sid, "tool", "tool-result", uid, {
                        "result": body, "toolName": name, "toolCallId": calls.pop(name, None)}, None, None)
                elif body:
                    kind = "thinking" if section == "Thinking" else "text"
                    _cli_block(reader, sid, "assistant", kind, uid, {"text": body}, None, None)
            last = "open" if calls else "complete"  # a call still without its result leaves the turn open
    return last


def _txt_blocks(text: str) -> tuple[list[tuple[str, list[str]]], bool]:
    """The role blocks, and whether text stood before the first marker (not a transcript as known)."""
    blocks: list[tuple[str, list[str]]] = []
    stray = False
    for line in text.splitlines():
        if found := _TXT_ROLE.match(line.strip()):
            blocks.append((found[1], []))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            stray = stray or bool(line.strip())
    return blocks, stray


def _txt_sections(lines: list[str]) -> list[tuple[str, str, str]]:
    """(section, tool name, body) in order: a section's body is its indented (or blank) lines; a line
    at the margin that is no marker is the assistant's text."""
    out: list[tuple[str, str, list[str]]] = []
    for line in lines:
        if found := _TXT_SECTION.match(line.strip()) if not line[:1].isspace() else None:
            out.append((found[1], found[2].strip(), []))
        elif out and (out[-1][0] == "text" or not line.strip() or line[:1].isspace()):
            out[-1][2].append(line)  # text runs to the next marker; a section's body is indented
        else:
            out.append(("text", "", [line]))
    # [Thinking] may start its text on the marker's line
    return [(section, "", f"{name}\n{_dedent(body)}".strip()) if section == "Thinking" else
            (section, name, _dedent(body)) for section, name, body in out]


def _dedent(lines: list[str]) -> str:
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[indent:] for x in lines).strip()


def _txt_args(body: str) -> Any:
    """A tool call's arguments: JSON, else ``key: value`` (or ``key=value``) lines, else the text."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    pairs = [re.split(r"\s*[:=]\s*", line.strip(), maxsplit=1) for line in body.splitlines() if line.strip()]
    if pairs and all(len(p) == 2 and re.fullmatch(r"[A-Za-z_][\w-]*", p[0]) for p in pairs):
        return dict(pairs)
    return body or None
