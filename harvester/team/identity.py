"""A repository's identity across machines: what makes two clones one repository in the team bank.

Its normalized origin URL (harvester.gitident.normalize_origin: ``git@host:a/b.git``, ``https://host/a/b`` and
``ssh://git@host:22/a/b`` are all ``host/a/b``), whatever the clone's folder is called. A repository without a
remote, or whose remote is a path on this machine, has no identity another machine could share: it stays this
machine's, keyed ``<machine id>:<its root>`` (the cwd outside git). The bank id (``coding-agent::{gitProject}``)
is the name shown, as locally.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_LOCAL = re.compile(r"^(/|~|\.|[A-Za-z]:[\\/]|\\\\)")  # a path, not host/path


def shared_origin(origin_id: str | None, origin_url: str | None = None) -> str | None:
    """The normalized origin two machines can share, or None (no remote, or a local path)."""
    if not origin_id and origin_url:
        from harvester.gitident import normalize_origin

        origin_id = normalize_origin(origin_url)
    if not origin_id or _LOCAL.match(origin_id) or "/" not in origin_id:
        return None
    return origin_id


def repo_key(row: Mapping[str, Any], machine: str) -> tuple[str, str, str | None]:
    """(repo_key, name shown, origin URL without credentials) of a local session row."""
    from harvester.gitident import strip_credentials

    origin = shared_origin(row.get("origin_id"), row.get("origin_url"))
    if origin is not None:
        return origin, row["bank_id"], strip_credentials(row.get("origin_url"))
    where = row.get("repo_root") or row.get("cwd") or row["bank_id"]
    return f"{machine}:{where}", row["bank_id"], None
