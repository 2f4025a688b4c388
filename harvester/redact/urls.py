"""URLs stored as metadata: no userinfo, no credential in the query.

A URL an agent records beside a session (the repository it cloned, ``git.repository_url``; a remote that git
probing reads; any metadata value that is a URL) is cleaned by its structure, not by the text rules: the
userinfo goes whole (``https://x-access-token:<token>@github.com/o/r`` becomes ``https://github.com/o/r``,
``ssh://git@host/r`` becomes ``ssh://host/r``: what is left names the same repository), and the value of every
query parameter whose name says it holds a credential (``access_token``, ``private_token``, ``sig``,
``X-Amz-Signature``, ``key``, ``password``...) becomes ``[REDACTED:token]``. An scp-like remote
(``git@github.com:o/r.git``) has a user name and no place for a password; it stays as written. Nothing else
changes, so a clean URL is returned as the very object given.
"""

from __future__ import annotations

import re

MARKER = "[REDACTED:token]"

# A URL inside a longer value: a scheme, "://", then up to a blank, a quote or a bracket.
_URL = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>`]+""")
# A query parameter that holds a credential: its name (lowercased) is, or ends with, one of these.
_CREDENTIAL_PARAMETER = re.compile(
    r"(?:.*[_.-])?(?:token|secret|password|passwd|pwd|pass|sig|signature|key|apikey|auth|credential|code|session)"
    r"|x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)")


def clean_url(url: str) -> str:
    """``url`` without its userinfo and with its credential query values replaced by a marker."""
    return _clean(url, {})


def clean_urls_in(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with every URL in it cleaned (:func:`clean_url`), and what went: ``url-password`` for a
    userinfo, ``token`` for a query value. ``text`` itself and ``{}`` when nothing did."""
    counts: dict[str, int] = {}
    if "://" not in text:
        return text, counts
    cleaned = _URL.sub(lambda m: _clean(m.group(), counts), text)
    return (text, counts) if not counts else (cleaned, counts)


def _clean(url: str, counts: dict[str, int]) -> str:
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    at = authority.rfind("@")
    if at >= 0:
        authority = authority[at + 1 :]
        counts["url-password"] = counts.get("url-password", 0) + 1
    query_at = tail.find("?")
    if query_at >= 0:
        end = tail.find("#", query_at)
        end = len(tail) if end < 0 else end
        tail = tail[: query_at + 1] + _clean_query(tail[query_at + 1 : end], counts) + tail[end:]
    cleaned = f"{scheme}://{authority}{tail}"
    return url if cleaned == url else cleaned


def _clean_query(query: str, counts: dict[str, int]) -> str:
    parts = []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        if eq and value and value != MARKER and _CREDENTIAL_PARAMETER.fullmatch(name.lower()):
            part = f"{name}={MARKER}"
            counts["token"] = counts.get("token", 0) + 1
        parts.append(part)
    return "&".join(parts)
