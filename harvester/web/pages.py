"""The viewer's pages: repositories → sessions → a transcript, search, status. Each handler reads through the
source (harvester/web/reading.py: read-only, one query at a time) and hands plain values to a template, which
escapes every one of them. Lists are paged and a transcript is read a page of events at a time
(``events_page``): no page reads a whole bank, or a whole long session."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from harvester.recall.tools import grouped
from harvester.recall.views import KINDS, ROLES, RecallError, parse_since, when
from harvester.web.reading import Unavailable
from harvester.web.transcript import around_command, copy_commands, event_view, one_line, snippet_parts

SESSIONS_PAGE = 100
EVENTS_PAGE = 100  # events a transcript page shows: a long session is read a page at a time
SEARCH_LIMIT = 50
STATES = ("live", "ended", "abandoned", "unknown")
MAX_OFFSET = 100_000


def int_param(value: str | None, default: int = 0, low: int = 0, high: int = 2**62) -> int:
    try:
        return min(max(int(value or default), low), high)
    except ValueError:
        return default


def harness_param(request: Request, value: str | None) -> str | None:
    """An agent's name from a query, if it is one the viewer knows (else no filter)."""
    return value if value and value in request.app.state.harnesses else None


def moment(value: str | None) -> str | None:
    try:
        return parse_since(value) if value else None
    except RecallError:
        return None


def page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    app = request.app.state
    context = {"team": app.source.team, "host_note": app.host_note, "usage": app.usage_on, **context}
    return app.templates.TemplateResponse(request, name, context, status_code=status,
                                          headers={"cache-control": "no-store"})


def unavailable(request: Request, exc: Unavailable) -> Response:
    return page(request, "unavailable.html", {"title": "Unavailable", "reason": one_line(str(exc), 600)}, status=503)


def link(path: str, **query: Any) -> str:
    """An internal link: a path of this server and its query, encoded (never a transcript's URL)."""
    kept = {k: v for k, v in query.items() if v not in (None, "", False)}
    return path + ("?" + urlencode(kept) if kept else "")


def session_link(harness: str, native_id: str, at: int | None = None, start: int | None = None) -> str:
    if at is not None:
        return link("/session", h=harness, id=native_id, start=(at // EVENTS_PAGE) * EVENTS_PAGE) + f"#{int(at)}"
    return link("/session", h=harness, id=native_id, start=start)


# --- repositories --------------------------------------------------------------------------------------------------

def repositories(request: Request) -> Response:
    try:
        rows = request.app.state.source.repositories()
    except Unavailable as exc:
        return unavailable(request, exc)
    shown_rows = [{"label": one_line(r.label, 120), "sessions": r.sessions, "last": when(r.last),
                   "roots": [one_line(x, 200) for x in r.roots[:3]], "hosts": [one_line(h, 60) for h in r.hosts],
                   "origin": one_line(r.origin, 200),
                   "unknown": r.unknown, "href": link("/sessions", repo=r.ref, unknown=1 if r.unknown else None)}
                  for r in rows]
    return page(request, "repositories.html", {"title": "Repositories", "repositories": shown_rows,
                                               "all_href": link("/sessions")})


# --- sessions ------------------------------------------------------------------------------------------------------

def _session_filters(request: Request) -> dict[str, Any]:
    q = request.query_params
    state = q.get("state") if q.get("state") in STATES else None
    return {"repo": q.get("repo") or None, "unknown": q.get("unknown") == "1",
            "agent": harness_param(request, q.get("agent")),
            "since": q.get("since") or "", "until": q.get("until") or "", "state": state,
            "offset": int_param(q.get("offset"), 0, 0, MAX_OFFSET)}


def session_rows(request: Request, f: dict[str, Any]) -> tuple[list[dict[str, Any]], bool, str]:
    """A page of sessions (newest first, each subagent under its parent) as rows for the template, whether there
    are more, and the scope's label."""
    source = request.app.state.source
    scope = source.scope(f["repo"], f["unknown"])
    rows = source.sessions_page(scope, f["agent"], moment(f["since"]), moment(f["until"]), f["state"], f["offset"],
                                SESSIONS_PAGE + 1)
    more = len(rows) > SESSIONS_PAGE
    rows = rows[:SESSIONS_PAGE]
    usage = source.usage_of([r["id"] for r in rows])
    out = []
    for s, depth in grouped(rows):
        tokens, cost = usage.get(s["id"], ("-", "-"))
        out.append({"depth": min(depth, 6), "title": one_line(s["title"], 140) or "(untitled)",
                    "harness": one_line(s["harness"], 40), "branch": one_line(s.get("branch"), 60),
                    "state": s["state"] if s["state"] in STATES else "unknown", "started": when(s["started_at"]),
                    "updated": when(s["updated_at"]), "events": s["event_count"], "tokens": tokens, "cost": cost,
                    "host": one_line(s.get("host"), 60), "href": session_link(s["harness"], s["native_id"]),
                    "id": one_line(s["native_id"], 60), "subagent": s.get("parent_kind") == "subagent"})
    return out, more, scope.label


def sessions(request: Request) -> Response:
    f = _session_filters(request)
    try:
        # The clock before the rows: its stream sends at once what was written after it (harvester/web/live.py).
        clock = request.app.state.source.clock()
        rows, more, label = session_rows(request, f)
    except Unavailable as exc:
        return unavailable(request, exc)
    base = {k: f[k] for k in ("repo", "agent", "since", "until", "state")}
    base["unknown"] = 1 if f["unknown"] else None
    context = {"title": f"Sessions of {one_line(label, 80)}", "label": one_line(label, 120), "rows": rows, "f": f,
               "harnesses": request.app.state.harnesses, "states": STATES,
               "rows_href": link("/sessions/rows", **base, offset=f["offset"]),
               "live_href": link("/live/sessions", **base, offset=f["offset"],
                                 clock=None if clock is None else str(clock)),
               "next_href": link("/sessions", **base, offset=f["offset"] + SESSIONS_PAGE) if more else None,
               "prev_href": link("/sessions", **base, offset=max(f["offset"] - SESSIONS_PAGE, 0))
               if f["offset"] else None,
               "since_bad": bool(f["since"]) and moment(f["since"]) is None,
               "until_bad": bool(f["until"]) and moment(f["until"]) is None}
    return page(request, "sessions.html", context)


def sessions_rows(request: Request) -> Response:
    """The rows alone: what the sessions page swaps in when the bank changes (live)."""
    try:
        rows, _, _ = session_rows(request, _session_filters(request))
    except Unavailable as exc:
        return unavailable(request, exc)
    return page(request, "_session_rows.html", {"rows": rows})


# --- a transcript --------------------------------------------------------------------------------------------------

def find_session(bank: Any, harness: str | None, native_id: str | None) -> dict[str, Any] | None:
    if not harness or not native_id or len(native_id) > 4096:
        return None
    return next((s for s in bank.find_sessions(native_id) if s["harness"] == harness and s["native_id"] == native_id),
                None)


def children(bank: Any, s: dict[str, Any], events: list[dict[str, Any]]) -> dict[int, str]:
    """The subagent session each call of ``events`` started (by position)."""
    from harvester.recall.tools import children_of_calls

    if not any(e["kind"] == "tool_call" for e in events):
        return {}
    kids = bank.subagents(s["harness"], s["native_id"])
    return children_of_calls(bank.session_events(s["id"], include_recall=True), kids) if kids else {}


def event_views(bank: Any, s: dict[str, Any], events: list[dict[str, Any]], team: bool = False
                ) -> list[dict[str, Any]]:
    kids = children(bank, s, events)
    out = []
    for e in events:
        view = event_view(e, kids.get(e["seq"]))
        out.append({"v": view, "around": around_command(s, view.seq, team),
                    "child_href": session_link(s["harness"], view.child) if view.child else None})
    return out


def session(request: Request) -> Response:
    q = request.query_params
    source = request.app.state.source
    start = int_param(q.get("start"), 0)
    try:
        with source.bank() as bank:
            s = find_session(bank, q.get("h"), q.get("id"))
            if s is None:
                return page(request, "missing.html", {"title": "No such session"}, status=404)
            # The session's change stamp before its events: its stream sends again what is rewritten after it.
            stamp = None if source.team else bank.conn.execute("SELECT changed FROM sessions WHERE id = ?",
                                                               (s["id"],)).fetchone()[0]
            events = bank.events_page(s["id"], start, EVENTS_PAGE + 1, include_recall=True)
            views = event_views(bank, s, events[:EVENTS_PAGE], source.team)
            parent = None
            if s.get("parent_native_id"):
                found = find_session(bank, s["harness"], s["parent_native_id"])
                parent = session_link(s["harness"], s["parent_native_id"]) if found else None
    except Unavailable as exc:
        return unavailable(request, exc)
    more = len(events) > EVENTS_PAGE
    last = views[-1]["v"].seq if views else start - 1
    head = {"title": one_line(s["title"], 200) or "(untitled)", "id": one_line(s["native_id"], 200),
            "harness": one_line(s["harness"], 40), "version": one_line(s.get("agent_version"), 40),
            "model": one_line(s.get("model"), 80), "bank_id": one_line(s["bank_id"], 120),
            "cwd": one_line(s.get("cwd"), 300), "repo_root": one_line(s.get("repo_root"), 300),
            "branch": one_line(s.get("branch"), 80), "state": s["state"] if s["state"] in STATES else "unknown",
            "started": when(s["started_at"]), "updated": when(s["updated_at"]), "events": s["event_count"],
            "host": one_line(s.get("host"), 60), "parent_kind": one_line(s.get("parent_kind"), 30),
            "parent_id": one_line(s.get("parent_native_id"), 120), "parent_href": parent}
    live = not more and source.session_clock(s["id"]) is not None
    context = {"title": head["title"], "s": head, "events": views, "copies": copy_commands(s, source.team),
               "next_href": session_link(s["harness"], s["native_id"], start=last + 1) if more else None,
               "prev_href": session_link(s["harness"], s["native_id"], start=max(start - EVENTS_PAGE, 0))
               if start else None,
               "live_href": link("/live/session", h=s["harness"], id=s["native_id"], after=last, start=start,
                                 stamp=None if stamp is None else str(stamp)) if live else None}
    return page(request, "session.html", context)


# --- search --------------------------------------------------------------------------------------------------------

def search(request: Request) -> Response:
    from harvester.bank.sqlite_recall import plain_words

    q = request.query_params
    query = (q.get("q") or "")[:1000]
    f = {"q": query, "repo": q.get("repo") or "", "agent": harness_param(request, q.get("agent")),
         "role": q.get("role") if q.get("role") in ROLES else None,
         "kind": q.get("kind") if q.get("kind") in KINDS else None, "since": q.get("since") or "",
         "until": q.get("until") or ""}
    source = request.app.state.source
    context: dict[str, Any] = {"title": "Search", "f": f, "harnesses": request.app.state.harnesses, "roles": ROLES,
                               "kinds": KINDS, "hits": [], "said": ""}
    try:
        # Sessions of unknown repository are filtered by the bank id they are filed under ("bank:" + it).
        context["repositories"] = [(f"bank:{r.ref}" if r.unknown else r.ref,
                                    one_line(r.label, 80) + (" (repository unknown)" if r.unknown else ""))
                                   for r in source.repositories()]
        if query.strip():
            try:
                match = plain_words(query)
            except ValueError as exc:
                context["said"] = str(exc)
                return page(request, "search.html", context)
            unknown = f["repo"].startswith("bank:")
            scope = source.scope(f["repo"].removeprefix("bank:") if unknown else f["repo"] or None, unknown)
            with source.bank() as bank:
                found = bank.search_page(match, scope, SEARCH_LIMIT, harness=f["agent"], since=moment(f["since"]),
                                         until=moment(f["until"]), role=f["role"], kind=f["kind"])
            context["hits"] = [{"title": one_line(h.get("title"), 120) or "(untitled)",
                                "harness": one_line(h["harness"], 40), "seq": h["seq"], "ts": when(h.get("ts")),
                                "what": one_line(f"{h['role']} {h['kind']}".replace("_", " ")
                                                 + (f" · {h['tool_name']}" if h.get("tool_name") else ""), 80),
                                "bank_id": one_line(h.get("bank_id"), 80), "host": one_line(h.get("host"), 60),
                                "parts": snippet_parts(h.get("snippet") or "", query),
                                "href": session_link(h["harness"], h["session"], at=int(h["seq"]))}
                               for h in found.hits]
            n = f"more than {found.total:,}" if found.more else f"{found.total:,}"
            context["said"] = f"{n} {'match' if found.total == 1 and not found.more else 'matches'}" + (
                "" if found.ranked else f" (too many to rank: the {len(found.hits)} stored last)")
    except Unavailable as exc:
        return unavailable(request, exc)
    return page(request, "search.html", context)


# --- status --------------------------------------------------------------------------------------------------------

def status(request: Request) -> Response:
    import os

    from harvester.status import gather, gather_before_first_scan, service_status

    local = request.app.state.local
    settings = request.app.state.settings

    def gathered() -> dict[str, Any]:
        with local.bank() as bank:
            return gather(bank, settings)

    try:
        # What the bank holds is gathered again when it changes; the service's state (its heartbeat) every time.
        data = dict(local.memo("status", gathered))
        with local.bank() as bank:
            data["service"] = service_status(bank, settings)
    except Unavailable as exc:
        if os.path.exists(local.path):
            return unavailable(request, exc)
        data = gather_before_first_scan(settings)  # what status says before there is a bank: the agents found
    every = request.query_params.get("all") == "1"
    harnesses = [h for h in data["harnesses"] if every or h["found"]]
    problems = sum(h["malformed"] + h["failed"] + h["unreadable"] + h["oversize"] for h in harnesses)
    team = None
    if request.app.state.source.team:
        # Under --team the page is the team bank's; what only this machine knows (its service, archive, sinks,
        # push) follows, said as this machine's.
        try:
            team = team_status(request.app.state.source.status())
        except Unavailable as exc:
            return unavailable(request, exc)
        team["this_host"] = one_line(settings.team.host_name(), 60) if settings.team is not None else "-"
    return page(request, "status.html", {"title": "Status", "d": data, "harnesses": harnesses, "every": every,
                                         "problems": problems, "facts": facts, "team_view": team})


def _moment_of(value: Any) -> str:
    """A time from either bank as pages show it: an ISO string (SQLite, the team bank's text columns) or a
    PostgreSQL timestamptz."""
    from datetime import UTC, datetime

    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return when(value)


def team_status(found: dict[str, Any]) -> dict[str, Any]:
    """The team bank's machines and agents (TeamSource.status) as rows for the template."""
    machines = [{"host": one_line(m["host"], 60), "user": one_line(m["os_user"], 40),
                 "sessions": m["sessions"], "events": m["events"], "last_push": _moment_of(m["last_push_at"]),
                 "first_push": _moment_of(m["first_push_at"]), "version": one_line(m["harvester_version"], 30)}
                for m in found["machines"]]
    agents = [{"harness": one_line(a["harness"], 40), "host": one_line(a["host"], 60), "sessions": a["sessions"],
               "events": a["events"], "last_import": _moment_of(a["last_import"])} for a in found["agents"]]
    return {"machines": machines, "agents": agents}


def facts(value: Any, depth: int = 0) -> list[tuple[str, str]]:
    """A status section (sinks, the team push) as (name, value) lines, for a generic table."""
    out: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list) and depth < 2:
                out += [(f"{k}.{a}" if a else str(k), b) for a, b in facts(v, depth + 1)] or [(str(k), "-")]
            else:
                out.append((str(k), one_line(v if v is not None else "-", 200)))
    elif isinstance(value, list):
        for n, v in enumerate(value[:20]):
            out += [(f"{n}.{a}" if a else str(n), b) for a, b in facts(v, depth + 1)]
    else:
        out.append(("", one_line(value, 200)))
    return out


def go(request: Request) -> Response:
    """A session by the id typed in the header (an id, or its start)."""
    ref = (request.query_params.get("id") or "").strip()[:4096]
    try:
        with request.app.state.source.bank() as bank:
            found = bank.find_sessions(ref) if ref else []
    except Unavailable as exc:
        return unavailable(request, exc)
    if len(found) == 1:
        return RedirectResponse(session_link(found[0]["harness"], found[0]["native_id"]), status_code=303)
    return page(request, "missing.html", {"title": "No such session", "several": len(found) > 1}, status=404)

