"""The usage pages (``harvester usage`` as pages): each day's cost by agent and model as a chart, the sessions by
cost, the current five-hour block. Read through :mod:`harvester.usage.api` on the viewer's own read-only connection
(under its lock), so a page and ``harvester usage --json`` never say different things. Under ``--team`` the team
bank's, as ``harvester usage --team`` reports it (read at every request: the team bank has no change clock).

Imported by harvester/web/app.py only when :mod:`harvester.usage` is there (this import fails otherwise)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harvester.usage import api
from harvester.web.charts import stacked
from harvester.web.pages import harness_param, page, session_link, unavailable
from harvester.web.reading import Unavailable
from harvester.web.transcript import one_line

DAYS = (7, 30, 90, 365)


def routes() -> list[Route]:
    return [Route("/usage", usage)]


def _money(v: float | None) -> str:
    return "unknown" if v is None else f"${v:,.2f}"


def usage(request: Request) -> Response:
    q = request.query_params
    days = int(q.get("days")) if q.get("days") in {str(d) for d in DAYS} else 30
    by = "model" if q.get("by") == "model" else "harness"
    agent = harness_param(request, q.get("agent"))
    harnesses = (agent,) if agent else ()
    since = date.today() - timedelta(days=days - 1)
    source = request.app.state.source
    team = source.team
    if not team:
        source = request.app.state.local

    def reports() -> tuple[list[Any], list[Any]]:
        with source.bank() as bank:
            read = bank if team else bank.conn  # the team bank's reader, or the local bank's connection
            return (api.daily_costs(read, since=since, harnesses=harnesses),
                    api.sessions_by_cost(read, limit=20, since=since, harnesses=harnesses))

    try:
        # The days' reports are kept until the bank changes (or the day does); the block, which time ends, is not.
        rows, dear = reports() if team else source.memo(f"usage {since} {agent}", reports)
        with source.bank() as bank:  # the block `harvester usage blocks` marks active, read from its own start
            block = api.current_block(bank if team else bank.conn, harnesses=harnesses)
    except Unavailable as exc:
        return unavailable(request, exc)
    all_days = [(since + timedelta(days=n)).isoformat() for n in range(days)]
    values: dict[tuple[str, str], float] = {}
    unpriced = 0
    for r in rows:
        key = (r.day, one_line(getattr(r, by), 60))
        values[key] = values.get(key, 0.0) + (r.cost_usd or 0.0)
        unpriced += r.unpriced_responses
    chart = stacked(all_days, values)
    table = [{"day": r.day, "harness": one_line(r.harness, 40), "model": one_line(r.model, 80),
              "tokens": r.total_tokens, "responses": r.responses, "cost": _money(r.cost_usd)}
             for r in sorted(rows, key=lambda r: (r.day, -(r.cost_usd or 0)), reverse=True)]
    sessions = [{"title": one_line(s.title, 120) or "(untitled)", "harness": one_line(s.harness, 40),
                 "bank_id": one_line(s.bank_id, 80), "tokens": s.total_tokens, "cost": _money(s.cost_usd),
                 "subagents": s.subagents, "href": session_link(s.harness, s.session)} for s in dear]
    shown_block: dict[str, Any] | None = None
    if block is not None and block.start is not None and block.end is not None:
        shown_block = {"start": block.start.strftime("%Y-%m-%d %H:%M"), "end": block.end.strftime("%H:%M"),
                       "tokens": block.total_tokens, "cost": _money(block.cost_usd),
                       "per_hour": _money(block.cost_per_hour_usd), "projected": _money(block.projected_cost_usd),
                       "remaining": block.remaining_minutes if block.remaining_minutes is not None else "-"}
    total = sum(v for v in values.values())
    return page(request, "usage.html", {
        "title": "Usage", "chart": chart, "table": table[:200], "sessions": sessions, "block": shown_block,
        "days": days, "day_choices": DAYS, "by": by, "agent": agent, "harnesses": request.app.state.harnesses,
        "total": f"${total:,.2f}", "unpriced": unpriced, "of": "the team bank" if team else "this machine's bank"})
