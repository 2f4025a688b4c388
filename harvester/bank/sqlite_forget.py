"""What ``harvester forget`` leaves behind in the bank: the work outside its transaction, done so that a kill -9
cannot leave it undone, and the tombstones of its records, which keep their copies out.

The order of operations: forget's one transaction deletes the sessions, writes their tombstones and records
the work left outside the bank's rows (``pending_purges``, migration 13): the archive's files and blobs the
transaction stopped naming, the folders ``export`` wrote into with the sessions whose files go there, the
index's merge (FTS5 keeps a deleted row's terms in its segments until they merge) and the log's truncation.
After the commit that work is done and its row deleted in the transaction that merges the index; a kill
anywhere in between leaves the row, and the next process that opens the bank for writing does it all again
(:meth:`SqliteForget.finish_purges`, from :class:`harvester.bank.sqlite.SqliteBank`). Every step can be done
twice: a file already gone is gone, an archive file or blob is removed only while nothing names it (checked
under the write lock, so that no writer starts naming it meanwhile), a merged index merges to itself. Until it
is done, nothing of the sessions is readable through the bank: what is left are bytes that only a search of
the files finds, which is what forget promises there is none of once it (or the next command) returns.

A forgotten session's records leave a key each (``forgotten_records``: a hash of the record's own id and of
what the event said, :func:`harvester.model.record_key`; and one of its title), never their text. A fork or a
resume that copies the records into a session of its own (Claude Code's ``--fork-session``) gives the same
keys: every write of the harness is checked against them in its transaction (:func:`without_copies`), whoever
read it (a scan, the service, ``reparse``), and ingest keeps the copied records out of the archive too.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from harvester.bank.sqlite_events import ROW_CONTENT_HASH, ROW_UID
from harvester.capture.archive import archive_dir
from harvester.capture.pieces import blob_path


@dataclass
class PurgeWork:
    """What a forget leaves to do after its commit (stored as JSON in ``pending_purges``)."""

    archive_files: list[str] = field(default_factory=list)  # relative to the archive's directory
    blobs: list[tuple[str, str]] = field(default_factory=list)  # (texts|blobs, digest): gone unless named
    sessions: list[tuple[str, str]] = field(default_factory=list)  # (harness, native id): their exported files
    folders: list[str] = field(default_factory=list)  # the folders export wrote into


@dataclass
class Finished:
    bytes_freed: int = 0
    exported_removed: list[str] = field(default_factory=list)
    exported_left: list[tuple[str, str]] = field(default_factory=list)  # (path, why it is still there)
    wal_emptied: bool = True  # False: a reader held the log; its old pages go at the next checkpoint


def _never(point: str) -> None:
    """Where a forget stopped (for tests that kill it there: harvester/bank/forget.py)."""


class SqliteForget:
    conn: sqlite3.Connection
    path: str
    transaction: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]

    def record_purge(self, conn: sqlite3.Connection, work: PurgeWork, now: str) -> None:
        """Inside forget's transaction: the work its commit leaves to do."""
        conn.execute("INSERT INTO pending_purges (created_at, work) VALUES (?, ?)",
                     (now, orjson.dumps(work.__dict__).decode()))

    def purges_pending(self) -> bool:
        return self.conn.execute("SELECT 1 FROM pending_purges LIMIT 1").fetchone() is not None

    def finish_purges(self, stop: Callable[[str], None] = _never) -> Finished:
        """Do what committed forgets left to do (see the module); ``stop`` is told each step done."""
        done = Finished()
        rows = self.conn.execute("SELECT id, work FROM pending_purges ORDER BY id").fetchall()
        if not rows:
            return done
        works = [PurgeWork(**orjson.loads(work)) for _, work in rows]
        self.conn.execute("PRAGMA secure_delete = ON")  # what is freed is overwritten, not left in free pages
        try:
            for work in works:
                done.bytes_freed += self._remove_archived(work)
            stop("archive-purged")
            for work in works:
                self._remove_exported(work, done)
            with self.transaction() as conn:  # the index's own copy of the terms: merged away, with the rows
                conn.execute("INSERT INTO events_fts (events_fts) VALUES ('optimize')")
                conn.executemany("DELETE FROM pending_purges WHERE id = ?", [(pk,) for pk, _ in rows])
            stop("index-merged")
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            done.wal_emptied = busy is None or busy[0] == 0
        finally:
            self.conn.execute("PRAGMA secure_delete = OFF")
        return done

    # -- the records of forgotten sessions ----------------------------------------------------------
    def forgotten_records(self, harness: str) -> tuple[int, bool]:
        """(the version of the tombstones of forgotten records, whether ``harness`` has any). One query a call
        while the version stands: a writer asks it once a chunk, and asks for the keys only when there are
        some (:meth:`forgotten_among`: one query a chunk, never one an event, nor every key in memory)."""
        (version,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM forgotten_records").fetchone()
        cache: dict[str, tuple[int, bool]] = self.__dict__.setdefault("_forgotten_records", {})
        held = cache.get(harness)
        if held is None or held[0] != version:
            held = cache[harness] = (version, bool(version) and self.conn.execute(
                "SELECT 1 FROM forgotten_records WHERE harness = ? LIMIT 1", (harness,)).fetchone() is not None)
        return held

    def forgotten_among(self, harness: str, keys: set[str]) -> set[str]:
        """Which of ``keys`` (model.record_key, model.title_key) are tombstones of ``harness``."""
        if not keys:
            return set()
        return {k for (k,) in self.conn.execute(
            "SELECT key FROM forgotten_records WHERE harness = ? AND key IN (SELECT value FROM json_each(?))",
            (harness, orjson.dumps(sorted(keys)).decode()))}

    def tombstone_records(self, conn: sqlite3.Connection, pks: list[int]) -> dict[str, dict[str, str]]:
        """Inside forget's transaction, before the events go: the keys of the sessions' records and titles
        written; the records' returned by harness (uid -> key)."""
        from harvester.model import record_key, title_key

        marks = ", ".join("?" * len(pks))
        keys: dict[str, dict[str, str]] = {}
        for harness, uid, content_hash in conn.execute(
                f"SELECT s.harness, e.uid, e.content_hash FROM events e JOIN sessions s ON s.id = e.session_id "
                f"WHERE e.session_id IN ({marks})", pks):
            key = record_key(uid, content_hash)
            if key is not None:
                keys.setdefault(harness, {})[uid] = key
        titles = [(harness, title_key(title)) for harness, title in conn.execute(
            f"SELECT harness, title FROM sessions WHERE id IN ({marks}) AND title IS NOT NULL", pks)]
        conn.executemany("INSERT OR IGNORE INTO forgotten_records (harness, key) VALUES (?, ?)",
                         [(h, k) for h, ks in keys.items() for k in sorted(set(ks.values()))] + titles)
        return keys

    def copies_of(self, conn: sqlite3.Connection, keys: dict[str, dict[str, str]], pks: list[int]
                  ) -> dict[int, list[tuple[int, int | None]]]:
        """Events of other sessions that are copies of the forgotten records (a fork or a resume made where
        nothing links it to its parent): session -> [(event id, source id)]. Every event of the harnesses
        concerned is looked at (forget is rare, and a copy can be in any directory), by its uid in SQLite."""
        from harvester.model import record_key

        found: dict[int, list[tuple[int, int | None]]] = {}
        marks = ", ".join("?" * len(pks))
        for harness, by_uid in keys.items():
            wanted = set(by_uid.values())
            for event, session, source, uid, content_hash in conn.execute(
                    "SELECT e.id, e.session_id, e.source_id, e.uid, e.content_hash FROM events e "
                    "WHERE e.uid IN (SELECT value FROM json_each(?)) AND e.session_id IN "
                    f"(SELECT id FROM sessions WHERE harness = ? AND id NOT IN ({marks}))",
                    (orjson.dumps(sorted(by_uid)).decode(), harness, *pks)):
                if record_key(uid, content_hash) in wanted:
                    found.setdefault(session, []).append((event, source))
        return found

    # -- the folders export wrote into --------------------------------------------------------------
    def remember_export_folder(self, path: str) -> None:
        """``export`` writes into ``path`` (a real path): forget removes a session's files there too."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with self.transaction() as conn:
            conn.execute("INSERT INTO export_folders (path, first_written_at, last_written_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (path) DO UPDATE SET last_written_at = excluded.last_written_at",
                         (path, now, now))

    def export_folders(self) -> list[str]:
        return [p for (p,) in self.conn.execute("SELECT path FROM export_folders ORDER BY path")]

    def forgotten_file_names(self) -> set[str]:
        """Every name an export may have given the file of a session the bank will never hold again (forgotten,
        or excluded by the configuration): a later export removes them (harvester/recall/export.py)."""
        from harvester.repo_files import session_file_names

        return {name for harness, native_id in self.conn.execute("SELECT harness, native_id FROM excluded_sessions")
                for name in session_file_names(harness, native_id)}

    def _remove_archived(self, work: PurgeWork) -> int:
        """The archive's files and blobs the forget stopped naming, unless named again since (an epoch number
        can be used again once a source's frames are all gone)."""
        where = archive_dir(self.path)
        freed = 0
        with self.transaction() as conn:  # no writer names a file between the check and the removal
            for relative in work.archive_files:
                kind, _, stem = relative.partition("/")
                source, _, epoch = stem.removesuffix(".zst").partition("-")
                if conn.execute("SELECT 1 FROM archive_frames WHERE kind = ? AND source_id = ? AND epoch = ? LIMIT 1",
                                (kind, source, epoch)).fetchone() is None:
                    freed += _unlink(where / relative)
            for sub, digest in work.blobs:
                table = "archive_texts" if sub == "texts" else "archive_docs"
                if conn.execute(f"SELECT 1 FROM {table} WHERE digest = ? LIMIT 1", (digest,)).fetchone() is None:
                    freed += _unlink(blob_path(where, sub, digest))
        return freed

    def _remove_exported(self, work: PurgeWork, done: Finished) -> None:
        """The sessions' files in every folder export wrote into: only regular files of the names export gives
        them, never through a link (harvester/repo_files.py); what cannot go is said."""
        from harvester.repo_files import Folder, Refused, session_file_names

        if not work.sessions:
            return
        for path in work.folders:
            if not os.path.lexists(path):
                continue  # a folder deleted since holds nothing
            try:
                folder = Folder.open_recorded(path)
            except Refused as exc:
                done.exported_left.append((path, str(exc)))
                continue
            with folder:
                present = set(folder.names())
                for harness, native_id in work.sessions:
                    for name in session_file_names(harness, native_id):
                        if name not in present:
                            continue
                        why = folder.remove(name)
                        if why is None:
                            done.exported_removed.append(str(folder.path / name))
                        else:
                            done.exported_left.append((str(folder.path / name), why))


def without_copies(bank: SqliteForget, harness: str, sessions: list[Any], events: list[Any], rows: list[tuple]
                   ) -> tuple[list[Any], list[Any], list[tuple]]:
    """A write's sessions, events and their rows (sqlite_events.event_rows) without what copies a forgotten session (model.record_key, model.title_key): its records' events,
    its title, or a title made of a copied event's text (a fork's first prompt); and without a session not
    held yet whose every event here is a copy (a resume that only replays)."""
    from harvester.model import record_key, title_key

    keys = [record_key(row[ROW_UID], row[ROW_CONTENT_HASH]) for row in rows]
    titles = {sw.patch.title: title_key(sw.patch.title) for sw in sessions if sw.patch.title}
    forgotten = bank.forgotten_among(harness, {k for k in keys if k} | set(titles.values()))
    if not forgotten:
        return sessions, events, rows
    keep = [i for i, key in enumerate(keys) if key not in forgotten]
    copies: dict[str, list[Any]] = {}
    if len(keep) < len(rows):
        kept = set(keep)
        for i, event in enumerate(events):
            if i not in kept:
                copies.setdefault(event.session, []).append(event)
        events, rows = [events[i] for i in keep], [rows[i] for i in keep]
    own = {event.session for event in events}
    out = []
    for sw in sessions:
        patch = sw.patch
        gone = copies.get(patch.native_id, [])
        if patch.title and (titles[patch.title] in forgotten
                            or any(patch.title.removesuffix("…") in event.text for event in gone)):
            patch.title = patch.title_source = None
        if gone and patch.native_id not in own and bank.conn.execute(
                "SELECT 1 FROM sessions WHERE harness = ? AND native_id = ?", (harness, patch.native_id)).fetchone() is None:
            continue
        out.append(sw)
    return out, events, rows


def log_finished(done: Finished) -> None:
    """What finishing a killed forget did, said in the log (nobody is at a terminal for it)."""
    from harvester.log import get_logger

    log = get_logger("harvester.forget")
    log.info("a stopped forget was finished", bytes_freed=done.bytes_freed, exported_removed=len(done.exported_removed))
    for path, why in done.exported_left:
        log.warning("a forgotten session's exported file could not be removed", path=path, reason=why)


def _unlink(path: Any) -> int:
    with contextlib.suppress(OSError):
        size = path.stat().st_size
        path.unlink()
        return size
    return 0
