"""Type checks where values enter the model: what a parser returns is checked before anything else
sees it, so a wrong-typed field in an agent's record costs that field, never the scan.

Parsers copy values out of records they do not control: a ``timestamp`` that is an object, a ``cwd``
that is a number, a tool name that is a list, metadata nested hundreds deep. Left alone, such a value
fails far from its record (a SQLite binding error, a ``TypeError`` in the git probe, a state the cursor
cannot store) and takes the source down with it. :func:`repair` walks a :class:`Batch` once, puts every
field back in its declared type (a wrong value is dropped: set to its "unknown", or, for a required
field, the event is dropped) and says what it did, so the reader can count the record ``malformed``
with its line. The clean case is a few ``isinstance`` calls per event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from harvester.model import KINDS, ROLES, Batch, Event, GitFacts, Mark, Problem, SessionPatch, Usage

_STATES = ("live", "ended", "abandoned", "unknown")
_PARENT_KINDS = ("subagent", "fork")
_PROBLEM_KINDS = ("malformed", "unknown_type", "unknown_field", "oversize", "unreadable", "failed")
_INT64 = 2**63 - 1
# A path longer than this is no directory any system has: the git probe would fail on it.
MAX_PATH = 4096


@dataclass(frozen=True, slots=True)
class Fault:
    """One value that did not have its declared type, and what became of it."""

    where: str  # "event", "session", "mark", "state"
    field: str
    found: str  # the JSON type name of what was there
    action: str  # "dropped", "event dropped", ...

    def describe(self) -> str:
        return f"{self.where} {self.field}: {self.found} ({self.action})"


def json_type(value: Any) -> str:
    """The name a reader of a JSON record would give a value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text" if value else "empty text"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def _shown(value: Any) -> str:
    """A role or kind as a fault says it: the name a parser gave, or the type of a value it passed through from
    the record (the value itself is the record's text, which a problem row never holds)."""
    from harvester.parsers.base import is_name

    return str(value) if is_name(value) and len(value) <= 20 else json_type(value)


def storable(value: Any) -> bool:
    """Whether the bank can store a JSON value (object keys are text, nesting is bounded)."""
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


def _text_ok(value: Any) -> bool:
    # Lone surrogates cannot be encoded for SQLite; only text decoded leniently can carry them.
    return isinstance(value, str) and (value.isascii() or _encodable(value))


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _optional_text(value: Any) -> bool:
    return value is None or _text_ok(value)


def _id_ok(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and _text_ok(value)


def _path_ok(value: Any) -> bool:
    return value is None or (_text_ok(value) and "\x00" not in value and len(value) <= MAX_PATH)


def _int_ok(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value <= _INT64


def repair(batch: Batch, previous_state: dict[str, Any]) -> list[Fault]:
    """Put every field of ``batch`` back in its declared type, in place; return what was wrong. A parser
    state the cursor cannot store is replaced by ``previous_state`` (the record's effect on it is lost)."""
    faults: list[Fault] = []
    kept: list[Event] = []
    for event in batch.events:
        if _repair_event(event, faults):
            kept.append(event)
    if len(kept) != len(batch.events):
        batch.events = kept
    for key in list(batch.sessions):
        patch = batch.sessions[key]
        if not isinstance(patch, SessionPatch) or not _id_ok(key) or patch.native_id != key:
            faults.append(Fault("session", "native_id", json_type(key), "session dropped"))
            del batch.sessions[key]
            continue
        _repair_patch(patch, faults)
    marks = [m for m in batch.marks if _mark_ok(m, faults)]
    if len(marks) != len(batch.marks):
        batch.marks = marks
    problems = [p for p in batch.problems if isinstance(p, Problem) and p.kind in _PROBLEM_KINDS]
    for p in problems:
        if not isinstance(p.detail, str):
            p.detail = str(p.detail)
        if p.line is not None and not _int_ok(p.line):
            p.line = None
    batch.problems[:] = problems
    if not isinstance(batch.state, dict) or not storable(batch.state):
        faults.append(Fault("state", "parser state", "a value the bank cannot store", "not kept"))
        batch.state = previous_state
    return faults


def _repair_event(e: Event, faults: list[Fault]) -> bool:
    """False when the event cannot be kept at all (no session, no identity, no role or kind)."""
    for name in ("session", "uid"):
        if not _id_ok(getattr(e, name)):
            faults.append(Fault("event", name, json_type(getattr(e, name)), "event dropped"))
            return False
    if e.role not in ROLES or e.kind not in KINDS:
        faults.append(Fault("event", "role/kind", f"{_shown(e.role)}/{_shown(e.kind)}", "event dropped"))
        return False
    if not isinstance(e.text, str) or not _text_ok(e.text):
        found = json_type(e.text)
        e.text = _as_text(e.text)
        faults.append(Fault("event", "text", found, "kept as JSON text" if e.text else "dropped"))
    for name in ("ts", "tool_name", "tool_call_id", "model", "place"):
        value = getattr(e, name)
        if not _optional_text(value):
            faults.append(Fault("event", name, json_type(value), "dropped"))
            setattr(e, name, None)
    if not isinstance(e.is_error, bool):
        e.is_error = bool(e.is_error) if isinstance(e.is_error, int | float) else False
    if e.usage is not None and not (isinstance(e.usage, Usage) and all(_int_ok(getattr(e.usage, n)) for n in (
            "input", "output", "cache_read", "cache_write", "reasoning", "cache_write_1h"))):
        faults.append(Fault("event", "usage", json_type(e.usage), "dropped"))
        e.usage = None
    if e.usage is not None:
        _usage_facts(e.usage, faults)
    if e.tool_input is not None and not storable(e.tool_input):
        faults.append(Fault("event", "tool_input", "a value the bank cannot store", "dropped"))
        e.tool_input = None
    if e.meta is not None and not (isinstance(e.meta, dict) and storable(e.meta)):
        faults.append(Fault("event", "meta", json_type(e.meta), "dropped"))
        e.meta = None
    return True


def _usage_facts(usage: Usage, faults: list[Fault]) -> None:
    """A response id that is no text and a recorded cost that is no amount are dropped; the counts stay."""
    if usage.response is not None and not (isinstance(usage.response, str) and _text_ok(usage.response)):
        faults.append(Fault("event", "usage.response", json_type(usage.response), "dropped"))
        usage.response = None
    cost = usage.cost
    if cost is not None and not (isinstance(cost, int | float) and not isinstance(cost, bool)
                                 and math.isfinite(cost) and cost >= 0):
        faults.append(Fault("event", "usage.cost", json_type(cost), "dropped"))
        usage.cost = None
    elif cost is not None:
        usage.cost = float(cost)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):  # text that does not encode: its lone surrogates become U+FFFD
        return value.encode("utf-8", "replace").decode("utf-8")
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return ""


def _repair_patch(p: SessionPatch, faults: list[Fault]) -> None:
    if not _path_ok(p.cwd):
        faults.append(Fault("session", "cwd", json_type(p.cwd), "dropped"))
        p.cwd = None
    for name in ("title", "title_source", "model", "agent_version", "started_at", "updated_at",
                 "parent_native_id"):
        value = getattr(p, name)
        if not _optional_text(value):
            faults.append(Fault("session", name, json_type(value), "dropped"))
            setattr(p, name, None)
    if p.parent_kind is not None and p.parent_kind not in _PARENT_KINDS:
        faults.append(Fault("session", "parent_kind", json_type(p.parent_kind), "dropped"))
        p.parent_kind = None
    if p.state is not None and p.state not in _STATES:
        faults.append(Fault("session", "state", json_type(p.state), "dropped"))
        p.state = None
    if p.git is not None:
        if not isinstance(p.git, GitFacts):
            faults.append(Fault("session", "git", json_type(p.git), "dropped"))
            p.git = None
        else:
            for name in ("branch", "commit", "origin_url"):
                value = getattr(p.git, name)
                if not _optional_text(value):
                    faults.append(Fault("session", f"git {name}", json_type(value), "dropped"))
                    setattr(p.git, name, None)
    if p.meta is not None and not (isinstance(p.meta, dict) and storable(p.meta)):
        faults.append(Fault("session", "meta", json_type(p.meta), "dropped"))
        p.meta = None


def _mark_ok(m: Mark, faults: list[Fault]) -> bool:
    ok = (isinstance(m, Mark) and _id_ok(m.session) and isinstance(m.meta, dict) and storable(m.meta)
          and isinstance(m.uids, tuple | list) and all(_id_ok(u) for u in m.uids)
          and _optional_text(m.since) and _optional_text(m.until))
    if not ok:
        faults.append(Fault("mark", "mark", "a mark of the wrong shape", "dropped"))
    return ok


def describe(faults: list[Fault], limit: int = 4) -> str:
    """One problem detail for a record's faults (the problems table keeps one row per line)."""
    parts = [f.describe() for f in faults[:limit]]
    if len(faults) > limit:
        parts.append(f"{len(faults) - limit} more")
    return "wrong-typed values: " + "; ".join(parts)
