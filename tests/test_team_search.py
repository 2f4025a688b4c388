"""The team bank's search vector (harvester/team/schema.py, push.py) on a real PostgreSQL: what a push makes
findable, and a team bank of the schema before (a generated search vector) migrated under its rows.

The words are cut as the local index (FTS5's unicode61) and the reader (read.py) cut them: at every character
that is neither a letter nor a digit. The test's server runs in the C locale, as ``initdb --no-locale`` makes
it, where PostgreSQL's own parser takes every non-ASCII character for a letter: a quoted word in a transcript,
“like this”, must still be the word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harvester.team.read import tsquery
from tests.test_team_push import Machine, pg_rows, team_events

TYPOGRAPHY = ("why is the “frobnicate” helper slow—again?",
              "l’outil «zorglub» runs a naïve cache… see §4 ‹quux›")
WORDS = ("frobnicate", "helper", "again", "outil", "zorglub", "naïve", "cache", "quux", '"frobnicate helper"',
         '"slow again"', '"naïve cache"')


def found(url: str, match: str) -> int:
    sql, args = tsquery(f'"{match}"' if not match.startswith('"') else match)
    return pg_rows(url, f"SELECT count(*) FROM harvester.events e WHERE e.search @@ {sql}", *args)[0][0]


def test_words_beside_quotes_and_dashes_are_found_as_the_local_index_finds_them(postgres_server: Any,
                                                                                 tmp_path: Path) -> None:
    url = postgres_server.uri("search_typography")
    m = Machine(tmp_path, "alpha", url)
    m.session(m.clone("shop", "git@github.com:acme/shop.git"), *TYPOGRAPHY)
    m.scan()
    m.push()
    assert team_events(url) == m.events()
    missed = [w for w in WORDS if found(url, w) != 1]
    assert missed == [], missed
    assert found(url, "frobnicate” helper") == 1  # the query's words are cut the same way
    assert found(url, '"helper frobnicate"') == 0  # a phrase keeps its order


def test_a_team_bank_of_the_generated_vector_is_migrated_under_its_rows(postgres_server: Any, tmp_path: Path,
                                                                        monkeypatch: Any) -> None:
    """A server set up by a harvester before migration 2 (search a generated column): the next push migrates it,
    keeps the rows there and their vectors as they were, and makes the vectors of what it pushes."""
    import psycopg

    from harvester.team import schema

    url = postgres_server.uri("search_migration")
    with psycopg.connect(url, autocommit=True) as conn, monkeypatch.context() as old:
        old.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
        assert schema.migrate(conn) == 1
        conn.execute("INSERT INTO harvester.machines (id, host, os_user) VALUES (gen_random_uuid(), 'old', 'dev')")
        conn.execute("INSERT INTO harvester.repositories (repo_key, name) VALUES ('old/repo', 'coding-agent::repo')")
        conn.execute("INSERT INTO harvester.sessions (harness, native_id, machine_id, repository_id, host, os_user, "
                     "bank_id, state, first_imported_at, last_imported_at) SELECT 'claude-code', 'old-1', m.id, r.id, "
                     "'old', 'dev', 'coding-agent::repo', 'ended', 'x', 'x' FROM harvester.machines m, "
                     "harvester.repositories r")
        conn.execute("INSERT INTO harvester.events (session_id, uid, seq, role, kind, text, content_hash) SELECT id, "
                     "'u1', 0, 'user', 'text', 'the legacy plan in notes.txt', 'h' FROM harvester.sessions")
    old_vector = pg_rows(url, "SELECT search::text FROM harvester.events")
    assert found(url, '"notes txt"') == 1

    m = Machine(tmp_path, "alpha", url)
    m.session(m.clone("shop", "git@github.com:acme/shop.git"), *TYPOGRAPHY)
    m.scan()
    m.push()
    assert [v for (v,) in pg_rows(url, "SELECT version FROM harvester.schema_migrations ORDER BY 1")] == [1, 2]
    assert pg_rows(url, "SELECT is_generated FROM information_schema.columns WHERE table_schema = 'harvester' "
                        "AND table_name = 'events' AND column_name = 'search'") == [("NEVER",)]
    assert pg_rows(url, "SELECT search::text FROM harvester.events WHERE uid = 'u1'") == old_vector
    assert team_events(url, m.machine_id) == m.events()
    assert found(url, '"notes txt"') == 1 and found(url, "legacy") == 1
    missed = [w for w in WORDS if found(url, w) != 1]
    assert missed == [], missed
    assert pg_rows(url, "SELECT count(*) FROM harvester.events WHERE search IS NULL") == [(0,)]
