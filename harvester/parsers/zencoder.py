"""Zencoder: ``~/.zencoder/sessions/<session>.jsonl``, one file a session.

Format facts and their sources: ``fixtures/zencoder/SOURCE.md`` (closed source: a third-party reader's facts).
In short: the first line is the session's header (``id``, ``parentId``, ``creationReason``, ``createdAt``,
``updatedAt``, ``modelId``), every later line a message by ``role``: ``system`` (its ``content`` text, which
names the working directory), ``user`` (text blocks with a ``tag``: none or ``user-input`` is what was typed,
any other tag text the agent added; ``skill`` blocks), ``assistant`` (``text``, ``reasoning``, ``tool-call``
blocks: ``toolCallId``, ``toolName``, ``input``), ``tool`` (``tool-result`` blocks: ``toolCallId``,
``content`` blocks with ``text``, ``isError``; a subagent's result names its session in ``<session-id>``),
``finish`` (``reason``) and ``permission`` (nothing for a transcript). A header whose ``creationReason`` is a
continuation names the session it continues.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harvester.model import Batch, Event, Problem, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "zencoder"
PROCESSES = ("zencoder", "zencoder-cli")
_CALL_KEYS = ("command", "file_path", "path", "pattern", "query", "url", "prompt")
_CWD = re.compile(r"Working directory:[ \t]+(\S[^\n]*)")
_CHILD = re.compile(r"<session-id>\s*([A-Za-z0-9_.:-]{1,128})\s*</session-id>")
_CONTINUATIONS = ("directContinuation", "summarizedContinuation", "summarizationRequest")
_TYPED = ("", "user-input")  # the tags of text the user typed


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".zencoder" / "sessions"]  # no variable of Zencoder's own is known to move it


SOURCES = (SourceSpec("*.jsonl", "jsonl", "main"),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state)
    for record, line in json_objects(records, batch.problems):
        sid = state.get("id") or ref.path.stem
        if not state.get("header"):  # the first line: the session's header
            state["header"] = True
            if "role" not in line:
                _header(batch, ref.path.stem, line, state)
                continue
        uid = str(line["id"]) if isinstance(line.get("id"), str) and line["id"] else record_uid(
            record.raw, context=f"L{record.line}")
        ts = iso_text(line.get("createdAt"))
        patch = batch.session(sid)
        if ts:
            patch.started_at = state.setdefault("started", ts)
            patch.updated_at = ts
        try:
            _message(batch, record.line, sid, uid, ts, line, state)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line,
                                          f"message of unexpected shape: {describe_error(exc)}"))
    return batch


def _header(batch: Batch, stem: str, line: dict, state: dict[str, Any]) -> None:
    sid = line["id"] if isinstance(line.get("id"), str) and line["id"] else stem
    state["id"] = sid
    patch = batch.session(sid)
    started = iso_text(line.get("createdAt"))
    if started:
        patch.started_at = state["started"] = started
    patch.updated_at = iso_text(line.get("updatedAt")) or started
    if isinstance(line.get("modelId"), str) and line["modelId"]:
        patch.model = state["model"] = line["modelId"]
    reason, parent = line.get("creationReason"), line.get("parentId")
    if isinstance(parent, str) and parent and parent != sid and reason in _CONTINUATIONS:
        # A continuation: the parent's work goes on here (the model has no continuation kind).
        patch.parent_native_id, patch.parent_kind = parent, "fork"
        patch.note(creation_reason=reason)


def _message(batch: Batch, line_no: int, sid: str, uid: str, ts: str | None, line: dict,
             state: dict[str, Any]) -> None:
    role, content = line.get("role"), line.get("content")
    if role == "system":
        if isinstance(content, str) and content.strip():
            found = _CWD.search(content)
            if found and not state.get("cwd"):
                batch.session(sid).cwd = state["cwd"] = found.group(1).strip()
            batch.events.append(Event(sid, uid, "system", "text", content, ts=ts, meta={"injected": True}))
    elif role == "user":
        _user(batch, line_no, sid, uid, ts, content, state)
    elif role == "assistant":
        _assistant(batch, line_no, sid, uid, ts, content, state)
    elif role == "tool":
        _tool(batch, line_no, sid, uid, ts, content)
    elif role == "finish":
        reason = line.get("reason") if isinstance(line.get("reason"), str) else "unknown"
        batch.events.append(Event(sid, uid, "system", "meta", f"turn finished: {reason}", ts=ts,
                                  meta={"finish": reason}))
    elif role != "permission":  # a permission prompt's record: nothing for a transcript
        batch.problems.append(Problem("unknown_type", line_no, f"message role={role!r}"))


def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _user(batch: Batch, line_no: int, sid: str, uid: str, ts: str | None, content: Any,
          state: dict[str, Any]) -> None:
    typed, added = [], []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            tag = block.get("tag") or ""
            (typed if tag in _TYPED else added).append(block["text"])
        elif kind == "skill":
            if isinstance(block.get("name"), str) and block["name"]:
                body = block.get("content") if isinstance(block.get("content"), str) else ""
                added.append(f"[Skill: {block['name']}]\n{body}")
        elif kind != "text":
            batch.problems.append(Problem("unknown_type", line_no, f"user block type={kind!r}"))
    text = "\n".join(typed)
    if text.strip():
        batch.events.append(Event(sid, uid, "user", "text", text, ts=ts))
        if not state.get("titled"):
            state["titled"] = True
            batch.session(sid).offer_title(text.strip().splitlines()[0][:80], "first-prompt")
    if "\n".join(added).strip():
        batch.events.append(Event(sid, f"{uid}:added", "system", "text", "\n".join(added), ts=ts,
                                  meta={"injected": True}))


def _assistant(batch: Batch, line_no: int, sid: str, uid: str, ts: str | None, content: Any,
               state: dict[str, Any]) -> None:
    model = state.get("model")
    for index, block in enumerate(_blocks(content)):
        sub = uid if index == 0 else f"{uid}:{index}"
        kind = block.get("type")
        if kind in ("text", "reasoning"):
            if isinstance(block.get("text"), str) and block["text"].strip():
                batch.events.append(Event(sid, sub, "assistant", "text" if kind == "text" else "thinking",
                                          block["text"], ts=ts, model=model))
        elif kind == "tool-call":
            name = block.get("toolName") if isinstance(block.get("toolName"), str) else None
            call_id = str(block.get("toolCallId") or sub)
            batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                      render_call(name, block.get("input"), _CALL_KEYS), ts=ts,
                                      tool_name=name, tool_input=block.get("input"), tool_call_id=call_id,
                                      model=model))
        else:
            batch.problems.append(Problem("unknown_type", line_no, f"assistant block type={kind!r}"))


def _tool(batch: Batch, line_no: int, sid: str, uid: str, ts: str | None, content: Any) -> None:
    for index, block in enumerate(_blocks(content)):
        if block.get("type") != "tool-result":
            batch.problems.append(Problem("unknown_type", line_no, f"tool block type={block.get('type')!r}"))
            continue
        call_id = str(block.get("toolCallId") or f"{uid}:{index}")
        shown, added = [], []
        for part in _blocks(block.get("content")):
            text = part.get("text") if isinstance(part.get("text"), str) else ""
            child = _CHILD.search(text)
            if child and child.group(1) != sid:  # a subagent's result names the session it ran in
                batch.session(child.group(1)).parent_native_id = sid
                batch.session(child.group(1)).parent_kind = "subagent"
            if text and part.get("tag") and part.get("type") == "text":
                added.append(text)  # a reminder the agent put beside the output
            elif text:
                shown.append(text)
        name = block.get("toolName") if isinstance(block.get("toolName"), str) else None
        batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", "\n".join(shown), ts=ts,
                                  tool_name=name, tool_call_id=call_id, is_error=block.get("isError") is True))
        if added:
            batch.events.append(Event(sid, f"result:{call_id}:added", "system", "text", "\n".join(added),
                                      ts=ts, meta={"injected": True}))
