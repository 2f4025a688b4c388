"""The viewer's ASGI application: its routes, its templates and static files, and the guard in front of them all
(harvester/web/access.py). Built by :func:`create_app`; served by harvester/web/server.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from harvester.web import live, pages
from harvester.web.access import Guard, allowed_hosts
from harvester.web.transcript import shown

HERE = Path(__file__).resolve().parent


@dataclass
class Served:
    """What a run of the viewer serves: the source of its pages, the local bank (status), the settings, where it
    listens and its token."""

    source: Any
    local: Any
    settings: Any
    host: str
    port: int
    token: str
    host_note: str = ""  # said on every page when it listens beyond loopback


def templates() -> Jinja2Templates:
    # Autoescape on every template, whatever its name: a transcript's text is only ever text. No template marks
    # transcript text safe (tests/test_web_access.py checks that none uses |safe).
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["shown"] = shown
    env.filters["n"] = lambda v: f"{int(v or 0):,}"
    return Jinja2Templates(env=env)


def create_app(served: Served) -> Any:
    from harvester.parsers import HARNESSES

    routes = [
        Route("/", pages.repositories),
        Route("/sessions", pages.sessions),
        Route("/sessions/rows", pages.sessions_rows),
        Route("/session", pages.session),
        Route("/search", pages.search),
        Route("/status", pages.status),
        Route("/go", pages.go),
        Route("/live/sessions", live.sessions_stream),
        Route("/live/session", live.session_stream),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    try:
        from harvester.web import usage_pages
    except ImportError:  # harvester.usage (issue 27) not there: no usage pages
        usage_pages = None  # type: ignore[assignment]
    if usage_pages is not None:
        routes += usage_pages.routes()
    app = Starlette(routes=routes)
    app.state.source, app.state.local, app.state.settings = served.source, served.local, served.settings
    app.state.templates = templates()
    app.state.harnesses = tuple(sorted(HARNESSES))
    app.state.host_note = served.host_note
    app.state.usage_on = usage_pages is not None
    return Guard(app, served.token, allowed_hosts(served.host, served.port), served.port, beyond=bool(served.host_note))
