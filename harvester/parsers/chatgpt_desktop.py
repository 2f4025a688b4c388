"""The ChatGPT desktop app (macOS): ``~/Library/Application Support/com.openai.chat/``.

Format facts and their sources: ``fixtures/chatgpt_desktop/SOURCE.md`` (closed source: third-party readers'
facts, all UNCONFIRMED against the app itself). In short:

- ``conversations-<uuid>/<conversation>.json`` (or ``.data``): the app's first storage, one plain JSON document
  a conversation, rewritten whole: ChatGPT's conversation shape (``conversation_id`` or ``id``, ``title``,
  ``create_time`` / ``update_time`` in epoch seconds, ``current_node``, ``mapping`` of nodes ``{id, parent,
  children, message}``; a message has ``id``, ``author.role`` (user / assistant / system / tool) and
  ``author.name``, ``create_time``, ``recipient``, ``content`` by ``content_type``, ``metadata.model_slug``).
  Some readers also meet a flat ``messages`` array (``role``, ``content``, ``timestamp``): read too.
- ``conversations-v2-<uuid>/``, ``conversations-v3-<uuid>/``: the later storages, AES-GCM encrypted with a key
  the macOS Keychain gives only to OpenAI's signed apps. Declared opaque: never opened, only counted.
  A hex uuid never starts with ``v``: the readable folders are ``conversations-[!v]*``.

What is read: the active branch only, from ``current_node`` up its ``parent`` links to the root, in that order,
as the app shows it (as agentsview's reader does). Earlier branches (an edited prompt, a regenerated answer) are
not turned into events: they are counted in the session's meta (``other_branch_messages``). A document with no
``current_node`` in its mapping has every message read in ``create_time`` order (as cass does).

Order of reading: the document is the source, rewritten whole; events are keyed by the message's id and
revised in place, so a re-read after the conversation grew replaces nothing it should not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, record_uid
from harvester.parsers.base import (
    OpaqueStore,
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    is_name,
    iso_ms,
    iso_text,
    render_call,
)

NAME = "chatgpt-desktop"
PROCESSES = ("ChatGPT",)
_CALL_KEYS = ("code", "query", "q", "url", "prompt", "text")
_LEGACY = "conversations-[!v]*"
_MAX_NODES = 100_000  # a walk up the parent links stops here: a cycle in a damaged mapping must not loop
# Content types that carry no text to keep: the app's own bookkeeping ("Thought for 5 seconds", a browsing
# display whose results come as tether_quote messages).
_SILENT = frozenset({"reasoning_recap"})


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # The app is for macOS only and no variable moves its folder. The path is a root on every OS (it lies under
    # HOME), so a copy of a Mac's folder is read, and tests lay it out on Linux.
    return [home / "Library" / "Application Support" / "com.openai.chat"]


SOURCES = (SourceSpec(f"{_LEGACY}/*.json", "json", "v1"), SourceSpec(f"{_LEGACY}/*.data", "json", "v1"))
OPAQUE = (OpaqueStore("conversations-v*/*", "conversations of the app's storage v2 and v3, encrypted (AES-GCM) "
                                            "with a key only OpenAI's signed apps get from the macOS Keychain"),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True, state=state)  # rewritten whole: each message's latest version is kept
    for record in records:
        try:
            document = orjson.loads(record.raw)
        except orjson.JSONDecodeError:
            batch.problems.append(Problem("malformed", record.line, "conversation is not valid JSON"))
            continue
        if not isinstance(document, dict):
            batch.problems.append(Problem("malformed", record.line, "conversation is not a JSON object"))
            continue
        try:
            _conversation(batch, ref, document)
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as exc:
            batch.problems.append(Problem("malformed", record.line,
                                          f"conversation of unexpected shape: {describe_error(exc)}"))
    return batch


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _seconds(value: Any) -> str | None:
    """Epoch seconds (ChatGPT writes floats) as the bank's time; epoch milliseconds too (the flat form)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        return iso_text(value) if isinstance(value, str) else None
    if value > 1e14:
        return None
    return iso_ms(value if value > 1e11 else value * 1000)


def _call_input(text: str) -> Any:
    """What an assistant message sends a tool: its JSON (a search's queries) when it is an object, else the text."""
    if text.startswith("{"):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return {"text": text}
        if isinstance(value, dict):
            return value
    return {"text": text}


def _conversation(batch: Batch, ref: SourceRef, document: dict) -> None:
    sid = _text(document.get("conversation_id")) or _text(document.get("id")) or ref.path.stem
    patch = batch.session(sid)
    title = _text(document.get("title"))
    if title and title.strip():
        patch.offer_title(title.strip(), "ai")
    patch.started_at = _seconds(document.get("create_time"))
    patch.updated_at = _seconds(document.get("update_time"))
    model = _text(document.get("default_model_slug")) or _text(document.get("model"))
    if model:
        patch.model = model
    reader = _Reader(batch, sid)
    mapping = document.get("mapping")
    if isinstance(mapping, dict):
        messages, others = _branch(mapping, document.get("current_node"))
        if others:
            patch.note(other_branch_messages=others)
        for index, (key, message) in enumerate(messages):
            reader.message(index + 1, key, message)
    elif isinstance(document.get("messages"), list):
        for index, item in enumerate(document["messages"]):
            if isinstance(item, dict):
                reader.flat(index + 1, item)
            else:
                batch.problems.append(Problem("malformed", index + 1, "message is not an object"))
    else:
        batch.problems.append(Problem("unknown_type", None, "conversation with neither a mapping nor messages"))
    models = [e.model for e in batch.events if e.session == sid and e.model]
    if patch.model is None and models:
        patch.model = models[-1]  # no default model named: the last answer's
    times = [e.ts for e in batch.events if e.session == sid and e.ts]
    if times:
        patch.started_at = patch.started_at or min(times)
        patch.updated_at = patch.updated_at or max(times)
    if patch.title is None and reader.first_prompt:
        patch.offer_title(reader.first_prompt.strip().splitlines()[0][:80], "first-prompt")


def _branch(mapping: dict, current: Any) -> tuple[list[tuple[str, dict]], int]:
    """The messages of the active branch (node key, message), root first, and how many messages the other
    branches hold."""
    nodes = {key: node for key, node in mapping.items() if isinstance(node, dict)}
    with_message = {key for key, node in nodes.items() if isinstance(node.get("message"), dict)}
    if isinstance(current, str) and current in nodes:
        chain, seen, key = [], set(), current
        while isinstance(key, str) and key in nodes and key not in seen and len(chain) < _MAX_NODES:
            seen.add(key)
            chain.append(key)
            key = nodes[key].get("parent")
        chain.reverse()
        kept = [k for k in chain if k in with_message]
        return [(k, nodes[k]["message"]) for k in kept], len(with_message) - len(kept)
    # No current node: every message by its time (those without one last), as cass reads it.
    def order(key: str) -> tuple[bool, float, str]:
        moment = nodes[key]["message"].get("create_time")
        real = isinstance(moment, int | float) and not isinstance(moment, bool) and math.isfinite(moment)
        return (not real, float(moment) if real else 0.0, key)
    return [(k, nodes[k]["message"]) for k in sorted(with_message, key=order)], 0


class _Reader:
    """One conversation's messages into events; a tool's answer is linked to the call before it."""

    def __init__(self, batch: Batch, sid: str) -> None:
        self.batch, self.sid = batch, sid
        self.first_prompt: str | None = None
        self.last_call: str | None = None

    def drift(self, line: int, detail: str) -> None:
        self.batch.problems.append(Problem("unknown_type", line, detail))

    def add(self, uid: str, role: str, kind: str, text: str, ts: str | None, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, role, kind, text, ts=ts, **fields))  # type: ignore[arg-type]

    def message(self, line: int, key: str, message: dict) -> None:
        uid = _text(message.get("id")) or key
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        role, name = author.get("role"), _text(author.get("name"))
        content = message.get("content") if isinstance(message.get("content"), dict) else {}
        ctype = content.get("content_type", "text")
        ts = _seconds(message.get("create_time"))
        meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        model = _text(meta.get("model_slug"))
        hidden = meta.get("is_visually_hidden_from_conversation") is True
        text = self.content_text(line, ctype, content)
        recipient = _text(message.get("recipient"))
        if role == "assistant" and ctype == "thoughts":
            if text:
                self.add(uid, "assistant", "thinking", text, ts, model=model)
        elif role == "assistant" and recipient and recipient != "all":
            # A call to one of ChatGPT's tools (python, web, dalle.text2im, bio...): its input is the content.
            tool_input = {"code": text, "language": content.get("language")} if ctype == "code" else _call_input(text)
            self.last_call = uid
            self.add(uid, "assistant", "tool_call", render_call(recipient, tool_input, _CALL_KEYS), ts,
                     tool_name=recipient, tool_input=tool_input, tool_call_id=uid, model=model)
        elif role == "tool":
            if text:
                self.add(uid, "tool", "tool_result", text, ts, tool_name=name, tool_call_id=self.last_call or uid,
                         is_error=ctype == "system_error")
        elif role in ("system", "user", "assistant") and (hidden or role == "system"):
            if text:  # the system prompt, custom instructions, memory: what the app put in, not a person
                self.add(uid, "system", "text", text, ts, meta={"injected": True})
        elif role == "user":
            if text:
                self.add(uid, "user", "text", text, ts)
                self.first_prompt = self.first_prompt or text
        elif role == "assistant":
            if text and ctype == "code":  # code shown to the user, run by no tool
                language = content.get("language") if isinstance(content.get("language"), str) else ""
                text = f"```{language}\n{text}\n```"
            if text:
                self.add(uid, "assistant", "text", text, ts, model=model)
        else:
            shown = role if is_name(role) else type(role).__name__
            self.drift(line, f"message role={shown!r}")

    def content_text(self, line: int, ctype: Any, content: dict) -> str:
        if ctype in ("text", "multimodal_text"):
            return self.parts(line, content.get("parts"))
        if ctype == "code":
            return _text(content.get("text")) or ""
        if ctype in ("execution_output", "system_error"):
            return _text(content.get("text")) or _text(content.get("name")) or ""
        if ctype == "thoughts":
            thoughts = content.get("thoughts") if isinstance(content.get("thoughts"), list) else []
            return "\n\n".join(t for thought in thoughts if isinstance(thought, dict)
                               for t in (_text(thought.get("summary")), _text(thought.get("content"))) if t)
        if ctype == "tether_quote":
            quote = "> " + (_text(content.get("text")) or "")
            title, url = _text(content.get("title")), _text(content.get("url"))
            return quote + (f"\n> -- [{title or ''}]({url or ''})" if title or url else "")
        if ctype == "tether_browsing_display":
            return _text(content.get("result")) or _text(content.get("summary")) or ""
        if ctype in ("user_editable_context", "model_editable_context"):
            texts = [content.get(k) for k in ("user_profile", "user_instructions", "model_set_context")]
            return "\n\n".join(t for t in texts if isinstance(t, str) and t)
        if ctype in _SILENT:
            return ""
        self.drift(line, f"content content_type={ctype!r}" if is_name(ctype) else "content of an unnamed type")
        return self.parts(line, content.get("parts")) or _text(content.get("text")) or ""

    def parts(self, line: int, parts: Any) -> str:
        out = []
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, str):
                if part:
                    out.append(part)
            elif isinstance(part, dict):
                kind = part.get("content_type")
                if isinstance(part.get("text"), str):
                    if part["text"]:
                        out.append(part["text"])
                elif kind in ("image_asset_pointer", "audio_asset_pointer", "video_container_asset_pointer"):
                    out.append(f"[{kind.removesuffix('_asset_pointer').split('_')[0]}]")
                else:
                    self.drift(line, f"content part content_type={kind!r}" if is_name(kind)
                               else "content part of an unnamed type")
        return "\n".join(out)

    def flat(self, line: int, item: dict) -> None:
        role, text = item.get("role"), _text(item.get("content"))
        ts = _seconds(item.get("timestamp")) or _seconds(item.get("create_time"))
        uid = _text(item.get("id")) or record_uid(orjson.dumps(item, default=repr), context=f"M{line}")
        if role not in ("user", "assistant", "system"):
            self.drift(line, f"message role={role!r}" if is_name(role) else "message role of an unnamed type")
        elif text and role == "system":
            self.add(uid, "system", "text", text, ts, meta={"injected": True})
        elif text:
            self.add(uid, role, "text", text, ts)
            if role == "user":
                self.first_prompt = self.first_prompt or text
