"""opencode (and Kilo CLI) before 1.2: the ``storage/`` JSON tree, read as rows shaped like the database's.

``storage/session/<projectID>/<sessionID>.json`` is the source; its project, messages and their parts
are related documents: ``storage/project/<projectID>.json``, ``storage/message/<sessionID>/*.json``,
``storage/part/<messageID>/*.json``. Sources: ``fixtures/opencode/SOURCE.md``.

Before Storage's first migration (opencode 0.1-0.3, mid 2025) each project kept its own tree:
``project/<dir>/storage/session/info/<sessionID>.json``, ``.../session/message/<sessionID>/*.json`` and
``.../session/part/<sessionID>/<messageID>/*.json`` (``project_storage_related``). That migration copied them
into ``storage/`` unchanged, but skipped the ``global`` project (sessions outside git) and projects whose
folder was gone: those stay where they were. Messages of 0.1 (``Message.Info``) hold their parts inline,
with the times, model, error and tool titles in ``metadata``: ``v1_message`` reads them as the rows the
later layouts give. Sources: ``fixtures/opencode/variants/SOURCE.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Protocol

from harvester.parsers.base import Record, json_objects

if TYPE_CHECKING:
    from harvester.model import Batch, ProblemKind


class _Reader(Protocol):
    """What these functions use of harvester/parsers/opencode.py's reader (named here, not imported from there:
    that module imports this one)."""

    batch: Batch
    line: int

    def problem(self, kind: ProblemKind, detail: str) -> None: ...

Rows = tuple[list[tuple[int, dict]], list[tuple[int, dict]], list[tuple[int, dict]]]


def storage_related(path: PurePath) -> list[PurePath]:
    """A legacy session file's project, messages and their parts, in id (= time) order."""
    storage = Path(path).parents[2]
    out: list[PurePath] = [storage / "project" / f"{Path(path).parent.name}.json"]
    for message in sorted((storage / "message" / Path(path).stem).glob("*.json")):
        out.append(message)
        out.extend(sorted((storage / "part" / message.stem).glob("*.json")))
    return out


def project_storage_related(path: PurePath) -> list[PurePath]:
    """A session of a project's own tree (before the first migration): its messages and their parts, in id order."""
    session = Path(path).parents[1]  # project/<dir>/storage/session
    out: list[PurePath] = []
    for message in sorted((session / "message" / Path(path).stem).glob("*.json")):
        out.append(message)
        out.extend(sorted((session / "part" / Path(path).stem / message.stem).glob("*.json")))
    return out


def v1_message(doc: dict) -> tuple[dict, list[dict]]:
    """A 0.1 message (parts inline, facts in ``metadata``) as a MessageV2 row and its parts' documents. The parts
    have no ids: each is ``<message id>:<index>``. The AI SDK's part types map onto MessageV2's: a
    ``tool-invocation`` in state ``result`` is a completed tool (its title and times from ``metadata.tool``), in
    ``call``/``partial-call`` a running one; ``file``'s ``mediaType`` is ``mime``."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    time = meta.get("time") if isinstance(meta.get("time"), dict) else {}
    assistant = meta.get("assistant") if isinstance(meta.get("assistant"), dict) else {}
    tools = meta.get("tool") if isinstance(meta.get("tool"), dict) else {}
    data = {"role": doc.get("role"), "time": time, "error": meta.get("error"), **{
        k: assistant[k] for k in ("modelID", "providerID", "path", "summary", "tokens", "cost") if k in assistant}}
    mid = doc.get("id")
    parts = []
    for index, part in enumerate(doc.get("parts") or []):
        if not isinstance(part, dict):
            continue
        part = {**part, "id": f"{mid}:{index:04d}"}
        call = part.get("toolInvocation")
        if part.get("type") == "tool-invocation" and isinstance(call, dict):
            known = tools.get(call.get("toolCallId")) if isinstance(tools.get(call.get("toolCallId")), dict) else {}
            done = call.get("state") == "result"
            part = {"id": part["id"], "type": "tool", "tool": call.get("toolName"), "callID": call.get("toolCallId"),
                    "state": {"status": "completed" if done else "running", "input": call.get("args"),
                              **({"output": call.get("result")} if done else {}),
                              "title": known.get("title"), "time": known.get("time") or {}}}
        elif part.get("type") == "file" and "mime" not in part:
            part["mime"] = part.get("mediaType")
        parts.append(part)
    return {"id": mid, "time_created": time.get("created"), "data": data}, parts


def legacy_rows(reader: _Reader, records: Iterable[Record], path: PurePath) -> Rows:
    """The storage/ tree as rows shaped like the database's (json-migration.ts maps them so), joined
    as opencode joins them: by the folders the documents were found in (``storage_related`` lists
    each message, then its parts), not by the ids inside them. opencode's own reader lists
    ``message/<sessionID>/`` and ``part/<messageID>/``; its migration takes every id from the paths,
    "not JSON content". A document's own ``id`` is still its uid (opencode names its files by it)."""
    session: dict | None = None
    worktree = None
    cwd: str | None = None  # where an assistant message says it worked: sessions before 0.4 name no directory
    messages: list[tuple[int, dict]] = []
    part_docs: list[tuple[int, dict, dict | None]] = []  # each with the message it was listed under
    message: dict | None = None
    for record, doc in json_objects(records, reader.batch.problems):
        reader.line = record.line
        if record.line == 1 and not {"worktree", "role", "messageID"} & doc.keys():
            session = doc  # the session file itself (an empty one is skipped: a related file comes first)
        elif "role" in doc:
            if isinstance(doc.get("parts"), list):  # 0.1 (to July 2025): parts inline
                message, inline = v1_message(doc)
                part_docs.extend((record.line, part, message) for part in inline)
            else:
                time = doc.get("time") if isinstance(doc.get("time"), dict) else {}
                message = {"id": doc.get("id"), "time_created": time.get("created"), "data": doc}
            messages.append((record.line, message))
            path_cwd = (message["data"].get("path") or {}).get("cwd") if isinstance(
                message["data"].get("path"), dict) else None
            cwd = cwd or (path_cwd if isinstance(path_cwd, str) and path_cwd else None)
        elif "messageID" in doc or "type" in doc:
            part_docs.append((record.line, doc, message))
        elif "worktree" in doc:
            worktree = doc.get("worktree")
        else:
            reader.problem("unknown_type", f"storage document with keys {sorted(doc)[:6]}")
    reader.line = 1
    if session is None:
        reader.problem("malformed", "session file empty or not a session")
        return [], [], []
    time = session.get("time") if isinstance(session.get("time"), dict) else {}
    sid = session.get("id")
    if isinstance(sid, str) and sid != path.stem:
        reader.problem("malformed", f"session file {path.name} holds session {sid}: its messages are read from "
                                    f"message/{path.stem}/")
    row = {"id": sid, "parent_id": session.get("parentID"), "slug": session.get("slug"),
           "directory": session.get("directory") or cwd, "title": session.get("title"), "version": session.get("version"),
           "time_created": time.get("created"), "time_updated": time.get("updated"),
           "time_archived": time.get("archived"), "worktree": worktree}
    order = sorted((m for _, m in messages if isinstance(m["id"], str)),
                   key=lambda m: (m["time_created"] or 0, m["id"]))
    for _, m in messages:
        m["session_id"], m["is_last"] = sid, m is order[-1]
    parts = []
    for line, doc, listed in part_docs:
        parts.append((line, {"id": doc.get("id"), "message_id": listed["id"] if listed else None, "session_id": sid,
                             "data": doc, "message": listed["data"] if listed else None,
                             "message_time": listed["time_created"] if listed else None,
                             "session_parent": session.get("parentID"),
                             "first_message": order[0]["id"] if order else None}))
    return [(1, row)], messages, parts
