"""Reasonix (esengine/DeepSeek-Reasonix, the ``reasonix`` CLI and desktop app): JSONL transcripts under its state root.

Format facts and their sources: ``fixtures/reasonix/SOURCE.md``. In short:

- The state root is ``$REASONIX_STATE_HOME``, else the Reasonix home: ``$REASONIX_HOME``, else ``~/.reasonix``
  (``%APPDATA%\\reasonix`` on Windows). Transcripts: ``sessions/<id>.jsonl`` (or ``sessions/<id>/<id>.jsonl``),
  subagents' ``sessions/subagents/<id>.jsonl``, ``archive/<id>.jsonl`` and per project
  ``projects/<slug>/sessions/<id>.jsonl`` (or ``…/<id>/<id>.jsonl``).
- One chat message a line, as the provider layer sends it (OpenAI-style): ``role`` (user / assistant / tool /
  system), ``content`` text, ``reasoning_content`` (DeepSeek's thinking), ``tool_calls`` (``id``, ``name``,
  ``arguments`` JSON text), ``tool_call_id`` on a tool's answer. No line carries an id or a time.
- ``<transcript>.jsonl.meta`` beside it: ``id``, ``created_at``/``updated_at`` (RFC 3339), ``workspace_root`` (the
  cwd), ``topic_title``, ``model``: read as the sidecar.
- Since 1.39 the authoritative history is an event log (``.events.jsonl``) and the transcript is derived from its
  selected head; the event log is not read here (its format is not known), the transcript is.

A line's uid is its bytes and its line number (lines repeat: "continue", the same tool answer).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, record_uid
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

NAME = "reasonix"
PROCESSES = ("reasonix",)
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "task", "prompt")


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """The state root (CONFIG_PATHS.md embedded in the binary): ``$REASONIX_STATE_HOME``, else the home."""
    if env.get("REASONIX_STATE_HOME"):
        return [Path(env["REASONIX_STATE_HOME"])]
    if env.get("REASONIX_HOME"):
        return [Path(env["REASONIX_HOME"])]
    if platform.startswith("win"):
        return [Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "reasonix"]
    return [home / ".reasonix"]


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def _meta(path: PurePath) -> PurePath:
    return path.with_name(path.name + ".meta")


# The event log (``<id>.events.jsonl``) may sit beside a transcript: it is not one, so it is never read as one.
_NOT_TRANSCRIPTS = ("*.events.jsonl",)
SOURCES = tuple(SourceSpec(pattern, "jsonl", "main", sidecar=_meta, ignore=_NOT_TRANSCRIPTS) for pattern in (
    "sessions/*.jsonl", "sessions/*/*.jsonl", "archive/*.jsonl", "projects/*/sessions/*.jsonl",
    "projects/*/sessions/*/*.jsonl"))


def _is_transcript(path: PurePath) -> bool:
    if path.name.endswith(".events.jsonl"):
        return False
    # sessions/<id>/<id>.jsonl: only the folder's own transcript; sessions/subagents/*.jsonl is a subagent's.
    parent = path.parent
    if parent.parent.name == "sessions" and parent.name != "subagents":
        return path.stem == parent.name
    return True


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state)
    sid = ref.path.stem
    if not _is_transcript(ref.path):
        return batch
    patch = batch.session(sid)
    if ref.path.parent.name == "subagents":
        patch.note(subagent=True)  # the transcript names no parent
        state["subagent"] = True
    meta = _sidecar(ref.sidecar)
    model = meta.get("model") if isinstance(meta.get("model"), str) and meta["model"] else None
    patch.model = model
    if isinstance(meta.get("workspace_root"), str) and meta["workspace_root"].strip():
        patch.cwd = meta["workspace_root"].strip()
    if isinstance(meta.get("topic_title"), str) and meta["topic_title"].strip():
        patch.offer_title(meta["topic_title"].strip(), "ai")
    patch.started_at = iso_text(meta.get("created_at")) or iso_ms(ref.mtime_ns // 1_000_000)
    patch.updated_at = iso_text(meta.get("updated_at")) or iso_ms(ref.mtime_ns // 1_000_000)
    for record, line in json_objects(records, batch.problems):
        uid = record_uid(record.raw, context=f"L{record.line}")
        try:
            _line(batch, record.line, sid, uid, line, model, state)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"message of unexpected shape: {describe_error(exc)}"))
    return batch


def _sidecar(raw: bytes | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        meta = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}  # caught mid-rewrite: the next read has it
    return meta if isinstance(meta, dict) else {}


def _line(batch: Batch, line: int, sid: str, uid: str, message: dict, model: str | None, state: dict[str, Any]) -> None:
    role = message.get("role")
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    if role == "tool":
        call_id = str(message["tool_call_id"]) if message.get("tool_call_id") else uid
        batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", content,
                                  tool_name=message.get("name") if isinstance(message.get("name"), str) else None,
                                  tool_call_id=call_id))
    elif role == "user" and state.get("subagent") and not state.get("prompted") and content.strip():
        state["prompted"] = True  # a subagent's first prompt is its parent's task
        batch.events.append(Event(sid, uid, "system", "text", content, meta={"from_agent": True}))
    elif role == "user":
        if content.strip():
            batch.events.append(Event(sid, uid, "user", "text", content))
            if not state.get("titled"):
                state["titled"] = True
                batch.session(sid).offer_title(content.strip().splitlines()[0][:80], "first-prompt")
    elif role == "system":
        if content.strip():
            batch.events.append(Event(sid, uid, "system", "text", content, meta={"injected": True}))
    elif role == "assistant":
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning.strip():
            batch.events.append(Event(sid, f"{uid}:thinking", "assistant", "thinking", reasoning, model=model))
        if content.strip():
            batch.events.append(Event(sid, uid, "assistant", "text", content, model=model))
        for index, call in enumerate(message.get("tool_calls") or []):
            _call(batch, sid, f"{uid}:{index}", call, model)
    else:
        batch.problems.append(Problem("unknown_type", line, f"role={role!r}"))


def _call(batch: Batch, sid: str, uid: str, call: Any, model: str | None) -> None:
    if not isinstance(call, dict):
        raise TypeError("tool call is not an object")
    function = call.get("function") if isinstance(call.get("function"), dict) else {}  # the OpenAI wire shape
    name = next((v for v in (call.get("name"), call.get("Name"), function.get("name")) if isinstance(v, str)), None)
    arguments: Any = next((v for v in (call.get("arguments"), call.get("Arguments"), function.get("arguments"))
                           if v is not None), None)
    if isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments)
    call_id = next((str(v) for v in (call.get("id"), call.get("ID")) if v), uid)
    batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS),
                              tool_name=name, tool_input=arguments, tool_call_id=call_id, model=model))
