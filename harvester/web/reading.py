"""What the viewer reads: the local bank, opened read-only, or the team bank; and the few questions only the viewer
asks of them (repositories with their latest activity, tokens of a page of sessions, the change clock).

Why its order of operations is safe: the viewer never writes. The local bank is opened with
:func:`harvester.bank.open_bank` ``readonly=True`` (a ``mode=ro`` connection that writes nothing, not even beside
the file); a bank that needs a migration is refused with the reason, never upgraded. One connection serves every
request, one request at a time (:class:`LocalSource`'s lock): opening a second connection to the file in this
process would read its header through another descriptor, and closing that descriptor drops the POSIX locks
SQLite holds on the file for the first (harvester/bank/sqlite_open.py). A connection opened while no service held
the bank open is SQLite's ``immutable`` one, which would never see a later write: it is opened again when the
bank's files change under it (a service started, a scan came and went, the bank made again).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from harvester.bank.scope import EVERYTHING, Scope

_RECENT = "coalesce(updated_at, started_at, last_imported_at)"


@dataclass(frozen=True, slots=True)
class RepositoryRow:
    """A repository as the first page lists it. ``ref``: how its pages name it (its strongest identity key, or in
    the team bank its name); ``unknown``: sessions of unknown repository filed under ``label``."""

    ref: str
    label: str
    sessions: int
    last: str
    roots: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    unknown: bool = False
    origin: str = ""  # in the team bank: its origin URL (credentials stripped when pushed), which tells it apart


class Unavailable(Exception):
    """The bank cannot be read right now (none yet, being made again, refused): said on the page."""


@dataclass
class LocalSource:
    """The local bank at ``path``, read-only, shared by every request under a lock."""

    path: str
    team = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _bank: Any = None
    _seen: tuple[Any, ...] | None = None
    # Answers kept until the bank changes (its change clock moves, or its files do): what every page asks again
    # (the repositories, in the search form) and what is costly to sum (a session's tokens and cost).
    _memo: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    _usage: dict[int, tuple[int, str, str]] = field(default_factory=dict)  # pk -> (changed, tokens, cost)

    def _files(self) -> tuple[Any, ...]:
        """What says the connection may be stale: the bank's identity, whether a writer's -wal/-shm exist, and,
        while none does, the file's size and time (an immutable read never looks again: a writer that came and
        went, its WAL checkpointed into the file, changed it under it)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return (None,)
        wal, shm = os.path.exists(self.path + "-wal"), os.path.exists(self.path + "-shm")
        written = (st.st_size, st.st_mtime_ns) if not (wal or shm) else None
        return (st.st_dev, st.st_ino, wal, shm, written)

    @contextlib.contextmanager
    def bank(self) -> Iterator[Any]:
        from harvester.bank import NO_HISTORY, BankError, open_bank

        with self._lock:
            now = self._files()
            if self._bank is not None and now != self._seen:
                self._bank.close()
                self._bank = None
            if self._bank is None:
                if now == (None,) or os.path.getsize(self.path) == 0:
                    raise Unavailable(NO_HISTORY.format(self.path))
                try:
                    self._bank = open_bank(self.path, readonly=True)
                except BankError as exc:
                    raise Unavailable(str(exc)) from None
                self._seen = now
            yield self._bank

    def close(self) -> None:
        with self._lock:
            if self._bank is not None:
                self._bank.close()
                self._bank = None

    # -- what only the viewer asks ------------------------------------------------------------------------------

    def memo(self, name: str, compute: Any) -> Any:
        """``compute()``, or its answer from before if the bank has not changed since."""
        key = (self._seen, self.clock())
        kept = self._memo.get(name)
        if kept is not None and kept[0] == key:
            return kept[1]
        value = compute()
        self._memo[name] = (key, value)
        return value

    def repositories(self) -> list[RepositoryRow]:
        return self.memo("repositories", self._repositories)

    def _repositories(self) -> list[RepositoryRow]:
        from harvester.bank.identities import repositories

        with self.bank() as bank:
            found = repositories(bank.conn)
            unknown_last = dict(bank.conn.execute(
                f"SELECT bank_id, max({_RECENT}) FROM sessions WHERE repo_key IS NULL GROUP BY bank_id"))
        rows = [RepositoryRow(r.key, r.label, r.sessions, r.last, tuple(sorted(r.roots))) for r in found.every]
        rows += [RepositoryRow(label, label, n, unknown_last.get(label) or "", unknown=True)
                 for label, n in found.unknown_by_label.items()]
        return sorted(rows, key=lambda r: r.last, reverse=True)

    def scope(self, ref: str | None, unknown: bool = False) -> Scope:
        """The sessions a repository page shows: every identity key its sessions link (bank/identities.py), or the
        bank id of sessions of unknown repository."""
        if not ref:
            return EVERYTHING
        if unknown:
            return Scope(ref, bank_id=ref)
        for row in self.repositories_by_key():
            if ref in row.keys:
                return Scope(row.label, repo_root=min(row.roots) if row.roots else None, keys=tuple(sorted(row.keys)))
        return Scope(ref, keys=(ref,))

    def repositories_by_key(self) -> list[Any]:
        from harvester.bank.identities import repositories

        def every() -> list[Any]:
            with self.bank() as bank:
                return repositories(bank.conn).every

        return self.memo("repositories_by_key", every)

    def sessions_page(self, scope: Scope, harness: str | None, since: str | None, until: str | None,
                      state: str | None, offset: int, limit: int) -> list[dict[str, Any]]:
        """Sessions of ``scope``, newest first (the order of the index sessions_recent, as
        SqliteRecall.scoped_sessions), from ``offset``, at most ``limit``; of one ``state`` when given."""
        with self.bank() as bank:
            return bank.scoped_sessions(scope, limit, harness=harness, since=since, until=until, state=state,
                                        offset=offset)

    def usage_of(self, pks: list[int]) -> dict[int, tuple[str, str]]:
        """Each session's tokens and cost as a listing shows them (``1.2M``, ``$3.40``), from the bank's usage
        (harvester/usage/sessions.py: each response counted once, priced by its catalogue), kept per session
        until its change stamp moves."""
        from harvester.usage.sessions import session_usage, short, usage_fields

        if not pks:
            return {}
        with self.bank() as bank:
            marks = ", ".join("?" * len(pks))
            stamps = dict(bank.conn.execute(f"SELECT id, changed FROM sessions WHERE id IN ({marks})", pks))
            stale = [pk for pk in pks if self._usage.get(pk, (None,))[0] != stamps.get(pk)]
            if stale:
                # path None: the price book is the user's cache (prices.cache_path), nothing is written beside the bank.
                found = session_usage(SimpleNamespace(conn=bank.conn, path=None), stale)
                for pk in stale:
                    self._usage[pk] = (stamps.get(pk), *short(usage_fields(found.get(pk))["usage"]))
        return {pk: self._usage[pk][1:] for pk in pks if pk in self._usage}  # type: ignore[misc]

    def clock(self) -> int | None:
        """The bank's change clock (migration 8): every write that changes a session moves it."""
        try:
            with self.bank() as bank:
                return bank.conn.execute("SELECT n FROM change_clock").fetchone()[0]
        except Unavailable:
            return None

    def session_clock(self, pk: int) -> tuple[int, int, str] | None:
        """A session's change stamp, its event count and state: what its live page watches."""
        try:
            with self.bank() as bank:
                row = bank.conn.execute("SELECT changed, event_count, state FROM sessions WHERE id = ?",
                                        (pk,)).fetchone()
        except Unavailable:
            return None
        return tuple(row) if row else None  # type: ignore[return-value]


@dataclass
class TeamSource:
    """The team bank on PostgreSQL (harvester/team/read.py), read through its reader; ``local``: the local bank's
    path, whose machine id marks this machine's own sessions. Its pages are live by the pushes' stamps (it has no
    change clock: :meth:`clock`)."""

    settings: Any
    team = True
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reader: Any = None

    @contextlib.contextmanager
    def bank(self) -> Iterator[Any]:
        from harvester.team.read import open_reader
        from harvester.team.schema import TeamSchemaNewer
        from harvester.team.server import Unreachable

        with self._lock:
            if self._reader is None:
                local = None
                try:
                    if os.path.exists(self.settings.bank):
                        from harvester.bank import BankError, open_bank

                        with contextlib.suppress(BankError):
                            local = open_bank(self.settings.bank, readonly=True, archive=False)
                    self._reader = open_reader(self.settings, local)
                except (Unreachable, TeamSchemaNewer) as exc:
                    raise Unavailable(f"the team bank: {exc}") from None
                finally:
                    if local is not None:
                        local.close()
            yield self._reader

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def _rows(self, sql: str, args: list[Any]) -> list[dict[str, Any]]:
        with self.bank() as reader, reader.team.connection() as conn:
            cur = conn.execute(sql, args)
            names = [d.name for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def repositories(self) -> list[RepositoryRow]:
        """Each repository of the team bank by its identity there (its key: the origin, or a machine's own root),
        named as pushed: unrelated repositories of one name are rows of their own, told apart by their origin."""
        from harvester.team.schema import SCHEMA

        rows = self._rows(
            f"SELECT r.repo_key, r.name, r.origin_url, count(*) AS sessions, "
            "max(coalesce(s.updated_at, s.started_at, s.last_imported_at)) AS last, array_agg(DISTINCT s.host) AS "
            "hosts, array_agg(DISTINCT s.repo_root) FILTER (WHERE s.repo_root IS NOT NULL) AS roots "
            f"FROM {SCHEMA}.sessions s JOIN {SCHEMA}.repositories r ON r.id = s.repository_id "
            "GROUP BY r.id, r.repo_key, r.name, r.origin_url ORDER BY last DESC NULLS LAST", [])
        return [RepositoryRow(r["repo_key"], r["name"], r["sessions"], r["last"] or "", tuple(sorted(r["roots"] or ())),
                              tuple(sorted(r["hosts"] or ())), origin=r["origin_url"] or "") for r in rows]

    def scope(self, ref: str | None, unknown: bool = False) -> Scope:
        """A repository of the team bank by its key there (as :meth:`repositories` names it)."""
        if not ref:
            return EVERYTHING
        label = next((r.label for r in self.repositories() if r.ref == ref), ref)
        return Scope(label, repository=ref)

    def sessions_page(self, scope: Scope, harness: str | None, since: str | None, until: str | None,
                      state: str | None, offset: int, limit: int) -> list[dict[str, Any]]:
        """As LocalSource.sessions_page, through the team reader."""
        with self.bank() as reader:
            return reader.scoped_sessions(scope, limit, harness=harness, since=since, until=until, state=state,
                                          offset=offset)

    def usage_of(self, pks: list[int]) -> dict[int, tuple[str, str]]:
        """Each session's tokens and cost as ``harvester usage session --team`` gives them (each response once, priced
        by the catalogue; the team bank keeps no usage table: its events are read), for a page of sessions."""
        from harvester.team.schema import SCHEMA
        from harvester.usage.answer import Request
        from harvester.usage.api import report
        from harvester.usage.sessions import short

        if not pks:
            return {}
        ids = {(r["harness"], r["native_id"], r["host"]): r["id"] for r in self._rows(
            f"SELECT id, harness, native_id, host FROM {SCHEMA}.sessions WHERE id = ANY(%s)", [pks])}
        with self.bank() as reader:
            found = report(reader, Request("session", sessions=tuple(pks)))
        return {ids[key]: short(row) for row in found["rows"]
                if (key := (row["harness"], row["session"], row["host"])) in ids}

    def status(self) -> dict[str, Any]:
        """What the team bank holds, for the status page: each machine that pushed (its sessions, events, first and
        last push) and each agent's sessions on each machine. The agents' health (malformed records, drift,
        failures) is each machine's own bank's: the team bank receives sessions, not their problems."""
        from harvester.team.schema import SCHEMA

        machines = self._rows(
            "SELECT m.host, m.os_user, m.harvester_version, m.first_push_at, m.last_push_at, "
            "count(s.id) AS sessions, coalesce(sum(s.event_count), 0) AS events "
            f"FROM {SCHEMA}.machines m LEFT JOIN {SCHEMA}.sessions s ON s.machine_id = m.id "
            "GROUP BY m.id, m.host, m.os_user, m.harvester_version, m.first_push_at, m.last_push_at "
            "ORDER BY last_push_at DESC NULLS LAST, m.host", [])
        agents = self._rows(
            "SELECT harness, host, count(*) AS sessions, sum(event_count) AS events, max(last_imported_at) AS "
            f"last_import FROM {SCHEMA}.sessions GROUP BY harness, host ORDER BY harness, host", [])
        return {"machines": machines, "agents": agents}

    def clock(self) -> Any:
        """What stands for a change clock in the team bank: its latest push that changed anything (each machine's
        row is stamped by such a push, harvester/team/push.py); None when it cannot be read now."""
        from harvester.team.schema import SCHEMA

        try:
            return self._rows(f"SELECT max(last_push_at) AS n FROM {SCHEMA}.machines", [])[0]["n"]
        except Exception:  # unreachable, or gone mid-query: the stream asks again in a second
            return None

    def session_clock(self, pk: int) -> tuple[Any, int, str] | None:
        """A session's stamp in the team bank (its row's last change by a push), its event count and state."""
        from harvester.team.schema import SCHEMA

        try:
            rows = self._rows(f"SELECT pushed_at, event_count, state FROM {SCHEMA}.sessions WHERE id = %s", [pk])
        except Exception:  # as in clock
            return None
        return (rows[0]["pushed_at"], rows[0]["event_count"], rows[0]["state"]) if rows else None
