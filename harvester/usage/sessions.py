"""What each session cost, for the listings that name sessions (``sessions``, ``show``, MCP ``recent_sessions``):
its counted responses' tokens and cost (``auto``: recorded where the agent recorded one, else from the catalogue),
a subagent's in its own row. Read from usage_hours by session (migration 16); a bank without it (the team bank)
gets nothing added."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import UTC
from typing import Any

from harvester.usage import query
from harvester.usage.days import Days
from harvester.usage.report import Totals, build


def session_usage(bank: Any, pks: Iterable[int]) -> dict[int, Totals]:
    """Session bank id -> what its responses add up to (sessions with none are left out)."""
    conn = getattr(bank, "conn", None)
    wanted = tuple(dict.fromkeys(pks))
    if not isinstance(conn, sqlite3.Connection) or not wanted:
        return {}  # the team bank (PostgreSQL) keeps no usage table: `harvester usage --team` asks it otherwise
    from harvester.usage.answer import tiers_of
    from harvester.usage.prices import cache_path, load_book

    days = Days(UTC)
    models = query.models(conn)
    if not models:
        return {}
    prices = load_book(cache_path(getattr(bank, "path", None))).lookup(models)
    out: dict[int, Totals] = {}
    for start in range(0, len(wanted), 500):
        where = query.Filter(sessions=wanted[start:start + 500])
        groups = query.groups(conn, where, tiers_of(prices), days, by_session=True)
        for row in build(groups, lambda g, day: str(g.extra[0]), None, prices, "auto"):
            out[int(row.key)] = row.totals
    return out


def usage_fields(totals: Totals | None) -> dict[str, Any]:
    """A session row's ``usage`` (``sessions --json``): the documented fields of ``harvester usage --json``."""
    if totals is None:
        return {"usage": None}
    data = totals.as_json()
    keys = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "reasoning_tokens",
            "total_tokens", "cost_usd", "unpriced_responses", "responses")
    return {"usage": {k: data[k] for k in keys}}


def attach(bank: Any, rows: list[dict[str, Any]]) -> None:
    """Give each session row its ``usage`` (in place)."""
    found = session_usage(bank, [r["id"] for r in rows if isinstance(r.get("id"), int)])
    for row in rows:
        row.update(usage_fields(found.get(row.get("id"))))


def short(usage: dict[str, Any] | None) -> tuple[str, str]:
    """(tokens, cost) as a listing shows them: 1.2M, $3.40; unknown cost said so."""
    if not usage:
        return "-", "-"
    from harvester.usage.render import cost_cell

    total = usage["total_tokens"]
    tokens = f"{total / 1e6:.1f}M" if total >= 1e6 else f"{total / 1e3:.0f}k" if total >= 1e3 else str(total)
    return tokens, cost_cell(usage["cost_usd"], usage["unpriced_responses"], usage["responses"])
