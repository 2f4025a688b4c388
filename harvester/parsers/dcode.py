"""DeepAgents Code (``dcode``, PyPI ``deepagents-code``): LangGraph checkpoints in ``.state/sessions.db``.

Format facts and their sources: ``fixtures/dcode/SOURCE.md``. In short:

- The profile root is ``$DEEPAGENTS_HOME`` (absolute, or ``~/...``), else ``~/.deepagents`` on every OS.
  ``.state/sessions.db`` is LangGraph's ``SqliteSaver`` store: ``checkpoints`` (one row per super-step;
  ``metadata`` JSON with ``cwd``, ``git_branch``, ``git_commit_sha``, ``repository_url``, ``agent_name``,
  ``updated_at``, ``thread_name``, ``ls_integration_version``) and ``writes`` (each task's channel
  writes). A thread (``thread_id``) is a session; a subagent's run inside it (``checkpoint_ns`` =
  ``tools:<task id>``) is its child session ``<thread>/<namespace>``, less what a forked one inherited.
- Blobs are ``(type, bytes)`` from ``JsonPlusSerializer``: ``msgpack`` with LangGraph's ext types (a
  LangChain message is ext 5, ``(module, class, model_dump(), method)``; ext 7 is a ``DeltaChannel``
  snapshot). They are decoded with ``msgpack`` (:func:`unpack`), never by importing LangGraph: no
  class from the store is ever constructed.
- Messages: since deepagents 0.6 ``messages`` is a ``DeltaChannel``. A checkpoint carries the whole
  list only every 50 updates (a snapshot) or when a thread is seeded; in between each message is a
  ``writes`` row of channel ``messages`` (the first prompt too: a write on the step -1 checkpoint).
  Both are read (rowid watermarks) and every message keeps its own id as the event uid, so a new
  checkpoint or write adds only messages the bank lacks, and a message rewritten under its id revises
  its event.
- Human messages dcode writes itself (``additional_kwargs.lc_source``: goal notices, local context,
  pinned skills, shell commands; text starting ``[SYSTEM]``) are ``system``, never the user's words.
  A summarization is the ``_summarization_event`` channel: a compaction event.
- ``transcripts/<slug>--<sha256>.jsonl`` (and ``.../agents/*.jsonl``) is a Hooks v2 projection written
  only when hooks run, without tool calls: read only where the database is absent (``shadowed_by``).

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and LangGraph's
checkpoints are decoded and ordered here: the format facts above and the functions that read them stay side by
side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Mark, Problem, ProblemKind, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    describe_error,
    iso_text,
    json_objects,
    render_call,
)

NAME = "dcode"

# The console scripts deepagents-code installs (a Python process: matched on its script name).
PROCESSES = ("dcode", "deepagents-code", "deepagents_code")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # _paths.py: an absolute DEEPAGENTS_HOME, or "~/..." under the home; anything else stops dcode.
    value = env.get("DEEPAGENTS_HOME") or ""
    if value.startswith("~/"):
        return [home / value[2:].lstrip("/")]
    if value and Path(value).is_absolute():
        return [Path(value)]
    return [home / ".deepagents"]


def _since(table: str) -> str:
    # Deleting a thread can remove the rows with the largest rowids: a watermark above every rowid left
    # means the table shrank, and it is read again from the start (uids make that harmless).
    return f"CASE WHEN :since > (SELECT coalesce(max(rowid), 0) FROM {table}) THEN 0 ELSE :since END"


# msgpack headers that can follow the key "messages" when channel_values holds the list: an ext (the
# DeltaChannel snapshot) or an array (before DeltaChannel). In channel_versions a version follows (a
# string or a number), and a checkpoint without the list is not decoded at all.
_LIST_HEADS = ",".join(["C7", "C8", "C9", "D4", "D5", "D6", "D7", "D8", "DC", "DD",
                        *(f"9{d}" for d in "0123456789ABCDEF")])
_KEY = "X'a86d65737361676573'"  # fixstr "messages"
_HAS_LIST = (f"instr(c.checkpoint, {_KEY}) > 0 AND instr(',{_LIST_HEADS},', "
             f"',' || hex(substr(c.checkpoint, instr(c.checkpoint, {_KEY}) + 9, 1)) || ',') > 0")
CHANNELS_READ = ("messages", "_summarization_event")  # the rest is agent state (todos, files, goals, costs)
QUERIES = (
    SqliteQuery(
        "checkpoint",
        f"SELECT c.rowid AS rid, c.thread_id, c.checkpoint_ns AS ns, c.checkpoint_id, c.type, CASE WHEN "
        f"{_HAS_LIST} THEN hex(c.checkpoint) END AS blob, CAST(c.metadata AS TEXT) AS metadata "
        f"FROM checkpoints c WHERE c.rowid >= {_since('checkpoints')} ORDER BY c.rowid",
        "rid", ordered=True,
    ),
    SqliteQuery(
        "write",
        "SELECT w.rowid AS rid, w.thread_id, w.checkpoint_ns AS ns, w.checkpoint_id, w.task_id, w.idx, "
        "w.channel, w.type, hex(w.value) AS blob, (SELECT json_extract(CAST(c.metadata AS TEXT), '$.step') "
        "FROM checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns "
        "AND c.checkpoint_id = w.checkpoint_id) AS step "
        f"FROM writes w WHERE w.channel IN {CHANNELS_READ} AND w.rowid >= {_since('writes')} ORDER BY w.rowid",
        "rid", ordered=True,
    ),
)


def _db_of_transcript(path: PurePath) -> PurePath:
    return path.parent.parent / ".state" / "sessions.db"


def _db_of_agent_transcript(path: PurePath) -> PurePath:
    return path.parents[3] / ".state" / "sessions.db"


SOURCES = (
    SourceSpec(".state/sessions.db", "sqlite", "db", watch=False, queries=QUERIES),
    SourceSpec("transcripts/*.jsonl", "jsonl", "transcript", shadowed_by=_db_of_transcript),
    SourceSpec("transcripts/*/agents/*.jsonl", "jsonl", "agent-transcript",
               shadowed_by=_db_of_agent_transcript),
)

# Tables never read: dcode's caches (the name is stamped on the checkpoint too), its workspace bindings
# (cwd and project root, also in every checkpoint's metadata) and side-question costs.
TABLES_NOT_READ = frozenset({"dcode_thread_names", "dcode_thread_message_counts", "dcode_thread_workspaces",
                             "dcode_workspace_snapshots", "dcode_btw_costs"})
# Message types (model_dump()'s "type"); the *Chunk forms are the same messages, streamed.
MESSAGE_TYPES = frozenset({"human", "ai", "tool", "system", "remove"})
_ALIASES = {"user": "human", "assistant": "ai", "AIMessageChunk": "ai", "HumanMessageChunk": "human",
            "ToolMessageChunk": "tool", "SystemMessageChunk": "system"}
# Content blocks: text; reasoning; the tool calls AIMessage.tool_calls repeats; attachments.
TEXT_BLOCKS = frozenset({"text", "text-plain"})
THINKING_BLOCKS = frozenset({"thinking", "reasoning", "reasoning_content"})
SKIPPED_BLOCKS = frozenset({"tool_use", "tool_call", "tool_call_chunk", "server_tool_use", "function_call",
                            "redacted_thinking", "web_search_tool_result", "server_tool_result"})
ATTACHMENT_BLOCKS = frozenset({"image", "image_url", "file", "audio", "input_audio", "video", "document"})
SYSTEM_PREFIX = "[SYSTEM]"
# A forked subagent's history: the parent's messages (their ids too), then its task behind this preamble.
FORK_PREAMBLE = "[The messages above are a prior conversation you are continuing as the subagent"
REMOVE_ALL = "__remove_all__"
LATEST_KEPT = 64  # threads whose latest place the parser state keeps
_CALL_KEYS = ("command", "file_path", "path", "pattern", "query", "url", "description")


# -- msgpack, as LangGraph's serializer writes it ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class LgObject:
    """An object LangGraph encoded as an ext: its class, named, and its data (never constructed)."""

    module: str
    name: str
    value: Any


@dataclass(frozen=True, slots=True)
class Snapshot:
    value: Any  # a DeltaChannel's whole value at a snapshot checkpoint (ext 7)


def _ext(code: int, data: bytes) -> Any:
    inner = unpack(data)
    if code == 7:
        return Snapshot(inner)
    if code in (0, 1, 2, 3, 4, 5) and isinstance(inner, list) and len(inner) >= 3:
        return LgObject(str(inner[0]), str(inner[1]), inner[2])
    return LgObject("?", f"ext{code}", None)  # numpy arrays (6) and codes LangGraph may add


def unpack(data: bytes) -> Any:
    """One msgpack value; LangGraph's ext types become plain records (nothing is imported or built)."""
    import msgpack  # here: status imports every parser for its roots, and reads no blob

    try:
        return msgpack.unpackb(data, ext_hook=_ext, raw=False, strict_map_key=False)
    except (ValueError, TypeError) as exc:  # cut short, extra bytes, bad UTF-8; TypeError: unhashable map key
        raise ValueError(f"msgpack: {exc}") from exc


def _blob(reader: _Reader, row: dict) -> tuple[bool, Any]:
    """A (type, hex) column pair decoded: (ok, value)."""
    kind, text = row.get("type"), row.get("blob")
    if text is None or kind == "null":
        return True, None
    if kind != "msgpack":  # "pickle" is never loaded, by design; "json" predates dcode
        reader.problem("unknown_type", f"blob type={kind!r}")
        return False, None
    try:
        return True, unpack(bytes.fromhex(text))
    except (ValueError, UnicodeDecodeError) as exc:
        reader.problem("malformed", f"{row.get('thread_id')}: msgpack blob does not decode: {exc}")
        return False, None


# -- parsing ----------------------------------------------------------------------------------------
class _Reader:
    def __init__(self) -> None:
        self.batch = Batch(revise=True)  # a message rewritten under its id: the last version wins
        self.line = 0
        # thread -> (sort key, message dict, ts) in the order the thread's history has them
        self.messages: dict[str, list[tuple[tuple, dict, str | None]]] = {}
        self.titled: set[str] = set()
        self.latest: dict[str, str] = {}  # thread -> place of the latest message its turn state came from

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Uids are the messages' own ids, so what a read repeats the bank already holds. The state keeps,
    for the threads read last, the place of the message their turn state came from."""
    if ref.variant != "db":
        return _transcript(ref, records)
    reader = _Reader()
    reader.latest = dict(state.get("latest") or {})
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if not isinstance(row, dict) or not isinstance(row.get("thread_id"), str):
            reader.problem("malformed", "row without its thread")
        elif table == "checkpoint":
            _checkpoint(reader, row)
        elif table == "write":
            _write(reader, row)
        else:
            reader.problem("unknown_type", f"table={table!r}")
    for sid, items in reader.messages.items():
        _emit_thread(reader, sid, items)
    # Threads met in this read, and the most recent others: an old thread's late write is not expected.
    recent = sorted(reader.latest.items(), key=lambda item: item[1], reverse=True)[:LATEST_KEPT]
    reader.batch.state = {"latest": dict(recent)} if recent else {}
    return reader.batch


def _session_of(reader: _Reader, row: dict) -> str:
    """A thread is a session; a subagent's run inside it (namespace ``tools:<task id>``, nested ones
    joined by ``|``) is a child session ``<thread>/<namespace>``."""
    thread, ns = row["thread_id"], str(row.get("ns") or "")
    if not ns:
        return thread
    sid = f"{thread}/{ns}"
    patch = reader.batch.session(sid)
    patch.parent_native_id = f"{thread}/{ns.rpartition('|')[0]}" if "|" in ns else thread
    patch.parent_kind = "subagent"
    return sid


def _checkpoint(reader: _Reader, row: dict) -> None:
    sid, cid = _session_of(reader, row), str(row.get("checkpoint_id") or "")
    meta = _json_object(row.get("metadata"))
    patch = reader.batch.session(sid)
    # updated_at is stamped when a run starts (a subagent's: its parent's run); the checkpoint id (UUIDv6)
    # is when the step was saved.
    child = sid != row["thread_id"]
    times = sorted(t for t in (None if child else iso_text(meta.get("updated_at")), _uuid6_time(cid)) if t)
    if times:
        patch.started_at = patch.started_at or times[0]  # rows come in rowid order: the first is the oldest
        patch.updated_at = max(patch.updated_at or "", times[-1])
    patch.cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) and meta.get("cwd") else None
    if isinstance(meta.get("ls_integration_version"), str):
        patch.agent_version = meta["ls_integration_version"]
    git = GitFacts(meta.get("git_branch") or None, meta.get("git_commit_sha") or None,
                   meta.get("repository_url") or None)
    if git.branch or git.commit or git.origin_url:
        patch.git = git
    if not child and isinstance(meta.get("thread_name"), str) and meta["thread_name"].strip():
        # Generated by the small model or typed by the user: dcode does not record which.
        patch.offer_title(meta["thread_name"].strip(), "ai")
    agent = meta.get("lc_agent_name") if child else meta.get("agent_name")
    if isinstance(agent, str):
        patch.note(agent=agent)  # a subagent: its type ("general-purpose")
    ok, value = _blob(reader, row)
    if not ok or value is None:
        return
    values = value.get("channel_values") if isinstance(value, dict) else None
    listed = values.get("messages") if isinstance(values, dict) else None
    if isinstance(listed, Snapshot):
        listed = listed.value
    if isinstance(listed, list):
        for index, message in _own(child, listed):
            _add(reader, sid, (cid, 0, "", index), message, _uuid6_time(cid), seeded=True)


def _write(reader: _Reader, row: dict) -> None:
    sid, cid = _session_of(reader, row), str(row.get("checkpoint_id") or "")
    ok, value = _blob(reader, row)
    if not ok:
        return
    key = (cid, 1, str(row.get("task_id") or ""), int(row.get("idx") or 0))
    ts = _uuid6_time(cid)  # the step the write belongs to started then
    if row.get("channel") == "_summarization_event":
        if isinstance(value, dict):
            summary = _message(value.get("summary_message"))
            text = _content_text(reader, summary.get("content")) if summary else ""
            uid = str(summary.get("id") or "") if summary else ""
            meta = {"cutoff_index": value.get("cutoff_index"), "file_path": value.get("file_path")}
            uid = uid or f"summary:{cid}:{key[2]}:{key[3]}"
            event = Event(sid, uid, "system", "compaction", text, ts=ts, meta=meta)
            reader.messages.setdefault(sid, []).append((key, {"__event__": event}, ts))
        return
    if isinstance(value, LgObject) and value.name == "Overwrite" and isinstance(value.value, dict):
        value = value.value.get("value")  # replaces the whole list: its messages are read like any other
    # The input of a thread's first run is written on its first checkpoint (step -1): the first prompt.
    first = row.get("step") == -1 and sid == row["thread_id"]
    for index, message in _own(sid != row["thread_id"], value if isinstance(value, list) else [value]):
        _add(reader, sid, (*key[:3], key[3] * 1000 + index), message, ts, seeded=False, first=first)


def _own(child: bool, messages: list) -> list[tuple[int, Any]]:
    """(index, message) of a list, less what a forked subagent inherited: everything before its task. A
    subagent's human messages come from the agent that called it (``subagent_task``), not the user."""
    start = 0
    for index, raw in enumerate(messages if child else []):
        message = _message(raw)
        if message and message["type"] == "human" and str(message.get("content")).startswith(FORK_PREAMBLE):
            start = index
    out = []
    for index, raw in list(enumerate(messages))[start:]:
        message = _message(raw)
        if child and message and message["type"] == "human":
            kwargs = message.get("additional_kwargs") if isinstance(message.get("additional_kwargs"), dict) else {}
            raw = {**message, "additional_kwargs": {"lc_source": "subagent_task", **kwargs}}
        out.append((index, raw))
    return out


def _message(value: Any) -> dict | None:
    """A message as a dict with its ``type`` (human/ai/tool/system/remove), or None if not one."""
    data = value.value if isinstance(value, LgObject) else value
    if not isinstance(data, dict) or not ({"type", "role"} & data.keys()):
        return None
    kind = str(data.get("type") or data.get("role"))
    return {**data, "type": _ALIASES.get(kind, kind)}


def _add(reader: _Reader, thread: str, key: tuple, raw: Any, ts: str | None, seeded: bool,
         first: bool = False) -> None:
    message = _message(raw)
    if message is None:
        if isinstance(raw, str) and not seeded:
            return  # a bare string input (before DeltaChannel): the next checkpoint holds it with an id
        reader.problem("unknown_type", f"message of type {type(raw).__name__}")
        return
    kind = message["type"]
    if kind not in MESSAGE_TYPES:
        reader.problem("unknown_type", f"message type={message.get('type')!r}")
        return
    if not message.get("id"):
        if not seeded:
            return  # raw input before DeltaChannel: add_messages gave it its id in the next checkpoint
        reader.problem("malformed", f"{thread}: a {kind} message without an id")
        return
    message["__whole__"] = seeded or first
    reader.messages.setdefault(thread, []).append((key, message, ts))


def _emit_thread(reader: _Reader, thread: str, items: list[tuple[tuple, dict, str | None]]) -> None:
    """The thread's messages in history order; one met again (another snapshot, a rewrite) replaces
    its first place."""
    items.sort(key=lambda item: item[0])
    events: list[Event] = []
    placed: dict[str, int] = {}
    last: dict | None = None
    last_key: tuple = ()
    for key, message, ts in items:
        if "__event__" in message:
            new = [message["__event__"]]
        elif message["type"] == "remove" and message["id"] != REMOVE_ALL:
            # Taken out of the model's context (a RemoveMessage): the transcript keeps it, marked.
            reader.batch.marks.append(Mark(thread, {"removed": True}, uids=(str(message["id"]),)))
            continue
        elif message["type"] == "remove":
            new = [Event(thread, f"remove-all:{ts}", "system", "compaction", "context cleared", ts=ts)]
        else:
            try:
                new = _events(reader, thread, message, ts)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                reader.problem("malformed", f"{thread}: {message['type']} message of odd shape: {describe_error(exc)}")
                continue
            last, last_key = message, key
        for part, event in enumerate(new):
            if event.uid in placed:  # a later version, in the place and with the time of the first
                first = events[placed[event.uid]]
                event.ts, event.place = first.ts or event.ts, first.place
                events[placed[event.uid]] = event
            else:
                event.place = _place(key, part)
                placed[event.uid] = len(events)
                events.append(event)
    reader.batch.events.extend(events)
    # The turn's state is its latest message's: a write of an earlier step read late says nothing of it.
    if last is not None and _place(last_key, 0) >= reader.latest.get(thread, ""):
        reader.latest[thread] = _place(last_key, 0)
        reader.batch.session(thread).note(last_turn=_turn_state(last))


def _place(key: tuple, part: int) -> str:
    """Where a message's event belongs in its thread (Event.place): LangGraph stores a step's writes in the
    background, in any order, so a live read can meet the tool call after its result. Checkpoint ids are
    time-ordered (UUIDv6, fixed width); the snapshot a checkpoint holds (0) comes before the writes of the
    step that follows it (1); then the task and the write's index, as in a clean read."""
    cid, written, task, index = key
    return f"{cid}|{written}|{task}|{index:012d}|{part:03d}"


def _events(reader: _Reader, thread: str, m: dict, ts: str | None) -> list[Event]:
    mid, kind = str(m["id"]), m["type"]
    if kind == "human":
        return _human(reader, thread, m, ts)
    if kind == "tool":
        return [Event(thread, mid, "tool", "tool_result", _content_text(reader, m.get("content")),
                      ts=ts, tool_name=m.get("name"), tool_call_id=m.get("tool_call_id"),
                      is_error=m.get("status") == "error")]
    if kind == "system":
        return [Event(thread, mid, "system", "text", _content_text(reader, m.get("content")), ts=ts,
                      meta={"injected": True})]
    return _ai(reader, thread, m, ts)


def _human(reader: _Reader, thread: str, m: dict, ts: str | None) -> list[Event]:
    text = _content_text(reader, m.get("content"))
    kwargs = m.get("additional_kwargs") if isinstance(m.get("additional_kwargs"), dict) else {}
    source = kwargs.get("lc_source")
    if source or text.startswith(SYSTEM_PREFIX):
        meta = {"injected": True, **({"source": source} if source else {})}
        meta = {"from_agent": True} if source == "subagent_task" else meta
        return [Event(thread, str(m["id"]), "system", "text", text, ts=ts, meta=meta)]
    if text.strip() and m.get("__whole__") and thread not in reader.titled:
        # Only from a whole history (a checkpoint's list, a transcript read from its start): there the
        # first prompt is the thread's first, where a write's may be a later turn's.
        reader.titled.add(thread)
        first = text.strip().splitlines()[0]
        title = first if len(first) <= 80 else first[:79] + "…"
        reader.batch.session(thread).offer_title(title, "first-prompt")
    return [Event(thread, str(m["id"]), "user", "text", text, ts=ts)]


def _ai(reader: _Reader, thread: str, m: dict, ts: str | None) -> list[Event]:
    mid = str(m["id"])
    response = m.get("response_metadata") if isinstance(m.get("response_metadata"), dict) else {}
    model = response.get("model_name") or response.get("model")
    if isinstance(model, str) and model:
        reader.batch.session(thread).model = model
    else:
        model = None
    out: list[Event] = []
    content = m.get("content")
    blocks = content if isinstance(content, list) else [content] if content else []
    for index, thought in enumerate(_thinking(blocks)):
        out.append(Event(thread, f"{mid}:thinking:{index}", "assistant", "thinking", thought, ts=ts,
                         model=model))
    text = _content_text(reader, content)
    if text.strip():
        out.append(Event(thread, mid, "assistant", "text", text, ts=ts, model=model))
    # An invalid call (arguments the model garbled) is kept, marked.
    calls = [(c, None) for c in m.get("tool_calls") or []]
    calls += [(c, {"invalid": True, "error": c.get("error")}) for c in m.get("invalid_tool_calls") or []
              if isinstance(c, dict)]
    for index, (call, meta) in enumerate(calls):
        if isinstance(call, dict):
            call_id = call.get("id") or f"{mid}#{index}"
            out.append(Event(thread, f"{mid}:call:{call_id}", "assistant", "tool_call", render_call(call.get("name"), call.get("args"), _CALL_KEYS),
                             ts=ts, tool_name=call.get("name"), tool_input=call.get("args"),
                             tool_call_id=call_id, model=model, meta=meta))
    usage = _usage(m.get("usage_metadata"))
    if usage is not None:
        if not out:
            out.append(Event(thread, mid, "assistant", "meta", "model call", ts=ts, model=model))
        out[-1].usage = usage
    return out


def _thinking(blocks: list) -> list[str]:
    out = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") in THINKING_BLOCKS:
            text = block.get("thinking") or block.get("reasoning") or ""
            summary = block.get("summary")
            if not text and isinstance(summary, list):  # OpenAI reasoning: a list of summary parts
                text = "\n".join(s.get("text", "") for s in summary if isinstance(s, dict))
            if isinstance(text, str) and text.strip():
                out.append(text)
    return out


def _content_text(reader: _Reader, content: Any) -> str:
    """The visible text of a message's content (a string, or blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else orjson.dumps(content, default=repr).decode()
    parts = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, str):
            parts.append(block)
        elif kind in TEXT_BLOCKS:
            parts.append(str(block.get("text") or ""))
        elif kind in ATTACHMENT_BLOCKS:
            parts.append(f"[{kind}]")
        elif kind not in THINKING_BLOCKS and kind not in SKIPPED_BLOCKS:
            reader.problem("unknown_type", f"content block type={kind!r}")
    return "\n".join(p for p in parts if p)


def _turn_state(message: dict) -> str:
    """The thread's newest message: an answer without tool calls ends the turn; anything else waits."""
    return "complete" if message["type"] == "ai" and not message.get("tool_calls") else "open"


def _usage(value: Any) -> Usage | None:
    """LangChain's ``usage_metadata``: ``input_tokens`` is the sum of every input token type (langchain-core's
    UsageMetadata), the cache's included, and the bank's input leaves the cache out. Where Anthropic splits its
    cache writes by lifetime, langchain-anthropic puts them under ``ephemeral_5m_input_tokens`` /
    ``ephemeral_1h_input_tokens`` and zeroes ``cache_creation``. Reasoning is part of the output."""
    if not isinstance(value, dict):
        return None
    details = value.get("input_token_details")
    inputs = details if isinstance(details, dict) else {}
    details = value.get("output_token_details")
    outputs = details if isinstance(details, dict) else {}
    read = int(inputs.get("cache_read") or 0)
    hour = int(inputs.get("ephemeral_1h_input_tokens") or 0)
    written = int(inputs.get("cache_creation") or 0) or int(inputs.get("ephemeral_5m_input_tokens") or 0) + hour
    usage = Usage(input=max(int(value.get("input_tokens") or 0) - read - written, 0),
                  output=int(value.get("output_tokens") or 0), cache_read=read, cache_write=written,
                  cache_write_1h=min(hour, written), reasoning=int(outputs.get("reasoning") or 0))
    return usage if usage.as_dict() else None


# -- the transcripts/ projection (Hooks v2), where there is no database -----------------------------
_TRANSCRIPT_TYPES = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}


def _transcript(ref: SourceRef, records: Iterable[Record]) -> Batch:
    """Records as the messages they project (role, id, content, name), read like the database's. No
    tool calls are projected: Anthropic ``tool_use`` content blocks still name them."""
    reader = _Reader()
    reader.batch.revise = False  # a record is written once; the file is rewritten only to add records
    whole = None
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        whole = record.line == 1 if whole is None else whole
        kind, thread = _TRANSCRIPT_TYPES.get(str(data.get("role"))), data.get("thread_id")
        if data.get("schema_version") != 1 or kind is None or not isinstance(thread, str):
            reader.problem("unknown_type",
                           f"transcript record v{data.get('schema_version')!r} role={data.get('role')!r}")
            continue
        agent = data.get("agent_id") if ref.variant == "agent-transcript" else None
        sid = f"{thread}/{agent}" if agent else thread
        if agent:
            patch = reader.batch.session(sid)
            patch.parent_native_id, patch.parent_kind = thread, "subagent"
        content = data.get("content")
        blocks = content if isinstance(content, list) else []
        uid = data.get("message_id") or data.get("record_id") or f"{data.get('role')}:{data.get('sequence')}"
        message = {"type": kind, "content": content, "name": data.get("name"), "id": uid,
                   "tool_calls": [{"id": b.get("id"), "name": b.get("name"), "args": b.get("input")}
                                  for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"],
                   # A subagent's first prompt is its parent agent's task.
                   "additional_kwargs": {"lc_source": "subagent_task"} if agent and kind == "human" else {},
                   "__whole__": whole}
        try:
            reader.batch.events.extend(_events(reader, sid, message, iso_text(data.get("timestamp"))))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            reader.problem("malformed", f"{kind} record of unexpected shape: {describe_error(exc)}")
    return reader.batch


# -- helpers ------------------------------------------------------------------------------------------
def _json_object(value: Any) -> dict:
    try:
        data = orjson.loads(value) if isinstance(value, str | bytes) else value
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _uuid6_time(checkpoint_id: str) -> str | None:
    """LangGraph checkpoint ids are UUIDv6: 100 ns ticks since 1582-10-15 in their first 60 bits."""
    try:
        value = int(checkpoint_id.replace("-", ""), 16)
    except ValueError:
        return None
    if (value >> 76) & 0xF != 6:
        return None
    ticks = ((value >> 80) << 12) | ((value >> 64) & 0x0FFF)
    micros = (ticks - 0x01B21DD213814000) // 10
    moment = datetime.fromtimestamp(micros // 1_000_000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{micros % 1_000_000 // 1000:03d}Z"


