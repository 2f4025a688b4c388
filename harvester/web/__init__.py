"""``harvester serve``: a local, read-only web viewer over the bank (or the team bank).

The entry point: :func:`harvester.web.server.serve` (``harvester serve``), serving the application
:func:`harvester.web.app.create_app` makes.

Repositories by identity → their sessions → a transcript numbered as everywhere else (``#N``), search with the
hits marked, live updates from the bank's change clock, and status. Server-rendered (Starlette, Jinja2 with
autoescape, uvicorn); the JavaScript and the stylesheet ship in this package (``static/``), as the templates do
(``templates/``): no CDN, no build step.

The modules: :mod:`~harvester.web.access` (the token, the Host/Origin check, the Content-Security-Policy),
:mod:`~harvester.web.reading` (the bank read-only, the team bank), :mod:`~harvester.web.transcript` (events as
the pages show them), :mod:`~harvester.web.pages` and :mod:`~harvester.web.live` (the pages and their event
streams), :mod:`~harvester.web.app` (the application) and :mod:`~harvester.web.server` (the socket, uvicorn).
Nothing here writes: the bank is opened read-only, and only GET and HEAD are answered.
"""
