"""``harvester usage --team``: the same reports from the team bank (PostgreSQL), every machine's sessions, by host too.

The team bank holds the events as each machine pushed them, with their token counts, not the local usage table:
its responses are the events that carry usage, and a response copied into another session (a fork, an old
resume: the agent copies its records with their ids) is counted once by the record's id (a uid of an agent's own,
not a position or a hash: harvester.model.RECORD_ID_MIN), the largest copy. A cost the agent recorded is read from
the event's meta (opencode, Cline). Days are PostgreSQL's, in the report's time zone.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harvester.bank.migrations_usage import recorded_kind
from harvester.model import RECORD_ID_MIN
from harvester.team.schema import SCHEMA
from harvester.usage import query
from harvester.usage.days import Days
from harvester.usage.harnesses import REASONING_APART
from harvester.usage.report import build, grand_total, period_of

if TYPE_CHECKING:
    from harvester.team.read import TeamReader
    from harvester.usage.answer import Request
    from harvester.usage.prices import PriceBook

_INPUT = "(tokens_in + tokens_cache_read + tokens_cache_write)"


def _zone(request: Request) -> str:
    """The report's time zone as PostgreSQL names it: the one asked for, else this machine's (its IANA name)."""
    if request.zone_name != "local":
        return request.zone_name
    link = os.path.realpath("/etc/localtime")
    return link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else "UTC"


def _responses(reader: TeamReader, request: Request) -> tuple[str, list[Any]]:
    """SQL for the team's responses, each once (see the module), with the request's filters; and its arguments."""
    from harvester.bank.scope import EVERYTHING

    where, args = reader._scope(request.scope or EVERYTHING)
    days = Days(request.zone)
    start, end = days.bounds(request.since, request.until)
    clauses = [where, "e.tokens_in IS NOT NULL", "e.ts ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'"]
    if start:
        clauses.append("e.ts >= %s")
        args.append(start)
    if end:
        clauses.append("e.ts < %s")
        args.append(end)
    if request.sessions:
        clauses.append("s.id = ANY(%s)")
        args.append(list(request.sessions))
    if request.harnesses:
        clauses.append("s.harness = ANY(%s)")
        args.append(list(request.harnesses))
    if request.models:
        patterns = [p for p in (query.model_regex(m) for m in request.models) if p is not None]
        clauses.append("(" + (" OR ".join("e.model ~* %s" for _ in patterns) or "FALSE") + ")")
        args += patterns
    key = (f"CASE WHEN length(e.uid) >= {RECORD_ID_MIN} AND e.uid NOT LIKE 'h:%%' THEN e.uid "
           "ELSE s.id::text || ':' || e.uid END")
    sql = (f"SELECT DISTINCT ON (s.harness, {key}) s.id AS session_id, s.harness, s.host, s.bank_id, e.ts, e.model, "
           "coalesce(e.tokens_in, 0) AS tokens_in, coalesce(e.tokens_out, 0) AS tokens_out, "
           "coalesce(e.tokens_cache_read, 0) AS tokens_cache_read, "
           "coalesce(e.tokens_cache_write, 0) AS tokens_cache_write, coalesce(e.tokens_reasoning, 0) AS tokens_reasoning, "
           "CASE WHEN e.meta IS NOT NULL AND jsonb_typeof(e.meta::jsonb -> 'cost') = 'number' "
           "THEN (e.meta::jsonb ->> 'cost')::float8 END AS cost "
           f"FROM {SCHEMA}.events e JOIN {SCHEMA}.sessions s ON s.id = e.session_id "
           f"JOIN {SCHEMA}.repositories r ON r.id = s.repository_id WHERE {' AND '.join(clauses)} "
           f"ORDER BY s.harness, {key}, coalesce(e.tokens_in, 0) + coalesce(e.tokens_out, 0) "
           "+ coalesce(e.tokens_cache_read, 0) + coalesce(e.tokens_cache_write, 0) DESC, e.ts")
    return sql, args


def _tier(thresholds: list[int]) -> str:
    cases = " ".join(f"WHEN {_INPUT} > {t} THEN {t}" for t in sorted(thresholds, reverse=True))
    return f"CASE {cases} ELSE 0 END" if cases else "0"


def answer_team(reader: TeamReader, request: Request, book: PriceBook) -> dict[str, Any]:
    from harvester.usage.answer import grand_total_of, tiers_of

    responses, args = _responses(reader, request)
    models = {r["model"] for r in reader._rows(f"SELECT DISTINCT model FROM ({responses}) u", args) if r["model"]}
    prices = book.lookup(models)
    tiers = tiers_of(prices)
    head = {"report": request.report, "timezone": request.zone_name, "cost_mode": request.cost,
            "since": request.since.isoformat() if request.since else None,
            "until": request.until.isoformat() if request.until else None,
            "price_catalogue": f"genai-prices {book.version}", "team": True}
    apart = f"harness = ANY(ARRAY[{', '.join(repr(h) for h in sorted(REASONING_APART))}])"
    if request.report == "blocks":
        from harvester.usage.answer import response_part_of
        from harvester.usage.blocks import blocks

        names = [n for n in request.by if n in ("harness", "model", "repo", "host")]
        asked = [(name, column) for name, column in (("repo", "bank_id"), ("host", "host")) if name in names]
        rows = reader._rows(f"SELECT ts, harness, model, {_tier(tiers)} AS tier, tokens_in, tokens_out, "
                            "tokens_cache_read, tokens_cache_write, 0 AS write_1h, tokens_reasoning, cost"
                            + "".join(f", {column}" for _, column in asked)
                            + f" FROM ({responses}) u ORDER BY ts", args)  # (names unique: a dict's keys)
        part_of = response_part_of(names, {name: 11 + i for i, (name, _) in enumerate(asked)})
        found = blocks([tuple(r.values()) for r in rows], Days(request.zone), prices, request.cost, part_of=part_of)
        now = datetime.now().astimezone()
        return {**head, "blocks": [b.as_json(now, names) for b in found],
                "totals": grand_total_of(b.totals for b in found).as_json()}
    extra = [c for c, wanted in (("session_id", request.report == "session"), ("bank_id", "repo" in request.by),
                                 ("host", "host" in request.by)) if wanted]
    keys = ["to_char(ts::timestamptz AT TIME ZONE %s, 'YYYY-MM-DD')", "model", _tier(tiers), recorded_kind(""),
            "harness" if "harness" in request.by else "NULL::text", *extra]
    sums = ("count(*)", "sum(tokens_in)", "sum(tokens_out)", "sum(tokens_cache_read)", "sum(tokens_cache_write)", "0",
            "sum(tokens_reasoning)", "sum(cost)", "min(ts)", "max(ts)", f"sum(CASE WHEN {apart} THEN tokens_reasoning "
            "ELSE 0 END)")
    columns = ", ".join(f"{c} AS c{i}" for i, c in enumerate([*keys, *sums]))  # rows come back as dicts: unique names
    sql = (f"SELECT {columns} FROM ({responses}) u GROUP BY {', '.join(str(i) for i in range(1, len(keys) + 1))}")
    groups = []
    for row in reader._rows(sql, [_zone(request), *args]):
        v = list(row.values())
        n = len(keys)
        groups.append(query.Group(v[0], v[4], v[1], v[2], bool(v[3]), tuple(v[5:n]), v[n],
                                  [int(x or 0) for x in v[n + 1:n + 7]], float(v[n + 7] or 0), v[n + 8], v[n + 9],
                                  int(v[n + 10] or 0)))
    index = {name: i for i, name in enumerate(extra)}
    pickers = {"harness": lambda g: g.harness or "", "model": lambda g: g.model or "",
               "repo": lambda g: g.extra[index["bank_id"]] or "", "host": lambda g: g.extra[index["host"]] or ""}
    names = [n for n in request.by if n in pickers]
    part_of = (lambda g: tuple(pickers[n](g) for n in names)) if names else None
    if request.report == "session":
        rows = build(groups, lambda g, day: str(g.extra[0]), part_of, prices, request.cost)
        facts = {r["id"]: r for r in reader._rows(
            f"SELECT id, harness, native_id, bank_id, title, host FROM {SCHEMA}.sessions WHERE id = ANY(%s)",
            [[int(r.key) for r in rows]])}
        for row in rows:
            row.facts = {**facts.get(int(row.key), {}), "subagents": 0}
        rows.sort(key=lambda r: (r.totals.last or "", r.key))
    else:
        period = period_of(request.report)
        rows = build(groups, lambda g, day: period(day), part_of, prices, request.cost)
    from harvester.usage.answer import _row_json

    out = []
    for row in rows:
        data = _row_json(row, request, names)
        if request.report == "session":
            data["host"] = row.facts.get("host")
        out.append(data)
    return {**head, "rows": out, "totals": grand_total(rows).as_json()}
