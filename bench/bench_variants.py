"""Texts kept on the other versions' and other readers' layouts (issue 30): harvester beside agentsview.

    python bench/bench_variants.py [--no-install]

For each case of ``tests/test_format_variants.py`` (a fixture tree under ``fixtures/<agent>/variants/``, and the
texts a reader must keep from it), scans the tree with harvester and syncs it with agentsview (the PyPI package,
installed on first use into bench/out/agentsview-venv as bench/bench_backfill.py does), then counts the texts each
holds: harvester's in its events, agentsview's anywhere in its database (messages, tool calls, any text column).
agentsview is pointed at the tree by its own variables (``CODEX_SESSIONS_DIR``, ``OPENCODE_DIR``,
``QWEN_PROJECTS_DIR``, ``GEMINI_DIR``, ``TRAEX_SESSIONS_DIR``, ``HERMES_SESSIONS_DIR``) with a throwaway ``HOME``
and data dir, offline. Not a test: nothing here runs in the suite.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_backfill import agentsview_binary, base_env, ensure_agentsview  # noqa: E402
from tests.helpers import FIXTURES  # noqa: E402
from tests.test_format_variants import CASES, Case, kept, read_case  # noqa: E402

# agentsview's variable for each agent's store, and the folder of the tree it names.
AGENTSVIEW_DIRS = {"codex": ("CODEX_SESSIONS_DIR", "sessions"), "opencode": ("OPENCODE_DIR", ""),
                   "qwen-code": ("QWEN_PROJECTS_DIR", "projects"), "gemini-cli": ("GEMINI_DIR", ""),
                   "traex": ("TRAEX_SESSIONS_DIR", "sessions"), "hermes": ("HERMES_SESSIONS_DIR", "sessions")}


def _texts(db: Path) -> list[str]:
    """Every text value of every column of every table."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out: list[str] = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for column in [row[1] for row in conn.execute(f"PRAGMA table_info('{table}')")]:
                try:
                    out += [v for (v,) in conn.execute(f'SELECT "{column}" FROM "{table}"') if isinstance(v, str)]
                except sqlite3.Error:  # a virtual table's column that cannot be selected
                    continue
        return out
    finally:
        conn.close()


def agentsview_kept(case: Case, tmp: Path) -> tuple[int, str]:
    variable, folder = AGENTSVIEW_DIRS[case.harness]
    tree = FIXTURES / case.tree
    home = tmp / "agentsview-home"
    home.mkdir()
    env = base_env() | {
        "HOME": str(home), "AGENTSVIEW_DATA_DIR": str(tmp / "agentsview-data"),
        variable: str(tree / folder if folder else tree),
        "AGENTSVIEW_NO_DAEMON": "1", "AGENTSVIEW_NO_BROWSER": "1", "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        "AGENTSVIEW_TELEMETRY_ENABLED": "0", "DO_NOT_TRACK": "1",
    }
    env = {k: v for k, v in env.items() if not k.startswith(("GEMINI_", "QWEN_", "TRAE", "HERMES_")) or k == variable}
    done = subprocess.run([str(agentsview_binary()), "sync"], env=env, capture_output=True, text=True, timeout=300)
    db = tmp / "agentsview-data" / "sessions.db"
    texts = _texts(db) if db.exists() else []
    note = "" if done.returncode == 0 else f"exit {done.returncode}"
    return len([t for t in case.texts if any(t in x for x in texts)]), note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-install", action="store_true", help="do not install agentsview from PyPI")
    args = parser.parse_args()
    version, why_not = ensure_agentsview(not args.no_install)
    print(f"agentsview: {version or why_not}")
    print(f"{'case':36} {'texts':>5} {'harvester':>9} {'agentsview':>10}")
    for name, case in sorted(CASES.items()):
        with tempfile.TemporaryDirectory() as tmp:
            events, _, _ = read_case(case, Path(tmp) / "harvester")
            ours = len(kept(case, events))
            theirs, note = agentsview_kept(case, Path(tmp)) if version else (None, "")
            shown = "-" if theirs is None else str(theirs)
            print(f"{name:36} {len(case.texts):>5} {ours:>9} {shown:>10} {note}".rstrip())


if __name__ == "__main__":
    main()
