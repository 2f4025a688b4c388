"""The fields opencode writes on each kind of message part, for format drift (``status --drift``).

From ``MessageV2`` (``packages/opencode/src/session/message-v2.ts``, anomalyco/opencode @ 007a9409bafe): each part
is ``partBase`` (``id``, ``sessionID``, ``messageID``: kept in ``storage/`` files, dropped from the database's
``data``) plus its type's fields; a tool part's ``state`` is one of four shapes by ``status``. A field outside these
is reported once per kind of part and read (an ``unknown_field`` problem), as Codex's response items are; the part
is read all the same. The forks that share the parser add a few (Kilo's, noted below). Parts of other types (0.1's ``tool-invocation``, ``source-url``; forks') are not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harvester.parsers.base import unknown_fields

_BASE = ("id", "sessionID", "messageID", "type")
PART_FIELDS: dict[str, frozenset[str]] = {ptype: frozenset({*_BASE, *fields}) for ptype, fields in {
    "text": ("text", "synthetic", "ignored", "time", "metadata"),
    "reasoning": ("text", "metadata", "time"),
    "file": ("mime", "filename", "url", "source", "mediaType"),  # mediaType: 0.1's inline parts (message.ts)
    "agent": ("name", "source"),
    "compaction": ("auto", "overflow", "tail_start_id"),
    "subtask": ("prompt", "description", "agent", "model", "command"),
    "retry": ("attempt", "error", "time"),
    # time, and on step-finish model, generationID, vercelID, metrics: Kilo 7.7.7's (fixtures/kilo/SOURCE.md).
    "step-start": ("snapshot", "time"),
    "step-finish": ("reason", "snapshot", "cost", "tokens", "time", "model", "generationID", "vercelID", "metrics"),
    "snapshot": ("snapshot",),
    "patch": ("hash", "files"),
    "tool": ("callID", "tool", "state", "metadata"),
}.items()}
TOOL_STATE_FIELDS: dict[str, frozenset[str]] = {status: frozenset({"status", "input", *fields}) for status, fields in {
    "pending": ("raw",),
    "running": ("title", "metadata", "time"),
    "completed": ("output", "title", "metadata", "time", "attachments"),
    "error": ("error", "metadata", "time"),
}.items()}


def check_part(data: Mapping[str, Any], report: Callable[[str], None]) -> None:
    """``report`` each ``<type> part fields: …`` (and ``tool part state <status> fields: …``) of a part."""
    ptype = data.get("type")
    known = PART_FIELDS.get(ptype) if isinstance(ptype, str) else None
    if known is None:
        return
    if detail := unknown_fields(f"{ptype} part", data, known):
        report(detail)
    state = data.get("state")
    if ptype == "tool" and isinstance(state, dict) and isinstance(state.get("status"), str):
        state_known = TOOL_STATE_FIELDS.get(state["status"])
        if state_known is not None and (detail := unknown_fields(f"tool part state {state['status']}", state,
                                                                 state_known)):
            report(detail)
