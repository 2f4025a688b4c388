"""Cortex Code (Snowflake's CLI): ``~/.snowflake/cortex/conversations/<uuid>.json`` (+ ``.history.jsonl``).

Format facts and their sources: ``fixtures/cortex/SOURCE.md`` (closed source: Snowflake's docs for the place,
a third-party reader's facts for the shapes). In short: one JSON document a session, rewritten whole, with its
metadata (``session_id``, ``title``, ``working_directory``, ``git_root``, ``git_branch``, ``connection_name``,
``created_at``, ``last_updated``) and its ``history``: messages (``role`` user/assistant, ``id``,
``user_sent_time``, ``content`` blocks: ``text`` (``internalOnly`` or a ``<system-reminder>`` marks text the
agent injected), ``tool_use`` (``{tool_use: {tool_use_id, name, input}}``), ``tool_result`` (``{tool_result:
{tool_use_id, name, content: [blocks], status}}``)). A session grown past the CLI's write limit keeps only its
metadata there and appends its messages, one a line, to ``<uuid>.history.jsonl`` (read with the document as
its sidecar). Backups (``<uuid>.back.<time>.json``) are not sessions. A message's ``id`` is its uid in both.
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

NAME = "cortex"
PROCESSES = ("cortex",)
_UUID = "????????-????-????-????-????????????"
_CALL_KEYS = ("command", "cmd", "query", "sql", "file_path", "path", "pattern", "url")
_DEFAULT_TITLE = "Chat for session:"  # the title the CLI gives a session before it is named


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".snowflake" / "cortex" / "conversations"]  # no variable of Cortex Code's moves it


def _document(path: PurePath) -> PurePath:
    return path.with_name(path.name.removesuffix(".history.jsonl") + ".json")


SOURCES = (
    SourceSpec(f"{_UUID}.json", "json", "document"),
    SourceSpec(f"{_UUID}.history.jsonl", "jsonl", "history", sidecar=_document),
)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    if ref.variant == "history":
        batch = Batch(state=state)
        stem, meta = ref.path.name.removesuffix(".history.jsonl"), _loads(ref.sidecar)
        sid = _session(batch, stem, meta) if meta else stem
        for record, message in json_objects(records, batch.problems):
            _guarded(batch, record.line, sid, message, record.raw, state)
        return batch
    batch = Batch(revise=True, state=state)  # rewritten whole: a message's latest version is kept
    for record in records:
        document = _loads(record.raw)
        if document is None:
            batch.problems.append(Problem("malformed", record.line, "session document is not a JSON object"))
            continue
        sid = _session(batch, ref.path.stem, document)
        history = document.get("history")
        for index, message in enumerate(history if isinstance(history, list) else []):
            if isinstance(message, dict):
                _guarded(batch, index + 1, sid, message, orjson.dumps(message), state)
            else:
                batch.problems.append(Problem("malformed", index + 1, "history message is not an object"))
    return batch


def _loads(raw: bytes | None) -> dict | None:
    if raw is None:
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None  # caught mid-rewrite: the next read has it
    return data if isinstance(data, dict) else None


def _session(batch: Batch, stem: str, meta: dict) -> str:
    sid = meta["session_id"] if isinstance(meta.get("session_id"), str) and meta["session_id"] else stem
    patch = batch.session(sid)
    cwd = next((meta[k] for k in ("working_directory", "git_root") if isinstance(meta.get(k), str) and meta[k]),
               None)
    if cwd:
        patch.cwd = cwd
    patch.started_at = iso_text(meta.get("created_at"))
    patch.updated_at = iso_text(meta.get("last_updated"))
    title = meta.get("title")
    if isinstance(title, str) and title.strip() and not title.startswith(_DEFAULT_TITLE):
        patch.offer_title(title.strip(), "ai")
    if isinstance(meta.get("git_branch"), str) and meta["git_branch"]:
        patch.git = GitFacts(branch=meta["git_branch"])
    facts = {k: meta[k] for k in ("connection_name", "session_type")
             if isinstance(meta.get(k), str) and meta[k]}
    if facts:
        patch.note(**facts)
    return sid


def _guarded(batch: Batch, line: int, sid: str, message: dict, raw: bytes, state: dict[str, Any]) -> None:
    uid = str(message["id"]) if isinstance(message.get("id"), str) and message["id"] else record_uid(
        raw, context=f"L{line}")
    try:
        _message(batch, line, sid, uid, message, state)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        batch.problems.append(Problem("malformed", line,
                                      f"message of unexpected shape: {describe_error(exc)}"))


def _message(batch: Batch, line: int, sid: str, uid: str, message: dict, state: dict[str, Any]) -> None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        batch.problems.append(Problem("unknown_type", line, f"message role={role!r}"))
        return
    ts = iso_text(message.get("user_sent_time"))
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    for index, block in enumerate(blocks):
        sub = uid if index == 0 else f"{uid}:{index}"
        kind = block.get("type")
        if kind == "text":
            text = block.get("text") if isinstance(block.get("text"), str) else ""
            if not text.strip():
                continue
            if block.get("internalOnly") is True or "<system-reminder>" in text:
                batch.events.append(Event(sid, sub, "system", "text", text, ts=ts, meta={"injected": True}))
            elif role == "assistant":
                batch.events.append(Event(sid, sub, "assistant", "text", text, ts=ts))
            else:
                batch.events.append(Event(sid, sub, "user", "text", text, ts=ts))
                if not state.get("titled"):
                    state["titled"] = True
                    batch.session(sid).offer_title(text.strip().splitlines()[0][:80], "first-prompt")
        elif kind == "tool_use" and isinstance(block.get("tool_use"), dict):
            use = block["tool_use"]
            name = use.get("name") if isinstance(use.get("name"), str) else None
            call_id = str(use.get("tool_use_id") or sub)
            batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                      render_call(name, use.get("input"), _CALL_KEYS), ts=ts, tool_name=name,
                                      tool_input=use.get("input"), tool_call_id=call_id))
        elif kind == "tool_result" and isinstance(block.get("tool_result"), dict):
            result = block["tool_result"]
            call_id = str(result.get("tool_use_id") or sub)
            name = result.get("name") if isinstance(result.get("name"), str) else None
            batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result",
                                      _result_text(result.get("content")), ts=ts, tool_name=name,
                                      tool_call_id=call_id, is_error=result.get("status") in ("error", "failed")))
        else:
            batch.problems.append(Problem("unknown_type", line, f"content block type={kind!r}"))


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    if texts:
        return "\n".join(texts)
    return "" if content is None else orjson.dumps(content).decode()
