"""Numbered schema migrations of the SQLite bank. ``PRAGMA user_version`` is the number applied.

Append new migrations; never edit one that has shipped.

Over 500 lines: the numbered migrations are one append-only list, each with its SQL and its reason inline,
read in order (the usage table's, the longest, is apart in migrations_usage.py).
"""

from __future__ import annotations

from harvester.bank.migrations_usage import recorded_kinds_migration, usage_migration


def search_text_v1(row: str = "") -> str:
    """SQL for the text the full-text index held of an event up to migration 15 (``row``: "", "new." or
    "old."): its text, long tool output by its first 2 KiB and last 1 KiB. Migration 1 is built with it, and
    migration 15 takes tool calls' entries out of the index with it: never change it."""
    return (f"CASE WHEN {row}kind = 'tool_result' AND length({row}text) > 3072 "
            f"THEN substr({row}text, 1, 2048) || char(10) || substr({row}text, -1024) ELSE {row}text END")


INPUT_INDEXED = 32 * 1024  # characters of a tool call's input strings that search finds (see search_text)


def search_text(row: str = "") -> str:
    """SQL for the text the full-text index holds of an event (``row``: "", "new." or "old.").

    Long tool output (file contents, build logs) is indexed by its first 2 KiB and last 1 KiB, where
    the command, the error and the summary are; conversation text is indexed whole; every text is
    stored whole and shown whole. Indexing all tool output would cost about three times the rest of
    an import (bench/bench_scan.py) for matches inside file dumps that the tool call already names.
    A tool call is indexed with every string of its input, up to INPUT_INDEXED characters of them: the
    strings an edit wrote (old and new), a file's written content, a patch, a grep pattern, a command line,
    a subagent's task (its text names only the tool and its main argument). Written by the agent, they are
    what a search for "where did it change that line" looks for; they were redacted as the text was.
    The view, the triggers and SqliteBank.apply are built with it: changing it means a new migration that
    takes the changed events out of the index with the old expression, recreates the view and the triggers,
    and indexes them again (as migration 15 does).
    """
    inputs = (f"(SELECT substr(group_concat(value, char(10)), 1, {INPUT_INDEXED}) "
              f"FROM json_tree({row}tool_input) WHERE type = 'text')")
    return (f"CASE WHEN {row}kind = 'tool_result' AND length({row}text) > 3072 "
            f"THEN substr({row}text, 1, 2048) || char(10) || substr({row}text, -1024) "
            f"WHEN {row}kind = 'tool_call' AND json_valid({row}tool_input) "
            f"THEN {row}text || char(10) || coalesce({inputs}, '') ELSE {row}text END")


# What the index holds of an event, its view and the triggers that keep the index when an event changes: built
# with one version of search_text (migrations 1 and 15).
SEARCH_VIEW_AND_TRIGGERS = """
    CREATE VIEW events_search AS SELECT id, {search_text} AS text FROM events;
    CREATE TRIGGER events_fts_delete AFTER DELETE ON events BEGIN
        INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, {search_text_old});
    END;
    CREATE TRIGGER events_fts_update AFTER UPDATE OF {columns} ON events BEGIN
        INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, {search_text_old});
        INSERT INTO events_fts (rowid, text) VALUES (new.id, {search_text_new});
    END;
"""


def strip_userinfo(table: str, column: str) -> str:
    """SQL that drops the userinfo (``user:password@``) of the URLs in ``table.column``.

    One statement drops up to the first "@" of the authority (the part after "://", before any "/", "?" or
    "#"); it is repeated so that a password holding "@" goes whole. What is left of a URL is what
    ``harvester.redact.urls.clean_url`` leaves of it, but for its query, which SQL does not parse."""
    rest = f"substr({column}, instr({column}, '://') + 3)"
    at = f"instr({rest}, '@')"
    inside = " AND ".join(f"(instr({rest}, '{c}') = 0 OR {at} < instr({rest}, '{c}'))" for c in "/?#")
    statement = (f"UPDATE {table} SET {column} = substr({column}, 1, instr({column}, '://') + 2) || "
                 f"substr({rest}, {at} + 1) WHERE instr({column}, '://') > 0 AND {at} > 0 AND {inside};\n")
    return statement * 3


def stored_repo_key(origin_id: str | None, repo_root: str | None, recorded_origin: str | None = None) -> str | None:
    """Migration 14's repository identity of a session (or a learned directory) from what the bank stored, with
    no probe (harvester/gitident.py says what the keys are): the probe's origin when it is one another clone
    shares; else the main worktree's path, which is always one of its repository's keys (so its sessions stay
    its own; ``harvester reparse`` files them by their first commit); else the origin the agent recorded; else
    unknown (None), which is what a directory outside git looks like in a bank of before: whether it existed
    when it was read was not kept. A SQL function while migrating (SqliteBank._migrate): keep it as it is."""
    from harvester.gitident import origin_key, shared_origin

    if shared_origin(origin_id):
        return f"origin:{origin_id}"
    if repo_root:
        return f"path:{repo_root}"
    return origin_key(recorded_origin)


# Python functions the migrations call, registered on the connection that migrates.
MIGRATION_FUNCTIONS = {"stored_repo_key": (3, stored_repo_key)}

MIGRATIONS: list[str] = [
    # 1: sessions, events (+ full-text index), sources with their cursors, problems, imports, and
    #    the directory -> repository facts learned by git probes.
    """
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        harness TEXT NOT NULL,
        native_id TEXT NOT NULL,
        bank_id TEXT NOT NULL,
        cwd TEXT,
        project TEXT,
        repo_root TEXT,
        origin_url TEXT,
        origin_id TEXT,
        branch TEXT,
        commit_sha TEXT,
        git_how TEXT,
        git_error TEXT,
        title TEXT,
        title_source TEXT,
        model TEXT,
        agent_version TEXT,
        started_at TEXT,
        updated_at TEXT,
        parent_native_id TEXT,
        parent_kind TEXT,
        state TEXT NOT NULL DEFAULT 'unknown',
        event_count INTEGER NOT NULL DEFAULT 0,
        last_seq INTEGER NOT NULL DEFAULT 0,
        redactions INTEGER NOT NULL DEFAULT 0,
        meta TEXT,
        first_imported_at TEXT NOT NULL,
        last_imported_at TEXT NOT NULL,
        UNIQUE (harness, native_id)
    );
    CREATE INDEX sessions_bank ON sessions (bank_id, updated_at);
    CREATE INDEX sessions_root ON sessions (repo_root);

    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        uid TEXT NOT NULL,
        role TEXT NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        ts TEXT,
        tool_name TEXT,
        tool_input TEXT,
        tool_call_id TEXT,
        is_error INTEGER NOT NULL DEFAULT 0,
        model TEXT,
        tokens_in INTEGER,
        tokens_out INTEGER,
        tokens_cache_read INTEGER,
        tokens_cache_write INTEGER,
        tokens_reasoning INTEGER,
        meta TEXT,
        content_hash TEXT NOT NULL,
        UNIQUE (session_id, uid)
    );
    -- No (session_id, seq) index: a session's events are appended in seq order, so the
    -- UNIQUE (session_id, uid) index plus rowid order serve "events of a session, in order".

    -- What search sees of an event: see search_text_v1() above.
    CREATE VIEW events_search AS SELECT id, {search_text} AS text FROM events;
    CREATE VIRTUAL TABLE events_fts USING fts5 (
        text, content = 'events_search', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
    );
    -- New events are indexed by SqliteBank.apply with one INSERT ... SELECT per write: a trigger
    -- per row costs 1.7x as much (bench/bench_scan.py). Deletes and edits are rare: triggers.
    CREATE TRIGGER events_fts_delete AFTER DELETE ON events BEGIN
        INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, {search_text_old});
    END;
    CREATE TRIGGER events_fts_update AFTER UPDATE OF text ON events BEGIN
        INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, {search_text_old});
        INSERT INTO events_fts (rowid, text) VALUES (new.id, {search_text_new});
    END;

    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        harness TEXT NOT NULL,
        path TEXT NOT NULL UNIQUE,
        format TEXT NOT NULL,
        device INTEGER,
        inode INTEGER,
        size INTEGER,
        mtime_ns INTEGER,
        offset INTEGER NOT NULL DEFAULT 0,
        line INTEGER NOT NULL DEFAULT 0,
        head_len INTEGER NOT NULL DEFAULT 0,
        head_hash TEXT,
        tail_hash TEXT,
        parser_state TEXT,
        generation INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'ok',
        error TEXT,
        first_seen_at TEXT NOT NULL,
        last_read_at TEXT,
        last_checked_at TEXT
    );
    CREATE INDEX sources_harness ON sources (harness);

    CREATE TABLE problems (
        id INTEGER PRIMARY KEY,
        harness TEXT NOT NULL,
        source_path TEXT NOT NULL,
        line INTEGER NOT NULL DEFAULT 0,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL,
        first_seen_at TEXT NOT NULL,
        last_seen_at TEXT NOT NULL,
        UNIQUE (source_path, line, kind)
    );
    CREATE INDEX problems_harness ON problems (harness, kind);

    CREATE TABLE imports (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        harness TEXT NOT NULL,
        session_id INTEGER NOT NULL,
        source_path TEXT NOT NULL,
        events_added INTEGER NOT NULL
    );
    CREATE INDEX imports_session ON imports (session_id, at);

    CREATE TABLE directories (
        path TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        root TEXT,
        origin_url TEXT,
        origin_id TEXT,
        probed_at TEXT NOT NULL
    );
    """.format(search_text=search_text_v1(), search_text_new=search_text_v1("new."),
               search_text_old=search_text_v1("old.")),
    # 2: sessions excluded by configuration. Their content is never stored; this remembers that a
    #    session (which names its cwd only in its first records) was excluded, so later records of it
    #    are dropped too.
    """
    CREATE TABLE excluded_sessions (
        harness TEXT NOT NULL,
        native_id TEXT NOT NULL,
        excluded_at TEXT NOT NULL,
        PRIMARY KEY (harness, native_id)
    ) WITHOUT ROWID;
    -- The source a session was last read from: the service re-reads it while the session is live.
    ALTER TABLE sessions ADD COLUMN source_path TEXT;
    CREATE INDEX sessions_state ON sessions (state);
    """,
    # 3: where an event belongs when its agent stores events out of order (Event.place); the session
    #    is renumbered by it when one arrives before events already held.
    """
    ALTER TABLE events ADD COLUMN place TEXT;
    """,
    # 4: the sessions of one directory, for linking forks that copy their parent's history.
    """
    CREATE INDEX sessions_cwd ON sessions (harness, cwd);
    """,
    # 5: an event that is the harvester's own answer seen again (an MCP tool result, a pasted brief) is
    #    marked, so that search, briefs and exports leave it out (harvester/recall/frame.py); and a session's
    #    events by position, which paging (get_events) and briefs read.
    """
    ALTER TABLE events ADD COLUMN recall INTEGER NOT NULL DEFAULT 0;
    UPDATE events SET recall = 1 WHERE json_extract(meta, '$.recall') = 1;
    CREATE INDEX events_session_seq ON events (session_id, seq);
    """,
    # 6: the raw archive's index (harvester/capture/archive: what each chunk appended, each document version, each
    #    distinct database row), where every event was read (reparse and forget work source by source), and
    #    which parser version made each session (status says when a reparse would change it).
    """
    CREATE TABLE archive_frames (
        source_id INTEGER NOT NULL,
        kind TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        length INTEGER NOT NULL,
        src_start INTEGER,
        src_end INTEGER,
        records INTEGER,
        at TEXT NOT NULL,
        PRIMARY KEY (source_id, kind, epoch, seq)
    ) WITHOUT ROWID;
    CREATE TABLE archive_docs (
        source_id INTEGER NOT NULL,
        version INTEGER NOT NULL,
        part INTEGER NOT NULL,
        digest TEXT NOT NULL,
        whole INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL DEFAULT 0,
        at TEXT NOT NULL,
        PRIMARY KEY (source_id, version, part)
    ) WITHOUT ROWID;
    CREATE INDEX archive_docs_digest ON archive_docs (digest);
    -- Whole event texts (past the bank's clipped copy), by the source whose events hold them.
    CREATE TABLE archive_texts (
        source_id INTEGER NOT NULL,
        digest TEXT NOT NULL,
        size INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (source_id, digest)
    ) WITHOUT ROWID;
    CREATE INDEX archive_texts_digest ON archive_texts (digest);
    CREATE TABLE archive_rows (
        source_id INTEGER NOT NULL,
        digest TEXT NOT NULL,
        PRIMARY KEY (source_id, digest)
    ) WITHOUT ROWID;
    ALTER TABLE events ADD COLUMN source_id INTEGER;
    CREATE INDEX events_source ON events (source_id);
    -- Every source that wrote to a session (its events, or only its fields: a parent's transcript names its
    -- sub-agents, an index file their titles): reparse rebuilds such sources together.
    CREATE TABLE session_sources (
        session_id INTEGER NOT NULL,
        source_id INTEGER NOT NULL,
        PRIMARY KEY (session_id, source_id)
    ) WITHOUT ROWID;
    CREATE INDEX session_sources_source ON session_sources (source_id);
    INSERT OR IGNORE INTO session_sources (session_id, source_id)
        SELECT s.id, src.id FROM sessions s JOIN sources src ON src.path = s.source_path;
    ALTER TABLE sessions ADD COLUMN parser_version INTEGER;
    -- Why a session is never stored (excluded by the configuration, or forgotten), and the source it was
    -- read from: what is read there later that names no session is not archived either.
    ALTER TABLE excluded_sessions ADD COLUMN reason TEXT;
    ALTER TABLE excluded_sessions ADD COLUMN source_path TEXT;
    CREATE INDEX excluded_sessions_source ON excluded_sessions (source_path);
    -- Where a source was found (its root and kind), so that it can be parsed again when its file is gone.
    ALTER TABLE sources ADD COLUMN root TEXT;
    ALTER TABLE sources ADD COLUMN variant TEXT;
    -- harvester reparse goes source by source; a run that was stopped goes on where it stood.
    CREATE TABLE reparse_runs (
        id INTEGER PRIMARY KEY,
        filter TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT
    );
    ALTER TABLE sources ADD COLUMN reparse_run INTEGER;
    -- Why the archive lacks part of a source's records that the bank's sessions came from (retention removed
    -- them, or a forgotten session's could not be told apart from theirs); NULL: it holds them all.
    -- reparse reads such a source from its file, or leaves its sessions as they are.
    ALTER TABLE sources ADD COLUMN archive_gap TEXT;
    """,
    # 7: what search asks of every full-text hit (its session, whether it is recall), in an index it reads
    #    instead of the event's row: rows hold whole texts, a few to a page, so reading one per hit cost search
    #    a page per hit (harvester/bank/sqlite_recall.py names it: the planner prefers the table).
    #    And sessions newest first (sessions, recent_sessions): read in order, not sorted.
    """
    CREATE INDEX events_hit ON events (id, session_id, recall);
    CREATE INDEX sessions_recent ON sessions (coalesce(updated_at, started_at, last_imported_at) DESC, id DESC);
    """,
    # 8: the sinks' outbox (harvester/sinks). Every write that touches a session stamps it with the next value
    #    of one clock, in the write's own transaction; a sink takes the sessions stamped after its watermark
    #    into its queue (sink_documents), so nothing captured is missed by a sink that was stopped, offline or
    #    killed. sink_documents is the per-document cursor: what the sink holds of a session (where, how
    #    many lines, a fingerprint of them), the payload in flight, retries, the last error.
    """
    ALTER TABLE sessions ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX sessions_changed ON sessions (changed);
    CREATE TABLE change_clock (n INTEGER NOT NULL);
    INSERT INTO change_clock (n) VALUES (1);
    UPDATE sessions SET changed = 1;  -- what the bank held before: new to every sink
    CREATE TABLE sinks (
        sink TEXT PRIMARY KEY,
        watermark INTEGER NOT NULL DEFAULT 0,
        last_success_at TEXT,
        last_error TEXT,
        last_error_at TEXT
    );
    CREATE TABLE sink_documents (
        sink TEXT NOT NULL,
        harness TEXT NOT NULL,
        native_id TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        bank TEXT,
        document_id TEXT,
        lines INTEGER NOT NULL DEFAULT 0,
        fingerprint TEXT,
        in_flight TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_try_at TEXT,
        last_error TEXT,
        queued_at TEXT,
        first_sent_at TEXT,
        last_sent_at TEXT,
        PRIMARY KEY (sink, harness, native_id)
    ) WITHOUT ROWID;
    CREATE INDEX sink_documents_state ON sink_documents (sink, state, next_try_at);
    """,
    # 9: the team bank's outbox (harvester/team). Every event carries the change clock's value of the write that
    #    added, revised, marked or renumbered it, so a push sends what changed since it last pushed a session;
    #    team_sessions is the per-session cursor (what was pushed, up to which clock, who owns it there). Deleting
    #    a pushed session's events (reparse, forget, exclusion) flags it to be rebuilt there (resync), deleting
    #    the session to be deleted there. bank_facts holds this bank's machine id, its identity in a team bank.
    """
    ALTER TABLE events ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE team_sessions (
        harness TEXT NOT NULL,
        native_id TEXT NOT NULL,
        session_pk INTEGER,
        state TEXT NOT NULL DEFAULT 'pending',
        pushed_clock INTEGER NOT NULL DEFAULT -1,
        pushed_events INTEGER NOT NULL DEFAULT 0,
        resync INTEGER NOT NULL DEFAULT 0,
        owner TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_try_at TEXT,
        last_error TEXT,
        queued_at TEXT,
        last_pushed_at TEXT,
        PRIMARY KEY (harness, native_id)
    ) WITHOUT ROWID;
    CREATE INDEX team_sessions_pk ON team_sessions (session_pk);
    CREATE INDEX team_sessions_state ON team_sessions (state, next_try_at);
    CREATE TRIGGER team_events_deleted AFTER DELETE ON events BEGIN
        UPDATE team_sessions SET resync = resync + 1, state = 'pending' WHERE session_pk = old.session_id;
    END;
    CREATE TRIGGER team_session_deleted AFTER DELETE ON sessions BEGIN
        UPDATE team_sessions SET resync = resync + 1, state = 'pending' WHERE session_pk = old.id;
    END;
    CREATE TABLE bank_facts (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 10: the bank's recall key, a secret of its own: what harvester hands to agents is sealed with it
    #     (harvester/recall/frame.py), so that ingest tells the harvester's own answers seen again in a transcript
    #     from text that only looks like them. 32 random bytes from SQLite's generator (ChaCha20 seeded from the
    #     system's randomness); the file is 0600 and no command shows bank_facts.
    """
    INSERT OR IGNORE INTO bank_facts (key, value) VALUES ('recall_key', lower(hex(randomblob(32))));
    """,
    # 11: the raw archive is checked on every read (harvester/capture/archive/integrity.py). Each frame's digest, sha256
    #    of its uncompressed bytes (a stream's: the source's bytes [src_start, src_end), so the agent's file can
    #    be checked against it frame by frame); frames archived before have none and are checked by their
    #    structure. And what was found damaged, by source and part (a frame, a blob): status shows it, and
    #    reparse leaves the sessions of a source whose archive is damaged as the bank has them.
    """
    ALTER TABLE archive_frames ADD COLUMN digest TEXT;
    CREATE TABLE archive_damage (
        source_id INTEGER NOT NULL,
        part TEXT NOT NULL,
        detail TEXT NOT NULL,
        found_at TEXT NOT NULL,
        PRIMARY KEY (source_id, part)
    ) WITHOUT ROWID;
    """,
    # 12: the origin URLs stored before issue 23 lose their userinfo (a token a CI checkout put in a remote, as
    #    Codex records it in session_meta.git.repository_url); new ones are cleaned before the bank.
    strip_userinfo("sessions", "origin_url") + strip_userinfo("directories", "origin_url"),
    # 13: forget for good (harvester/bank/forget.py). The folders `export` wrote into, so that forget removes a session's
    #     files there too; the records of forgotten sessions, by a hash of their id and content (never their text),
    #     so that a fork or a resume that copies them does not bring them back (the id is the version ingest
    #     compares: any forget changes the largest); and a forget's work outside the bank's transaction (the
    #     archive's files, the exported files, the index's merge, the log), written in that transaction, so that
    #     the next process to open the bank for writing finishes what a kill -9 stopped.
    """
    CREATE TABLE export_folders (
        path TEXT PRIMARY KEY,
        first_written_at TEXT NOT NULL,
        last_written_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE forgotten_records (
        id INTEGER PRIMARY KEY,
        harness TEXT NOT NULL,
        key TEXT NOT NULL,
        UNIQUE (harness, key)
    );
    CREATE TABLE pending_purges (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        work TEXT NOT NULL
    );
    """,
    # 14: each session's repository identity (harvester/gitident.py: origin, first commit, main worktree path;
    #     NULL: unknown), which every read is scoped by instead of the bank id (a folder's name, which unrelated
    #     repositories share); and the identity each learned directory had, so that a deleted clone still maps.
    #     Filled from what is stored (stored_repo_key above); reparse refines it.
    """
    ALTER TABLE sessions ADD COLUMN repo_key TEXT;
    UPDATE sessions SET repo_key = stored_repo_key(origin_id, repo_root, origin_url);
    CREATE INDEX sessions_repo_key ON sessions (repo_key);
    ALTER TABLE directories ADD COLUMN repo_key TEXT;
    UPDATE directories SET repo_key = stored_repo_key(origin_id, root, NULL);
    """,
    # 15: what an agent changed, searched for and ran is found: a tool call is indexed with the strings of its
    #     input (search_text). Its old entry is taken out of the index with the expression it was made with
    #     (external content: a 'delete' must be given the text that was indexed), the view and the triggers
    #     are made again, and tool calls are indexed anew; the update trigger also follows an event's kind and
    #     input. And context an agent injected into the conversation (harvester.model.is_injected) is marked
    #     in a column beside recall, which search's index of hits (events_hit) holds: search leaves it out
    #     unless asked, without reading each hit's row.
    """
    INSERT INTO events_fts (events_fts, rowid, text)
        SELECT 'delete', id, {search_text_v1} FROM events WHERE kind = 'tool_call';
    DROP TRIGGER events_fts_delete;
    DROP TRIGGER events_fts_update;
    DROP VIEW events_search;
    {view_and_triggers}
    INSERT INTO events_fts (rowid, text) SELECT id, {search_text} FROM events WHERE kind = 'tool_call';
    ALTER TABLE events ADD COLUMN injected INTEGER NOT NULL DEFAULT 0;
    UPDATE events SET injected = 1 WHERE json_extract(meta, '$.injected') = 1;
    DROP INDEX events_hit;
    CREATE INDEX events_hit ON events (id, session_id, recall, injected);
    """.format(search_text_v1=search_text_v1(), search_text=search_text(),
               view_and_triggers=SEARCH_VIEW_AND_TRIGGERS.format(
                   search_text=search_text(), search_text_old=search_text("old."), search_text_new=search_text("new."),
                   columns="text, kind, tool_input")),
    # 16: what the agents cost (harvester usage): one row per event carrying a model response's token usage, keyed
    #     by the response (harvester/bank/sqlite_usage.py says how a response repeated across records, sessions
    #     and files is counted once: ``counted``), with the agent's recorded cost and the hour-long cache writes
    #     the events' columns lack. Written with its event, gone with it (a trigger); reparse rebuilds it with the
    #     agents' response ids. Filled here from the events' columns, each event its own response. And the counted
    #     responses summed by hour, session, agent, model and input tier (usage_hours), which reports read; the
    #     script is long: harvester/bank/migrations_usage.py.
    usage_migration(),
    # 17: the full-text index may lag the events, up to a watermark (harvester/bank/sqlite_index.py): a large scan
    #     commits each source's events without indexing them and indexes them afterwards in large batches, outside
    #     any source's transaction (a transaction per source left an index segment each, and held the write lock
    #     through it). Every event up to `indexed_through` is in the index, none after it; so the triggers that
    #     take an event out of the index (deleted, or changed in place) act only at or under the watermark: an event
    #     above it is indexed as it is when the index catches up. The watermark starts at the last event: every
    #     event a bank held was indexed in its own transaction.
    """
    CREATE TABLE index_watermark (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        indexed_through INTEGER NOT NULL
    );
    INSERT INTO index_watermark (id, indexed_through) SELECT 1, coalesce(max(id), 0) FROM events;
    DROP TRIGGER events_fts_delete;
    DROP TRIGGER events_fts_update;
    CREATE TRIGGER events_fts_delete AFTER DELETE ON events
    WHEN old.id <= (SELECT indexed_through FROM index_watermark) BEGIN
        INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, {search_text_old});
    END;
    CREATE TRIGGER events_fts_update AFTER UPDATE OF text, kind, tool_input ON events
    WHEN old.id <= (SELECT indexed_through FROM index_watermark) BEGIN
        INSERT INTO events_fts (events_fts, rowid, text) VALUES ('delete', old.id, {search_text_old});
        INSERT INTO events_fts (rowid, text) VALUES (new.id, {search_text_new});
    END;
    """.format(search_text_old=search_text("old."), search_text_new=search_text("new.")),
    # 18: `harvester resume` (harvester/resume) writes a session into another agent's store under a new id; the
    #     copy is recorded first, by that id and the uids its copied records will have when the agent's own
    #     session is read back, so that ingest marks those events as copies (recall, meta.copied_from) and the
    #     session as resumed from its source (harvester/bank/sqlite_resumes.py): the copied turns are counted
    #     once, in their source.
    """
    CREATE TABLE resumes (
        id INTEGER PRIMARY KEY,
        source_harness TEXT NOT NULL,
        source_native_id TEXT NOT NULL,
        source_upto INTEGER,
        target_harness TEXT NOT NULL,
        target_native_id TEXT NOT NULL,
        copied_events INTEGER NOT NULL,
        copied_uids TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (target_harness, target_native_id)
    );
    """,
    # 19: `harvester usage --cost auto` calculates what an agent recorded as costing zero (opencode, for what a
    #     subscription pays) and takes the recorded cost where it is more: usage_hours told only whether a cost
    #     was recorded, so a zero and a price of one model and hour summed into one group, and the zero's
    #     responses went uncalculated. Its ``recorded`` becomes 0 none, 1 more than zero, 2 zero (the triggers
    #     made again, the sums rebuilt from the counted rows: harvester/bank/migrations_usage.py).
    recorded_kinds_migration(),
]
