"""`harvester usage` against the reference: the real ccusage (tests/usage_oracle.py), offline, on the same trees.

Per day (UTC): input, output, cache read and cache write token totals equal ccusage's exactly; cost within 1 %
where both price every model of the day (harvester prices from genai-prices, ccusage from its LiteLLM snapshot).
Trees: the real captures (fixtures/*/real/, written by the agents themselves) and generated ones shaped like real
histories (tests/usage_trees.py: several projects and models, subagents, forks, old resumes and side questions
replaying their parent's responses, streamed lines with placeholder counts, cache-heavy turns; Codex rollouts of
every era, with repeated running totals and legacy forks).

Where the two count differently on purpose, the test says so and checks the difference exactly, from the files:
see test_codex_real_captures_match_ccusage_per_day.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import gen_bank
from tests import usage_oracle
from tests.helpers import FIXTURES, copy_tree
from tests.usage_trees import claude_tree, codex_tree

DOCS = Path(__file__).resolve().parent.parent / "docs" / "usage.md"
# The trees' titles in docs/usage.md's parity table.
CLAUDE_REAL, CLAUDE_GENERATED = "Claude Code, real captures", "Claude Code, generated (14 sessions)"
CODEX_REAL, CODEX_GENERATED = "Codex, real captures", "Codex, generated (12 rollouts)"


def opencode_real(scenario: str) -> str:
    return f"opencode, real `{scenario}`"


TOKENS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
          ("cache_read_tokens", "cacheReadTokens"), ("cache_write_tokens", "cacheCreationTokens"))


def harvester_daily(tmp: Path, home: Path, harness: str) -> dict[str, dict[str, Any]]:
    """Scan ``home`` into a fresh bank, then ``harvester usage daily --json`` of one agent, by day."""
    bank = tmp / "bank.sqlite"
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex"), "XDG_CACHE_HOME": str(tmp / "cache"),
           "XDG_CONFIG_HOME": str(tmp / "config"), "HARVESTER_BANK": str(bank)}
    for name in ("CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "OPENCODE_DB", "OPENCODE_DATA_DIR"):
        env.pop(name, None)
    for argv in (["scan"], ["usage", "daily", "--json", "--timezone", "UTC", "--harness", harness,
                            "--cost", "calculate"]):
        done = subprocess.run([sys.executable, "-m", "harvester", *argv], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    return {row["date"]: row for row in json.loads(done.stdout)["rows"]}


def ccusage_daily(home: Path, agent: str) -> dict[str, dict[str, Any]]:
    data = usage_oracle.run([agent, "daily"], home, env={"CODEX_HOME": str(home / ".codex")})
    return {row["date"]: row for row in data["daily"]}


def table_rows(title: str, mine: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> list[str]:
    """docs/usage.md's parity table rows of one tree (bench/usage_parity_table.py prints them)."""
    rows = []
    for day in sorted(set(mine) | set(theirs)):
        m, t = mine.get(day, {}), theirs.get(day, {})
        ours = " / ".join(f"{m.get(n, 0):,}" for n, _ in TOKENS)
        their = " / ".join(f"{t.get(n, 0):,}" for _, n in TOKENS)
        cost, their_cost = m.get("cost_usd"), t.get("totalCost", t.get("costUSD"))
        unpriced = any(isinstance(v, dict) and v.get("missingPricing") for v in (t.get("models") or {}).values())
        rows.append(f"| {title} | {day} | {ours} | {their}{'' if their == ours else ' (see below)'} | "
                    f"{'-' if cost is None else f'${cost:.4f}'} | "
                    f"{'-' if their_cost is None or unpriced else f'${their_cost:.4f}'} |")
    return rows


def assert_documented(title: str, mine: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> None:
    """docs/usage.md shows this tree's rows as the table script prints them (its days, tokens and costs)."""
    documented = [line for line in DOCS.read_text().splitlines() if line.startswith(f"| {title} |")]
    assert documented == table_rows(title, mine, theirs), "run python bench/usage_parity_table.py into docs/usage.md"


def _both_price(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Whether both priced every response of the day (ccusage names the models it has no price for)."""
    unpriced = [m for m, v in (theirs.get("models") or {}).items() if isinstance(v, dict) and v.get("missingPricing")]
    return not unpriced and not mine["unpriced_responses"] and mine["cost_usd"] is not None


def compare(mine: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]],
            expected_difference: dict[str, dict[str, int]] | None = None) -> list[str]:
    """The per-day table (harvester beside ccusage) as lines; asserts tokens equal, cost within 1 %."""
    assert sorted(mine) == sorted(theirs)
    lines, priced = [], 0
    for day in sorted(theirs):
        m, t = mine[day], theirs[day]
        extra = (expected_difference or {}).get(day, {})
        for ours, their in TOKENS:
            assert m[ours] == t.get(their, 0) + extra.get(ours, 0), (day, ours, m[ours], t.get(their, 0))
        their_cost = t.get("totalCost", t.get("costUSD"))
        note = "cost: a model unpriced by one of them"
        if _both_price(m, t):
            priced += 1
            assert m["cost_usd"] == pytest.approx(their_cost, rel=0.01, abs=1e-9), (day, m["cost_usd"], their_cost)
            note = f"cost ${m['cost_usd']:.4f} vs ${their_cost:.4f}"
        lines.append(f"{day}: {m['input_tokens']}/{m['output_tokens']}/{m['cache_read_tokens']}/"
                     f"{m['cache_write_tokens']} tokens equal; {note}")
    return lines


def test_ccusage_prices_offline_without_reaching_the_network(tmp_path: Path) -> None:
    """``--offline`` prices from the snapshot inside the binary: asked to log, it says nothing of LiteLLM; without
    the flag it does try to fetch (and says so, here where there is no network), so the check can fail."""
    home = copy_tree(FIXTURES / "claude_code" / "real" / "two_turns", tmp_path / "home" / ".claude").parent
    binary = str(usage_oracle.installed())
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LOG_LEVEL": "4", "HTTPS_PROXY": usage_oracle.DEAD_PROXY}
    offline = subprocess.run([binary, "claude", "daily", "--json", "--offline"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert offline.returncode == 0 and "LiteLLM" not in offline.stderr, offline.stderr
    online = subprocess.run([*usage_oracle._isolated(), binary, "claude", "daily", "--json"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert "Failed to fetch LiteLLM pricing" in online.stderr, online.stderr


def test_claude_code_real_captures_match_ccusage_per_day(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for scenario in sorted((FIXTURES / "claude_code" / "real").iterdir()):
        if (scenario / "projects").is_dir():
            copy_tree(scenario / "projects", home / ".claude" / "projects")
    mine, theirs = harvester_daily(tmp_path, home, "claude-code"), ccusage_daily(home, "claude")
    assert compare(mine, theirs)
    assert_documented(CLAUDE_REAL, mine, theirs)


def test_claude_code_generated_tree_matches_ccusage_per_day(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude_tree(home / ".claude" / "projects", sessions=14)
    mine, theirs = harvester_daily(tmp_path, home, "claude-code"), ccusage_daily(home, "claude")
    lines = compare(mine, theirs)
    assert len(lines) >= 10  # days
    assert sum("cost $" in line for line in lines) >= 10  # priced by both
    assert sum(row["cache_write_tokens"] for row in mine.values()) > 0
    assert_documented(CLAUDE_GENERATED, mine, theirs)


def test_codex_real_captures_match_ccusage_per_day(tmp_path: Path) -> None:
    """One difference, by design: ccusage 20.0.24 drops a subagent's token counts (a rollout naming
    ``thread_spawn``) when its first two fall in one second, taking them for a replay of the parent's history
    (its codex/parser.rs). The captures' subagent answered twice within a second (the scripted fake model), with
    responses of its own (their own response ids): harvester counts them; so it reports exactly their tokens more."""
    home = tmp_path / "home"
    for scenario in sorted((FIXTURES / "codex" / "real").iterdir()):
        for store in ("sessions", "archived_sessions"):
            if (scenario / store).is_dir():
                copy_tree(scenario / store, home / ".codex" / store)
    difference: dict[str, dict[str, int]] = {}
    for path in sorted(home.rglob("rollout-*.jsonl")):
        counts = _fast_subagent_counts(path)
        for day, values in counts.items():
            for key, value in values.items():
                difference.setdefault(day, {}).setdefault(key, 0)
                difference[day][key] += value
    assert difference, "the captures hold the fast subagent this test documents"
    mine, theirs = harvester_daily(tmp_path, home, "codex"), ccusage_daily(home, "codex")
    compare(mine, theirs, difference)
    assert_documented(CODEX_REAL, mine, theirs)


def _fast_subagent_counts(path: Path) -> dict[str, dict[str, int]]:
    """The token counts ccusage's replay heuristic leaves out of a subagent rollout: those in the second of its
    first token count, when its second one falls in the same second."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if "thread_spawn" not in path.read_text()[:16384]:
        return {}
    counts = [r for r in records if r.get("type") == "event_msg" and (r.get("payload") or {}).get("type")
              == "token_count" and (r["payload"].get("info") or {}).get("last_token_usage")]
    if len(counts) < 2 or counts[0]["timestamp"][:19] != counts[1]["timestamp"][:19]:
        return {}
    out: dict[str, dict[str, int]] = {}
    for r in counts:
        if r["timestamp"][:19] != counts[0]["timestamp"][:19]:
            break
        last = r["payload"]["info"]["last_token_usage"]
        cached = min(last["cached_input_tokens"], last["input_tokens"])
        day = out.setdefault(r["timestamp"][:10], {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0})
        day["input_tokens"] += last["input_tokens"] - cached
        day["cache_read_tokens"] += cached
        day["output_tokens"] += last["output_tokens"]
    return out


def test_generated_trees_do_not_change_with_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated trees (and so the days of docs/usage.md's parity table) are the same on every checkout: the
    generators' default vocabulary is the repository's own words, and text lengths in words decide how much of the
    seeded stream a session draws, so any commit touching a doc moved every later session to other days."""
    def tree(root: Path) -> dict[Path, bytes]:
        claude_tree(root / "claude", sessions=4)
        codex_tree(root / "codex", rollouts=4)
        return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    here = tree(tmp_path / "here")
    words, weights = gen_bank.vocabulary()
    order = sorted(range(len(words)), key=lambda i: words[i][::-1])  # another checkout: the same words, other counts
    monkeypatch.setattr(gen_bank, "vocabulary", lambda: ([words[i] for i in order], [weights[i] for i in order]))
    assert tree(tmp_path / "there") == here


def test_codex_generated_tree_matches_ccusage_per_day(tmp_path: Path) -> None:
    home = tmp_path / "home"
    codex_tree(home / ".codex" / "sessions", rollouts=12)
    mine, theirs = harvester_daily(tmp_path, home, "codex"), ccusage_daily(home, "codex")
    lines = compare(mine, theirs)
    assert len(lines) >= 8
    assert sum("cost $" in line for line in lines) >= 4
    assert_documented(CODEX_GENERATED, mine, theirs)


@pytest.mark.parametrize("scenario", ["two_turns", "thinking", "tool_error"])
def test_opencode_real_captures_match_ccusage_per_day(tmp_path: Path, scenario: str) -> None:
    """opencode keeps one database (each capture its own): ccusage reads its assistant messages' token totals,
    harvester each step's (a message's steps add up to it). Reasoning is apart from opencode's output: both leave
    it out of these four counts (harvester adds it to the total)."""
    home = tmp_path / "home"
    store = home / ".local" / "share" / "opencode"
    store.mkdir(parents=True)
    (store / "opencode.db").write_bytes((FIXTURES / "opencode" / "real" / scenario / "opencode.db").read_bytes())
    mine, theirs = harvester_daily(tmp_path, home, "opencode"), ccusage_daily(home, "opencode")
    compare(mine, theirs)
    assert_documented(opencode_real(scenario), mine, theirs)
