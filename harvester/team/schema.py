"""The team bank's schema on PostgreSQL: numbered migrations, owned by the harvester, in schema ``harvester``.

Append new migrations; never edit one that has shipped. :func:`migrate` applies what a server lacks, under
an advisory lock (two machines starting at once migrate once), and refuses a server whose schema is newer
than this harvester knows (:class:`TeamSchemaNewer`): an older harvester must not write rows a newer one
reads differently.

The tables, and why:

- ``machines``: one row per pushing bank (its machine id, kept in the local bank), with provenance (host
  as the team sees it, OS user, OS, harvester version). A machine id, not a host name: laptops share names.
- ``repositories``: the repository identity across machines, ``repo_key``: the normalized origin URL
  (``github.com/a/b`` for every spelling), or for a repository without a remote ``<machine id>:<root>``, so it
  stays that machine's; ``name`` is the bank id shown (``coding-agent::{gitProject}``).
- ``sessions``: unique by (harness, native id), owned by the machine that pushed it first (``machine_id``);
  another machine's push of the same session changes nothing (``INSERT ... ON CONFLICT ... WHERE``).
- ``events``: unique by (session, uid), as in the local bank; ``search`` is a ``tsvector`` (the ``simple``
  configuration: plain words, no stemming, as the local index) with a GIN index, made by the push from the text
  :func:`search_text` prepares on the pushing machine. Its text is what the local index holds: long tool output
  by its first 2 KiB and last 1 KiB, other texts up to 100,000 characters (a tsvector holds at most 1 MiB);
  every character that is neither a letter nor a digit is made a space first, so that words are cut as the
  local index (FTS5's unicode61) and the reader's queries (read.py) cut them: ``source`` is found in
  ``src/source.py``, ``notes.txt`` is the phrase "notes txt", ``frobnicate`` in “frobnicate” (PostgreSQL's
  parser alone keeps a path or a file name as one word, and its ``[[:punct:]]`` in the C locale knows ASCII
  punctuation only). Until migration 2 it was a generated column, punctuation made a space on the server by
  ``regexp_replace``: the rows pushed before keep the vector they were given.
"""

from __future__ import annotations

import re
from typing import Any

SCHEMA = "harvester"
LOCK_KEY = 0x68617276  # pg_advisory_xact_lock: "harv"


class TeamSchemaNewer(Exception):
    """The server's team schema was written by a newer harvester: refused."""

    def __init__(self, version: int, known: int) -> None:
        super().__init__(f"the team bank's schema is newer than this harvester (schema {version}; this version "
                         f"knows up to {known}): upgrade harvester on this machine to push to it or read it")


# Migration 1's search text, computed by the server for each row (migration 2 has the pushing machine prepare it).
SEARCH_TEXT = ("regexp_replace(CASE WHEN kind = 'tool_result' AND length(text) > 3072 "
               "THEN left(text, 2048) || E'\\n' || right(text, 1024) ELSE left(text, 100000) END, "
               "'[[:punct:]]+', ' ', 'g')")

MIGRATIONS: list[str] = [
    # 1: machines, repositories, sessions, events with their full-text index.
    f"""
    CREATE TABLE {SCHEMA}.machines (
        id uuid PRIMARY KEY,
        host text NOT NULL,
        os_user text NOT NULL,
        os text,
        harvester_version text,
        first_push_at timestamptz NOT NULL DEFAULT now(),
        last_push_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE {SCHEMA}.repositories (
        id bigserial PRIMARY KEY,
        repo_key text NOT NULL UNIQUE,
        name text NOT NULL,
        origin_url text,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE {SCHEMA}.sessions (
        id bigserial PRIMARY KEY,
        harness text NOT NULL,
        native_id text NOT NULL,
        machine_id uuid NOT NULL REFERENCES {SCHEMA}.machines (id),
        repository_id bigint NOT NULL REFERENCES {SCHEMA}.repositories (id),
        host text NOT NULL,
        os_user text NOT NULL,
        harvester_version text,
        bank_id text NOT NULL,
        cwd text,
        project text,
        repo_root text,
        origin_url text,
        origin_id text,
        branch text,
        commit_sha text,
        git_how text,
        git_error text,
        title text,
        title_source text,
        model text,
        agent_version text,
        started_at text,
        updated_at text,
        parent_native_id text,
        parent_kind text,
        state text NOT NULL,
        event_count integer NOT NULL DEFAULT 0,
        redactions integer NOT NULL DEFAULT 0,
        meta text,
        first_imported_at text NOT NULL,
        last_imported_at text NOT NULL,
        pushed_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (harness, native_id)
    );
    CREATE INDEX sessions_recent ON {SCHEMA}.sessions
        (repository_id, (coalesce(updated_at, started_at, last_imported_at)) DESC, id DESC);
    CREATE INDEX sessions_all_recent ON {SCHEMA}.sessions
        ((coalesce(updated_at, started_at, last_imported_at)) DESC, id DESC);
    CREATE INDEX sessions_machine ON {SCHEMA}.sessions (machine_id);
    CREATE TABLE {SCHEMA}.events (
        session_id bigint NOT NULL REFERENCES {SCHEMA}.sessions (id) ON DELETE CASCADE,
        uid text NOT NULL,
        seq integer NOT NULL,
        role text NOT NULL,
        kind text NOT NULL,
        text text NOT NULL,
        ts text,
        tool_name text,
        tool_input text,
        tool_call_id text,
        is_error boolean NOT NULL DEFAULT false,
        model text,
        tokens_in bigint,
        tokens_out bigint,
        tokens_cache_read bigint,
        tokens_cache_write bigint,
        tokens_reasoning bigint,
        meta text,
        content_hash text NOT NULL,
        recall boolean NOT NULL DEFAULT false,
        search tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, {SEARCH_TEXT})) STORED,
        PRIMARY KEY (session_id, uid)
    );
    CREATE INDEX events_seq ON {SCHEMA}.events (session_id, seq);
    CREATE INDEX events_search ON {SCHEMA}.events USING gin (search);
    """,
    # 2: the search vector made from the text the pushing machine prepared (search_text): the server no longer
    # runs a regular expression over every text (a tenth of its work in a push), and a word beside a curly quote
    # or a dash is a word, whatever the server's locale. The vectors there are kept as they are (no rewrite).
    f"ALTER TABLE {SCHEMA}.events ALTER COLUMN search DROP EXPRESSION",
]

TOOL_OUTPUT_CLIPPED = 3072  # tool output longer than this is indexed by its head and tail, as the local index does
TOOL_OUTPUT_HEAD, TOOL_OUTPUT_TAIL = 2048, 1024
TEXT_INDEXED = 100_000  # characters of any other text (a tsvector holds at most 1 MiB)
_ASCII_NOT_WORD = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum() and c not in " \t\n\r\f\v"})
_NOT_WORD = re.compile(r"(?:[^\w \t\n\r\f\v]|_)+")  # the characters between read.py's words (_WORD)


def search_text(kind: str, text: str) -> str:
    """The text an event's search vector is made of: the part the local index holds, with every character that
    is neither a letter nor a digit made a space (``str.translate`` for ASCII text, ~5x a regular expression)."""
    if kind == "tool_result" and len(text) > TOOL_OUTPUT_CLIPPED:
        text = text[:TOOL_OUTPUT_HEAD] + "\n" + text[-TOOL_OUTPUT_TAIL:]
    elif len(text) > TEXT_INDEXED:
        text = text[:TEXT_INDEXED]
    return text.translate(_ASCII_NOT_WORD) if text.isascii() else _NOT_WORD.sub(" ", text)



def version(conn: Any) -> int:
    """The schema version the server holds (0: none yet)."""
    row = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.schema_migrations",)).fetchone()
    if row[0] is None:
        return 0
    return conn.execute(f"SELECT coalesce(max(version), 0) FROM {SCHEMA}.schema_migrations").fetchone()[0]


def migrate(conn: Any) -> int:
    """Bring the server's schema up to date (each migration in its own transaction with its version row);
    returns the version. Raises :class:`TeamSchemaNewer` for a newer one, and changes nothing then."""
    from harvester import __version__

    known = len(MIGRATIONS)
    current = version(conn)
    if current > known:
        raise TeamSchemaNewer(current, known)
    if current == known:
        return current
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_migrations (version integer PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now(), harvester_version text)")
        current = version(conn)  # another machine may have migrated while this one waited for the lock
        if current > known:
            raise TeamSchemaNewer(current, known)
        for number in range(current + 1, known + 1):
            conn.execute(MIGRATIONS[number - 1])
            conn.execute(f"INSERT INTO {SCHEMA}.schema_migrations (version, harvester_version) VALUES (%s, %s)",
                         (number, __version__))
    return known
