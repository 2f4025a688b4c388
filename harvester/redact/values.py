"""``redact_value``: ``redact`` over JSON-like values, plus the values of keys that name a secret.

Keys are redacted too (a dict keyed by tokens, a URL with a password as a key): a key that its redaction
would make equal to another key of the same dict gets a number after it, so that no value is lost. With
``urls=True`` (metadata), every URL in a string also loses its userinfo and its credential query values
(``urls.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container
from typing import Any

from harvester.redact.engine import MARKER, redact
from harvester.redact.judging import _NOT_SECRET_KEYS, _is_placeholder, _is_user_password_base64
from harvester.redact.urls import clean_urls_in

# A key (lowercased) that ends with one of these names a secret; first match wins.
_KEY_KINDS: tuple[tuple[str, str], ...] = (
    ("secret_access_key", "aws-secret-access-key"), ("secret-access-key", "aws-secret-access-key"),
    ("secretaccesskey", "aws-secret-access-key"),
    ("password", "password"), ("passwd", "password"), ("passphrase", "password"),
    ("secret", "secret"), ("secret_key", "secret"), ("secret-key", "secret"), ("secretkey", "secret"),
    ("token", "token"),
    ("api_key", "api-key"), ("api-key", "api-key"), ("apikey", "api-key"),
    ("private_key", "private-key"), ("private-key", "private-key"), ("privatekey", "private-key"),
    ("client-key-data", "private-key"), ("app_key", "secret"), ("app-key", "secret"),
    ("previous_keys", "secret"),
    ("authorization", "authorization"),
)
_BASIC = "basic"  # Docker's "auth": a password only if the value is base64 of user:password
_SCHEME = re.compile(r"((?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|sso-key)\s+)(\S.*)",
                     re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=4096)
def _key_kind(key: str) -> str | None:
    k = key.lower()
    if k.encode("utf-8", "replace") in _NOT_SECRET_KEYS:  # keys may hold lone surrogates
        return None
    if k == "auth":
        return _BASIC
    for suffix, kind in _KEY_KINDS:
        if k.endswith(suffix):
            return kind
    return None


def _merge(into: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n


def _walk(value: Any, kind: str | None, counts: dict[str, int], urls: bool, clean: Container[str]) -> Any:
    if isinstance(value, str):
        return _string(value, kind, counts, urls, clean)
    if isinstance(value, dict):
        # {"name": "DB_PASSWORD", "value": "..."}: Kubernetes env entries, GitHub/CI variable listings.
        named = value.get("name", value.get("key"))
        named_kind = _key_kind(named) if isinstance(named, str) and "value" in value else None
        out: dict[Any, Any] | None = None
        pairs = list(value.items())
        for i, (k, v) in enumerate(pairs):
            if k == "value" and named_kind:
                k_kind: str | None = named_kind
            else:
                k_kind = _key_kind(k) if isinstance(k, str) else None
            new = _walk(v, k_kind, counts, urls, clean)
            new_k = _key(k, counts) if isinstance(k, str) else k
            if out is None:
                if new is v and new_k is k:
                    continue
                out = dict(pairs[:i])  # the keys before this one, unchanged
            if new_k is not k:
                base, n = new_k, 2
                while new_k in out or new_k in value:  # never over another key and its value
                    new_k, n = f"{base} ({n})", n + 1
            out[new_k] = new
        return value if out is None else out
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            new = _walk(v, kind, counts, urls, clean)  # {"tokens": [...]} is not secret, {"token": [...]} is
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        if items is None:
            return value
        return items if isinstance(value, list) else tuple(items)
    return value  # numbers, booleans, None: not secrets even under a secret key


def _string(value: str, kind: str | None, counts: dict[str, int], urls: bool, clean: Container[str]) -> str:
    if urls:
        value, found = clean_urls_in(value)
        _merge(counts, found)
    if value in clean:
        new, found = value, {}  # what redact returns for it (screen.py)
    else:
        new, found = redact(value)
    if found:
        _merge(counts, found)
        return new
    if kind is None or len(value) < 3 or _is_placeholder(value):
        return value
    if kind == _BASIC:
        if not _is_user_password_base64(value.encode("latin-1", "replace")):
            return value
        kind = "password"
    counts[kind] = counts.get(kind, 0) + 1
    if kind == "authorization" and (m := _SCHEME.fullmatch(value)):
        return m.group(1) + MARKER.format(kind)  # "Bearer [REDACTED:authorization]"
    return MARKER.format(kind)


def _key(key: str, counts: dict[str, int]) -> str:
    """A dict key redacted; the key itself when it holds nothing (most keys repeat: cached)."""
    new, found = _redacted_key(key)
    if not found:
        return key  # the very object: the cache holds an equal key, maybe another object
    for kind, n in found:
        counts[kind] = counts.get(kind, 0) + n
    return new


@functools.lru_cache(maxsize=4096)
def _redacted_key(key: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    new, found = redact(key)
    return new, tuple(found.items())


def redact_value(value: Any, urls: bool = False, clean: Container[str] = ()) -> tuple[Any, dict[str, int]]:
    """``redact`` over a JSON-like value (its keys too), plus the string values of keys that name a secret.

    Returns ``value`` itself and ``{}`` when nothing was found; otherwise changed containers are copies
    and unchanged ones are shared with the input. Numbers, booleans and None stay even under a secret key.
    ``urls``: also clean every URL structurally (metadata; see ``urls.py``). ``clean``: strings known to hold
    nothing for ``redact`` (``screen.clean_strings``), not scanned again.
    """
    counts: dict[str, int] = {}
    return _walk(value, None, counts, urls, clean), counts


def strings_of(value: Any, out: list[str]) -> bool:
    """Add every string of a JSON-like value to ``out``, its keys' too; whether ``redact_value`` may find more
    than ``redact`` finds in them: a key that names a secret, a ``{"name": ..., "value": ...}`` entry."""
    if isinstance(value, str):
        out.append(value)
        return False
    named = False
    if isinstance(value, dict):
        if "value" in value and ("name" in value or "key" in value):
            named = True
        for k, v in value.items():
            if isinstance(k, str):
                out.append(k)
                if _key_kind(k) is not None:
                    named = True
            if strings_of(v, out):
                named = True
    elif isinstance(value, list | tuple):
        for v in value:
            if strings_of(v, out):
                named = True
    return named
