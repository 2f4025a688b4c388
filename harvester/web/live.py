"""Live pages: server-sent events driven by the bank's change clock (migration 8), or under ``--team`` by the team
bank's push stamps (harvester/web/reading.py TeamSource.clock).

Every write that changes a session moves the clock and stamps the session with it, in the write's own transaction
(harvester/bank/sqlite_events.stamp_changed). A stream reads the clock once a second (one indexed row, off the
event loop) and says something only when it moved: the sessions list is told to fetch its rows again; a session's
page is sent the events past the last one it shows, and those it shows that the agent rewrote since (by the
events' own change stamps), rendered by the same template as the page (escaped). A
stream reads; it never writes, and ends when the browser goes.

A stream starts from what its page showed, not from when it opened: the list from the clock its rows were read at,
a transcript from its last event, or, when the browser opens the stream again by itself, from the last message's
id (Last-Event-ID). So what was written between the page and its stream, or while the stream was closed (a tab in
the background closes it: harvester/web/static/app.js), is sent at once, and nothing is sent twice.
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
# Said by a session's stream when its session is no longer in the bank (forgotten, or the bank made again without
# it): the page is loaded again, and is the 404 a reload gives, not the forgotten text. Ending the stream without
# it would leave the text shown, the browser opening the stream again every few seconds.
GONE = {"event": "gone", "data": ""}


def _shown(request: Request, name: str) -> int | None:
    """Where the page's stream starts: the id of the last message it received (the browser's own reconnection), else
    what the page showed (``name`` in the query); None when neither is given."""
    for value in (request.headers.get("last-event-id"), request.query_params.get(name)):
        if value is not None and (n := int_param(value, -1)) >= 0:
            return n
    return None


def sessions_stream(request: Request) -> Response:
    source = request.app.state.source
    shown = _shown(request, "clock")

    async def changes() -> AsyncIterator[dict[str, Any]]:
        seen = shown if shown is not None else await anyio.to_thread.run_sync(source.clock)
        first = True
        while True:
            if not first:
                await anyio.sleep(POLL_SECONDS)
            first = False
            now = await anyio.to_thread.run_sync(source.clock)
            if now != seen:
                seen = now
                yield {"event": "changed", "data": str(now), "id": str(now)}

    return EventSourceResponse(changes(), ping=15)


def session_stream(request: Request) -> Response:
    q = request.query_params
    source = request.app.state.source
    harness, native_id = q.get("h"), q.get("id")
    after = max(_shown(request, "after") or 0, 0)
    first_shown = int_param(q.get("start"), 0)
    stamp = int_param(q.get("stamp"), -1, low=-1)  # none given: rewrites are not followed
    templates = request.app.state.templates

    def rewritten(last: int, since: int) -> str:
        """The events the page shows (from ``first_shown`` to ``last``) that the agent rewrote after ``since`` (a change
        stamp): agents that rewrite a record (Gemini CLI's re-appended message, Aider's growing one) revise the event
        in place (harvester/bank/sqlite_events.revise_events), under its number. The local bank only: the team bank
        keeps no stamp per event."""
        with source.bank() as bank:
            s = find_session(bank, harness, native_id)
            if s is None:
                return ""
            seqs = {n for (n,) in bank.conn.execute(
                "SELECT seq FROM events WHERE session_id = ? AND seq BETWEEN ? AND ? AND changed > ?",
                (s["id"], first_shown, last, since))}
            if not seqs:
                return ""
            events = [e for e in bank.events_page(s["id"], min(seqs), max(seqs) - min(seqs) + 1, include_recall=True)
                      if e["seq"] in seqs]
            views = event_views(bank, s, events, source.team)
        return templates.get_template("_events.html").render(events=views) if views else ""

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

    def lookup() -> tuple[dict[str, Any] | None, bool]:
        """The session by its identity (its row id changes when the bank is made again), and whether it is gone for
        good: not in the bank and kept out of it (forgotten), or under ``--team`` not in the team bank. A session
        merely not there (the bank made again, not yet scanned again) is waited for."""
        with source.bank() as bank:
            s = find_session(bank, harness, native_id)
            if s is not None or not harness or not native_id:
                return s, s is None
            excluded = getattr(bank, "excluded_sessions", None)
            return None, excluded is None or bool(excluded(harness, [native_id]))

    async def changes() -> AsyncIterator[dict[str, Any]]:
        last, since = after, stamp  # since: the change stamp of the versions the page shows
        s: dict[str, Any] | None = None
        seen: Any = None  # the first look sends what was written past ``after`` since the page was made
        first = True
        while True:
            if not first:
                await anyio.sleep(POLL_SECONDS)
            first = False
            if s is None:
                try:
                    s, gone = await anyio.to_thread.run_sync(lookup)
                except Unavailable:
                    continue
                if gone:
                    yield GONE
                    return
                if s is None:
                    continue
                seen = None
            now = await anyio.to_thread.run_sync(source.session_clock, s["id"])
            if now is None:  # its row is gone (forgotten, the bank made again) or the bank cannot be read now
                s = None
                continue
            if now == seen:
                continue
            seen = now
            if not source.team and since >= 0 and now[0] > since:
                try:
                    html = await anyio.to_thread.run_sync(rewritten, last, since)
                except Unavailable:
                    seen = None  # looked at again next time
                    continue
                since = now[0]
                if html:
                    yield {"event": "rewritten", "data": html}
            full, row = True, None
            while full:  # one write may add more than a page: each page is sent, not only the first
                try:
                    found = await anyio.to_thread.run_sync(new_events, last)
                except Unavailable:
                    break
                if found is None:  # not under that row id any more: looked up again by its identity
                    break
                html, last, row, full = found
                if html:
                    yield {"event": "events", "data": html, "id": str(last)}
            s = row  # by its identity, read again: the row id watched next is this session's (or it is looked up)
            if row is not None:
                yield {"event": "state", "data": f"{row['state']} · {row['event_count']} events"}

    return EventSourceResponse(changes(), ping=15)
