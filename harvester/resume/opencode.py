"""opencode (and Kilo CLI, its fork) as a target: the conversation as the JSON ``opencode export`` prints, which
``opencode import`` (``kilo import``) writes into the agent's own database (harvester/resume/convert.py runs it).

What opencode 1.18 needs (``/work/shared/formats/resume.md``): ids of its own form (``prefix_`` + 12 hex digits of
the time in ms times 4096 plus a counter, inverted for a session, + 14 base62 characters), messages and parts
ascending in conversation order (they are read in id order); every user message naming a provider and model that
is configured (else the next turn fails: ProviderModelNotFoundError), so they name the configured default. A tool
part carries its call and its result (``state``). Pure: a conversation in, one document out.
"""

from __future__ import annotations

import secrets
import string
from typing import Any

from harvester.resume.conversation import Conversation
from harvester.resume.records import Context, joined
from harvester.resume.tools import input_object

NAME = "opencode"
SHELL = ("bash", "command")
VERSION = "1.18.33"  # the session's version field (the format's, as the version tested wrote it)
PROVIDER, MODEL = "opencode", "resumed"  # where the configuration names no model: `-m` is then needed
_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


class Ids:
    """opencode's ids: the time and a counter, so that ids made later sort later (a session's id sorts earlier)."""

    def __init__(self, ms: int) -> None:
        self.ms = ms
        self.counter = 0

    def new(self, prefix: str, descending: bool = False) -> str:
        self.counter += 1
        value = self.ms * 0x1000 + self.counter
        if descending:
            value = ~value
        stamp = (value & 0xFFFF_FFFF_FFFF).to_bytes(6, "big").hex()
        return f"{prefix}_{stamp}{''.join(secrets.choice(_BASE62) for _ in range(14))}"


def session_id(ms: int) -> str:
    return Ids(ms).new("ses", descending=True)


def document(conversation: Conversation, ctx: Context, agent: str = "build") -> dict[str, Any]:
    """The export document; ``ctx.session_id`` is an opencode session id (:func:`session_id`); ``agent``: the
    agent its messages name (opencode's default is ``build``, Kilo's ``code``)."""
    provider, model = (ctx.provider or PROVIDER), (ctx.model or MODEL)
    created = ctx.clock.ms()
    ids = Ids(created)
    messages: list[dict[str, Any]] = []
    user_id = ""

    def message(info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        for part in parts:
            part.update({"id": ids.new("prt"), "sessionID": ctx.session_id, "messageID": info["id"]})
        messages.append({"info": info, "parts": parts})

    for turn in conversation.turns:
        at = ctx.clock.ms()
        if turn.role == "user":
            user_id = ids.new("msg")
            message({"id": user_id, "sessionID": ctx.session_id, "role": "user", "time": {"created": at},
                     "agent": agent, "model": {"providerID": provider, "modelID": model}},
                    [{"type": "text", "text": joined(turn.texts)}])
            continue
        parts: list[dict[str, Any]] = [{"type": "text", "text": text, "time": {"start": at, "end": at}}
                                       for text in turn.texts]
        parts += [_tool(call, at) for call in turn.calls]
        message({"id": ids.new("msg"), "sessionID": ctx.session_id, "role": "assistant",
                 "time": {"created": at, "completed": at}, "parentID": user_id, "modelID": model,
                 "providerID": provider, "mode": agent, "agent": agent, "path": {"cwd": ctx.cwd, "root": ctx.cwd},
                 "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                 "finish": "tool-calls" if turn.calls else "stop"}, parts)
    updated = ctx.clock.ms()
    info = {"id": ctx.session_id, "slug": "resumed", "projectID": "global", "directory": ctx.cwd,
            "title": ctx.title, "version": VERSION, "time": {"created": created, "updated": updated}}
    return {"info": info, "messages": messages}


def _tool(call: Any, at: int) -> dict[str, Any]:
    result = call.result
    text = result.text if result else ""
    state: dict[str, Any] = {"input": input_object(call), "time": {"start": at, "end": at}}
    if result is not None and result.is_error:
        state.update({"status": "error", "error": text})
    else:
        state.update({"status": "completed", "output": text, "title": call.name, "metadata": {}})
    return {"type": "tool", "callID": call.id, "tool": call.name, "state": state}


def record_ids(doc: dict[str, Any]) -> list[str]:
    """The ids of a document's messages and parts: the uids of their events when opencode's database is read are
    these, or ``<id>:...`` (harvester/parsers/opencode.py)."""
    return [i for m in doc["messages"] for i in (m["info"]["id"], *(p["id"] for p in m["parts"]))]
