"""Qwen Code as a target: the conversation as a chat (``projects/<cwd folder>/chats/<id>.jsonl``).

Qwen Code (a Gemini CLI fork) keeps Claude Code's envelope (``uuid``/``parentUuid`` chain, ``sessionId``,
``timestamp``, ``cwd``) around Gemini's content (``message.parts``: ``text``, ``functionCall``,
``functionResponse``), a tool's result in a ``tool_result`` record of its own after the call. ``qwen --resume
<id>`` finds the file by its name in the folder of the directory it runs in. Pure: a conversation in, records out.
"""

from __future__ import annotations

import uuid
from typing import Any

from harvester.resume.conversation import Conversation
from harvester.resume.records import Context, joined
from harvester.resume.tools import input_object

NAME = "qwen-code"
SHELL = ("run_shell_command", "command")
MODEL = "qwen-resumed"


def records(conversation: Conversation, ctx: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent: str | None = None

    def add(kind: str, message: dict[str, Any], **more: Any) -> None:
        nonlocal parent
        record_id = str(uuid.uuid4())
        out.append({"uuid": record_id, "parentUuid": parent, "sessionId": ctx.session_id,
                    "timestamp": ctx.clock.iso(), "type": kind, "cwd": ctx.cwd, "message": message, **more})
        parent = record_id

    for turn in conversation.turns:
        if turn.role == "user":
            add("user", {"role": "user", "parts": [{"text": joined(turn.texts)}]})
            continue
        parts: list[dict[str, Any]] = [{"text": text} for text in turn.texts]
        parts += [{"functionCall": {"id": call.id, "name": call.name, "args": input_object(call)}}
                  for call in turn.calls]
        add("assistant", {"role": "model", "parts": parts}, model=turn.model or conversation.source.model or MODEL)
        for call in turn.calls:
            result = call.result
            error = bool(result and result.is_error)
            text = result.text if result else ""
            add("tool_result", {"role": "user", "parts": [{"functionResponse": {
                "id": call.id, "name": call.name, "response": {"error": text} if error else {"output": text}}}]},
                toolCallResult={"callId": call.id, "status": "error" if error else "success"})
    return out
