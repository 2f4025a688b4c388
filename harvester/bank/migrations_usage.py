"""Migration 16 (harvester usage): the per-response usage table and its hourly sums, with the triggers that keep
them, built here because they are long; harvester/bank/migrations.py lists it in its place. Never edit what
has shipped: a change is a new migration."""

from __future__ import annotations

# How the copies of one response rank (harvester/bank/sqlite_usage.py): the largest, then the earliest, then the first
# stored. Migration 16's trigger is built with it: changing it means a new migration that makes the trigger again.
USAGE_RANK = "tokens_in + tokens_out + tokens_cache_read + tokens_cache_write DESC, coalesce(ts, '9999'), event_id"


# The input sizes usage_hours (migration 16) tells requests apart by: every tier start of genai-prices 0.2.5's
# catalogue (a tier prices a whole request by its whole input: harvester/usage/prices.py). A report whose catalogue
# has a tier start not in this list reads the responses themselves instead (harvester/usage/query.py).
USAGE_TIERS = (32000, 100000, 128000, 199999, 200000, 256000, 272000, 512000, 524288)


def usage_tier(row: str, tiers: tuple[int, ...] = USAGE_TIERS) -> str:
    """SQL for the largest of ``tiers`` a usage row's request input exceeds (0: none); ``row``: "", "new.",
    "old." or a table alias with its dot."""
    size = f"({row}tokens_in + {row}tokens_cache_read + {row}tokens_cache_write)"
    cases = " ".join(f"WHEN {size} > {t} THEN {t}" for t in sorted(tiers, reverse=True))
    return f"CASE {cases} ELSE 0 END" if tiers else "0"


def recorded_kind(row: str) -> str:
    """SQL for what the agent recorded of a usage row's cost, the key reports group by (and usage_hours' ``recorded``
    since migration 19): 0 nothing, 1 more than zero, 2 zero (opencode's for what a subscription pays). ``auto``
    calculates the cost of what was recorded as zero (harvester/usage/report.py), so those responses are never
    summed with priced ones. ``row``: "", "new.", "old." or a table alias with its dot; SQLite and PostgreSQL."""
    return f"CASE WHEN {row}cost IS NULL THEN 0 WHEN {row}cost > 0 THEN 1 ELSE 2 END"


def _usage_hours_triggers(recorded: str = "{row}cost IS NOT NULL") -> str:
    """The triggers that keep usage_hours the sum of the counted usage rows (migration 16; migration 19 makes them
    again with :func:`recorded_kind` as ``recorded``): a row counted adds, a row uncounted or deleted while counted
    subtracts (and a group left with no response goes). A usage row is never updated but for ``counted``: a revised
    event's row is deleted and inserted anew."""
    def key(row: str) -> str:
        return (f"coalesce(substr({row}ts, 1, 13), ''), {row}session_id, {row}harness, coalesce({row}model, ''), "
                f"{usage_tier(row)}, {recorded.format(row=row)}")

    sums = ("tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "tokens_cache_write_1h",
            "tokens_reasoning")
    add = (f"INSERT INTO usage_hours (hour, session_id, harness, model, tier, recorded, responses, {', '.join(sums)}, "
           f"cost) VALUES ({key('new.')}, 1, {', '.join('new.' + c for c in sums)}, coalesce(new.cost, 0)) "
           "ON CONFLICT DO UPDATE SET responses = responses + 1, "
           + ", ".join(f"{c} = {c} + excluded.{c}" for c in sums) + ", cost = cost + excluded.cost;")
    where = ("hour = coalesce(substr(old.ts, 1, 13), '') AND session_id = old.session_id AND harness = old.harness "
             f"AND model = coalesce(old.model, '') AND tier = {usage_tier('old.')} "
             f"AND recorded = ({recorded.format(row='old.')})")
    subtract = ("UPDATE usage_hours SET responses = responses - 1, " + ", ".join(f"{c} = {c} - old.{c}" for c in sums)
                + f", cost = cost - coalesce(old.cost, 0) WHERE {where};\n"
                f"        DELETE FROM usage_hours WHERE {where} AND responses <= 0;")
    return f"""
    CREATE TRIGGER usage_hours_insert AFTER INSERT ON usage WHEN new.counted = 1 BEGIN
        {add}
    END;
    CREATE TRIGGER usage_hours_delete AFTER DELETE ON usage WHEN old.counted = 1 BEGIN
        {subtract}
    END;
    CREATE TRIGGER usage_hours_counted AFTER UPDATE OF counted ON usage WHEN new.counted = 1 AND old.counted = 0
    BEGIN
        {add}
    END;
    CREATE TRIGGER usage_hours_uncounted AFTER UPDATE OF counted ON usage WHEN old.counted = 1 AND new.counted = 0
    BEGIN
        {subtract}
    END;
"""


def usage_migration() -> str:
    """Migration 16's script."""
    return f"""
    CREATE TABLE usage (
        event_id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL,
        harness TEXT NOT NULL,
        response TEXT NOT NULL,
        ts TEXT,
        model TEXT,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        tokens_cache_read INTEGER NOT NULL DEFAULT 0,
        tokens_cache_write INTEGER NOT NULL DEFAULT 0,
        tokens_cache_write_1h INTEGER NOT NULL DEFAULT 0,
        tokens_reasoning INTEGER NOT NULL DEFAULT 0,
        cost REAL,
        counted INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX usage_response ON usage (harness, response);
    CREATE INDEX usage_session ON usage (session_id, counted);
    CREATE INDEX usage_time ON usage (ts);
    CREATE TRIGGER usage_event_deleted AFTER DELETE ON events BEGIN
        DELETE FROM usage WHERE event_id = old.id;
    END;
    CREATE TRIGGER usage_deleted AFTER DELETE ON usage WHEN old.counted = 1 BEGIN
        UPDATE usage SET counted = 1 WHERE event_id = (SELECT event_id FROM usage WHERE harness = old.harness
            AND response = old.response ORDER BY {USAGE_RANK} LIMIT 1);
    END;
    -- What reports read: the counted responses summed by UTC hour, session, agent, model, input tier and whether
    -- the agent recorded a cost, kept by triggers as rows are counted and uncounted (a bank of a million events
    -- holds a few thousand of these where it holds a few hundred thousand responses). ``model`` is '' for none.
    CREATE TABLE usage_hours (
        hour TEXT NOT NULL,
        session_id INTEGER NOT NULL,
        harness TEXT NOT NULL,
        model TEXT NOT NULL,
        tier INTEGER NOT NULL,
        recorded INTEGER NOT NULL,
        responses INTEGER NOT NULL DEFAULT 0,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        tokens_cache_read INTEGER NOT NULL DEFAULT 0,
        tokens_cache_write INTEGER NOT NULL DEFAULT 0,
        tokens_cache_write_1h INTEGER NOT NULL DEFAULT 0,
        tokens_reasoning INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (hour, session_id, harness, model, tier, recorded)
    ) WITHOUT ROWID;
    CREATE INDEX usage_hours_session ON usage_hours (session_id);
    {_usage_hours_triggers()}
    INSERT INTO usage (event_id, session_id, harness, response, ts, model, tokens_in, tokens_out, tokens_cache_read,
                       tokens_cache_write, tokens_reasoning, cost, counted)
        SELECT e.id, e.session_id, s.harness, 'event:' || e.session_id || ':' || e.uid,
               strftime('%Y-%m-%dT%H:%M:%fZ', e.ts), e.model, coalesce(e.tokens_in, 0), coalesce(e.tokens_out, 0),
               coalesce(e.tokens_cache_read, 0), coalesce(e.tokens_cache_write, 0), coalesce(e.tokens_reasoning, 0),
               CASE WHEN json_valid(e.meta) AND json_type(e.meta, '$.cost') IN ('integer', 'real')
                    AND json_extract(e.meta, '$.cost') >= 0 THEN json_extract(e.meta, '$.cost') END, 1
        FROM events e JOIN sessions s ON s.id = e.session_id WHERE e.tokens_in IS NOT NULL;
    """


_HOURS_SUMS = ("tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "tokens_cache_write_1h",
               "tokens_reasoning")


def recorded_kinds_migration() -> str:
    """Migration 19's script: usage_hours keyed by :func:`recorded_kind`, its triggers made again with it and its
    rows summed again from the counted usage rows, in the migration's one transaction."""
    kind = recorded_kind("{row}")
    return f"""
    DROP TRIGGER IF EXISTS usage_hours_insert;
    DROP TRIGGER IF EXISTS usage_hours_delete;
    DROP TRIGGER IF EXISTS usage_hours_counted;
    DROP TRIGGER IF EXISTS usage_hours_uncounted;
    DELETE FROM usage_hours;
    INSERT INTO usage_hours (hour, session_id, harness, model, tier, recorded, responses, {', '.join(_HOURS_SUMS)},
                             cost)
        SELECT coalesce(substr(ts, 1, 13), ''), session_id, harness, coalesce(model, ''), {usage_tier('')},
               {recorded_kind('')}, count(*), {', '.join(f'sum({c})' for c in _HOURS_SUMS)}, coalesce(sum(cost), 0)
        FROM usage WHERE counted = 1 GROUP BY 1, 2, 3, 4, 5, 6;
    {_usage_hours_triggers(kind)}
    """
