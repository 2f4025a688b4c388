"""The few calls of Hindsight's REST API that forwarding needs (API 1.1), and how their failures are told.

A failure is either worth retrying (the server unreachable, a timeout, 408, 429 and 503 with their
``Retry-After``, any 5xx, an answer that is not the API's) or final (any other 4xx: the request itself is
wrong and would fail again); :class:`SinkError` says which. The token goes in the ``Authorization`` header
and nowhere else (no log, no message).

A server is not trusted to behave: a request has an overall deadline (deadline.py: a server dribbling its
answer a byte at a time is cut off), an answer a size limit, a ``Retry-After`` a cap; and an answer that is
not JSON, or not of the shape the API documents (an object; an operation with a status; a version with one),
is an error, never read as "not found" or "nothing to say".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from harvester.sinks.deadline import Deadline, transport
from harvester.sinks.document import Document

TIMEOUT_SECONDS = 30.0  # for each read and write; a retain of a long session's document is one request
CONNECT_SECONDS = 5.0
DEADLINE_SECONDS = 120.0  # for a whole request: a long document over a slow link, with room to spare
MAX_ANSWER_BYTES = 64 << 20  # a document's text comes back whole (GET document); 64 MiB is far past any session
MAX_WAIT_SECONDS = 600.0  # the longest a Retry-After is followed (and the outbox's longest back-off)
RETRYABLE = (408, 429)
SAYS_WHEN = (429, 503)  # statuses whose Retry-After says when to come back


class SinkError(Exception):
    def __init__(self, message: str, retryable: bool, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.retryable, self.retry_after, self.status = retryable, retry_after, status


@dataclass(slots=True)
class Hindsight:
    url: str
    token: str | None = None
    timeout: float = TIMEOUT_SECONDS
    deadline: float | None = None  # seconds for a whole request; None: DEADLINE_SECONDS
    _client: httpx.Client | None = None
    _clock: Deadline | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"User-Agent": "harvester"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            self._clock = Deadline()
            self._client = httpx.Client(base_url=self.url, headers=headers,
                                        timeout=httpx.Timeout(self.timeout, connect=CONNECT_SECONDS),
                                        transport=transport(self._clock, httpx.Limits(max_connections=4)))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _call(self, method: str, path: str, body: Any = None, missing_ok: bool = False) -> dict[str, Any] | None:
        """The JSON object the server answered (None: a 404 that ``missing_ok`` allows)."""
        client = self._http()
        assert self._clock is not None
        limit, deadline = MAX_ANSWER_BYTES, self.deadline or DEADLINE_SECONDS
        self._clock.start(deadline)
        try:
            with client.stream(method, path, json=body) as response:
                if missing_ok and response.status_code == 404:
                    return None
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > limit:
                        raise SinkError(f"{method} {path}: an answer larger than {_size(limit)}", retryable=True,
                                        status=response.status_code)
        except httpx.HTTPError as exc:  # refused, reset, timed out, cut off at the deadline, a bad answer
            if self._clock.passed():  # the last read or write waited out what was left: say what ran out
                raise SinkError(f"{method} {path}: no complete answer within {deadline:g} s", retryable=True) from exc
            raise SinkError(f"{method} {path}: {type(exc).__name__}: {exc}", retryable=True) from exc
        finally:
            self._clock.clear()
        if response.status_code >= 400:
            raise _error(method, path, response.status_code, response.headers, bytes(data))
        if response.status_code == 204 and not data:  # "done, nothing to say" is the API's too
            return {}
        try:
            answer = orjson.loads(data)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise _not_the_api(method, path, response.status_code, bytes(data), "not a JSON object")
        return answer

    def version(self) -> dict[str, Any]:
        found = self._call("GET", "/v1/version") or {}
        if not isinstance(found.get("api_version"), str):
            raise _not_the_api("GET", "/v1/version", 200, orjson.dumps(found), "no api_version")
        return found

    def banks(self, limit: int = 1) -> dict[str, Any]:
        """The first banks: a call that needs the token where the server requires one (version does not)."""
        return self._call("GET", f"/v1/default/banks?limit={limit}") or {}

    def document(self, bank: str, document_id: str) -> dict[str, Any] | None:
        return self._call("GET", f"{_bank(bank)}/documents/{quote(document_id, safe='')}", missing_ok=True)

    def delete_document(self, bank: str, document_id: str) -> None:
        self._call("DELETE", f"{_bank(bank)}/documents/{quote(document_id, safe='')}", missing_ok=True)

    def operation(self, bank: str, operation_id: str) -> dict[str, Any] | None:
        path = f"{_bank(bank)}/operations/{operation_id}"
        found = self._call("GET", path, missing_ok=True)
        if found is not None and not isinstance(found.get("status"), str):
            raise _not_the_api("GET", path, 200, orjson.dumps(found), "an operation without a status")
        return found

    def retain(self, bank: str, doc: Document, content: str, mode: str, operation_id: str) -> dict[str, Any]:
        """Send ``content`` as ``doc``: the whole document (``replace``) or what it gained (``append``), with
        its tags and metadata every time (an append without them clears them on the server)."""
        item: dict[str, Any] = {
            "content": content, "document_id": doc.document_id, "context": doc.context,
            "metadata": doc.metadata, "tags": doc.tags, "update_mode": mode,
        }
        if doc.timestamp:
            item["timestamp"] = doc.timestamp
        return self._call("POST", f"{_bank(bank)}/memories",
                          {"items": [item], "async": True, "operation_id": operation_id}) or {}


def _bank(bank: str) -> str:
    return f"/v1/default/banks/{quote(bank, safe='')}"


def _error(method: str, path: str, status: int, headers: httpx.Headers, data: bytes) -> SinkError:
    retry_after = _retry_after(headers.get("Retry-After")) if status in SAYS_WHEN else None
    retryable = status in RETRYABLE or status >= 500
    return SinkError(f"{method} {path}: HTTP {status}: {_detail(data)}", retryable=retryable,
                     retry_after=retry_after, status=status)


def _not_the_api(method: str, path: str, status: int, data: bytes, why: str) -> SinkError:
    """A 2xx answer that is not what the API answers (a web page at the URL, a proxy's, a broken server): for
    the document it was about, an error to retry after a while."""
    return SinkError(f"{method} {path}: not a Hindsight answer ({why}): HTTP {status}: {_detail(data)}",
                     retryable=True, status=status)


def _detail(data: bytes) -> str:
    """The start of an answer, on one line."""
    return " ".join(data[:300].decode("utf-8", errors="replace").split())[:200]


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def _retry_after(value: str | None) -> float | None:
    """``Retry-After``: seconds, or an HTTP date (RFC 9110), as a wait of 0 to MAX_WAIT_SECONDS; None when it
    says nothing usable. Whatever the server wrote (negative, 1e12, nan, a date in the year 9999), this
    neither raises nor waits longer than the cap."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
    if math.isnan(seconds):
        return None
    return min(MAX_WAIT_SECONDS, max(0.0, seconds))
