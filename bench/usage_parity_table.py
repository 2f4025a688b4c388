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
from tests.test_usage_parity import (  # noqa: E402
    CLAUDE_GENERATED,
    CLAUDE_REAL,
    CODEX_GENERATED,
    CODEX_REAL,
    ccusage_daily,
    harvester_daily,
    opencode_real,
    table_rows,
)
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


def opencode_db(scenario: str):
    def made(home: Path) -> None:
        store = home / ".local" / "share" / "opencode"
        store.mkdir(parents=True)
        (store / "opencode.db").write_bytes((FIXTURES / "opencode" / "real" / scenario / "opencode.db").read_bytes())
    return made


TREES = [
    (CLAUDE_REAL, "claude-code", "claude", claude_real),
    (CLAUDE_GENERATED, "claude-code", "claude", lambda home: claude_tree(home / ".claude" / "projects", sessions=14)),
    (CODEX_REAL, "codex", "codex", codex_real),
    (CODEX_GENERATED, "codex", "codex", lambda home: codex_tree(home / ".codex" / "sessions", rollouts=12)),
    *((opencode_real(s), "opencode", "opencode", opencode_db(s)) for s in ("two_turns", "thinking", "tool_error")),
]


def main() -> None:
    print("| tree | day (UTC) | harvester tokens | ccusage tokens | harvester cost | ccusage cost |")
    print("|---|---|---|---|---|---|")
    for title, harness, agent, make in TREES:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            make(home)
            mine, theirs = harvester_daily(Path(tmp), home, harness), ccusage_daily(home, agent)
        print("\n".join(table_rows(title, mine, theirs)))


if __name__ == "__main__":
    main()
