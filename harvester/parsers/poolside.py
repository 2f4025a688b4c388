"""Poolside Agent CLI (``pool``): ``<state dir>/poolside/trajectories/trajectory-<kind>_<uuid>.ndjson``.

Format facts and their sources: ``fixtures/poolside/SOURCE.md`` (closed source: a third-party reader's facts,
characterized by its authors from real trajectory files). In short: one NDJSON file a session, appended, one
event a line: ``{id, step_id?, timestamp (RFC 3339 with offset), type, <type with "_" for ".">: {...}}``.
Types: ``session.start`` (``working_directories``: the cwd first), ``session.input`` (``prompt``, ``mode``),
``assistant_message.start``/``.end`` (``assistant_message``), ``thought.start``/``.end`` (``thought``),
``tool_call.parsed`` (``id``, ``name``, ``args``), ``tool_call.result`` (``id``, ``tool_name``, ``observation``,
``is_error``, ``execution_error_kind``), ``tool_call.inference.start`` (``chat_completion_request.model``) and
``.end`` (``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``, ``cache_write_input_tokens``), paired by
``step_id``, ``session.exit`` (``reason``), ``session.error`` (``error``). Any other type is drift.
Identity: an event's uid is its ``id``; a tool call and its result are the call's ``id``'s; a model call's usage
names its step, so it counts once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harvester.model import Batch, Event, Problem, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "poolside"
PROCESSES = ("pool", "pool.exe")
_CALL_KEYS = ("cmd", "command", "path", "file_path", "pattern", "query", "url", "skill", "shell_id")
# Events that only mark a boundary: what they open is read from the event that closes it.
_MARKS = frozenset({"assistant_message.start", "thought.start"})


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """The CLI's state folder per OS, as its reader has it (``pool config`` prints the trajectory folder)."""
    if platform == "darwin":
        return [home / "Library" / "Application Support" / "poolside"]
    if platform == "win32":
        return [Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "poolside"]
    return [Path(env.get("XDG_STATE_HOME") or home / ".local" / "state") / "poolside"]


SOURCES = (SourceSpec("trajectories/trajectory-*.ndjson", "jsonl", "main"),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state)
    sid = ref.path.stem.removeprefix("trajectory-")
    patch = batch.session(sid)
    for record, event in json_objects(records, batch.problems):
        uid = event["id"] if isinstance(event.get("id"), str) and event["id"] else record_uid(
            record.raw, context=f"L{record.line}")
        ts = iso_text(event.get("timestamp"))
        if ts:
            patch.started_at = state.get("started") or ts
            state["started"] = patch.started_at
            patch.updated_at = ts
        try:
            _event(batch, record.line, sid, uid, ts, event, state)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"event of unexpected shape: {describe_error(exc)}"))
    return batch


def _body(event: dict) -> dict:
    body = event.get(str(event.get("type") or "").replace(".", "_"))
    return body if isinstance(body, dict) else {}


def _event(batch: Batch, line: int, sid: str, uid: str, ts: str | None, event: dict, state: dict[str, Any]) -> None:
    kind, body, step = event.get("type"), _body(event), event.get("step_id")
    model = state.get("model")
    if kind == "session.start":
        folders = body.get("working_directories")
        if isinstance(folders, list) and folders and isinstance(folders[0], str) and folders[0]:
            batch.session(sid).cwd = folders[0]
        elif isinstance(body.get("workspace"), str) and body["workspace"]:
            batch.session(sid).cwd = body["workspace"]
        if isinstance(body.get("prompt"), str) and body["prompt"].strip():  # a prompt given on the command line
            batch.events.append(Event(sid, uid, "user", "text", body["prompt"], ts=ts, meta={"record": kind}))
    elif kind == "session.input":
        prompt = body.get("prompt")
        if isinstance(prompt, str) and prompt.strip():
            batch.events.append(Event(sid, uid, "user", "text", prompt, ts=ts,
                                      meta={"mode": body["mode"]} if isinstance(body.get("mode"), str) else None))
            if not state.get("titled"):
                state["titled"] = True
                batch.session(sid).offer_title(prompt.strip().splitlines()[0][:80], "first-prompt")
    elif kind == "assistant_message.end":
        text = body.get("assistant_message")
        if isinstance(text, str) and text.strip():
            batch.events.append(Event(sid, uid, "assistant", "text", text, ts=ts, model=model))
    elif kind == "thought.end":
        if isinstance(body.get("thought"), str) and body["thought"].strip():
            batch.events.append(Event(sid, uid, "assistant", "thinking", body["thought"], ts=ts, model=model))
    elif kind == "tool_call.parsed":
        call_id = str(body.get("id") or uid)
        name = body.get("name") if isinstance(body.get("name"), str) else None
        batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                  render_call(name, body.get("args"), _CALL_KEYS), ts=ts, tool_name=name,
                                  tool_input=body.get("args"), tool_call_id=call_id, model=model))
    elif kind == "tool_call.result":
        call_id = str(body.get("id") or uid)
        observation = body.get("observation")
        meta = {"error_kind": body["execution_error_kind"]} if body.get("execution_error_kind") else None
        batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result",
                                  observation if isinstance(observation, str) else "", ts=ts,
                                  tool_name=body.get("tool_name") if isinstance(body.get("tool_name"), str) else None,
                                  tool_call_id=call_id, is_error=body.get("is_error") is True, meta=meta))
    elif kind == "tool_call.inference.start":
        request = body.get("chat_completion_request")
        chosen = request.get("model") if isinstance(request, dict) else None
        if isinstance(chosen, str) and chosen:
            state["model"] = batch.session(sid).model = chosen
    elif kind == "tool_call.inference.end":
        usage = Usage(input=_count(body, "input_tokens"), output=_count(body, "output_tokens"),
                      cache_read=_count(body, "cache_read_input_tokens"),
                      cache_write=_count(body, "cache_write_input_tokens"),
                      response=f"poolside:{sid}:{step or uid}")
        if usage.as_dict():
            batch.events.append(Event(sid, uid, "assistant", "meta", "model call", ts=ts, model=model, usage=usage,
                                      meta={"record": kind}))
    elif kind == "session.exit":
        reason = body.get("reason") if isinstance(body.get("reason"), str) else ""
        batch.events.append(Event(sid, uid, "system", "meta", f"session exit: {reason}".strip(), ts=ts,
                                  meta={"record": kind}))
    elif kind == "session.error":
        batch.events.append(Event(sid, uid, "system", "meta", f"error: {body.get('error') or ''}".strip(), ts=ts,
                                  meta={"record": kind, "error": True}))
    elif kind not in _MARKS:
        batch.problems.append(Problem("unknown_type", line, f"type={kind!r}"))


def _count(body: dict, name: str) -> int:
    value = body.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
