"""The bank's side of the raw archive (harvester/capture/archive): what the ingest asks of it beside the events."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

from harvester.capture.archive import Archive, ArchiveReport


class SqliteArchive:
    conn: sqlite3.Connection
    archive: Archive | None
    transaction: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]

    def source_forgotten(self, path: str) -> bool:
        """Every session read from the source is never to be stored (excluded, forgotten): what is read
        there later that names no session is not archived either."""
        return self.conn.execute(
            "SELECT 1 FROM excluded_sessions WHERE source_path = ? AND NOT EXISTS (SELECT 1 FROM events e JOIN "
            "sources s ON s.id = e.source_id WHERE s.path = ?) LIMIT 1", (path, path)).fetchone() is not None

    def maintain_archive(self, max_age_days: float | None, max_size_bytes: int | None,
                         collect: bool = False) -> Any:
        """Archive retention, then (``collect``, or when retention removed something) the files nothing
        names any more: harvester/capture/archive/expiry. None without an archive to maintain, or with no limit
        set and nothing to collect (the default: a scan then imports none of the archive's removal code)."""
        if self.archive is None or self.archive.readonly:
            return None
        if max_age_days is None and max_size_bytes is None and not collect:
            return None
        from harvester.capture.archive.expiry import collect as collect_leftovers
        from harvester.capture.archive.expiry import expire

        done = expire(self.conn, self.archive, max_age_days, max_size_bytes, self.transaction)
        if collect or done.sources:
            with self.transaction():  # no writer between writing a blob and naming it
                done.bytes_freed += collect_leftovers(self.conn, self.archive)
        return done

    def discard_archived(self, pieces: list[Any], partial_source: str | None = None) -> None:
        """Archive pieces a chunk will not commit (harvester.capture.archive.Archive.discard); ``partial_source``:
        the source's archive now lacks records of sessions the bank holds (harvester.capture.archive.attribute).
        Said before the chunk commits: a crash in between leaves it said, which only costs a reparse
        reading the source's file instead of its archive."""
        if self.archive is not None and not self.archive.readonly:
            self.archive.discard(self.conn, pieces)
            if partial_source is not None:
                from harvester.capture.archive.purge import INSEPARABLE

                mark = "UPDATE sources SET archive_gap = ? WHERE path = ?"
                if self.conn.in_transaction:  # a reparse, inside its own
                    self.conn.execute(mark, (INSEPARABLE, partial_source))
                else:
                    with self.transaction() as conn:
                        conn.execute(mark, (INSEPARABLE, partial_source))



def log_repair(report: ArchiveReport) -> None:
    from harvester.log import get_logger

    log = get_logger("harvester.archive")
    for path, cut in report.truncated:
        log.info("archive cut back to what the bank committed", path=path, bytes=cut)
    for source, epoch, frames in report.missing:
        log.warning("archived chunks missing on disk (lost after a commit)", source_id=source, epoch=epoch,
                    frames=frames)


