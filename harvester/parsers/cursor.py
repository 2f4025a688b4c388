"""Cursor: the CLI agent (``cursor-agent``) and the IDE's composer chats, both in SQLite stores.

Cursor is closed source: every fact here comes from third-party readers of real stores, named field
by field in ``fixtures/cursor/cli/SOURCE.md`` and ``fixtures/cursor/ide/SOURCE.md``. In short:

- CLI (``cursor-cli``): one ``<config>/chats/<md5(cwd)>/<agentId>/store.db`` per session. ``meta``
  key ``"0"`` is hex-encoded JSON (name, createdAt, lastUsedModel, latestRootBlobId, workspacePath);
  ``blobs`` is content-addressed (id = sha256 of data): JSON messages ``{role, content}`` in the AI
  SDK's shape beside protobuf graph blobs. Blobs are never rewritten: read by ``rowid`` watermark,
  in ``rowid`` (= conversation) order, each event's uid its blob id. The root blob's field 9 gives
  the cwd where ``meta`` has none. The ``~/.cursor/projects/*/agent-transcripts`` files repeat these
  sessions with less in them (no ids, no model): :mod:`cursor_transcripts` reads those without a store.
- IDE (``cursor``): ``<User>/globalStorage/state.vscdb``, table ``cursorDiskKV``: ``composerData:<id>``
  (a session: name, status, the bubble order) and ``bubbleId:<id>:<bubbleId>`` (a message; its uid
  the bubble id). Rows have no update time and are rewritten in place while a turn runs, so the
  watermark stays below the oldest row that may still change (``_KV_SQL``) and events are revised.
  ``workspaceStorage/<hash>/state.vscdb`` lists a workspace's composers and its ``workspace.json``
  names the folder: the cwd of composers that do not carry their own.

Over 500 lines: the project's shape is one parser module per harness (parsers/__init__.py), and the CLI's and
the IDE's stores share shapes: the format facts above and the functions that read them stay side by side.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from harvester.model import Batch, Event, GitFacts, Problem, SessionPatch, Usage
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    iso_ms,
    json_objects,
    render_call,
)

CLI_NAME = "cursor-cli"
IDE_NAME = "cursor"


# -- roots ----------------------------------------------------------------------------------
def cli_roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """cursor-agent's config dir: ``$CURSOR_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/cursor`` (Linux and
    BSD), else ``~/.cursor`` (``%USERPROFILE%\\.cursor`` on Windows). All are kept: chats written
    before a variable changed stay where they were."""
    out = [Path(env["CURSOR_CONFIG_DIR"]).expanduser()] if env.get("CURSOR_CONFIG_DIR") else []
    if env.get("XDG_CONFIG_HOME") and not platform.startswith(("win", "darwin")):
        out.append(Path(env["XDG_CONFIG_HOME"]) / "cursor")
    return [*out, home / ".cursor"]


def cli_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return cli_roots_for(sys.platform, env, home)


def ide_roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """The IDE's ``User`` dir, found as VS Code finds its user-data dir (Cursor is a fork of it):
    ``$VSCODE_PORTABLE/user-data``, ``$VSCODE_APPDATA/Cursor``, else per OS. A ``--user-data-dir``
    (a command-line switch) needs a ``[roots] cursor`` entry."""
    if env.get("VSCODE_PORTABLE"):
        return [Path(env["VSCODE_PORTABLE"]) / "user-data" / "User"]
    if env.get("VSCODE_APPDATA"):
        base = Path(env["VSCODE_APPDATA"])
    elif platform.startswith("win"):
        base = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    elif platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return [base / "Cursor" / "User"]


def ide_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return ide_roots_for(sys.platform, env, home)


# -- sources --------------------------------------------------------------------------------
_META = "(SELECT value FROM meta WHERE key = '0')"
CLI_QUERIES = (
    SqliteQuery("meta", "SELECT key, value, 0 AS mark FROM meta", "mark"),  # one small row: always
    # The root blob (latestRootBlobId): SQLite before 3.41 has no unhex(), so its id is looked for in
    # meta's hex text (or in plain JSON, which some builds write).
    SqliteQuery("root", "SELECT id, hex(data) AS data, 0 AS mark FROM blobs WHERE "
                f"instr(lower({_META}), lower(hex(id))) > 0 OR instr({_META}, id) > 0", "mark"),
    # Message blobs: JSON objects that say their role first (graph blobs, file snapshots stay there).
    SqliteQuery("message", "SELECT rowid AS rid, id, data FROM blobs WHERE rowid >= :since AND "
                "instr(substr(data, 1, 64), CAST('\"role\"' AS BLOB)) > 0 ORDER BY rowid", "rid", ordered=True),
)

# Fields nothing here reads (file contents, attached context, UI state; a composer's "text" is its
# input box, typed and never sent): dropped in SQL.
_COMPOSER_HEAVY = ("originalFileStates", "codeBlockData", "context", "text", "richText", "capabilities",
                   "capabilityContexts", "newlyCreatedFiles", "newlyCreatedFolders", "queueItems", "todos",
                   "gitGraphFileSuggestions", "allAttachedFileCodeChunksUris", "conversationState")
_BUBBLE_HEAVY = ("richText", "codeBlocks", "capabilities", "capabilityStatuses", "context", "symbolLinks",
                 "codebaseContextChunks", "attachedCodeChunks", "contextPieces", "relevantFiles", "images",
                 "lints", "recentlyViewedFiles", "fileDiffTrajectories", "diffHistories",
                 "multiFileLinterErrors", "consoleLogs", "approximateLintErrors", "humanChanges",
                 "attachedHumanChanges", "projectLayouts", "gitDiffs", "suggestedCodeBlocks",
                 "assistantSuggestedDiffs", "docsReferences", "webReferences", "aiWebSearchResults",
                 "interpreterResults", "thinking.signature")


def _slim(column: str, fields: tuple[str, ...]) -> str:
    paths = ", ".join(f"'$.{f}'" for f in fields)
    return f"CASE WHEN json_valid({column}) THEN json_remove({column}, {paths}) ELSE {column} END"


# Rows of cursorDiskKV that may still be rewritten in place keep the watermark below them, so the
# next read takes them again: the newest row of a composer that is generating, a tool still running,
# a bubble in generatingBubbleIds. What nothing can change any more is not read twice. A composer
# stuck "generating" (a crash mid-turn) keeps the re-read at most _LIVE_SPAN rowids long.
_LIVE_SPAN = 2000
_KEY_CID = "CASE WHEN key < 'bubbleId;' THEN substr(key, 10, instr(substr(key, 10), ':') - 1) " \
           "ELSE substr(key, 14) END"
_HEADERS = "CAST(t.value AS TEXT)"
_KV_SQL = f"""
WITH w AS MATERIALIZED (SELECT rowid AS rid, key, {_KEY_CID} AS cid FROM cursorDiskKV
  WHERE rowid >= :since AND value IS NOT NULL
    AND ((key >= 'bubbleId:' AND key < 'bubbleId;') OR (key >= 'composerData:' AND key < 'composerData;'))),
c AS MATERIALIZED (
  SELECT kv.rowid AS rid, kv.key, ids.cid, {_slim('CAST(kv.value AS TEXT)', _COMPOSER_HEAVY)} AS value
  FROM (SELECT DISTINCT cid FROM w) ids JOIN cursorDiskKV kv ON kv.key = 'composerData:' || ids.cid
  WHERE kv.value IS NOT NULL),
b AS MATERIALIZED (
  SELECT w.rid, w.key, w.cid, {_slim('CAST(kv.value AS TEXT)', _BUBBLE_HEAVY)} AS value
  FROM w JOIN cursorDiskKV kv ON kv.rowid = w.rid WHERE w.key < 'bubbleId;'),
open AS (
  SELECT max(w.rid) AS rid FROM w JOIN c USING (cid)
  WHERE json_valid(c.value) AND json_extract(c.value, '$.status') = 'generating' GROUP BY w.cid
  UNION ALL SELECT rid FROM b WHERE json_valid(value) AND json_extract(value, '$.toolFormerData.status')
    NOT IN ('completed', 'error', 'cancelled')
  UNION ALL SELECT b.rid FROM b JOIN c USING (cid), json_each(CASE WHEN json_valid(c.value)
    THEN json_extract(c.value, '$.generatingBubbleIds') END) g
  WHERE b.key = 'bubbleId:' || b.cid || ':' || g.value),
m AS (SELECT max(coalesce((SELECT min(rid) FROM open), (SELECT max(rid) FROM w)),
                 (SELECT max(rid) FROM w) - {_LIVE_SPAN}) AS mark),
h AS MATERIALIZED (
  SELECT json_extract(e.value, '$.composerId') AS cid, e.value AS header
  FROM ItemTable t, json_each(CASE WHEN json_valid({_HEADERS}) THEN {_HEADERS} END,
                              CASE WHEN json_type({_HEADERS}) = 'array' THEN '$' ELSE '$.allComposers' END) e
  WHERE t.key = 'composer.composerHeaders')
SELECT 'composer' AS kind, c.key, c.rid, c.value, (SELECT header FROM h WHERE h.cid = c.cid) AS header,
  m.mark, c.cid FROM c, m
UNION ALL SELECT 'bubble', b.key, b.rid, b.value, NULL, m.mark, b.cid FROM b, m
ORDER BY 7, 3
"""
# A composer's rows come together (the parser orders its bubbles by its header list): a page holds whole
# composers. The mark is the read's own lower bound, the same on every row: not resumable mid-read.
IDE_QUERIES = (SqliteQuery("kv", _KV_SQL, "mark", group="cid"),)
# VS Code's storage writes ItemTable with INSERT into a UNIQUE ON CONFLICT REPLACE key: every write
# gets a new rowid, so a rowid watermark sees each change of the composer list.
IDE_WORKSPACE_QUERIES = (SqliteQuery(
    "workspace", "SELECT rowid AS rid, key, CAST(value AS TEXT) AS value FROM ItemTable "
    "WHERE key = 'composer.composerData' AND rowid >= :since", "rid", ordered=True),)

CLI_SOURCES = (SourceSpec("chats/*/*/store.db", "sqlite", "chat", watch=False, queries=CLI_QUERIES,
                          sidecar=lambda path: path.with_name("meta.json")),)
IDE_SOURCES = (
    SourceSpec("globalStorage/state.vscdb", "sqlite", "global", watch=False, queries=IDE_QUERIES),
    SourceSpec("workspaceStorage/*/state.vscdb", "sqlite", "workspace", watch=False,
               queries=IDE_WORKSPACE_QUERIES, sidecar=lambda path: path.with_name("workspace.json")),
)

# cursor-agent is a shell script that execs its bundled node from ~/.local/share/cursor-agent/versions/.
CLI_PROCESSES = ("cursor-agent", "cursor-agent/versions/")
IDE_PROCESSES = ("cursor", "Cursor", "Cursor.exe")

# Skipped on purpose, not drift: the CLI's system prompt (Cursor's own instructions, every session),
# reasoning only the provider can decrypt, and the placeholder Cursor leaves for hidden text.
CLI_SKIPPED_ROLES = frozenset({"system"})
CLI_SKIPPED_BLOCKS = frozenset({"redacted-reasoning"})
_REDACTED = "[REDACTED]"
# The content blocks read, per message role (the AI SDK's part types); any other is drift.
CLI_BLOCKS = {"user": ("text", "image"), "assistant": ("text", "reasoning", "thinking", "tool-call", "image"),
              "tool": ("tool-result",)}
# cursorDiskKV keys never read (checkpoints, request context, diffs, the model-side agent cache...):
# the query selects bubbleId and composerData rows only. Listed for the record.
IDE_KEYS_NOT_READ = ("checkpointId:", "messageRequestContext:", "codeBlockDiff:", "composer.content.",
                     "agentKv:", "composerVirtualRowHeights:", "inlineDiffs-")
_TURN = {"generating": "open", "completed": "complete", "error": "failed", "aborted": "aborted",
         "cancelled": "aborted", "none": None}
_TOOL_DONE = {"completed": False, "error": True, "cancelled": True}  # status -> is_error
_PLACEHOLDER_NAMES = ("", "New Agent", "New Chat", "New Composer")
_DEFAULT_MODELS = ("default", "auto", "")
_CALL_KEYS = ("command", "pattern", "query", "target_file", "targetFile", "file_path", "filePath", "path",
              "relativeWorkspacePath", "url", "search_term", "explanation", "description")
_USER_QUERY = re.compile(r"<user_query>(.*?)(?:</user_query>|\Z)", re.S)
_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)


class _Reader:
    """One parse call: its batch, and the record being read (for problems)."""

    def __init__(self, batch: Batch) -> None:
        self.batch, self.line = batch, 0

    def problem(self, kind: Any, detail: str) -> None:  # kind: a ProblemKind
        self.batch.problems.append(Problem(kind, self.line, detail))

    def event(self, session: str, uid: str, role: Any, kind: Any, text: str, **fields: Any) -> Event:
        event = Event(session, uid, role, kind, text, **fields)  # role, kind: the model's literals
        self.batch.events.append(event)
        return event

    def rows(self, records: Iterable[Record]) -> Iterable[tuple[str, dict]]:
        for record, data in json_objects(records, self.batch.problems):
            self.line = record.line
            if isinstance(data.get("row"), dict):
                yield str(data.get("table")), data["row"]
            else:
                self.problem("malformed", "row is not an object")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Both harnesses: the source variant says which store the rows come from."""
    if ref.variant == "chat":
        return _parse_cli(ref, records, state)
    return _parse_workspace(ref, records) if ref.variant == "workspace" else _parse_ide(records)


# -- CLI ------------------------------------------------------------------------------------
def _parse_cli(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(Batch(state=dict(state)))  # blobs are never rewritten: no revision
    sid = ref.path.parent.name  # the agent id: its folder is named by it
    patch = reader.batch.session(sid)
    root, messages = "", []
    for table, row in reader.rows(records):
        if table == "meta":
            _cli_meta(reader, patch, row, ref)
        elif table == "root":
            root = str(row.get("data") or "")
        elif table == "message":
            messages.append((reader.line, row))
        else:
            reader.problem("unknown_type", f"table={table!r}")
    side = _sidecar(reader, ref, "meta.json")  # newer builds: the title Cursor shows, and its times
    if _text(side.get("title")):
        patch.offer_title(_text(side.get("title")), "ai")
    patch.started_at = patch.started_at or _iso(side.get("createdAtMs"))
    patch.updated_at = _iso(side.get("updatedAtMs")) or patch.updated_at
    uri = _root_workspace(root) if root else None
    if uri is False:
        reader.problem("malformed", "root blob is not protobuf")
    elif uri and not patch.cwd:  # builds whose meta has no workspacePath: the root's workspace URI
        patch.cwd = _uri_path(uri)
    last = None
    for line, row in messages:
        reader.line = line
        last = _cli_message(reader, sid, row) or last
    if last:
        patch.note(last_turn=last)
    import hashlib  # here: status imports every parser for its roots; OpenSSL's is a cost of its own

    if patch.cwd and hashlib.md5(patch.cwd.encode()).hexdigest() != ref.path.parent.parent.name:
        patch.note(workspace_hash_mismatch=True)  # the folder is named md5(cwd): say when it is not
    return reader.batch


def _cli_meta(reader: _Reader, patch: SessionPatch, row: dict, ref: SourceRef) -> None:
    if row.get("key") != "0":
        reader.problem("unknown_type", f"meta key={row.get('key')!r}")
        return
    value = str(row.get("value") or "")
    try:  # hex-encoded JSON; some builds write the JSON itself
        meta = _object(reader, value if value.lstrip().startswith("{") else bytes.fromhex(value), "meta")
    except ValueError:
        meta = _object(reader, value, "meta (neither hex nor JSON)")
    if meta is None:
        return
    patch.started_at = _iso(meta.get("createdAt"))
    patch.updated_at = _iso(ref.mtime_ns // 1_000_000)
    patch.cwd = _text(meta.get("workspacePath")) or None
    patch.model = _model_name(meta.get("lastUsedModel"))
    if _text(meta.get("name")) not in _PLACEHOLDER_NAMES:
        patch.offer_title(_text(meta.get("name")), "ai")
    facts = {k: meta[k] for k in ("mode", "approvalMode") if meta.get(k)}
    if facts:
        patch.note(**facts)


def _cli_message(reader: _Reader, sid: str, row: dict) -> str | None:
    """One message blob, block by block; returns the turn state it leaves (``open``/``complete``)."""
    blob = str(row.get("id"))
    try:
        msg = orjson.loads(str(row.get("data") or ""))
    except orjson.JSONDecodeError:
        return None  # a file snapshot that happens to mention "role": not a message
    role = msg.get("role") if isinstance(msg, dict) else None
    if not isinstance(role, str) or role in CLI_SKIPPED_ROLES:
        return None
    if role not in CLI_BLOCKS:
        reader.problem("unknown_type", f"message role={role!r}")
        return None
    content = msg.get("content")
    parts = content if isinstance(content, list) else []
    blocks = [(blob, {"type": "text", "text": content})] if isinstance(content, str) else [
        (f"{blob}:{i}", b) for i, b in enumerate(parts) if isinstance(b, dict)]
    ts = _iso(msg.get("createdAt"))
    for uid, block in blocks:
        kind = block.get("type")
        if kind in CLI_SKIPPED_BLOCKS:
            continue
        if kind not in CLI_BLOCKS[role]:
            reader.problem("unknown_type", f"{role} block type={kind!r}")
            continue
        model = _model_name(_dig(block, "providerOptions", "cursor", "modelName")
                            or _dig(msg, "providerOptions", "cursor", "modelName"))
        _cli_block(reader, sid, role, kind, uid, block, ts, model)
    # An answer without tool calls ends the turn; a prompt, a call or a result leaves it open.
    answered = role == "assistant" and not any(b.get("type") == "tool-call" for _, b in blocks)
    return "complete" if answered else "open"


def _cli_block(reader: _Reader, sid: str, role: str, kind: str, uid: str, block: dict, ts: str | None,
               model: str | None) -> None:
    text = str(block.get("text") or "")
    if kind == "image":  # never the bytes
        reader.event(sid, uid, role, "text", "[image]", ts=ts, meta={"part": "image"})
    elif role == "user":
        # The user's words are inside <user_query>; the rest (<user_info>, rules, attached files) is
        # what Cursor injected.
        queries = [q.strip() for q in _USER_QUERY.findall(text)]
        context = _USER_QUERY.sub("", text).strip()
        if not queries and not text.lstrip().startswith("<"):
            queries, context = [text.strip()], ""  # an unwrapped prompt: keep it as the user's
        if context:
            reader.event(sid, f"{uid}:context", "system", "text", context, ts=ts, meta={"injected": True})
        if words := "\n\n".join(q for q in queries if q):
            reader.event(sid, uid, "user", "text", words, ts=ts)
            if not reader.batch.state.get("titled"):
                reader.batch.state["titled"] = True
                reader.batch.session(sid).offer_title(_first_line(words), "first-prompt")
    elif kind == "text":
        for j, thought in enumerate(_THINK.findall(text)):  # composer models inline their reasoning
            if thought.strip():
                reader.event(sid, f"{uid}:think{j}", "assistant", "thinking", thought.strip(), ts=ts,
                             model=model)
        if (visible := _THINK.sub("", text).strip()) and visible != _REDACTED:
            reader.event(sid, uid, "assistant", "text", visible, ts=ts, model=model)
    elif kind in ("reasoning", "thinking"):
        if (thought := (text or str(block.get("thinking") or "")).strip()) and thought != _REDACTED:
            reader.event(sid, uid, "assistant", "thinking", thought, ts=ts, model=model)
    elif kind == "tool-call":
        name, args = block.get("toolName"), block.get("args")
        reader.event(sid, uid, "assistant", "tool_call", render_call(name, args, _CALL_KEYS), ts=ts, tool_name=name,
                     tool_input=args, tool_call_id=block.get("toolCallId") or uid, model=model)
    else:  # tool-result: a string, text parts, or any JSON
        result = block.get("result")
        if isinstance(result, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in result):
            result = "\n".join(str(p.get("text") or "") for p in result)
        reader.event(sid, uid, "tool", "tool_result", result if isinstance(result, str) else
                     orjson.dumps(result).decode(), ts=ts, tool_name=block.get("toolName"),
                     tool_call_id=block.get("toolCallId"), is_error=block.get("isError") is True)


# -- IDE: the global database -----------------------------------------------------------------
def _parse_ide(records: Iterable[Record]) -> Batch:
    reader = _Reader(Batch(revise=True))  # bubbles are rewritten in place: the last version wins
    composers: dict[str, tuple[int, dict, dict]] = {}
    bubbles: dict[str, list[tuple[int, dict]]] = {}
    for _table, row in reader.rows(records):
        key, kind = str(row.get("key") or ""), row.get("kind")
        if (value := _object(reader, row.get("value"), key)) is None:
            continue
        if kind == "composer":
            header = _object(reader, row["header"], key) if row.get("header") else None
            composers[key.removeprefix("composerData:")] = (reader.line, value, header or {})
        elif kind == "bubble":  # its key names it too: bubbleId:<composerId>:<bubbleId>
            value["bubbleId"] = value.get("bubbleId") or key.split(":")[-1]
            bubbles.setdefault(key.split(":")[1], []).append((reader.line, value))
        else:
            reader.problem("unknown_type", f"row kind={kind!r}")
    for cid in sorted(set(composers) | set(bubbles)):
        line, composer, header = composers.get(cid, (0, {}, {}))
        reader.line = line
        _composer(reader, cid, composer, header, bubbles.get(cid, []))
    return reader.batch


def _composer(reader: _Reader, cid: str, composer: dict, header: dict, rows: list[tuple[int, dict]]) -> None:
    """A composer and the bubbles of it this read brought, in conversation order."""
    headers = composer.get("fullConversationHeadersOnly") or []
    inline = [b for b in composer.get("conversation") or [] if isinstance(b, dict)]  # before split storage
    if composer.get("tabs") or composer.get("conversationMap"):
        reader.problem("unknown_type", "composer with tabs/conversationMap (Cursor before 0.40)")
    if not headers and not inline and not rows:
        return  # opened and never used: no session
    patch = reader.batch.session(cid)
    if composer:
        _composer_patch(reader, patch, composer, header)
    order = {h.get("bubbleId"): i for i, h in enumerate(headers) if isinstance(h, dict)}
    listed, unlisted = [(i, 0, b) for i, b in enumerate(inline)], []
    for line, bubble in rows:
        if bubble.get("bubbleId") in order:
            listed.append((order[bubble["bubbleId"]], line, bubble))
        elif composer.get("status") != "generating":  # while it writes, a bubble may precede its header
            unlisted.append((str(bubble.get("createdAt") or ""), line, bubble))
    subagent = bool(patch.parent_native_id)
    for position, line, bubble in sorted(listed, key=lambda item: item[0]):
        reader.line = line
        _bubble(reader, cid, bubble, position == 0, subagent)
    for _, line, bubble in sorted(unlisted, key=lambda item: item[0]):
        reader.line = line
        _bubble(reader, cid, bubble, False, subagent, {"unlisted": True})


def _composer_patch(reader: _Reader, patch: SessionPatch, composer: dict, header: dict) -> None:
    patch.started_at = _iso(composer.get("createdAt"))
    patch.updated_at = _iso(composer.get("lastUpdatedAt"))
    if (name := _text(composer.get("name")) or _text(header.get("name"))) not in _PLACEHOLDER_NAMES:
        patch.offer_title(name, "ai")  # Cursor names a composer after its first turn
    patch.model = _model_name(_dig(composer, "modelConfig", "modelName"))
    patch.cwd = next(filter(None, map(_uri_path, _workspace_uris(composer, header))), None)
    if parent := _dig(composer, "subagentInfo", "parentComposerId"):
        patch.parent_native_id, patch.parent_kind = str(parent), "subagent"
    if branch := _text(composer.get("createdOnBranch")):
        patch.git = GitFacts(branch=branch)
    status = composer.get("status") if isinstance(composer.get("status"), str) else None
    if status not in _TURN and status is not None:
        reader.problem("unknown_type", f"composer status={status!r}")
    facts = {"last_turn": _TURN.get(status), "mode": composer.get("unifiedMode"),
             "archived": composer.get("isArchived"), "backend": composer.get("agentBackend")}
    if facts := {k: v for k, v in facts.items() if v}:
        patch.note(**facts)


def _workspace_uris(composer: dict, header: dict) -> list[Any]:
    """Where a composer says it ran, newest layouts first: its workspace, the 3.x agent location,
    the repository it tracks (each in the composer, then in the global header list)."""
    return [uri for doc in (composer, header) for uri in (
        _dig(doc, "workspaceIdentifier", "uri"), _dig(doc, "agentLocation", "environment", "uri"),
        _dig(doc, "trackedGitRepos", 0, "repoPath"))]


def _bubble(reader: _Reader, cid: str, bubble: dict, first: bool, subagent: bool,
            meta: dict | None = None) -> None:
    bid, kind, ts = str(bubble.get("bubbleId") or ""), bubble.get("type"), _iso(bubble.get("createdAt"))
    if not bid:
        reader.problem("malformed", "bubble without its id")
    elif kind == 1 and (text := _text(bubble.get("text"))):
        if subagent:  # a subagent's prompts are written by its parent agent, not by the human
            reader.event(cid, bid, "system", "text", text, ts=ts, meta={"from_agent": True, **(meta or {})})
            return
        reader.event(cid, bid, "user", "text", text, ts=ts, meta=meta)
        if first:
            reader.batch.session(cid).offer_title(_first_line(text), "first-prompt")
    elif kind == 2:
        model, last = _model_name(_dig(bubble, "modelInfo", "modelName")), None
        if thought := _text(_dig(bubble, "thinking", "text")):
            last = reader.event(cid, f"{bid}:thinking", "assistant", "thinking", thought, ts=ts, model=model,
                                meta=meta)
        if text := _text(bubble.get("text")):
            last = reader.event(cid, bid, "assistant", "text", text, ts=ts, model=model, meta=meta)
        if isinstance(bubble.get("toolFormerData"), dict):
            last = _tool_bubble(reader, cid, bid, bubble["toolFormerData"], ts, model)
        tokens = bubble.get("tokenCount") if isinstance(bubble.get("tokenCount"), dict) else {}
        usage = Usage(input=int(tokens.get("inputTokens") or 0), output=int(tokens.get("outputTokens") or 0))
        if last is not None and (usage.input or usage.output):
            last.usage = usage  # zeros are the default, not a measurement
    elif kind != 1:
        reader.problem("unknown_type", f"bubble type={kind!r}")


def _tool_bubble(reader: _Reader, cid: str, bid: str, tool: dict, ts: str | None,
                 model: str | None) -> Event:
    """The call, and once its status is final, the result (``rawArgs``/``params`` and ``result`` are
    JSON held in strings; ``loading`` means still running)."""
    name, call_id, status = tool.get("name"), tool.get("toolCallId") or bid, str(tool.get("status") or "")
    args = _maybe_json(tool.get("rawArgs")) or _maybe_json(tool.get("params"))
    meta = {k: v for k, v in (("status", status), ("decision", tool.get("userDecision"))) if v}
    call = reader.event(cid, f"{bid}:call", "assistant", "tool_call", render_call(name, args, _CALL_KEYS), ts=ts,
                        tool_name=name, tool_input=args, tool_call_id=call_id, model=model, meta=meta)
    if status not in _TOOL_DONE:
        if status not in ("loading", ""):
            reader.problem("unknown_type", f"tool status={status!r}")
        return call
    result = tool.get("result") if isinstance(tool.get("result"), str) else None
    text = result or (status if _TOOL_DONE[status] else "")  # a cancelled call has no result
    return reader.event(cid, f"{bid}:result", "tool", "tool_result", text, ts=ts, tool_name=name,
                        tool_call_id=call_id, is_error=_TOOL_DONE[status], meta={"status": status})


# -- IDE: a workspace's database ----------------------------------------------------------------
def _parse_workspace(ref: SourceRef, records: Iterable[Record]) -> Batch:
    """The composers a workspace lists, filed under the folder its ``workspace.json`` names (a
    ``.code-workspace`` names no single folder). Only that cwd comes from here."""
    reader = _Reader(Batch())
    cwd = _uri_path(_sidecar(reader, ref, "workspace.json").get("folder"))
    for _table, row in reader.rows(records):
        entries = (_object(reader, row.get("value"), str(row.get("key"))) or {}).get("allComposers")
        for entry in entries if isinstance(entries, list) and cwd else []:
            if isinstance(entry, dict) and entry.get("composerId") and not entry.get("isDraft"):
                reader.batch.session(str(entry["composerId"])).cwd = cwd
    return reader.batch


# -- helpers --------------------------------------------------------------------------------
def _root_workspace(hexdata: str) -> str | bool | None:
    """Field 9 (the workspace ``file://`` URI) of the root blob's protobuf; False if not protobuf."""
    pos, found = 0, None
    try:
        data = bytes.fromhex(hexdata)
        while pos < len(data):
            key, pos = _varint(data, pos)
            if key & 7 == 0:
                _, pos = _varint(data, pos)
            elif key & 7 == 2:
                size, pos = _varint(data, pos)
                if key >> 3 == 9:
                    found = data[pos:pos + size].decode("utf-8", "replace")
                pos += size
            elif key & 7 in (1, 5):
                pos += 8 if key & 7 == 1 else 4
            else:
                return False
    except (IndexError, ValueError):
        return False
    return found if pos == len(data) else False


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while data[pos] & 0x80:
        value, shift, pos = value | (data[pos] & 0x7F) << shift, shift + 7, pos + 1
    return value | data[pos] << shift, pos + 1


def _uri_path(uri: Any) -> str | None:
    """A local folder from a ``file://`` URI, a VS Code URI object or a plain path; remote URIs
    (``vscode-remote://``) name no local folder."""
    if isinstance(uri, dict):
        local = uri.get("scheme") in (None, "file")
        return (_text(uri.get("fsPath")) or _text(uri.get("path")) or None) if local else None
    if not isinstance(uri, str) or not uri.startswith(("file:", "/")):
        return None
    path = unquote(urlsplit(uri).path) if uri.startswith("file:") else uri
    return (path[1:] if re.match(r"^/[A-Za-z]:", path) else path) or None  # file:///c:/... on Windows


def _sidecar(reader: _Reader, ref: SourceRef, name: str) -> dict:
    return (_object(reader, ref.sidecar, name) or {}) if ref.sidecar else {}


def _object(reader: _Reader, value: Any, key: str) -> dict | None:
    try:
        data = orjson.loads(value) if isinstance(value, str | bytes) else value
    except orjson.JSONDecodeError as exc:
        reader.problem("malformed", f"{key}: not JSON: {exc}")
        return None
    if not isinstance(data, dict):
        reader.problem("malformed", f"{key}: not an object")
    return data if isinstance(data, dict) else None


def _dig(value: Any, *path: str | int) -> Any:
    for step in path:
        if isinstance(step, int):
            value = value[step] if isinstance(value, list) and len(value) > step else None
        else:
            value = value.get(step) if isinstance(value, dict) else None
    return value


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _model_name(value: Any) -> str | None:
    return value if isinstance(value, str) and value not in _DEFAULT_MODELS else None


def _maybe_json(value: Any) -> Any:
    try:  # tool arguments: JSON held in a string, usually
        return orjson.loads(value) if isinstance(value, str) else value
    except orjson.JSONDecodeError:
        return value or None


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0]
    return first if len(first) <= 80 else first[:79] + "…"


def _iso(value: Any) -> str | None:
    """Epoch milliseconds (composers, CLI meta) or an ISO string (bubbles, kept as written)."""
    if isinstance(value, str):
        return value or None
    return iso_ms(value)
