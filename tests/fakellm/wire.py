"""Protocol-neutral plumbing: the parsed request, the response shapes, ids and SSE framing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request as a route handler sees it."""

    method: str
    path: str  # without the query string
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when there was no (JSON) body


@dataclass(frozen=True, slots=True)
class JsonResponse:
    body: Any
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event; ``data`` is JSON-encoded unless it is already a string (``[DONE]``)."""

    data: Any
    event: str | None = None

    def encode(self) -> bytes:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data, separators=(",", ":"))
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {data}\n\n".encode()


@dataclass(slots=True)
class SseResponse:
    events: Iterable[SseEvent]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def chunks(self) -> Iterator[bytes]:
        for ev in self.events:
            yield ev.encode()


Response = JsonResponse | SseResponse


def new_id(prefix: str) -> str:
    """An id shaped like the real ones (``msg_…``, ``toolu_…``, ``resp_…``, ``call_…``)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def estimate_tokens(body: Any) -> int:
    """A rough, deterministic token count: four bytes of request JSON per token."""
    return max(1, len(json.dumps(body, separators=(",", ":"))) // 4)


def error(status: int, message: str, kind: str = "invalid_request_error") -> JsonResponse:
    return JsonResponse({"type": "error", "error": {"type": kind, "message": message}}, status)
