"""Sessions are filed under the main worktree's repository, whatever became of their cwd."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harvester.gitident import GitResolver, normalize_origin, strip_credentials
from tests.helpers import ClaudeSession, git, make_repo, scan, sessions_of


def _by_cwd(bank: Path) -> dict[str, dict]:
    return {s["cwd"]: s for s in sessions_of(bank)}


def test_linked_worktree_shares_the_main_repos_bank(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "src" / "shop", origin="git@github.com:acme/shop.git")
    worktree = tmp_path / "wt" / "shop-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    for cwd in (repo, worktree, repo / "sub"):
        (cwd).mkdir(exist_ok=True)
        s = ClaudeSession(home, str(cwd))
        s.write(*s.conversation(1))
    scan(home, bank)
    sessions = _by_cwd(bank)
    assert {s["bank_id"] for s in sessions.values()} == {"coding-agent::shop"}
    assert {s["repo_root"] for s in sessions.values()} == {str(repo)}
    assert {s["origin_id"] for s in sessions.values()} == {"github.com/acme/shop"}
    assert sessions[str(worktree)]["git_how"] == "cwd"


def test_deleted_worktree_maps_to_its_repo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "src" / "shop")
    inside = repo / ".claude" / "worktrees" / "agent-1"  # agent scratch worktree inside the repo
    git(repo, "worktree", "add", "-q", "-b", "scratch", str(inside))
    sibling = tmp_path / "src" / "shop-hotfix"  # a linked worktree beside it
    git(repo, "worktree", "add", "-q", "-b", "hotfix", str(sibling))
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    first = ClaudeSession(home, str(repo))
    first.write(*first.conversation(1))
    scan(home, bank)  # the probe of the repo learns where its worktrees are

    shutil.rmtree(inside)
    shutil.rmtree(sibling)
    for cwd in (inside, sibling):
        s = ClaudeSession(home, str(cwd))
        s.write(*s.conversation(1))
    scan(home, bank)
    sessions = _by_cwd(bank)
    assert sessions[str(inside)]["bank_id"] == "coding-agent::shop"
    assert sessions[str(sibling)]["bank_id"] == "coding-agent::shop"
    assert sessions[str(sibling)]["git_how"] == "learned"


def test_deleted_cwd_uses_nearest_existing_ancestor_in_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "src" / "shop")
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    gone = repo / "build" / "tmp-agent-dir"  # never existed while we watched
    s = ClaudeSession(home, str(gone))
    s.write(*s.conversation(1))
    scan(home, bank)
    session = _by_cwd(bank)[str(gone)]
    assert session["bank_id"] == "coding-agent::shop"
    assert session["git_how"] == "ancestor"


def test_deleted_cwd_outside_git_uses_its_basename(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    gone = tmp_path / "scratch" / "experiment-42"
    s = ClaudeSession(home, str(gone))
    s.write(*s.conversation(1))
    scan(home, bank)
    session = _by_cwd(bank)[str(gone)]
    assert session["bank_id"] == "coding-agent::experiment-42"
    assert session["repo_root"] is None and session["git_error"] is None


def test_non_git_cwd_is_filed_by_the_directory_the_session_started_in(tmp_path: Path) -> None:
    start = tmp_path / "notes"
    later = tmp_path / "elsewhere"
    start.mkdir()
    later.mkdir()
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, str(start))
    lines = [s.user("first")]
    s.cwd = str(later)  # the agent cd-ed: later lines carry another cwd
    lines.append(s.assistant("moved"))
    s.write(*lines)
    scan(home, bank)
    [session] = sessions_of(bank)
    assert session["cwd"] == str(start)
    assert session["bank_id"] == "coding-agent::notes"


def test_two_clones_with_different_url_spellings_share_the_origin(tmp_path: Path) -> None:
    a = make_repo(tmp_path / "a" / "shop", origin="git@github.com:Acme/Shop.git")
    b = make_repo(tmp_path / "b" / "shop-copy", origin="https://user:tok3n@github.com/acme/shop/")
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    for cwd in (a, b):
        s = ClaudeSession(home, str(cwd))
        s.write(*s.conversation(1))
    scan(home, bank)
    sessions = _by_cwd(bank)
    assert sessions[str(a)]["origin_id"] == sessions[str(b)]["origin_id"] == "github.com/acme/shop"
    assert "tok3n" not in (sessions[str(b)]["origin_url"] or "")
    assert sessions[str(a)]["bank_id"] == "coding-agent::shop"
    assert sessions[str(b)]["bank_id"] == "coding-agent::shop-copy"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@github.com:a/b.git", "github.com/a/b"),
        ("https://github.com/a/b", "github.com/a/b"),
        ("https://github.com/A/B.git/", "github.com/a/b"),
        ("ssh://git@github.com:22/a/b.git", "github.com/a/b"),
        ("git+ssh://git@gitlab.example.com/Group/Sub/proj.git", "gitlab.example.com/Group/Sub/proj"),
        ("https://oauth2:secret@gitlab.example.com/g/p.git", "gitlab.example.com/g/p"),
        ("/srv/git/project.git", "/srv/git/project.git"),
        ("file:///srv/git/project.git", "/srv/git/project.git"),
        (None, None),
    ],
)
def test_normalize_origin(url: str | None, expected: str | None) -> None:
    assert normalize_origin(url) == expected


def test_strip_credentials() -> None:
    assert strip_credentials("https://u:p@host.example/x.git") == "https://host.example/x.git"
    assert strip_credentials("https://ghp_token@github.com/a/b") == "https://github.com/a/b"
    assert strip_credentials("git@github.com:a/b.git") == "git@github.com:a/b.git"


def test_strip_credentials_drops_all_userinfo_and_query_credentials() -> None:
    # Issue 23: a stored URL loses its userinfo whatever the scheme, and its credential query values.
    assert strip_credentials("ssh://deploy@git.example.com:2222/a/b.git") == "ssh://git.example.com:2222/a/b.git"
    assert strip_credentials("https://git.example.com/a/b.git?private_token=tok3n&ref=main#top") == (
        "https://git.example.com/a/b.git?private_token=[REDACTED:token]&ref=main#top")
    assert strip_credentials("https://github.com/a/b") == "https://github.com/a/b"


def test_a_probed_remote_keeps_no_credential_and_the_same_identity(tmp_path: Path) -> None:
    remotes = {"ssh": "ssh://deploy:tok3n-ssh@git.example.com/acme/shop.git",
               "query": "https://git.example.com/acme/shop.git?private_token=tok3n-query",
               "user": "https://tok3nAsUser0123456789abcdef@git.example.com/acme/shop",
               "scp": "git@git.example.com:acme/shop.git"}
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    for name, remote in remotes.items():
        repo = make_repo(tmp_path / name / "shop", origin=remote)
        s = ClaudeSession(home, str(repo))
        s.write(*s.conversation(1))
    scan(home, bank)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("bank.sqlite*"))
    assert b"tok3n" not in raw
    sessions = _by_cwd(bank)
    assert {s["origin_id"] for s in sessions.values()} == {"git.example.com/acme/shop"}
    assert sessions[str(tmp_path / "scp" / "shop")]["origin_url"] == remotes["scp"]
    assert sessions[str(tmp_path / "user" / "shop")]["origin_url"] == "https://git.example.com/acme/shop"


def test_failed_probe_is_recorded_with_its_reason(tmp_path: Path) -> None:
    # A linked worktree whose main repository was deleted: git itself says "not a git repository".
    worktree_file_repo = tmp_path / "dangling"
    worktree_file_repo.mkdir()
    (worktree_file_repo / ".git").write_text("gitdir: /nonexistent/.git/worktrees/x\n")
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, str(worktree_file_repo))
    s.write(*s.conversation(1))
    scan(home, bank)
    [session] = sessions_of(bank)
    assert session["git_how"] == "error"
    assert "/nonexistent/.git/worktrees/x" in session["git_error"] or ".git" in session["git_error"]
    assert session["bank_id"] == "coding-agent::dangling"


def test_one_probe_per_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    resolver = GitResolver()
    for _ in range(50):
        assert resolver.resolve(str(repo)).root == str(repo)
    assert resolver.probes == 1


def test_bank_id_template_is_configurable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    (repo / "pkg").mkdir()
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, str(repo / "pkg"))
    s.write(*s.conversation(1))
    scan(home, bank, template="{harness}/{gitProject}/{project}")
    [session] = sessions_of(bank)
    assert session["bank_id"] == "claude-code/shop/pkg"


def test_without_git_on_path_every_command_works_and_status_says_so_once(tmp_path: Path) -> None:
    """GitPython refuses to import without a git executable unless told to stay quiet; nothing here runs git."""
    import os
    import subprocess
    import sys

    from tests.helpers import ClaudeSession, make_repo

    repo = make_repo(tmp_path / "work" / "demo-repo")  # made with git, before git goes away
    home = tmp_path / "home"
    s = ClaudeSession(home, str(repo))
    s.write(*s.conversation(1))
    bin_dir = tmp_path / "bin"  # PATH without git: only what a bare interpreter needs
    bin_dir.mkdir()
    env = {"PATH": str(bin_dir), "HOME": str(home), "HARVESTER_BANK": str(tmp_path / "bank.sqlite"),
           "HARVESTER_RUNTIME_DIR": str(tmp_path / "run"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env.pop("GIT_PYTHON_REFRESH", None)

    def harvester(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harvester", *args], env=env, capture_output=True, text=True,
                              timeout=120)

    assert harvester("--help").returncode == 0
    scanned = harvester("scan")
    assert scanned.returncode == 0, scanned.stderr
    assert "Bad git executable" not in scanned.stderr
    listed = harvester("sessions", "--json")
    import orjson

    [session] = orjson.loads(listed.stdout)
    assert (session["bank_id"], session["repo_root"]) == ("coding-agent::demo-repo", str(repo))  # still resolved
    assert session["repo_key"] == f"path:{repo}"  # its first commit needs git: known by its main worktree
    status = harvester("status")
    assert status.returncode == 0 and status.stdout.count("git: not found on PATH") == 1
