"""Read-side queries for recall (harvester/recall): sessions of a scope, their first ask and last answer,
a session's events by position, and search with filters. Events marked recall (the harvester's own
answers seen again) are left out unless asked for."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from harvester.bank.scope import Scope
from harvester.bank.sqlite_read import EVENT_COLUMNS, SESSION_COLUMNS, _event_dict, _rows, _session_dict

# Hits whose bm25 scores are within about 10 % of each other are equally relevant: those are shown oldest
# first, so where something first came up is found before the sessions that later asked about it (which
# are often shorter, and bm25 favours short texts). Buckets of a fifth of the best score.

RELEVANCE = "CAST(round((1.0 - rank / min(rank) OVER ()) * 5) AS INTEGER)"

# Scoring every match costs about 4 µs a match (bm25 reads each one's size and positions) after a pass over
# each word's whole list of events to weigh it: 2 s for a word in half of a million events. Up to this many
# matches are ranked; more are shown newest first (what FTS5 can stop early on) and counted as "more than".
RANKED_AT_MOST = 1000

# bm25 weighs each word of a query by how few events hold it, and counts them for that: a pass over every
# event that holds it (25 ms for a word in 440,000 events), and for a phrase, a check of the words' positions in
# each event that holds them all. A word in more than this many events (2 % of a million; bm25 weighs it
# ln(N / n), little) is matched but not weighed; when every word of a query is, its matches are equally
# relevant (SqliteRecall._weighed).
WEIGHED_AT_MOST = 20_000
_QUOTED = re.compile(r'"(?:[^"]|"")*"')
_ALL_OF = re.compile(r'\s*(?:"(?:[^"]|"")*"\s*)+')  # quoted words or phrases, all of which must match
_TOKEN = re.compile(r"[^\W_]+")  # a word as the index's tokenizer (unicode61) cuts it: letters and digits

# A full-text hit, its event and its session. The event through events_hit (migration 7), which holds what the
# filters ask (session_id, recall) without reading the event's row; the planner would read the row.
_HITS = ("events_fts f JOIN events e INDEXED BY events_hit ON e.id = f.rowid "
         "JOIN sessions s ON s.id = e.session_id")

_S_COLUMNS = ", ".join(f"s.{c.strip()}" for c in SESSION_COLUMNS.split(","))
# What a list of sessions shows (harvester.cli.render.sessions_text), and when each was updated in local time to the
# minute, as it shows it: SQLite's localtime is the C library's, as Python's, at a tenth of the cost a row.
LISTED_COLUMNS = ("id", "native_id", "harness", "bank_id", "title", "started_at", "updated_at", "event_count", "state",
                  "repo_key", "parent_native_id", "parent_kind")
_LISTED = ", ".join(f"s.{c}" for c in LISTED_COLUMNS) + (
    ", strftime('%Y-%m-%d %H:%M', coalesce(s.updated_at, s.started_at), 'localtime') AS updated_local")


@dataclass
class SearchPage:
    """A page of search hits, and how many events match: exactly ``total``, or more than it when ``more``.
    ``ranked``: best first; else (more than RANKED_AT_MOST match) the matches stored last, newest first."""

    hits: list[dict[str, Any]]
    total: int
    more: bool = False
    ranked: bool = True


RECALL_KEY_FACT = "recall_key"  # bank_facts (migration 10): the key harvester/recall/frame.py seals answers with


def recall_key_of(conn: sqlite3.Connection) -> bytes | None:
    """The bank's recall key, or None when it has none (answers go unsealed, and no text is marked recall)."""
    row = conn.execute("SELECT value FROM bank_facts WHERE key = ?", (RECALL_KEY_FACT,)).fetchone()
    try:
        return bytes.fromhex(row[0]) if row and row[0] else None
    except (TypeError, ValueError):  # a damaged fact: the same as none
        return None


class SqliteRecall:
    conn: sqlite3.Connection

    def recall_key(self) -> bytes | None:
        return recall_key_of(self.conn)

    def scoped_sessions(self, scope: Scope, limit: int = 10, harness: str | None = None, since: str | None = None,
                        skip_live_of: str | None = None, recent_since: str | None = None,
                        listed: bool = False, until: str | None = None, state: str | None = None,
                        offset: int = 0, role: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        """Sessions of ``scope``, newest first: of those active since ``since`` (written to at or after it) and
        until ``until`` (started before it), in ``state`` when given, holding an event of ``role`` and ``kind``
        when given (neither injected nor the harvester's own answer: what search finds by default), from the
        ``offset``-th (a page of them).
        ``skip_live_of``: leave out that harness's sessions that are still being written (live, or updated since
        ``recent_since``): the calling agent's own. ``listed``: only what a list of them shows (LISTED_COLUMNS; a
        bank's thousands of sessions read 4x quicker)."""
        where, args = scope.sql()
        clauses = [where]
        if harness:
            clauses.append("s.harness = ?")
            args.append(harness)
        if since:
            clauses.append("coalesce(s.updated_at, s.started_at, s.last_imported_at) >= ?")
            args.append(since)
        if until:
            clauses.append("coalesce(s.started_at, s.updated_at, s.last_imported_at) < ?")
            args.append(until)
        if state:
            clauses.append("s.state = ?")
            args.append(state)
        if role or kind:
            clauses.append("EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.recall = 0 AND e.injected = 0"
                           f"{' AND e.role = ?' if role else ''}{' AND e.kind = ?' if kind else ''})")
            args += [v for v in (role, kind) if v]
        if skip_live_of:
            clauses.append("NOT (s.harness = ? AND (s.state = 'live' OR coalesce(s.updated_at, '') >= ?))")
            args += [skip_live_of, recent_since or "9999"]
        # The order is the index sessions_recent's (migration 7): no sort of every session.
        sql = (f"SELECT {_LISTED if listed else _S_COLUMNS} FROM sessions s WHERE {' AND '.join(clauses)} "
               "ORDER BY coalesce(s.updated_at, s.started_at, s.last_imported_at) DESC, s.id DESC LIMIT ? OFFSET ?")
        rows = _rows(self.conn.execute(sql, [*args, limit, offset]))
        return rows if listed else [_session_dict(r) for r in rows]

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

    def search_page(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                    since: str | None = None, role: str | None = None, kind: str | None = None,
                    include_recall: bool = False, until: str | None = None,
                    include_injected: bool = False) -> SearchPage:
        """Full-text hits (``match``: an FTS5 query) with a snippet, the session and the position, and how
        many events match; of events at or after ``since`` and before ``until``; context the agents injected
        (their preambles: harvester.model.is_injected) only with ``include_injected``. Up to RANKED_AT_MOST matches are ranked (bm25 by the words worth weighing, then
        oldest first among equals); past that, the page holds the matches stored last, and they are counted up
        to RANKED_AT_MOST or ``limit`` (past that: "more than")."""
        where, args = self._hit_clauses(match, scope, harness, since, role, kind, include_recall, until,
                                        include_injected)
        # Newest first is the order FTS5 reads its index in (by rowid), so this stops after RANKED_AT_MOST + 1
        # hits in scope, whatever the number of matches; and it asks no score.
        counted = max(RANKED_AT_MOST, limit)
        latest = [i for (i,) in self.conn.execute(
            f"SELECT f.rowid FROM {_HITS} WHERE {where} ORDER BY f.rowid DESC LIMIT ?", [*args, counted + 1])]
        if len(latest) > RANKED_AT_MOST:
            hits = self._with_snippets(match, latest[:limit])
            return SearchPage(hits, min(len(latest), counted), more=len(latest) > counted, ranked=False)
        if not latest:
            return SearchPage([], 0)
        # These are every match: rank them by the words worth weighing (all of them, unless some are in very many
        # events); when none is, they are all equally relevant, and shown oldest first.
        weighed = self._weighed(match)
        if weighed is None:
            ranked = [i for (i,) in self.conn.execute(
                f"SELECT id FROM events WHERE id IN ({', '.join('?' * len(latest))}) ORDER BY coalesce(ts, ''), id "
                "LIMIT ?", [*latest, limit])]
            return SearchPage(self._with_snippets(match, ranked), len(latest))
        # Read the index between the first match and the last only; FTS5 scores a row when it is read, so only
        # the matches are scored. "+f.rowid" keeps the list from FTS5, which would take it as one lookup per
        # rowid, and weigh the words all over again for each.
        ranked = [i for (i,) in self.conn.execute(
            "WITH hits AS (SELECT f.rowid AS id, f.rank AS rank, e.ts AS ts FROM events_fts f "
            "JOIN events e ON e.id = f.rowid WHERE events_fts MATCH ? AND f.rowid BETWEEN ? AND ? "
            f"AND +f.rowid IN ({', '.join('?' * len(latest))})) "
            f"SELECT id FROM hits ORDER BY {RELEVANCE}, coalesce(ts, ''), id LIMIT ?",
            [weighed, latest[-1], latest[0], *latest, limit])]
        return SearchPage(self._with_snippets(match, ranked), len(latest))

    def _weighed(self, match: str) -> str | None:
        """What bm25 ranks a query's matches by: when it is words (or phrases) that must all match, as plain_words
        makes it, those whose every word is in at most WEIGHED_AT_MOST events; None when there is none (the
        matches are equally relevant). Any other FTS5 query as it is."""
        if not _ALL_OF.fullmatch(match):
            return match
        counts: dict[str, int] = {}

        def events_holding(token: str) -> int:  # up to WEIGHED_AT_MOST + 1: the read stops there
            if token not in counts:
                counts[token] = self.conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM events_fts WHERE events_fts MATCH ? LIMIT ?)",
                    (f'"{token}"', WEIGHED_AT_MOST + 1)).fetchone()[0]
            return counts[token]

        weighed = [p for p in _QUOTED.findall(match)
                   if all(events_holding(t) <= WEIGHED_AT_MOST for t in _TOKEN.findall(p))]
        return " ".join(weighed) or None

    def search_events(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                      since: str | None = None, role: str | None = None, kind: str | None = None,
                      include_recall: bool = False) -> list[dict[str, Any]]:
        """The hits of :meth:`search_page`, without the count."""
        return self.search_page(match, scope, limit, harness, since, role, kind, include_recall).hits

    @staticmethod
    def _hit_clauses(match: str, scope: Scope, harness: str | None, since: str | None, role: str | None,
                     kind: str | None, include_recall: bool, until: str | None = None,
                     include_injected: bool = False) -> tuple[str, list[Any]]:
        """The WHERE of a search over _HITS, and its arguments."""
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
        if until:
            clauses.append("coalesce(e.ts, s.started_at, '') < ?")
            args.append(until)
        if not include_recall:
            clauses.append("e.recall = 0")
        if not include_injected:
            clauses.append("e.injected = 0")
        return " AND ".join(clauses), args

    def _with_snippets(self, match: str, ids: list[int]) -> list[dict[str, Any]]:
        """The hits ``ids`` (in that order) with their session, position and snippet."""
        if not ids:
            return []
        rows = {r["id"]: r for r in _rows(self.conn.execute(
            "SELECT e.id, s.harness, s.native_id AS session, s.bank_id, s.title, s.branch, s.parent_native_id, "
            "s.parent_kind, e.seq, e.role, e.kind, "
            "e.ts, e.tool_name, e.recall, snippet(events_fts, 0, '[', ']', '…', 16) AS snippet "
            "FROM events_fts JOIN events e ON e.id = events_fts.rowid JOIN sessions s ON s.id = e.session_id "
            f"WHERE events_fts MATCH ? AND events_fts.rowid IN ({', '.join('?' * len(ids))})", [match, *ids]))}
        return [rows.pop(i) for i in ids if i in rows]

    def subagents(self, harness: str, native_id: str) -> list[dict[str, Any]]:
        """The subagent sessions a session started (``native_id``, ``meta``, ``started_at``, ``title``, and
        ``first_text``: the start of its first event's text, most often the task it was given), oldest first:
        harvester.recall.tools.children_of_calls links each to the call that started it."""
        rows = _rows(self.conn.execute(
            "SELECT s.native_id, s.meta, s.started_at, s.title, (SELECT substr(e.text, 1, 2000) FROM events e "
            "WHERE e.session_id = s.id ORDER BY e.seq LIMIT 1) AS first_text FROM sessions s WHERE s.harness = ? "
            "AND s.parent_native_id = ? AND s.parent_kind = 'subagent' ORDER BY coalesce(s.started_at, ''), s.id",
            (harness, native_id)))
        return [_session_dict(r) for r in rows]

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
