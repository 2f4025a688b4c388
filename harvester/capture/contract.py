"""The contract between capture and the bank: what capture hands over (:class:`Write`: a source's new events,
session facts, problems and advanced :class:`Cursor`) and what it asks of a bank (:class:`CaptureBank`).

Capture is below the bank: it defines the contract, and the bank (harvester/bank/) implements it, so that reading
and ingesting never import the bank. The one rule every implementation keeps: :meth:`CaptureBank.apply` writes a
source's new events, session facts, problems and advanced cursor in ONE transaction, and refuses (with
:class:`CursorMoved`) if someone else advanced that cursor meanwhile. Re-applying events the bank already holds is
a no-op (events are unique per session and uid). The interface is deliberately small so that a PostgreSQL bank (for
teams) can sit beside the embedded SQLite one; what readers ask of a bank is :class:`harvester.bank.Bank`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # names for annotations only: a reading command needs none of them
    from harvester.gitident import RepoIdentity
    from harvester.model import Event, Mark, Problem, SessionPatch


class CursorMoved(Exception):
    """The source's cursor changed since it was read: another writer got there first."""


class BankError(Exception):
    """The bank cannot be opened or written (the one failure ``scan`` exits non-zero for)."""


@dataclass(slots=True)
class Cursor:
    """How far a source has been consumed, and how to tell that the file changed under us."""

    harness: str
    path: str
    format: str
    device: int = 0
    inode: int = 0
    size: int = 0
    mtime_ns: int = 0
    offset: int = 0  # bytes consumed (of the decompressed stream for .zst)
    line: int = 0  # lines consumed
    head_len: int = 0  # how many leading bytes head_hash covers
    head_hash: str | None = None
    tail_hash: str | None = None  # hash of the last bytes before `offset`: catches rewrites in place
    state: dict[str, Any] = field(default_factory=dict)  # the parser's state after `offset`
    generation: int = 0  # bumped by every apply; optimistic concurrency between writers
    status: str = "ok"  # ok | missing | unreadable
    error: str | None = None
    root: str = ""  # where it was found, and which kind of source it is: to parse it again from the archive
    variant: str = ""


@dataclass(slots=True)
class SessionWrite:
    harness: str
    patch: SessionPatch
    bank_id: str | None = None  # set when this write establishes the session's repository
    identity: RepoIdentity | None = None
    redactions: int = 0
    # The harness's forks copy their parent's history and name no parent (Harness.forks_copy_history):
    # when this session gets its first events, the bank looks for the session it was forked from, or
    # for forks of it read before it.
    find_forks: bool = False
    parser_version: int = 0  # the harness parser's version (Harness.version) that read this write


@dataclass(slots=True)
class Write:
    """Everything one transaction commits for one source."""

    cursor: Cursor  # the cursor after this write; cursor.generation is the one it was read at
    sessions: list[SessionWrite]
    events: list[Event]
    problems: list[Problem]
    is_new_source: bool = False
    prepared: Any = None  # Bank.prepare_rows(events), when the reader computed it already
    excluded: list[str] = field(default_factory=list)  # sessions to forget and never store (config)
    revise: bool = False  # events whose uid the bank holds replace it (agents that rewrite records)
    marks: list[Mark] = field(default_factory=list)  # meta for events already stored (rewinds)
    archive: list[Any] = field(default_factory=list)  # harvester.capture.pieces.Piece: what the archive keeps
    # The version of the forgotten records' tombstones the reader left copies of out of ``archive`` (None: not
    # asked): a forget committed since then makes the write a CursorMoved, read again (harvester/bank/forget.py).
    forgotten_as_of: int | None = None


@dataclass(slots=True)
class SessionHead:
    """What ingest needs to know about an existing session before writing to it."""

    pk: int
    cwd: str | None
    bank_id: str


class CaptureBank(Protocol):
    """What capture asks of a bank: cursors, the session facts ingest needs, the one transaction per chunk
    (:meth:`apply`), and the states liveness judges."""

    path: str

    def cursor(self, path: str) -> Cursor | None: ...
    def cursors(self, harness: str | None = None) -> list[Cursor]: ...
    def cursors_of(self, harness: str, paths: list[str]) -> dict[str, Cursor]: ...
    def source_paths(self, harness: str) -> list[str]: ...
    def session_heads(self, harness: str, native_ids: list[str]) -> dict[str, SessionHead]: ...
    def excluded_sessions(self, harness: str, native_ids: list[str]) -> set[str]: ...

    def source_forgotten(self, path: str) -> bool: ...

    def forgotten_records(self, harness: str) -> tuple[int, bool]: ...
    def forgotten_among(self, harness: str, keys: set[str]) -> set[str]: ...

    def discard_archived(self, pieces: list[Any], partial_source: str | None = None) -> None: ...
    # Row values for apply, computed without the database (picklable: a reader process runs it).
    prepare_rows: Callable[[list[Event]], Any]

    def apply(self, write: Write) -> dict[str, int]: ...
    def set_source_status(self, path: str, status: str, error: str | None = None) -> None: ...
    def record_problems(self, harness: str, path: str, problems: list[Problem]) -> None: ...

    def resolve_read_problems(self, path: str) -> None:
        """The source read cleanly again: what kept it from being read (line 0), or made it fail, is over."""
        ...

    def set_unlisted_directories(self, harness: str, roots: list[str], directories: dict[str, str]) -> None:
        """Directories under ``roots`` that cannot be listed now (path -> reason); others recorded are cleared."""
        ...
    def open_sessions(self, harness: str, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]: ...
    def set_states(self, changes: list[tuple[int, str]]) -> None: ...
    def known_directories(self) -> list[str]: ...
    def learned_identity(self, directory: str) -> RepoIdentity | None: ...
    def remember_identity(self, directory: str, identity: RepoIdentity) -> None: ...
    def settle_index(self, events_added: int, force: bool = False) -> bool: ...

    def defer_index(self, on: bool = True, catch_up: bool = True) -> None:
        """Leave the full-text indexing of the writes that follow to :meth:`catch_up_index` (a large scan)."""
        ...
    def catch_up_index(self, batch: int = ..., whole: bool = True) -> int: ...

    def recall_key(self) -> bytes | None:
        """The secret answers are sealed with, so that ingest knows them again (harvester/capture/recall_seal.py)."""
        ...

    def for_another_process(self) -> Callable[[], CaptureBank]:
        """How a second ingesting process opens this bank again (picklable: a parallel scan spawns that process,
        harvester/capture/ingest.py)."""
        ...
