"""The normalized model: what every parser produces and what the bank stores.

Every harness writes its own format; parsers turn those bytes into the few types below and nothing
else. They are plain dataclasses so a parser can be tested without a bank, a cursor or a thread.

Session
    One conversation with one agent, identified by (harness, native_id). Subagents and forks are
    sessions of their own that point at their parent with ``parent_native_id``/``parent_kind``.
Event
    One ordered item of a session: a user prompt, an assistant text, a thinking block, a tool call,
    a tool result, a compaction boundary, or a meta record the agent wrote (mode change, queue
    operation, ...). ``uid`` is the agent's own id where it has one, else a hash of the record, so
    reading the same bytes twice yields the same uids (the bank ignores uids it already has).
    Text the agent itself put into the conversation (its environment and permissions preambles, AGENTS.md,
    a session context, reminders, hook output) is a ``system`` text whose meta says ``injected``: the
    parser knows its agent's preambles; readers ask :func:`is_injected`.
Problem
    A record that could not be used: malformed (bad JSON, invalid UTF-8, a value of the wrong type),
    oversize, unreadable (a file, a directory), or of a type the parser does not know (format drift; a
    record of a known type with fields its parser does not know is ``unknown_field``, drift too);
    or a source that failed (an exception while reading or committing it: retried later). Counted and
    shown by ``status``.
Batch
    What one parser call returns for a run of records: session patches, events, problems, and the
    parser's state to resume from (JSON-serializable; the cursor stores it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool"]
Kind = Literal["text", "thinking", "tool_call", "tool_result", "compaction", "meta"]
SessionState = Literal["live", "ended", "abandoned", "unknown"]
ParentKind = Literal["subagent", "fork"]
ProblemKind = Literal["malformed", "unknown_type", "unknown_field", "oversize", "unreadable", "failed"]

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
KINDS: tuple[str, ...] = ("text", "thinking", "tool_call", "tool_result", "compaction", "meta")

# Tool output can be megabytes (a whole file read, a build log). Past this size the text is cut and
# the cut is said in the text itself; the rest is of little use in a transcript and bloats the index.
MAX_EVENT_TEXT = 256 * 1024


@dataclass(slots=True)
class Usage:
    """Token usage of one model response, as the agent recorded it.

    ``input`` is the input not read from the cache (``cache_read``) nor written to it (``cache_write``, of which
    ``cache_write_1h`` was written for an hour: Anthropic prices it apart). ``reasoning`` is what the agent
    reported of thinking (whether ``output`` includes it is the agent's: harvester/usage/harnesses.py).
    ``response`` is the agent's own id of the response (a message id, a response id, a hash of its
    cumulative counts), where records, resumed sessions or copied histories can repeat it: the bank counts a
    response once per harness however often it is seen (harvester/bank/sqlite_usage.py). ``cost``: what the
    agent itself recorded, in USD."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0
    response: str | None = None
    cost: float | None = None

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in (
            ("input", self.input), ("output", self.output), ("cache_read", self.cache_read),
            ("cache_write", self.cache_write), ("reasoning", self.reasoning)) if v}


@dataclass(slots=True)
class Event:
    """One ordered item of a session. See the module docstring."""

    session: str  # native id of the session this event belongs to
    uid: str  # stable identity within the session
    role: Role
    kind: Kind
    text: str = ""
    ts: str | None = None  # ISO 8601 UTC as the agent wrote it (normalized to ...Z when possible)
    tool_name: str | None = None
    tool_input: Any = None  # JSON-able; tool_call only
    tool_call_id: str | None = None  # links a tool_result to its tool_call
    is_error: bool = False  # tool_result that the tool reported as failed
    model: str | None = None
    usage: Usage | None = None
    meta: dict[str, Any] | None = None  # small, record-specific extras (subtype, record type, ...)
    # Where the event belongs in its session when the agent can store it after later ones (LangGraph
    # persists a step's writes in the background, in any order): a key compared as text. None: in the
    # order read. A harness places all of its events or none; see Bank.apply.
    place: str | None = None

    def content_hash(self) -> str:
        """Hash of what the event says, to compare two imports of the same history."""
        key = f"{self.role}\x00{self.kind}\x00{self.tool_name or ''}\x00{self.tool_call_id or ''}\x00{self.text}"
        # sha256 runs in hardware on current CPUs: twice blake2b's speed over hundreds of MB.
        import hashlib  # here: its import (OpenSSL's) costs a reading command, which hashes nothing

        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(slots=True)
class GitFacts:
    """Git facts the agent itself recorded (they describe the session's time, not ours)."""

    branch: str | None = None
    commit: str | None = None
    origin_url: str | None = None


@dataclass(slots=True)
class SessionPatch:
    """What a batch learned about a session. ``None`` means "not known from this batch".

    The bank merges patches: ``cwd``, ``started_at`` and the parent keep their first value (the
    directory a session started in is its identity, not wherever the agent later cd-ed); ``model``,
    ``agent_version``, ``updated_at``, ``state`` and git facts take the latest; ``title`` goes to the
    strongest source (see :meth:`offer_title`).
    """

    native_id: str
    cwd: str | None = None
    title: str | None = None
    title_source: str | None = None  # which record gave the title (custom beats ai beats summary)
    model: str | None = None
    agent_version: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    parent_native_id: str | None = None
    parent_kind: ParentKind | None = None
    state: SessionState | None = None
    git: GitFacts | None = None
    meta: dict[str, Any] | None = None

    def note(self, **facts: Any) -> None:
        """Add small facts to the session's meta (later values of a key win)."""
        self.meta = {**(self.meta or {}), **facts}

    def offer_title(self, title: str, source: str) -> None:
        """Take ``title`` unless the patch already has one from a stronger source (a user's own
        title beats the agent's generated one, which beats a summary or the first prompt)."""
        if self.title is None or title_rank(source) >= title_rank(self.title_source):
            self.title, self.title_source = title, source

    def merge(self, other: SessionPatch) -> None:
        """Fold a later patch of the same session into this one (same rules as the bank)."""
        for name in ("cwd", "started_at", "parent_native_id", "parent_kind"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(other, name))
        if other.title is not None:
            self.offer_title(other.title, other.title_source or "summary")
        for name in ("model", "agent_version", "updated_at", "state"):
            value = getattr(other, name)
            if value is not None:
                setattr(self, name, value)
        if other.git is not None:
            if self.git is None:
                self.git = GitFacts()
            for name in ("branch", "commit", "origin_url"):
                value = getattr(other.git, name)
                if value:
                    setattr(self.git, name, value)
        if other.meta:
            self.meta = {**(self.meta or {}), **other.meta}


# A user's own title beats the agent's generated one, which beats a first-prompt fallback.
TITLE_RANKS = {None: 0, "first-prompt": 1, "summary": 2, "ai": 3, "custom": 4}


def title_rank(source: str | None) -> int:
    return TITLE_RANKS.get(source, 2)


@dataclass(slots=True)
class Problem:
    kind: ProblemKind
    line: int | None  # 1-based line (or record index) in the source; None for the whole source
    detail: str


@dataclass(frozen=True, slots=True)
class Mark:
    """Facts learned later about events the bank may already hold (a rewind abandons the messages
    after a point: they stay, marked). ``meta`` is merged into each matching event's meta.

    Matches ``uids`` (and their sub-events ``<uid>:...``), or the events from ``since`` (included)
    up to ``until`` (excluded; open-ended without it), in session order."""

    session: str
    meta: dict[str, Any]
    uids: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None


@dataclass(slots=True)
class Batch:
    sessions: dict[str, SessionPatch] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    # True when the agent rewrites a record in place (Gemini re-appends a message id as it grows,
    # opencode updates a part while it streams): an event whose uid the bank holds replaces it.
    # False (append-only stores): the first version stays, a re-read changes nothing.
    revise: bool = False
    marks: list[Mark] = field(default_factory=list)

    def session(self, native_id: str) -> SessionPatch:
        patch = self.sessions.get(native_id)
        if patch is None:
            patch = self.sessions[native_id] = SessionPatch(native_id)
        return patch

    def patch(self, patch: SessionPatch) -> None:
        current = self.sessions.get(patch.native_id)
        if current is None:
            self.sessions[patch.native_id] = patch
        else:
            current.merge(patch)


def is_injected(event: Event | Mapping[str, Any]) -> bool:
    """Whether an event (an :class:`Event`, or an event as the bank returns it) is context the agent injected
    into the conversation, not anything a person or the model wrote: what ``show`` folds, ``search`` leaves
    out unless asked, and a handoff does not count as an ask. Parsers mark it (``meta.injected``)."""
    meta = event.get("meta") if isinstance(event, Mapping) else event.meta
    return bool(meta and meta.get("injected"))


def record_uid(raw: bytes, suffix: int | str | None = None, context: str | None = None) -> str:
    """Identity for a record that carries no id of its own: a hash of its exact bytes.

    Agents append records and never edit them in place, so the bytes of a record are stable across
    re-reads, copies and recompression (.jsonl -> .jsonl.zst). ``suffix`` tells apart several
    events made from one record (the blocks of one message). ``context`` tells apart byte-identical
    records at different places (the id of the record before it, where the format has ids).
    """
    import hashlib

    h = hashlib.blake2b(raw, digest_size=12)
    if context:
        h.update(b"\x00" + context.encode())
    digest = h.hexdigest()
    return f"h:{digest}" if suffix is None else f"h:{digest}:{suffix}"


# A uid shorter than this is a position (``seq:7``, ``m:1``, ``L+2``): another session can hold the same one for
# another record. The agents' own record ids (uuids, ``msg_...``, ``prt_...``) are longer.
RECORD_ID_MIN = 16


def record_key(uid: str, content_hash: str) -> str | None:
    """What a forgotten event leaves behind (``forgotten_records``): a hash of its uid and of what it said, never
    the text. A fork or a resume that copies a record keeps both (harvester/bank/forget.py keeps such copies out).
    None for a uid that is a position or a hash of the record's bytes (``h:``), which names no record across
    sessions."""
    if len(uid) < RECORD_ID_MIN or uid.startswith("h:"):
        return None
    import hashlib

    return hashlib.sha256(f"{uid}\x00{content_hash}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def title_key(title: str) -> str:
    """What a forgotten session's title leaves behind (beside its records' keys): a copy that offers the same
    title (a fork's copy of the agent's title record) is not given it."""
    import hashlib

    return hashlib.sha256(f"title\x00{title}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def clip(text: str, limit: int = MAX_EVENT_TEXT, where: str = "not kept") -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters {where}]"
