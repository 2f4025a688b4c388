"""OpenAI Chat Completions: ``POST /v1/chat/completions``, streaming (SSE) and not.

Used by Qwen Code, opencode, Kilo, Continue and Aider. Thinking goes out as ``reasoning_content`` (the
field DeepSeek, Qwen and ``@ai-sdk/openai-compatible`` read). Aider offers no tools: it shows the model the
files "added to the chat", so for a ``READ_FILE`` prompt the reply names the file (Aider then offers to add
it, ``--yes-always`` accepts, and the next request carries its content) and, once the content is in the
conversation, quotes it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from tests.fakellm.script import READ_FILE, Conversation, Reply, Tool, decide, is_side_request
from tests.fakellm.wire import JsonResponse, Request, Response, SseEvent, SseResponse, error, estimate_tokens
from tests.fakellm.wire import new_id as _id

# How agents phrase a failed read in a tool message (there is no is_error flag in this protocol).
FAILED = re.compile(
    r"^\s*(error\b|<tool_use_error>)|ENOENT|No such file|not found|does not exist|exit(?:ed with)? code:? *[1-9]",
    re.IGNORECASE,
)
AIDER_ADDED = "I added these files to the chat:"
ASK_FOR_FILE = "To answer I need to see"
OPENCLAW_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
DSH_CONTEXT = "Current runtime context. This snapshot supersedes"  # dsh: a plugin snapshot after the prompt
GPTME_TIME = "<system_info>The time is now "  # gptme: a time notice after a tool result (hooks/time_awareness.py)
# Kimi Code: reminders (date, permission mode) as user messages of their own after the prompt (injection origin).
KIMI_CODE_REMINDER = "<system-reminder>"


def chat_completions(req: Request) -> Response:
    body = req.body
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return error(400, "messages: field required")
    conv = conversation(body)
    reply = aider_reply(body, conv) or decide(conv)
    message = _message(reply)
    finish = "tool_calls" if reply.tool_call else "stop"
    usage = _usage(body, message, reply.input_tokens)
    completion_id, created, model = _id("chatcmpl-"), int(time.time()), body.get("model", "fake-model")
    if body.get("stream"):
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = _stream(completion_id, created, model, message, finish, usage if include_usage else None)
        return SseResponse(chunks, delay=reply.delay)
    return JsonResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": usage,
            "system_fingerprint": None,
        },
        delay=reply.delay,
    )


def conversation(body: dict[str, Any]) -> Conversation:
    msgs = body["messages"]
    while len(msgs) > 1 and msgs[-1].get("role") in ("user", "system") and _text(msgs[-1].get("content")).startswith(
            (OPENCLAW_CONTEXT, DSH_CONTEXT, GPTME_TIME, KIMI_CODE_REMINDER)):  # OpenClaw sends its runtime context as a user message after the real one
        msgs = msgs[:-1]
    last = msgs[-1] if msgs else {}
    prompt = _text(last.get("content")) if last.get("role") == "user" else ""
    results: list[tuple[str, bool]] = []
    result_of = ""
    if last.get("role") in ("tool", "function"):
        # All results of the last assistant turn; the script only looks at the last one.
        start = len(msgs)
        while start > 0 and msgs[start - 1].get("role") in ("tool", "function"):
            start -= 1
        for m in msgs[start:]:
            output = _text(m.get("content"))
            results.append((output, bool(FAILED.search(output))))
        call_id = last.get("tool_call_id")
        calls = [c for m in msgs if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
        result_of = next(
            ((c.get("function") or {}).get("name", "") for c in calls if c.get("id") == call_id),
            last.get("name", ""),
        )
    tools = [
        Tool(fn["name"], fn.get("parameters") or {})
        for t in body.get("tools") or []
        if isinstance(fn := t.get("function"), dict) and "name" in fn
    ]
    system = "\n".join(_text(m.get("content")) for m in msgs if m.get("role") in ("system", "developer"))
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
    asked_at = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].get("role") == "user"), None)
    return Conversation(
        prompt=prompt,
        tools=tools,
        system=system,
        tool_results=results,
        json_schema=schema,
        result_of=result_of,
        json_mode=fmt.get("type") == "json_object",
        asked=_text(msgs[asked_at].get("content")) if asked_at is not None else "",
        calls_since_asked=[(c.get("function") or {}).get("name", "") for m in msgs[(asked_at or 0) + 1:]
                           if m.get("role") == "assistant" for c in m.get("tool_calls") or []],
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def aider_reply(body: dict[str, Any], conv: Conversation) -> Reply | None:
    """Aider's stand-in for a tool call: ask for the file by name, then quote it once it was added.

    None when the request is not one of those (the script decides as usual).
    """
    if conv.tools or body.get("tools") or is_side_request(conv):
        return None
    asked = conv.prompt
    if asked.startswith(AIDER_ADDED):  # Aider's follow-up after adding the file: the ask came earlier
        users = [_text(m.get("content")) for m in body["messages"] if m.get("role") == "user"]
        asked = next((u for u in reversed(users) if READ_FILE.search(u)), "")
    if not (m := READ_FILE.search(asked)):
        return None
    name = PurePosixPath(m.group(1)).name
    for msg in body["messages"]:
        text = _text(msg.get("content"))
        # Aider shows an added file as its relative path on a line of its own, then a fenced block.
        if found := re.search(rf"(?m)^(?:\S*/)?{re.escape(name)}\n```[^\n]*\n(.*?)^```", text, re.S):
            return Reply(text=f"The file says: {' '.join(found.group(1).split())[:300]}")
    return Reply(text=f"{ASK_FOR_FILE} {name}. Please add {name} to the chat.")


def _message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.thinking is not None:
        message["reasoning_content"] = reply.thinking
    if (call := reply.tool_call) is not None:
        function = {"name": call.name, "arguments": json.dumps(call.arguments)}
        message["tool_calls"] = [{"id": _id("call_"), "type": "function", "function": function}]
    return message


def _usage(body: Any, message: dict[str, Any], input_tokens: int | None) -> dict[str, Any]:
    prompt = estimate_tokens(body) if input_tokens is None else input_tokens
    completion = estimate_tokens(message)
    reasoning = estimate_tokens(message["reasoning_content"]) if "reasoning_content" in message else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _stream(
    completion_id: str,
    created: int,
    model: str,
    message: dict[str, Any],
    finish: str,
    usage: dict[str, Any] | None,
) -> Iterator[SseEvent]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> SseEvent:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return SseEvent(_chunk(completion_id, created, model, [choice]))

    yield chunk({"role": "assistant", "content": ""})
    if "reasoning_content" in message:
        for part in _halves(message["reasoning_content"]):
            yield chunk({"reasoning_content": part})
    for part in _halves(message["content"] or ""):
        yield chunk({"content": part})
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {"tool_calls": [{**head, "function": {"name": call["function"]["name"], "arguments": ""}}]}
        )
        for part in _halves(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, finish)
    if usage is not None:  # stream_options.include_usage: one more chunk, with no choices
        yield SseEvent({**_chunk(completion_id, created, model, []), "usage": usage})
    yield SseEvent("[DONE]")


def _chunk(completion_id: str, created: int, model: str, choices: list[Any]) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": choices,
    }


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]
