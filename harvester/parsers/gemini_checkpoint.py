"""Gemini CLI and Qwen Code saved chats: ``tmp/<project>/checkpoint-<tag>.json``, written by ``/chat save <tag>``.

A checkpoint is the model's history at the moment it was saved (``Content[]``: ``{role: user|model, parts}``),
rewritten whole when the same tag is saved again. Gemini CLI wraps it as ``{history, authType}`` since it
kept the auth type with it; older files, and Qwen Code's to this day, are the bare array. The tag is the file
name, percent-encoded (``encodeURIComponent``) since both took the encoding in; older files kept it raw. Sources:
``packages/core/src/core/logger.ts`` (``saveCheckpoint``, ``loadCheckpoint``, ``_checkpointPath``) of each, as
``fixtures/qwen_code/variants/SOURCE.md`` and ``fixtures/gemini_cli/variants/SOURCE.md`` cite them.

Before either agent recorded its sessions (Gemini CLI before its chat recording, Qwen Code 0.0.x) a saved chat
was the only transcript kept; later it repeats part of a session the agent recorded too. It is a session of
its own (``checkpoint:<project folder>:<tag>``), titled by its tag, its events by position in the history
(a re-save revises them). The history starts with the agent's context preamble and the model's canned
answer: both are filed as injected ``system`` text, never as the user's words.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any
from urllib.parse import unquote

import orjson

from harvester.model import Batch, Event, Problem
from harvester.parsers.base import Record, SourceRef, iso_ms, render_call

# The preamble each agent opens a chat with, and the model's answer to it (getEnvironment / getInitialChatHistory).
PREAMBLES = ("This is the Gemini CLI. We are setting up the context for our chat.",
             "This is the Qwen Code. We are setting up the context for our chat.")
CANNED = frozenset({"Got it. Thanks for the context!"})
_WORKING_DIR = re.compile(r"I'm currently working in the directory: ([^\n]+)")
_HASH_DIR = re.compile(r"^[0-9a-f]{64}$")


def project_root_marker(path: PurePath) -> PurePath:
    """Gemini CLI's slug folders name their project in ``.project_root`` beside the checkpoints."""
    return path.parent / ".project_root"


def parse_checkpoint(ref: SourceRef, records: Iterable[Record], call_keys: tuple[str, ...],
                     injected: tuple[str, ...] = (), canned: frozenset[str] = frozenset()) -> Batch:
    """``injected``: the agent's other prefixes of text it writes in the user's name (a session context block,
    reminders); ``canned``: the model's other scripted answers. Both filed as injected ``system`` text."""
    batch = Batch(revise=True)  # saved again under the same tag: the history replaces the one before
    folder = ref.path.parent.name
    tag = unquote(ref.path.stem.removeprefix("checkpoint-"))
    session = f"checkpoint:{folder}:{tag}"
    for record in records:
        try:
            doc = orjson.loads(record.raw)
        except orjson.JSONDecodeError as exc:
            batch.problems.append(Problem("malformed", record.line, f"invalid JSON: {exc}"))
            continue
        history = doc.get("history") if isinstance(doc, dict) else doc
        if not isinstance(history, list):
            batch.problems.append(Problem("unknown_type", record.line, "checkpoint without a history array"))
            continue
        patch = batch.session(session)
        patch.offer_title(f"saved chat: {tag}", "custom")
        saved = iso_ms(ref.mtime_ns // 1_000_000) if ref.mtime_ns else None
        patch.started_at = patch.updated_at = saved
        patch.note(saved_chat=tag, project_folder=folder)
        if isinstance(doc, dict) and isinstance(doc.get("authType"), str):
            patch.note(auth_type=doc["authType"])
        _cwd(ref, history, patch)
        for index, content in enumerate(history):
            if isinstance(content, dict):
                _content(batch, session, index, content, saved, call_keys, (*PREAMBLES, *injected), CANNED | canned)
    return batch


def _cwd(ref: SourceRef, history: list, patch: Any) -> None:
    """The project: ``.project_root`` (slug folders), else the preamble's working directory when its sha256 is
    the folder's name (``getProjectHash``); a path the history only mentions is not trusted."""
    if ref.sidecar:
        patch.cwd = ref.sidecar.decode("utf-8", "replace").strip() or None
        return
    import hashlib  # here: status imports every parser for its roots; OpenSSL's is a cost of its own

    first = history[0] if history and isinstance(history[0], dict) else {}
    for part in first.get("parts") or []:
        match = _WORKING_DIR.search(part.get("text") or "") if isinstance(part, dict) else None
        if match:
            path = match[1].strip()
            with contextlib.suppress(UnicodeError):
                if _HASH_DIR.match(ref.path.parent.name) and hashlib.sha256(
                        path.encode("utf-8", "surrogatepass")).hexdigest() == ref.path.parent.name:
                    patch.cwd = path
            return


def _content(batch: Batch, session: str, index: int, content: dict, ts: str | None, call_keys: tuple[str, ...],
             injected: tuple[str, ...], canned: frozenset[str]) -> None:
    role = content.get("role")
    parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
    if role not in ("user", "model"):
        batch.problems.append(Problem("unknown_type", 1, f"checkpoint content role={role!r}"))
        return
    for n, part in enumerate(parts):
        uid = f"{index}:{n}"
        text, call, response = part.get("text"), part.get("functionCall"), part.get("functionResponse")
        if isinstance(call, dict):
            name, args = call.get("name"), call.get("args")
            batch.events.append(Event(session, uid, "assistant", "tool_call", render_call(name, args, call_keys),
                                      ts=ts, tool_name=name, tool_input=args, tool_call_id=call.get("id")))
        elif isinstance(response, dict):
            body = response.get("response") if isinstance(response.get("response"), dict) else {}
            output = body.get("output", body.get("error", body.get("content", body)))
            batch.events.append(Event(session, uid, "tool", "tool_result",
                                      output if isinstance(output, str) else orjson.dumps(output).decode(), ts=ts,
                                      tool_name=response.get("name"), tool_call_id=response.get("id"),
                                      is_error="error" in body and "output" not in body))
        elif isinstance(text, str):
            if (role == "user" and text.lstrip().startswith(injected)) or (role == "model" and text in canned):
                batch.events.append(Event(session, uid, "system", "text", text, ts=ts, meta={"injected": True}))
            elif role == "model":
                batch.events.append(Event(session, uid, "assistant", "thinking" if part.get("thought") else "text",
                                          text, ts=ts))
            else:
                batch.events.append(Event(session, uid, "user", "text", text, ts=ts))
        else:
            label = next(iter(part), "part")
            batch.events.append(Event(session, uid, "user" if role == "user" else "assistant", "meta",
                                      f"[{label}]", ts=ts))
