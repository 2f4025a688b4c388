"""The team bank read back: what ``sessions``, ``show``, ``search``, ``context`` and ``mcp`` ask of a bank
(the read side of harvester.bank.Bank), answered from PostgreSQL in the shapes the local bank gives.

A session's row carries its provenance too (``host``, ``os_user``, ``harvester_version``: who pushed it).
"This repository" is the repository's identity across machines (harvester/team/identity.py): its normalized
origin, so a teammate's clone elsewhere under another folder name is the same repository; this machine's own
sessions of its main worktree are in it too (never another repository's that shares its bank id). Search is
PostgreSQL's full-text search over the ``tsvector`` of each event (schema.py): plain words must all match, a "quoted
phrase" stays a phrase; with ``--fts`` the query is PostgreSQL's web-search syntax (``or``, ``-word``,
"phrase"). The raw archive never leaves a machine: a text the bank keeps clipped stays clipped here.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from harvester.bank.sqlite_recall import RANKED_AT_MOST, SearchPage
from harvester.team.identity import shared_origin
from harvester.team.schema import SCHEMA

if TYPE_CHECKING:
    from harvester.bank.scope import Scope
    from harvester.team.server import TeamBank

_SESSION_FIELDS = ("id", "harness", "native_id", "bank_id", "cwd", "project", "repo_root", "origin_url", "origin_id",
                   "branch", "commit_sha", "git_how", "git_error", "title", "title_source", "model", "agent_version",
                   "started_at", "updated_at", "parent_native_id", "parent_kind", "state", "event_count",
                   "redactions", "meta", "first_imported_at", "last_imported_at", "host", "os_user",
                   "harvester_version")
_S = ", ".join(f"s.{c}" for c in _SESSION_FIELDS)
_LISTED = ("id", "native_id", "harness", "bank_id", "title", "started_at", "updated_at", "event_count", "state", "host",
           "parent_native_id", "parent_kind")
_EVENT_FIELDS = ("seq", "uid", "role", "kind", "text", "ts", "tool_name", "tool_input", "tool_call_id", "is_error",
                 "model", "tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "tokens_reasoning",
                 "meta", "content_hash")
_E = ", ".join(_EVENT_FIELDS)
_RECENT = "coalesce(s.updated_at, s.started_at, s.last_imported_at)"
_FROM = f"{SCHEMA}.sessions s JOIN {SCHEMA}.repositories r ON r.id = s.repository_id"
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_ALL_OF = re.compile(r'\s*(?:"(?:[^"]|"")*"\s*)+')
_WORD = re.compile(r"[^\W_]+")  # a word as the local index (unicode61) and the team's (schema.search_text) cut it


def _local_minute(ts: str | None) -> str | None:
    """An ISO time in this machine's time zone to the minute, as the local bank's list shows it."""
    if not ts:
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts[:16].replace("T", " ")
    return (moment.astimezone() if moment.tzinfo else moment).strftime("%Y-%m-%d %H:%M")


def _session(row: dict[str, Any]) -> dict[str, Any]:
    row["meta"] = orjson.loads(row["meta"]) if row.get("meta") else None
    return row


def _event(row: dict[str, Any]) -> dict[str, Any]:
    for key in ("tool_input", "meta"):
        row[key] = orjson.loads(row[key]) if row.get(key) else None
    row["is_error"] = bool(row["is_error"])
    usage = {k: row.pop(f"tokens_{k}") for k in ("in", "out", "cache_read", "cache_write", "reasoning")}
    row["usage"] = {k: v for k, v in usage.items() if v} or None
    if "recall" in row:
        row["recall"] = 1 if row["recall"] else 0
    return row


def tsquery(match: str) -> tuple[str, list[str]]:
    """SQL for a query's tsquery, and its arguments: plain words (as harvester.bank.sqlite_recall.plain_words
    quotes them) as phrases that must all match; anything else as PostgreSQL's web-search syntax."""
    if _ALL_OF.fullmatch(match):  # each term's words as the index cuts them (schema.search_text), a phrase
        terms = [" ".join(_WORD.findall(t.replace('""', '"'))) for t in _QUOTED.findall(match)]
        terms = [t for t in terms if t] or [""]
        return " && ".join(["phraseto_tsquery('simple', %s)"] * len(terms)), terms
    return "websearch_to_tsquery('simple', %s)", [match]


class TeamReader:
    """The team bank, read. ``machine``: this machine's id in it (its own sessions of a repository without a
    shared origin are keyed by it and their main worktree). ``recall_key``: the local bank's, which seals the
    answers given from the team bank as it does those from the local one (harvester/recall/frame.py); it never
    leaves this machine. A teammate's rows are shown through the same sanitizer as this machine's."""

    archive = None  # the archive never leaves a machine

    def __init__(self, team: TeamBank, machine: str | None = None, recall_key: bytes | None = None) -> None:
        self.team, self.machine = team, machine
        self.path = self.team.settings.url
        self._recall_key = recall_key

    def recall_key(self) -> bytes | None:
        return self._recall_key

    def __enter__(self) -> TeamReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.team.close()

    def _rows(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self.team.connection() as conn:
            cur = conn.execute(sql, args)
            names = [d.name for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def _scope(self, scope: Scope) -> tuple[str, list[Any]]:
        """A WHERE condition on sessions ``s`` joined to repositories ``r``, for ``scope``."""
        if scope.bank_id is not None:
            return "(s.bank_id = %s OR r.name = %s)", [scope.bank_id, scope.bank_id]
        if scope.everything:
            return "TRUE", []
        if scope.repository is not None:  # the repository by its key here (the viewer's pages name it so)
            return "r.repo_key = %s", [scope.repository]
        # This repository by its origin, on every machine; this machine's sessions of it too by its main worktree
        # (its repository key there when they were pushed without a remote: identity.py). Never by the bank id,
        # which unrelated repositories of one name share.
        keys = [k for k in (shared_origin(scope.origin_id),
                            f"{self.machine}:{scope.repo_root}" if self.machine and scope.repo_root else None,
                            f"{self.machine}:{scope.recorded_at}" if self.machine and scope.recorded_at else None) if k]
        return ("r.repo_key = ANY(%s)", [keys]) if keys else ("FALSE", [])

    # -- sessions ------------------------------------------------------------------------------------
    def scoped_sessions(self, scope: Scope, limit: int = 10, harness: str | None = None, since: str | None = None,
                        skip_live_of: str | None = None, recent_since: str | None = None,
                        listed: bool = False, until: str | None = None, state: str | None = None,
                        offset: int = 0, role: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        where, args = self._scope(scope)
        clauses = [where]
        if harness:
            clauses.append("s.harness = %s")
            args.append(harness)
        if since:
            clauses.append(f"{_RECENT} >= %s")
            args.append(since)
        if until:
            clauses.append("coalesce(s.started_at, s.updated_at, s.last_imported_at) < %s")
            args.append(until)
        if state:
            clauses.append("s.state = %s")
            args.append(state)
        if role or kind:  # as the local bank's: an event neither the harvester's own answer nor injected
            clauses.append(f"EXISTS (SELECT 1 FROM {SCHEMA}.events e WHERE e.session_id = s.id AND NOT e.recall AND "
                           "coalesce(e.meta::jsonb ->> 'injected', 'false') <> 'true'"
                           f"{' AND e.role = %s' if role else ''}{' AND e.kind = %s' if kind else ''})")
            args += [v for v in (role, kind) if v]
        if skip_live_of:
            clauses.append("NOT (s.harness = %s AND (s.state = 'live' OR coalesce(s.updated_at, '') >= %s))")
            args += [skip_live_of, recent_since or "9999"]
        columns = ", ".join(f"s.{c}" for c in _LISTED) if listed else _S
        rows = self._rows(f"SELECT {columns} FROM {_FROM} WHERE {' AND '.join(clauses)} "
                          f"ORDER BY {_RECENT} DESC, s.id DESC LIMIT %s OFFSET %s", [*args, min(limit, 2**62), offset])
        if listed:
            for row in rows:
                row["updated_local"] = _local_minute(row["updated_at"] or row["started_at"])
            return rows
        return [_session(r) for r in rows]

    def list_sessions(self, bank_id: str | None = None, repo_root: str | None = None, harness: str | None = None,
                      limit: int | None = None) -> list[dict[str, Any]]:
        from harvester.bank.scope import EVERYTHING, Scope

        scope = Scope(bank_id, bank_id=bank_id) if bank_id else EVERYTHING
        return self.scoped_sessions(scope, limit or 2**62, harness=harness)

    def find_sessions(self, ref: str) -> list[dict[str, Any]]:
        """A session by its team bank id, native id, or an unambiguous native id prefix."""
        rows = self._rows(f"SELECT {_S} FROM {_FROM} WHERE s.native_id = %s", (ref,))
        if not rows and ref.isascii() and ref.isdigit() and len(ref) <= 18:  # a row id a bigint can hold
            rows = self._rows(f"SELECT {_S} FROM {_FROM} WHERE s.id = %s", (int(ref),))
        if not rows and len(ref) >= 4:
            escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            rows = self._rows(f"SELECT {_S} FROM {_FROM} WHERE s.native_id LIKE %s LIMIT 10", (escaped + "%",))
        return [_session(r) for r in rows]

    def subagents(self, harness: str, native_id: str) -> list[dict[str, Any]]:
        """The subagent sessions a session started, oldest first (as SqliteRecall.subagents)."""
        rows = self._rows(f"SELECT s.native_id, s.meta, s.started_at, s.title, (SELECT left(e.text, 2000) FROM "
                          f"{SCHEMA}.events e WHERE e.session_id = s.id ORDER BY e.seq LIMIT 1) AS first_text "
                          f"FROM {SCHEMA}.sessions s WHERE s.harness = %s AND s.parent_native_id = %s "
                          "AND s.parent_kind = 'subagent' ORDER BY coalesce(s.started_at, ''), s.id",
                          (harness, native_id))
        return [_session(r) for r in rows]

    # -- events --------------------------------------------------------------------------------------
    def events(self, session_pk: int) -> list[dict[str, Any]]:
        return [_event(r) for r in self._rows(
            f"SELECT {_E} FROM {SCHEMA}.events WHERE session_id = %s ORDER BY seq", (session_pk,))]

    def session_events(self, session_pk: int, include_recall: bool = False) -> list[dict[str, Any]]:
        recall = "" if include_recall else " AND NOT recall"
        return [_event(r) for r in self._rows(
            f"SELECT {_E}, recall FROM {SCHEMA}.events WHERE session_id = %s{recall} ORDER BY seq", (session_pk,))]

    def whole_text(self, event: dict[str, Any]) -> str | None:
        return None  # the archive, which holds whole texts, never leaves its machine

    def first_and_last(self, session_pk: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        first = self._rows(f"SELECT {_E} FROM {SCHEMA}.events WHERE session_id = %s AND role = 'user' AND "
                           "kind = 'text' AND NOT recall ORDER BY seq LIMIT 1", (session_pk,))
        last = self._rows(f"SELECT {_E} FROM {SCHEMA}.events WHERE session_id = %s AND role = 'assistant' AND "
                          "kind = 'text' AND NOT recall ORDER BY seq DESC LIMIT 1", (session_pk,))
        return (_event(first[0]) if first else None), (_event(last[0]) if last else None)

    def event_counts(self, session_pk: int) -> dict[str, int]:
        row = self._rows(
            "SELECT count(*) FILTER (WHERE role = 'user' AND kind = 'text') AS asks, "
            "count(*) FILTER (WHERE role = 'assistant' AND kind = 'text') AS answers, "
            "count(*) FILTER (WHERE kind = 'tool_call') AS tool_calls, "
            "count(*) FILTER (WHERE kind = 'tool_result' AND is_error) AS tool_errors "
            f"FROM {SCHEMA}.events WHERE session_id = %s AND NOT recall", (session_pk,))[0]
        return {k: int(v or 0) for k, v in row.items()}

    def events_page(self, session_pk: int, start: int = 0, limit: int = 50, kinds: list[str] | None = None,
                    include_recall: bool = False) -> list[dict[str, Any]]:
        clauses, args = ["session_id = %s", "seq >= %s"], [session_pk, start]
        if kinds:
            clauses.append("kind = ANY(%s)")
            args.append(list(kinds))
        if not include_recall:
            clauses.append("NOT recall")
        return [_event(r) for r in self._rows(
            f"SELECT {_E}, recall FROM {SCHEMA}.events WHERE {' AND '.join(clauses)} ORDER BY seq LIMIT %s",
            [*args, limit])]

    # -- search --------------------------------------------------------------------------------------
    def search_page(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                    since: str | None = None, role: str | None = None, kind: str | None = None,
                    include_recall: bool = False, until: str | None = None,
                    include_injected: bool = False) -> SearchPage:
        """Full-text hits with a snippet, the session and the position, and how many events match. Up to
        RANKED_AT_MOST matches are ranked (ts_rank in buckets of a fifth of the best, then oldest first, as
        locally); past that, the newest matches, counted as "more than"."""
        query_sql, query_args = tsquery(match)
        where, args = self._scope(scope)
        clauses = ["e.search @@ q.q", where]
        for column, value in (("s.harness", harness), ("e.role", role), ("e.kind", kind)):
            if value:
                clauses.append(f"{column} = %s")
                args.append(value)
        if since:
            clauses.append("coalesce(e.ts, s.updated_at, '') >= %s")
            args.append(since)
        if until:
            clauses.append("coalesce(e.ts, s.started_at, '') < %s")
            args.append(until)
        if not include_recall:
            clauses.append("NOT e.recall")
        if not include_injected:  # harvester.model.is_injected: the meta a push carries says it
            clauses.append("coalesce(e.meta::jsonb ->> 'injected', 'false') <> 'true'")
        hits_from = (f"(SELECT {query_sql} AS q) q, {SCHEMA}.events e JOIN {_FROM} ON s.id = e.session_id "
                     f"WHERE {' AND '.join(clauses)}")
        every = [*query_args, *args]
        counted = max(RANKED_AT_MOST, limit)
        total = self._rows(f"SELECT count(*) AS n FROM (SELECT 1 FROM {hits_from} LIMIT %s) m",
                           [*every, counted + 1])[0]["n"]
        if total == 0:
            return SearchPage([], 0)
        ranked = total <= RANKED_AT_MOST
        order = ("round((ts_rank(e.search, q.q) / max(ts_rank(e.search, q.q)) OVER ()) * 5) DESC, "
                 "coalesce(e.ts, ''), e.session_id, e.seq") if ranked else "coalesce(e.ts, '') DESC, e.session_id DESC"
        keys = self._rows(f"SELECT e.session_id, e.uid FROM {hits_from} ORDER BY {order} LIMIT %s", [*every, limit])
        hits = self._with_snippets(query_sql, query_args, keys)
        return SearchPage(hits, min(total, counted), more=total > counted, ranked=ranked)

    def _with_snippets(self, query_sql: str, query_args: list[str], keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not keys:
            return []
        rows = self._rows(
            f"SELECT e.session_id, e.uid, s.harness, s.native_id AS session, s.bank_id, s.title, s.branch, s.host, "
            "s.parent_native_id, s.parent_kind, "
            "e.seq, e.role, e.kind, e.ts, e.tool_name, e.recall, ts_headline('simple', "
            "CASE WHEN e.kind = 'tool_result' AND length(e.text) > 3072 THEN left(e.text, 2048) || E'\\n' || "
            "right(e.text, 1024) ELSE left(e.text, 100000) END, q.q, 'StartSel=[, StopSel=], MaxWords=18, MinWords=6, "
            "ShortWord=1, MaxFragments=1, FragmentDelimiter=…') AS snippet "
            f"FROM (SELECT {query_sql} AS q) q, {SCHEMA}.events e JOIN {SCHEMA}.sessions s ON s.id = e.session_id "
            "WHERE (e.session_id, e.uid) IN (SELECT * FROM unnest(%s::bigint[], %s::text[]))",
            [*query_args, [k["session_id"] for k in keys], [k["uid"] for k in keys]])
        by_key = {(r.pop("session_id"), r.pop("uid")): r for r in rows}
        out = []
        for k in keys:
            hit = by_key.get((k["session_id"], k["uid"]))
            if hit is not None:
                hit["id"] = f"{k['session_id']}:{hit['seq']}"
                hit["recall"] = 1 if hit["recall"] else 0
                out.append(hit)
        return out

    def search_events(self, match: str, scope: Scope, limit: int = 10, harness: str | None = None,
                      since: str | None = None, role: str | None = None, kind: str | None = None,
                      include_recall: bool = False) -> list[dict[str, Any]]:
        return self.search_page(match, scope, limit, harness, since, role, kind, include_recall).hits


def open_reader(settings: Any, local: Any = None) -> TeamReader:
    """The team bank of these settings, read (its schema checked: a newer one is refused). ``local``: the local
    bank, whose machine id marks this machine's own sessions."""
    from harvester.team.server import TeamBank

    machine, key = None, None
    if local is not None:
        try:
            row = local.conn.execute("SELECT value FROM bank_facts WHERE key = 'team_machine_id'").fetchone()
            machine = row[0] if row else None
            key = local.recall_key()
        except Exception:  # a bank from before migration 9, opened read-only
            machine = None
    team = TeamBank(settings.team, max_size=1)
    team.check_schema()
    return TeamReader(team, machine, key)
