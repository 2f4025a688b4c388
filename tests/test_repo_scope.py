"""Every read is scoped by the repository's identity, never by its folder's name (issue 24, item 1).

Real captured sessions (fixtures/*/real, their recorded cwd rewritten to where each test puts them) and a long
session shaped like real ones, in real git repositories: two unrelated repositories both named ``api`` never see
each other's sessions (``context``, ``sessions --here``, ``search --here``, ``export``, every MCP tool); sessions
recorded in a folder named ``repo`` that is not on this machine are never handed to a fresh ``git init repo``;
clones (one origin, or one first commit without an origin) and linked worktrees are one repository.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from harvester.cli import cli
from tests.helpers import (
    FIXTURES,
    ClaudeSession,
    as_migration_14_left_it,
    claude_dir,
    git,
    make_repo,
    scan,
    sessions_of,
)
from tests.machine import ROOT

_CAPTURED_CWD = re.compile(r"/tmp/cap-[^/\"\\<>\s`]+/demo-repo")
_CODEX_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")


def place_claude(home: Path, cwd: Path, run: str) -> str:
    """A real Claude Code capture (fixtures/claude_code/real/RUN) as if recorded in ``cwd``; its session id."""
    [source] = (FIXTURES / "claude_code" / "real" / run / "projects").glob("*/*.jsonl")
    (claude_dir(home, str(cwd)) / source.name).write_text(_CAPTURED_CWD.sub(str(cwd), source.read_text()))
    return source.stem


def place_codex(home: Path, cwd: Path, run: str, origin: str | None = None) -> str:
    """A real Codex capture (fixtures/codex/real/RUN) as if recorded in ``cwd`` (with ``origin``: as Codex records
    a repository that has a remote, in session_meta.git); its session id."""
    base = FIXTURES / "codex" / "real" / run
    [source] = base.rglob("rollout-*.jsonl")
    lines = _CAPTURED_CWD.sub(str(cwd), source.read_text()).splitlines()
    if origin:
        meta = orjson.loads(lines[0])
        meta["payload"]["git"] = {"repository_url": origin, "branch": "main"}
        lines[0] = orjson.dumps(meta).decode()
    target = home / ".codex" / source.relative_to(base)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n")
    match = _CODEX_ID.search(source.name)
    assert match is not None
    return match[1]


def long_session(home: Path, cwd: Path, phrase: str, turns: int = 60) -> str:
    """A long session shaped like real ones: asks, tool calls (commands, reads, edits) with their output, a
    failing test run, answers; ``phrase`` said in the middle of it."""
    s = ClaudeSession(home, str(cwd))
    lines = []
    for i in range(turns):
        lines.append(s.user(f"step {i}: " + (f"look into {phrase}" if i == turns // 2 else f"refactor module {i}")))
        lines.append(s.tool_use("Bash", {"command": f"pytest tests/test_module_{i}.py -q"}, f"toolu_{i}_a"))
        lines.append(s.tool_result(f"toolu_{i}_a", ("1 failed" if i % 7 == 0 else "4 passed") + " in 0.4s"))
        lines.append(s.tool_use("Read", {"file_path": f"{cwd}/src/module_{i}.py"}, f"toolu_{i}_b"))
        lines.append(s.tool_result(f"toolu_{i}_b", "def handler():\n    return 42\n" * 30))
        lines.append(s.tool_use("Edit", {"file_path": f"{cwd}/src/module_{i}.py", "old_string": "42",
                                         "new_string": "43"}, f"toolu_{i}_c"))
        lines.append(s.tool_result(f"toolu_{i}_c", "The file has been updated."))
        lines.append(s.assistant(f"Done with step {i}: module {i} now returns 43. " + "detail " * 40))
    s.write(*lines)
    return s.id


def harvester(bank: Path, cwd: Path, *args: str) -> Any:
    """``harvester ARGS`` in-process, run from ``cwd``."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(cwd)})
    finally:
        os.chdir(here)


def ok(result: Any) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def mcp_calls(bank: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """``harvester mcp`` started in ``cwd`` (a real subprocess, the SDK's client): each call's (error?, text),
    and the resources it lists."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_"))}
    env.update(HOME=str(cwd), HARVESTER_BANK=str(bank), PYTHONPATH=str(ROOT))
    params = StdioServerParameters(command=sys.executable, args=["-m", "harvester", "mcp"], env=env, cwd=str(cwd))

    async def talk() -> dict[str, Any]:
        async with Client(params) as client:
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                results.append((bool(result.is_error), "".join(c.text for c in result.content)))
            resources = [r.name for r in (await client.list_resources()).resources]
            return {"results": results, "resources": resources}
    return asyncio.run(talk())


# --- two unrelated repositories, both named api ------------------------------------------------------------

@pytest.fixture(scope="module")
def two_apis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("two-apis")
    home, bank = tmp / "home", tmp / "bank.sqlite"
    a = make_repo(tmp / "work" / "a" / "api")  # no remote: its first commit tells it apart
    b = make_repo(tmp / "work" / "b" / "api", origin="https://github.com/bee/api.git")
    mine = {place_claude(home, a, "two_turns"), place_codex(home, a, "tool_error")}
    theirs = {place_codex(home, b, "two_turns"), place_claude(home, b, "tool_error"),
              long_session(home, b, "the zebra quota migration")}
    scan(home, bank)
    yield {"tmp": tmp, "bank": bank, "a": a, "b": b, "mine": mine, "theirs": theirs}


def test_two_repositories_named_api_are_filed_under_one_bank_id_and_two_identities(two_apis: dict) -> None:
    rows = {s["native_id"]: s for s in sessions_of(two_apis["bank"])}
    assert {rows[n]["bank_id"] for n in rows} == {"coding-agent::api"}  # the bank id stays as it is
    keys = {n: rows[n]["repo_key"] for n in rows}
    assert {keys[n] for n in two_apis["theirs"]} == {"origin:github.com/bee/api"}
    [root] = {keys[n] for n in two_apis["mine"]}
    assert root == "root:" + git(two_apis["a"], "rev-list", "--max-parents=0", "HEAD")


def test_context_sessions_search_and_export_in_one_never_show_the_other(two_apis: dict) -> None:
    bank, a, mine, theirs = two_apis["bank"], two_apis["a"], two_apis["mine"], two_apis["theirs"]
    here = {s["native_id"] for s in orjson.loads(ok(harvester(bank, a, "sessions", "--here", "--json")))}
    assert here == mine
    assert {s["native_id"] for s in orjson.loads(ok(harvester(bank, two_apis["b"], "sessions", "--here",
                                                             "--json")))} == theirs
    brief = orjson.loads(ok(harvester(bank, a, "context", "--json")))
    assert brief["session"]["native_id"] in mine and "zebra" not in brief["brief"]
    for session in theirs:
        assert harvester(bank, a, "context", "--session", session).exit_code == 1  # not this repository's
    # Words in both repositories' sessions: only this one's hits; the other's phrase: none.
    hits = orjson.loads(ok(harvester(bank, a, "search", "--here", "notes", "--json")))["hits"]
    assert hits and {h["session"] for h in hits} <= mine
    assert orjson.loads(ok(harvester(bank, a, "search", "--here", "zebra quota", "--json")))["hits"] == []
    assert {h["session"] for h in orjson.loads(ok(harvester(bank, a, "search", "zebra quota", "--json")))["hits"]} \
        <= theirs
    spent = orjson.loads(ok(harvester(bank, a, "usage", "session", "--here", "--json")))["rows"]  # the usage view too
    assert spent and {row["session"] for row in spent} <= mine
    out = ok(harvester(bank, a, "export"))
    exported = {p.name for p in (a / ".harvester" / "history").iterdir()}
    assert len(exported) == len(mine) and all(any(n in name for n in mine) for name in exported), out


def test_the_mcp_server_in_one_never_hands_over_the_others_sessions(two_apis: dict) -> None:
    mine, theirs = two_apis["mine"], two_apis["theirs"]
    long_one = sorted(theirs)[0]
    answers = mcp_calls(two_apis["bank"], two_apis["a"], [
        ("recent_sessions", {"limit": 50}),
        ("handoff", {}),
        ("search_history", {"query": "zebra quota"}),
        ("search_history", {"query": "notes"}),
        *[("get_events", {"session": n}) for n in sorted(theirs)],
        ("get_events", {"session": long_one, "all_repos": True}),  # reachable only when asked for every repository
    ])
    results = answers["results"]
    listed, handed, zebra, notes = (text for _, text in results[:4])
    assert all(n in listed for n in mine) and not any(n in listed for n in theirs)
    assert any(n in handed for n in mine) and not any(n in handed for n in theirs) and "zebra" not in handed
    assert zebra.count("Nothing in") == 1
    assert any(n in notes for n in mine) and not any(n in notes for n in theirs)
    for error, text in results[4:-1]:
        assert error and "no session" in text
    assert results[-1][0] is False
    assert set(answers["resources"]) == mine


# --- sessions recorded in a folder that is not here -------------------------------------------------------

def test_sessions_of_a_missing_folder_named_repo_are_not_handed_to_a_fresh_git_init(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    elsewhere = tmp_path / "other-machine" / "home" / "dev" / "repo"  # never on this machine
    gone = {place_claude(home, elsewhere, "two_turns"), place_codex(home, elsewhere, "two_turns")}
    scan(home, bank)
    fresh = tmp_path / "src" / "repo"
    fresh.mkdir(parents=True)
    git(fresh, "init", "-q")  # a brand-new repository of the same name
    assert {s["bank_id"] for s in sessions_of(bank)} == {"coding-agent::repo"}
    assert {s["repo_key"] for s in sessions_of(bank)} == {None}  # unknown: said, never guessed

    assert orjson.loads(ok(harvester(bank, fresh, "sessions", "--here", "--json"))) == []
    none = harvester(bank, fresh, "context")  # an answer (there is none here), not an error
    assert none.exit_code == 0 and "No session in" in none.output
    assert "2 sessions filed under coding-agent::repo" in none.output and "--bank-id" in none.output
    assert harvester(bank, fresh, "export").output.startswith("0 written")
    answers = mcp_calls(bank, fresh, [("recent_sessions", {}), ("handoff", {}),
                                      ("handoff", {"bank": "coding-agent::repo"})])  # asked for by its bank id
    assert "No sessions in" in answers["results"][0][1] and "No session in" in answers["results"][1][1]
    assert answers["results"][2][0] is False and any(n in answers["results"][2][1] for n in gone)
    assert answers["resources"] == []

    # Listed (every repository) with a marker, counted by status with why, reached by --bank.
    listing = ok(harvester(bank, fresh, "sessions"))
    assert listing.count("(unknown repository)") == 2
    status = orjson.loads(ok(harvester(bank, fresh, "status", "--json")))
    assert status["repositories"]["unknown_sessions"] == 2
    said = ok(harvester(bank, fresh, "status"))
    assert "2 sessions of unknown repository" in said and "--bank-id ID reads them" in said, said  # the option's name
    reached = orjson.loads(ok(harvester(bank, fresh, "sessions", "--bank-id", "coding-agent::repo", "--json")))
    assert {s["native_id"] for s in reached} == gone


def test_a_clone_deleted_and_made_anew_at_the_same_path_is_another_repository(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    path = make_repo(tmp_path / "src" / "repo")
    old = place_claude(home, path, "two_turns")
    scan(home, bank)
    shutil.rmtree(path)
    # Asked for by its path while it is gone: what was recorded there (forget --repo, sessions --repo).
    gone = orjson.loads(ok(harvester(bank, tmp_path, "sessions", "--repo", str(path), "--json")))
    assert [s["native_id"] for s in gone] == [old]
    make_repo(path)  # another project, same folder
    new = long_session(home, path, "the new project")
    scan(home, bank)
    assert {s["native_id"] for s in orjson.loads(ok(harvester(bank, path, "sessions", "--here", "--json")))} == {new}
    assert old not in ok(harvester(bank, path, "context"))


def test_a_session_whose_folder_is_gone_keeps_the_origin_its_agent_recorded(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    gone = tmp_path / "laptop" / "demo-repo"  # not here; Codex recorded the remote
    recorded = place_codex(home, gone, "two_turns", origin="git@github.com:Dev/Demo-Repo.git")
    clone = make_repo(tmp_path / "src" / "checkout", origin="https://github.com/dev/demo-repo")
    scan(home, bank)
    assert sessions_of(bank)[0]["repo_key"] == "origin:github.com/dev/demo-repo"
    here = orjson.loads(ok(harvester(bank, clone, "sessions", "--here", "--json")))
    assert [s["native_id"] for s in here] == [recorded]


# --- one repository in several places ---------------------------------------------------------------------

def test_clones_with_one_origin_or_one_first_commit_share_and_so_do_worktrees(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    upstream = make_repo(tmp_path / "work" / "shop", origin="git@github.com:acme/shop.git")
    same_origin = tmp_path / "elsewhere" / "shop-2"
    git(tmp_path, "clone", "-q", str(upstream), str(same_origin))
    git(same_origin, "remote", "set-url", "origin", "https://github.com/acme/shop")
    local = make_repo(tmp_path / "work" / "notes")  # no remote
    local_clone = tmp_path / "backup" / "notes-copy"
    git(tmp_path, "clone", "-q", str(local), str(local_clone))  # its origin is a path here: not shared
    worktree = tmp_path / "wt" / "notes-feature"
    git(local, "worktree", "add", "-q", "-b", "feature", str(worktree))
    ids = {name: ClaudeSession(home, str(where)) for name, where in (
        ("upstream", upstream), ("same_origin", same_origin), ("local", local), ("local_clone", local_clone),
        ("worktree", worktree))}
    for s in ids.values():
        s.write(*s.conversation(1))
    scan(home, bank)

    def here(where: Path) -> set[str]:
        return {s["native_id"] for s in orjson.loads(ok(harvester(bank, where, "sessions", "--here", "--json")))}

    shop = {ids["upstream"].id, ids["same_origin"].id}
    notes = {ids["local"].id, ids["local_clone"].id, ids["worktree"].id}
    assert here(upstream) == here(same_origin) == shop
    assert here(local) == here(local_clone) == here(worktree) == notes


# --- status: unrelated repositories sharing a bank id; one repository over its life -----------------------

def test_status_warns_when_two_repositories_share_a_bank_id(two_apis: dict) -> None:
    bank, a = two_apis["bank"], two_apis["a"]
    [shared] = orjson.loads(ok(harvester(bank, a, "status", "--json")))["repositories"]["shared_bank_ids"]
    assert shared["bank_id"] == "coding-agent::api"
    by_key = {r["key"]: r for r in shared["repositories"]}
    root = "root:" + git(a, "rev-list", "--max-parents=0", "HEAD")
    assert {k: r["sessions"] for k, r in by_key.items()} == {root: 2, "origin:github.com/bee/api": 3}
    # b's long session started first (2026-11-01): b keeps the bank id, a is kept apart.
    assert by_key["origin:github.com/bee/api"]["label"] == "coding-agent::api"
    assert by_key[root]["label"] == f"coding-agent::api@root-{root[5:17]}"
    text = ok(harvester(bank, a, "status"))
    assert "WARNING: coding-agent::api is the bank id of 2 different repositories" in text
    assert f"{root} (2 sessions)" in text and "origin:github.com/bee/api (3 sessions)" in text


def test_one_repository_before_its_first_commit_and_its_remote_is_one_repository(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    repo = tmp_path / "src" / "shop"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    sessions = []

    def work() -> None:
        s = ClaudeSession(home, str(repo))
        s.write(*s.conversation(1))
        sessions.append(s.id)
        scan(home, bank)

    work()  # no commit yet: its path
    (repo / "README").write_text("shop\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "init")
    work()  # its first commit
    git(repo, "remote", "add", "origin", "git@github.com:acme/shop.git")
    work()  # its origin
    assert [s["repo_key"].split(":")[0] for s in sorted(sessions_of(bank), key=lambda s: sessions.index(
        s["native_id"]))] == ["path", "root", "origin"]
    here = orjson.loads(ok(harvester(bank, repo, "sessions", "--here", "--json")))
    assert {s["native_id"] for s in here} == set(sessions)
    assert orjson.loads(ok(harvester(bank, repo, "status", "--json")))["repositories"]["shared_bank_ids"] == []


# --- migration 14 on a bank of before ---------------------------------------------------------------------

def test_migration_fills_the_identity_from_what_the_bank_stored(tmp_path: Path) -> None:
    from harvester.bank import open_bank
    from harvester.bank.migrations import MIGRATIONS

    old_repo = make_repo(tmp_path / "src" / "old-repo")  # probed without a remote
    clone = make_repo(tmp_path / "src" / "shop-clone", origin="git@github.com:acme/shop.git")
    gone_worktree = tmp_path / "wt" / "old-repo-feature"  # a worktree the old probe learned, gone since
    path = tmp_path / "bank.sqlite"
    with open_bank(path) as bank:  # as harvester before migration 14 left it
        as_migration_14_left_it(bank.conn)  # type: ignore[attr-defined]  # what migration 15 added after it
        bank.conn.executescript(  # type: ignore[attr-defined]
            "DROP INDEX sessions_repo_key; ALTER TABLE sessions DROP COLUMN repo_key; "
            "ALTER TABLE directories DROP COLUMN repo_key; PRAGMA user_version = 13;")
        rows = [  # harness, native id, bank id, cwd, repo root, origin url, origin id, how
            ("claude-code", "probed-origin", "coding-agent::shop", "/elsewhere/shop", "/elsewhere/shop",
             "git@github.com:acme/shop.git", "github.com/acme/shop", "cwd"),
            ("claude-code", "probed-root", "coding-agent::old-repo", str(old_repo), str(old_repo), None, None, "cwd"),
            ("codex", "recorded-origin", "coding-agent::laptop", "/gone/laptop", None,
             "https://github.com/acme/shop.git", None, "no-git"),
            ("codex", "nothing-known", "coding-agent::old-repo", "/other-machine/old-repo", None, None, None,
             "no-git"),
        ]
        bank.conn.executemany(  # type: ignore[attr-defined]
            "INSERT INTO sessions (harness, native_id, bank_id, cwd, repo_root, origin_url, origin_id, git_how, "
            "first_imported_at, last_imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '2026-01-01', '2026-01-01')", rows)
        bank.conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO directories (path, project, root, probed_at) VALUES (?, 'old-repo', ?, '2026-01-01')",
            (str(gone_worktree), str(old_repo)))
        bank.conn.commit()  # type: ignore[attr-defined]
    with open_bank(path) as bank:
        assert bank.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)  # type: ignore[attr-defined]
        keys = dict(bank.conn.execute("SELECT native_id, repo_key FROM sessions"))  # type: ignore[attr-defined]
    assert keys == {"probed-origin": "origin:github.com/acme/shop", "probed-root": f"path:{old_repo}",
                    "recorded-origin": "origin:github.com/acme/shop", "nothing-known": None}

    def here(where: Path) -> set[str]:
        return {s["native_id"] for s in orjson.loads(ok(harvester(path, where, "sessions", "--here", "--json")))}

    assert here(clone) == {"probed-origin", "recorded-origin"}
    assert here(old_repo) == {"probed-root"}  # by its main worktree's path, one of its keys
    home = tmp_path / "home"  # a new session in the learned worktree, gone: still that repository's
    s = ClaudeSession(home, str(gone_worktree))
    s.write(*s.conversation(1))
    scan(home, path)
    assert here(old_repo) == {"probed-root", s.id}


# --- Hindsight: two repositories of one bank id, two banks ----------------------------------------------

def test_the_sink_sends_two_repositories_of_one_bank_id_to_two_banks_and_moves_what_it_sent_merged(
        tmp_path: Path) -> None:
    from harvester.bank import open_bank
    from harvester.config.sinks import HindsightSettings
    from harvester.sinks.forward import Forwarder
    from harvester.sinks.hindsight import Hindsight
    from tests.hindsight_fake import FakeHindsight

    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    a = make_repo(tmp_path / "work" / "a" / "api")
    b = make_repo(tmp_path / "work" / "b" / "api", origin="https://github.com/bee/api.git")
    first = long_session(home, b, "the zebra quota migration", turns=8)  # started 2026-11-01: b keeps the bank
    mine = {place_claude(home, a, "two_turns"), place_codex(home, a, "tool_error")}
    scan(home, path)
    root = "root:" + git(a, "rev-list", "--max-parents=0", "HEAD")
    apart = f"coding-agent::api@root-{root[5:17]}"
    fake = FakeHindsight().start()
    try:
        with open_bank(path) as bank:
            forward = Forwarder(bank, HindsightSettings(url=fake.url), Hindsight(fake.url), host="test-host")  # type: ignore[arg-type]
            # As a bank of before had it: a's identity unknown, all of it sent into the one bank.
            bank.conn.execute("UPDATE sessions SET repo_key = NULL WHERE repo_key = ?", (root,))  # type: ignore[attr-defined]
            bank.conn.commit()  # type: ignore[attr-defined]
            assert forward.forward().sent == 3
            assert set(fake.documents) == {"coding-agent::api"} and len(fake.documents["coding-agent::api"]) == 3
            # Its identity known (as migration 14 or a reparse fills it): a's documents move to a bank of their own.
            bank.conn.execute("UPDATE sessions SET repo_key = ? WHERE repo_key IS NULL", (root,))  # type: ignore[attr-defined]
            bank.conn.commit()  # type: ignore[attr-defined]
            report = forward.forward()
            assert (report.queued, report.sent) == (2, 2)
            assert {d.split(":")[-1] for d in fake.documents["coding-agent::api"]} == {first}
            assert {d.split(":")[-1] for d in fake.documents[apart]} == mine
            assert forward.forward().sent == 0  # settled: nothing moves again
            b_new = ClaudeSession(home, str(b))
            b_new.write(*b_new.conversation(1))
        scan(home, path)
        with open_bank(path) as bank:
            forward = Forwarder(bank, HindsightSettings(url=fake.url), Hindsight(fake.url), host="test-host")  # type: ignore[arg-type]
            assert forward.forward().sent == 1
        assert len(fake.documents["coding-agent::api"]) == 2 and len(fake.documents[apart]) == 2
    finally:
        fake.stop()


# --- the team bank --------------------------------------------------------------------------------------

def test_the_team_bank_keeps_two_repositories_of_one_bank_id_apart(postgres_server: Any, tmp_path: Path) -> None:
    import uuid

    from tests.test_team_read import _machine
    from tests.test_team_read import harvester as on

    alpha = _machine(tmp_path, "alpha", postgres_server.uri(f"team_identity_{uuid.uuid4().hex[:8]}"), "work/a/api",
                     None)  # type: ignore[arg-type]
    b = make_repo(alpha["home"] / "work" / "b" / "api", origin="https://github.com/bee/api.git")
    mine, theirs = place_claude(alpha["home"], alpha["clone"], "two_turns"), place_codex(alpha["home"], b, "two_turns")
    scan(alpha["home"], alpha["bank"])
    pushed = on(alpha, "team", "push")
    assert pushed.returncode == 0, pushed.stderr
    for where, expected in ((alpha["clone"], {mine}), (b, {theirs})):
        listed = on(alpha, "sessions", "--team", "--here", "--json", cwd=where)
        assert listed.returncode == 0, listed.stderr
        assert {r["native_id"] for r in orjson.loads(listed.stdout)} == expected
    assert on(alpha, "context", "--team", "--session", theirs).returncode == 1  # not a's
    everyone = orjson.loads(on(alpha, "sessions", "--team", "--bank-id", "coding-agent::api", "--json").stdout)
    assert {r["native_id"] for r in everyone} == {mine, theirs}  # --bank stays a bank-id filter


def test_a_bank_opted_out_keeps_every_repository_filed_under_it_out(tmp_path: Path) -> None:
    """Kept apart in Hindsight, two repositories of coding-agent::api are still what its opt-out names."""
    from harvester.bank import open_bank
    from harvester.config.sinks import HindsightSettings
    from harvester.sinks.forward import Forwarder
    from harvester.sinks.hindsight import Hindsight
    from tests.hindsight_fake import FakeHindsight

    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    place_claude(home, make_repo(tmp_path / "work" / "a" / "api"), "two_turns")
    place_codex(home, make_repo(tmp_path / "work" / "b" / "api", origin="https://github.com/bee/api"), "two_turns")
    other = place_claude(home, make_repo(tmp_path / "work" / "shop"), "tool_error")
    scan(home, path)
    fake = FakeHindsight().start()
    try:
        with open_bank(path) as bank:
            for options in ({"opted_out": ["coding-agent::api"]}, {"exclude_banks": ["coding-agent::ap*"]},
                            {"banks": ["coding-agent::shop"]}):
                first = not fake.documents
                settings = HindsightSettings(url=fake.url, **options)  # type: ignore[arg-type]
                report = Forwarder(bank, settings, Hindsight(fake.url), host="h").forward()  # type: ignore[arg-type]
                assert (report.sent, report.held) == ((1, 2) if first else (0, 2)), options
                assert {d.split(":")[-1] for docs in fake.documents.values() for d in docs} == {other}
                bank.conn.execute("UPDATE sink_documents SET state = 'pending'")  # type: ignore[attr-defined]
                bank.conn.commit()  # type: ignore[attr-defined]
            allowed = HindsightSettings(url=fake.url, banks=["coding-agent::api"])
            assert Forwarder(bank, allowed, Hindsight(fake.url), host="h").forward().sent == 2  # type: ignore[arg-type]
        assert len(fake.documents) == 3  # shop, api, api@...: the allow-list names the bank both are filed under
    finally:
        fake.stop()


def test_sink_backfill_of_a_kept_apart_bank_forwards_that_repository_only(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.hindsight_fake import FakeHindsight

    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    a = make_repo(tmp_path / "work" / "a" / "api")
    b = make_repo(tmp_path / "work" / "b" / "api", origin="https://github.com/bee/api")
    long_session(home, b, "the zebra quota migration", turns=3)  # started first: b keeps coding-agent::api
    mine = place_claude(home, a, "two_turns")
    scan(home, path)
    apart = f"coding-agent::api@root-{git(a, 'rev-list', '--max-parents=0', 'HEAD')[:12]}"
    fake = FakeHindsight().start()
    try:
        conf = tmp_path / "config.toml"
        conf.write_text(f'[sinks.hindsight]\nurl = "{fake.url}"\n')
        monkeypatch.setenv("HARVESTER_CONFIG", str(conf))
        out = CliRunner().invoke(cli, ["--bank", str(path), "sink", "backfill", "--bank-id", apart])
        assert out.exit_code == 0 and "Forwarded 1 of 1 sessions" in out.output, out.output
        assert {b: {d.split(":")[-1] for d in docs} for b, docs in fake.documents.items() if docs} == {apart: {mine}}
    finally:
        fake.stop()
