"""Repositories as the bank holds them: which ones share a label (a bank id, a Hindsight bank), and the label each
is kept apart under. Read-only: ``status`` warns with it, the Hindsight sink files documents by it.

A session carries one identity key, the strongest its repository had when it was filed (harvester/gitident.py).
A repository here is every key linked by its sessions: a key shared by clones, and the keys one main worktree
had over time (its path before its first commit, its first commit before it got a remote, then its origin),
linked by that worktree's path (``sessions.repo_root``). Sessions of unknown repository (no key) are counted
apart: they are no repository's, and are filed under their label as they are.

The rule for a label two or more repositories share (``coding-agent::api`` of ``~/work/a/api`` and
``~/work/b/api``): the repository whose earliest session started first keeps the label; every other one is kept
apart under ``<label>@<its key, in letters, digits, '.', '_' and '-'>`` (``coding-agent::api@github.com-b-api``,
``coding-agent::api@root-1a2b3c4d5e6f``, ``coding-agent::api@path-home-me-work-b-api``; one past 80 characters is
cut and ends with a hash of the whole). "Started first" is the
sessions' own start time, which a reparse keeps and every machine holding them agrees on; it changes only when a
session older than all of the first one's is captured later (an agent enabled later with older history), and
then the documents follow (harvester/sinks/forward.py moves them).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

_RANK = {"origin": 0, "root": 1, "path": 2}
_LAST = "coalesce(updated_at, started_at, last_imported_at)"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_SUFFIX = 80


@dataclass(slots=True)
class Repository:
    key: str  # its strongest key: what it is called
    keys: set[str] = field(default_factory=set)
    sessions: int = 0
    first: str = ""  # when its earliest session started
    label: str = ""  # where it is kept apart
    last: str = ""  # when its latest session was last written (what a list of repositories is sorted by)
    roots: set[str] = field(default_factory=set)  # the main worktrees its sessions were recorded in


@dataclass(slots=True)
class Repositories:
    shared: dict[str, list[Repository]]  # label -> its repositories, first first (labels of two or more only)
    unknown: int = 0  # sessions whose repository is unknown
    unknown_by_label: dict[str, int] = field(default_factory=dict)
    every: list[Repository] = field(default_factory=list)  # every repository, each with its label (the web viewer)

    def label(self, label: str, key: str | None) -> str:
        """The label a session of repository ``key`` filed under ``label`` is kept apart under."""
        for repository in self.shared.get(label, ()):
            if key in repository.keys:
                return repository.label
        return label

    def shared_keys(self) -> list[str]:
        """The keys of every repository that shares its label with another."""
        return sorted(k for repositories in self.shared.values() for r in repositories for k in r.keys)


def suffix(key: str) -> str:
    """A key as a label's suffix: letters, digits, '.', '_' and '-' only (a Hindsight bank id goes into a URL's
    path), at most MAX_SUFFIX characters (a longer one is cut and keeps a hash of the whole)."""
    kind, _, body = key.partition(":")
    text = _UNSAFE.sub("-", {"root": f"root-{body[:12]}", "path": f"path{body}"}.get(kind, body)).strip("-")
    if len(text) > MAX_SUFFIX:
        import hashlib  # here: status, which reads labels, has no other use for it

        text = text[:MAX_SUFFIX - 9].rstrip("-") + "-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return text


def repositories(conn: sqlite3.Connection, label_of: Callable[[Mapping[str, Any]], str] | None = None) -> Repositories:
    """The bank's repositories per label: ``label_of`` a session row's (project, cwd, harness, bank_id) label
    (default: its bank id)."""
    if label_of is None:
        sql = ("SELECT bank_id, repo_key, repo_root, min(coalesce(started_at, first_imported_at)), count(*), "
               f"max({_LAST}) FROM sessions GROUP BY bank_id, repo_key, repo_root")
        rows = list(conn.execute(sql))
    else:
        sql = ("SELECT bank_id, project, cwd, harness, repo_key, repo_root, "
               f"min(coalesce(started_at, first_imported_at)), count(*), max({_LAST}) FROM sessions "
               "GROUP BY bank_id, project, cwd, harness, repo_key, repo_root")
        rows = [(label_of({"bank_id": bank, "project": project, "cwd": cwd, "harness": harness}), key, root, first, n,
                 last) for bank, project, cwd, harness, key, root, first, n, last in conn.execute(sql)]
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for _, key, root, _, _, _ in rows:
        if key is not None and root:
            parent[find("k" + key)] = find("r" + root)
    out = Repositories({})
    grouped: dict[str, dict[str, Repository]] = {}
    for label, key, root, first, n, last in rows:
        if key is None:
            out.unknown += n
            out.unknown_by_label[label] = out.unknown_by_label.get(label, 0) + n
            continue
        repository = grouped.setdefault(label, {}).setdefault(find("k" + key), Repository(key, first=first or ""))
        repository.keys.add(key)
        repository.sessions += n
        repository.last = max(repository.last, last or "")
        if root:
            repository.roots.add(root)
        repository.first = min(f for f in (repository.first, first) if f) if (repository.first or first) else ""
        repository.key = min(repository.keys, key=lambda k: (_RANK.get(k.partition(":")[0], 3), k))
    for label, found in grouped.items():
        for repository in found.values():
            repository.label = label
            out.every.append(repository)
        if len(found) < 2:
            continue
        ordered = sorted(found.values(), key=lambda r: (r.first, r.key))
        for n, repository in enumerate(ordered):
            repository.label = label if n == 0 else f"{label}@{suffix(repository.key)}"
        out.shared[label] = ordered
    return out
