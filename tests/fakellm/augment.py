"""Augment's own backend API, as far as Auggie needs it to run a turn (``AUGMENT_SESSION_AUTH``'s
``tenantURL`` points it here).

Auggie 0.36 posts JSON to ``<tenant>/<endpoint>``; the answer to ``chat-stream`` is newline-delimited
JSON, one ``BackChatResult`` a line (``text``, ``nodes``, ``stop_reason``). Request nodes: 0 text, 1 tool
result, 4 IDE state; response nodes: 0 raw text, 5 tool use (``tool_use {tool_use_id, tool_name,
input_json}``). Every other endpoint it calls at start (models, MCP settings, remote tools, reports) gets
the empty answer it accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.fakellm.script import Conversation, Tool, decide
from tests.fakellm.wire import JsonResponse, Request, Response, SseResponse, error
from tests.fakellm.wire import new_id as _id

END_TURN, TOOL_USE_REQUESTED = 1, 3  # BackChatResult stop_reason values (its Dye enum)
MODEL = "fake-model"
# Endpoints whose answer must hold something of a shape (Auggie's converters reject ``{}``).
EMPTY_ANSWERS: dict[str, Any] = {
    "get-models": {"default_model": MODEL, "models": [
        {"name": MODEL, "suggested_prefix_char_count": 0, "suggested_suffix_char_count": 0}], "feature_flags": {}},
    "agents/list-remote-tools": {"tools": []},
}


class NdjsonResponse(SseResponse):
    """The chunked stream of JSON lines ``chat-stream`` answers with (not SSE events)."""

    def chunks(self) -> Iterator[bytes]:
        for line in self.events:
            yield json.dumps(line, separators=(",", ":")).encode() + b"\n"


def endpoint(req: Request) -> Response:
    name = req.path.strip("/")
    if name == "chat-stream":
        return chat_stream(req)
    return JsonResponse(EMPTY_ANSWERS.get(name, {}))


def chat_stream(req: Request) -> Response:
    body = req.body
    if not isinstance(body, dict):
        return error(400, "chat-stream: a JSON object is required")
    reply = decide(conversation(body))
    lines: list[Any] = []
    if reply.thinking:
        lines.append({"text": "", "nodes": [{"id": 1, "type": 8, "thinking": {"summary": reply.thinking}}]})
    if reply.text:
        middle = len(reply.text) // 2
        for part in (reply.text[:middle], reply.text[middle:]):
            if part:
                lines.append({"text": part, "nodes": [{"id": len(lines) + 1, "type": 0, "content": part}]})
    if reply.tool_call is not None:
        use = {"tool_use_id": _id("toolu_"), "tool_name": reply.tool_call.name,
               "input_json": json.dumps(reply.tool_call.arguments)}
        lines.append({"text": "", "nodes": [{"id": len(lines) + 1, "type": 5, "content": "", "tool_use": use}]})
    lines.append({"text": "", "nodes": [], "stop_reason": TOOL_USE_REQUESTED if reply.tool_call else END_TURN})
    return NdjsonResponse(lines, headers={"X-Fakellm-Wire": "ndjson"}, delay=reply.delay)


def conversation(body: dict[str, Any]) -> Conversation:
    nodes = [n for n in body.get("nodes") or [] if isinstance(n, dict)]
    texts = [str((n.get("text_node") or {}).get("content") or "") for n in nodes if n.get("type") == 0]
    prompt = "\n".join(t for t in texts if t) or str(body.get("message") or "")
    results = [(str(r.get("content") or ""), bool(r.get("is_error")))
               for n in nodes if n.get("type") == 1 and isinstance(r := n.get("tool_result_node"), dict)]
    history = [h for h in body.get("chat_history") or [] if isinstance(h, dict)]
    calls = [(n.get("tool_use") or {}) for h in history for n in h.get("response_nodes") or []
             if isinstance(n, dict) and n.get("type") == 5]
    result_ids = [str(r.get("tool_use_id")) for n in nodes if n.get("type") == 1
                  and isinstance(r := n.get("tool_result_node"), dict)]
    result_of = next((str(c.get("tool_name") or "") for c in calls if result_ids and c.get("tool_use_id") == result_ids[-1]), "")
    tools = []
    for t in body.get("tool_definitions") or []:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            try:
                schema = json.loads(t.get("input_schema_json") or "{}")
            except ValueError:
                schema = {}
            tools.append(Tool(t["name"], schema if isinstance(schema, dict) else {}))
    # The turn's prompt: this request's text, or (after tool results) the last exchange that had one.
    asked = prompt
    since: list[str] = []
    if not asked:
        for h in reversed(history):
            since = [str((n.get("tool_use") or {}).get("tool_name") or "") for n in h.get("response_nodes") or []
                     if isinstance(n, dict) and n.get("type") == 5] + since
            text = h.get("request_message") or "\n".join(
                str((n.get("text_node") or {}).get("content") or "") for n in h.get("request_nodes") or []
                if isinstance(n, dict) and n.get("type") == 0)
            if text:
                asked = text
                break
    return Conversation(prompt="" if results else prompt, tools=tools, tool_results=results if results else [],
                        result_of=result_of, asked=asked, calls_since_asked=since,
                        system=str(body.get("user_guidelines") or ""))


# What Auggie 0.36 calls (a run, a resume): none of them under /v1, so no other agent's path.
ENDPOINTS = re.compile(r"/(?:chat-stream|get-models|prompt-enhancer|report-[\w-]+|record-[\w-]+|client-metrics"
                       r"|settings/[\w/-]+|agents/[\w/-]+|remote-agents/[\w/-]+|[\w-]*batch-upload|find-missing"
                       r"|checkpoint-blobs|indexed-commits/[\w/-]+|get-credit-info|subscription-info|token|notifications/[\w/-]+)")
