"""Where opencode, its forks (Kilo CLI, MiMoCode, iCodeMate) and ZCode keep their stores, and the queries that read
them: the harnesses' names, roots, source kinds and process names (the registry's half of
harvester/parsers/opencode.py, whose docstring gives the format facts and their sources)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harvester.parsers.base import SourceSpec, SqliteQuery
from harvester.parsers.opencode_storage import project_storage_related, storage_related

OPENCODE_NAME = "opencode"
KILO_NAME = "kilo"
ZCODE_NAME = "zcode"
MIMOCODE_NAME = "mimocode"
ICODEMATE_NAME = "icodemate"


def _data_dir(env: Mapping[str, str], home: Path, app: str) -> Path:
    # xdg-basedir on every OS (macOS and Windows included): $XDG_DATA_HOME, else ~/.local/share.
    return Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / app


def _db_override(env: Mapping[str, str], variable: str, data: Path) -> list[Path]:
    """The folder of the database ``$OPENCODE_DB``/``$KILO_DB`` names (absolute, or relative to the
    data dir, as the agents resolve it). A root is a folder: there, files matching the SOURCES
    patterns (``opencode*.db``, ``kilo*.db``) are read."""
    value = env.get(variable)
    if not value or value == ":memory:":
        return []
    path = Path(value)
    return [(path if path.is_absolute() else data / path).parent]


# The data dir first: its storage/ tree is then read before any database (see SOURCES).
def opencode_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    data = _data_dir(env, home, "opencode")
    return [data, *_db_override(env, "OPENCODE_DB", data)]


def kilo_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    data = _data_dir(env, home, "kilo")
    return [data, *_db_override(env, "KILO_DB", data)]


def mimocode_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [_data_dir(env, home, "mimocode")]  # as its reader has it; no variable of MiMoCode's own is known


def icodemate_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [_data_dir(env, home, "icodemate")]  # as its reader has it; no variable of iCodeMate's own is known


def zcode_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # ZCode (Z.ai): <home>/.zcode/cli/db/db.sqlite on every OS (%USERPROFILE% on Windows). Its
    # config.json can move it (storage.sessionDbPath): a file, not a variable, so not followed here.
    return [home / ".zcode" / "cli" / "db"]


# json_remove: drop the heavy fields nothing here reads (a user message's file diffs and system prompt).
_SLIM = ("CASE WHEN json_valid({0}) THEN json_remove({0}, '$.summary.diffs', '$.system', '$.tools', "
         "'$.structured', '$.format') ELSE {0} END")
# A row's time_updated is taken (Date.now()) before its write waits for the lock (busy_timeout 5 s), so
# a row can commit after a newer one was read: each read goes back 10 s (re-reads are harmless: uids).
_SINCE = ":since - 10000"
# Columns present since the first migration (opencode 1.2), so older databases read too.
QUERIES = (
    SqliteQuery(
        "session",
        "SELECT s.id, s.parent_id, s.slug, s.directory, s.title, s.version, s.time_created, s.time_updated, "
        "s.time_archived, p.worktree FROM session s LEFT JOIN project p ON p.id = s.project_id "
        f"WHERE s.time_updated >= {_SINCE} ORDER BY s.time_updated, s.id",
        "time_updated", ordered=True,
    ),
    SqliteQuery(
        "message",
        f"SELECT m.id, m.session_id, m.time_created, m.time_updated, {_SLIM.format('m.data')} AS data, "
        "(SELECT l.id FROM message l WHERE l.session_id = m.session_id "
        "ORDER BY l.time_created DESC, l.id DESC LIMIT 1) = m.id AS is_last "
        f"FROM message m WHERE m.time_updated >= {_SINCE} ORDER BY m.time_updated, m.id",
        "time_updated", ordered=True,
    ),
    SqliteQuery(
        "part",
        f"SELECT p.id, p.message_id, p.session_id, p.time_updated, p.data, m.time_created AS message_time, "
        f"{_SLIM.format('m.data')} AS message, s.parent_id AS session_parent, "
        "(SELECT f.id FROM message f WHERE f.session_id = p.session_id "
        "ORDER BY f.time_created, f.id LIMIT 1) AS first_message "
        "FROM part p LEFT JOIN message m ON m.id = p.message_id LEFT JOIN session s ON s.id = p.session_id "
        f"WHERE p.time_updated >= {_SINCE} ORDER BY p.time_updated, p.id",
        "time_updated", ordered=True,
    ),
)

# The storage/ tree is NOT shadowed by the database: opencode 1.18 no longer ships the JSON-to-SQLite
# migration (Kilo 7.7 still does), so an install that skipped the 1.2-era versions keeps sessions only
# there. Both layouts give the same native ids and uids, so a migrated session is stored once; the tree
# comes first (spec and root order) so that the database's newer versions are the ones that stay.
OPENCODE_SOURCES = (
    # Before Storage's first migration (0.1-0.3): a tree per project; those it skipped are only there.
    SourceSpec("project/*/storage/session/info/*.json", "json", "legacy", related=project_storage_related),
    SourceSpec("storage/session/*/*.json", "json", "legacy", related=storage_related),
    SourceSpec("opencode*.db", "sqlite", "db", watch=False, queries=QUERIES),
)
KILO_SOURCES = (
    SourceSpec("storage/session/*/*.json", "json", "legacy", related=storage_related),
    SourceSpec("kilo*.db", "sqlite", "db", watch=False, queries=QUERIES),
    # Kilo keeps using an opencode-<channel>.db it finds in its own data dir (non-release channels).
    SourceSpec("opencode-*.db", "sqlite", "db", watch=False, queries=QUERIES),
)
# MiMoCode: the session documents in storage/session_diff/<projectID>/ (where opencode keeps a session's file
# diffs, one level up: storage/session_diff/<sessionID>.json, never matched here), the database mimocode.db.
MIMOCODE_SOURCES = (
    SourceSpec("storage/session_diff/*/*.json", "json", "legacy", related=storage_related),
    SourceSpec("mimocode.db", "sqlite", "db", watch=False, queries=QUERIES),
)
ICODEMATE_SOURCES = (  # iCodeMate: MiMoCode's layout
    SourceSpec("storage/session_diff/*/*.json", "json", "legacy", related=storage_related),
    SourceSpec("icodemate.db", "sqlite", "db", watch=False, queries=QUERIES),
)

# ZCode's database: only the columns two readers of real stores agree on (fixtures/zcode/SOURCE.md). No
# time_updated is known on message or part, so a row is read again while its session's time_updated
# (or its message's time_created) is past the watermark: a session touched is read whole, uids dedupe.
# Times are epoch milliseconds, or ISO 8601 text in the shape a reader's fixtures keep (agentsview's TEXT
# columns): text that starts like a date is turned into milliseconds here, so both read alike.
_ZCODE_MS = ("(CASE WHEN {0} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' "
             "THEN CAST(ROUND((julianday({0}) - 2440587.5) * 86400000) AS INTEGER) ELSE {0} END)")
_ZCODE_MARK = (f"MAX(COALESCE({_ZCODE_MS.format('s.time_updated')}, 0), "
               f"COALESCE({_ZCODE_MS.format('m.time_created')}, 0))")
ZCODE_QUERIES = (
    SqliteQuery(
        "session",
        f"SELECT s.id, s.directory, s.title, {_ZCODE_MS.format('s.time_created')} AS time_created, "
        f"{_ZCODE_MS.format('s.time_updated')} AS time_updated FROM session s "
        f"WHERE {_ZCODE_MS.format('s.time_updated')} >= {_SINCE} ORDER BY 5, s.id",
        "time_updated", ordered=True,
    ),
    SqliteQuery(
        "message",
        f"SELECT m.id, m.session_id, {_ZCODE_MS.format('m.time_created')} AS time_created, "
        f"{_SLIM.format('m.data')} AS data, {_ZCODE_MARK} AS mark, "
        "(SELECT l.id FROM message l WHERE l.session_id = m.session_id "
        "ORDER BY l.time_created DESC, l.id DESC LIMIT 1) = m.id AS is_last "
        f"FROM message m LEFT JOIN session s ON s.id = m.session_id WHERE {_ZCODE_MARK} >= {_SINCE} "
        "ORDER BY mark, m.id",
        "mark", ordered=True,
    ),
    SqliteQuery(
        "part",
        f"SELECT p.id, p.message_id, p.session_id, p.data, {_ZCODE_MS.format('m.time_created')} AS message_time, "
        f"{_SLIM.format('m.data')} AS message, {_ZCODE_MARK} AS mark, "
        "(SELECT f.id FROM message f WHERE f.session_id = p.session_id "
        "ORDER BY f.time_created, f.id LIMIT 1) AS first_message "
        "FROM part p LEFT JOIN message m ON m.id = p.message_id LEFT JOIN session s ON s.id = p.session_id "
        f"WHERE {_ZCODE_MARK} >= {_SINCE} ORDER BY mark, p.id",
        "mark", ordered=True,
    ),
)
ZCODE_SOURCES = (SourceSpec("db.sqlite", "sqlite", "db", watch=False, queries=ZCODE_QUERIES),)

# npm's node launchers (opencode-ai, @kilocode/cli) start native binaries named opencode and kilo.
OPENCODE_PROCESSES = ("opencode", "opencode.exe")
KILO_PROCESSES = ("kilo", "kilocode", "kilo.exe", "@kilocode/cli")
ZCODE_PROCESSES = ("zcode", "zcode.exe")
MIMOCODE_PROCESSES = ("mimocode", "mimocode.exe")
ICODEMATE_PROCESSES = ("icodemate", "icodemate.exe")
