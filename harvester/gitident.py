"""Which repository a session belongs to, from the cwd the agent recorded.

The bank id is built from the *main* worktree of the repository (what ``git rev-parse
--git-common-dir`` points at), so every linked worktree of a repo files into the same bank. The
rules, in order:

1. The recorded cwd exists: probe it (searching parent directories, as git does).
2. The cwd is gone (a removed linked worktree, an agent's scratch dir): use what an earlier probe
   learned about that directory or one of its ancestors (the bank remembers every worktree path of
   every repo it probed), else probe the nearest existing ancestor.
3. No repository found: the project is the basename of the recorded cwd.

The bank id is a name, and two repositories can share it (``~/work/a/api`` and ``~/work/b/api``). What tells
repositories apart is :attr:`RepoIdentity.key`, the repository's identity, strongest first:

- ``origin:<host/path>``: the normalized origin URL (the same for every clone, on every machine; a fork has its
  own). A remote that is a path on this machine is no identity (a clone of a local folder): the next rule.
- ``root:<sha>``: the first commit of the repository's history, found by following HEAD's first parents (the
  same in every clone and after any move; another for an unrelated repository, even one of the same name or in
  the same folder after ``rm -rf`` and ``git init``). The first parents, not every root (``git rev-list
  --max-parents=0 HEAD``): merging an unrelated history in later adds a root, and must not change what the
  repository is. Read by git (``git rev-list``); without git, or in a shallow clone, there is none.
- ``path:<main worktree>``: a repository with no commit yet, or whose first commit cannot be read; and a
  directory outside any repository (the directory itself).
- ``None``: unknown. A directory that is not here (another machine's, a deleted clone) and that no earlier
  probe learned, whose agent recorded no remote: it is never guessed from its folder's name.

A live directory's probe wins over what the agent recorded (its remote can be a fork's); the agent's recorded
origin stands in when the directory is not here. ``aliases`` are every key the repository answers to (its origin,
its first commit, its main worktree's path): sessions recorded before it got a remote, or before its first
commit, are still its own.

A probe that fails for a reason other than "not a repository" (unreadable ``.git``, corrupt HEAD,
...) is returned with its reason in ``error``; the fallback is still the cwd's basename, but the
failure is visible in the bank and in ``status`` rather than silently papered over.

Probes run in-process with GitPython and are cached per directory; only the first commit is read by ``git``
(once per repository and cache period), so that git need not be installed for the rest.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import git

# GitPython refuses to import when no git executable is on PATH, unless told to stay quiet. It is needed for one
# thing only, the first commit (see the module); every other fact is read from the .git directory itself.
# It is imported by the first probe: it costs more than the rest of a reading command's imports, and
# what reads the bank (RepoIdentity, bank ids) needs it not.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")


def git_found() -> bool:
    """Said by status: where git is missing, nothing changes but that it is missing (see GIT_PYTHON_REFRESH).
    A function, not a constant: looking along $PATH is no cost every importer should pay."""
    import shutil

    return shutil.which("git") is not None


# Hosts whose repository paths are case-insensitive: "Owner/Repo" and "owner/repo" are one repo.
CASE_INSENSITIVE_HOSTS = {"github.com", "gitlab.com", "bitbucket.org", "codeberg.org"}

_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/:]+)@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")


@dataclass(frozen=True, slots=True)
class RepoIdentity:
    project: str  # {gitProject}: basename of the main worktree root, else of the recorded cwd
    root: str | None = None  # main worktree root; None outside git
    origin_url: str | None = None  # the remote URL with any credentials removed
    origin_id: str | None = None  # normalized origin: host/path, same for every spelling
    how: str = "cwd"  # cwd | ancestor | learned | recorded | no-git | no-cwd | error
    error: str | None = None
    key: str | None = None  # the repository's identity (see the module); None: unknown
    aliases: tuple[str, ...] = ()  # every key the repository answers to, ``key`` first

    @property
    def in_git(self) -> bool:
        return self.root is not None


def normalize_origin(url: str | None) -> str | None:
    """``git@github.com:a/b.git``, ``https://github.com/a/b`` and ``ssh://git@github.com:22/a/b/``
    all become ``github.com/a/b``. Local paths stay paths. Credentials never survive."""
    if not url:
        return None
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file":
            return os.path.normpath(parts.path)
        host = (parts.hostname or "").lower()
        path = parts.path
    else:
        match = _SCP_LIKE.match(url)
        if match is None or "/" in match["host"]:
            return os.path.normpath(url)  # a plain local path
        host, path = match["host"].lower(), match["path"]
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    if host in CASE_INSENSITIVE_HOSTS:
        path = path.lower()
    return f"{host}/{path}" if host else path


_LOCAL = re.compile(r"^(/|~|\.|[A-Za-z]:[\\/]|\\\\)")  # a path, not host/path


def shared_origin(origin_id: str | None) -> str | None:
    """A normalized origin that names the same repository wherever it is cloned, or None: no remote, or one
    that is a path on this machine."""
    if not origin_id or _LOCAL.match(origin_id) or "/" not in origin_id:
        return None
    return origin_id


def origin_key(url: str | None) -> str | None:
    """The identity key of a remote URL (``origin:github.com/a/b``), None for none or a local path."""
    shared = shared_origin(normalize_origin(url))
    return f"origin:{shared}" if shared else None


def strip_credentials(url: str | None) -> str | None:
    """Drop the userinfo of a remote (``user:password@``, a token as the user name; every scheme) and the
    values of its credential query parameters: tokens end up in remotes surprisingly often. An scp-like remote
    (``git@host:path``) stays as written. See :mod:`harvester.redact.urls`."""
    from harvester.redact.urls import clean_url  # the redaction's rules, imported by a probe only

    return clean_url(url) if url else url


Memory = Callable[[str], "RepoIdentity | None"]


class GitResolver:
    """Resolves recorded cwds to repository identities, one probe per directory.

    ``learned`` looks up what an earlier probe (maybe in an earlier process) learned about a
    directory that may no longer exist; ``remember`` is told every directory -> identity a probe
    establishes (the probed dir and every worktree of the repo), so it can be persisted.
    """

    def __init__(
        self,
        learned: Memory | None = None,
        remember: Callable[[str, RepoIdentity], None] | None = None,
        ttl: float = 600.0,
    ) -> None:
        self._learned = learned
        self._remember = remember
        self._ttl = ttl
        self._cache: dict[str, tuple[float, RepoIdentity]] = {}
        self._firsts: dict[str, tuple[float, str | None]] = {}  # common dir -> its first commit, as of when
        self.probes = 0  # number of real probes, for tests and stats

    def resolve(self, cwd: str | None) -> RepoIdentity:
        if not cwd:
            return RepoIdentity(project="unknown", how="no-cwd")
        cwd = os.path.normpath(cwd)
        now = time.monotonic()
        hit = self._cache.get(cwd)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        identity = self._resolve(cwd)
        self._cache[cwd] = (now, identity)
        return identity

    def _resolve(self, cwd: str) -> RepoIdentity:
        fallback = os.path.basename(cwd) or cwd
        if os.path.isdir(cwd):
            identity = self._probe(cwd, fallback, how="cwd")
            if identity.key is None:  # here, outside any repository (or in one git cannot use): this directory
                key = f"path:{cwd}"
                identity = replace(identity, key=key, aliases=(key,))
                if self._remember is not None and identity.how == "no-git":
                    self._remember(cwd, identity)  # so that it is still itself once it is gone (reparse)
            return identity
        # The directory is gone. First: did we see it (or an ancestor) while it existed? (A directory outside git
        # was only itself: it says nothing of what was beneath it.)
        if self._learned is not None:
            for directory in _self_and_ancestors(cwd):
                known = self._learned(directory)
                if known is not None and (known.in_git or directory == cwd):
                    return replace(known, how="learned") if known.in_git else known
        for directory in _self_and_ancestors(cwd):
            if os.path.isdir(directory):
                identity = self._probe(directory, fallback, how="ancestor")
                if identity.in_git or identity.error:
                    return identity
                break
        return RepoIdentity(project=fallback, how="no-git")

    def _probe(self, directory: str, fallback: str, how: str) -> RepoIdentity:
        import git

        self.probes += 1
        try:
            repo = git.Repo(directory, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            # No repository, or a ".git" that git cannot use (a worktree whose main repo is gone, a
            # half-deleted clone): the latter is an error worth seeing, not "outside git".
            dot_git = _nearest_dot_git(directory)
            if dot_git is None:
                return RepoIdentity(project=fallback, how="no-git")
            return RepoIdentity(project=fallback, how="error",
                                error=f"unusable {dot_git}: {type(exc).__name__}: {exc}")
        except Exception as exc:  # unreadable .git, bad permissions, ...: say so, don't hide it
            return RepoIdentity(project=fallback, how="error", error=f"{type(exc).__name__}: {exc}")
        try:
            identity, worktrees = _describe(repo, how)
            identity = self._keyed(repo, identity)
        except Exception as exc:
            return RepoIdentity(project=fallback, how="error", error=f"{type(exc).__name__}: {exc}")
        finally:
            repo.close()
        if self._remember is not None:
            self._remember(directory, identity)
            for worktree in worktrees:
                self._remember(worktree, identity)
        return identity


    def _keyed(self, repo: git.Repo, identity: RepoIdentity) -> RepoIdentity:
        """The identity with its key and aliases: origin, first commit, main worktree (see the module)."""
        common = str(Path(repo.common_dir).resolve())
        now = time.monotonic()
        hit = self._firsts.get(common)
        if hit is None or now - hit[0] >= self._ttl:
            hit = self._firsts[common] = (now, first_commit(repo))
        keys = [origin_key(identity.origin_url), f"root:{hit[1]}" if hit[1] else None, f"path:{identity.root}"]
        aliases = tuple(dict.fromkeys(k for k in keys if k))
        return replace(identity, key=aliases[0], aliases=aliases)


def first_commit(repo: git.Repo) -> str | None:
    """The first commit of HEAD's history by its first parents (see the module), or None: no commit yet, a
    shallow clone (its first commit is only where the clone was cut), no git to read it, or git refuses (a
    repository of another user's, "dubious ownership")."""
    if (Path(repo.common_dir) / "shallow").exists():
        return None
    try:
        found = repo.git.rev_list("--first-parent", "--max-parents=0", "HEAD").split()
    except Exception:  # no commit yet, no git, ...: the next key serves
        return None
    return found[0] if len(found) == 1 and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", found[0]) else None


def with_recorded_origin(identity: RepoIdentity, recorded_url: str | None, cwd: str | None) -> RepoIdentity:
    """A session's identity given the origin its agent recorded (Codex's session_meta.git.repository_url, ...):
    a live directory's probe and what was learned while it existed win; the recorded origin stands in when the
    directory is not here (unknown otherwise), and beats a guess from the nearest existing ancestor."""
    key = origin_key(recorded_url)
    if key is None or identity.key == key or (identity.key is not None and identity.how != "ancestor"):
        return identity
    project = os.path.basename(os.path.normpath(cwd)) if cwd else identity.project
    return RepoIdentity(project=project or identity.project, origin_url=strip_credentials(recorded_url),
                        origin_id=normalize_origin(recorded_url), how="recorded", key=key, aliases=(key,))


def _describe(repo: git.Repo, how: str) -> tuple[RepoIdentity, list[str]]:
    common = Path(repo.common_dir).resolve()
    if repo.bare:
        root = common
    elif common.name == ".git":
        root = common.parent
    else:  # a submodule (.git/modules/x) or a GIT_DIR elsewhere: its own work tree is the root
        root = Path(repo.working_tree_dir or common)
    origin = None
    try:
        if "origin" in [r.name for r in repo.remotes]:
            origin = repo.remotes.origin.url
        elif repo.remotes:
            origin = repo.remotes[0].url
    except Exception:  # an unparsable config must not lose the session, the root is known
        origin = None
    # No branch or commit here: today's HEAD says nothing about when a session ran; sessions keep
    # the branch and commit their agent recorded.
    worktrees = []
    listing = common / "worktrees"
    if listing.is_dir():
        for entry in listing.iterdir():
            try:
                gitdir = (entry / "gitdir").read_text().strip()
            except OSError:
                continue
            worktrees.append(os.path.dirname(os.path.normpath(gitdir)))
    identity = RepoIdentity(
        project=root.name or str(root),
        root=str(root),
        origin_url=strip_credentials(origin),
        origin_id=normalize_origin(origin),
        how=how,
    )
    return identity, [str(root), *worktrees]


def _nearest_dot_git(directory: str) -> str | None:
    for candidate in _self_and_ancestors(directory):
        dot_git = os.path.join(candidate, ".git")
        if os.path.lexists(dot_git):
            return dot_git
    return None


def _self_and_ancestors(path: str) -> list[str]:
    out = [path]
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return out
        out.append(parent)
        path = parent


def bank_id(template: str, identity: RepoIdentity, cwd: str | None, harness: str) -> str:
    """Fill the bank id template: ``{gitProject}``, ``{project}`` (basename of the recorded cwd),
    ``{harness}``."""
    project = os.path.basename(os.path.normpath(cwd)) if cwd else "unknown"
    return (
        template.replace("{gitProject}", identity.project)
        .replace("{project}", project or "unknown")
        .replace("{harness}", harness)
    )
