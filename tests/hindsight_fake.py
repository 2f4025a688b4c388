"""A small recording stand-in for the Hindsight API (the calls harvester/sinks makes), for unit tests.

It keeps documents per bank as the real server does (1.1.0, /work/shared/hindsight.md): ``replace``
rewrites a document, ``append`` joins new content with "\\n", an item's tags and metadata replace the
document's, and a request whose ``operation_id`` it has seen is not applied again. It records every request,
and answers a queue of scripted failures first (``fail(status, times, headers)``), or what ``broken`` says
(a server that answers wrong: any status, a body that is bytes or JSON). tests/test_sink_real.py proves the
same behaviour against the real server.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


@dataclass
class FakeHindsight:
    documents: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # bank -> id -> document
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    token: str | None = None  # when set, a request without "Bearer <token>" gets 401
    delay: float = 0.0  # seconds a retain takes before it is applied (a kill -9 can land inside one)
    repeats: int = 0  # retains whose operation_id was seen before (sent again after a crash)
    pending_polls: int = 0  # a retain stays "pending" (not applied) for this many status reads
    lose: int = 0  # the next retains are acknowledged and then lost (a server killed before it wrote them)
    # (method, path) -> None (answer as the API does) or (status, body: bytes as they are or JSON, headers)
    broken: Callable[[str, str], tuple[int, Any, dict[str, str]] | None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHindsight:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                status, payload, headers = fake.handle(self.command, self.path, body, dict(self.headers))
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-type", "text/html" if isinstance(payload, bytes) else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def fail(self, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        self.failures += [(status, headers or {})] * times

    def retains(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.method == "POST" and r.path.endswith("/memories")]

    def text(self, bank: str, document_id: str) -> str:
        return self.documents[bank][document_id]["original_text"]

    # -- the API ----------------------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any, dict]:
        path = urlsplit(raw_path).path
        with self.lock:
            self.requests.append(Recorded(method, path, body, headers))
            if self.token is not None and headers.get("Authorization") != f"Bearer {self.token}":
                return 401, {"detail": "Not authenticated"}, {}
            if self.failures:
                status, extra = self.failures.pop(0)
                return status, {"detail": f"scripted {status}"}, extra
            answer = self.broken(method, path) if self.broken is not None else None
            if answer is not None:
                return answer
            if path == "/v1/version":
                return 200, {"api_version": "1.1.0", "features": {"observations": False}}, {}
            if path == "/v1/default/banks":
                return 200, {"banks": [{"bank_id": b} for b in self.documents], "total": len(self.documents)}, {}
            parts = path.split("/")  # ['', 'v1', 'default', 'banks', bank, what, ...]
            bank = unquote(parts[4])
            what = parts[5] if len(parts) > 5 else ""
            rest = unquote("/".join(parts[6:]))
            docs = self.documents.setdefault(bank, {})
            if what == "memories" and method == "POST":
                return self._retain(bank, docs, body)
            if what == "documents" and rest:
                if rest not in docs:
                    return 404, {"detail": "Document not found"}, {}
                if method == "DELETE":
                    del docs[rest]
                    return 200, {"success": True}, {}
                return 200, docs[rest], {}
            if what == "operations" and rest:
                op = self.operations.get(rest)
                if op is None:
                    return 404, {"detail": "Operation not found"}, {}
                if op["status"] == "pending":
                    op["polls"] -= 1
                    if op["polls"] <= 0:
                        op.pop("apply")()
                        op["status"] = "completed"
                return 200, {k: v for k, v in op.items() if k in ("operation_id", "status")}, {}
            return 404, {"detail": f"no route {path}"}, {}

    def _retain(self, bank: str, docs: dict[str, dict[str, Any]], body: dict[str, Any]) -> tuple[int, Any, dict]:
        if self.delay:
            time.sleep(self.delay)
        op = body.get("operation_id") or str(uuid.uuid4())
        if op in self.operations:  # seen: the same operation, applied once
            self.repeats += 1
            return 200, {"success": True, "async": True, "operation_id": op}, {}
        for item in body["items"]:
            if not isinstance(item.get("content"), str) or not item["content"]:
                return 422, {"detail": "content must be a non-empty string"}, {}
            if any(not isinstance(v, str) for v in (item.get("metadata") or {}).values()):
                return 422, {"detail": "metadata values must be strings"}, {}
        if self.lose:
            self.lose -= 1
            return 200, {"success": True, "async": True, "operation_id": op}, {}

        def apply() -> None:
            for item in body["items"]:
                doc_id = item["document_id"]
                old = docs.get(doc_id)
                text = item["content"]
                if item.get("update_mode") == "append" and old is not None:
                    text = old["original_text"] + "\n" + text
                docs[doc_id] = {"id": doc_id, "original_text": text, "tags": item.get("tags") or [],
                                "document_metadata": item.get("metadata"), "context": item.get("context"),
                                "timestamp": item.get("timestamp")}

        if self.pending_polls:
            self.operations[op] = {"operation_id": op, "status": "pending", "polls": self.pending_polls, "apply": apply}
        else:
            apply()
            self.operations[op] = {"operation_id": op, "status": "completed"}
        return 200, {"success": True, "async": True, "operation_id": op}, {}
