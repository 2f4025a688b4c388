"""Reading the team bank (harvester/team/read.py) on a real PostgreSQL: ``--team`` on sessions, show, search and
context, and ``harvester mcp --team``, from one machine, finding what a teammate's machine pushed.

Two machines (two HOMEs, banks and host names) hold clones of one repository under different folder names and
remote spellings; beta's Claude Code session is found from alpha's clone, as alpha's own is; a repository of
beta's with ``push = false`` is never on the server; a server with a newer schema, or none at all, is said so.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.frame_check import BAD_TIME, HOSTILE, one_frame
from tests.helpers import ClaudeSession, make_repo, scan
from tests.machine import ROOT

PHRASE = "the flaky checkout retry budget"


def _env(machine: dict[str, Any], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_", "PG"))}
    env.update(HOME=str(machine["home"]), HARVESTER_BANK=str(machine["bank"]), HARVESTER_CONFIG=str(machine["config"]),
               HARVESTER_TEAM_BANK=machine["url"], HARVESTER_HOST_NAME=machine["host"], PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


def harvester(machine: dict[str, Any], *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harvester", *args], env=_env(machine, **env), capture_output=True,
                          text=True, cwd=cwd or machine["clone"], timeout=120)


def _machine(tmp: Path, host: str, url: str, clone: str, origin: str, config: str = "") -> dict[str, Any]:
    home = tmp / host
    repo = make_repo(home / clone, origin=origin)
    (home / "config.toml").write_text(config)
    return {"home": home, "bank": home / "bank.sqlite", "config": home / "config.toml", "url": url, "host": host,
            "clone": repo}


@pytest.fixture(scope="module")
def team(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("team-read")
    url = postgres_server.uri("team_read")
    beta = _machine(tmp, "beta", url, "src/shop-copy", "https://github.com/acme/shop",
                    '[team.bank."coding-agent::secret"]\npush = false\n')
    theirs = ClaudeSession(beta["home"], str(beta["clone"]))
    theirs.write(theirs.user(f"why does {PHRASE} run out on Fridays?"),
                 theirs.tool_use("Bash", {"command": "pytest tests/test_checkout.py"}, "toolu_1"),
                 theirs.tool_result("toolu_1", "1 failed: test_retry_budget"),
                 theirs.assistant(f"Found it: {PHRASE} is shared across workers; made it per worker."))
    secret_repo = make_repo(beta["home"] / "src" / "secret", origin="git@github.com:acme/secret.git")
    hidden = ClaudeSession(beta["home"], str(secret_repo))
    hidden.write(hidden.user("the quarterly acquisition plan"), hidden.assistant("noted: acquisition plan"))
    scan(beta["home"], beta["bank"])
    pushed = harvester(beta, "team", "push")
    assert pushed.returncode == 0, pushed.stderr

    alpha = _machine(tmp, "alpha", url, "work/shop", "git@github.com:acme/shop.git")
    mine = ClaudeSession(alpha["home"], str(alpha["clone"]))
    mine.write(mine.user("tidy the README"), mine.assistant("README tidied."))
    scan(alpha["home"], alpha["bank"])
    pushed = harvester(alpha, "team", "push")
    assert pushed.returncode == 0, pushed.stderr
    yield {"pg": postgres_server, "url": url, "alpha": alpha, "beta": beta, "theirs": theirs.id, "mine": mine.id,
           "hidden": hidden.id}


def test_search_team_finds_what_the_other_machine_pushed_and_local_search_does_not(team: dict) -> None:
    alpha = team["alpha"]
    found = harvester(alpha, "search", "--team", "--here", "flaky checkout", "--json")
    assert found.returncode == 0, found.stderr
    hits = orjson.loads(found.stdout)["hits"]
    assert {h["session"] for h in hits} == {team["theirs"]}
    assert any("[flaky]" in h["snippet"] and "[checkout]" in h["snippet"] for h in hits)
    assert {h["bank_id"] for h in hits} == {"coding-agent::shop-copy"}  # beta's name for it, shown as filed
    local = harvester(alpha, "search", "--here", "flaky checkout", "--json")
    assert local.returncode == 0 and orjson.loads(local.stdout)["hits"] == []
    # Words inside a path or a file name are found, as by the local index.
    inside = harvester(alpha, "search", "--team", "test_checkout.py", "--json")
    assert [h["kind"] for h in orjson.loads(inside.stdout)["hits"]] == ["tool_call"]
    text = harvester(alpha, "search", "--team", "--here", '"retry budget"')
    assert text.returncode == 0 and "for '\"retry budget\"' in coding-agent::shop" in text.stdout, text.stdout


def test_sessions_team_holds_both_machines_clones_as_one_repository_with_provenance(team: dict) -> None:
    alpha = team["alpha"]
    listed = harvester(alpha, "sessions", "--team", "--here", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["native_id"]: r for r in orjson.loads(listed.stdout)}
    assert set(rows) == {team["theirs"], team["mine"]}
    assert rows[team["theirs"]]["host"] == "beta" and rows[team["mine"]]["host"] == "alpha"
    assert rows[team["theirs"]]["origin_id"] == rows[team["mine"]]["origin_id"] == "github.com/acme/shop"
    table = harvester(alpha, "sessions", "--team", "--here")
    assert table.stdout.splitlines()[0].split() == ["SESSION", "HARNESS", "BANK", "UPDATED", "EVENTS", "TITLE", "HOST"]
    everyone = orjson.loads(harvester(alpha, "sessions", "--team", "--json").stdout)
    assert team["hidden"] not in {r["native_id"] for r in everyone}  # push = false on beta
    spoken = orjson.loads(harvester(alpha, "sessions", "--team", "--here", "--role", "user", "--json").stdout)
    assert {r["native_id"] for r in spoken} == set(rows)  # the same filter on the team bank
    assert orjson.loads(harvester(alpha, "sessions", "--team", "--kind", "compaction", "--json").stdout) == []


def test_show_and_context_team_read_the_other_machines_session(team: dict) -> None:
    alpha = team["alpha"]
    shown = harvester(alpha, "show", "--team", team["theirs"][:8])
    assert shown.returncode == 0, shown.stderr
    assert PHRASE in shown.stdout and "pytest tests/test_checkout.py" in shown.stdout
    as_json = orjson.loads(harvester(alpha, "show", "--team", team["theirs"], "--json").stdout)
    assert as_json["session"]["host"] == "beta"
    assert [e["role"] for e in as_json["events"]] == ["user", "assistant", "tool", "assistant"]
    brief = harvester(alpha, "context", "--team", "--session", team["theirs"])
    assert brief.returncode == 0, brief.stderr
    assert PHRASE in brief.stdout and "pytest tests/test_checkout.py" in brief.stdout
    assert brief.stdout.startswith("<harvester-history")  # framed as past reference data
    mine_only = harvester(alpha, "context", "--session", team["theirs"])  # the local bank has no such session
    assert mine_only.returncode == 1


def _mcp(team: dict, calls: list[tuple[str, dict[str, Any]]], machine: dict | None = None) -> list[tuple[bool, str]]:
    alpha = machine or team["alpha"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "harvester", "mcp", "--team"], env=_env(alpha),
                                   cwd=str(alpha["clone"]))

    async def talk() -> list[tuple[bool, str]]:
        async with Client(params) as client:
            out = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                out.append((bool(result.is_error), "".join(c.text for c in result.content)))
            return out
    return asyncio.run(talk())


def test_mcp_team_answers_from_the_team_bank(team: dict) -> None:
    results = _mcp(team, [("search_history", {"query": "flaky checkout"}),
                          ("recent_sessions", {}),
                          ("handoff", {"session": team["theirs"]}),
                          ("get_events", {"session": team["theirs"], "start": 0, "limit": 10})])
    assert not any(error for error, _ in results), results
    search, recent, handoff, events = (text for _, text in results)
    assert team["theirs"] in search and "flaky" in search
    assert team["theirs"] in recent and team["mine"] in recent
    assert PHRASE in handoff and "pytest tests/test_checkout.py" in handoff
    assert "made it per worker" in events
    assert team["hidden"] not in recent


def test_a_held_repository_never_reaches_the_server(team: dict) -> None:
    pg = team["pg"]
    assert pg.psql("SELECT count(*) FROM harvester.sessions WHERE bank_id = 'coding-agent::secret'", "team_read") == "0\n"
    assert pg.psql("SELECT count(*) FROM harvester.events WHERE text LIKE '%acquisition%'", "team_read") == "0\n"
    assert pg.psql("SELECT count(*) FROM harvester.repositories", "team_read") == "1\n"
    found = harvester(team["alpha"], "search", "--team", "acquisition plan", "--json")
    assert found.returncode == 0 and orjson.loads(found.stdout)["hits"] == []


def test_a_newer_schema_and_an_absent_server_are_said_in_one_line(team: dict, tmp_path: Path) -> None:
    pg = team["pg"]
    url = pg.uri("team_read_newer")
    machine = {**team["alpha"], "url": url}
    assert harvester(machine, "team", "push").returncode == 0
    pg.psql("INSERT INTO harvester.schema_migrations (version) VALUES (999)", "team_read_newer")
    refused = harvester(machine, "sessions", "--team")
    assert refused.returncode == 1
    assert "newer than this harvester (schema 999" in refused.stderr and "Traceback" not in refused.stderr
    away = {**team["alpha"], "url": f"postgresql://postgres@/none?host={tmp_path}"}
    gone = harvester(away, "search", "--team", "anything")
    assert gone.returncode == 1 and gone.stderr.startswith("Error: the team bank: "), gone.stderr
    assert "Traceback" not in gone.stderr


def test_a_teammates_hostile_rows_cannot_break_the_frame(team: dict, tmp_path: Path) -> None:
    """Whatever a teammate's rows hold (every field set on the server, past any check their harvester made), the
    answers read from the team bank hold one frame, sealed with this machine's key, and nothing obeyed."""
    import psycopg

    pg = team["pg"]
    url = pg.uri("team_read_hostile")
    gamma = _machine(tmp_path, "gamma", url, "src/app", "https://github.com/acme/app")
    s = ClaudeSession(gamma["home"], str(gamma["clone"]))
    s.write(s.user(f"zebra ask {HOSTILE}"), s.tool_use("Bash", {"command": f"make {HOSTILE}"}, "t1"),
            s.tool_result("t1", f"failed {HOSTILE}"), s.assistant(f"zebra answer {HOSTILE}"))
    scan(gamma["home"], gamma["bank"])
    assert harvester(gamma, "team", "push").returncode == 0
    native = f"id-{HOSTILE}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE harvester.sessions SET native_id = %s, title = %s, branch = %s, cwd = %s, agent_version = %s, "
                     "parent_native_id = %s, parent_kind = %s, harness = %s, state = %s, started_at = %s, "
                     "updated_at = %s", (native, f"title {HOSTILE}", f"branch {HOSTILE}", f"/cwd {HOSTILE}",
                                         f"2.1{HOSTILE}", f"parent {HOSTILE}", f"kind {HOSTILE}", f"cc {HOSTILE}",
                                         f"ended {HOSTILE}", BAD_TIME, BAD_TIME))
        conn.execute("UPDATE harvester.events SET ts = %s, tool_name = %s", (BAD_TIME, f"tool {HOSTILE}"))
    for args in (("context", "--team"), ("context", "--team", "--session", native, "--max-bytes", "100000")):
        brief = harvester(gamma, *args)
        assert brief.returncode == 0, brief.stderr
        assert "# Handoff: title" in one_frame(brief.stdout) and 'seal="' in brief.stdout.splitlines()[0]
    results = _mcp(team, [("recent_sessions", {"max_bytes": 100_000}), ("search_history", {"query": "zebra"}),
                          ("get_events", {"session": native, "max_bytes": 100_000}),
                          ("handoff", {"session": native, "max_bytes": 100_000})], machine=gamma)
    for error, text in results:
        assert not error, text
        one_frame(text)
