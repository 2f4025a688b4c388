"""Which sessions "this repository" means: resolved from a directory with the rules capture files by.

An MCP server started by an agent in a repository (or ``harvester context`` run there) answers about that
repository's bank: the main worktree found by git from the directory (every linked worktree shares it),
else the bank id the directory itself would be filed under. ``repo`` and ``bank`` name another one;
``all_repos`` widens to every session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvester.gitident import GitResolver


@dataclass(frozen=True, slots=True)
class Scope:
    """Sessions of one repository (``repo_root``, or those filed under ``bank_id``), or every session.
    ``origin_id``: the repository's normalized origin, its identity in a team bank (harvester/team/read.py)."""

    label: str  # what answers call it: the bank id, or "every repository"
    repo_root: str | None = None
    bank_id: str | None = None
    origin_id: str | None = None

    @property
    def everything(self) -> bool:
        return self.repo_root is None and self.bank_id is None

    def sql(self, alias: str = "s") -> tuple[str, list[str]]:
        """A WHERE condition on sessions (aliased ``alias``) and its arguments."""
        if self.repo_root is not None:
            return f"({alias}.repo_root = ? OR {alias}.bank_id = ?)", [self.repo_root, self.bank_id or ""]
        if self.bank_id is not None:
            return f"{alias}.bank_id = ?", [self.bank_id]
        return "1", []


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
    if identity.in_git:
        return Scope(label, repo_root=identity.root, bank_id=label, origin_id=identity.origin_id)
    return Scope(label, bank_id=label)
