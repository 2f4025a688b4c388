"""The one SQL aggregate every usage report starts from: the counted responses of the usage table (migration 16),
summed by time slot, agent, model, input tier and whether the agent recorded a cost (and by session or repository
when the report needs it). A report then maps the slots to its days in its time zone, prices each group by
arithmetic (harvester/usage/prices.py) and adds them up: a bank of a million events holds a few hundred thousand
responses, which SQLite sums in one pass, and a year of them is a few thousand groups.

Reads only; the bank's rows are read as they are committed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvester.bank.migrations import USAGE_TIERS

if TYPE_CHECKING:
    from harvester.recall.scope import Scope

# The input a genai-prices tier compares (harvester/usage/prices.py): every input token of the request.
REQUEST_INPUT = "(u.tokens_in + u.tokens_cache_read + u.tokens_cache_write)"
SUMS = ("count(*), sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cache_read), sum(u.tokens_cache_write), "
        "sum(u.tokens_cache_write_1h), sum(u.tokens_reasoning), sum(u.cost), min(u.ts), max(u.ts)")


@dataclass(frozen=True, slots=True)
class Filter:
    """Which responses: ``start``/``end``: UTC bounds of their time (``end`` excluded); agents; models (each a
    part of the model's name, or a glob); the repositories of ``scope`` (None: every one)."""

    start: str | None = None
    end: str | None = None
    harnesses: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    scope: Scope | None = None

    def where(self, hours: bool = False) -> tuple[str, list[Any], bool]:
        """The WHERE clause on ``usage u`` (``hours``: on ``usage_hours u``, whose times are whole UTC hours: the
        bounds must be too), joined to ``sessions s`` when the third value says so."""
        clauses, args, joins = ["1" if hours else "u.counted = 1"], [], False
        column, cut = ("u.hour", 13) if hours else ("u.ts", 24)
        if self.start is not None:
            clauses.append(f"{column} >= ?")
            args.append(self.start[:cut])
        if self.end is not None:
            clauses.append(f"{column} < ?")
            args.append(self.end[:cut])
        if self.harnesses:
            clauses.append(f"u.harness IN ({', '.join('?' * len(self.harnesses))})")
            args += self.harnesses
        if self.models:
            clauses.append("(" + " OR ".join("u.model GLOB ?" for _ in self.models) + ")")
            args += [m if any(c in m for c in "*?[") else f"*{m}*" for m in self.models]
        if self.scope is not None and not self.scope.everything:
            condition, more = self.scope.sql("s")
            clauses.append(condition)
            args += more
            joins = True
        return " AND ".join(clauses), args, joins


@dataclass(slots=True)
class Group:
    """One row of the aggregate: its keys, then what its responses add up to."""

    slot: str  # the UTC time slot (an hour, or a quarter of one: see slot_sql); "" when the time is unknown
    harness: str
    model: str | None
    tier: int  # the largest tier start the requests' input exceeds (0: none)
    recorded: bool  # the agent recorded these responses' cost
    extra: tuple[Any, ...]  # session id, repository, host: as asked
    responses: int = 0
    tokens: list[int] = field(default_factory=lambda: [0] * 6)  # in, out, cache read, cache write, of it 1h, reasoning
    cost: float = 0.0  # recorded by the agent (when ``recorded``)
    first: str | None = None
    last: str | None = None


def slot_sql(quarter_hours: bool) -> str:
    """The time slot of a response: its UTC hour (``2026-11-29T10``), or for a time zone whose offset is not whole
    hours its quarter hour (``2026-11-29T10:2``: the third quarter). Whole-hour offsets are the common case;
    a day is then made of whole slots in any zone, DST included."""
    if quarter_hours:
        return "coalesce(substr(u.ts, 1, 14) || (CAST(substr(u.ts, 15, 2) AS INTEGER) / 15), '')"
    return "coalesce(substr(u.ts, 1, 13), '')"


def tier_sql(thresholds: Sequence[int]) -> str:
    if not thresholds:
        return "0"
    cases = " ".join(f"WHEN {REQUEST_INPUT} > {int(t)} THEN {int(t)}" for t in sorted(thresholds, reverse=True))
    return f"CASE {cases} ELSE 0 END"


def groups(conn: sqlite3.Connection, where: Filter, thresholds: Sequence[int], quarter_hours: bool = False,
           by_session: bool = False, by_repo: bool = False) -> list[Group]:
    """The aggregate (see the module docstring); ``by_session``/``by_repo`` add the session's id / its bank id.

    Read from usage_hours (migration 16: the counted responses already summed by hour, session, agent, model and
    input tier) when its slots and tiers serve: a zone of whole-hour offsets, and a catalogue whose tier starts are
    among those it was summed by. Else from the responses themselves, which is exact for any zone and any tiers
    (and costs a scan of every response)."""
    hours = not quarter_hours and set(thresholds) <= set(USAGE_TIERS)
    condition, args, joined = where.where(hours)
    extra = []
    if by_session:
        extra.append("u.session_id")
    if by_repo:
        extra.append("s.bank_id")
        joined = True
    if hours:
        keys = ["u.hour", "u.harness", "nullif(u.model, '')", "u.tier", "u.recorded", *extra]
        sums = ("sum(u.responses), sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cache_read), "
                "sum(u.tokens_cache_write), sum(u.tokens_cache_write_1h), sum(u.tokens_reasoning), sum(u.cost), "
                "NULL, NULL")
        table = "usage_hours"
    else:
        keys = [slot_sql(quarter_hours), "u.harness", "u.model", tier_sql(thresholds), "u.cost IS NOT NULL", *extra]
        sums, table = SUMS, "usage"
    sql = (f"SELECT {', '.join(keys)}, {sums} FROM {table} u "
           f"{'JOIN sessions s ON s.id = u.session_id ' if joined else ''}WHERE {condition} "
           f"GROUP BY {', '.join(str(i) for i in range(1, len(keys) + 1))}")
    out = []
    width = len(keys)
    for row in conn.execute(sql, args):
        out.append(Group(row[0], row[1], row[2], row[3], bool(row[4]), tuple(row[5:width]), row[width],
                         [row[width + i] or 0 for i in range(1, 7)], row[width + 7] or 0.0, row[width + 8],
                         row[width + 9]))
    return out


def responses(conn: sqlite3.Connection, where: Filter, thresholds: Sequence[int]) -> list[tuple]:
    """Every counted response in time order (the billing blocks need each one's time): (ts, harness, model, tier,
    in, out, cache read, cache write, of it 1h, reasoning, recorded cost)."""
    condition, args, joined = where.where()
    sql = (f"SELECT u.ts, u.harness, u.model, {tier_sql(thresholds)}, u.tokens_in, u.tokens_out, "
           "u.tokens_cache_read, u.tokens_cache_write, u.tokens_cache_write_1h, u.tokens_reasoning, u.cost "
           f"FROM usage u {'JOIN sessions s ON s.id = u.session_id ' if joined else ''}"
           f"WHERE {condition} AND u.ts IS NOT NULL ORDER BY u.ts")
    return conn.execute(sql, args).fetchall()


def session_facts(conn: sqlite3.Connection, pks: Sequence[int]) -> dict[int, dict[str, Any]]:
    """What a session report names of each session (and of the sessions it was started by: a subagent's usage
    is its root session's)."""
    facts: dict[int, dict[str, Any]] = {}
    wanted = list(dict.fromkeys(pks))
    while wanted:
        part, wanted = wanted[:500], wanted[500:]
        rows = conn.execute(
            "SELECT id, harness, native_id, bank_id, title, started_at, updated_at, parent_native_id, parent_kind "
            f"FROM sessions WHERE id IN ({', '.join('?' * len(part))})", part).fetchall()
        parents = []
        for row in rows:
            facts[row[0]] = dict(zip(("id", "harness", "native_id", "bank_id", "title", "started_at", "updated_at",
                                      "parent_native_id", "parent_kind"), row, strict=True))
            if row[7] and row[8] == "subagent":
                parents.append((row[1], row[7]))
        for harness, native in parents:
            found = conn.execute("SELECT id FROM sessions WHERE harness = ? AND native_id = ?",
                                 (harness, native)).fetchone()
            if found and found[0] not in facts and found[0] not in wanted:
                wanted.append(found[0])
    return facts
