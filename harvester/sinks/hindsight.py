"""The few calls of Hindsight's REST API that forwarding needs (API 1.1), and how their failures are told.

A failure is either worth retrying (the server unreachable, a timeout, 408, 429 with its ``Retry-After``,
any 5xx) or final (any other 4xx: the request itself is wrong and would fail again); :class:`SinkError`
says which. The token goes in the ``Authorization`` header and nowhere else (no log, no message).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx

from harvester.sinks.document import Document

TIMEOUT_SECONDS = 30.0  # a retain of a long session's document is one request
CONNECT_SECONDS = 5.0
RETRYABLE = (408, 429)


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
    _client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"User-Agent": "harvester"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            self._client = httpx.Client(base_url=self.url, headers=headers,
                                        timeout=httpx.Timeout(self.timeout, connect=CONNECT_SECONDS))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _call(self, method: str, path: str, body: Any = None, missing_ok: bool = False) -> Any:
        try:
            response = self._http().request(method, path, json=body)
        except httpx.HTTPError as exc:  # refused, reset, timed out, a bad answer
            raise SinkError(f"{method} {path}: {type(exc).__name__}: {exc}", retryable=True) from exc
        if missing_ok and response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise _error(method, path, response)
        try:
            return response.json()
        except ValueError:
            return None

    def version(self) -> dict[str, Any]:
        return self._call("GET", "/v1/version") or {}

    def banks(self, limit: int = 1) -> dict[str, Any]:
        """The first banks: a call that needs the token where the server requires one (version does not)."""
        return self._call("GET", f"/v1/default/banks?limit={limit}") or {}

    def document(self, bank: str, document_id: str) -> dict[str, Any] | None:
        return self._call("GET", f"{_bank(bank)}/documents/{quote(document_id, safe='')}", missing_ok=True)

    def delete_document(self, bank: str, document_id: str) -> None:
        self._call("DELETE", f"{_bank(bank)}/documents/{quote(document_id, safe='')}", missing_ok=True)

    def operation(self, bank: str, operation_id: str) -> dict[str, Any] | None:
        return self._call("GET", f"{_bank(bank)}/operations/{operation_id}", missing_ok=True)

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


def _error(method: str, path: str, response: httpx.Response) -> SinkError:
    status = response.status_code
    detail = response.text[:300].replace("\n", " ")
    retry_after = None
    if status == 429:
        retry_after = _retry_after(response.headers.get("Retry-After"))
    retryable = status in RETRYABLE or status >= 500
    return SinkError(f"{method} {path}: HTTP {status}: {detail}", retryable=retryable, retry_after=retry_after,
                     status=status)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After``: seconds, or an HTTP date (RFC 9110)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
