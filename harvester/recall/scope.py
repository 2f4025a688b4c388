"""Which sessions "this repository" means: resolved from a directory with the rules capture files by.

An MCP server started by an agent in a repository (or ``harvester context`` run there) answers about that
repository: the sessions whose repository identity (harvester/gitident.py: its origin, its first commit, its main
worktree) is one of the keys the repository answers to, so every clone and linked worktree shares it, and an
unrelated repository of the same name (the same bank id) never does. A session whose repository is unknown (its
folder is not on this machine, nothing was learned of it, no remote recorded) is in no repository's scope: only
``bank`` (a bank-id filter) and ``all_repos`` reach it, or ``repo`` naming the very path it was recorded in: a
path that is not here (and of which nothing is known) means the sessions recorded there, whatever their
repository (``forget --repo`` of a deleted clone). ``repo`` and ``bank`` name another one; ``all_repos`` widens to every session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvester.gitident import GitResolver


@dataclass(frozen=True, slots=True)
class Scope:
    """Sessions of one repository (``keys``: every identity key it answers to), of a bank id (``bank_id``), of
    a path that is not here (``recorded_at``: the sessions recorded there or beneath, or in a repository whose main
    worktree it was), or every session.
    ``repo_root``: the repository's main worktree; ``origin_id``: its normalized origin, its identity in a team
    bank (harvester/team/read.py)."""

    label: str  # what answers call it: the bank id, or "every repository"
    repo_root: str | None = None
    bank_id: str | None = None
    origin_id: str | None = None
    keys: tuple[str, ...] = ()
    recorded_at: str | None = None

    @property
    def everything(self) -> bool:
        return not self.keys and self.bank_id is None and self.recorded_at is None

    def sql(self, alias: str = "s") -> tuple[str, list[Any]]:
        """A WHERE condition on sessions (aliased ``alias``) and its arguments."""
        if self.bank_id is not None:
            return f"{alias}.bank_id = ?", [self.bank_id]
        if self.keys:  # the index sessions_repo_key (migration 14)
            return f"{alias}.repo_key IN ({', '.join('?' * len(self.keys))})", list(self.keys)
        if self.recorded_at is not None:  # the path, or beneath it
            base = self.recorded_at.rstrip("/")
            return (f"({alias}.repo_root = ? OR {alias}.cwd = ? OR substr({alias}.cwd, 1, ?) = ?)",
                    [self.recorded_at, self.recorded_at, len(base) + 1, base + "/"])
        return "1", []

    def holds(self, session: dict[str, Any]) -> bool:
        """Whether a session row (the local bank's, or the team bank's: it names its ``host``) is in scope."""
        if self.everything:
            return True
        if self.bank_id is not None:
            return session["bank_id"] == self.bank_id
        if "host" in session:  # a team bank's row: another machine's clone is this repository by its origin
            return bool((self.origin_id and session.get("origin_id") == self.origin_id)
                        or (self.repo_root and session.get("repo_root") == self.repo_root))
        if self.keys:
            return session.get("repo_key") in self.keys
        cwd, base = session.get("cwd") or "", (self.recorded_at or "").rstrip("/")
        return self.recorded_at in (cwd, session.get("repo_root")) or cwd.startswith(base + "/")


EVERYTHING = Scope("every repository")


def scope_for(directory: str, template: str, repo: str | None = None, bank: str | None = None,
              all_repos: bool = False, resolver: GitResolver | None = None) -> Scope:
    """The scope of an answer asked from ``directory`` (an explicit ``bank`` or ``repo`` wins)."""
    if all_repos:
        return EVERYTHING
    if bank:
        return Scope(bank, bank_id=bank)
    from harvester.gitident import GitResolver, bank_id  # here: listing or searching everything needs no git

    where = os.path.abspath(os.path.expanduser(repo or directory))
    identity = (resolver or GitResolver()).resolve(where)
    label = bank_id(template, identity, where, "")
    if identity.key is not None:
        return Scope(label, repo_root=identity.root, origin_id=identity.origin_id,
                     keys=identity.aliases or (identity.key,))
    return Scope(label, recorded_at=os.path.normpath(where))  # not here, and nothing known of it
