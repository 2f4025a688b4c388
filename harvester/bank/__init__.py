"""The bank: where normalized sessions live, and where each source's cursor is kept.

The interface is deliberately small so that a PostgreSQL bank (for teams) can sit beside the
embedded SQLite one. The one rule every implementation keeps: :meth:`Bank.apply` writes a source's
new events, session facts, problems and advanced cursor in ONE transaction, and refuses (with
:class:`CursorMoved`) if someone else advanced that cursor meanwhile. Re-applying events the bank
already holds is a no-op (events are unique per session and uid).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # names for annotations only: a reading command needs none of them
    from harvester.bank.sqlite_recall import SearchPage
    from harvester.gitident import RepoIdentity
    from harvester.model import Event, Mark, Problem, SessionPatch
    from harvester.recall.scope import Scope


class CursorMoved(Exception):
    """The source's cursor changed since it was read: another writer got there first."""


class BankError(Exception):
    """The bank cannot be opened or written (the one failure ``scan`` exits non-zero for)."""


class NotABank(BankError):
    """The bank path holds a file that is not a harvester bank: it is refused, and left untouched."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path} is not a harvester bank: {why}. It was not changed; "
                         "give --bank (or HARVESTER_BANK) a new file or an existing bank")


class NoBank(BankError):
    """Nothing to read yet: no bank at the path (or an empty file). A reading command never makes one (a typo in
    ``--bank`` must not leave a new bank behind); the first ``scan`` or ``run`` does."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no bank at {path} yet")
        self.path = path


class BankNewer(BankError):
    """The bank was written by a newer harvester: refused for writing, readable read-only."""

    def __init__(self, version: int, known: int, path: str) -> None:
        super().__init__(f"the bank at {path} was written by a newer harvester (schema {version}; this version "
                         f"knows up to {known}): upgrade harvester to write to it")


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
    archive: list[Any] = field(default_factory=list)  # harvester.archive.Piece: what the archive keeps of it
    # The version of the forgotten records' tombstones the reader left copies of out of ``archive`` (None: not
    # asked): a forget committed since then makes the write a CursorMoved, read again (harvester/forget.py).
    forgotten_as_of: int | None = None


@dataclass(slots=True)
class SessionHead:
    """What ingest needs to know about an existing session before writing to it."""

    pk: int
    cwd: str | None
    bank_id: str


class Bank(Protocol):
    path: str

    def cursor(self, path: str) -> Cursor | None: ...
    def cursors(self, harness: str | None = None) -> list[Cursor]: ...
    def session_heads(self, harness: str, native_ids: list[str]) -> dict[str, SessionHead]: ...
    def excluded_sessions(self, harness: str, native_ids: list[str]) -> set[str]: ...

    def source_forgotten(self, path: str) -> bool: ...

    def forgotten_records(self, harness: str) -> tuple[int, bool]: ...
    def forgotten_among(self, harness: str, keys: set[str]) -> set[str]: ...

    def archive_stats(self) -> dict[str, Any]: ...

    def maintain_archive(self, max_age_days: float | None, max_size_bytes: int | None,
                         collect: bool = False) -> Any: ...

    def session_versions(self) -> dict[str, dict[int | None, int]]: ...

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
    def reopen(self, harness: str, native_ids: list[str]) -> None: ...
    def live_count(self) -> int: ...
    def shrink_memory(self) -> None: ...
    def known_directories(self) -> list[str]: ...
    def learned_identity(self, directory: str) -> RepoIdentity | None: ...
    def remember_identity(self, directory: str, identity: RepoIdentity) -> None: ...
    def settle_index(self, events_added: int, force: bool = False) -> bool: ...
    def limit_cache(self, kib: int) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Bank: ...
    def __exit__(self, *exc: object) -> None: ...

    # read side (status, sessions, show, search)
    def size_bytes(self) -> int: ...
    def harness_stats(self) -> dict[str, dict[str, Any]]: ...
    def recent_problems(self, limit: int = 10) -> list[dict[str, Any]]: ...
    def recent_imports(self, limit: int = 20) -> list[dict[str, Any]]: ...
    def list_sessions(self, bank_id: str | None = None, repo_root: str | None = None,
                      harness: str | None = None, limit: int | None = None) -> list[dict[str, Any]]: ...
    def find_sessions(self, ref: str) -> list[dict[str, Any]]: ...
    def events(self, session_pk: int) -> list[dict[str, Any]]: ...

    def whole_text(self, event: dict[str, Any]) -> str | None: ...
    def search(self, query: str, bank_id: str | None = None, limit: int = 20,
               include_recall: bool = False) -> list[dict[str, Any]]: ...

    # recall (harvester/recall): scoped, bounded, recall events left out unless asked for
    def recall_key(self) -> bytes | None:
        """The secret answers are sealed with, so that ingest knows them again (harvester/recall/frame.py)."""
        ...
    def scoped_sessions(self, scope: Scope, limit: int = 10, harness: str | None = None, since: str | None = None,
                        skip_live_of: str | None = None, recent_since: str | None = None,
                        listed: bool = False) -> list[dict[str, Any]]: ...
    def first_and_last(self, session_pk: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]: ...
    def event_counts(self, session_pk: int) -> dict[str, int]: ...
    def events_page(self, session_pk: int, start: int = 0, limit: int = 50, kinds: list[str] | None = None,
                    include_recall: bool = False) -> list[dict[str, Any]]: ...
    def search_page(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                    since: str | None = None, role: str | None = None, kind: str | None = None,
                    include_recall: bool = False) -> SearchPage: ...
    def search_events(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                      since: str | None = None, role: str | None = None, kind: str | None = None,
                      include_recall: bool = False) -> list[dict[str, Any]]: ...
    def session_events(self, session_pk: int, include_recall: bool = False) -> list[dict[str, Any]]: ...

    # export (harvester/recall/export.py) and forget: the folders written into, the files that must go
    def remember_export_folder(self, path: str) -> None: ...
    def forgotten_file_names(self) -> set[str]: ...


READ_MMAP_BYTES = 2**31  # SQLite's own ceiling (SQLITE_MAX_MMAP_SIZE); a bank past it is read beyond by read()


def open_bank(path: str | Path, readonly: bool = False, archive: bool = True, repair: bool = True) -> Bank:
    """The bank at ``path``; ``archive``: keep the raw archive beside it (harvester/archive); ``repair``:
    cut the archive back to what the bank recorded (what every writer does first, but a scan's second)."""
    from harvester.bank.sqlite import SqliteBank

    return SqliteBank(str(path), readonly=readonly, archive=archive, repair=repair)


def open_bank_to_read(path: str | Path) -> Bank:
    """The bank for a command that only reads: opened for writing where this user can write it (so it
    is migrated as usual), else read-only; read-only too when a newer harvester wrote it. Never created:
    :class:`NoBank` when there is none (or only an empty file) at ``path``. Its archive, if it has one, is only
    read (a writer repairs it; see harvester/archive)."""
    path = str(path)
    try:
        if os.stat(path).st_size == 0:
            raise NoBank(path)
    except (FileNotFoundError, NotADirectoryError):
        raise NoBank(path) from None
    except OSError:
        pass  # not ours to stat: opening it says why
    directory = os.path.dirname(os.path.abspath(path))
    writable = os.access(path, os.W_OK) and os.access(directory, os.W_OK)  # -wal and -shm are made beside it
    bank = None
    if writable:
        with contextlib.suppress(BankNewer):  # readable all the same
            bank = open_bank(path, archive=False)
    bank = bank or open_bank(path, readonly=True)
    # Reading through a memory map spares search a read() of a 16 KiB page into SQLite's cache for every hit
    # it looks up (half its time on a cold cache). Only here: the pages read count in the process's memory,
    # and the service, which keeps a bank open for weeks, stays small.
    bank.conn.execute(f"PRAGMA mmap_size = {READ_MMAP_BYTES}")  # type: ignore[attr-defined]
    return bank
