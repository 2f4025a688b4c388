"""``harvester usage --team`` on a real PostgreSQL: two machines' Claude Code usage in one report, by host, a forked
session's copied responses counted once, the same totals as each machine's own bank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import claude_dir, make_repo, scan
from tests.machine import ROOT
from tests.test_usage_dedup import _text, claude_line


def _harvester(machine: dict[str, Any], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_", "PG"))}
    env.update(HOME=str(machine["home"]), HARVESTER_BANK=str(machine["bank"]), HARVESTER_CONFIG=str(machine["config"]),
               HARVESTER_TEAM_BANK=machine["url"], HARVESTER_HOST_NAME=machine["host"], PYTHONPATH=str(ROOT),
               XDG_CACHE_HOME=str(machine["home"] / ".cache"))
    return subprocess.run([sys.executable, "-m", "harvester", *args], env=env, capture_output=True, text=True,
                          cwd=machine["clone"], timeout=120)


def _machine(tmp: Path, host: str, url: str, sessions: dict[str, list[bytes]]) -> dict[str, Any]:
    home = tmp / host
    repo = make_repo(home / "src" / "shop", origin="git@github.com:acme/shop.git")
    (home / "config.toml").write_text("")
    folder = claude_dir(home, str(repo))
    for name, lines in sessions.items():
        (folder / f"{name}.jsonl").write_bytes(b"".join(lines))
    machine = {"home": home, "bank": home / "bank.sqlite", "config": home / "config.toml", "url": url, "host": host,
               "clone": repo}
    scan(home, machine["bank"], ("claude-code",))
    pushed = _harvester(machine, "team", "push")
    assert pushed.returncode == 0, pushed.stderr
    return machine


def test_team_usage_adds_every_machine_once_by_host(postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("team_usage")
    usage = {"input_tokens": 10, "cache_read_input_tokens": 5000, "output_tokens": 200}
    original = [claude_line("s-alpha", "u-alpha-0000000001", "msg_a1", "req_a1", _text("one"), usage),
                claude_line("s-alpha", "u-alpha-0000000002", "msg_a2", "req_a2", _text("two"), usage,
                            ts="2026-11-30T09:00:00.000Z")]
    fork = [line.replace(b'"s-alpha"', b'"s-fork"') for line in original[:1]] + [
        claude_line("s-fork", "u-fork-00000000001", "msg_f1", "req_f1", _text("three"), usage)]
    alpha = _machine(tmp_path, "alpha", url, {"s-alpha": original, "s-fork": fork})
    beta = _machine(tmp_path, "beta", url, {"s-beta": [
        claude_line("s-beta", "u-beta-00000000001", "msg_b1", "req_b1", _text("four"), usage)]})
    done = _harvester(alpha, "usage", "--team", "--json", "--timezone", "UTC", "--by", "host")
    assert done.returncode == 0, done.stderr
    data = orjson.loads(done.stdout)
    assert data["totals"]["responses"] == 4  # msg_a1 (copied into the fork) once, a2, f1, b1
    hosts: dict[str, int] = {}
    for row in data["rows"]:
        for part in row["breakdown"]:
            hosts[part["host"]] = hosts.get(part["host"], 0) + part["responses"]
    assert hosts == {"alpha": 3, "beta": 1}
    assert [r["date"] for r in data["rows"]] == ["2026-11-29", "2026-11-30"]
    local = {m["host"]: json.loads(_harvester(m, "usage", "--json", "--timezone", "UTC").stdout)["totals"]
             for m in (alpha, beta)}
    for key in ("input_tokens", "output_tokens", "cache_read_tokens", "total_tokens"):
        assert data["totals"][key] == local["alpha"][key] + local["beta"][key], key
    assert data["totals"]["cost_usd"] == pytest.approx(local["alpha"]["cost_usd"] + local["beta"]["cost_usd"])
    # --model means on the team bank what it means locally: a part of the name or a glob of all of it, any case.
    for model, responses in (("SONNET", 4), ("claude-*-4-5-????????", 4), ("sonnet*", 0), ("claude_sonnet", 0)):
        local_answer = _harvester(alpha, "usage", "--json", "--timezone", "UTC", "--model", model)
        team_answer = _harvester(alpha, "usage", "--team", "--json", "--timezone", "UTC", "--model", model)
        counted = [orjson.loads(answer.stdout)["totals"]["responses"] if orjson.loads(answer.stdout)["rows"] else 0
                   for answer in (team_answer, local_answer)]
        assert counted == [responses, responses - 1 if responses else 0], (model, counted)
    blocked = _harvester(alpha, "usage", "blocks", "--team", "--json", "--timezone", "UTC", "--by", "host")
    assert blocked.returncode == 0, blocked.stderr
    by_host: dict[str, int] = {}
    for block in orjson.loads(blocked.stdout)["blocks"]:
        for part in block.get("breakdown", []):
            by_host[part["host"]] = by_host.get(part["host"], 0) + part["responses"]
    assert by_host == {"alpha": 3, "beta": 1}  # the blocks broken down by host too
    text = _harvester(alpha, "usage", "--team", "--timezone", "UTC", "--by", "host")
    assert text.returncode == 0 and "└ beta" in text.stdout, text.stdout + text.stderr


def test_model_patterns_mean_on_postgresql_what_they_mean_here(postgres_server: Any) -> None:
    """The regexes --model becomes on the team bank, run by PostgreSQL itself: odd classes (a `]` first, escaped
    `^ - [ \\`, reversed ranges) are valid there and match the ids SQLite's GLOB matches here."""
    import re
    import sqlite3

    import psycopg

    from harvester.usage.query import model_glob, model_regex

    names = ["[]x-]*", "*[\\\\^]*", "c[^a-b]*", "[1-.]*", "*[[]*", "claude-[a-z]*", "*-[!]", "a[z-a]", "x[-a]y",
             "[a-c-e]*", "sonnet", "c?a*"]
    ids = ["]x-", "a\\b", "a^b", "cat", "cbt", "1abc", "[x", "claude-sonnet", "x-!", "x-a", "xay", "x-y", "d", "-q",
           "claude_sonnet", "ca"]
    local = sqlite3.connect(":memory:")
    with psycopg.connect(postgres_server.uri()) as pg:
        for name in names:
            regex = model_regex(name)
            for model in ids:
                here = local.execute("SELECT lower(?) GLOB ?", (model, model_glob(name))).fetchone()[0] == 1
                there = regex is not None and pg.execute("SELECT %s ~* %s", (model, regex)).fetchone()[0]
                assert here == there == (regex is not None and re.search(regex, model, re.I) is not None), \
                    (name, model, regex)


def test_team_usage_calculates_what_the_agent_recorded_as_zero(postgres_server: Any, tmp_path: Path) -> None:
    """``auto`` on the team bank as here: opencode's store records a price for most steps and zero for one (a
    subscription's), of one model on one day; the zero's cost is calculated, not lost in the day's recorded sum."""
    import sqlite3

    from tests.helpers import FIXTURES

    home = tmp_path / "gamma"
    repo = make_repo(home / "src" / "shop", origin="git@github.com:acme/shop.git")
    (home / "config.toml").write_text("")
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "opencode.db")
    conn.executescript((FIXTURES / "opencode" / "hand" / "opencode.sql").read_text())
    # One step paid by a subscription: recorded as zero, its tokens those of the steps priced beside it.
    conn.execute("UPDATE part SET data = json_set(data, '$.cost', 0) WHERE rowid = (SELECT min(rowid) FROM part "
                 "WHERE json_extract(data, '$.type') = 'step-finish' AND json_extract(data, '$.cost') > 0)")
    conn.commit()
    conn.close()
    machine = {"home": home, "bank": home / "bank.sqlite", "config": home / "config.toml", "host": "gamma",
               "url": postgres_server.uri("team_usage_zero"), "clone": repo}
    scan(home, machine["bank"], ("opencode",), env={"HOME": str(home), "OPENCODE_DB": str(data / "opencode.db")})
    pushed = _harvester(machine, "team", "push")
    assert pushed.returncode == 0, pushed.stderr
    team, local = (orjson.loads(_harvester(machine, "usage", *team_flag, "--json", "--timezone", "UTC").stdout)["totals"]
                   for team_flag in (("--team",), ()))
    assert team["recorded_responses"] == local["recorded_responses"] == team["responses"] > 1
    assert team["cost_usd"] > team["recorded_cost_usd"] > 0  # the zero step priced from the catalogue
    assert team["cost_usd"] == pytest.approx(local["cost_usd"])
