"""Gemini CLI as a target: the conversation as a chat (``tmp/<project>/chats/session-<time>-hv<id6>.jsonl``).

What Gemini CLI 0.61 needs to resume it (``/work/shared/formats/resume.md``): a header with ``sessionId`` and
``projectHash`` (else "No previous sessions found", exit 42); a tool call's result on the call itself
(``toolCalls[].result``: a separate functionResponse record is ignored on resume). A user message whose text
starts with ``/``, ``?``, ``<session_context>`` or ``<hook_context>`` is dropped from a resumed history: such a
text is prefixed (counted in the changes). Pure: a conversation in, records out.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from harvester.resume.conversation import Conversation
from harvester.resume.records import Context, joined
from harvester.resume.tools import input_object

NAME = "gemini-cli"
SHELL = ("run_shell_command", "command")
MODEL = "gemini-resumed"  # a model message's model where the source names none
SKIPPED = ("/", "?", "<session_context>", "<hook_context>")  # isIgnoredUserContent (0.61)
PREFIX = "[as typed] "


def records(conversation: Conversation, ctx: Context) -> list[dict[str, Any]]:
    started = ctx.clock.iso()
    out: list[dict[str, Any]] = [{
        "sessionId": ctx.session_id, "projectHash": hashlib.sha256(ctx.cwd.encode()).hexdigest(),
        "startTime": started, "lastUpdated": started, "kind": "main"}]
    for turn in conversation.turns:
        text = joined(turn.texts)
        if turn.role == "user":
            if text.strip().startswith(SKIPPED) or not text.strip():
                text = PREFIX + text
                conversation.changes.escaped_prompts += 1
            out.append({"id": str(uuid.uuid4()), "timestamp": ctx.clock.iso(), "type": "user",
                        "content": [{"text": text}]})
            continue
        message: dict[str, Any] = {"id": str(uuid.uuid4()), "timestamp": ctx.clock.iso(), "type": "gemini",
                                   "content": text, "thoughts": [],
                                   "model": turn.model or conversation.source.model or MODEL}
        if turn.calls:
            message["toolCalls"] = [_call(call, ctx) for call in turn.calls]
        out.append(message)
    out.append({"$set": {"lastUpdated": ctx.clock.iso()}})
    return out


def _call(call: Any, ctx: Context) -> dict[str, Any]:
    result = call.result
    error = bool(result and result.is_error)
    text = result.text if result else ""
    response = {"functionResponse": {"id": call.id, "name": call.name,
                                     "response": {"error": text} if error else {"output": text}}}
    return {"id": call.id, "name": call.name, "args": input_object(call), "result": [response],
            "status": "error" if error else "success", "timestamp": ctx.clock.iso()}
