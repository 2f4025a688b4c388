"""Claude Code as a target: the conversation as a session transcript (``<projects>/<cwd folder>/<id>.jsonl``).

What Claude Code 2.1 needs to resume it (each found by removing it, ``/work/shared/formats/resume.md``): a
``timestamp`` on every record; an unbroken ``uuid``/``parentUuid`` chain (without it Claude sends only the last
message, and exits 0); a ``message.id`` of its own on every assistant message (else messages merge wrongly);
``tool_result`` blocks first in their user message. Its session picker lists a session whose head says
``"entrypoint":"cli"`` in compact JSON (it hides ``sdk-*`` sessions), under the title a ``summary`` record gives.
Pure: a conversation in, records out; where the file goes is harvester/resume/placement.py's.
"""

from __future__ import annotations

import uuid
from typing import Any

from harvester.resume.conversation import Conversation
from harvester.resume.records import Context, joined
from harvester.resume.tools import input_object

NAME = "claude-code"
SHELL = ("Bash", "command")
MODEL = "claude-resumed"  # an assistant message's model where the source names none (not sent to the API)


def records(conversation: Conversation, ctx: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parent: str | None = None

    def add(kind: str, message: dict[str, Any]) -> None:
        nonlocal parent
        record_id = str(uuid.uuid4())
        out.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "entrypoint": "cli",
                    "cwd": ctx.cwd, "sessionId": ctx.session_id, "type": kind, "message": message,
                    "uuid": record_id, "timestamp": ctx.clock.iso()})
        parent = record_id

    for turn in conversation.turns:
        if turn.role == "user":
            add("user", {"role": "user", "content": joined(turn.texts)})
            continue
        content: list[dict[str, Any]] = [{"type": "text", "text": text} for text in turn.texts]
        content += [{"type": "tool_use", "id": call.id, "name": call.name, "input": input_object(call)}
                    for call in turn.calls]
        add("assistant", {"id": f"msg_{uuid.uuid4().hex}", "type": "message", "role": "assistant",
                          "model": turn.model or conversation.source.model or MODEL, "content": content,
                          "stop_reason": "tool_use" if turn.calls else "end_turn", "stop_sequence": None})
        # No ``usage``: a copied answer is no new model response (harvester usage would count one per copy).
        if turn.calls:
            add("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": call.result.text if call.result else "",
                 "is_error": bool(call.result and call.result.is_error)} for call in turn.calls]})
    out.append({"type": "summary", "summary": ctx.title, "leafUuid": parent})
    return out
