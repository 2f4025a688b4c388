"""An overall deadline for an HTTP request, which httpx lacks: its timeouts bound each read and each write, so a
server that sends (or takes) a byte every few seconds holds a request for ever (encode/httpx#1450).

:func:`transport` is httpx's own transport over a connection pool whose network streams give every connect,
TLS handshake, read and socket send at most the time left before the deadline that :class:`Deadline` holds
for the request under way, and refuse any once it has passed (``httpx.ReadTimeout`` and its kin, saying
so). Nothing runs beside the request: no timer thread, no socket closed from elsewhere.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx


class Deadline:
    """When the request under way on this thread must be done; none between requests."""

    def __init__(self) -> None:
        self._local = threading.local()

    def start(self, seconds: float) -> None:
        self._local.at, self._local.seconds = time.monotonic() + seconds, seconds

    def clear(self) -> None:
        self._local.at = None

    def passed(self) -> bool:
        at = getattr(self._local, "at", None)
        return at is not None and time.monotonic() >= at

    def left(self, timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
        """``timeout`` (httpx's per-operation one), or less: what is left of the deadline; ``error`` when
        nothing is."""
        at = getattr(self._local, "at", None)
        if at is None:
            return timeout
        left = at - time.monotonic()
        if left <= 0:
            raise error(f"no complete answer within {self._local.seconds:g} s")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        sock = self._inner.get_extra_info("socket")
        if not isinstance(sock, socket.socket):  # not a plain or TLS socket (TLS in TLS, through a proxy)
            self._inner.write(buffer, self._deadline.left(timeout, httpcore.WriteTimeout))
            return
        # httpcore's own write gives each send() the whole timeout: a server that takes a byte at a time
        # would stretch one write for ever. Here each send gets what is left.
        view = memoryview(buffer)
        while view:
            sock.settimeout(self._deadline.left(timeout, httpcore.WriteTimeout))
            try:
                sent = sock.send(view)
            except TimeoutError as exc:  # socket.timeout, ssl's too
                raise httpcore.WriteTimeout(str(exc) or "write timed out") from exc
            except (OSError, ssl.SSLError) as exc:
                raise httpcore.WriteError(str(exc)) from exc
            view = view[sent:]

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname,
                                      self._deadline.left(timeout, httpcore.ConnectTimeout))
        return _Stream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.SyncBackend):
    def __init__(self, deadline: Deadline) -> None:
        self._deadline = deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = super().connect_tcp(host, port, self._deadline.left(timeout, httpcore.ConnectTimeout),
                                     local_address, socket_options)
        return _Stream(stream, self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = super().connect_unix_socket(path, self._deadline.left(timeout, httpcore.ConnectTimeout),
                                             socket_options)
        return _Stream(stream, self._deadline)


def transport(deadline: Deadline, limits: httpx.Limits) -> httpx.HTTPTransport:
    """httpx's transport (its request and response mapping, its errors), over a pool that keeps ``deadline``.
    httpx builds its pool without a way to pass a network backend; its transport keeps the pool in
    ``_pool``, which is replaced here: were that to change, this raises rather than go on without a deadline
    (and tests/test_sink_hostile.py would say so)."""
    made = httpx.HTTPTransport(limits=limits)
    if not isinstance(getattr(made, "_pool", None), httpcore.ConnectionPool):
        raise RuntimeError("httpx.HTTPTransport keeps its connection pool elsewhere: the deadline cannot be set")
    made._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(), max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
        network_backend=_Backend(deadline))
    return made
