"""A deterministic embedding server on 127.0.0.1, so a real Hindsight runs offline (see ``tests.services``).

Why: Hindsight's default embedder is a model fetched from a hub at start-up, which cannot work here, and
fakellm's ``/v1/embeddings`` answers all-zero vectors, which pgvector cannot rank (the cosine distance of
a zero vector is undefined). This one answers an L2-normalised hashed bag of the lower-cased word tokens
(never all zero), so texts that share words are near each other and recall has something to rank.

Routes: ``POST /v1/embeddings`` (OpenAI's shape, what Hindsight's ``openai`` provider calls), ``POST /embed``
(TEI's shape), ``GET /info`` (TEI) and ``GET /v1/models``. Stdlib only.

    with FakeEmbed() as embed:
        env["HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL"] = f"{embed.base_url}/v1"

``python -m tests.fakeembed --port 0 --port-file F`` serves until killed and writes the port it got to F.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DIM = 384  # what Hindsight learns from one test embedding at start-up; all-MiniLM-L6-v2's size
MODEL = "fakeembed"


def embed(text: str) -> list[float]:
    """The vector of ``text``: each word token adds ±1 to the dimension its hash picks, then L2-normalised."""
    vector = [0.0] * DIM
    for token in re.findall(r"\w+", (text or "").lower()) or ["<empty>"]:
        h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
        vector[h % DIM] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:  # every token cancelled out: still a usable direction
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, obj: object, code: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/info"):
            self._send({"model_id": MODEL, "max_input_length": 512, "max_client_batch_size": 256})
        else:
            self._send({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send({"error": "body is not JSON"}, 400)
            return
        self.server.calls += 1
        if self.path.endswith("/embeddings"):
            texts = _as_list(body.get("input", ""))
            data = [{"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)]
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            self._send({"object": "list", "model": body.get("model", MODEL), "data": data, "usage": usage})
        elif self.path.endswith("/embed"):
            self._send([embed(t) for t in _as_list(body.get("inputs", ""))])
        else:
            self._send({"error": f"no such path {self.path}"}, 404)


def _as_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    calls = 0  # embedding requests answered


class FakeEmbed:
    """The server in a thread of this process (``with FakeEmbed() as embed:``); ``calls`` counts requests."""

    def __init__(self, port: int = 0) -> None:
        self._wanted_port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeEmbed is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def calls(self) -> int:
        return self._server.calls if self._server is not None else 0

    def start(self) -> FakeEmbed:
        self._server = _Server(("127.0.0.1", self._wanted_port), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fakeembed", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeEmbed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the port it listens on here")
    args = parser.parse_args()
    server = _Server(("127.0.0.1", args.port), _Handler)
    if args.port_file:
        args.port_file.write_text(str(server.server_address[1]))
    print(f"fakeembed on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
