"""Command Code: ``~/.commandcode/projects/<project>/<session>.jsonl`` + ``<session>.meta.json``.

Format facts and their sources: ``fixtures/commandcode/SOURCE.md`` (closed source: a third-party reader's facts).
In short: one JSONL file a session, appended, one message a line (``sessionId``, ``role`` user / assistant /
tool, ``content`` text or AI SDK parts: ``text``, ``reasoning``/``thinking``, ``tool-call``/``tool_use``
(``toolCallId``, ``toolName``, ``input``), ``tool-result``/``tool_result`` (``toolCallId``, ``output``
``{type, value}``)), ISO ``timestamp``, ``gitBranch``, the cwd in ``metadata``; the sidecar names the title.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "commandcode"
PROCESSES = ("commandcode",)
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".commandcode"]  # no variable of Command Code's own is known to move it


def _meta_json(path: PurePath) -> PurePath:
    return path.with_name(path.stem + ".meta.json")


SOURCES = (SourceSpec("projects/*/*.jsonl", "jsonl", "main", sidecar=_meta_json),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state)
    sid = ref.path.stem
    patch = batch.session(sid)
    if ref.sidecar:
        try:
            meta = orjson.loads(ref.sidecar)
        except orjson.JSONDecodeError:
            meta = None  # caught mid-rewrite: the next read has it
        if isinstance(meta, dict):
            if isinstance(meta.get("title"), str) and meta["title"].strip():
                patch.offer_title(meta["title"].strip(), "ai")
            patch.cwd = next((meta[k] for k in ("cwd", "projectPath") if isinstance(meta.get(k), str) and meta[k]), None)
    for record, line in json_objects(records, batch.problems):
        uid = str(line["id"]) if isinstance(line.get("id"), str) else record_uid(record.raw, context=f"L{record.line}")
        ts = iso_text(line.get("timestamp"))
        if ts:
            patch.started_at = state.setdefault("started", ts)
            patch.updated_at = ts
        found = _cwd(line)
        if found and not patch.cwd:
            patch.cwd = found
        if isinstance(line.get("gitBranch"), str) and line["gitBranch"]:
            patch.git = GitFacts(branch=line["gitBranch"])
        try:
            _message(batch, record.line, sid, uid, ts, line, state)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"message of unexpected shape: {describe_error(exc)}"))
    return batch


def _cwd(line: dict) -> str | None:
    meta = line.get("metadata") if isinstance(line.get("metadata"), dict) else {}
    context = meta.get("context") if isinstance(meta.get("context"), dict) else {}
    for value in (meta.get("cwd"), meta.get("projectPath"), context.get("cwd"), line.get("cwd")):
        if isinstance(value, str) and value:
            return value
    return None


def _message(batch: Batch, line_no: int, sid: str, uid: str, ts: str | None, line: dict, state: dict[str, Any]) -> None:
    role, content = line.get("role"), line.get("content")
    if role not in ("user", "assistant", "tool"):
        batch.problems.append(Problem("unknown_type", line_no, f"message role={role!r}"))
        return
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    for index, part in enumerate(parts):
        sub = uid if index == 0 else f"{uid}:{index}"
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and part["text"].strip():
            if role == "assistant":
                batch.events.append(Event(sid, sub, "assistant", "text", part["text"], ts=ts))
            else:
                batch.events.append(Event(sid, sub, "user", "text", part["text"], ts=ts))
                if not state.get("titled"):
                    state["titled"] = True
                    batch.session(sid).offer_title(part["text"].strip().splitlines()[0][:80], "first-prompt")
        elif kind in ("reasoning", "thinking"):
            text = part.get("text") or part.get("thinking") or ""
            if isinstance(text, str) and text.strip():
                batch.events.append(Event(sid, sub, "assistant", "thinking", text, ts=ts))
        elif kind in ("tool-call", "tool_use"):
            name, call_id = part.get("toolName") or part.get("name"), str(part.get("toolCallId") or part.get("id") or sub)
            batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                      render_call(name, part.get("input"), _CALL_KEYS), ts=ts, tool_name=name,
                                      tool_input=part.get("input"), tool_call_id=call_id))
        elif kind in ("tool-result", "tool_result"):
            call_id = str(part.get("toolCallId") or part.get("tool_use_id") or sub)
            output = part.get("output", part.get("content"))
            if isinstance(output, dict) and isinstance(output.get("value"), str):
                text = output["value"]
            elif isinstance(output, str):
                text = output
            else:
                text = orjson.dumps(output).decode() if output is not None else str(part.get("text") or part.get("error") or "")
            is_error = bool(part.get("isError")) or (isinstance(output, dict) and "error" in str(output.get("type")))
            batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", text, ts=ts,
                                      tool_name=part.get("toolName"), tool_call_id=call_id, is_error=is_error))
        elif kind != "text":
            batch.problems.append(Problem("unknown_type", line_no, f"content part type={kind!r}"))
