"""The one SQL aggregate every usage report starts from: the counted responses (migration 16) summed by local day,
agent, model, input tier and what the agent recorded of their cost (none, zero, more: migration 19), and by session
or repository when the report needs it. A report then prices each group by arithmetic (harvester/usage/prices.py) and adds them up: a bank of a
million events holds a few hundred thousand responses, already summed by hour in usage_hours, and a year of them
is a few thousand groups.

Reads only; the bank's rows are read as they are committed.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester.bank.migrations_usage import USAGE_TIERS, recorded_kind
from harvester.usage.harnesses import apart_sql

if TYPE_CHECKING:
    from harvester.bank.scope import Scope
    from harvester.usage.days import Days

# The input a genai-prices tier compares (harvester/usage/prices.py): every input token of the request.
REQUEST_INPUT = "(u.tokens_in + u.tokens_cache_read + u.tokens_cache_write)"
SUMS = ("count(*), sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cache_read), sum(u.tokens_cache_write), "
        "sum(u.tokens_cache_write_1h), sum(u.tokens_reasoning), sum(u.cost), min(u.ts), max(u.ts)")


def _model_pattern(name: str) -> list[tuple[str, str]]:
    """``--model NAME`` read as a glob of a whole model id (a name without ``*``, ``?`` or ``[`` is a part of one),
    lower-cased (ids are lower-case; a person types what a dashboard shows, ``Opus``), as (kind, text) tokens:
    ``*`` any run, ``?`` one character, ``[...]`` a class (``^`` first negates, as in SQLite's GLOB), else a
    literal (an unclosed ``[`` included)."""
    name = name.lower()
    if not any(c in name for c in "*?["):
        return [("*", ""), *(("lit", c) for c in name), ("*", "")]
    tokens, i = [], 0
    while i < len(name):
        c = name[i]
        if c in "*?":
            tokens.append((c, ""))
        elif c == "[":
            start = i + 1 + (name[i + 1:i + 2] == "^")
            end = name.find("]", start + (name[start:start + 1] == "]"))
            if end == -1:
                tokens.append(("lit", c))
            else:
                tokens.append(("class", name[i + 1:end]))
                i = end
        else:
            tokens.append(("lit", c))
        i += 1
    return tokens


def model_glob(name: str) -> str:
    """``--model NAME`` as a GLOB over lower-cased model ids (see :func:`_model_pattern`)."""
    parts = {"*": "*", "?": "?"}
    return "".join(parts.get(kind) or (f"[{text}]" if kind == "class" else f"[{text}]" if text in "*?[" else text)
                   for kind, text in _model_pattern(name))


def model_regex(name: str) -> str | None:
    """The same as an anchored POSIX regular expression, for PostgreSQL's ``~*`` (the team bank): the same ids match
    there as here (an ``ILIKE`` would read ``_`` and ``%`` in a name as wildcards). None: no id can match (a class
    of reversed ranges only, ``[9-0]``, matches nothing in SQLite and is an error in a regular expression)."""
    out = []
    for kind, text in _model_pattern(name):
        if kind == "*":
            out.append(".*")
        elif kind == "?":
            out.append(".")
        elif kind == "class":
            if (members := _class_regex(text)) is None:
                return None
            out.append(members)
        else:
            out.append(re.escape(text))
    return "^" + "".join(out) + "$"


def _class_regex(body: str) -> str | None:
    """A GLOB class's body (between its brackets) read as SQLite reads it, as a regex class of escaped members: a
    leading ``^`` inverts, a ``]`` first is itself, ``a-z`` a range where a ``-`` follows a member that did not end
    a range and precedes another, a reversed range nothing. None: a class no character is in."""
    invert = body.startswith("^")
    chars = body[invert:]
    members, prior, i = [], "", 0
    if chars.startswith("]"):
        members.append("\\]")
        i = 1
    while i < len(chars):
        c = chars[i]
        if c == "-" and prior and i + 1 < len(chars):
            high = chars[i + 1]
            if prior <= high:  # the range; `prior` alone was added already, and is in it
                members.append(f"{_in_class(prior)}-{_in_class(high)}")
            prior, i = "", i + 2
            continue
        members.append(_in_class(c))
        prior, i = c, i + 1
    if not members:
        return "." if invert else None
    return "[" + "^" * invert + "".join(members) + "]"


def _in_class(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


@dataclass(frozen=True, slots=True)
class Filter:
    """Which responses: ``start``/``end``: UTC bounds of their time (``end`` excluded); agents; models (each a
    part of the model's name, or a glob); the repositories of ``scope`` (None: every one)."""

    start: str | None = None
    end: str | None = None
    harnesses: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    scope: Scope | None = None
    sessions: tuple[int, ...] = ()  # only these sessions (their bank ids), when given

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
            clauses.append("(" + " OR ".join("lower(u.model) GLOB ?" for _ in self.models) + ")")
            args += [model_glob(m) for m in self.models]
        if self.sessions:
            clauses.append(f"u.session_id IN ({', '.join('?' * len(self.sessions))})")
            args += self.sessions
        if self.scope is not None and not self.scope.everything:
            condition, more = self.scope.sql("s")
            clauses.append(condition)
            args += more
            joins = True
        return " AND ".join(clauses), args, joins


@dataclass(slots=True)
class Group:
    """One row of the aggregate: its keys, then what its responses add up to."""

    day: str  # the local day (YYYY-MM-DD); "" when the time is unknown
    harness: str | None  # None unless asked for (by_harness)
    model: str | None
    tier: int  # the largest tier start the requests' input exceeds (0: none)
    recorded: bool  # the agent recorded these responses' cost (all more than zero, or all zero: recorded_kind)
    extra: tuple[Any, ...]  # session id, repository: as asked
    responses: int = 0
    tokens: list[int] = field(default_factory=lambda: [0] * 6)  # in, out, cache read, cache write, of it 1h, reasoning
    cost: float = 0.0  # recorded by the agent (when ``recorded``)
    first: str | None = None
    last: str | None = None
    apart_reasoning: int = 0  # the reasoning of agents that count it apart from output (harvester/usage/harnesses.py)


def tier_sql(thresholds: Sequence[int], ladder: bool = False) -> str:
    """SQL for the largest of ``thresholds`` a request's input exceeds (0: none), from the request's counts; or
    (``ladder``) from usage_hours' tier, which is already the largest of USAGE_TIERS it exceeds."""
    if not thresholds:
        return "0"
    test = "u.tier >= {}" if ladder else f"{REQUEST_INPUT} > {{}}"
    cases = " ".join(f"WHEN {test.format(int(t))} THEN {int(t)}" for t in sorted(thresholds, reverse=True))
    return f"CASE {cases} ELSE 0 END"


def models(conn: sqlite3.Connection) -> set[str]:
    """Every model the counted responses name (to price them, and to know their tiers, before the aggregate)."""
    return {m for (m,) in conn.execute("SELECT DISTINCT model FROM usage_hours") if m}


def groups(conn: sqlite3.Connection, where: Filter, thresholds: Sequence[int], days: Days, by_harness: bool = False,
           by_session: bool = False, by_repo: bool = False) -> list[Group]:
    """The aggregate (see the module docstring): ``thresholds``, the tier starts of the models priced (a model's
    price may change with the request's input); ``by_harness``/``by_session``/``by_repo`` add the agent / the
    session's id / its bank id.

    Read from usage_hours (migration 16: the counted responses already summed by UTC hour, session, agent, model and
    input tier) when its hours and tiers serve: a zone whose offsets are whole hours, and tier starts among those it
    was summed by. Else from the responses themselves, exact for any zone and any tiers (and a scan of every
    response). Few keys make a quick sort: the agent only when asked (what reasoning agents count apart from output
    is summed beside the rest), the tiers only those the models have."""
    hours = days.whole_hours() and set(thresholds) <= set(USAGE_TIERS)
    condition, args, joined = where.where(hours)
    extra = []
    if by_session:
        extra.append("u.session_id")
    if by_repo:
        extra.append("s.bank_id")
        joined = True
    harness = "u.harness" if by_harness else "NULL"
    apart = f"sum(u.tokens_reasoning * ({apart_sql('u.harness')}))"
    if hours:
        keys = [days.sql("u.hour", hours=True), "nullif(u.model, '')", tier_sql(thresholds, ladder=True), "u.recorded",
                *extra]
        sums = ("sum(u.responses), sum(u.tokens_in), sum(u.tokens_out), sum(u.tokens_cache_read), "
                "sum(u.tokens_cache_write), sum(u.tokens_cache_write_1h), sum(u.tokens_reasoning), sum(u.cost), "
                "NULL, NULL")
        table = "usage_hours"
    else:
        keys = [days.sql("u.ts", hours=False), "u.model", tier_sql(thresholds), recorded_kind("u."), *extra]
        sums, table = SUMS, "usage"
    grouped = [*range(1, len(keys) + 1), *([len(keys) + 1] if by_harness else [])]
    sql = (f"SELECT {', '.join(keys)}, {harness}, {sums}, {apart} FROM {table} u "
           f"{'JOIN sessions s ON s.id = u.session_id ' if joined else ''}WHERE {condition} "
           f"GROUP BY {', '.join(map(str, grouped))}")
    out = []
    w = len(keys) + 1
    for row in conn.execute(sql, args):
        out.append(Group(row[0], row[w - 1], row[1], row[2], bool(row[3]), tuple(row[4:w - 1]), row[w],
                         [row[w + i] or 0 for i in range(1, 7)], row[w + 7] or 0.0, row[w + 8], row[w + 9],
                         row[w + 10] or 0))
    return out


def responses(conn: sqlite3.Connection, where: Filter, thresholds: Sequence[int], by_time: bool = False,
              with_repo: bool = False) -> list[tuple]:
    """Every counted response in time order (the billing blocks need each one's time): (ts, harness, model, tier,
    in, out, cache read, cache write, of it 1h, reasoning, recorded cost), and its session's bank id with
    ``with_repo``. ``by_time``: read along the usage_time index (for a short stretch of time, which the planner
    cannot know: it would sort all of one agent's)."""
    condition, args, joined = where.where()
    joined = joined or with_repo
    sql = (f"SELECT u.ts, u.harness, u.model, {tier_sql(thresholds)}, u.tokens_in, u.tokens_out, "
           "u.tokens_cache_read, u.tokens_cache_write, u.tokens_cache_write_1h, u.tokens_reasoning, u.cost"
           f"{', s.bank_id ' if with_repo else ' '}"
           f"FROM usage u {'INDEXED BY usage_time ' if by_time else ''}{'JOIN sessions s ON s.id = u.session_id ' if joined else ''}"
           f"WHERE {condition} AND u.ts IS NOT NULL ORDER BY u.ts")
    return conn.execute(sql, args).fetchall()


def utc_ms(when: datetime) -> str:
    """``when`` as the usage table writes times (UTC, milliseconds, Z): compared as text, as the table's are."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"


def times_since_gap(conn: sqlite3.Connection, where: Filter, gap_seconds: float, now: datetime) -> list[str]:
    """The times of ``where``'s responses at or before ``now``, oldest first, from the latest that comes more than
    ``gap_seconds`` after the one before it (or from the first of all); none when the latest of them is at least
    ``gap_seconds`` before ``now`` (or there is none). Walked back from ``now`` along the usage_time index (named:
    on one agent's responses the planner would rather sort all of that agent's), so it reads only those."""
    condition, args, joined = where.where()
    sql = (f"SELECT u.ts FROM usage u INDEXED BY usage_time {'JOIN sessions s ON s.id = u.session_id ' if joined else ''}"
           f"WHERE {condition} AND u.ts IS NOT NULL AND u.ts <= ? ORDER BY u.ts DESC")
    later, times = now, []
    for (ts,) in conn.execute(sql, [*args, utc_ms(now)]):
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        since = (later - when).total_seconds()
        if since > gap_seconds or (later is now and since >= gap_seconds):
            break
        later = when
        times.append(ts)
    times.reverse()
    return times


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
