"""Live pages: server-sent events driven by the bank's change clock (migration 8), or under ``--team`` by the team
bank's push stamps (harvester/web/reading.py TeamSource.clock).

Every write that changes a session moves the clock and stamps the session with it, in the write's own transaction
(harvester/bank/sqlite_events.stamp_changed). A stream reads the clock once a second (one indexed row, off the
event loop) and says something only when it moved: the sessions list is told to fetch its rows again; a session's
page is sent the events past the last one it shows, rendered by the same template as the page (escaped). A
stream reads; it never writes, and ends when the browser goes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from harvester.web.pages import EVENTS_PAGE, event_views, find_session, int_param
from harvester.web.reading import Unavailable

POLL_SECONDS = 1.0


def sessions_stream(request: Request) -> Response:
    source = request.app.state.source

    async def changes() -> AsyncIterator[dict[str, Any]]:
        seen = await anyio.to_thread.run_sync(source.clock)
        while True:
            await anyio.sleep(POLL_SECONDS)
            now = await anyio.to_thread.run_sync(source.clock)
            if now != seen:
                seen = now
                yield {"event": "changed", "data": str(now)}

    return EventSourceResponse(changes(), ping=15)


def session_stream(request: Request) -> Response:
    q = request.query_params
    source = request.app.state.source
    harness, native_id, after = q.get("h"), q.get("id"), int_param(q.get("after"), 0)
    templates = request.app.state.templates

    def new_events(last: int) -> tuple[str, int, dict[str, Any], bool] | None:
        """The events past ``last`` (a page of them), the last one's number, the session, and whether the page was
        full (more may follow)."""
        with source.bank() as bank:
            s = find_session(bank, harness, native_id)
            if s is None:
                return None
            events = bank.events_page(s["id"], last + 1, EVENTS_PAGE, include_recall=True)
            views = event_views(bank, s, events, source.team)
        html = templates.get_template("_events.html").render(events=views) if views else ""
        return html, (views[-1]["v"].seq if views else last), s, len(events) == EVENTS_PAGE

    async def changes() -> AsyncIterator[dict[str, Any]]:
        last = after

        def lookup() -> dict[str, Any] | None:
            with source.bank() as bank:
                return find_session(bank, harness, native_id)

        try:
            s = await anyio.to_thread.run_sync(lookup)
        except Unavailable:
            return
        if s is None:
            return
        seen = await anyio.to_thread.run_sync(source.session_clock, s["id"])
        while True:
            await anyio.sleep(POLL_SECONDS)
            now = await anyio.to_thread.run_sync(source.session_clock, s["id"])
            if now == seen or now is None:
                continue
            seen = now
            full, row = True, None
            while full:  # one write may add more than a page: each page is sent, not only the first
                try:
                    found = await anyio.to_thread.run_sync(new_events, last)
                except Unavailable:
                    break
                if found is None:
                    return
                html, last, row, full = found
                if html:
                    yield {"event": "events", "data": html}
            if row is not None:
                yield {"event": "state", "data": f"{row['state']} · {row['event_count']} events"}

    return EventSourceResponse(changes(), ping=15)
