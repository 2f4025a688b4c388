"""The bank's sources (each agent file or database read, with its cursor) and the problems found in them.

A mixin of :class:`harvester.bank.sqlite.SqliteBank`. A cursor is only ever stored by the transaction that
writes the events read up to it (``_store_cursor`` runs inside ``apply``); what is here outside a transaction
(a source's status, its problems, the directories that cannot be listed) says how reading went, never how far.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from harvester.capture.contract import Cursor

if TYPE_CHECKING:
    from harvester.model import Problem

UNLISTED = "directory cannot be listed: "  # the detail of a directory's problem (set_unlisted_directories)


def utcnow() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


class SqliteSources:
    conn: sqlite3.Connection

    transaction: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]

    # -- cursors ---------------------------------------------------------------------------
    _CURSOR_COLUMNS = (
        "harness, path, format, device, inode, size, mtime_ns, offset, line, head_len, head_hash, "
        "tail_hash, parser_state, generation, status, error, root, variant"
    )

    def _cursor_from_row(self, row: tuple) -> Cursor:
        (harness, path, fmt, device, inode, size, mtime_ns, offset, line, head_len, head_hash, tail_hash,
         state, generation, status, error, root, variant) = row
        return Cursor(harness, path, fmt, device or 0, inode or 0, size or 0, mtime_ns or 0, offset,
                      line, head_len, head_hash, tail_hash, _loads(state) or {}, generation, status, error,
                      root or "", variant or "")

    def cursor(self, path: str) -> Cursor | None:
        row = self.conn.execute(
            f"SELECT {self._CURSOR_COLUMNS} FROM sources WHERE path = ?", (path,)).fetchone()
        return None if row is None else self._cursor_from_row(row)

    def cursors(self, harness: str | None = None) -> list[Cursor]:
        sql = f"SELECT {self._CURSOR_COLUMNS} FROM sources"
        rows = (self.conn.execute(sql + " WHERE harness = ?", (harness,)) if harness
                else self.conn.execute(sql))
        return [self._cursor_from_row(row) for row in rows]

    def cursors_of(self, harness: str, paths: list[str]) -> dict[str, Cursor]:
        """The cursors of these sources of ``harness`` that the bank has, by path: a scan looks up the sources it
        found, not every source the harness ever had (a rescan of 50 found files beside 4,000 known ones)."""
        out: dict[str, Cursor] = {}
        for at in range(0, len(paths), 500):  # SQLite's default bound on a statement's variables is 32,766
            part = paths[at:at + 500]
            sql = (f"SELECT {self._CURSOR_COLUMNS} FROM sources WHERE harness = ? AND path IN "
                   f"({', '.join('?' * len(part))})")
            for row in self.conn.execute(sql, (harness, *part)):
                out[row[1]] = self._cursor_from_row(row)
        return out

    def source_paths(self, harness: str) -> list[str]:
        """The paths of the harness's sources not already said to be missing."""
        return [path for (path,) in self.conn.execute(
            "SELECT path FROM sources WHERE harness = ? AND status IS NOT 'missing'", (harness,))]

    def set_source_status(self, path: str, status: str, error: str | None = None) -> None:
        if error is not None:
            from harvester.parsers.base import problem_detail  # a reason said in words, never a record's text

            error = problem_detail(error)
        with self.transaction() as conn:
            conn.execute("UPDATE sources SET status = ?, error = ?, last_checked_at = ? WHERE path = ?",
                         (status, error, utcnow(), path))

    def record_problems(self, harness: str, path: str, problems: list[Problem]) -> None:
        with self.transaction() as conn:
            self._insert_problems(conn, harness, path, problems, utcnow())

    def resolve_read_problems(self, path: str) -> None:
        # Only the reader's own line-0 problems (a database caught mid-creation, a file that could not
        # be opened) and a failure of the whole source describe a condition that ends; a bad record
        # stays a bad record.
        if self.conn.execute("SELECT 1 FROM problems WHERE source_path = ? AND (line = 0 OR kind = 'failed')",
                             (path,)).fetchone():
            with self.transaction() as conn:
                conn.execute("DELETE FROM problems WHERE source_path = ? AND (kind = 'failed' OR line = 0 AND "
                             "(kind = 'unreadable' OR detail LIKE 'unexpected database shape:%'))", (path,))

    def set_unlisted_directories(self, harness: str, roots: list[str], directories: dict[str, str]) -> None:
        """The directories under ``roots`` that could not be listed now (path -> reason): recorded as
        problems of the directory; those recorded before that can be listed again are cleared."""
        known = {p for (p,) in self.conn.execute(
            "SELECT source_path FROM problems WHERE harness = ? AND line = 0 AND kind = 'unreadable' "
            "AND detail LIKE ?", (harness, UNLISTED + "%"))}
        gone = [p for p in known - set(directories)
                if any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots)]
        new = {p: r for p, r in directories.items() if p not in known}
        if not gone and not new:
            return
        with self.transaction() as conn:
            conn.executemany("DELETE FROM problems WHERE harness = ? AND source_path = ? AND line = 0 "
                             "AND kind = 'unreadable'", [(harness, p) for p in gone])
            now = utcnow()
            conn.executemany(
                "INSERT INTO problems (harness, source_path, line, kind, detail, first_seen_at, last_seen_at) "
                "VALUES (?, ?, 0, 'unreadable', ?, ?, ?) ON CONFLICT (source_path, line, kind) DO UPDATE SET "
                "detail = excluded.detail, last_seen_at = excluded.last_seen_at",
                [(harness, p, f"{UNLISTED}{reason}", now, now) for p, reason in new.items()])

    def _insert_problems(self, conn: sqlite3.Connection, harness: str, path: str,
                         problems: list[Problem], now: str) -> None:
        if not problems:
            return
        from harvester.parsers.base import problem_detail  # the write path's: reading commands never get here

        conn.executemany(
            "INSERT INTO problems (harness, source_path, line, kind, detail, first_seen_at, last_seen_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_path, line, kind) "
            "DO UPDATE SET detail = excluded.detail, last_seen_at = excluded.last_seen_at",
            [(harness, path, p.line or 0, p.kind, problem_detail(p.detail), now, now) for p in problems],
        )

    def _store_cursor(self, conn: sqlite3.Connection, cur: Cursor, now: str, is_new: bool) -> None:
        values = (cur.format, cur.device, cur.inode, cur.size, cur.mtime_ns, cur.offset, cur.line,
                  cur.head_len, cur.head_hash, cur.tail_hash, _dumps(cur.state), cur.status, cur.error,
                  now, now, cur.root or None, cur.variant or None)
        if is_new:
            conn.execute(
                "INSERT INTO sources (format, device, inode, size, mtime_ns, offset, line, head_len, "
                "head_hash, tail_hash, parser_state, status, error, last_read_at, last_checked_at, root, variant, "
                "generation, harness, path, first_seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                (*values, cur.harness, cur.path, now))
        else:
            conn.execute(
                "UPDATE sources SET format = ?, device = ?, inode = ?, size = ?, mtime_ns = ?, offset = ?, "
                "line = ?, head_len = ?, head_hash = ?, tail_hash = ?, parser_state = ?, status = ?, "
                "error = ?, last_read_at = ?, last_checked_at = ?, root = coalesce(?, root), "
                "variant = coalesce(?, variant), generation = generation + 1 WHERE path = ?",
                (*values, cur.path))
