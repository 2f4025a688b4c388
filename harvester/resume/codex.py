"""Codex CLI as a target: the conversation as a rollout (``sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

What Codex 0.171 needs to resume it (``/work/shared/formats/resume.md``): a first ``session_meta`` record with
``id``, ``timestamp``, ``cwd``, ``originator`` and ``cli_version`` (else "does not start with session
metadata"); a top-level ``timestamp`` on EVERY line (a line without one is skipped in silence). Its picker lists
a session of ``source: "cli"`` recorded under the configured model provider, previewed by its first
``user_message`` event. Codex finds the file by the id in its name and indexes it itself: its state databases
are never written. Pure: a conversation in, records out.
"""

from __future__ import annotations

from typing import Any

import orjson

from harvester import __version__
from harvester.resume.conversation import Conversation
from harvester.resume.records import Context, joined
from harvester.resume.tools import input_object

NAME = "codex"
SHELL = ("exec_command", "cmd")
ERROR = "[the tool reported an error]\n"  # a rollout's call output has no error flag: the text says it


def records(conversation: Conversation, ctx: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        out.append({"timestamp": ctx.clock.iso(), "type": kind, "payload": payload})

    started = ctx.clock.iso()
    meta: dict[str, Any] = {"id": ctx.session_id, "timestamp": started, "cwd": ctx.cwd, "originator": "harvester",
                            "cli_version": __version__, "source": "cli"}
    if ctx.provider:
        meta["model_provider"] = ctx.provider
    out.append({"timestamp": started, "type": "session_meta", "payload": meta})
    for turn in conversation.turns:
        text = joined(turn.texts)
        if turn.role == "user":
            add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
            add("event_msg", {"type": "user_message", "message": text, "images": [], "local_images": [],
                              "text_elements": []})
            continue
        if text:
            add("response_item", {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": text}]})
        for call in turn.calls:
            add("response_item", {"type": "function_call", "name": call.name,
                                  "arguments": orjson.dumps(input_object(call)).decode(), "call_id": call.id})
        for call in turn.calls:
            result = call.result
            output = "" if result is None else (ERROR if result.is_error else "") + result.text
            add("response_item", {"type": "function_call_output", "call_id": call.id, "output": output})
    return out
