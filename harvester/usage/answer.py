"""One ``harvester usage`` question answered from a bank: the request (:class:`Request`), the aggregate, the prices
of the models it names, the rows; as JSON-able data (:func:`answer`), which the text report renders
(harvester/usage/render.py). The JSON's field names are documented by ``harvester usage --help`` and stable."""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, replace
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from harvester.usage import query
from harvester.usage.days import Days
from harvester.usage.report import Row, build, grand_total, period_of

if TYPE_CHECKING:
    from harvester.bank.scope import Scope
    from harvester.usage.prices import ModelPrices, PriceBook

REPORTS = ("daily", "weekly", "monthly", "session", "blocks")


@dataclass(frozen=True, slots=True)
class Request:
    report: str = "daily"
    since: date | None = None
    until: date | None = None
    harnesses: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    scope: Scope | None = None  # None: every repository
    by: tuple[str, ...] = ()  # breakdowns: harness, model, repo (host: the team bank's)
    cost: str = "auto"
    zone: tzinfo | None = None  # None: the system's local time
    zone_name: str = "local"
    sessions: tuple[int, ...] = ()  # only these sessions (their ids in the bank asked): a listing's page


def answer(conn: sqlite3.Connection, request: Request, book: PriceBook, now: datetime | None = None) -> dict[str, Any]:
    days = Days(request.zone)
    start, end = days.bounds(request.since, request.until)
    where = query.Filter(start, end, request.harnesses, request.models, request.scope, request.sessions)
    head = {"report": request.report, "timezone": request.zone_name, "cost_mode": request.cost,
            "since": request.since.isoformat() if request.since else None,
            "until": request.until.isoformat() if request.until else None,
            "price_catalogue": f"genai-prices {book.version}"}
    if request.report == "blocks":
        from harvester.usage.blocks import blocks

        prices = book.lookup(query.models(conn))
        names = [n for n in request.by if n in ("harness", "model", "repo")]
        responses = query.responses(conn, where, tiers_of(prices), with_repo="repo" in names)
        found = blocks(responses, days, prices, request.cost, now, response_part_of(names, {"repo": 11}))
        now = now or datetime.now().astimezone()
        total = grand_total_of(b.totals for b in found)
        return {**head, "blocks": [b.as_json(now, names) for b in found], "totals": total.as_json()}
    prices = book.lookup(query.models(conn))
    groups = query.groups(conn, where, tiers_of(prices), days, by_harness="harness" in request.by,
                          by_session=request.report == "session", by_repo="repo" in request.by)
    part_of = _part_of(request.by, by_session=request.report == "session")
    if request.report == "session":
        facts = query.session_facts(conn, [g.extra[0] for g in groups])
        by_native = {(f["harness"], f["native_id"]): f["id"] for f in facts.values()}
        root = {pk: _root(facts, by_native, pk) for pk in facts}
        subagents = Counter(r for pk, r in root.items() if r != pk)
        rows = build(groups, lambda g, day: str(root.get(g.extra[0], g.extra[0])), part_of, prices, request.cost)
        for row in rows:
            row.facts = {**facts.get(int(row.key), {}), "subagents": subagents[int(row.key)]}
        rows.sort(key=lambda r: (r.totals.last or "", r.key))
    else:
        period = period_of(request.report)
        rows = build(groups, lambda g, day: period(day), part_of, prices, request.cost)
    return {**head, "rows": [_row_json(row, request) for row in rows], "totals": grand_total(rows).as_json()}


def active_block(conn: sqlite3.Connection, request: Request, book: PriceBook,
                 now: datetime | None = None) -> dict[str, Any] | None:
    """The ``blocks`` report's active block (its JSON), or None, read from the start of the last block before
    ``now`` only.

    A response that starts a block in the whole history starts the same blocks after it from the responses after
    it alone, and when it is at or before ``now`` every block before it has ended (the one just before ended
    before it, or its last response is over five hours before it): none of them is active. A response more than
    five hours after the one before it always starts a block, as the first response does
    (harvester/usage/blocks.py); so the responses' times are walked back from ``now`` to the latest such one, the
    blocks chained forward from it on those times alone, and the responses read and priced from the start of the
    last of them on. When no response came in the five hours before ``now``, every block before ``now`` has
    ended, and the first response after ``now`` (a clock ahead) starts a block: those after ``now`` are read.
    tests/test_usage_active_block.py proves the block the whole history's."""
    from harvester.usage.blocks import BLOCK, blocks, last_block_start

    days = Days(request.zone)
    start, end = days.bounds(request.since, request.until)
    now = now or datetime.now().astimezone()
    where = query.Filter(start, end, request.harnesses, request.models, request.scope, request.sessions)
    times = query.times_since_gap(conn, where, BLOCK.total_seconds(), now)
    where = replace(where, start=last_block_start(times) if times else query.utc_ms(now))
    prices = book.lookup(query.models(conn))
    found = blocks(query.responses(conn, where, tiers_of(prices), by_time=True), days, prices, request.cost, now)
    return next((b.as_json(now) for b in found if b.active), None)


def tiers_of(prices: dict[str, ModelPrices | None]) -> list[int]:
    """The input sizes any of these models' prices change at."""
    return sorted({tier for p in prices.values() if p is not None for _, tiers in p.periods for tier in tiers} - {0})


def grand_total_of(totals: Any) -> Any:
    from harvester.usage.report import Totals

    out = Totals()
    for t in totals:
        out.add(t)
    return out


def _part_of(by: tuple[str, ...], by_session: bool) -> Any:
    if not by:
        return None
    index = {"harness": lambda g: g.harness, "model": lambda g: g.model or "",
             "repo": lambda g: g.extra[1 if by_session else 0] or ""}
    pickers = [index[name] for name in by if name in index]
    return lambda g: tuple(pick(g) for pick in pickers)


def response_part_of(names: list[str], columns: dict[str, int]) -> Any:
    """A response's part of its block by ``names`` (``--by``), from harvester/usage/query.py's response tuple (the
    harness and the model where it names them; ``columns``: where the others are, after them)."""
    if not names:
        return None
    at = {"harness": 1, "model": 2, **columns}
    return lambda response: tuple(str(response[at[name]] or "") for name in names)


def _root(facts: dict[int, dict[str, Any]], by_native: dict[tuple[str, str], int], pk: int) -> int:
    """The session a subagent's usage is reported under: the one that started it, up to the first that no
    session started (or whose starter the bank does not hold)."""
    seen = {pk}
    while True:
        f = facts.get(pk)
        if f is None or f["parent_kind"] != "subagent" or not f["parent_native_id"]:
            return pk
        parent = by_native.get((f["harness"], f["parent_native_id"]))
        if parent is None or parent in seen:
            return pk
        seen.add(parent)
        pk = parent


def _row_json(row: Row, request: Request, names: list[str] | None = None) -> dict[str, Any]:
    """A row as ``--json`` gives it; ``names``: its breakdown's fields (default: the request's, but host)."""
    key = {"session": "session", "daily": "date", "weekly": "week", "monthly": "month"}[request.report]
    out: dict[str, Any] = {key: row.key}
    if request.report == "session":
        f = row.facts
        out = {"session": f.get("native_id"), "harness": f.get("harness"), "bank_id": f.get("bank_id"),
               "title": f.get("title"), "subagents": f.get("subagents", 0)}
    out.update(row.totals.as_json())
    if row.parts:
        names = names or [n for n in request.by if n in ("harness", "model", "repo")]
        out["breakdown"] = [{**dict(zip(names, part, strict=True)), **totals.as_json()}
                            for part, totals in sorted(row.parts.items())]
    return out
