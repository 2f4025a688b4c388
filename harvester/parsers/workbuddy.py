"""WorkBuddy: ``~/.workbuddy/projects/<project>/<session>.jsonl``, subagents in ``<session>/subagents/``.

Format facts and their sources: ``fixtures/workbuddy/SOURCE.md`` (closed source: a third-party reader's facts).
In short: one JSONL file a session, appended, one item a line, in the OpenAI Agents SDK's item shapes:
``message`` (``role`` user/assistant, ``content`` text or parts with ``text``/``input_text``/``output_text``),
``function_call`` (``name``, ``callId``, ``arguments`` JSON text or object), ``function_call_result``
(``callId``, ``output`` text or ``{type: text, text}``); ``timestamp`` in epoch milliseconds, ``cwd`` on some
items, ``providerData`` with the model and usage. An item's ``id`` is its uid (its bytes and line without one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    json_objects,
    render_call,
)

NAME = "workbuddy"
PROCESSES = ("workbuddy", "WorkBuddy")
_CALL_KEYS = ("command", "prompt", "path", "file_path", "pattern", "query", "url")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".workbuddy"]  # no variable of WorkBuddy's own is known to move it


SOURCES = (
    SourceSpec("projects/*/*.jsonl", "jsonl", "main"),
    SourceSpec("projects/*/*/subagents/*.jsonl", "jsonl", "subagent"),
)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state)
    sid = ref.path.stem
    if ref.variant == "subagent":  # projects/<project>/<session>/subagents/<child>.jsonl
        parent = ref.path.parents[1].name
        sid = f"{parent}:{sid}"
        batch.session(sid).parent_native_id, batch.session(sid).parent_kind = parent, "subagent"
    patch = batch.session(sid)
    for record, item in json_objects(records, batch.problems):
        uid = str(item["id"]) if isinstance(item.get("id"), str) else record_uid(record.raw, context=f"L{record.line}")
        ts = iso_ms(item.get("timestamp"))
        if ts:
            patch.started_at = state.get("started") or ts
            state["started"] = patch.started_at
            patch.updated_at = ts
        if isinstance(item.get("cwd"), str) and item["cwd"] and not state.get("cwd"):
            patch.cwd = state["cwd"] = item["cwd"]
        provider = item.get("providerData") if isinstance(item.get("providerData"), dict) else {}
        model = provider.get("model") if isinstance(provider.get("model"), str) else None
        if model:
            patch.model = model
        try:
            _item(batch, record.line, sid, uid, ts, item, model, _usage(provider), ref.variant == "subagent", state)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"item of unexpected shape: {describe_error(exc)}"))
    return batch


def _item(batch: Batch, line: int, sid: str, uid: str, ts: str | None, item: dict, model: str | None, usage: Usage | None,
          child: bool, state: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = _text(item.get("content"))
        if role not in ("user", "assistant"):
            batch.problems.append(Problem("unknown_type", line, f"message role={role!r}"))
        elif not text.strip():
            return
        elif role == "assistant":
            batch.events.append(Event(sid, uid, "assistant", "text", text, ts=ts, model=model, usage=usage))
        elif child and not state.get("prompted"):  # a subagent's first prompt is its parent's task
            state["prompted"] = True
            batch.events.append(Event(sid, uid, "system", "text", text, ts=ts, meta={"from_agent": True}))
        else:
            state["prompted"] = True
            batch.events.append(Event(sid, uid, "user", "text", text, ts=ts))
            if not state.get("titled"):
                state["titled"] = True
                batch.session(sid).offer_title(text.strip().splitlines()[0][:80], "first-prompt")
    elif kind == "function_call":
        arguments = item.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(orjson.JSONDecodeError):
                arguments = orjson.loads(arguments)
        call_id = str(item["callId"])
        batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                  render_call(item.get("name"), arguments, _CALL_KEYS), ts=ts, tool_name=item.get("name"),
                                  tool_input=arguments, tool_call_id=call_id, model=model, usage=usage))
    elif kind == "function_call_result":
        call_id = str(item["callId"])
        output = item.get("output")
        text = output if isinstance(output, str) else _text(output if isinstance(output, list) else [output])
        if not text and output is not None and not isinstance(output, str):
            text = orjson.dumps(output).decode()
        batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", text, ts=ts,
                                  tool_name=item.get("name"), tool_call_id=call_id,
                                  is_error=item.get("status") in ("error", "failed")))
    else:
        batch.problems.append(Problem("unknown_type", line, f"type={kind!r}"))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict):
            text = next((part[k] for k in ("text", "input_text", "output_text") if isinstance(part.get(k), str)), None)
            if text is not None:
                parts.append(text)
            elif isinstance(part.get("type"), str) and "image" in part["type"]:
                parts.append("[image]")
    return "\n".join(parts)


def _usage(provider: dict) -> Usage | None:
    usage = provider.get("usage") if isinstance(provider.get("usage"), dict) else provider.get("rawUsage")
    if not isinstance(usage, dict):
        return None

    def first(*names: str) -> int:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return 0

    found = Usage(input=first("inputTokens", "input_tokens", "prompt_tokens"),
                  output=first("outputTokens", "output_tokens", "completion_tokens"),
                  cache_read=first("cacheReadInputTokens", "cache_read_input_tokens"),
                  cache_write=first("cacheCreationInputTokens", "cache_creation_input_tokens"),
                  reasoning=first("reasoningTokens", "reasoning_tokens"))
    return found if any(found.as_dict().values()) else None
