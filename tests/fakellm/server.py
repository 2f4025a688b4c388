"""The HTTP server: one routing table, request logging, JSON and chunked SSE responses."""

from __future__ import annotations

import gzip
import json
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.fakellm import anthropic, augment, gemini, openai_chat, openai_responses
from tests.fakellm.wire import JsonResponse, Request, Response, SseResponse, error

Handler = Callable[[Request], Response]
MODEL_IDS = ("fake-model", "claude-sonnet-4-5", "gpt-5")


class _QuietServer(ThreadingHTTPServer):
    """An agent killed mid-answer (the e2e kill turns) hangs up on its stream: not an error of the server."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def list_models(req: Request) -> Response:
    now = int(time.time())
    data = [{"id": m, "object": "model", "created": now, "owned_by": "fakellm"} for m in MODEL_IDS]
    return JsonResponse({"object": "list", "data": data})


# (method, path regex, handler); the first match wins.
ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("POST", re.compile(r"/v1/messages"), anthropic.messages),
    ("POST", re.compile(r"/v1/messages/count_tokens"), anthropic.count_tokens),
    ("POST", re.compile(r"/v1/responses"), openai_responses.responses),
    ("POST", re.compile(r"/v1/chat/completions"), openai_chat.chat_completions),
    ("GET", re.compile(r"/v1/models"), list_models),
    ("POST", re.compile(r"/v1(?:beta|alpha)?/models/[^/]+:\w+"), gemini.models_action),
    ("GET", re.compile(r"/v1(?:beta|alpha)/models"), gemini.list_models),
    ("GET", re.compile(r"/v1(?:beta|alpha)/models/[^/:]+"), gemini.get_model),
    # Augment's backend (Auggie): its endpoints sit at the tenant URL's root.
    ("POST", augment.ENDPOINTS, augment.endpoint),
]


def route(req: Request) -> Response:
    for method, pattern, handler in ROUTES:
        if method == req.method and pattern.fullmatch(req.path.rstrip("/")):
            return handler(req)
    return error(404, f"no route for {req.method} {req.path}", "not_found_error")


class FakeLLM:
    """A scripted model server on 127.0.0.1, for tests (``with FakeLLM() as llm:``) and the CLI.

    ``requests`` logs every request received as ``(path, parsed JSON body)``; the path keeps its query
    string (``/v1/messages?beta=true``). With ``log`` set, each request is also appended to that file as
    one JSON line ``{"method", "path", "headers", "body"}``.
    """

    def __init__(self, port: int = 0, log: Path | None = None) -> None:
        self._wanted_port = port
        self._log_path = log
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[tuple[str, Any]] = []

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeLLM is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeLLM:
        self._server = _QuietServer(("127.0.0.1", self._wanted_port), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fakellm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, req: Request, raw_path: str) -> None:
        with self._lock:
            self.requests.append((raw_path, req.body))
            if self._log_path is not None:
                entry = {"method": req.method, "path": raw_path, "headers": req.headers, "body": req.body}
                with self._log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")


def _make_handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "fakellm/1"

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _handle(self) -> None:
            url = urlsplit(self.path)
            req = Request(
                method=self.command,
                path=url.path,
                query=dict(parse_qsl(url.query)),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self._read_body(),
            )
            fake.record(req, self.path)
            try:
                response = route(req)
            except Exception as exc:  # a bug in the script must not hang the agent
                response = error(500, f"fakellm: {type(exc).__name__}: {exc}", "api_error")
            if response.delay:
                time.sleep(response.delay)
            if isinstance(response, SseResponse):
                self._send_sse(response)
            else:
                self._send_json(response)

        def _read_body(self) -> Any:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                raw = self._read_chunked()
            else:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            raw = _decode(raw, self.headers.get("Content-Encoding", ""))
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _read_chunked(self) -> bytes:
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()

        def _send_json(self, response: JsonResponse) -> None:
            data = json.dumps(response.body).encode()
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_sse(self, response: SseResponse) -> None:
            self.send_response(response.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for chunk in response.chunks():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return _Handler


def _decode(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.lower().strip()
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    if encoding == "zstd":
        import zstandard  # type: ignore[import-not-found]  # optional; Codex may compress bodies

        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20)
    return raw
