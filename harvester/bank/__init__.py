"""The bank: where normalized sessions live, and where each source's cursor is kept.

It implements capture's contract (harvester/capture/contract.py: one transaction per chunk, its events with its
advanced cursor, refused with ``CursorMoved`` if another writer moved that cursor) and answers its readers
(:class:`Bank`). The entry points: :func:`open_bank` (to write: ``scan``, the service) and
:func:`open_bank_to_read` (the reading commands); the SQLite bank itself is :mod:`harvester.bank.sqlite`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harvester.bank.errors import BankNewer, NoBank, NotABank
from harvester.capture.contract import BankError, CaptureBank

if TYPE_CHECKING:  # names for annotations only: a reading command needs none of them
    from harvester.bank.scope import Scope
    from harvester.bank.sqlite_recall import SearchPage

__all__ = ["NOT_FOUND_HINT", "NO_HISTORY", "SEVERAL_HINT", "Bank", "BankError", "BankNewer", "NoBank", "NotABank", "open_bank", "open_bank_to_read"]

# What a reader says when there is no bank yet (the CLI, the MCP server, status).
NO_HISTORY = "No history yet: run `harvester scan` to import every agent's sessions ({} does not exist yet)."
# What to do when a session named by its id or a prefix (find_sessions) is not found, or is not one.
NOT_FOUND_HINT = "`harvester sessions` lists every session's id (give it whole, or its start)"
SEVERAL_HINT = "give more of the id"


class Bank(CaptureBank, Protocol):
    """A bank as its readers see it: capture's contract (:class:`~harvester.capture.contract.CaptureBank`) and the
    read side (status, sessions, show, search, recall, export)."""

    def archive_stats(self) -> dict[str, Any]: ...

    def maintain_archive(self, max_age_days: float | None, max_size_bytes: int | None,
                         collect: bool = False) -> Any: ...

    def session_versions(self) -> dict[str, dict[int | None, int]]: ...

    def reopen(self, harness: str, native_ids: list[str]) -> None: ...
    def live_count(self) -> int: ...
    def shrink_memory(self) -> None: ...
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
    def scoped_sessions(self, scope: Scope, limit: int = 10, harness: str | None = None, since: str | None = None,
                        skip_live_of: str | None = None, recent_since: str | None = None,
                        listed: bool = False, until: str | None = None, state: str | None = None,
                        offset: int = 0, role: str | None = None, kind: str | None = None) -> list[dict[str, Any]]: ...
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

    # resume (harvester/resume): the sessions written into other agents' stores, recorded before they exist
    def record_resume(self, source_harness: str, source_native_id: str, upto: int | None, target_harness: str,
                      target_native_id: str, copied_events: int, copied_uids: list[str]) -> None: ...


READ_MMAP_BYTES = 2**31  # SQLite's own ceiling (SQLITE_MAX_MMAP_SIZE); a bank past it is read beyond by read()


def open_bank(path: str | Path, readonly: bool = False, archive: bool = True, repair: bool = True) -> Bank:
    """The bank at ``path``; ``archive``: keep the raw archive beside it (harvester/capture/archive); ``repair``:
    cut the archive back to what the bank recorded (what every writer does first, but a scan's second)."""
    from harvester.bank.sqlite import SqliteBank

    return SqliteBank(str(path), readonly=readonly, archive=archive, repair=repair)


def open_bank_to_read(path: str | Path) -> Bank:
    """The bank for a command that only reads: opened for writing where this user can write it (so it
    is migrated as usual), else read-only; read-only too when a newer harvester wrote it. Never created:
    :class:`NoBank` when there is none (or only an empty file) at ``path``. Its archive, if it has one, is only
    read (a writer repairs it; see harvester/capture/archive)."""
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
