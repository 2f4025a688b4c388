"""The parity table of docs/usage.md: `harvester usage daily` beside the real ccusage 20.0.24 (offline), per day,
on the trees tests/test_usage_parity.py checks (the same scans, the same ccusage runs), as markdown rows.

    python bench/usage_parity_table.py

Tokens are input / output / cache read / cache write; costs are harvester's (genai-prices) and ccusage's (its
LiteLLM snapshot), "-" where one of them has no price for a model of the day.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import FIXTURES, copy_tree  # noqa: E402
from tests.test_usage_parity import ccusage_daily, harvester_daily  # noqa: E402
from tests.usage_trees import claude_tree, codex_tree  # noqa: E402


def claude_real(home: Path) -> None:
    for scenario in sorted((FIXTURES / "claude_code" / "real").iterdir()):
        if (scenario / "projects").is_dir():
            copy_tree(scenario / "projects", home / ".claude" / "projects")


def codex_real(home: Path) -> None:
    for scenario in sorted((FIXTURES / "codex" / "real").iterdir()):
        for store in ("sessions", "archived_sessions"):
            if (scenario / store).is_dir():
                copy_tree(scenario / store, home / ".codex" / store)


def opencode_real(scenario: str):
    def made(home: Path) -> None:
        store = home / ".local" / "share" / "opencode"
        store.mkdir(parents=True)
        (store / "opencode.db").write_bytes((FIXTURES / "opencode" / "real" / scenario / "opencode.db").read_bytes())
    return made


TREES = [
    ("Claude Code, real captures", "claude-code", "claude", claude_real),
    ("Claude Code, generated (14 sessions)", "claude-code", "claude",
     lambda home: claude_tree(home / ".claude" / "projects", sessions=14)),
    ("Codex, real captures", "codex", "codex", codex_real),
    ("Codex, generated (12 rollouts)", "codex", "codex", lambda home: codex_tree(home / ".codex" / "sessions",
                                                                                  rollouts=12)),
    *((f"opencode, real `{s}`", "opencode", "opencode", opencode_real(s)) for s in ("two_turns", "thinking",
                                                                                     "tool_error")),
]


def tokens(row: dict, names: tuple[str, ...]) -> str:
    return " / ".join(f"{row.get(n, 0):,}" for n in names)


def main() -> None:
    print("| tree | day (UTC) | harvester tokens | ccusage tokens | harvester cost | ccusage cost |")
    print("|---|---|---|---|---|---|")
    for title, harness, agent, make in TREES:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            make(home)
            mine, theirs = harvester_daily(Path(tmp), home, harness), ccusage_daily(home, agent)
        for day in sorted(set(mine) | set(theirs)):
            m, t = mine.get(day, {}), theirs.get(day, {})
            ours = tokens(m, ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
            their = tokens(t, ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"))
            cost = m.get("cost_usd")
            their_cost = t.get("totalCost", t.get("costUSD"))
            unpriced = any(isinstance(v, dict) and v.get("missingPricing") for v in (t.get("models") or {}).values())
            print(f"| {title} | {day} | {ours} | {their} | {'-' if cost is None else f'${cost:.4f}'} | "
                  f"{'-' if their_cost is None or unpriced else f'${their_cost:.4f}'} |")


if __name__ == "__main__":
    main()
