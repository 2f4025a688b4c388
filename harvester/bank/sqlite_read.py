"""Read-side queries of the SQLite bank: what ``status``, ``sessions``, ``show`` and ``search`` print."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any

import orjson

SESSION_COLUMNS = (
    "id, harness, native_id, bank_id, cwd, project, repo_root, origin_url, origin_id, branch, commit_sha, "
    "git_how, git_error, title, title_source, model, agent_version, started_at, updated_at, "
    "parent_native_id, parent_kind, state, event_count, redactions, meta, first_imported_at, last_imported_at, "
    "repo_key"
)
EVENT_COLUMNS = (
    "seq, uid, role, kind, text, ts, tool_name, tool_input, tool_call_id, is_error, model, tokens_in, "
    "tokens_out, tokens_cache_read, tokens_cache_write, tokens_reasoning, meta, content_hash"
)


def _rows(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _session_dict(row: dict[str, Any]) -> dict[str, Any]:
    row["meta"] = orjson.loads(row["meta"]) if row.get("meta") else None
    return row


def _event_dict(row: dict[str, Any]) -> dict[str, Any]:
    for key in ("tool_input", "meta"):
        row[key] = orjson.loads(row[key]) if row.get(key) else None
    row["is_error"] = bool(row["is_error"])
    usage = {k: row.pop(f"tokens_{k}") for k in ("in", "out", "cache_read", "cache_write", "reasoning")}
    row["usage"] = {k: v for k, v in usage.items() if v} or None
    return row


class SqliteReads:
    conn: sqlite3.Connection
    path: str

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(self.path + suffix)
        return total

    def archive_stats(self) -> dict[str, Any]:
        """What the raw archive holds (harvester/capture/archive), from the bank's index of it: no walk of its files."""
        c = self.conn
        frames = c.execute("SELECT coalesce(sum(length), 0), count(DISTINCT source_id) FROM archive_frames").fetchone()
        docs = c.execute("SELECT coalesce(sum(size), 0) FROM (SELECT max(size) AS size FROM archive_docs "
                         "GROUP BY digest)").fetchone()[0]
        texts = c.execute("SELECT coalesce(sum(size), 0) FROM (SELECT max(size) AS size FROM archive_texts "
                          "GROUP BY digest)").fetchone()[0]
        sources = c.execute("SELECT count(*) FROM sources s WHERE EXISTS (SELECT 1 FROM archive_frames f WHERE "
                            "f.source_id = s.id) OR EXISTS (SELECT 1 FROM archive_docs d WHERE d.source_id = s.id)"
                            ).fetchone()[0]
        gaps = c.execute("SELECT archive_gap, count(*) FROM sources WHERE archive_gap IS NOT NULL GROUP BY 1").fetchall()
        damaged: dict[str, dict[str, Any]] = {}  # what reparse found damaged (harvester/capture/archive/integrity.py)
        for path, harness, part, detail, found_at in c.execute(
                "SELECT s.path, s.harness, d.part, d.detail, d.found_at FROM archive_damage d JOIN sources s ON "
                "s.id = d.source_id ORDER BY s.path, d.found_at, d.part"):
            damaged.setdefault(path, {"path": path, "harness": harness, "parts": []})["parts"].append(
                {"part": part, "detail": detail, "found_at": found_at})
        return {"size_bytes": frames[0] + docs + texts, "sources": sources,
                "gaps": [{"reason": reason, "sources": n} for reason, n in gaps], "damaged": list(damaged.values())}

    def session_versions(self) -> dict[str, dict[int | None, int]]:
        """Per harness: how many sessions each parser version made (None: made before versions were kept)."""
        out: dict[str, dict[int | None, int]] = {}
        for harness, version, n in self.conn.execute(
                "SELECT harness, parser_version, count(*) FROM sessions GROUP BY harness, parser_version"):
            out.setdefault(harness, {})[version] = n
        return out

    def harness_stats(self) -> dict[str, dict[str, Any]]:
        """Per harness: sources by status, sessions, events, last import, problems by kind, drift."""
        stats: dict[str, dict[str, Any]] = {}

        def entry(name: str) -> dict[str, Any]:
            if name not in stats:  # not setdefault: it would build the default for each of thousands of sessions
                stats[name] = {
                    "sources": 0, "sources_missing": 0, "sources_unreadable": 0, "sources_failed": 0,
                    "sessions": 0, "sessions_originals_gone": 0, "events": 0, "last_import": None, "git_errors": 0,
                    "malformed": 0, "oversize": 0, "unreadable": 0, "failed": 0, "unknown_types": 0, "drift": {},
                    "unknown_fields": 0, "drift_report": [],
                    "version": None, "failures": [], "unlisted_directories": [], "problems": [],
                }
            return stats[name]

        for harness, status, n in self.conn.execute(
                "SELECT harness, status, count(*) FROM sources GROUP BY harness, status"):
            e = entry(harness)
            e["sources"] += n
            if status in ("missing", "unreadable", "failed"):
                e[f"sources_{status}"] += n
        # Counted by SQLite, one row a harness (a bank of a million events has thousands of sessions, which a loop
        # here would build a row of each for): sessions, events, sessions whose agent file is gone (deleted by the
        # agent's cleanup, or by hand; the bank and the archive hold what is left of them), by the source each was
        # last read from. In the order of each harness's first session, as the rows are stored.
        for harness, sessions, events, git_errors, gone in self.conn.execute(
                "SELECT harness, count(*), sum(event_count), sum(git_error IS NOT NULL), "
                "sum(coalesce(source_path IN (SELECT path FROM sources WHERE status = 'missing'), 0)) "
                "FROM sessions GROUP BY harness ORDER BY min(id)"):
            e = entry(harness)
            e["sessions"] += sessions
            e["events"] += events
            e["git_errors"] += git_errors
            e["sessions_originals_gone"] += gone
        # The agent's version as its newest session recorded it (the store names it, we don't guess): the last
        # of each harness's, in this order.
        newest = dict(self.conn.execute("SELECT harness, agent_version FROM sessions WHERE agent_version IS NOT NULL "
                                        "ORDER BY coalesce(updated_at, ''), id"))
        for harness, version in newest.items():
            stats[harness]["version"] = version
        for harness, at in self.conn.execute("SELECT harness, max(at) FROM imports GROUP BY harness"):
            entry(harness)["last_import"] = at
        for harness, kind, n in self.conn.execute(
                "SELECT harness, kind, count(*) FROM problems GROUP BY harness, kind"):
            key = {"unknown_type": "unknown_types", "unknown_field": "unknown_fields"}.get(kind, kind)
            entry(harness)[key] = entry(harness).get(key, 0) + n
        for harness, detail, n in self.conn.execute(
                "SELECT harness, detail, count(*) FROM problems WHERE kind = 'unknown_type' "
                "GROUP BY harness, detail ORDER BY count(*) DESC"):
            entry(harness)["drift"][detail] = n
        # The drift report (`status --drift`): each record type and field no reader knows, how many records showed
        # it in how many sources, and the latest of them (SQLite takes the bare columns from the max() row).
        for harness, kind, detail, n, sources, path, line, _ in self.conn.execute(
                "SELECT harness, kind, detail, count(*), count(DISTINCT source_path), source_path, line, "
                "max(last_seen_at) FROM problems WHERE kind IN ('unknown_type', 'unknown_field') "
                "GROUP BY harness, kind, detail ORDER BY count(*) DESC, detail"):
            entry(harness)["drift_report"].append({
                "kind": "record type" if kind == "unknown_type" else "field", "detail": detail, "count": n,
                "sources": sources, "example": {"path": path, "line": line}})
        # Why each failed source failed, and the directories that could not be listed (a few each).
        for harness, path, line, detail in self.conn.execute(
                "SELECT harness, source_path, line, detail FROM (SELECT *, row_number() OVER (PARTITION BY harness "
                "ORDER BY last_seen_at DESC) AS n FROM problems WHERE kind = 'failed') WHERE n <= 10"):
            entry(harness)["failures"].append({"path": path, "line": line, "reason": detail})
        for harness, path, detail in self.conn.execute(
                "SELECT harness, source_path, detail FROM (SELECT *, row_number() OVER (PARTITION BY harness "
                "ORDER BY last_seen_at DESC) AS n FROM problems WHERE kind = 'unreadable' AND line = 0 "
                "AND detail LIKE 'directory cannot be listed: %') WHERE n <= 10"):
            entry(harness)["unlisted_directories"].append({"path": path, "reason": detail.split(": ", 1)[1]})
        # The latest problems of every harness, one per source: where to look first.
        for harness, path, line, kind, detail in self.conn.execute(
                "SELECT harness, source_path, line, kind, detail FROM (SELECT *, row_number() OVER (PARTITION BY "
                "harness ORDER BY last_seen_at DESC, id DESC) AS n FROM (SELECT *, row_number() OVER (PARTITION BY "
                "source_path ORDER BY last_seen_at DESC, id DESC) AS k FROM problems) WHERE k = 1) WHERE n <= 5"):
            entry(harness)["problems"].append({"path": path, "line": line, "kind": kind, "detail": detail})
        return stats

    def recent_problems(self, limit: int = 10) -> list[dict[str, Any]]:
        return _rows(self.conn.execute(
            "SELECT harness, source_path, line, kind, detail, last_seen_at FROM problems "
            "ORDER BY last_seen_at DESC, id DESC LIMIT ?", (limit,)))

    def recent_imports(self, limit: int = 20) -> list[dict[str, Any]]:
        return _rows(self.conn.execute(
            "SELECT i.at, i.harness, s.bank_id, s.native_id AS session, s.title, i.events_added "
            # By id: an import row's time only moves while it is the last row (SqliteBank._record_import), so
            # the last rows are the latest, and no sort of every row is needed to find them.
            "FROM imports i JOIN sessions s ON s.id = i.session_id ORDER BY i.id DESC LIMIT ?",
            (limit,)))

    def list_sessions(self, bank_id: str | None = None, repo_root: str | None = None,
                      harness: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        for column, value in (("bank_id", bank_id), ("repo_root", repo_root), ("harness", harness)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY coalesce(updated_at, started_at, last_imported_at) DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [_session_dict(r) for r in _rows(self.conn.execute(sql, args))]

    def find_sessions(self, ref: str) -> list[dict[str, Any]]:
        """A session by bank row id, native id, or unambiguous native id prefix."""
        rows = _rows(self.conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE native_id = ?", (ref,)))
        if not rows and ref.isascii() and ref.isdigit() and len(ref) <= 18:  # a row id SQLite can hold
            rows = _rows(self.conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (int(ref),)))
        if not rows and len(ref) >= 4:
            escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            rows = _rows(self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE native_id LIKE ? ESCAPE '\\' LIMIT 10",
                (escaped + "%",)))
        return [_session_dict(r) for r in rows]

    def events(self, session_pk: int) -> list[dict[str, Any]]:
        return [_event_dict(r) for r in _rows(self.conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? ORDER BY seq", (session_pk,)))]

    def whole_text(self, event: dict[str, Any]) -> str | None:
        """The whole text of an event whose bank copy is clipped (``meta.clipped``), from the archive;
        None when it is not clipped, or the archive does not hold it (off, or removed by retention)."""
        clipped = (event.get("meta") or {}).get("clipped")
        archive = getattr(self, "archive", None)
        if not isinstance(clipped, dict) or not clipped.get("text") or archive is None:
            return None
        return archive.text(str(clipped["text"]))

    def search(self, query: str, bank_id: str | None = None, limit: int = 20,
               include_recall: bool = False) -> list[dict[str, Any]]:
        """``harvester search``: FTS5 syntax, over one bank id or all; see SqliteRecall.search_events."""
        from harvester.bank.scope import EVERYTHING, Scope

        scope = Scope(bank_id, bank_id=bank_id) if bank_id else EVERYTHING
        hits = self.search_events(query, scope, limit, include_recall=include_recall)  # type: ignore[attr-defined]
        return [{k: h[k] for k in ("harness", "session", "bank_id", "title", "seq", "role", "kind", "ts", "snippet")}
                for h in hits]
