"""Who may read the viewer, and what a page may do in the browser: checked on every request before any page runs.

- **The token.** Each run makes a random token (``secrets.token_urlsafe``); the URL ``harvester serve`` prints
  carries it (``?token=``), the first request with it gets it back as a cookie (HttpOnly, SameSite=Strict, named
  for the port: another viewer on another port keeps its own) and is sent on to the same page without it, as
  Jupyter does. A request with neither is refused: another local user, or a page in the browser that guesses the
  port, reads nothing.
- **The Host and Origin headers.** A page elsewhere can make a browser resolve its own name to 127.0.0.1 (DNS
  rebinding) and then read same-origin: its requests carry its name in ``Host``; they are refused unless the name
  is the loopback address or name this server listens on (or the ``--host`` given; listening beyond loopback, any
  IP address of its port too: an address is no name to rebind). An ``Origin`` (sent with fetches and the event
  stream) must be this server's.
- **Read-only.** GET and HEAD only: no endpoint writes, and nothing else is routed.
- **What a page may do.** A strict Content-Security-Policy on every response: scripts and styles only from this
  server's static files (no inline script, no inline style, no ``eval``), no plugin, no frame, no form posting
  elsewhere; and no referrer (the token never leaves in one).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def cookie_name(port: int) -> str:
    return f"harvester-viewer-{port}"


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values this server answers to: its loopback names, and the address it listens on (a
    ``--host`` given), each with its port."""
    names = {*LOOPBACK_NAMES, f"[{host}]" if ":" in host and not host.startswith("[") else host}
    return frozenset(f"{n}:{port}" for n in names)


def ip_literal(host: str, port: int) -> bool:
    """Whether a Host header is an IP address and this port (``10.0.0.5:8765``, ``[fe80::1]:8765``): a name no
    DNS answer can rebind, which a viewer told to listen beyond loopback (``--host 0.0.0.0``) is reached by."""
    address, _, given = host.rpartition(":")
    if given != str(port):
        return False
    try:
        ipaddress.ip_address(address[1:-1] if address.startswith("[") and address.endswith("]") else address)
    except ValueError:
        return False
    return True


class Guard:
    """The ASGI middleware that checks every request (see the module). ``beyond``: the viewer listens beyond
    loopback (``--host``), so an IP literal of this port is its name too."""

    def __init__(self, app: ASGIApp, token: str, hosts: frozenset[str], port: int, beyond: bool = False) -> None:
        self.app, self.token, self.hosts, self.cookie = app, token, hosts, cookie_name(port)
        self.port, self.beyond = port, beyond

    def ours(self, host: str) -> bool:
        return host in self.hosts or (self.beyond and ip_literal(host, self.port))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan; no websocket is routed
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        if not self.ours(host):
            await _refuse(send, 421, "This server answers only to its own loopback address (the Host header named "
                                     "another: DNS rebinding is refused).")
            return
        origin = headers.get("origin")
        if origin is not None and not (origin.lower().startswith("http://") and self.ours(origin.lower()[7:])):
            await _refuse(send, 403, "A request from another origin is refused.")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _refuse(send, 405, "The viewer is read-only: GET and HEAD only.", [(b"allow", b"GET, HEAD")])
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in query if k == "token"), None)
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                await _refuse(send, 403, "Wrong token: open the URL `harvester serve` printed.")
                return
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            # The path quoted (a backslash, which browsers read as a slash, as %5C; anything beyond latin-1 too),
            # and never one a browser would read as another host (//host).
            where = quote(scope.get("path", "/")) + (f"?{rest}" if rest else "")
            if not where.startswith("/") or where.startswith("//"):
                where = "/"
            cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await _respond(send, 303, b"", [(b"location", where.encode("latin-1")),
                                            (b"set-cookie", cookie.encode())])
            return
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no token
            jar = SimpleCookie()
        held = jar.get(self.cookie)
        if held is None or not hmac.compare_digest(held.value.encode(), self.token.encode()):
            await _refuse(send, 403, "No token: open the URL `harvester serve` printed (it carries the token once, "
                                     "then a cookie does).")
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"), *(headers or []), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _refuse(send: Send, status: int, reason: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await _respond(send, status, (reason + "\n").encode(), headers)
