"""QwenPaw (agentscope-ai's personal agent, formerly CoPaw): one JSON document a chat, in each agent's workspace.

Format facts and their sources: ``fixtures/qwenpaw/SOURCE.md``. In short:

- The working dir is ``$QWENPAW_WORKING_DIR``, else ``~/.copaw`` where it exists (the CoPaw install), else
  ``~/.qwenpaw``. Each agent has ``workspaces/<agent id>/sessions/``; a chat is ``<user>_<session>.json`` there or,
  for a channel, in ``sessions/<channel>/`` (characters a file name cannot hold become ``--``). Moving a chat into
  its channel folder copies it and leaves the older file: a root-level file with a channel copy is not read.
  ``.weixin-legacy/`` holds renamed WeChat chats' originals: not read.
- The document is the chat's saved state, rewritten whole after every turn (``{"agent": …}``):
  - QwenPaw 2 (AgentScope 2): ``agent.state.context`` is the list of messages (``Msg``: ``id``, ``name``,
    ``role``, ``content`` blocks, ``created_at`` ISO local time, ``usage``), ``agent.state.summary`` the
    compressed summary of what the context dropped. Blocks: ``text``, ``thinking``, ``tool_call`` (``id``,
    ``name``, ``input`` JSON text, ``state``), ``tool_result`` (``id``, ``name``, ``output`` text or blocks,
    ``state`` success/error/interrupted/denied/running), ``hint`` (instructions the loop gives the model),
    ``data`` (media).
  - CoPaw / QwenPaw 1 (AgentScope 1): ``agent.memory.content`` is ``[[message, marks], …]`` (``timestamp``
    ``YYYY-MM-DD HH:MM:SS.fff`` local time); blocks ``text``, ``thinking``, ``tool_use`` (``input`` object,
    ``raw_input`` text), ``tool_result`` carried by ``system`` messages, and media blocks.
- A message's uid is its ``id``; a call's and a result's their ``id``. The file is read whole each time it
  changes: events are revised in place (``Batch.revise``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, Usage, record_uid
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, json_objects, render_call

NAME = "qwenpaw"
PROCESSES = ("qwenpaw", "copaw")
_CALL_KEYS = ("command", "file_path", "path", "pattern", "query", "url", "code")
_MEDIA = ("data", "image", "audio", "video")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``qwenpaw/constant.py`` ``WORKING_DIR``: both defaults are read (a CoPaw install keeps ``~/.copaw``)."""
    if env.get("QWENPAW_WORKING_DIR"):
        return [Path(env["QWENPAW_WORKING_DIR"]).expanduser()]
    return [home / ".qwenpaw", home / ".copaw"]


def _channel_copy(path: PurePath) -> PurePath:
    return path.parent / "*" / path.name  # sessions/<channel>/<same name>: the copy that is kept up to date


SOURCES = (
    SourceSpec("workspaces/*/sessions/*.json", "json", "main", shadowed_by=_channel_copy),
    SourceSpec("workspaces/*/sessions/[!.]*/*.json", "json", "channel"),
)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True)  # the whole chat is rewritten each turn: the last reading of an event wins
    parts = ref.path.parts
    workspace = parts[parts.index("workspaces") + 1] if "workspaces" in parts[:-2] else ref.path.parent.parent.name
    sid = f"{workspace}:{ref.path.stem}"
    for record, data in json_objects(records, batch.problems):
        try:
            _document(batch, record.line, sid, data, ref)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"chat of unexpected shape: {describe_error(exc)}"))
    return batch


def _document(batch: Batch, line: int, sid: str, data: dict, ref: SourceRef) -> None:
    agent = data.get("agent")
    if not isinstance(agent, dict):
        batch.problems.append(Problem("unknown_type", line, "document without an agent state"))
        return
    saved = agent.get("state") if isinstance(agent.get("state"), dict) else None
    memory = agent.get("memory") if isinstance(agent.get("memory"), dict) else None
    if saved is not None and isinstance(saved.get("context"), list):
        messages, layout = [m for m in saved["context"] if isinstance(m, dict)], "context"
    elif memory is not None and isinstance(memory.get("content"), list):
        messages = [e[0] for e in memory["content"] if isinstance(e, list) and e and isinstance(e[0], dict)]
        layout = "memory"
    else:
        batch.problems.append(Problem("unknown_type", line, f"agent state keys={sorted(agent)[:8]!r}"))
        return
    if not messages:
        return
    patch = batch.session(sid)
    patch.note(workspace=sid.split(":", 1)[0], layout=layout, **({"channel": ref.path.parent.name}
                                                                  if ref.variant == "channel" else {}))
    summary = saved.get("summary") if saved is not None else None
    summary_text = summary if isinstance(summary, str) else _texts(summary) if isinstance(summary, list) else ""
    if summary_text.strip():
        # Keyed by what it says: a later compaction's summary is a new event, the earlier one stays.
        batch.events.append(Event(sid, f"summary:{record_uid(summary_text.encode())}", "system", "compaction",
                                  summary_text, meta={"summary": True}))
    for index, message in enumerate(messages):
        _message(batch, line, sid, index, message)
    times = [t for t in (_time(m.get("created_at") or m.get("timestamp")) for m in messages) if t]
    if times:
        patch.started_at, patch.updated_at = times[0], times[-1]


def _message(batch: Batch, line: int, sid: str, index: int, message: dict) -> None:
    role = message.get("role")
    uid = str(message["id"]) if isinstance(message.get("id"), str) and message["id"] else f"#{index}"
    ts = _time(message.get("created_at") or message.get("timestamp"))
    if role not in ("user", "assistant", "system"):
        batch.problems.append(Problem("unknown_type", line, f"message role={role!r}"))
        return
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    usage = _usage(message.get("usage")) if role == "assistant" else None
    texts: list[str] = []
    runs = 0  # runs of text already emitted: the first is the message's uid, the next ones numbered

    def flush() -> None:
        nonlocal usage, runs
        text = "\n".join(texts).strip()
        texts.clear()
        if not text:
            return
        key = uid if not runs else f"{uid}:text{runs}"
        runs += 1
        if role == "user":
            batch.events.append(Event(sid, key, "user", "text", text, ts=ts))
            if batch.session(sid).title is None:
                batch.session(sid).offer_title(text.splitlines()[0][:80], "first-prompt")
        else:
            batch.events.append(Event(sid, key, role, "text", text, ts=ts, usage=usage,
                                      meta={"injected": True} if role == "system" else None))
            usage = None

    for number, block in enumerate(blocks if isinstance(blocks, list) else []):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(block["text"] if isinstance(block.get("text"), str) else "")
        elif kind in _MEDIA:
            texts.append(f"[{kind}]")
        elif kind == "thinking":
            flush()
            if isinstance(block.get("thinking"), str) and block["thinking"].strip():
                batch.events.append(Event(sid, f"{uid}:think{number}", "assistant", "thinking", block["thinking"],
                                          ts=ts))
        elif kind == "hint":
            flush()
            hint = block.get("hint")
            text = hint if isinstance(hint, str) else _texts(hint) if isinstance(hint, list) else ""
            if text.strip():
                batch.events.append(Event(sid, f"{uid}:hint{number}", "system", "text", text, ts=ts,
                                          meta={"hint": True, "source": block.get("source")}))
        elif kind in ("tool_call", "tool_use"):
            flush()
            _call(batch, sid, uid, number, block, ts, usage)
            usage = None
        elif kind == "tool_result":
            flush()
            _result(batch, sid, uid, number, block, ts)
        else:
            batch.problems.append(Problem("unknown_type", line, f"block type={kind!r}"))
    flush()


def _call(batch: Batch, sid: str, uid: str, number: int, block: dict, ts: str | None, usage: Usage | None) -> None:
    arguments: Any = block.get("raw_input") if isinstance(block.get("raw_input"), str) else block.get("input")
    if isinstance(arguments, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments) if arguments.strip() else {}
    call_id = str(block.get("id") or f"{uid}:{number}")
    name = block.get("name") if isinstance(block.get("name"), str) else None
    meta = {"state": block["state"]} if isinstance(block.get("state"), str) and block["state"] != "finished" else None
    batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS),
                              ts=ts, tool_name=name, tool_input=arguments, tool_call_id=call_id, usage=usage,
                              meta=meta))


def _result(batch: Batch, sid: str, uid: str, number: int, block: dict, ts: str | None) -> None:
    output = block.get("output")
    text = output if isinstance(output, str) else _texts(output) if isinstance(output, list) else ""
    if not text and output is not None and not isinstance(output, str | list):
        text = orjson.dumps(output).decode()
    call_id = str(block.get("id") or f"{uid}:{number}")
    result_state = block.get("state")
    batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", text, ts=ts,
                              tool_name=block.get("name") if isinstance(block.get("name"), str) else None,
                              tool_call_id=call_id, is_error=result_state in ("error", "denied", "interrupted"),
                              meta={"state": result_state} if isinstance(result_state, str) else None))


def _texts(blocks: list) -> str:
    out = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif isinstance(block, dict) and block.get("type") in _MEDIA:
            out.append(f"[{block['type']}]")
    return "\n".join(out)


def _time(value: Any) -> str | None:
    """QwenPaw writes local wall-clock time without a zone (``datetime.now()``): this machine's zone gives the
    UTC moment, as for Aider."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    with contextlib.suppress(OverflowError, OSError, ValueError):
        moment = moment.astimezone(UTC)
        return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"
    return None


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    found = Usage(input=count("input_tokens"), output=count("output_tokens"), cache_read=count("cache_input_tokens"),
                  cache_write=count("cache_creation_input_tokens"))
    return found if any(found.as_dict().values()) else None
