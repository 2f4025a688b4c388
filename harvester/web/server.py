"""Serving the viewer: a socket bound to loopback (or the ``--host`` given), a random token, uvicorn.

The socket is bound here, before uvicorn starts, so that the port is known (``--port 0`` takes a free one) for the
URL printed and for the Host check, and so that an address that is not loopback is only ever bound because the
user named it."""

from __future__ import annotations

import ipaddress
import secrets
import socket
from collections.abc import Callable
from typing import Any

from harvester.web.app import Served, create_app

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int | None) -> socket.socket:
    """A listening socket on ``host``: on ``port``, or when none is given on DEFAULT_PORT if it is free, else any free
    one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for wanted in ([port] if port is not None else [DEFAULT_PORT, 0]):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), wanted))
        except OSError:
            sock.close()
            if port is not None or wanted == 0:
                raise
            continue
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    raise OSError("no port")  # unreachable: port 0 binds or raises


def url_of(host: str, port: int, token: str) -> str:
    shown_host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown_host}:{port}/?token={token}"


def serve(source: Any, local: Any, settings: Any, host: str, port: int | None, said: Callable[[str], None],
          opened: Callable[[str], Any] | None = None) -> None:
    """Serve until interrupted; ``said``: how to tell the user (the URL, a warning); ``opened``: open the URL in a
    browser (``--open``)."""
    import uvicorn

    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    note = "" if is_loopback(host) else f"listening on {host}, beyond this machine"
    app = create_app(Served(source, local, settings, host, port, token, note))
    url = url_of(host, port, token)
    said(f"harvester serve: {url}")
    if opened is not None:
        opened(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2,
                            server_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        source.close()
        if local is not source and local is not None:
            local.close()
