"""Posit Assistant (posit-dev/assistant, the Posit AI agent in RStudio and Positron): one folder a conversation.

Format facts and their sources: ``fixtures/posit_assistant/SOURCE.md`` (no public source: a third-party reader's
facts). In short: ``~/.posit/assistant/workspaces/<workspace>/<conversation>/`` holds ``conversation.json`` (the
message tree: ``root`` with ``title``, ``timestamp``, ``metadata.kind`` main/subagent, ``parentTreeId``, ``task``,
``gitBranch``, ``model``; ``messages``: nodes with ``isActive`` and the ``lmMessageIds`` they hold) and
``lm-messages.jsonl`` (appended: ``{"id": n, "message": <AI SDK ModelMessage>}``, ``role`` user / assistant /
tool / system, parts ``text``, ``reasoning``, ``tool-call`` (``toolCallId``, ``toolName``, ``input``),
``tool-result`` (``output`` ``{type, value}``), the time, model and usage in
``providerOptions.providerMetadata.positai``). A subagent's folder nests in ``<conversation>/subagents/<id>/``.
``<workspace>/workspace.json`` names the folder worked in (``path``).

Order of reading: ``conversation.json`` is the source (rewritten whole as the tree grows), ``lm-messages.jsonl``
its related document and ``workspace.json`` its sidecar: each change to either re-reads the three together and
the events, keyed by the language-model message's id, are revised in place. Only the active branch's messages
are read (an edited or regenerated turn leaves the old branch inactive).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, Usage
from harvester.parsers.base import Record, SourceRef, SourceSpec, describe_error, iso_ms, render_call

NAME = "posit-assistant"
PROCESSES = ("rstudio", "positron")  # it runs inside the IDE: the IDE's process is the agent's
_CALL_KEYS = ("command", "file_path", "path", "pattern", "query", "code", "url", "task", "skill")
# The assistant's own bookkeeping inside its answers (agentsview strips it the same way).
_SUMMARY_TAGS = re.compile(r"<(MESSAGESUMMARY|CONVERSATIONSUMMARY)>.*?</\1>", re.S)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".posit" / "assistant" / "workspaces"]  # no variable of its own is known to move it


def _workspace(path: PurePath) -> PurePath:
    """``<workspace>/<conversation>/conversation.json``, or ``…/<conversation>/subagents/<id>/…``: up to the
    workspace's folder."""
    folder = path.parent
    while folder.parent.name == "subagents":
        folder = folder.parent.parent
    return folder.parent / "workspace.json"


def _lm_messages(path: PurePath) -> list[PurePath]:
    return [path.with_name("lm-messages.jsonl")]


SOURCES = tuple(SourceSpec(pattern, "json", variant, sidecar=_workspace, related=_lm_messages) for pattern, variant in (
    ("*/*/conversation.json", "main"), ("*/*/subagents/*/conversation.json", "subagent"),
    ("*/*/subagents/*/subagents/*/conversation.json", "subagent")))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(revise=True)  # the tree is rewritten whole: the last reading of an event wins
    records = list(records)
    sid = ref.path.parent.name
    if not records:
        return batch
    try:
        conversation = orjson.loads(records[0].raw)
    except orjson.JSONDecodeError as exc:
        batch.problems.append(Problem("malformed", 1, f"conversation.json is not JSON: {exc}"))
        return batch
    if not isinstance(conversation, dict):
        batch.problems.append(Problem("malformed", 1, "conversation.json is not an object"))
        return batch
    lm = _lm_lines(batch, records[1].raw if len(records) > 1 else b"")
    try:
        _conversation(batch, sid, conversation, lm, ref)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        batch.problems.append(Problem("malformed", 1, f"conversation of unexpected shape: {describe_error(exc)}"))
    return batch


def _lm_lines(batch: Batch, raw: bytes) -> dict[int, dict]:
    out: dict[int, dict] = {}
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if number < len(lines) or raw.endswith(b"\n"):  # a last line still being written is not damage
                batch.problems.append(Problem("malformed", number, f"lm-messages.jsonl: invalid JSON: {exc}"))
            continue
        if (isinstance(entry, dict) and isinstance(entry.get("id"), int) and not isinstance(entry["id"], bool)
                and isinstance(entry.get("message"), dict)):
            out[entry["id"]] = entry["message"]
        else:
            batch.problems.append(Problem("malformed", number, "lm-messages.jsonl: line without an id and a message"))
    return out


def _conversation(batch: Batch, sid: str, conversation: dict, lm: dict[int, dict], ref: SourceRef) -> None:
    root = conversation.get("root") if isinstance(conversation.get("root"), dict) else {}
    meta = root.get("metadata") if isinstance(root.get("metadata"), dict) else {}
    patch = batch.session(sid)
    patch.started_at = iso_ms(root.get("timestamp"))
    if isinstance(root.get("title"), str) and root["title"].strip():
        patch.offer_title(root["title"].strip(), "ai")
    if meta.get("kind") == "subagent" and isinstance(meta.get("parentTreeId"), str) and meta["parentTreeId"]:
        patch.parent_native_id, patch.parent_kind = meta["parentTreeId"], "subagent"
        if isinstance(meta.get("task"), str) and meta["task"].strip():
            patch.offer_title(meta["task"].strip().splitlines()[0][:80], "first-prompt")
    if isinstance(meta.get("gitBranch"), str) and meta["gitBranch"]:
        patch.git = GitFacts(branch=meta["gitBranch"])
    model_meta = meta.get("model") if isinstance(meta.get("model"), dict) else {}
    if isinstance(model_meta.get("id"), str) and model_meta["id"]:
        patch.model = model_meta["id"]
    if ref.sidecar:
        try:
            workspace = orjson.loads(ref.sidecar)
        except orjson.JSONDecodeError:
            workspace = None  # caught mid-rewrite: the next read has it
        if isinstance(workspace, dict) and isinstance(workspace.get("path"), str) and workspace["path"]:
            patch.cwd = workspace["path"]
    subagent = meta.get("kind") == "subagent"
    for node in conversation.get("messages") or []:
        if not isinstance(node, dict) or not node.get("isActive"):
            continue
        for lm_id in node.get("lmMessageIds") or []:
            message = lm.get(lm_id) if isinstance(lm_id, int) else None
            if message is None:
                continue  # the tree is saved before its line is appended: the next read has it
            ts = _positai(message).get("timestamp")
            ts = iso_ms(ts) or iso_ms(node.get("timestamp"))
            if ts:
                patch.updated_at = ts
            subagent = _message(batch, sid, lm_id, message, ts, subagent)


def _positai(message: dict) -> dict:
    options = message.get("providerOptions") if isinstance(message.get("providerOptions"), dict) else {}
    metadata = options.get("providerMetadata") if isinstance(options.get("providerMetadata"), dict) else {}
    return metadata.get("positai") if isinstance(metadata.get("positai"), dict) else {}


def _message(batch: Batch, sid: str, lm_id: int, message: dict, ts: str | None, task_pending: bool) -> bool:
    """Emit one language-model message; returns whether a subagent's task prompt is still to come."""
    role, uid = message.get("role"), f"lm{lm_id}"
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    parts = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    if role in ("user", "system"):
        text = "\n".join(_part_text(p) for p in parts if _part_text(p)).strip()
        for part in parts:
            if part.get("type") not in ("text", "image", "file"):
                batch.problems.append(Problem("unknown_type", lm_id, f"{role} part type={part.get('type')!r}"))
        if not text:
            return task_pending
        if role == "system":
            batch.events.append(Event(sid, uid, "system", "text", text, ts=ts, meta={"injected": True}))
        elif task_pending:  # a subagent's first prompt is its parent's task
            batch.events.append(Event(sid, uid, "system", "text", text, ts=ts, meta={"from_agent": True}))
            return False
        else:
            batch.events.append(Event(sid, uid, "user", "text", text, ts=ts))
            if batch.session(sid).title is None:
                batch.session(sid).offer_title(text.splitlines()[0][:80], "first-prompt")
        return task_pending
    if role == "tool":
        for part in parts:
            if part.get("type") == "tool-result":
                _result(batch, sid, part, ts)
            else:
                batch.problems.append(Problem("unknown_type", lm_id, f"tool part type={part.get('type')!r}"))
        return task_pending
    if role != "assistant":
        batch.problems.append(Problem("unknown_type", lm_id, f"role={role!r}"))
        return task_pending
    positai = _positai(message)
    model = positai.get("modelId") if isinstance(positai.get("modelId"), str) and positai["modelId"] else None
    if model:
        batch.session(sid).model = model
    usage = _usage(positai.get("usage"))
    for index, part in enumerate(parts):
        kind, key = part.get("type"), f"{uid}:{index}"
        if kind == "text":
            text = _SUMMARY_TAGS.sub("", part.get("text") if isinstance(part.get("text"), str) else "").strip()
            if text:
                batch.events.append(Event(sid, key, "assistant", "text", text, ts=ts, model=model, usage=usage))
                usage = None
        elif kind == "reasoning":
            if isinstance(part.get("text"), str) and part["text"].strip():
                batch.events.append(Event(sid, key, "assistant", "thinking", part["text"], ts=ts, model=model))
        elif kind == "tool-call":
            call_id = str(part.get("toolCallId") or key)
            name = part.get("toolName") if isinstance(part.get("toolName"), str) else None
            arguments = part.get("input")
            batch.events.append(Event(sid, f"call:{call_id}", "assistant", "tool_call",
                                      render_call(name, arguments, _CALL_KEYS), ts=ts, tool_name=name,
                                      tool_input=arguments, tool_call_id=call_id, model=model, usage=usage))
            usage = None
        elif kind == "tool-result":  # a provider-executed tool's result, in the assistant's message
            _result(batch, sid, part, ts)
        else:
            batch.problems.append(Problem("unknown_type", lm_id, f"assistant part type={kind!r}"))
    return task_pending


def _part_text(part: dict) -> str:
    if part.get("type") == "text" and isinstance(part.get("text"), str):
        return part["text"]
    if part.get("type") in ("image", "file"):
        return f"[{part.get('mediaType') or part['type']}]"
    return ""


def _result(batch: Batch, sid: str, part: dict, ts: str | None) -> None:
    call_id = str(part.get("toolCallId") or "")
    output = part.get("output")
    kind = output.get("type") if isinstance(output, dict) else None
    value = output.get("value") if isinstance(output, dict) else output
    if isinstance(value, str):
        text = value
    elif isinstance(value, list):  # {type: "content", value: [{type: "text", text} | media]}
        text = "\n".join(v["text"] if isinstance(v, dict) and isinstance(v.get("text"), str) else "[media]"
                         for v in value)
    else:
        text = orjson.dumps(value).decode() if value is not None else ""
    batch.events.append(Event(sid, f"result:{call_id}", "tool", "tool_result", text, ts=ts,
                              tool_name=part.get("toolName") if isinstance(part.get("toolName"), str) else None,
                              tool_call_id=call_id or None,
                              is_error=isinstance(kind, str) and kind.startswith("error")))


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    found = Usage(input=count("inputTokens"), output=count("outputTokens"), cache_read=count("cacheReadTokens"),
                  cache_write=count("cacheWriteTokens"), cache_write_1h=count("cacheWrite1hTokens"))
    return found if any(found.as_dict().values()) else None
