"""Visual Studio's GitHub Copilot: the IDE's OpenTelemetry traces, ``VSGitHubCopilotLogs/traces/*_VSGitHubCopilot_traces.jsonl``.

Format facts and their sources: ``fixtures/visualstudio_copilot/SOURCE.md`` (closed source: a third-party
reader's facts and its redacted real captures, with the GenAI semantic conventions Copilot's VS Code sibling
documents). In short:

- Visual Studio writes its Copilot agent's spans to ``%TEMP%\\VSGitHubCopilotLogs\\traces\\`` (readers also
  look in ``~/Library/Caches/...`` and ``~/.cache/...``); Visual Studio 2026 also writes each conversation to
  ``<solution>/.vs/<sln>/copilot-chat/<thread>/sessions/<id>`` (no extension), the solution folder being its
  cwd: a store inside repositories. Both hold one OTLP JSON export a line, appended:
  ``{"resourceSpans": [{"resource": {attributes}, "scopeSpans": [{"scope", "spans": [...]}]}]}``. The
  resource's ``service.version`` is the IDE's build. Files rotate: one conversation can span several.
- A span: ``traceId``, ``spanId``, ``parentSpanId``, ``name``, ``startTimeUnixNano``/``endTimeUnixNano``
  (decimal text), ``attributes`` as ``[{key, value: {stringValue | intValue | boolValue}}]``. Its
  ``gen_ai.conversation.id`` names the conversation, which is the session: a file holds several.
- ``gen_ai.operation.name`` says what it is: ``invoke_agent`` (one turn: model, ``copilot_chat.mode``,
  ``copilot_chat.root_request_id``), ``chat`` (one model call: ``gen_ai.input.messages`` and
  ``gen_ai.output.messages`` as JSON text of ``[{role, parts: [{type: text|tool_call|reasoning, content,
  id, name, arguments}]}]``, ``gen_ai.usage.input_tokens``/``output_tokens``), ``execute_tool`` (a tool run:
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``).
  Any other operation, and a span naming no conversation, is drift.
- Identity: a prompt is its turn's (``root_request_id``, else its text's hash: every model call of a turn
  repeats it); a tool call and its result are the call id's (the model's request in a chat span and the
  tool's own span give the same call: kept once); a model answer is its span's. A span flushed again
  (rotated files, a growing stream) gives the same uids: the later copy replaces the earlier
  (``Batch.revise``), and its usage names the span, so it counts once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    describe_error,
    iso_ms,
    json_objects,
    render_call,
)

NAME = "visualstudio-copilot"
PROCESSES = ("devenv", "devenv.exe")
_CALL_KEYS = ("command", "cmd", "path", "filename", "file", "filePath", "query", "queries", "pattern", "glob")
_TRACES = Path("VSGitHubCopilotLogs") / "traces"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """Visual Studio writes under the user's temp folder (``%TEMP%``); the other two are where readers look
    on macOS and Linux. No variable of Visual Studio's own moves it."""
    temp = [Path(env[name]) / _TRACES for name in ("TEMP", "TMP") if env.get(name)]
    return [*temp, home / "AppData" / "Local" / "Temp" / _TRACES, home / "Library" / "Caches" / _TRACES,
            home / ".cache" / _TRACES]


SOURCES = (
    SourceSpec("*_VSGitHubCopilot_traces*.jsonl", "jsonl", "traces"),
    # Visual Studio 2026: one extensionless file a conversation (named by its id) in the solution's .vs folder.
    SourceSpec(".vs/*/copilot-chat/*/sessions/*", "jsonl", "vs2026"),
)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = Batch(state=state, revise=True)  # a span flushed again (a growing stream, a rotated file) replaces
    seen: dict[str, int] = {}  # uid -> its place in batch.events: a later copy replaces it there too
    for record, export in json_objects(records, batch.problems):
        try:
            spans = list(_spans(export, batch, record.line))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            batch.problems.append(Problem("malformed", record.line, f"export of unexpected shape: {describe_error(exc)}"))
            continue
        spans.sort(key=lambda item: item[1].get("startTimeUnixNano") or "")  # a turn's span ends (is written) last
        for version, span in spans:
            try:
                _span(batch, record.line, span, version, seen)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                batch.problems.append(Problem("malformed", record.line, f"span of unexpected shape: {describe_error(exc)}"))
    if ref.variant == "vs2026" and len(ref.path.parents) > 5:  # <solution>/.vs/<sln>/copilot-chat/<thread>/sessions/<id>
        for patch in batch.sessions.values():
            patch.cwd = str(ref.path.parents[5])
    return batch


def _spans(export: dict, batch: Batch, line: int) -> Iterable[tuple[str | None, dict]]:
    if "resourceSpans" not in export:
        batch.problems.append(Problem("unknown_type", line, "an export without resourceSpans"))
        return
    for resource in export["resourceSpans"] or []:
        facts = _attributes((resource.get("resource") or {}).get("attributes"))
        version = facts.get("service.version") if isinstance(facts.get("service.version"), str) else None
        for scope in resource.get("scopeSpans") or []:
            for span in scope.get("spans") or []:
                if isinstance(span, dict):
                    yield version, span
                else:
                    batch.problems.append(Problem("malformed", line, "a span that is not an object"))


def _attributes(attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attribute in attributes if isinstance(attributes, list) else []:
        if not isinstance(attribute, dict) or not isinstance(attribute.get("key"), str):
            continue
        value = attribute.get("value")
        if isinstance(value, dict):
            for kind in ("stringValue", "intValue", "boolValue", "doubleValue"):
                if kind in value:
                    out[attribute["key"]] = value[kind]
                    break
    return out


def _iso(nanos: Any) -> str | None:
    try:
        return iso_ms(int(nanos) // 1_000_000) if isinstance(nanos, str | int) and not isinstance(nanos, bool) else None
    except ValueError:
        return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _count(value: Any) -> int:
    try:
        number = int(value) if isinstance(value, str | int) and not isinstance(value, bool) else 0
    except ValueError:
        return 0
    return max(number, 0)


def _span(batch: Batch, line: int, span: dict, version: str | None, seen: dict[str, int]) -> None:
    facts = _attributes(span.get("attributes"))
    sid = facts.get("gen_ai.conversation.id")
    operation = facts.get("gen_ai.operation.name") or str(span.get("name") or "").split(" ")[0]
    if not isinstance(sid, str) or not sid.strip():
        batch.problems.append(Problem("unknown_type", line, f"span operation={operation!r} without a conversation"))
        return
    sid = sid.strip().lower()
    start, end = _iso(span.get("startTimeUnixNano")), _iso(span.get("endTimeUnixNano"))
    patch = batch.session(sid)
    if start and (patch.started_at is None or start < patch.started_at):
        patch.started_at = start
    if end and (patch.updated_at is None or end > patch.updated_at):
        patch.updated_at = end
    if version:
        patch.agent_version = version
    model = _text(facts.get("gen_ai.response.model")) or _text(facts.get("gen_ai.request.model")) or None
    span_key = f"{span.get('traceId') or ''}:{span.get('spanId') or ''}"

    def add(event: Event) -> None:
        if event.uid in seen:
            batch.events[seen[event.uid]] = event
        else:
            seen[event.uid] = len(batch.events)
            batch.events.append(event)

    if operation == "invoke_agent":
        if model:
            patch.model = model
        mode = _text(facts.get("copilot_chat.mode"))
        if mode:
            patch.note(mode=mode)
        words = ", ".join(f"{k}: {v}" for k, v in (("mode", mode), ("model", model)) if v)
        add(Event(sid, f"turn:{span_key}", "system", "meta", f"Copilot turn ({words})" if words else "Copilot turn",
                  ts=start, model=model, meta={"span": "invoke_agent", "request": facts.get("copilot_chat.root_request_id")}))
    elif operation == "chat":
        _chat(batch, line, sid, span_key, facts, start, end, model, add)
    elif operation == "execute_tool":
        name = _text(facts.get("gen_ai.tool.name")) or str(span.get("name") or "").removeprefix("execute_tool ")
        call_id = _text(facts.get("gen_ai.tool.call.id")) or span_key
        arguments = _arguments(facts.get("gen_ai.tool.call.arguments"))
        add(Event(sid, f"call:{call_id}", "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS), ts=start,
                  tool_name=name, tool_input=arguments, tool_call_id=call_id, model=model))
        result = facts.get("gen_ai.tool.call.result")
        if isinstance(result, str):
            add(Event(sid, f"result:{call_id}", "tool", "tool_result", result.strip(), ts=end, tool_name=name,
                      tool_call_id=call_id))
    else:
        batch.problems.append(Problem("unknown_type", line, f"span operation={operation!r}"))


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.strip()


def _messages(raw: Any) -> list[dict]:
    if not isinstance(raw, str) or not raw.strip():
        return []
    decoded = orjson.loads(raw)
    return [m for m in decoded if isinstance(m, dict)] if isinstance(decoded, list) else []


def _chat(batch: Batch, line: int, sid: str, span_key: str, facts: dict[str, Any], start: str | None,
          end: str | None, model: str | None, add: Any) -> None:
    # The prompt: the last user message of the call's input (each call of a turn sends the history again).
    for message in reversed(_messages(facts.get("gen_ai.input.messages"))):
        if message.get("role") != "user":
            continue
        prompt = "\n".join(_text(p.get("content")) for p in message.get("parts") or [] if isinstance(p, dict)
                           and _text(p.get("content"))).strip()
        if prompt:
            request = _text(facts.get("copilot_chat.root_request_id"))
            key = request or _sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:24]
            add(Event(sid, f"prompt:{key}", "user", "text", prompt, ts=start))
            if not batch.state.get("titled", {}).get(sid) and len(batch.state.get("titled", {})) < 64:
                batch.state.setdefault("titled", {})[sid] = True
                batch.session(sid).offer_title(prompt.splitlines()[0][:80], "first-prompt")
            break
    usage = Usage(input=_count(facts.get("gen_ai.usage.input_tokens")),
                  output=_count(facts.get("gen_ai.usage.output_tokens")), response=f"visualstudio:{span_key}")
    usage_given = usage if usage.input or usage.output else None
    texts: list[str] = []
    calls: list[str] = []
    for message in _messages(facts.get("gen_ai.output.messages")):
        if message.get("role") != "assistant":
            batch.problems.append(Problem("unknown_type", line, f"output message role={message.get('role')!r}"))
            continue
        for index, part in enumerate(p for p in message.get("parts") or [] if isinstance(p, dict)):
            kind = part.get("type")
            if kind == "text":
                if _text(part.get("content")):
                    texts.append(_text(part.get("content")))
            elif kind == "reasoning":
                if _text(part.get("content")):
                    add(Event(sid, f"thinking:{span_key}:{index}", "assistant", "thinking", _text(part.get("content")),
                              ts=end, model=model))
            elif kind == "tool_call":
                name = _text(part.get("name"))
                call_id = _text(part.get("id")) or f"{span_key}:{index}"
                calls.append(name)
                arguments = _arguments(part.get("arguments"))
                add(Event(sid, f"call:{call_id}", "assistant", "tool_call", render_call(name, arguments, _CALL_KEYS),
                          ts=end, tool_name=name, tool_input=arguments, tool_call_id=call_id, model=model))
            else:
                batch.problems.append(Problem("unknown_type", line, f"output part type={kind!r}"))
    if texts:
        add(Event(sid, f"answer:{span_key}", "assistant", "text", "\n\n".join(texts), ts=end, model=model,
                  usage=usage_given))
    elif usage_given:  # a call that only asked for tools, or whose output was not captured, still cost its tokens
        said = f"model call (asked for {', '.join(calls)})" if calls else "model call (output not captured)"
        add(Event(sid, f"answer:{span_key}", "assistant", "meta", said, ts=end, model=model, usage=usage_given,
                  meta={"span": "chat"}))
    if model:
        batch.session(sid).model = model


def _sha256(data: bytes) -> Any:
    import hashlib  # here: the registry's import (every scan's start) needs none of it

    return hashlib.sha256(data)
