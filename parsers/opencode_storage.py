"""opencode (and Kilo CLI) before 1.2: the ``storage/`` JSON tree, read as rows shaped like the database's.

``storage/session/<projectID>/<sessionID>.json`` is the source; its project, messages and their parts
are related documents: ``storage/project/<projectID>.json``, ``storage/message/<sessionID>/*.json``,
``storage/part/<messageID>/*.json``. Sources: ``fixtures/opencode/SOURCE.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from parsers.base import Record, json_objects

if TYPE_CHECKING:
    from parsers.opencode import _Reader

Rows = tuple[list[tuple[int, dict]], list[tuple[int, dict]], list[tuple[int, dict]]]


def storage_related(path: PurePath) -> list[PurePath]:
    """A legacy session file's project, messages and their parts, in id (= time) order."""
    storage = Path(path).parents[2]
    out: list[PurePath] = [storage / "project" / f"{Path(path).parent.name}.json"]
    for message in sorted((storage / "message" / Path(path).stem).glob("*.json")):
        out.append(message)
        out.extend(sorted((storage / "part" / message.stem).glob("*.json")))
    return out


def legacy_rows(reader: _Reader, records: Iterable[Record]) -> Rows:
    """The storage/ tree as rows shaped like the database's (json-migration.ts maps them so)."""
    session: dict | None = None
    worktree = None
    messages: list[tuple[int, dict]] = []
    part_docs: list[tuple[int, dict]] = []
    for record, doc in json_objects(records, reader.batch.problems):
        reader.line = record.line
        if record.line == 1 and not {"worktree", "role", "messageID"} & doc.keys():
            session = doc  # the session file itself (an empty one is skipped: a related file comes first)
        elif "messageID" in doc:
            part_docs.append((record.line, doc))
        elif "role" in doc:
            if isinstance(doc.get("parts"), list):  # pre-2025-07 messages held their parts inline
                reader.problem("unknown_type", "message with inline parts (storage format before MessageV2)")
                continue
            time = doc.get("time") if isinstance(doc.get("time"), dict) else {}
            messages.append((record.line, {"id": doc.get("id"), "session_id": doc.get("sessionID"),
                                           "time_created": time.get("created"), "data": doc}))
        elif "worktree" in doc:
            worktree = doc.get("worktree")
        else:
            reader.problem("unknown_type", f"storage document with keys {sorted(doc)[:6]}")
    if session is None:
        reader.line = 1
        reader.problem("malformed", "session file empty or not a session")
        return [], [], []
    time = session.get("time") if isinstance(session.get("time"), dict) else {}
    sid = session.get("id")
    row = {"id": sid, "parent_id": session.get("parentID"), "slug": session.get("slug"),
           "directory": session.get("directory"), "title": session.get("title"), "version": session.get("version"),
           "time_created": time.get("created"), "time_updated": time.get("updated"),
           "time_archived": time.get("archived"), "worktree": worktree}
    order = sorted((m for _, m in messages if isinstance(m["id"], str)),
                   key=lambda m: (m["time_created"] or 0, m["id"]))
    by_id = {m["id"]: m for m in order}
    for m in order:
        m["is_last"] = m is order[-1]
    parts = []
    for line, doc in part_docs:
        message = by_id.get(doc.get("messageID"))
        parts.append((line, {"id": doc.get("id"), "message_id": doc.get("messageID"), "session_id": sid,
                             "data": doc, "message": message["data"] if message else None,
                             "message_time": message["time_created"] if message else None,
                             "session_parent": session.get("parentID"),
                             "first_message": order[0]["id"] if order else None}))
    return [(1, row)], messages, parts
