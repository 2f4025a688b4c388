"""``harvester usage`` as a person and a script see it: its reports, filters and breakdowns, unknown prices said
unknown, the agents' recorded costs beside the catalogue's, the five-hour blocks, and the tokens and cost that
``sessions``, ``show`` and MCP ``recent_sessions`` gain."""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from harvester.cli import cli
from tests.helpers import FIXTURES, as_migration_15_left_it, claude_dir, copy_tree, scan
from tests.test_usage_dedup import CWD, _text, claude_line


def run(bank: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--bank", str(bank), *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real captures of Claude Code (a model both price catalogues know) and Codex (a fake model no one
    prices), in one bank."""
    tmp = tmp_path_factory.mktemp("usage")
    home = tmp / "home"
    for scenario in sorted((FIXTURES / "claude_code" / "real").iterdir()):
        if (scenario / "projects").is_dir():
            copy_tree(scenario / "projects", home / ".claude" / "projects")
    for scenario in sorted((FIXTURES / "codex" / "real").iterdir()):
        if (scenario / "sessions").is_dir():
            copy_tree(scenario / "sessions", home / ".codex" / "sessions")
    scan(home, tmp / "bank.sqlite", ("claude-code", "codex"), env={"HOME": str(home)})
    return tmp / "bank.sqlite"


def usage(bank: Path, *args: str) -> dict[str, Any]:
    return orjson.loads(run(bank, "usage", *args, "--json", "--timezone", "UTC"))


def test_daily_counts_every_agent_and_says_an_unknown_price_is_unknown(captured: Path) -> None:
    data = usage(captured, "--by", "harness,model")
    [day] = data["rows"]
    assert day["date"] == "2026-11-29" and day["models"] == ["claude-opus-4-8", "fake-model"]
    parts = {(p["harness"], p["model"]): p for p in day["breakdown"]}
    assert parts[("claude-code", "claude-opus-4-8")]["cost_usd"] > 0
    fake = parts[("codex", "fake-model")]
    assert fake["cost_usd"] is None and fake["unpriced_responses"] == fake["responses"] > 0
    assert day["unpriced_responses"] == fake["responses"]  # counted in the day's tokens, not as zero dollars
    assert day["total_tokens"] == sum(p["total_tokens"] for p in day["breakdown"])
    assert data["price_catalogue"].startswith("genai-prices ")
    text = run(captured, "usage", "--timezone", "UTC", "--by", "harness,model")
    assert f"+{fake['responses']} unpriced" in text and "unknown (" in text and "$0.00" not in text


def test_the_text_report_has_the_issues_columns_with_the_json_counts(captured: Path) -> None:
    """Input, output, cache write, cache read, reasoning, total tokens, cost (USD), models: in that order, each
    row's cells the numbers --json gives."""
    data = usage(captured)
    lines = run(captured, "usage", "--timezone", "UTC").splitlines()
    header = next(line for line in lines if line.startswith("Date "))
    assert [c.strip() for c in header.split("  ") if c.strip()] == [
        "Date", "Input", "Output", "Cache write", "Cache read", "Reasoning", "Total", "Cost (USD)", "Models"]
    [day] = data["rows"]
    cells = next(line for line in lines if line.startswith(day["date"])).split()
    counts = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "reasoning_tokens",
              "total_tokens")
    assert cells[1:7] == [f"{day[key]:,}" for key in counts]
    assert cells[7] == f"${day['cost_usd']:,.2f}" and f"+{day['unpriced_responses']} unpriced" in " ".join(cells)
    assert ", ".join(day["models"]) in next(line for line in lines if line.startswith(day["date"]))


def test_filters_and_periods(captured: Path) -> None:
    everything = usage(captured)["totals"]
    claude = usage(captured, "--harness", "claude-code")["totals"]
    codex = usage(captured, "--model", "fake")["totals"]
    assert claude["total_tokens"] + codex["total_tokens"] == everything["total_tokens"]
    assert usage(captured, "--since", "2026-11-30")["rows"] == []
    assert usage(captured, "--until", "20261128")["rows"] == []
    assert [r["month"] for r in usage(captured, "monthly")["rows"]] == ["2026-11"]
    assert [r["week"] for r in usage(captured, "weekly")["rows"]] == ["2026-11-23"]  # the week's Monday
    sessions = usage(captured, "session", "--harness", "claude-code")["rows"]
    with_subagent = [s for s in sessions if s["subagents"]]
    assert len(with_subagent) == 1  # the subagent's usage is its parent's row
    assert sum(s["total_tokens"] for s in sessions) == claude["total_tokens"]
    assert usage(captured, "--repo", str(captured.parent))["rows"] == []  # no session was recorded there


def test_a_timezone_moves_responses_to_their_local_day(captured: Path) -> None:
    """The captures ran at 15:34 UTC: 00:34 the next day in Tokyo, and a quarter past in Kathmandu (+05:45)."""
    tokyo = orjson.loads(run(captured, "usage", "--json", "--timezone", "Asia/Tokyo"))
    assert [r["date"] for r in tokyo["rows"]] == ["2026-11-30"]
    kathmandu = orjson.loads(run(captured, "usage", "--json", "--timezone", "Asia/Kathmandu"))
    assert [r["date"] for r in kathmandu["rows"]] == ["2026-11-29"]
    assert tokyo["totals"]["total_tokens"] == kathmandu["totals"]["total_tokens"]


def test_a_report_prices_from_its_book_without_importing_the_catalogue(captured: Path) -> None:
    """genai-prices costs a quarter of a second to import: the models' prices are kept beside the bank, and a report
    whose models are all in it never imports the catalogue."""
    from harvester.bank import open_bank_to_read
    from harvester.usage.answer import Request, answer
    from harvester.usage.prices import cache_path, load_book

    usage(captured)
    assert cache_path(str(captured)).is_file()
    for name in [m for m in sys.modules if m.startswith("genai_prices")]:
        del sys.modules[name]
    bank = open_bank_to_read(captured)
    try:
        answer(bank.conn, Request(), load_book(cache_path(str(captured))))
    finally:
        bank.close()
    assert not [m for m in sys.modules if m.startswith("genai_prices")]


def test_the_agents_recorded_cost_beside_the_catalogues(tmp_path: Path) -> None:
    """opencode records each step's cost: ``recorded`` takes it alone, ``calculate`` the catalogue's, ``auto``
    the recorded one where there is one; each row carries both for comparison."""
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "opencode.db")
    conn.executescript((FIXTURES / "opencode" / "hand" / "opencode.sql").read_text())
    conn.commit()
    conn.close()
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, ("opencode",), env={"HOME": str(tmp_path / "home"),
                                                      "OPENCODE_DB": str(data / "opencode.db")})
    recorded = usage(bank, "--cost", "recorded")["totals"]
    calculated = usage(bank, "--cost", "calculate")["totals"]
    auto = usage(bank)["totals"]
    assert recorded["cost_usd"] == recorded["recorded_cost_usd"] > 0
    assert calculated["cost_usd"] == calculated["calculated_cost_usd"]
    assert auto["recorded_cost_usd"] == recorded["recorded_cost_usd"]
    assert "Recorded" in run(bank, "usage", "--timezone", "UTC")


def test_blocks_show_the_active_windows_burn_rate_and_projection(tmp_path: Path) -> None:
    """Five-hour windows as ccusage draws them: from the hour of a block's first response; a gap longer than five
    hours between two responses is a gap; the block still running has a burn rate and a projection."""
    from harvester.bank import open_bank_to_read
    from harvester.usage.answer import Request, answer
    from harvester.usage.prices import cache_path, load_book

    now = datetime(2026, 11, 29, 15, 40, tzinfo=UTC)
    times = [now - timedelta(hours=9, minutes=50), now - timedelta(hours=9), now - timedelta(minutes=40),
             now - timedelta(minutes=10)]
    lines = b"".join(claude_line("s1", f"u{n}", f"msg_{n}", f"req_{n}", _text("hi"),
                                 {"input_tokens": 1000, "output_tokens": 100},
                                 ts=t.strftime("%Y-%m-%dT%H:%M:%S.000Z")) for n, t in enumerate(times))
    (claude_dir(tmp_path / "home", CWD) / "s1.jsonl").write_bytes(lines)
    bank_path = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank_path, ("claude-code",))
    bank = open_bank_to_read(bank_path)
    try:
        data = answer(bank.conn, Request(report="blocks"), load_book(cache_path(str(bank_path))), now=now)
    finally:
        bank.close()
    blocks = data["blocks"]
    assert [(b["start"], b["gap"], b["active"], b["responses"]) for b in blocks] == [
        ("2026-11-29T05:00:00.000Z", False, False, 2),
        ("2026-11-29T11:40:00.000Z", True, False, 0),
        ("2026-11-29T15:00:00.000Z", False, True, 2)]
    active = blocks[-1]
    assert active["burn_rate"]["tokens_per_minute"] == pytest.approx(2200 / 30)
    assert active["projection"]["remaining_minutes"] == 260  # until 20:00
    assert active["projection"]["total_tokens"] == round(2200 + 2200 / 30 * 260)


def test_sessions_show_and_recent_sessions_say_what_a_session_cost(captured: Path) -> None:
    from harvester.bank import open_bank_to_read
    from harvester.bank.scope import EVERYTHING
    from harvester.recall.views import Recall, recent_sessions

    listing = json.loads(run(captured, "sessions", "--json", "--harness", "claude-code"))
    assert all(s["usage"]["total_tokens"] > 0 and s["usage"]["cost_usd"] > 0 for s in listing)
    table = run(captured, "sessions", "--harness", "codex")
    assert table.splitlines()[0].split()[5:7] == ["TOKENS", "COST"] and "unknown (" in table
    parent = next(s for s in listing if s["native_id"] == "6c8b8366-9d7e-4e26-aef9-724f017f9da9")
    head = run(captured, "show", parent["native_id"], "--no-pager").split("\n\n")[0]
    assert f"tokens {parent['usage']['total_tokens']:,} (" in head and "cost $" in head
    bank = open_bank_to_read(captured)
    try:
        answer_text = recent_sessions(Recall(bank, EVERYTHING), limit=100, max_bytes=200000)
    finally:
        bank.close()
    assert "tokens in 3 model responses, cost $0.29" in answer_text


def test_a_report_opens_only_a_current_bank_the_quick_way(tmp_path: Path, captured: Path) -> None:
    """The quick read-only way in (harvester/usage/bankfile.py) takes a current bank, and nothing else: a bank of an
    older schema is opened the usual way (which migrates it), another program's database is refused as ever."""
    from harvester.bank.sqlite_open import APPLICATION_ID
    from harvester.usage import bankfile

    assert bankfile.APPLICATION_ID == APPLICATION_ID
    quick = bankfile.quick_connection(captured)
    assert quick is not None
    quick.close()
    older = tmp_path / "older.sqlite"
    older.write_bytes(captured.read_bytes())
    for suffix in ("-wal", "-shm"):
        if Path(f"{captured}{suffix}").exists():
            Path(f"{older}{suffix}").write_bytes(Path(f"{captured}{suffix}").read_bytes())
    conn = sqlite3.connect(older)
    as_migration_15_left_it(conn)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 15  # migration 16 (usage) and those after undone
    conn.close()
    assert bankfile.quick_connection(older) is None
    # Opened the usual way, which migrates it: its events' usage, each event its own response (a reparse gives the
    # responses their ids: until then a fork's copy counts again).
    with sqlite3.connect(captured) as conn:
        carried = conn.execute("SELECT count(*) FROM events WHERE tokens_in IS NOT NULL").fetchone()[0]
    assert usage(older)["totals"]["responses"] == carried > usage(captured)["totals"]["responses"]
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).executescript("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
    assert bankfile.quick_connection(other) is None
    refused = CliRunner().invoke(cli, ["--bank", str(other), "usage"])
    assert refused.exit_code != 0 and "is not a harvester bank" in refused.output
    assert bankfile.quick_connection(tmp_path / "none.sqlite") is None


def test_reasoning_an_agent_counts_apart_is_in_the_total_and_billed_as_output(tmp_path: Path) -> None:
    """Gemini's thoughts are counted apart from its answer (``candidatesTokenCount``) and billed as output; Codex's
    reasoning is part of its output already: the first adds to the total and the cost, the second does not."""
    from genai_prices import Usage, calc_price

    from tests.test_usage_dedup import _gemini_answer, _gemini_home, _gemini_lines

    tokens = {"input": 10200, "output": 15, "cached": 4000, "thoughts": 30, "tool": 0, "total": 10245}
    _gemini_home(tmp_path, [*_gemini_lines(), _gemini_answer(tokens)])
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path / "home", bank, ("gemini-cli",))
    [row] = usage(bank, "--cost", "calculate")["rows"]
    assert row["total_tokens"] == 10200 + 15 + 30 and row["reasoning_tokens"] == 30
    expected = calc_price(Usage(input_tokens=10200, cache_read_tokens=4000, output_tokens=45), "gemini-2.5-pro",
                          genai_request_timestamp=datetime(2026, 11, 29, 12, tzinfo=UTC)).total_price
    assert row["cost_usd"] == pytest.approx(float(expected), rel=1e-6)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kathmandu"])  # from the hourly sums; from the responses (+05:45)
def test_auto_calculates_what_the_agent_recorded_as_zero(tmp_path: Path, zone: str) -> None:
    """``auto`` takes the recorded cost where it is more than zero, and calculates the rest, response by response:
    opencode records zero for what a subscription pays, beside steps it records a price for (its hand fixture has
    both, one model), in one session and hour or across sessions of a day."""
    from harvester.bank import open_bank
    from harvester.model import Event, Usage
    from tests.test_usage_bank import _write

    def step(session: str, uid: str, cost: float, ts: str) -> Event:
        return Event(session, uid, "assistant", "meta", "step finished", ts=ts, model="claude-sonnet-4-5",
                     usage=Usage(input=1000, output=100, response=uid, cost=cost))

    bank = tmp_path / "bank.sqlite"
    with open_bank(bank) as opened:
        _write(opened, "/a.json", "a", [step("a", "p1", 0.0, "2026-11-29T10:00:00Z"),
                                        step("a", "p2", 0.5, "2026-11-29T10:30:00Z")], harness="opencode")
        _write(opened, "/b.json", "b", [step("b", "q1", 0.0, "2026-11-29T12:00:00Z")], harness="opencode")

    def totals(cost: str) -> dict[str, Any]:
        return orjson.loads(run(bank, "usage", "--json", "--timezone", zone, "--cost", cost))["totals"]

    calculated, auto, recorded = totals("calculate"), totals("auto"), totals("recorded")
    assert calculated["cost_usd"] > 0 and calculated["unpriced_responses"] == 0
    assert auto["cost_usd"] == pytest.approx(0.5 + calculated["cost_usd"] * 2 / 3)  # three equal responses
    assert auto["unpriced_responses"] == 0
    assert recorded["cost_usd"] == pytest.approx(0.5) and recorded["recorded_responses"] == 3


def test_blocks_break_down_by_harness_model_and_repo(captured: Path) -> None:
    """``--by`` breaks each five-hour block down as it does a day (the issue: every report takes it): the parts add
    up to their block, in the JSON and as the text's └ lines."""
    [block] = usage(captured, "blocks", "--by", "harness,model,repo")["blocks"]
    parts = block["breakdown"]
    assert {(p["harness"], p["model"]) for p in parts} == {("claude-code", "claude-opus-4-8"), ("codex", "fake-model")}
    assert all(p["repo"] for p in parts)
    for key in ("input_tokens", "output_tokens", "total_tokens", "responses", "unpriced_responses"):
        assert sum(p[key] for p in parts) == block[key], key
    text = run(captured, "usage", "blocks", "--timezone", "UTC", "--by", "harness,model")
    assert "└ claude-code · claude-opus-4-8" in text and "└ codex · fake-model" in text
    assert "breakdown" not in usage(captured, "blocks")["blocks"][0]


@pytest.mark.parametrize("report", [("daily", "--by", "model"), ("blocks", "--by", "model")])
def test_a_huge_model_name_does_not_widen_every_row(tmp_path: Path, report: tuple) -> None:
    """A transcript's model name of 100,000 characters, in a breakdown's name, padded every row of the table
    to its width: megabytes of spaces for a few rows. A cell is clipped, as the Models column always was."""
    from tests.helpers import ClaudeSession

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    for n, model in enumerate(("m" * 100_000, "claude-sonnet-4-5")):
        s = ClaudeSession(home, "/work/app")
        s.write(s.assistant("a", f"msg_a{n}").replace(b"claude-sonnet-4-5", model.encode()),
                s.assistant("b", f"msg_b{n}"))
    scan(home, bank)
    out = run(bank, "usage", *report)
    assert "mmmm" in out, out
    assert max(len(line) for line in out.splitlines()) < 400, max(len(line) for line in out.splitlines())
