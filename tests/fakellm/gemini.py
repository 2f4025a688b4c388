"""Gemini API: ``POST /v1beta/models/<m>:generateContent``, ``:streamGenerateContent`` (``?alt=sse``),
``:countTokens``, and ``GET /v1beta/models`` (Gemini CLI).

Gemini CLI first asks a model router for JSON (``complexity_reasoning``, ``complexity_score`` 1-100) and
later may ask whether the user or the model speaks next; both come with a ``responseSchema`` /
``responseJsonSchema`` and get a schema-valid answer from :func:`script.schema_instance`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.fakellm.script import Conversation, Reply, Tool, decide
from tests.fakellm.wire import JsonResponse, Request, Response, SseEvent, SseResponse, estimate_tokens
from tests.fakellm.wire import new_id as _id

MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "fake-model")


def models_action(req: Request) -> Response:
    """``/v1beta/models/<model>:<action>``; the model name may itself contain dots and dashes."""
    model, _, action = req.path.rsplit("/", 1)[-1].partition(":")
    body = req.body if isinstance(req.body, dict) else {}
    if action == "countTokens":
        return JsonResponse({"totalTokens": estimate_tokens(body.get("contents") or body)})
    if action not in ("generateContent", "streamGenerateContent"):
        return _error(404, f"unknown action {action!r}")
    if not isinstance(body.get("contents"), list):
        return _error(400, "contents: field required")
    reply = decide(conversation(body))
    parts = _parts(reply)
    response = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _usage(body, parts, reply.input_tokens),
        "modelVersion": model,
        "responseId": _id(""),
    }
    if action == "streamGenerateContent":
        # alt=sse is what every client asks for; without it the API streams one JSON array.
        if req.query.get("alt") != "sse":
            return JsonResponse([response], delay=reply.delay)
        return SseResponse(_stream(response), delay=reply.delay)
    return JsonResponse(response, delay=reply.delay)


def list_models(req: Request) -> Response:
    methods = ["generateContent", "streamGenerateContent", "countTokens"]
    models = [
        {
            "name": f"models/{m}",
            "version": "001",
            "displayName": m,
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": methods,
            "thinking": True,
        }
        for m in MODELS
    ]
    return JsonResponse({"models": models})


def get_model(req: Request) -> Response:
    name = req.path.rsplit("/", 1)[-1]
    return JsonResponse({"name": f"models/{name}", "displayName": name, "inputTokenLimit": 1048576})


def conversation(body: dict[str, Any]) -> Conversation:
    contents = body["contents"]
    last = contents[-1] if contents else {}
    parts = [p for p in last.get("parts") or [] if isinstance(p, dict)]
    prompt, results, result_of = "", [], ""
    if last.get("role", "user") == "user":
        prompt = "\n".join(
            p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
        )
        for p in parts:
            if isinstance(resp := p.get("functionResponse"), dict):
                results.append(_result(resp.get("response")))
                result_of = resp.get("name", "")
        if results:
            prompt = ""  # the text beside a functionResponse is CLI bookkeeping, not a new ask
    tools = [
        Tool(fn["name"], fn.get("parametersJsonSchema") or fn.get("parameters") or {})
        for t in body.get("tools") or []
        for fn in t.get("functionDeclarations") or t.get("function_declarations") or []
        if "name" in fn
    ]
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    asked, calls = _since_asked(contents)
    wants_json = "json" in str(config.get("responseMimeType", "")).lower()
    return Conversation(
        prompt=prompt,
        tools=tools,
        system=_text((body.get("systemInstruction") or {}).get("parts")),
        tool_results=results,
        json_schema=_lower_types(schema) if schema else None,
        result_of=result_of,
        json_mode=wants_json,
        asked=asked,
        calls_since_asked=calls,
    )


def _since_asked(contents: list[Any]) -> tuple[str, list[str]]:
    """The text of the last user content that carries no functionResponse (the text Gemini CLI sends beside
    one is bookkeeping), and the functions called after it."""
    for index in range(len(contents) - 1, -1, -1):
        parts = [p for p in contents[index].get("parts") or [] if isinstance(p, dict)]
        if contents[index].get("role", "user") == "user" and not any("functionResponse" in p for p in parts):
            calls = [p["functionCall"].get("name", "") for c in contents[index + 1:] if c.get("role") == "model"
                     for p in c.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)]
            return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")), calls
    return "", []


def _result(response: Any) -> tuple[str, bool]:
    if not isinstance(response, dict):
        return str(response), False
    if "error" in response:
        return _as_text(response["error"]), True
    return _as_text(response.get("output", response)), False


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _text(parts: Any) -> str:
    if isinstance(parts, list):
        return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    return ""


def _lower_types(schema: Any) -> Any:
    """``responseSchema`` uses OpenAPI type names in capitals (``OBJECT``, ``INTEGER``)."""
    if isinstance(schema, dict):
        return {
            k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _parts(reply: Reply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if reply.thinking is not None:
        parts.append({"text": reply.thinking, "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    if (call := reply.tool_call) is not None:
        parts.append({"functionCall": {"name": call.name, "args": call.arguments}})
    return parts


def _usage(body: Any, parts: list[dict[str, Any]], input_tokens: int | None) -> dict[str, Any]:
    prompt = estimate_tokens(body) if input_tokens is None else input_tokens
    thoughts = sum(estimate_tokens(p["text"]) for p in parts if p.get("thought"))
    candidates = estimate_tokens([p for p in parts if not p.get("thought")])
    usage = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _stream(response: dict[str, Any]) -> Iterator[SseEvent]:
    """One chunk per part; only the last carries ``finishReason`` and ``usageMetadata``."""
    candidate = response["candidates"][0]
    parts = candidate["content"]["parts"] or [{"text": ""}]
    head = {"modelVersion": response["modelVersion"], "responseId": response["responseId"]}
    for n, part in enumerate(parts):
        chunk_candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [chunk_candidate], **head}
        if n == len(parts) - 1:
            chunk_candidate["finishReason"] = candidate["finishReason"]
            chunk["usageMetadata"] = response["usageMetadata"]
        yield SseEvent(chunk)


def _error(status: int, message: str) -> JsonResponse:
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}
    return JsonResponse(
        {"error": {"code": status, "message": message, "status": names.get(status, "INTERNAL")}}, status
    )
