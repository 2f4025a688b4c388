"""gptme (``gptme`` on PyPI, Python): ``<data dir>/gptme/logs/<conversation>/conversation.jsonl``.

Format facts and their sources: ``fixtures/gptme/SOURCE.md``. In short:

- One folder per conversation, named by its id (``--name``, default ``<date>-<three words>``); the folder
  is the session. ``conversation.jsonl`` holds one message a line (``message.py Message.to_dict``):
  ``role`` (system / user / assistant), ``content``, ``timestamp`` (naive local ISO time), and when set
  ``pinned``, ``hide``, ``call_id``, ``files``, ``metadata`` (model, usage). Appended as messages come
  (``logmanager/manager.py Log.write_jsonl(append=True)``); rewritten whole only by /edit, /undo and
  compaction, whose full history then goes to ``lossless.jsonl`` (not read: it repeats the log).
- Tool calls are text inside an assistant message: ``@<tool>(<call id>): {json}`` lines with the native
  tool format (``tools/base.py toolcall_re``), fenced blocks with the markdown one (kept as text). A
  tool's output is a ``system`` message carrying the call's ``call_id``.
- Non-interactive runs answer a reply without a tool call themselves, as a ``user`` message starting
  ``<system>No tool call detected`` (``tools/complete.py auto_reply_hook``): not the user's words.
- ``config.toml`` beside the log (the chat config, rewritten) names the workspace: the session's cwd.
  ``events.jsonl`` (an event log of the same messages since 0.35) and ``branches/*.jsonl`` are not read.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch, Usage, record_uid
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "gptme"
# Console scripts (pyproject [project.scripts]): the chat, its TUI and its server all write logs.
PROCESSES = ("gptme", "gptme-tui", "gptme-server")

_CALL_KEYS = ("command", "path", "file", "pattern", "query", "url", "code", "prompt")
# tools/base.py toolcall_re: "@name(call id): {" at a line's start; the JSON runs to its matching brace.
_TOOLCALL = re.compile(r"^@([^\r\n]+?)\(([\w\-:\.]+)\):\s*(?=\{)", re.MULTILINE)
_THINK = re.compile(r"<think(?:ing)?>\n?(.*?)\n?</think(?:ing)?>\n?", re.DOTALL)
_AUTO_REPLY = "<system>No tool call detected in last message"
# "tool": not written by gptme (a tool's output is a system message with its call_id); third-party readers'
# fixtures (agentsview's) answer tools so, and such a line is a tool result rather than drift.
_ROLES = ("system", "user", "assistant", "tool")
_VERSION = re.compile(r"\AYou are gptme v(\d[\w.+-]*)")  # prompts/__init__.py, the first system message


def roots(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> list[Path]:
    # dirs.py get_logs_dir: $GPTME_LOGS_HOME, else get_data_dir()/logs; get_data_dir: $XDG_DATA_HOME/gptme,
    # else ~/.local/share/gptme when it exists, else platformdirs user_data_dir("gptme").
    override = (env.get("GPTME_LOGS_HOME") or "").strip()
    if override:
        return [Path(override).expanduser()]
    out = []
    if xdg := (env.get("XDG_DATA_HOME") or "").strip():
        out.append(Path(xdg) / "gptme" / "logs")
    out.append(home / ".local" / "share" / "gptme" / "logs")
    if platform == "darwin":
        out.append(home / "Library" / "Application Support" / "gptme" / "logs")
    elif platform == "win32":
        local = (env.get("LOCALAPPDATA") or "").strip()
        out.append((Path(local) if local else home / "AppData" / "Local") / "gptme" / "logs")
    return out


def _config_of(path: PurePath) -> PurePath:
    return path.with_name("config.toml")


SOURCES = (SourceSpec("*/conversation.jsonl", "jsonl", "main", sidecar=_config_of),)


class _Reader:
    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref, self.state = ref, state
        self.batch = Batch(state=state)
        self.sid = ref.path.parent.name
        self.line = 0

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def emit(self, uid: str, ts: str | None, **fields: Any) -> None:
        self.batch.events.append(Event(self.sid, uid, ts=ts, **fields))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    if ref.sidecar:  # each read: the title comes into it after the first answer
        _config(reader, ref.sidecar)
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        uid = record_uid(record.raw, context=state.get("prev"))
        state["prev"] = uid[2:14]
        try:
            _message(reader, data, uid)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.batch.problems.append(Problem("malformed", record.line,
                                                 f"record of unexpected shape: {describe_error(exc)}"))
    return reader.batch


def _config(reader: _Reader, text: bytes) -> None:
    """config.toml's [chat] (config/chat.py ChatConfig): ``workspace``, the folder the chat worked in;
    ``name``, the display name (an AI title, or the user's /rename: the file does not tell them apart)."""
    import tomllib  # here, not at the top: the registry's import (status) needs none of it

    with contextlib.suppress(tomllib.TOMLDecodeError, UnicodeDecodeError):
        chat = tomllib.loads(text.decode()).get("chat")
        if not isinstance(chat, dict):
            return
        workspace = chat.get("workspace")
        if isinstance(workspace, str) and (workspace.startswith("/") or _is_windows_path(workspace)):
            reader.patch.cwd = workspace
        if isinstance(chat.get("model"), str):
            reader.patch.model = chat["model"]
        if isinstance(chat.get("name"), str) and chat["name"].strip():
            reader.patch.offer_title(chat["name"].strip().splitlines()[0][:80], "ai")


def _is_windows_path(value: str) -> bool:
    return len(value) > 2 and value[1:3] in (":\\", ":/")


def _message(reader: _Reader, data: dict, uid: str) -> None:
    role, content = data["role"], data.get("content")
    text = content if isinstance(content, str) else ""
    ts = iso_text(data.get("timestamp"))
    if ts:
        if reader.patch.started_at is None and not reader.state.get("started"):
            reader.state["started"] = True
            reader.patch.started_at = ts
        reader.patch.updated_at = ts
    if role not in _ROLES:
        reader.batch.problems.append(Problem("unknown_type", reader.line, f"message role={role!r}"))
        return
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    if role == "tool":
        call_id = data["call_id"] if isinstance(data.get("call_id"), str) else None
        reader.emit(f"result:{call_id}" if call_id else uid, ts, role="tool", kind="tool_result", text=text,
                    tool_name=(reader.state.get("tools") or {}).get(call_id) if call_id else None,
                    tool_call_id=call_id)
        return
    if role == "system":
        if data.get("pinned"):
            if m := _VERSION.match(text):
                reader.patch.agent_version = m[1].rstrip(",.")
            return  # the system prompt and the workspace context gptme builds at start: not the session's words
        if isinstance(data.get("call_id"), str):
            call_id = data["call_id"]
            reader.emit(f"result:{call_id}", ts, role="tool", kind="tool_result", text=text,
                        tool_name=(reader.state.get("tools") or {}).get(call_id) or meta.get("tool"),
                        tool_call_id=call_id)
            return
        reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"hidden": True} if data.get("hide") else None)
        return
    if role == "user":
        if text.startswith(_AUTO_REPLY):  # gptme's own nudge in a non-interactive run
            reader.emit(uid, ts, role="system", kind="meta", text=text, meta={"auto_reply": True})
            return
        reader.emit(uid, ts, role="user", kind="text", text=text)
        if text.strip() and not reader.state.get("titled"):
            reader.state["titled"] = True
            reader.patch.offer_title(text.strip().splitlines()[0][:80], "first-prompt")
        return
    model = meta["model"] if isinstance(meta.get("model"), str) else None
    if model:
        reader.patch.model = model
    start = len(reader.batch.events)
    _assistant(reader, text, uid, ts)
    usage = _usage(meta)
    if usage is not None and len(reader.batch.events) == start:
        reader.emit(uid, ts, role="assistant", kind="meta", text="model call")
    for event in reader.batch.events[start:]:
        event.model = model
    if usage is not None:
        reader.batch.events[start].usage = usage


def _usage(meta: dict) -> Usage | None:
    """A response's ``metadata.usage`` (gptme's UsageData, one message per model response): the input leaves the
    cache out (its OpenAI reader subtracts the cached part, Anthropic's counts it apart), the reasoning is part of
    the output; ``cost`` is what gptme priced it at, in USD."""
    raw = meta.get("usage")
    if not isinstance(raw, dict):
        return None

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    usage = Usage(input=count("input_tokens"), output=count("output_tokens"), cache_read=count("cache_read_tokens"),
                  cache_write=count("cache_creation_tokens"), reasoning=count("reasoning_tokens"))
    cost = meta.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        usage.cost = float(cost)
    return usage if usage.as_dict() else None


def _assistant(reader: _Reader, text: str, uid: str, ts: str | None) -> None:
    """Thinking blocks, text, then each ``@tool(id): {json}`` call, in the order they stand."""
    pos, n = 0, 0
    for m in _TOOLCALL.finditer(text):
        if m.start() < pos:
            continue  # inside the previous call's JSON
        n = _text_parts(reader, text[pos:m.start()], uid, ts, n)
        end = _json_end(text, m.end())
        raw = text[m.end():end]
        tool_input: Any = raw
        with contextlib.suppress(orjson.JSONDecodeError):
            tool_input = orjson.loads(raw)
        name, call_id = m[1], m[2]
        reader.emit(f"call:{call_id}", ts, role="assistant", kind="tool_call", text=render_call(name, tool_input, _CALL_KEYS),
                    tool_name=name, tool_input=tool_input, tool_call_id=call_id)
        tools = reader.state.setdefault("tools", {})
        tools[call_id] = name
        reader.state["tools"] = dict(list(tools.items())[-64:])  # results follow their calls
        pos = end
    _text_parts(reader, text[pos:], uid, ts, n)


def _text_parts(reader: _Reader, text: str, uid: str, ts: str | None, n: int) -> int:
    pos = 0
    for m in _THINK.finditer(text):
        n = _emit_text(reader, text[pos:m.start()], uid, ts, n, "text")
        n = _emit_text(reader, m[1], uid, ts, n, "thinking")
        pos = m.end()
    return _emit_text(reader, text[pos:], uid, ts, n, "text")


def _emit_text(reader: _Reader, text: str, uid: str, ts: str | None, n: int, kind: str) -> int:
    if not text.strip():
        return n
    reader.emit(uid if n == 0 else f"{uid}:{n}", ts, role="assistant", kind=kind, text=text.strip())
    return n + 1


def _json_end(text: str, start: int) -> int:
    """Where the JSON object at ``start`` ends (braces counted outside strings), else the line's end."""
    depth, in_string, escape = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if escape:
            escape = False
        elif c == "\\" and in_string:
            escape = True
        elif c == '"':
            in_string = not in_string
        elif not in_string and c == "{":
            depth += 1
        elif not in_string and c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline
