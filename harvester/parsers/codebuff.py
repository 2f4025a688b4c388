"""Codebuff (and Freebuff): ``~/.config/manicode/projects/<project>/chats/<started>/chat-messages.json``.

Format facts and their sources: ``fixtures/codebuff/SOURCE.md``. In short:

- ``chat-messages.json`` is the CLI's chat as it renders it, one JSON array rewritten whole: messages with
  an ``id``, a ``variant`` (``user`` / ``ai`` / ``agent`` / ``error``), ``isComplete`` once an answer finished, ``content`` and a ``timestamp`` (ISO, or in older
  files a bare ``03:04 PM`` wall-clock time with no date or zone, which is not turned into a time here).
- An ``ai`` message holds ``blocks``: ``text`` (``textType: reasoning`` for thinking), ``tool`` (``toolName``,
  ``toolCallId``, ``input`` and, once it ran, ``output``), ``agent`` (a spawned subagent, inline: its
  ``agentType``, ``initialPrompt``, ``status`` and final ``content``; no file of its own), ``mode-divider``,
  ``plan``, ``ask-user``, ``image``; UI-only ``agent-list`` / ``gate-state`` / ``html`` are skipped. Anything
  else is drift. An ``agent`` block nests the spawned agent's own ``blocks``: read in place.
- ``run-state.json`` beside it (the sidecar) gives the working dir and the agent template (``agentType``;
  Freebuff's templates contain ``free``) and the credits used. The LLM is chosen on Codebuff's servers
  and never stored.
- The chat's folder name is when it started; the native id is ``<project>:<folder>`` (the folder alone is
  not unique across projects).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_value, render_call

NAME = "codebuff"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # getConfigDir() is os.homedir()/.config/manicode on every OS (no XDG, no variable); development
    # builds add a suffix (manicode-dev), which users do not run.
    return [home / ".config" / "manicode" / "projects"]


def _run_state(path: PurePath) -> PurePath:
    return path.with_name("run-state.json")


SOURCES = (SourceSpec("*/chats/*/chat-messages.json", "json", "main", sidecar=_run_state),)

# npm's codebuff (and freebuff) install a node launcher that downloads and runs the native binary.
PROCESSES = ("codebuff", "freebuff")

_CALL_KEYS = ("command", "path", "paths", "pattern", "query", "prompt", "url")
_FOLDER_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?Z$")
_BLOCK_KINDS = frozenset({"text", "tool", "agent", "mode-divider", "plan", "ask-user", "image"})
# The CLI's own UI state, with nothing for a transcript: skipped on purpose (html is never serialized).
_UI_BLOCKS = frozenset({"agent-list", "gate-state", "html"})


class _Reader:
    def __init__(self, ref: SourceRef, batch: Batch, line: int) -> None:
        self.ref, self.batch, self.line = ref, batch, line
        self.session_id = f"{ref.path.parent.parent.parent.name}:{ref.path.parent.name}"
        self.drifted: set[str] = set()

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.session_id)

    def event(self, uid: str, **fields: Any) -> Event:
        event = Event(self.session_id, uid, **fields)
        self.batch.events.append(event)
        return event

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:  # once per document, not once per message
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    # The file is rewritten whole as the answer streams and tools finish: an event whose uid the bank
    # holds is replaced (a tool's output arrives in the block that announced the call).
    batch = Batch(revise=True, state=state)
    for record in records:
        reader = _Reader(ref, batch, record.line)
        try:
            data = json_value(record.raw)
        except orjson.JSONDecodeError as exc:
            batch.problems.append(Problem("malformed", record.line, f"invalid JSON: {exc}"))
            continue
        if not isinstance(data, list):
            batch.problems.append(Problem("malformed", record.line, "chat-messages.json is not an array"))
            continue
        _session(reader, ref.sidecar)
        for index, message in enumerate(data):
            try:
                _message(reader, index, message)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                batch.problems.append(Problem("malformed", record.line,
                                              f"message {index} of unexpected shape: {describe_error(exc)}"))
    return batch


def _session(reader: _Reader, sidecar: bytes | None) -> None:
    patch = reader.patch
    started = _FOLDER_TIME.match(reader.ref.path.parent.name)
    if started:
        day, hh, mm, ss, frac = started.groups()
        patch.started_at = f"{day}T{hh}:{mm}:{ss}{frac or '.000'}Z"
    if not sidecar:
        return
    try:
        run = orjson.loads(sidecar)
    except orjson.JSONDecodeError:
        return  # mid-rewrite: the next read has it whole
    session = run.get("sessionState") if isinstance(run, dict) else None
    if not isinstance(session, dict):
        return
    files, main = session.get("fileContext") or {}, session.get("mainAgentState") or {}
    if isinstance(files, dict) and isinstance(files.get("cwd"), str) and files["cwd"]:
        patch.cwd = files["cwd"]
    if isinstance(main, dict):
        agent = main.get("agentType")
        if isinstance(agent, str) and agent:
            patch.note(agent_type=agent, product="freebuff" if "free" in agent.lower() else "codebuff")
        if isinstance(main.get("creditsUsed"), (int, float)):
            patch.note(credits_used=main["creditsUsed"])


def _message(reader: _Reader, index: int, message: Any) -> None:
    if not isinstance(message, dict):
        raise TypeError("message is not an object")
    own = message.get("id")
    uid = str(own) if isinstance(own, str) and own else f"#{index}"  # ids are written with every message
    ts = _timestamp(message.get("timestamp"))
    if ts:
        reader.patch.updated_at = ts
    variant = message.get("variant")
    if variant == "user":
        text = (message.get("content") or "").strip()
        images = [_image(b) for b in [*(message.get("blocks") or []), *(message.get("attachments") or [])]
                  if isinstance(b, dict) and (b.get("type") == "image" or "path" in b)]
        text = "\n".join([text, *images]).strip()
        if text:
            reader.event(uid, ts=ts, role="user", kind="text", text=text)
            reader.patch.offer_title(text.splitlines()[0][:80], "first-prompt")
    elif variant in ("ai", "agent"):
        # "agent" messages are a spawned agent's own replies shown in the chat (ChatVariant).
        extra = {"meta": {"agent": (message.get("agent") or {}).get("agentType")}} if variant == "agent" else {}
        for number, block in enumerate(message.get("blocks") or []):
            _block(reader, f"{uid}:{number}", ts, block)
        if isinstance(message.get("content"), str) and message["content"].strip() and not message.get("blocks"):
            reader.event(uid, ts=ts, role="assistant", kind="text", text=message["content"], **extra)
        if variant == "ai" and "isComplete" in message:
            # Set when the response finished streaming: the one end-of-turn signal the file has.
            reader.patch.note(last_turn="complete" if message["isComplete"] else "open")
    elif variant == "error":
        reader.event(uid, ts=ts, role="system", kind="meta", text=message.get("content") or "error",
                     meta={"error": True})
    else:
        reader.drift(f"message variant={variant!r}")


def _block(reader: _Reader, uid: str, ts: str | None, block: Any) -> None:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind in _UI_BLOCKS:
        return
    if kind not in _BLOCK_KINDS:
        reader.drift(f"ai block type={kind!r}")
        return
    if kind == "text":
        text = block.get("content") or ""
        if text.strip():
            reader.event(uid, ts=ts, role="assistant", text=text,
                         kind="thinking" if block.get("textType") == "reasoning" else "text")
    elif kind == "tool":
        name, tool_input, call = block.get("toolName"), block.get("input"), block.get("toolCallId")
        reader.event(uid, ts=ts, role="assistant", kind="tool_call", tool_name=name, tool_input=tool_input,
                     tool_call_id=call, text=render_call(name, tool_input, _CALL_KEYS))
        if "output" in block:
            output = block["output"]
            text = output if isinstance(output, str) else orjson.dumps(output).decode()
            reader.event(f"{uid}:result", ts=ts, role="tool", kind="tool_result", tool_name=name,
                         tool_call_id=call, text=text)
    elif kind == "agent":
        # A spawned agent lives inside the chat (no file of its own): a call, and its answer as the result.
        name, call = block.get("agentType") or block.get("agentName"), block.get("agentId")
        tool_input = {k: block[k] for k in ("agentName", "initialPrompt", "params") if block.get(k) is not None}
        reader.event(uid, ts=ts, role="assistant", kind="tool_call", tool_name=name, tool_input=tool_input,
                     tool_call_id=call, text=render_call(name, tool_input, ("initialPrompt", "agentName")),
                     meta={"subagent": True, "status": block.get("status") or "spawned"})
        for number, inner in enumerate(block.get("blocks") or []):  # what the agent did, nested
            _block(reader, f"{uid}:{number}", ts, inner)
        if isinstance(block.get("content"), str) and block["content"]:
            reader.event(f"{uid}:result", ts=ts, role="tool", kind="tool_result", tool_name=name,
                         tool_call_id=call, text=block["content"])
    elif kind == "mode-divider":
        reader.event(uid, ts=ts, role="system", kind="meta", text=f"mode: {block.get('mode')}")
    elif kind == "plan":
        reader.event(uid, ts=ts, role="assistant", kind="text", text=block.get("content") or "",
                     meta={"plan": True})
    elif kind == "ask-user":
        asked = [q.get("question") for q in block.get("questions") or [] if isinstance(q, dict) and q.get("question")]
        reader.event(uid, ts=ts, role="assistant", kind="text", text="\n".join(asked), meta={"ask_user": True})
    else:  # image
        reader.event(uid, ts=ts, role="assistant", kind="text", text=_image(block))


def _image(block: dict) -> str:
    return f"[image: {block['filename']}]" if block.get("filename") else "[image]"


def _timestamp(value: Any) -> str | None:
    """ISO timestamps as written; a bare wall-clock time ("03:04 PM", older CLIs) names no day and no
    zone, so it gives no time here (the chat's folder still dates the session)."""
    if isinstance(value, str) and "T" in value and "-" in value:
        return value
    return None
