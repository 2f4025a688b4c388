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
from typing import TYPE_CHECKING

from harvester.bank.scope import EVERYTHING, Scope

if TYPE_CHECKING:
    from harvester.gitident import GitResolver


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
