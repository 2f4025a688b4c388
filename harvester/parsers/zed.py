"""Zed's agent threads (the editor's own agent): one SQLite database, ``<data dir>/threads/threads.db``.

Format facts and their sources: ``fixtures/zed/SOURCE.md``. In short:

- ``<data dir>`` is ``~/Library/Application Support/Zed`` on macOS, ``$FLATPAK_XDG_DATA_HOME/zed`` or
  ``$XDG_DATA_HOME/zed`` (``~/.local/share/zed``) on Linux, ``%LOCALAPPDATA%\\Zed`` on Windows.
- ``threads``: one row a thread (``id``, ``summary`` = its title, ``updated_at`` RFC 3339, ``data_type``
  ``zstd`` or ``json``, ``data``), upserted whole on every save; later builds add ``parent_id`` (a
  subagent's parent thread), ``folder_paths`` / ``folder_paths_order`` (the workspace folders: the cwd)
  and ``created_at``. One query a shape, each optional; the blob comes hex-encoded and is decompressed
  here, with a cap.
- The blob is ``DbThread`` JSON (``version`` ``0.3.0``): ``messages`` are serde's externally tagged enum
  (``{"User": {id, content}}``, ``{"Agent": {content, tool_results}}``, ``"Resume"``, ``{"Compaction":
  {"Summary": …}}``); content items ``{"Text": …}``, ``{"Thinking": {text, signature}}``, ``{"ToolUse":
  {id, name, input, …}}``, ``{"Mention": {uri, content}}``, ``{"Image": …}``. Older blobs (``0.2.0`` or
  no version) are the first agent's ``SerializedThread`` (``role``, ``segments``, ``tool_uses``,
  ``tool_results``).
- No message carries a time, and an agent message no id: an agent message is keyed by the user message
  it answers and its place after it, a tool call by its own id. A thread is read again whole whenever
  it is saved; the batch revises, so a re-read adds only what is new.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Kind, Problem, ProblemKind, Role, SessionPatch, Usage
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

NAME = "zed"
# The editor's process says nothing about whether one of its threads is in use: threads end by idle time.
PROCESSES: tuple[str, ...] = ()
MAX_THREAD_BYTES = 256 * 1024 * 1024  # a decompressed thread past this is not read (oversize)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """``paths::data_dir()/threads`` (``crates/paths/src/paths.rs``)."""
    if platform == "darwin":
        data = home / "Library" / "Application Support" / "Zed"
    elif platform == "win32":
        data = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local") / "Zed"
    else:
        xdg = env.get("FLATPAK_XDG_DATA_HOME") or env.get("XDG_DATA_HOME")
        data = (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share") / "zed"
    return [data / "threads"]


_COLUMNS = "id, summary, updated_at, data_type, hex(data) AS data"
QUERIES = (
    # Builds with subagents and workspace folders (parent_id, folder_paths, created_at).
    SqliteQuery("thread", f"SELECT {_COLUMNS}, parent_id, folder_paths, folder_paths_order, created_at FROM threads "
                "WHERE updated_at >= :since ORDER BY updated_at, id", "updated_at", optional=True, ordered=True),
    # Earlier builds: the five first columns only (runs only where created_at, the last column added, is absent).
    SqliteQuery("thread_v0", f"SELECT {_COLUMNS} FROM threads WHERE updated_at >= :since AND NOT EXISTS "
                "(SELECT 1 FROM pragma_table_info('threads') WHERE name = 'created_at') ORDER BY updated_at, id",
                "updated_at", optional=True, ordered=True),
)
SOURCES = (SourceSpec("threads.db", "sqlite", "db", watch=False, queries=QUERIES),)

PLACEHOLDER_TITLES = frozenset({"", "New Thread"})
_CALL_KEYS = ("command", "path", "regex", "glob", "query", "url", "label", "message")


class _Reader:
    def __init__(self) -> None:
        self.batch = Batch(revise=True)  # a thread is rewritten whole: the last version of an event wins
        self.line = 0

    def problem(self, kind: ProblemKind, detail: str) -> None:
        self.batch.problems.append(Problem(kind, self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader()
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        if table not in ("thread", "thread_v0"):
            reader.problem("unknown_type", f"table={table!r}")
        elif not isinstance(row, dict) or not isinstance(row.get("id"), str):
            reader.problem("malformed", "thread row without an id")
        else:
            _thread(reader, row)
    return reader.batch


def _document(reader: _Reader, row: dict) -> dict | None:
    kind = row.get("data_type")
    if kind not in ("zstd", "json"):
        reader.problem("unknown_type", f"data_type={kind!r}")
        return None
    import zstandard  # here, not at the top: the registry's import (status) needs none of it

    try:
        raw = bytes.fromhex(row.get("data") or "")
        if kind == "zstd":
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as stream:
                raw = stream.read(MAX_THREAD_BYTES + 1)
            if len(raw) > MAX_THREAD_BYTES:
                reader.problem("oversize", f"thread {row['id']} decompresses to more than {MAX_THREAD_BYTES} bytes")
                return None
        doc = orjson.loads(raw)
    except (ValueError, zstandard.ZstdError, orjson.JSONDecodeError) as exc:
        reader.problem("malformed", f"thread {row['id']}: data is not {kind} JSON: {exc}")
        return None
    if not isinstance(doc, dict):
        reader.problem("malformed", f"thread {row['id']}: data is not an object")
        return None
    return doc


def _project(patch: SessionPatch, snapshot: Any) -> None:
    """The project as the thread's first message found it (``ProjectSnapshot``): the first worktree is the
    cwd where the row names no folder (threads before ``folder_paths``), its git state the git facts."""
    trees = snapshot.get("worktree_snapshots") if isinstance(snapshot, dict) else None
    first = trees[0] if isinstance(trees, list) and trees and isinstance(trees[0], dict) else {}
    if patch.cwd is None and isinstance(first.get("worktree_path"), str):
        patch.cwd = first["worktree_path"]
    git = first.get("git_state") if isinstance(first.get("git_state"), dict) else {}
    if any(git.get(k) for k in ("current_branch", "head_sha", "remote_url")):
        patch.git = GitFacts(branch=git.get("current_branch"), commit=git.get("head_sha"), origin_url=git.get("remote_url"))


def _cwd(paths: Any, order: Any) -> str | None:
    """The first workspace folder in the user's order (util::path_list: paths sorted, joined by newlines;
    ``order`` the original index of each, comma-separated)."""
    if not isinstance(paths, str) or not paths:
        return None
    items = paths.split("\n")
    ranks = [int(x) for x in order.split(",") if x.strip().isdigit()] if isinstance(order, str) else []
    if len(ranks) != len(items):
        return items[0]
    return min(zip(ranks, items, strict=True))[1]


def _thread(reader: _Reader, row: dict) -> None:
    tid = row["id"]
    doc = _document(reader, row)
    if doc is None:
        return
    patch = reader.batch.session(tid)
    patch.cwd = _cwd(row.get("folder_paths"), row.get("folder_paths_order"))
    patch.started_at = iso_text(row.get("created_at")) or iso_text(row.get("updated_at"))
    patch.updated_at = iso_text(row.get("updated_at"))
    title = (row.get("summary") or doc.get("title") or doc.get("summary") or "").strip()
    if title not in PLACEHOLDER_TITLES:
        patch.offer_title(title, "ai")
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    if isinstance(model.get("model"), str):
        patch.model = model["model"]
    parent = row.get("parent_id") or ((doc.get("subagent_context") or {}).get("parent_thread_id")
                                      if isinstance(doc.get("subagent_context"), dict) else None)
    if parent:
        patch.parent_native_id, patch.parent_kind = str(parent), "subagent"
    _project(patch, doc.get("initial_project_snapshot"))
    facts: dict[str, Any] = {"format": str(doc.get("version") or "legacy")}
    for key in ("provider",):
        if model.get(key):
            facts[key] = model[key]
    if doc.get("profile"):
        facts["profile"] = doc["profile"]
    if doc.get("imported"):
        facts["imported"] = True  # a thread shared by someone else and opened here
    messages = doc.get("messages")
    if not isinstance(messages, list):
        reader.problem("malformed", f"thread {tid}: messages is not an array")
        return
    try:
        turns = (_legacy if doc.get("version") != "0.3.0" else _current)(reader, tid, messages, bool(parent))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        reader.problem("malformed", f"thread {tid}: message of unexpected shape: {describe_error(exc)}")
        return
    _usage(reader, tid, doc.get("request_token_usage"), turns)
    facts["last_turn"] = _last_turn(messages) if doc.get("version") == "0.3.0" else (
        "complete" if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant"
        else "open")
    patch.note(**facts)


class _Thread:
    """Events of one thread, keyed by the user message each answers."""

    def __init__(self, reader: _Reader, tid: str, child: bool) -> None:
        self.reader, self.tid, self.child = reader, tid, child
        self.user = "start"  # the user message id the next agent messages answer
        self.after = 0  # agent messages since it
        self.first_prompt = True
        self.last_event: dict[str, Event] = {}  # user message id -> the last assistant event of its turn
        self.tools: dict[str, Any] = {}  # call id -> tool name (the first agent's results name none)

    def emit(self, uid: str, role: Role, kind: Kind, text: str, meta: dict | None = None, **fields: Any) -> None:
        event = Event(self.tid, uid, role, kind, text, meta=meta, **fields)
        self.reader.batch.events.append(event)
        if role == "assistant":
            self.last_event[self.user] = event

    def prompt(self, uid: str, text: str, meta: dict | None = None) -> None:
        if self.child and self.first_prompt:  # a subagent's task comes from its parent agent
            self.emit(uid, "system", "text", text, {"from_agent": True, **(meta or {})})
        else:
            self.emit(uid, "user", "text", text, meta)
            if self.first_prompt:
                first = text.strip().splitlines()[0]
                self.reader.batch.session(self.tid).offer_title(first if len(first) <= 80 else first[:79] + "…",
                                                                 "first-prompt")
        self.first_prompt = False

    def call(self, call_id: str, name: Any, tool_input: Any) -> None:
        self.tools[call_id] = name
        self.emit(call_id, "assistant", "tool_call", render_call(name, tool_input, _CALL_KEYS), tool_name=name,
                  tool_input=tool_input, tool_call_id=call_id)

    def result(self, call_id: str, result: dict) -> None:
        text = _result_text(result.get("content"))
        if not text and result.get("output") is not None:
            output = result["output"]
            text = output if isinstance(output, str) else orjson.dumps(output).decode()
        self.emit(f"{call_id}:result", "tool", "tool_result", text, tool_call_id=call_id,
                  tool_name=result.get("tool_name") or self.tools.get(call_id), is_error=bool(result.get("is_error")))


def _current(reader: _Reader, tid: str, messages: list, child: bool) -> _Thread:
    thread = _Thread(reader, tid, child)
    for message in messages:
        if message == "Resume":  # the user asked the agent to go on after it stopped
            thread.after += 1
            thread.emit(f"{thread.user}:r{thread.after}", "system", "meta", "resume: continue where you left off",
                        {"message": "Resume"})
        elif isinstance(message, dict) and isinstance(message.get("User"), dict):
            _user(thread, message["User"])
        elif isinstance(message, dict) and isinstance(message.get("Agent"), dict):
            thread.after += 1
            _agent(thread, message["Agent"])
        elif isinstance(message, dict) and "Compaction" in message:
            thread.after += 1
            info = message["Compaction"]
            summary = info.get("Summary") if isinstance(info, dict) else None
            thread.emit(f"{thread.user}:c{thread.after}", "system", "compaction",
                        summary if isinstance(summary, str) else "conversation compacted", {"message": "Compaction"})
        else:
            name = next(iter(message), None) if isinstance(message, dict) else message
            reader.problem("unknown_type", f"message={name!r}")
    return thread


def _user(thread: _Thread, user: dict) -> None:
    thread.user, thread.after = str(user.get("id") or f"user{len(thread.last_event)}"), 0
    texts: list[str] = []
    mentions: list[Any] = []
    for index, item in enumerate(user.get("content") or []):
        kind, value = _variant(item)
        if kind == "Text" and isinstance(value, str):
            texts.append(value)
        elif kind == "Mention" and isinstance(value, dict):
            # An attachment (a file, a symbol, a thread…) where the user put it; its content is Zed's copy of
            # the file, not the user's words, and is not kept.
            texts.append(f"[@{_uri(value.get('uri'))}]")
            mentions.append(value.get("uri"))
        elif kind == "Image":
            thread.emit(f"{thread.user}:{index}", "user", "text", "[image]", {"block": "image"})
        else:
            thread.reader.problem("unknown_type", f"user content={kind!r}")
    if texts and "".join(texts).strip():
        thread.prompt(thread.user, "".join(texts), {"mentions": mentions} if mentions else None)


def _agent(thread: _Thread, agent: dict) -> None:
    base = f"{thread.user}:a{thread.after}"
    for index, item in enumerate(agent.get("content") or []):
        kind, value = _variant(item)
        if kind == "Text" and isinstance(value, str):
            if value.strip():
                thread.emit(f"{base}:{index}", "assistant", "text", value)
        elif kind == "Thinking" and isinstance(value, dict):
            if str(value.get("text") or "").strip():
                thread.emit(f"{base}:{index}", "assistant", "thinking", str(value["text"]))
        elif kind == "RedactedThinking":
            continue  # encrypted: nothing to read
        elif kind == "ToolUse" and isinstance(value, dict):
            tool_input = value.get("input")
            if tool_input is None and isinstance(value.get("raw_input"), str):
                tool_input = value["raw_input"]
            thread.call(str(value["id"]), value.get("name"), tool_input)
        elif kind == "Image":
            thread.emit(f"{base}:{index}", "assistant", "text", "[image]", {"block": "image"})
        else:
            thread.reader.problem("unknown_type", f"agent content={kind!r}")
    results = agent.get("tool_results") if isinstance(agent.get("tool_results"), dict) else {}
    for call_id, result in results.items():
        if isinstance(result, dict):
            thread.result(str(call_id), result)


def _legacy(reader: _Reader, tid: str, messages: list, child: bool) -> _Thread:
    """The first agent's threads (``legacy_thread.rs``: ``SerializedThread`` 0.1.0/0.2.0, and the unversioned
    one with ``text`` instead of ``segments``). Keyed by the message's numeric id."""
    thread = _Thread(reader, tid, child)
    for message in messages:
        if not isinstance(message, dict):
            reader.problem("malformed", "legacy message is not an object")
            continue
        role, mid = message.get("role"), f"m{message.get('id')}"
        segments = message.get("segments")
        if segments is None and isinstance(message.get("text"), str):
            segments = [{"type": "text", "text": message["text"]}]
        if role == "user":
            thread.user, thread.after = mid, 0
            text = "".join(str(s.get("text") or "") for s in segments or [] if isinstance(s, dict))
            if text.strip() and not message.get("is_hidden"):
                thread.prompt(mid, text)
        elif role == "assistant":
            thread.after += 1
            for index, segment in enumerate(segments or []):
                kind = segment.get("type") if isinstance(segment, dict) else None
                if kind == "text" and str(segment.get("text") or "").strip():
                    thread.emit(f"{mid}:{index}", "assistant", "text", str(segment["text"]))
                elif kind == "thinking" and str(segment.get("text") or "").strip():
                    thread.emit(f"{mid}:{index}", "assistant", "thinking", str(segment["text"]))
                elif kind != "RedactedThinking":
                    reader.problem("unknown_type", f"legacy segment type={kind!r}")
        elif role == "system":
            continue  # not carried over by Zed's own upgrade either
        else:
            reader.problem("unknown_type", f"legacy message role={role!r}")
            continue
        for use in message.get("tool_uses") or []:
            thread.call(str(use["id"]), use.get("name"), use.get("input"))
        for result in message.get("tool_results") or []:
            thread.result(str(result["tool_use_id"]), result)
    return thread


def _variant(item: Any) -> tuple[str | None, Any]:
    """serde's externally tagged enum: ``{"Variant": value}`` (or a bare ``"Variant"``)."""
    if isinstance(item, str):
        return item, None
    if isinstance(item, dict) and len(item) == 1:
        return next(iter(item.items()))
    return None, item


def _uri(uri: Any) -> str:
    kind, value = _variant(uri)
    if isinstance(value, dict):
        where = value.get("abs_path") or value.get("path") or value.get("url") or value.get("name") or value.get("id")
        return f"{kind.lower()} {where}" if kind and where else orjson.dumps(uri).decode()
    return str(kind or uri)


def _result_text(content: Any) -> str:
    """LanguageModelToolResultContent: text, ``{"Text": …}``, an image, or a list of them."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_result_text(c) for c in content) if t)
    kind, value = _variant(content)
    if kind in ("Text", "text") and isinstance(value, str):
        return value
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return "[image]" if kind == "Image" else ""


def _usage(reader: _Reader, tid: str, usage: Any, thread: _Thread) -> None:
    """request_token_usage: the last request's usage of each user message's turn, on that turn's last answer."""
    if not isinstance(usage, dict):
        return
    for user_id, tokens in usage.items():
        event = thread.last_event.get(str(user_id))
        if event is not None and isinstance(tokens, dict):
            event.usage = Usage(input=int(tokens.get("input_tokens") or 0), output=int(tokens.get("output_tokens") or 0),
                                cache_read=int(tokens.get("cache_read_input_tokens") or 0),
                                cache_write=int(tokens.get("cache_creation_input_tokens") or 0))


def _last_turn(messages: list) -> str:
    """Whether the thread's last turn finished: the last message is an agent one whose tool calls all have
    results (a user message, a Resume, or a call without a result waits for the model or a tool)."""
    last = messages[-1] if messages else None
    kind, agent = _variant(last)
    if kind == "Compaction":
        return "complete"
    if kind != "Agent" or not isinstance(agent, dict):
        return "open" if messages else "complete"
    calls = {str(v.get("id")) for k, v in map(_variant, agent.get("content") or []) if k == "ToolUse" and isinstance(v, dict)}
    results = agent.get("tool_results") if isinstance(agent.get("tool_results"), dict) else {}
    return "complete" if calls <= set(results) else "open"
