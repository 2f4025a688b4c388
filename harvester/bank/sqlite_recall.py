"""Read-side queries for recall (harvester/recall): sessions of a scope, their first ask and last answer,
a session's events by position, and search with filters. Events marked recall (the harvester's own
answers seen again) are left out unless asked for."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from harvester.bank.sqlite_read import EVENT_COLUMNS, SESSION_COLUMNS, _event_dict, _rows, _session_dict
from harvester.recall.scope import Scope

# Hits whose bm25 scores are within about 10 % of each other are equally relevant: those are shown oldest
# first, so where something first came up is found before the sessions that later asked about it (which
# are often shorter, and bm25 favours short texts). Buckets of a fifth of the best score.

RELEVANCE = "CAST(round((1.0 - rank / min(rank) OVER ()) * 5) AS INTEGER)"

_S_COLUMNS = ", ".join(f"s.{c.strip()}" for c in SESSION_COLUMNS.split(","))


class SqliteRecall:
    conn: sqlite3.Connection

    def scoped_sessions(self, scope: Scope, limit: int = 10, harness: str | None = None, since: str | None = None,
                        skip_live_of: str | None = None, recent_since: str | None = None) -> list[dict[str, Any]]:
        """Sessions of ``scope``, newest first. ``skip_live_of``: leave out that harness's sessions that are
        still being written (live, or updated since ``recent_since``): the calling agent's own."""
        where, args = scope.sql()
        clauses = [where]
        if harness:
            clauses.append("s.harness = ?")
            args.append(harness)
        if since:
            clauses.append("coalesce(s.updated_at, s.started_at, s.last_imported_at) >= ?")
            args.append(since)
        if skip_live_of:
            clauses.append("NOT (s.harness = ? AND (s.state = 'live' OR coalesce(s.updated_at, '') >= ?))")
            args += [skip_live_of, recent_since or "9999"]
        sql = (f"SELECT {_S_COLUMNS} FROM sessions s WHERE {' AND '.join(clauses)} "
               "ORDER BY coalesce(s.updated_at, s.started_at, s.last_imported_at) DESC, s.id DESC LIMIT ?")
        return [_session_dict(r) for r in _rows(self.conn.execute(sql, [*args, limit]))]

    def first_and_last(self, session_pk: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The session's first ask (a user's text) and its last answer (an assistant's text)."""
        first = _rows(self.conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND role = 'user' AND kind = 'text' "
            "AND recall = 0 ORDER BY seq LIMIT 1", (session_pk,)))
        last = _rows(self.conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND role = 'assistant' AND kind = 'text' "
            "AND recall = 0 ORDER BY seq DESC LIMIT 1", (session_pk,)))
        return (_event_dict(first[0]) if first else None), (_event_dict(last[0]) if last else None)

    def event_counts(self, session_pk: int) -> dict[str, int]:
        """Asks, answers, tool calls and tool errors of a session (recall left out)."""
        row = self.conn.execute(
            "SELECT sum(role = 'user' AND kind = 'text'), sum(role = 'assistant' AND kind = 'text'), "
            "sum(kind = 'tool_call'), sum(kind = 'tool_result' AND is_error) FROM events "
            "WHERE session_id = ? AND recall = 0", (session_pk,)).fetchone()
        return {k: v or 0 for k, v in zip(("asks", "answers", "tool_calls", "tool_errors"), row, strict=True)}

    def events_page(self, session_pk: int, start: int = 0, limit: int = 50, kinds: list[str] | None = None,
                    include_recall: bool = False) -> list[dict[str, Any]]:
        """Events from position ``start`` (seq, 1-based; 0 is the first), in order, at most ``limit``."""
        clauses, args = ["session_id = ?", "seq >= ?"], [session_pk, start]
        if kinds:
            clauses.append(f"kind IN ({', '.join('?' * len(kinds))})")
            args += kinds
        if not include_recall:
            clauses.append("recall = 0")
        sql = f"SELECT {EVENT_COLUMNS}, recall FROM events WHERE {' AND '.join(clauses)} ORDER BY seq LIMIT ?"
        return [_event_dict(r) for r in _rows(self.conn.execute(sql, [*args, limit]))]

    def search_events(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                      since: str | None = None, role: str | None = None, kind: str | None = None,
                      include_recall: bool = False) -> list[dict[str, Any]]:
        """Ranked full-text hits (``match``: an FTS5 query) with a snippet, the session and the position.
        Ranked first (every match, ids and scores only), then the page's snippets: FTS5 allows no window
        over its auxiliary functions, and a snippet costs more than a score."""
        where, args = scope.sql()
        clauses = ["events_fts MATCH ?", where]
        args = [match, *args]
        for column, value in (("s.harness", harness), ("e.role", role), ("e.kind", kind)):
            if value:
                clauses.append(f"{column} = ?")
                args.append(value)
        if since:
            clauses.append("coalesce(e.ts, s.updated_at, '') >= ?")
            args.append(since)
        if not include_recall:
            clauses.append("e.recall = 0")
        ranked = self.conn.execute(
            f"WITH hits AS (SELECT e.id, e.ts, rank FROM events_fts JOIN events e ON e.id = events_fts.rowid "
            f"JOIN sessions s ON s.id = e.session_id WHERE {' AND '.join(clauses)}) "
            f"SELECT id FROM hits ORDER BY {RELEVANCE}, coalesce(ts, ''), id LIMIT ?", [*args, limit]).fetchall()
        if not ranked:
            return []
        ids = [i for (i,) in ranked]
        rows = {r["id"]: r for r in _rows(self.conn.execute(
            "SELECT e.id, s.harness, s.native_id AS session, s.bank_id, s.title, s.branch, e.seq, e.role, e.kind, "
            "e.ts, e.tool_name, e.recall, snippet(events_fts, 0, '[', ']', '…', 16) AS snippet "
            "FROM events_fts JOIN events e ON e.id = events_fts.rowid JOIN sessions s ON s.id = e.session_id "
            f"WHERE events_fts MATCH ? AND events_fts.rowid IN ({', '.join('?' * len(ids))})", [match, *ids]))}
        return [rows.pop(i) for i in ids if i in rows]

    def count_matches(self, match: str, scope: Scope, harness: str | None = None,
                      include_recall: bool = False) -> int:
        """How many events ``match`` finds in ``scope`` (what a page of hits is out of)."""
        where, args = scope.sql()
        clauses = ["events_fts MATCH ?", where]
        args = [match, *args]
        if harness:
            clauses.append("s.harness = ?")
            args.append(harness)
        if not include_recall:
            clauses.append("e.recall = 0")
        return self.conn.execute(
            "SELECT count(*) FROM events_fts JOIN events e ON e.id = events_fts.rowid "
            f"JOIN sessions s ON s.id = e.session_id WHERE {' AND '.join(clauses)}", args).fetchone()[0]

    def session_events(self, session_pk: int, include_recall: bool = False) -> list[dict[str, Any]]:
        sql = f"SELECT {EVENT_COLUMNS}, recall FROM events WHERE session_id = ?"
        if not include_recall:
            sql += " AND recall = 0"
        return [_event_dict(r) for r in _rows(self.conn.execute(sql + " ORDER BY seq", (session_pk,)))]


_PHRASE = re.compile(r'"([^"]*)"|(\S+)')


def plain_words(query: str) -> str:
    """A query as people type it, as an FTS5 query that cannot be a syntax error: every word must match
    (each quoted, so ``notes.txt`` or ``cap-claude-code`` is looked up as written, not parsed as
    operators), and a "quoted phrase" stays a phrase. Raises ValueError when nothing is left to look for."""
    terms = []
    for phrase, word in _PHRASE.findall(query):
        term = (phrase if phrase else word).strip()
        if term and any(c.isalnum() for c in term):
            terms.append('"' + term.replace('"', '""') + '"')
    if not terms:
        raise ValueError("nothing to search for: give one or more words")
    return " ".join(terms)
