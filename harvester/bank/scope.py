"""Which sessions a question is about, as the bank takes it: one repository (every identity key it answers to), a
bank id, a path that is not here, or every session. Here, below recall, because the bank's queries take it;
which scope a directory means (git, the repository's identity) is :func:`harvester.recall.scope.scope_for`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    # A team bank's repository by its key there (harvester/team/identity.py: its origin, or a machine's own
    # root): what the viewer's team pages name a repository by. No local session is in it.
    repository: str | None = None

    @property
    def everything(self) -> bool:
        return not self.keys and self.bank_id is None and self.recorded_at is None and self.repository is None

    def sql(self, alias: str = "s") -> tuple[str, list[Any]]:
        """A WHERE condition on sessions (aliased ``alias``) and its arguments."""
        if self.bank_id is not None:
            return f"{alias}.bank_id = ?", [self.bank_id]
        if self.repository is not None:  # a team bank's repository: nothing of the local bank
            return "0", []
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
        if self.repository is not None:
            return session.get("repo_key") == self.repository
        if "host" in session:  # a team bank's row: another machine's clone is this repository by its origin
            return bool((self.origin_id and session.get("origin_id") == self.origin_id)
                        or (self.repo_root and session.get("repo_root") == self.repo_root))
        if self.keys:
            return session.get("repo_key") in self.keys
        cwd, base = session.get("cwd") or "", (self.recorded_at or "").rstrip("/")
        return self.recorded_at in (cwd, session.get("repo_root")) or cwd.startswith(base + "/")


EVERYTHING = Scope("every repository")
