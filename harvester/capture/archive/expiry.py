"""Archive retention: ``archive_max_age`` and ``archive_max_size`` (both off by default), and collecting
files nothing names any more.

The unit is one source's archive, removed whole, oldest first (by its last write): what is older than
``archive_max_age``, then, while the archive is over ``archive_max_size``, the oldest of the rest. A
source's archive is only ever removed when every session read from it is fully in the bank:

- none of them is still being written (``state = 'live'``);
- the bank recorded no problem for the source (a record a parser could not read is only in the archive,
  for the parser fix that will read it);
- none of its events was clipped (their whole text is only in the archive);
- the source did not fail.

What is left over the size limit then holds sessions that are not: ``status`` says so. A source whose
archive went is marked (``sources.archive_gap``): ``harvester reparse`` reads it from its file, or leaves its
sessions as they are, never rebuilds them from what is left.

:func:`collect` removes blobs and stream files the bank no longer names (a chunk whose transaction never
committed, a document version or whole text no event uses since a reparse).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harvester.capture.archive import Archive
from harvester.capture.archive.purge import Purge, drop_source

SETTLED_SECONDS = 3600  # a file younger than this may be a chunk's, written before its commit


@dataclass
class Expired:
    sources: list[str] = field(default_factory=list)
    bytes_freed: int = 0
    size_after: int = 0
    over_limit: bool = False  # still over archive_max_size: what is left is not fully in the bank


def sizes(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Each archived source: its id, path, bytes, last write, and whether it may be removed."""
    rows = conn.execute("""
        SELECT s.id, s.path,
               coalesce((SELECT sum(length) FROM archive_frames f WHERE f.source_id = s.id), 0)
             + coalesce((SELECT sum(size) FROM archive_docs d WHERE d.source_id = s.id), 0)
             + coalesce((SELECT sum(size) FROM archive_texts t WHERE t.source_id = s.id), 0) AS bytes,
               max(coalesce((SELECT max(at) FROM archive_frames f WHERE f.source_id = s.id), ''),
                   coalesce((SELECT max(at) FROM archive_docs d WHERE d.source_id = s.id), '')) AS last,
               s.status NOT IN ('failed', 'unreadable')
               AND NOT EXISTS (SELECT 1 FROM problems p WHERE p.source_path = s.path)
               AND NOT EXISTS (SELECT 1 FROM archive_texts t WHERE t.source_id = s.id)
               AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.source_path = s.path AND x.state = 'live')
               AND NOT EXISTS (SELECT 1 FROM events e JOIN sessions x ON x.id = e.session_id
                               WHERE e.source_id = s.id AND x.state = 'live') AS removable
        FROM sources s
        WHERE EXISTS (SELECT 1 FROM archive_frames f WHERE f.source_id = s.id)
           OR EXISTS (SELECT 1 FROM archive_docs d WHERE d.source_id = s.id)
        ORDER BY last, s.id""").fetchall()
    return [dict(zip(("id", "path", "bytes", "last", "removable"), r, strict=True)) for r in rows]


def expire(conn: sqlite3.Connection, archive: Archive, max_age_days: float | None, max_size_bytes: int | None,
           transaction: Any, now: datetime | None = None) -> Expired:
    """Apply the limits (see the module); ``transaction``: the bank's (a context manager giving ``conn``)."""
    result = Expired()
    if max_age_days is None and max_size_bytes is None:
        return result
    now = now or datetime.now(UTC)
    cutoff = (now - timedelta(days=max_age_days)).strftime("%Y-%m-%dT%H:%M:%S") if max_age_days else None
    with transaction() as c:
        archived = sizes(c)
        total = sum(a["bytes"] for a in archived)
        purge = Purge()
        for a in archived:  # oldest first
            old = cutoff is not None and a["last"] < cutoff
            big = max_size_bytes is not None and total > max_size_bytes
            if not (old or big):
                continue
            if not a["removable"]:
                continue
            drop_source(c, archive, a["id"], purge, streams=True)
            why = (f"archive retention removed what it kept until {a['last'][:10]}"
                   + (f" (archive_max_age {max_age_days:g} days)" if old else " (archive_max_size)"))
            c.execute("UPDATE sources SET archive_gap = ? WHERE id = ?", (why, a["id"]))
            total -= a["bytes"]
            result.sources.append(a["path"])
        result.size_after = total
        result.over_limit = max_size_bytes is not None and total > max_size_bytes
    result.bytes_freed = purge.finish(archive, conn)
    return result


def collect(conn: sqlite3.Connection, archive: Archive) -> int:
    """Remove what the archive holds that the bank names nowhere; the bytes freed. Run while holding the
    bank's write lock, so that no writer is between writing a blob and committing its name."""
    named_docs = {d for (d,) in conn.execute("SELECT DISTINCT digest FROM archive_docs")}
    named_texts = {d for (d,) in conn.execute("SELECT DISTINCT digest FROM archive_texts")}
    named_files = {(k, f"{s}-{e}.zst") for k, s, e in conn.execute(
        "SELECT DISTINCT kind, source_id, epoch FROM archive_frames")}
    settled = time.time() - SETTLED_SECONDS  # a reader in another process writes blobs before their commit
    freed = 0
    for sub, named in (("blobs", named_docs), ("texts", named_texts)):
        for path in (archive.dir / sub).glob("*/*.zst"):
            if path.name.removesuffix(".zst") not in named:
                freed += _remove(path, settled)
        for path in [*(archive.dir / sub).glob(".tmp-*"), *(archive.dir / sub).glob("*/.tmp-*")]:  # cut short
            freed += _remove(path, settled)
    for kind in ("streams", "rows"):
        for path in (archive.dir / kind).glob("*.zst"):
            if (kind, path.name) not in named_files:
                freed += _remove(path, settled)
    return freed


def _remove(path: Path, settled: float) -> int:
    with contextlib.suppress(OSError):
        st = path.stat()
        if st.st_mtime < settled:
            os.unlink(path)
            return st.st_size
    return 0
