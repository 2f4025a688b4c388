"""The embedded default bank: one SQLite file (WAL), mode 0600, FTS5 over event text.

Over 500 lines: what is left here is the write path, one chunk's transaction (apply, _write_events,
_upsert_session, _record_import), kept in one place so its order of operations is read and checked whole;
reading, search, the archive, the index, forget, sources and usage are parts of their own (sqlite_*.py)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from harvester.bank.errors import BankNewer
from harvester.bank.migrations import MIGRATION_FUNCTIONS, MIGRATIONS
from harvester.bank.sqlite_archive import SqliteArchive, log_repair
from harvester.bank.sqlite_events import (
    event_rows,
    last_versions,
    link_forks,
    mark_events,
    next_clock,
    place_events,
    places_of,
    revise_events,
    split_known,
    stamp_changed,
)
from harvester.bank.sqlite_forget import SqliteForget, log_finished, without_copies
from harvester.bank.sqlite_index import SqliteIndex, first_free_id, index_through, last_event, watermark
from harvester.bank.sqlite_open import APPLICATION_ID, _connect, _statements, check_bank, hold, release
from harvester.bank.sqlite_read import SqliteReads
from harvester.bank.sqlite_recall import SqliteRecall
from harvester.bank.sqlite_resumes import SqliteResumes, mark_copies
from harvester.bank.sqlite_sources import SqliteSources, utcnow
from harvester.bank.sqlite_usage import record_usage
from harvester.capture.archive import Archive, ArchiveReport, archive_dir
from harvester.capture.contract import BankError, CursorMoved, SessionHead, Write
from harvester.capture.foreign_sqlite import open_readonly

if TYPE_CHECKING:  # the model and git identities are imported by what writes (ingest), not by reading commands
    from harvester.capture.archive.purge import Purge
    from harvester.gitident import RepoIdentity
    from harvester.model import Event

# The imports table feeds "recently imported" in status; older rows carry no information.
IMPORTS_KEPT = 5000
# Appends to one session within this many seconds fold into one import row (a live session
# otherwise writes one row per line the agent appends).
IMPORT_FOLD_SECONDS = 60


def _title_rank(source: str | None) -> int:
    from harvester.model import title_rank

    return title_rank(source)


def _dumps(value: Any) -> str | None:
    if value is None:
        return None
    return orjson.dumps(value).decode()


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


class SqliteBank(SqliteSources, SqliteReads, SqliteRecall, SqliteArchive, SqliteIndex, SqliteForget,
                 SqliteResumes):
    """``readonly``: for commands that only read, on a bank this user cannot write or that a newer
    harvester wrote. Nothing is migrated and nothing is written, not even beside the file."""

    def __init__(self, path: str, readonly: bool = False, archive: bool = True, repair: bool = True) -> None:
        self.path = path
        self.readonly = readonly
        self.archive: Archive | None = None
        self.archive_report: ArchiveReport | None = None
        self._write_turns: int | None = None  # see share_writes
        self._directories: tuple[tuple[int, int], list[str]] | None = None  # known_directories, and as of what
        self._held: tuple[int, int] | None = None  # see sqlite_open._HELD
        self.index_deferred = False  # writes leave their events to catch_up_index (sqlite_index.py)
        self._group: list[Purge] | None = None  # inside grouped(): what its writes purge once it commits
        check_bank(path)  # before the first byte is changed: refuse what is not ours
        try:
            if readonly:
                self._readonly = contextlib.ExitStack()
                self.conn = self._readonly.enter_context(open_readonly(path, timeout=30.0))
                if self.conn.execute("PRAGMA user_version").fetchone()[0] < len(MIGRATIONS):
                    raise BankError(f"the bank at {path} was written by an older harvester and needs an upgrade, "
                                    "which needs write access: run `harvester scan` once as its owner")
            else:
                self.conn = _connect(path)
                self._migrate()
            where = archive_dir(path)
            if archive and not readonly:
                self.archive = Archive(where)
                if repair:  # (not by a scan's second writer: the scan that started it repaired it)
                    # Under the write lock: another writer's appends not committed yet are not a crash's.
                    with self.transaction():
                        self.archive_report = self.archive.repair(self.conn)  # a crash may have left it ahead
                    log_repair(self.archive_report)
            elif where.is_dir():
                self.archive = Archive(where, readonly=True)  # what reading commands need of it
            if not readonly and repair and self.purges_pending():
                log_finished(self.finish_purges())  # a forget killed after its commit: finished (sqlite_forget.py)
            if not readonly and repair:
                self.catch_up_index()  # a scan killed before its index caught up (sqlite_index.py)
            self._held = hold(path)
        except (sqlite3.Error, OSError) as exc:
            raise BankError(f"cannot open the bank at {path}: {exc}") from exc

    # -- setup -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        version, app = (self.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("user_version", "application_id"))
        if version > len(MIGRATIONS):
            raise BankNewer(version, len(MIGRATIONS), self.path)
        if version == len(MIGRATIONS) and app == APPLICATION_ID:
            return
        for name, (arity, function) in MIGRATION_FUNCTIONS.items():
            self.conn.create_function(name, arity, function, deterministic=True)
        with self.transaction():
            # Read again under the write lock: another process (status beside a starting service)
            # may have migrated the file between the check above and now.
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise BankNewer(version, len(MIGRATIONS), self.path)
            for number, script in enumerate(MIGRATIONS, start=1):
                if number > version:
                    for statement in _statements(script):
                        self.conn.execute(statement)
            self.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self._group is not None:  # inside grouped(): a savepoint, all or nothing of this write alone
            self.conn.execute("SAVEPOINT write")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK TO write")
                self.conn.execute("RELEASE write")
                raise
            else:
                self.conn.execute("RELEASE write")
            return
        # IMMEDIATE takes the write lock up front: two writers (scan beside the service) queue on
        # busy_timeout instead of failing half-way with SQLITE_BUSY on lock upgrade.
        turns = self._write_turns
        if turns is not None:
            fcntl.flock(turns, fcntl.LOCK_EX)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
        finally:
            if turns is not None:
                fcntl.flock(turns, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def grouped(self) -> Iterator[None]:
        """The writes made inside in one transaction, each its own savepoint (harvester/capture/grouping.py: small
        sources of a large scan, their cursors with their events as ever). Only where writes leave the full-text
        index to a catch-up: FTS5 writes a segment per savepoint. What the writes purge from the archive is purged
        once the group has committed, never before."""
        if self._group is not None:
            yield
            return
        with self.transaction():
            self._group = []
            try:
                yield
            finally:
                purges, self._group = self._group, None
        for purge in purges:
            purge.finish(self.archive, self.conn)  # type: ignore[arg-type]

    def share_writes(self, on: bool = True) -> None:
        """Take turns with the other writers of a parallel scan (harvester.capture.ingest) on a lock file beside the
        bank before each transaction. SQLite alone would serialize them too, but a writer that finds the
        bank locked sleeps and polls (busy_timeout); a blocking ``flock`` hands the bank over the moment the
        other commits. The kernel releases it when a holder dies, so a killed writer never blocks another;
        correctness never depends on it (SQLite's own lock still decides)."""
        if on and self._write_turns is None:
            old = os.umask(0o077)
            try:
                self._write_turns = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            finally:
                os.umask(old)
        elif not on and self._write_turns is not None:
            os.close(self._write_turns)
            self._write_turns = None

    def for_another_process(self) -> Callable[[], SqliteBank]:
        """This bank, opened again by a parallel scan's second ingesting process (CaptureBank): with its archive if
        it keeps one, not repaired (the first process did that)."""
        return functools.partial(SqliteBank, self.path, archive=self.archive is not None, repair=False)

    def close(self) -> None:
        self.share_writes(False)
        release(self._held)
        self._held = None
        if self.readonly:
            self._readonly.close()
        else:
            self.conn.close()

    def __enter__(self) -> SqliteBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions --------------------------------------------------------------------------
    def session_heads(self, harness: str, native_ids: list[str]) -> dict[str, SessionHead]:
        out: dict[str, SessionHead] = {}
        for native_id in native_ids:
            row = self.conn.execute(
                "SELECT id, cwd, bank_id FROM sessions WHERE harness = ? AND native_id = ?",
                (harness, native_id)).fetchone()
            if row is not None:
                out[native_id] = SessionHead(row[0], row[1], row[2])
        return out

    def excluded_sessions(self, harness: str, native_ids: list[str]) -> set[str]:
        out = set()
        for native_id in native_ids:
            if self.conn.execute("SELECT 1 FROM excluded_sessions WHERE harness = ? AND native_id = ?",
                                 (harness, native_id)).fetchone():
                out.add(native_id)
        return out

    # -- the one write path ----------------------------------------------------------------
    @staticmethod
    def prepare_rows(events: list[Event]) -> list[tuple]:
        """The CPU-only part of :meth:`apply` (row values, content hashes). A plain module-level
        function underneath, so a reader in another process can run it (``Write.prepared``)."""
        return event_rows(events)

    def apply(self, write: Write) -> dict[str, int]:
        """Commit one source's batch and its advanced cursor atomically. Returns events added
        per session native id."""
        now = utcnow()
        cur = write.cursor
        purges: list[Purge] = []
        with self.transaction() as conn:
            row = conn.execute("SELECT generation FROM sources WHERE path = ?", (cur.path,)).fetchone()
            current = None if row is None else row[0]
            expected = None if write.is_new_source else cur.generation
            if current != expected:
                raise CursorMoved(cur.path)
            if (write.archive and write.forgotten_as_of is not None
                    and self.forgotten_records(cur.harness)[0] != write.forgotten_as_of):
                raise CursorMoved(cur.path)  # a forget since it was read: its archive may hold what went
            # The cursor first: its row's id is what the archive index and the events name.
            self._store_cursor(conn, cur, now, is_new=write.is_new_source)
            source_id = conn.execute("SELECT id FROM sources WHERE path = ?", (cur.path,)).fetchone()[0]
            if write.archive and self.archive is not None:
                self.archive.commit(conn, source_id, write.archive, now)
            added = self._write_events(conn, write, source_id, now, purges)
        if self._group is not None:  # committed with the group, not yet
            self._group.extend(purges)
        else:
            for purge in purges:  # committed: the files the archive no longer names can go
                purge.finish(self.archive, self.conn)  # type: ignore[arg-type]
        cur.generation += 1
        return added

    def _write_events(self, conn: sqlite3.Connection, write: Write, source_id: int, now: str,
                      purges: list[Purge] | None = None) -> dict[str, int]:
        """A write's sessions, events, marks and problems, inside the caller's transaction. ``purges``
        collects what excluded sessions took out of the archive, to finish once it commits."""
        cur = write.cursor
        added: dict[str, int] = {}
        revised: dict[str, int] = {}
        for native_id in write.excluded:
            purge = self._forget_session(conn, cur.harness, native_id, cur.path, now)
            if purge is not None and purges is not None:
                purges.append(purge)
        values = write.prepared if write.prepared is not None else event_rows(write.events)
        sessions, events = write.sessions, write.events
        if self.forgotten_records(cur.harness)[1]:  # copies of forgotten records (a fork, a resume) stay out,
            sessions, events, values = without_copies(self, cur.harness, sessions, events, values)  # (sqlite_forget)
        pks: dict[str, int] = {}
        last_seq: dict[str, int] = {}
        for sw in sessions:
            pk, seq = self._upsert_session(conn, sw, now)
            pks[sw.patch.native_id] = pk
            last_seq[sw.patch.native_id] = seq
        if pks:
            conn.executemany("UPDATE sessions SET source_path = ? WHERE id = ? AND source_path IS NOT ?",
                             [(cur.path, pk, cur.path) for pk in pks.values()])
            conn.executemany("INSERT OR IGNORE INTO session_sources (session_id, source_id) VALUES (?, ?)",
                             [(pk, source_id) for pk in pks.values()])

        clock = next_clock(conn) if pks or write.marks else 0
        next_id, explicit_ids = first_free_id(conn)
        last_id = next_id - 1  # every event this write adds gets an id above it (usage rows are for those)
        places = places_of(events)
        find_forks = {sw.patch.native_id for sw in sessions if sw.find_forks}
        by_session: dict[str, list[tuple]] = {}
        revised_uids: dict[str, list[str]] = {}  # the usage rows of revised events are written anew
        for event, row in zip(events, values, strict=True):
            by_session.setdefault(event.session, []).append(row)
        for native_id, session_rows in by_session.items():
            pk = pks[native_id]
            seq = last_seq[native_id]
            if write.revise:  # the agent rewrites records in place: the last version wins
                session_rows = last_versions(session_rows)
            if seq:  # the session has events already: number only the rows it lacks
                session_rows, known = split_known(conn, pk, session_rows)
                if write.revise and known:
                    revised[native_id] = revise_events(conn, pk, known, clock)
                    revised_uids[native_id] = [row[0] for row in known]
            rows = []
            for row in session_rows:
                seq += 1
                rows.append((pk, seq, source_id, clock, *row))
            if explicit_ids:  # the last events were deleted under the index's watermark (sqlite_index.py)
                rows = [(next_id + n, *row) for n, row in enumerate(rows)]
                next_id += len(rows)
            inserted = conn.executemany(
                f"INSERT OR IGNORE INTO events ({'id, ' if explicit_ids else ''}session_id, seq, source_id, changed, "
                "uid, role, kind, text, ts, tool_name, tool_input, tool_call_id, is_error, model, tokens_in, "
                "tokens_out, tokens_cache_read, tokens_cache_write, tokens_reasoning, meta, content_hash, recall, "
                f"injected) VALUES ({'?, ' if explicit_ids else ''}?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?)",
                rows,
            ).rowcount
            added[native_id] = inserted
            if native_id in places:
                place_events(conn, pk, places[native_id], held=last_seq[native_id], clock=clock)
            if inserted and not last_seq[native_id] and native_id in find_forks:
                link_forks(conn, pk)
            if inserted:
                conn.execute(
                    "UPDATE sessions SET event_count = event_count + ?, last_seq = ?, "
                    "last_imported_at = ? WHERE id = ?", (inserted, seq, now, pk))
                self._record_import(conn, cur.harness, pk, cur.path, inserted, now)

        record_usage(conn, cur.harness, pks, events, last_id, revised_uids)
        for mark in write.marks:
            if mark.session in pks:
                mark_events(conn, pks[mark.session], mark, clock)
        mark_copies(conn, cur.harness, pks, clock)  # turns `harvester resume` copied here (sqlite_resumes.py)
        # Every session of the write: its events, or only its facts (a title, a state), may be news to a sink.
        stamp_changed(conn, set(pks.values()), clock)
        if any(revised.values()):
            conn.executemany("UPDATE sessions SET last_imported_at = ? WHERE id = ?",
                             [(now, pks[n]) for n, k in revised.items() if k])
        if not self.index_deferred:
            # Index what this write added (ignored duplicates got no id), and what a deferred scan left above the
            # watermark: searchable when it commits (sqlite_index.py).
            index_through(conn, watermark(conn), last_event(conn))
        self._insert_problems(conn, cur.harness, cur.path, write.problems, now)
        return added

    def _forget_session(self, conn: sqlite3.Connection, harness: str, native_id: str, path: str,
                        now: str) -> Purge | None:
        """A session the configuration excludes: drop anything stored before its cwd was known, in the
        bank and in the archive."""
        row = conn.execute("SELECT id FROM sessions WHERE harness = ? AND native_id = ?",
                           (harness, native_id)).fetchone()
        purge = None
        if row is not None:
            if self.archive is not None and not self.archive.readonly:
                # Here: the parsers, which it needs, cost commands that only read the bank 0.1 s to import.
                from harvester.capture.archive.purge import purge_sessions
                from harvester.parsers import HARNESSES

                purge = purge_sessions(conn, self.archive, HARNESSES.get, [row[0]])
            conn.execute("DELETE FROM events WHERE session_id = ?", (row[0],))
            conn.execute("DELETE FROM imports WHERE session_id = ?", (row[0],))
            conn.execute("DELETE FROM session_sources WHERE session_id = ?", (row[0],))
            conn.execute("DELETE FROM sessions WHERE id = ?", (row[0],))
        conn.execute("INSERT OR IGNORE INTO excluded_sessions (harness, native_id, excluded_at, reason, source_path) "
                     "VALUES (?, ?, ?, 'excluded', ?)", (harness, native_id, now, path))
        return purge

    def _upsert_session(self, conn: sqlite3.Connection, sw: Any, now: str) -> tuple[int, int]:
        p = sw.patch
        row = conn.execute(
            "SELECT id, last_seq, cwd, title_source, started_at, parent_native_id, agent_version, bank_id "
            "FROM sessions WHERE harness = ? AND native_id = ?", (sw.harness, p.native_id)).fetchone()
        git = p.git
        ident: RepoIdentity | None = sw.identity
        if row is None:
            cursor = conn.execute(
                "INSERT INTO sessions (harness, native_id, bank_id, cwd, project, repo_root, origin_url, "
                "origin_id, branch, commit_sha, git_how, git_error, title, title_source, model, "
                "agent_version, started_at, updated_at, parent_native_id, parent_kind, state, redactions, "
                "meta, first_imported_at, last_imported_at, parser_version, repo_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sw.harness, p.native_id, sw.bank_id or "unknown", p.cwd,
                    ident.project if ident else None, ident.root if ident else None,
                    (git.origin_url if git and git.origin_url else None) or (ident.origin_url if ident else None),
                    ident.origin_id if ident else None,
                    # Branch and commit are the session's, as the agent recorded them; the probe only
                    # knows today's HEAD, which says nothing about when the session ran.
                    git.branch if git else None,
                    git.commit if git else None,
                    ident.how if ident else None, ident.error if ident else None,
                    p.title, p.title_source if p.title else None, p.model, p.agent_version,
                    p.started_at, p.updated_at, p.parent_native_id, p.parent_kind,
                    p.state or "unknown", sw.redactions, _dumps(p.meta), now, now, sw.parser_version,
                    ident.key if ident else None,
                ),
            )
            return int(cursor.lastrowid or 0), 0
        pk, seq, cwd, title_source, started_at, parent, agent_version, _bank_id = row
        sets: list[str] = []
        args: list[Any] = []

        def put(column: str, value: Any) -> None:
            sets.append(f"{column} = ?")
            args.append(value)

        if cwd is None and p.cwd:
            put("cwd", p.cwd)
        if ident is not None:
            put("bank_id", sw.bank_id)
            for column, value in (("project", ident.project), ("repo_root", ident.root),
                                  ("origin_id", ident.origin_id), ("git_how", ident.how),
                                  ("git_error", ident.error), ("repo_key", ident.key)):
                put(column, value)
            if ident.origin_url and not (git and git.origin_url):
                put("origin_url", ident.origin_url)
        if git is not None:
            for column, value in (("branch", git.branch), ("commit_sha", git.commit),
                                  ("origin_url", git.origin_url)):
                if value:
                    put(column, value)
        if p.title is not None and _title_rank(p.title_source) >= _title_rank(title_source):
            put("title", p.title)
            put("title_source", p.title_source)
        if p.model:
            put("model", p.model)
        if p.agent_version and p.agent_version != agent_version:
            put("agent_version", p.agent_version)
        if p.started_at and (started_at is None or p.started_at < started_at):
            put("started_at", p.started_at)
        if p.updated_at:
            sets.append("updated_at = max(coalesce(updated_at, ''), ?)")
            args.append(p.updated_at)
        if p.parent_native_id and parent is None:
            put("parent_native_id", p.parent_native_id)
            put("parent_kind", p.parent_kind)
        if p.state:
            put("state", p.state)
        if sw.redactions:
            sets.append("redactions = redactions + ?")
            args.append(sw.redactions)
        # A session read by parsers of two versions is as old as its oldest part (reparse rebuilds it whole).
        sets.append("parser_version = min(coalesce(parser_version, 0), ?)")
        args.append(sw.parser_version)
        if p.meta:
            sets.append("meta = json_patch(coalesce(meta, '{}'), ?)")
            args.append(_dumps(p.meta))
        if sets:
            conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*args, pk))
        return pk, seq

    def _record_import(self, conn: sqlite3.Connection, harness: str, pk: int, path: str, n: int,
                       now: str) -> None:
        row = conn.execute("SELECT id, at FROM imports ORDER BY id DESC LIMIT 1").fetchone()
        if row is not None:
            last_id, last_at = row
            same = conn.execute("SELECT session_id FROM imports WHERE id = ?", (last_id,)).fetchone()[0]
            if same == pk and _seconds_between(last_at, now) < IMPORT_FOLD_SECONDS:
                conn.execute("UPDATE imports SET events_added = events_added + ?, at = ? WHERE id = ?",
                             (n, now, last_id))
                return
        cursor = conn.execute(
            "INSERT INTO imports (at, harness, session_id, source_path, events_added) VALUES (?, ?, ?, ?, ?)",
            (now, harness, pk, path, n))
        if cursor.lastrowid and cursor.lastrowid % 500 == 0:
            conn.execute("DELETE FROM imports WHERE id <= ?", (cursor.lastrowid - IMPORTS_KEPT,))

    # -- session states (the service) ----------------------------------------------------
    def open_sessions(self, harness: str, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Sessions not yet ended or abandoned, with what liveness needs: a page of them, by id."""
        rows = self.conn.execute(
            "SELECT id, native_id, cwd, source_path, state, updated_at, json_extract(meta, '$.last_turn') "
            "FROM sessions WHERE harness = ? AND state IN ('live', 'unknown') AND id > ? ORDER BY id LIMIT ?",
            (harness, after, limit)).fetchall()
        return [{"pk": r[0], "native_id": r[1], "cwd": r[2], "source_path": r[3], "state": r[4],
                 "updated_at": r[5], "last_turn": r[6]} for r in rows]

    def set_states(self, changes: list[tuple[int, str]]) -> None:
        if changes:
            with self.transaction() as conn:
                conn.executemany("UPDATE sessions SET state = ? WHERE id = ?", [(s, pk) for pk, s in changes])
                stamp_changed(conn, {pk for pk, _ in changes})

    def reopen(self, harness: str, native_ids: list[str]) -> None:
        """A session written to again is live again, whatever it was marked before."""
        if native_ids:
            with self.transaction() as conn:
                reopened = [pk for n in native_ids for (pk,) in conn.execute(
                    "UPDATE sessions SET state = 'live' WHERE harness = ? AND native_id = ? AND state != 'live' "
                    "RETURNING id", (harness, n))]
                stamp_changed(conn, set(reopened))

    def known_directories(self) -> list[str]:
        """Every directory sessions worked in: repository roots, and cwds outside any repository. The service
        asks every few seconds (Aider's roots); unless this connection or another wrote since the last time,
        the answer is the last one, not another read of every session."""
        written = (self.conn.total_changes, self.conn.execute("PRAGMA data_version").fetchone()[0])
        if self._directories is None or self._directories[0] != written:
            self._directories = (written, [d for (d,) in self.conn.execute(
                "SELECT DISTINCT coalesce(repo_root, cwd) FROM sessions WHERE coalesce(repo_root, cwd) IS NOT NULL "
                "ORDER BY 1")])
        return list(self._directories[1])

    def shrink_memory(self) -> None:
        self.conn.execute("PRAGMA shrink_memory")

    def limit_cache(self, kib: int) -> None:
        """SQLite's page cache for this connection at most ``kib`` KiB (what it holds past that is let go)."""
        self.conn.execute(f"PRAGMA cache_size = -{int(kib)}")

    def live_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM sessions WHERE state = 'live'").fetchone()[0]

    # -- git facts learned by probes -------------------------------------------------------
    def learned_identity(self, directory: str) -> RepoIdentity | None:
        row = self.conn.execute(
            "SELECT project, root, origin_url, origin_id, repo_key FROM directories WHERE path = ?",
            (directory,)).fetchone()
        if row is None:
            return None
        from harvester.gitident import RepoIdentity

        # Its other keys (origin, main worktree) are not kept: a session is filed under one key, the strongest.
        return RepoIdentity(project=row[0], root=row[1], origin_url=row[2], origin_id=row[3],
                            how="learned" if row[1] else "no-git", key=row[4], aliases=(row[4],) if row[4] else ())

    def remember_identity(self, directory: str, identity: RepoIdentity) -> None:
        if identity.key is None:
            return
        # Outside a transaction of our own this is autocommit; inside apply() it joins it.
        self.conn.execute(
            "INSERT INTO directories (path, project, root, origin_url, origin_id, probed_at, repo_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET project = excluded.project, "
            "root = excluded.root, origin_url = excluded.origin_url, origin_id = excluded.origin_id, "
            "probed_at = excluded.probed_at, repo_key = excluded.repo_key",
            (directory, identity.project, identity.root, identity.origin_url, identity.origin_id, utcnow(),
             identity.key))


def _seconds_between(earlier: str, later: str) -> float:
    try:
        a = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
        b = datetime.fromisoformat(later.replace("Z", "+00:00"))
    except ValueError:
        return float("inf")
    return (b - a).total_seconds()
