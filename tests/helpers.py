"""Builders of native records and small utilities shared by the tests."""

from __future__ import annotations

import os
import shutil
import sqlite3
import uuid as uuidlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from harvester.bank import open_bank
from harvester.bank.migrations import SEARCH_VIEW_AND_TRIGGERS, search_text, search_text_v1
from harvester.capture.ingest import Ingestor, ScanReport
from harvester.config import DEFAULT_BANK_ID_TEMPLATE
from harvester.parsers import HARNESSES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def scan(
    home: Path,
    bank_path: Path,
    names: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    template: str = DEFAULT_BANK_ID_TEMPLATE,
    parallel_bytes: int | None = None,
    extra_roots: dict[str, list[Path]] | None = None,
) -> ScanReport:
    bank = open_bank(bank_path)
    try:
        harnesses = [HARNESSES[n] for n in names] if names else list(HARNESSES.values())
        options = {} if parallel_bytes is None else {"parallel_bytes": parallel_bytes}
        with Ingestor(bank, template, **options) as ingestor:
            return ingestor.scan(harnesses, env if env is not None else {"HOME": str(home)}, home,
                                 extra_roots=extra_roots)
    finally:
        bank.close()


def claude_dir(home: Path, cwd: str) -> Path:
    """Claude Code's project folder for a cwd (every non-alphanumeric character becomes '-')."""
    encoded = "".join(c if c.isalnum() else "-" for c in cwd)
    folder = home / ".claude" / "projects" / encoded
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class ClaudeSession:
    """Writes a Claude Code transcript the way Claude Code does: one JSON object per line."""

    def __init__(self, home: Path, cwd: str, session_id: str | None = None, version: str = "2.1.197",
                 live: bool = False) -> None:
        self.id = session_id or str(uuidlib.uuid4())
        self.cwd = cwd
        self.version = version
        self.path = claude_dir(home, cwd) / f"{self.id}.jsonl"
        self.parent: str | None = None
        self.n = 0
        self.live = live  # timestamps of now, as an agent at work writes them (else fixed, deterministic)

    def _envelope(self, kind: str, **extra: Any) -> dict[str, Any]:
        self.n += 1
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.id,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            "uuid": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{self.id}/{self.n}")),
            "timestamp": (datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z") if self.live
                          else f"2026-11-01T10:{self.n // 60 % 60:02d}:{self.n % 60:02d}.000Z"),
        }
        record.update(extra)
        self.parent = record["uuid"]
        return record

    def user(self, text: str) -> bytes:
        return _line(self._envelope("user", message={"role": "user", "content": text}))

    def assistant(self, text: str, message_id: str | None = None) -> bytes:
        message = {
            "id": message_id or f"msg_{self.n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return _line(self._envelope("assistant", message=message))

    def tool_use(self, name: str, tool_input: dict, tool_id: str) -> bytes:
        message = {
            "id": f"msg_{self.n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}],
        }
        return _line(self._envelope("assistant", message=message))

    def tool_result(self, tool_id: str, output: str) -> bytes:
        message = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": output}],
        }
        return _line(self._envelope("user", message=message))

    def write(self, *lines: bytes) -> None:
        with open(self.path, "ab") as f:
            for line in lines:
                f.write(line)

    def conversation(self, turns: int, start: int = 0) -> list[bytes]:
        lines = []
        for i in range(start, start + turns):
            lines.append(self.user(f"question {i}: how does module {i} work?"))
            lines.append(self.assistant(f"answer {i}: module {i} parses things. " + "detail " * 20))
        return lines


def _line(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record) + b"\n"


def bank_rows(bank_path: Path) -> list[tuple]:
    """Every event identity and content hash, in order: two equal banks give equal lists."""
    conn = sqlite3.connect(f"file:{bank_path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT s.harness, s.native_id, e.seq, e.uid, e.role, e.kind, e.content_hash FROM events e "
            "JOIN sessions s ON s.id = e.session_id ORDER BY s.harness, s.native_id, e.seq"
        ).fetchall()
    finally:
        conn.close()


def event_identities(bank_path: Path) -> list[tuple]:
    """Like bank_rows without seq: what must match between two imports of the same history."""
    return sorted(
        (h, s, uid, role, kind, digest) for h, s, _seq, uid, role, kind, digest in bank_rows(bank_path)
    )


def events_of(bank_path: Path, native_id: str | None = None) -> list[dict[str, Any]]:
    bank = open_bank(bank_path)
    try:
        out = []
        for session in bank.list_sessions():
            if native_id is None or session["native_id"] == native_id:
                out.extend(bank.events(session["id"]))
        return out
    finally:
        bank.close()


def session_of(bank_path: Path, native_id: str) -> dict[str, Any]:
    """The bank's row of one session (its native id)."""
    return next(s for s in sessions_of(bank_path) if s["native_id"] == native_id)


def shapes(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(role, kind) of each event: a transcript's shape."""
    return [(e["role"], e["kind"]) for e in events]


def sessions_of(bank_path: Path) -> list[dict[str, Any]]:
    bank = open_bank(bank_path)
    try:
        return bank.list_sessions()
    finally:
        bank.close()


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, dirs_exist_ok=True)
    return dst


def git(cwd: Path | str, *args: str) -> str:
    import subprocess

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    result = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return result.stdout.strip()


def make_repo(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    # Its own first commit: two repositories made in the same second would otherwise be one history (the same
    # tree, author, time and message), as unrelated repositories never are.
    (path / "README").write_text(f"hello from {uuidlib.uuid4()}\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    if origin:
        git(path, "remote", "add", "origin", origin)
    return path



class KillPoints:
    """Fractions of a reference scan's time at which to kill a scan: the planned ones, then earlier ones while
    fewer than ``needed`` kills have landed mid-scan (count them in ``landed``). A kill is timed by a reference
    measured once, and a loaded machine (a CI run installing agents beside the tests) can make the next scan
    faster than it was."""

    def __init__(self, planned: Iterable[float], needed: int = 2) -> None:
        self.planned, self.needed, self.landed = tuple(planned), needed, 0

    def __iter__(self) -> Iterator[float]:
        yield from self.planned
        for fraction in (0.2, 0.1, 0.05, 0.02):
            if self.landed >= self.needed:
                return
            yield fraction


def as_migration_18_left_it(conn: sqlite3.Connection) -> None:
    """Undo migration 19 on a bank: usage_hours keyed by whether a cost was recorded at all, as migration 16 made
    it (its triggers, and its sums of the counted rows)."""
    from harvester.bank.migrations_usage import _usage_hours_triggers, usage_tier

    sums = "tokens_in, tokens_out, tokens_cache_read, tokens_cache_write, tokens_cache_write_1h, tokens_reasoning"
    conn.executescript(
        "DROP TRIGGER usage_hours_insert; DROP TRIGGER usage_hours_delete; DROP TRIGGER usage_hours_counted; "
        "DROP TRIGGER usage_hours_uncounted; DELETE FROM usage_hours; "
        f"INSERT INTO usage_hours (hour, session_id, harness, model, tier, recorded, responses, {sums}, cost) "
        f"SELECT coalesce(substr(ts, 1, 13), ''), session_id, harness, coalesce(model, ''), {usage_tier('')}, "
        f"cost IS NOT NULL, count(*), {', '.join(f'sum({c})' for c in sums.split(', '))}, coalesce(sum(cost), 0) "
        "FROM usage WHERE counted = 1 GROUP BY 1, 2, 3, 4, 5, 6;"
        + _usage_hours_triggers() + "PRAGMA user_version = 18;")


def as_migration_17_left_it(conn: sqlite3.Connection) -> None:
    """Undo migrations 19 and 18 on a bank: usage_hours as migration 16 made it, no resumes table."""
    as_migration_18_left_it(conn)
    conn.executescript("DROP TABLE resumes; PRAGMA user_version = 17;")


def as_migration_16_left_it(conn: sqlite3.Connection) -> None:
    """Undo migrations 19 to 17 on a bank (every event indexed: the watermark at the last one): no resumes table,
    no watermark, and the index's triggers as migration 15 made them."""
    as_migration_17_left_it(conn)
    conn.executescript(
        "DROP TRIGGER events_fts_delete; DROP TRIGGER events_fts_update; DROP VIEW events_search; "
        + SEARCH_VIEW_AND_TRIGGERS.format(search_text=search_text(), search_text_old=search_text("old."),
                                           search_text_new=search_text("new."), columns="text, kind, tool_input")
        + "DROP TABLE index_watermark; PRAGMA user_version = 16;")


def as_migration_15_left_it(conn: sqlite3.Connection) -> None:
    """Undo migrations 19 to 16 on a bank: no resumes table, no watermark, no usage table (its triggers go
    with it) nor hourly sums."""
    as_migration_16_left_it(conn)
    conn.executescript("DROP TRIGGER usage_event_deleted; DROP TABLE usage; DROP TABLE usage_hours; "
                       "PRAGMA user_version = 15;")


def as_migration_14_left_it(conn: sqlite3.Connection) -> None:
    """Undo migrations 19 to 15 on a bank: tool calls indexed by their text alone, no injected column."""
    as_migration_15_left_it(conn)
    conn.executescript(
        f"INSERT INTO events_fts (events_fts, rowid, text) SELECT 'delete', id, {search_text()} FROM events "
        "WHERE kind = 'tool_call'; DROP TRIGGER events_fts_delete; DROP TRIGGER events_fts_update; "
        "DROP VIEW events_search; "
        + SEARCH_VIEW_AND_TRIGGERS.format(search_text=search_text_v1(), search_text_old=search_text_v1("old."),
                                           search_text_new=search_text_v1("new."), columns="text")
        + f"INSERT INTO events_fts (rowid, text) SELECT id, {search_text_v1()} FROM events WHERE kind = 'tool_call';"
        "DROP INDEX events_hit; CREATE INDEX events_hit ON events (id, session_id, recall); "
        "ALTER TABLE events DROP COLUMN injected; PRAGMA user_version = 14;")
