"""Amp (Sourcegraph, ``@ampcode/cli``): ``~/.local/share/amp/threads/T-<uuid>.json``.

Format facts and their sources: ``fixtures/amp/SOURCE.md``. In short (third-party readers only: Amp is
closed source and its bundle ships compiled):

- One JSON document per thread, the local copy of a thread kept on Amp's server, rewritten as it grows:
  ``{v, id, created (ms), title?, agentMode?, env: {initial: {trees: [{displayName, uri, repository}],
  platform}}, messages: [...], meta: {traces: [...]}, usageLedger?}``.
- ``messages[] = {role, messageId (int), content: [block], state?: {type, stopReason}, usage?: {model,
  timestamp, inputTokens, outputTokens, cacheCreationInputTokens, cacheReadInputTokens}}``; blocks are
  Anthropic-style (``text``, ``thinking``, ``tool_use``, ``image``), and a tool's result is a ``tool_result``
  in the next user message with ``toolUseID`` and ``run: {status, result | error}``.
- Identity: ``messageId`` and the block's index; tool calls and results by their tool id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson

from harvester.model import Batch, Event, GitFacts, Kind, Problem, Role, SessionPatch, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    iso_text,
    json_objects,
    render_call,
)

NAME = "amp"

# Amp's tools: Read, Bash, edit_file, create_file, Grep, glob, finder, web_search, read_web_page, Task ...
_CALL_KEYS = ("cmd", "command", "path", "filePattern", "pattern", "query", "url", "prompt", "description")
BLOCK_TYPES = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image"})
# run.status of a tool result that has ended (agentsview's cases: done, error, cancelled).
_ENDED = frozenset({"done", "error", "cancelled", "rejected-by-user"})


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # $XDG_DATA_HOME/amp, else ~/.local/share/amp (agentsview, ccusage, FAD read it there on Linux and
    # macOS). AMP_DATA_DIR, AMP_HOME are other readers' variables, not Amp's: not honoured.
    return [Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "amp"]


SOURCES = (SourceSpec("threads/T-*.json", "json"),)

# The npm bin is a node wrapper (cli-wrapper.cjs) starting the native binary named amp.
PROCESSES = ("amp", "@ampcode/cli")


class _Reader:
    def __init__(self, batch: Batch, sid: str) -> None:
        self.batch, self.sid = batch, sid
        self.line = 1
        self.drifted: set[str] = set()
        self.calls: dict[str, str] = {}  # tool id -> tool name, for the results
        self.titled = False

    @property
    def patch(self) -> SessionPatch:
        return self.batch.session(self.sid)

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))

    def emit(self, uid: str, role: Role, kind: Kind, text: str, **fields: Any) -> Event:
        event = Event(self.sid, uid, role, kind, text, **fields)
        self.batch.events.append(event)
        return event


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True, state=state)  # rewritten whole: a message read before may have grown
    for record, data in json_objects(records, batch.problems):
        if not isinstance(data.get("messages"), list):
            batch.problems.append(Problem("unknown_type", record.line, "thread document without a messages list"))
            continue
        reader = _Reader(batch, ref.path.stem)  # the file name is the thread id (T-<uuid>)
        reader.line = record.line
        try:
            _thread(reader, data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line,
                                          f"document of unexpected shape: {describe_error(exc)}"))
    return batch


def _thread(reader: _Reader, data: dict) -> None:
    patch = reader.patch
    if isinstance(data.get("id"), str) and data["id"] != reader.sid:
        patch.note(recorded_thread_id=data["id"])
    patch.started_at = iso_ms(data.get("created"))
    _env(patch, data.get("env"))
    if data.get("agentMode"):
        patch.note(agent_mode=data["agentMode"])
    traces = (data.get("meta") or {}).get("traces") if isinstance(data.get("meta"), dict) else None
    ends = [iso_text(t.get("endTime")) for t in traces or [] if isinstance(t, dict)]
    patch.updated_at = max((e for e in ends if e), default=None)
    last: dict | None = None
    for n, message in enumerate(data["messages"]):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            reader.batch.problems.append(Problem("malformed", reader.line, f"messages[{n}] is not a message"))
            continue
        _message(reader, message, n)
        last = message
    title = data.get("title")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "ai")  # Amp names a thread itself (renames are not told apart)
    if last is not None:
        patch.note(last_turn=_turn_state(last))


def _env(patch: SessionPatch, env: Any) -> None:
    initial = env.get("initial") if isinstance(env, dict) else None
    if not isinstance(initial, dict):
        return
    trees = [t for t in initial.get("trees") or [] if isinstance(t, dict)]
    if trees:
        uri = trees[0].get("uri")
        if isinstance(uri, str) and uri.startswith("file://"):
            patch.cwd = unquote(urlparse(uri).path) or None
        repo = trees[0].get("repository") if isinstance(trees[0].get("repository"), dict) else {}
        ref = repo.get("ref") if isinstance(repo.get("ref"), str) else ""
        if repo.get("url") or repo.get("sha") or ref:
            patch.git = GitFacts(branch=ref.removeprefix("refs/heads/") or None, commit=repo.get("sha") or None,
                                 origin_url=repo.get("url") or None)
    platform = initial.get("platform") if isinstance(initial.get("platform"), dict) else {}
    if platform.get("clientVersion"):
        patch.agent_version = str(platform["clientVersion"])
    if platform.get("client"):
        patch.note(client=platform["client"])


def _turn_state(message: dict) -> str:
    """``running`` while Amp streams the answer; a user message (a prompt, tool results) waits for one."""
    if message.get("role") == "user":
        return "open"
    kind = (message.get("state") or {}).get("type") if isinstance(message.get("state"), dict) else None
    if kind == "cancelled":
        return "aborted"
    if kind == "running" or (message.get("state") or {}).get("stopReason") == "tool_use":
        return "open"
    return "complete"


def _message(reader: _Reader, message: dict, position: int) -> None:
    role = message.get("role")
    if role not in ("user", "assistant"):
        reader.drift(f"message role={role!r}")
        return
    mid = message.get("messageId", f"p{position}")
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    model = usage.get("model") or None
    ts = iso_text(usage.get("timestamp"))
    if model:
        reader.patch.model = model
    last: Event | None = None
    for i, block in enumerate(message["content"]):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            reader.drift(f"content block type={kind!r}")
            continue
        last = _block(reader, role, block, f"{mid}:{i}", ts, model) or last
    if last is not None and usage:
        last.usage = Usage(input=_int(usage.get("inputTokens")), output=_int(usage.get("outputTokens")),
                           cache_read=_int(usage.get("cacheReadInputTokens")),
                           cache_write=_int(usage.get("cacheCreationInputTokens")))


def _block(reader: _Reader, role: str, block: dict, uid: str, ts: str | None, model: str | None) -> Event | None:
    kind = block["type"]
    if kind == "text":
        text = block.get("text") or ""
        if not text.strip():
            return None
        if role == "assistant":
            return reader.emit(uid, "assistant", "text", text, ts=ts, model=model)
        if not reader.titled:
            reader.titled = True
            first = text.strip().splitlines()[0]
            reader.patch.offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")
        return reader.emit(uid, "user", "text", text, ts=ts)
    if kind == "thinking":
        text = block.get("thinking") or ""
        return reader.emit(uid, "assistant", "thinking", text, ts=ts, model=model) if text.strip() else None
    if kind == "redacted_thinking":
        return None  # encrypted: nothing readable
    if kind == "image":
        return reader.emit(uid, role if role == "user" else "assistant", "text", "[image]", ts=ts,
                           meta={"attachment": True})
    if kind == "tool_use":
        name, call_id, tool_input = block.get("name") or "tool", block.get("id"), block.get("input")
        if isinstance(call_id, str):
            reader.calls[call_id] = name
        return reader.emit(f"call:{call_id}" if call_id else uid, "assistant", "tool_call",
                           render_call(name, tool_input, _CALL_KEYS), ts=ts, tool_name=name, tool_input=tool_input,
                           tool_call_id=call_id, model=model)
    return _result(reader, block, uid, ts)


def _result(reader: _Reader, block: dict, uid: str, ts: str | None) -> Event | None:
    call_id = block.get("toolUseID") or block.get("tool_use_id")
    run = block.get("run") if isinstance(block.get("run"), dict) else {}
    status = run.get("status")
    if "run" in block and status not in _ENDED:
        return None  # still running: the result comes with a later write
    if run.get("result") is not None:
        text = _result_text(run["result"])
    elif status == "error":
        error = run.get("error") if isinstance(run.get("error"), dict) else {}
        text = error.get("message") or "[unknown error]"
    elif status in ("cancelled", "rejected-by-user"):
        text = f"[{status}]"
    else:
        content = block.get("content")
        text = content if isinstance(content, str) else orjson.dumps(content).decode()
    return reader.emit(f"result:{call_id}" if call_id else uid, "tool", "tool_result", text, ts=ts,
                       tool_call_id=call_id, tool_name=reader.calls.get(call_id) if isinstance(call_id, str) else None,
                       is_error=status in ("error", "cancelled", "rejected-by-user"),
                       meta={"status": status} if status else None)


def _result_text(result: Any) -> str:
    """A result as text: Amp's results are text, ``{output | content | diff}``, or lists of lines."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        for key in ("output", "content", "diff"):
            if isinstance(result.get(key), str):
                return result[key]
    if isinstance(result, list) and all(isinstance(v, str) for v in result):
        return "\n".join(result)
    return orjson.dumps(result).decode()


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
