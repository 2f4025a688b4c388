"""``redact_value``: ``redact`` over JSON-like values, plus the values of keys that name a secret."""

from __future__ import annotations

import functools
import re
from typing import Any

from harvester.redact.engine import MARKER, redact
from harvester.redact.judging import _NOT_SECRET_KEYS, _is_placeholder

# A key (lowercased) that ends with one of these names a secret; first match wins.
_KEY_KINDS: tuple[tuple[str, str], ...] = (
    ("secret_access_key", "aws-secret-access-key"), ("secret-access-key", "aws-secret-access-key"),
    ("secretaccesskey", "aws-secret-access-key"),
    ("password", "password"), ("passwd", "password"), ("passphrase", "password"),
    ("secret", "secret"), ("secret_key", "secret"), ("secret-key", "secret"), ("secretkey", "secret"),
    ("token", "token"),
    ("api_key", "api-key"), ("api-key", "api-key"), ("apikey", "api-key"),
    ("private_key", "private-key"), ("private-key", "private-key"), ("privatekey", "private-key"),
    ("authorization", "authorization"),
)
_SCHEME = re.compile(r"((?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|sso-key)\s+)(\S.*)",
                     re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=4096)
def _key_kind(key: str) -> str | None:
    k = key.lower()
    if k.encode("utf-8", "replace") in _NOT_SECRET_KEYS:  # keys may hold lone surrogates
        return None
    for suffix, kind in _KEY_KINDS:
        if k.endswith(suffix):
            return kind
    return None


def _merge(into: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n


def _walk(value: Any, kind: str | None, counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        new, found = redact(value)
        if found:
            _merge(counts, found)
            return new
        if kind is None or len(value) < 3 or _is_placeholder(value):
            return value
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "authorization" and (m := _SCHEME.fullmatch(value)):
            return m.group(1) + MARKER.format(kind)  # "Bearer [REDACTED:authorization]"
        return MARKER.format(kind)
    if isinstance(value, dict):
        # {"name": "DB_PASSWORD", "value": "..."}: Kubernetes env entries, GitHub/CI variable listings.
        named = value.get("name", value.get("key"))
        named_kind = _key_kind(named) if isinstance(named, str) and "value" in value else None
        out: dict[Any, Any] | None = None
        for k, v in value.items():
            if k == "value" and named_kind:
                k_kind: str | None = named_kind
            else:
                k_kind = _key_kind(k) if isinstance(k, str) else None
            new = _walk(v, k_kind, counts)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            new = _walk(v, kind, counts)  # {"tokens": [...]} is not secret, {"token": [...]} is
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        if items is None:
            return value
        return items if isinstance(value, list) else tuple(items)
    return value  # numbers, booleans, None: not secrets even under a secret key


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """``redact`` over a JSON-like value, plus the string values of keys that name a secret.

    Returns ``value`` itself and ``{}`` when nothing was found; otherwise changed containers are copies
    and unchanged ones are shared with the input. Keys are kept as they are; numbers, booleans and
    None stay even under a secret key.
    """
    counts: dict[str, int] = {}
    return _walk(value, None, counts), counts
