"""Anthropic Messages API: ``POST /v1/messages`` (streaming and not) and ``/v1/messages/count_tokens``."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from typing import Any

from tests.fakellm.script import Conversation, Reply, Tool, decide
from tests.fakellm.wire import JsonResponse, Request, Response, SseEvent, SseResponse, error, estimate_tokens
from tests.fakellm.wire import new_id as _id


def messages(req: Request) -> Response:
    body = req.body
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return error(400, "messages: field required")
    reply = decide(conversation(body))
    content = _blocks(reply)
    message = {
        "id": _id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_call else "end_turn",
        "stop_sequence": None,
        "usage": _usage(body, content, reply.input_tokens),
    }
    if body.get("stream"):
        return SseResponse(_stream(message), headers={"request-id": _id("req_")}, delay=reply.delay)
    return JsonResponse(message, delay=reply.delay)


def count_tokens(req: Request) -> Response:
    return JsonResponse({"input_tokens": estimate_tokens(req.body)})


def conversation(body: dict[str, Any]) -> Conversation:
    # Claude Code interleaves role "system" messages (agent listings); they are not turns.
    msgs = [m for m in body["messages"] if m.get("role") != "system"]
    prompt: list[str] = []
    results: list[tuple[str, bool]] = []
    if msgs and msgs[-1].get("role") == "user":
        content = msgs[-1].get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        prompt = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        results = [
            (_result_text(b.get("content")), bool(b.get("is_error")))
            for b in blocks
            if b.get("type") == "tool_result"
        ]
    tools = [Tool(t["name"], t.get("input_schema") or {}) for t in body.get("tools") or [] if "name" in t]
    names = {
        b.get("id"): b.get("name")
        for m in msgs
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }
    ids = [b.get("tool_use_id") for b in msgs[-1].get("content") or [] if isinstance(b, dict)] if msgs else []
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    asked, calls = _since_asked(msgs)
    return Conversation(
        prompt="\n".join(prompt),
        tools=tools,
        system=_system_text(body.get("system")),
        tool_results=results,
        json_schema=fmt.get("schema") if isinstance(fmt, dict) else None,
        result_of=next((names[i] for i in reversed(ids) if i in names), "") if results else "",
        asked=asked,
        calls_since_asked=calls,
    )


def _since_asked(msgs: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The text of the last user message that carries no tool result (Claude Code adds reminder text
    beside results: those are no new ask), and the tools called after it."""
    for index in range(len(msgs) - 1, -1, -1):
        m = msgs[index]
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if m.get("role") == "user" and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
            calls = [b.get("name", "") for later in msgs[index + 1:] if later.get("role") == "assistant"
                     and isinstance(later.get("content"), list) for b in later["content"]
                     if isinstance(b, dict) and b.get("type") == "tool_use"]
            return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"), calls
    return "", []


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking is not None:
        signature = base64.b64encode(os.urandom(48)).decode()
        blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    if reply.tool_call is not None:
        call = reply.tool_call
        blocks.append({"type": "tool_use", "id": _id("toolu_"), "name": call.name, "input": call.arguments})
    return blocks


def _usage(body: Any, content: list[dict[str, Any]], input_tokens: int | None) -> dict[str, Any]:
    return {
        "input_tokens": estimate_tokens(body) if input_tokens is None else input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": estimate_tokens(content),
        "service_tier": "standard",
    }


def _stream(message: dict[str, Any]) -> Iterator[SseEvent]:
    """The real event sequence; the text of each block arrives in two deltas."""
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    yield SseEvent({"type": "message_start", "message": start}, "message_start")
    yield SseEvent({"type": "ping"}, "ping")
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "thinking":
            empty: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": part} for part in _halves(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": part} for part in _halves(block["text"])]
        else:
            empty = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in _halves(arguments)]
        yield SseEvent(
            {"type": "content_block_start", "index": index, "content_block": empty}, "content_block_start"
        )
        for delta in deltas:
            yield SseEvent(
                {"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"
            )
        yield SseEvent({"type": "content_block_stop", "index": index}, "content_block_stop")
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield SseEvent({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta")
    yield SseEvent({"type": "message_stop"}, "message_stop")


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]
