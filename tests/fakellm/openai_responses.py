"""OpenAI Responses API: ``POST /v1/responses``, streaming (SSE) and not."""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from tests.fakellm.script import Conversation, Reply, Tool, decide
from tests.fakellm.wire import JsonResponse, Request, Response, SseEvent, SseResponse, error, estimate_tokens
from tests.fakellm.wire import new_id as _id

RESULT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
FAILED = re.compile(r"exit(?:ed with)? code:? *[1-9]|No such file|not found", re.IGNORECASE)


def responses(req: Request) -> Response:
    body = req.body
    if not isinstance(body, dict) or "input" not in body:
        return error(400, "input: field required")
    reply = decide(conversation(body))
    response = {
        "id": _id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": body.get("model", "fake-model"),
        "output": _items(reply, want_encrypted="reasoning.encrypted_content" in (body.get("include") or [])),
        "usage": None,
    }
    response["usage"] = _usage(body, response["output"], reply.input_tokens)
    if body.get("stream"):
        return SseResponse(_stream(response), headers={"x-request-id": _id("req_")}, delay=reply.delay)
    return JsonResponse(response, delay=reply.delay)


def conversation(body: dict[str, Any]) -> Conversation:
    items = body["input"]
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    last = items[-1] if items else {}
    is_user = last.get("type", "message") == "message" and last.get("role") == "user"
    prompt = _text(last.get("content")) if is_user else ""
    results: list[tuple[str, bool]] = []
    result_of = ""
    if items and items[-1].get("type") in RESULT_TYPES:
        output = _text(items[-1].get("output"))
        results.append((output, bool(FAILED.search(output))))
        call_id = items[-1].get("call_id")
        result_of = next(
            (i.get("name", "") for i in items if i.get("call_id") == call_id and "name" in i), ""
        )
    tools: list[Tool] = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "function" and "name" in tool:
            tools.append(Tool(tool["name"], tool.get("parameters") or {}))
        elif tool.get("type") == "namespace":
            namespace = tool.get("name")
            tools += [Tool(t["name"], t.get("parameters") or {}, namespace) for t in tool.get("tools", [])]
    fmt = (body.get("text") or {}).get("format") or {}
    asked_at = next((i for i in range(len(items) - 1, -1, -1)
                     if items[i].get("type", "message") == "message" and items[i].get("role") == "user"), None)
    return Conversation(
        prompt=prompt,
        tools=tools,
        system=body.get("instructions") or "",
        tool_results=results,
        json_schema=fmt.get("schema") if fmt.get("type") == "json_schema" else None,
        result_of=result_of,
        asked=_text(items[asked_at].get("content")) if asked_at is not None else "",
        calls_since_asked=[i.get("name", "") for i in items[(asked_at or 0) + 1:]
                           if i.get("type") in ("function_call", "custom_tool_call")],
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _items(reply: Reply, want_encrypted: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.thinking is not None:
        reasoning: dict[str, Any] = {
            "type": "reasoning",
            "id": _id("rs_"),
            "summary": [{"type": "summary_text", "text": reply.thinking}],
        }
        if want_encrypted:
            reasoning["encrypted_content"] = base64.b64encode(os.urandom(64)).decode()
        items.append(reasoning)
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": _id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    if (call := reply.tool_call) is not None:
        item = {"type": "function_call", "id": _id("fc_"), "call_id": _id("call_"), "name": call.name}
        if call.namespace:
            item["namespace"] = call.namespace
        items.append({**item, "arguments": json.dumps(call.arguments), "status": "completed"})
    return items


def _usage(body: Any, output: list[dict[str, Any]], input_tokens: int | None) -> dict[str, Any]:
    inp = estimate_tokens(body) if input_tokens is None else input_tokens
    out = estimate_tokens(output)
    reasoning = sum(estimate_tokens(i["summary"]) for i in output if i["type"] == "reasoning")
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def _stream(response: dict[str, Any]) -> Iterator[SseEvent]:
    seq = 0

    def event(kind: str, **fields: Any) -> SseEvent:
        nonlocal seq
        seq += 1
        return SseEvent({"type": kind, "sequence_number": seq - 1, **fields}, kind)

    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=pending)
    yield event("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        yield event("response.output_item.added", output_index=index, item=_in_progress(item))
        yield from _item_deltas(event, index, item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)


def _in_progress(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    return {**item, "summary": []}


def _item_deltas(event: Any, index: int, item: dict[str, Any]) -> Iterator[SseEvent]:
    at = {"item_id": item["id"], "output_index": index}
    if item["type"] == "reasoning":
        for n, part in enumerate(item["summary"]):
            empty = {"type": "summary_text", "text": ""}
            yield event("response.reasoning_summary_part.added", **at, summary_index=n, part=empty)
            yield event("response.reasoning_summary_text.delta", **at, summary_index=n, delta=part["text"])
            yield event("response.reasoning_summary_text.done", **at, summary_index=n, text=part["text"])
            yield event("response.reasoning_summary_part.done", **at, summary_index=n, part=part)
    elif item["type"] == "message":
        part = item["content"][0]
        yield event("response.content_part.added", **at, content_index=0, part={**part, "text": ""})
        yield event("response.output_text.delta", **at, content_index=0, delta=part["text"])
        yield event("response.output_text.done", **at, content_index=0, text=part["text"])
        yield event("response.content_part.done", **at, content_index=0, part=part)
    else:
        yield event("response.function_call_arguments.delta", **at, delta=item["arguments"])
        yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
