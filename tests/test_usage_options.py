"""``harvester usage``'s options as a person and a script use them: which repositories (--repo, --here, --all),
which days (--since/--until, spans), breakdowns by repository, the five-hour blocks as printed, and the ``--json``
field names held to what ``--help`` and docs/usage.md document (a renamed or added field fails here first)."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harvester.cli import cli
from tests.helpers import FIXTURES, claude_dir, make_repo, scan
from tests.test_usage_cli import captured, run, usage  # noqa: F401 (captured: the module's fixture)
from tests.test_usage_dedup import _text, claude_line

SUBAGENT_REPO = "/tmp/cap-claude-code-subagent-r0anev3n/demo-repo"  # where the real subagent capture ran


def _claude_at(home: Path, cwd: str, session: str, times: list[datetime], tokens: int = 1000) -> None:
    """A Claude Code session in ``cwd``, one response at each of ``times`` (``tokens`` input, a tenth output)."""
    lines = []
    for n, when in enumerate(times):
        record = json.loads(claude_line(session, f"{session}-u{n}", f"msg_{session}_{n}", f"req_{session}_{n}",
                                        _text("hi"), {"input_tokens": tokens, "output_tokens": tokens // 10},
                                        ts=when.strftime("%Y-%m-%dT%H:%M:%S.000Z")))
        record["cwd"] = cwd
        lines.append(json.dumps(record).encode() + b"\n")
    (claude_dir(home, cwd) / f"{session}.jsonl").write_bytes(b"".join(lines))


def test_repo_names_the_sessions_recorded_there_and_all_is_every_repository(captured: Path) -> None:  # noqa: F811
    everything = usage(captured)["totals"]
    assert usage(captured, "--all")["totals"] == everything
    there = usage(captured, "--repo", SUBAGENT_REPO, "session")["rows"]
    assert [(r["session"], r["subagents"]) for r in there] == [("b38c3c5f-83b2-4496-9630-8a53cf13e828", 1)]
    assert 0 < there[0]["total_tokens"] < everything["total_tokens"]
    refused = CliRunner().invoke(cli, ["--bank", str(captured), "usage", "--all", "--repo", SUBAGENT_REPO])
    assert refused.exit_code == 2 and "give --all or one of --repo, --here and --bank-id" in refused.output


def test_model_takes_part_of_a_name_or_a_glob_and_repeats(captured: Path) -> None:  # noqa: F811
    everything = usage(captured)["totals"]
    claude = usage(captured, "--harness", "claude-code")["totals"]
    assert usage(captured, "--model", "claude-*")["totals"] == claude
    assert usage(captured, "--model", "opus")["totals"] == claude  # a part of the name
    assert usage(captured, "--model", "opus*")["rows"] == []  # a glob is the whole name
    assert usage(captured, "--model", "opus", "--model", "fake-mode?")["totals"] == everything
    assert usage(captured, "--harness", "claude-code", "--harness", "codex")["totals"] == everything
    # Case does not matter (model ids are lower-case, a person types what a dashboard shows), in a part or a glob.
    assert usage(captured, "--model", "OPUS")["totals"] == claude
    assert usage(captured, "--model", "Claude-*")["totals"] == claude


def test_here_is_the_repository_of_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    mine, other = make_repo(tmp_path / "mine"), make_repo(tmp_path / "other")
    when = datetime(2026, 11, 29, 12, tzinfo=UTC)
    _claude_at(home, str(mine), "s-mine", [when], tokens=1000)
    _claude_at(home, str(other), "s-other", [when], tokens=5000)
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("claude-code",))
    (mine / "sub").mkdir()
    monkeypatch.chdir(mine / "sub")
    assert usage(bank, "--here")["totals"]["input_tokens"] == 1000
    assert usage(bank, "--repo", str(other))["totals"]["input_tokens"] == 5000
    assert usage(bank)["totals"]["input_tokens"] == 6000


def test_by_repo_breaks_each_day_down_by_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine, other = make_repo(tmp_path / "mine"), make_repo(tmp_path / "other")
    when = datetime(2026, 11, 29, 12, tzinfo=UTC)
    _claude_at(home, str(mine), "s-mine", [when], tokens=1000)
    _claude_at(home, str(other), "s-other", [when, when + timedelta(minutes=1)], tokens=5000)
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("claude-code",))
    [day] = usage(bank, "--by", "repo")["rows"]
    assert {p["repo"]: p["input_tokens"] for p in day["breakdown"]} == {"coding-agent::mine": 1000,
                                                                         "coding-agent::other": 10000}
    text = run(bank, "usage", "--timezone", "UTC", "--by", "harness,repo")
    assert "└ claude-code · coding-agent::other" in text
    refused = CliRunner().invoke(cli, ["--bank", str(bank), "usage", "--by", "repo,agent"])
    assert refused.exit_code == 2 and "agent: give some of harness, model, repo" in refused.output


def test_since_and_until_take_days_and_spans_and_refuse_a_backwards_span(tmp_path: Path) -> None:
    home = tmp_path / "home"
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    _claude_at(home, "/home/dev/src/demo-repo", "s1", [today - timedelta(days=n) for n in (0, 3, 10)])
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("claude-code",))
    days = [(today - timedelta(days=n)).date().isoformat() for n in (10, 3, 0)]
    assert [r["date"] for r in usage(bank)["rows"]] == days
    assert [r["date"] for r in usage(bank, "--since", "7d")["rows"]] == days[1:]  # today and the six before
    assert [r["date"] for r in usage(bank, "--since", "1w")["rows"]] == days[1:]
    assert [r["date"] for r in usage(bank, "--until", days[1].replace("-", ""))["rows"]] == days[:2]
    assert [r["date"] for r in usage(bank, "--since", days[1], "--until", days[1])["rows"]] == [days[1]]
    data = usage(bank, "--since", days[1], "--until", days[1])
    assert (data["since"], data["until"]) == (days[1], days[1])
    backwards = CliRunner().invoke(cli, ["--bank", str(bank), "usage", "--since", days[2], "--until", days[1]])
    assert backwards.exit_code == 2 and "--since is after --until" in backwards.output
    nonsense = CliRunner().invoke(cli, ["--bank", str(bank), "usage", "--since", "last tuesday"])
    assert nonsense.exit_code == 2 and "is no day" in nonsense.output
    assert "No model responses recorded in that span." in run(bank, "usage", "--since", "2099-01-01")
    assert date.fromisoformat(days[2]) == today.date()


def test_blocks_print_the_active_blocks_burn_rate_and_projection(tmp_path: Path) -> None:
    """The report as printed, on the real clock: a block still running says its rate and what it comes to by its
    end; an ended block says when it ended."""
    home = tmp_path / "home"
    now = datetime.now(UTC)
    _claude_at(home, "/home/dev/src/demo-repo", "s1",
               [now - timedelta(days=2), now - timedelta(minutes=40), now - timedelta(minutes=10)])
    bank = tmp_path / "bank.sqlite"
    scan(home, bank, ("claude-code",))
    data = usage(bank, "blocks")
    assert [(b["gap"], b["active"], b["responses"]) for b in data["blocks"]] == [
        (False, False, 1), (True, False, 0), (False, True, 2)]
    active = data["blocks"][-1]
    assert active["burn_rate"]["tokens_per_minute"] == pytest.approx(2200 / 30, rel=1e-3)
    assert active["projection"]["total_tokens"] > active["total_tokens"]
    text = run(bank, "usage", "blocks", "--timezone", "UTC")
    assert "ACTIVE" in text and "gap until" in text and "ended " in text
    rate = re.search(r"Active block: ([\d,]+) tokens/min \(([\d,]+) input\+output\), \$[\d.,]+/hour; by its end "
                     r"\((\d+) min left\): ([\d,]+) tokens, \$[\d.,]+", text)
    assert rate, text
    assert rate[1] == f"{active['burn_rate']['tokens_per_minute']:,.0f}"
    assert int(rate[4].replace(",", "")) == active["projection"]["total_tokens"]


# -- --json: the field names are a contract ---------------------------------------------------------------------
HEAD = {"report", "timezone", "cost_mode", "since", "until", "price_catalogue", "totals"}
COUNTS = {"input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "reasoning_tokens",
          "total_tokens", "cost_usd", "unpriced_responses", "responses", "recorded_cost_usd", "recorded_responses",
          "calculated_cost_usd", "calculated_unpriced_responses", "models", "first_at", "last_at"}
BLOCK = {"start", "end", "last_at", "active", "gap", "burn_rate", "projection"}
BURN = {"tokens_per_minute", "input_output_tokens_per_minute", "cost_per_hour_usd"}
PROJECTION = {"total_tokens", "cost_usd", "remaining_minutes"}


def _names(value: Any) -> set[str]:
    """Every key, at any depth."""
    if isinstance(value, dict):
        return set(value) | {n for v in value.values() for n in _names(v)}
    if isinstance(value, list):
        return {n for v in value for n in _names(v)}
    return set()


def test_json_field_names_are_the_documented_ones(captured: Path, tmp_path: Path) -> None:  # noqa: F811
    daily = usage(captured, "--by", "harness,model,repo")
    assert set(daily) == HEAD | {"rows"}
    assert set(daily["totals"]) == COUNTS
    assert set(daily["rows"][0]) == COUNTS | {"date", "breakdown"}
    assert set(daily["rows"][0]["breakdown"][0]) == COUNTS | {"harness", "model", "repo"}
    assert set(usage(captured, "weekly")["rows"][0]) == COUNTS | {"week"}
    assert set(usage(captured, "monthly")["rows"][0]) == COUNTS | {"month"}
    assert set(usage(captured, "session")["rows"][0]) == COUNTS | {"session", "harness", "bank_id", "title",
                                                                     "subagents"}
    now = datetime.now(UTC)
    _claude_at(tmp_path / "home", "/home/dev/src/demo-repo", "s1", [now - timedelta(minutes=30), now])
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, ("claude-code",))
    blocks = usage(bank, "blocks")
    assert set(blocks) == HEAD | {"blocks"}
    [block] = blocks["blocks"]
    assert set(block) == COUNTS | BLOCK
    assert set(block["burn_rate"]) == BURN and set(block["projection"]) == PROJECTION
    every = _names(daily) | _names(usage(captured, "session")) | _names(blocks) | {"week", "month"}
    helped = CliRunner().invoke(cli, ["usage", "--help"], terminal_width=200).output
    documented = set(re.findall(r'"([a-z_]+)"', helped))
    assert every - documented == set(), "fields --help does not name"
    page = (FIXTURES.parent / "docs" / "usage.md").read_text()
    assert {name for name in every if f"`{name}`" not in page} == set(), "fields docs/usage.md does not name"
    assert orjson.loads(orjson.dumps(daily)) == daily


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aBc-_.%1*?[]^\\!", max_size=8), st.text(alphabet="abC-_.%1*?[]^\\!", max_size=10))
@example(name="[1-.]", model="")  # a reversed range: nothing in SQLite, an error in a regex
@example(name="x[^1-.]", model="x1")
def test_model_matches_the_same_ids_as_a_glob_here_and_as_a_regex_on_the_team_bank(name: str, model: str) -> None:
    """--model is SQLite's GLOB locally and PostgreSQL's ``~*`` on the team bank (its POSIX regex, of which these
    constructs read as Python's do): one id matches both or neither (None: the pattern matches no id at all)."""
    from harvester.usage.query import model_glob, model_regex

    conn = sqlite3.connect(":memory:")
    here = conn.execute("SELECT lower(?) GLOB ?", (model, model_glob(name))).fetchone()[0] == 1
    regex = model_regex(name)
    there = regex is not None and re.search(regex, model, re.IGNORECASE) is not None
    assert here == there, (model_glob(name), regex)
