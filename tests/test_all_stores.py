"""One machine holding every agent's store at its default place: `scan`, then `status`.

Every harness's hand-written fixture tree is copied where the agent keeps it under a fresh HOME (no
environment overrides), side by side, as on a developer's machine that has used every agent. The scan
must find each store through the harness's default roots, no harness may read another's files
(Antigravity CLI lives inside Gemini CLI's folder, Cline's SDK store inside its legacy data folder, the
VS Code extensions inside Cursor's user folder), and `status` must list every harness with sessions
imported and no drift.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from parsers import HARNESSES
from tests.golden import LAYOUTS, expected_path

ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS = ".config/Code/User/globalStorage"

# Layout key (tests/golden.py) -> where the agent keeps that store, relative to HOME, by default.
PLACES = {
    "claude_code": ".claude",
    "codex": ".codex",
    "qwen_code": ".qwen",
    "gemini_cli": ".gemini",
    "antigravity": ".gemini/antigravity-cli",
    "opencode": ".local/share/opencode",
    "kilo": ".local/share/kilo",
    "continue_cli": ".continue",
    "aider": "src",  # Aider keeps its history in each repository: configured as roots below
    "cline": ".cline/data",
    "cline-legacy": ".cline/data",
    "roo-code": f"{EXTENSIONS}/rooveterinaryinc.roo-cline",
    "kilo-code": f"{EXTENSIONS}/kilocode.kilo-code",
    "pi": ".pi/agent",
    "prime-agent": ".prime/agent",
    "oh-my-pi": ".omp/agent",
    "openclaw": ".openclaw",
    "copilot_cli": ".copilot",
    "cursor-cli": ".cursor",
    "cursor": ".config/Cursor",
    "grok": ".grok",
    "devin": ".local/share/devin/cli",
    "deepseek_harness": ".dsh",
    "dcode": ".deepagents",
}
# Hand-written databases are kept as SQL text; each becomes the file the agent writes.
DATABASES = {"opencode.sql": "opencode.db", "kilo.sql": "kilo.db", "sessions.sql": "sessions.db",
             "store.sql": "store.db", "state.sql": "state.vscdb", "openclaw-agent.sql": "openclaw-agent.sqlite"}


def _machine(home: Path) -> None:
    for key, place in PLACES.items():
        layout = LAYOUTS[key]
        shutil.copytree(layout.base(key) / layout.hand, home / place, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("README.md", "*.db-wal", "*.db-shm"))
    for text in home.rglob("*.sql"):
        if text.name in DATABASES:
            conn = sqlite3.connect(text.with_name(DATABASES[text.name]))
            conn.executescript(text.read_text())
            conn.commit()
            conn.close()


def _harvester(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "HARVESTER_"))}
    env = {k: v for k, v in env.items() if not any(k.startswith(p) for p in (
        "CLAUDE_", "CODEX_", "QWEN_", "GEMINI_", "CONTINUE_", "CLINE_", "PI_", "PRIME_", "OMP_", "OPENCLAW_",
        "COPILOT_", "CURSOR_", "VSCODE_", "GROK_", "DSH_", "DEEPAGENTS_", "OPENCODE_", "KILO_"))}
    env.update(HOME=str(tmp / "home"), HARVESTER_BANK=str(tmp / "bank.sqlite"),
               HARVESTER_CONFIG=str(tmp / "config.toml"), HARVESTER_RUNTIME_DIR=str(tmp / "run"),
               PYTHONPATH=str(ROOT), TZ="UTC")
    return subprocess.run([sys.executable, "-m", "harvester", *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp)


@pytest.fixture(scope="module")
def status(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("machine")
    home = tmp / "home"
    _machine(home)
    repositories = sorted({str(p.parent) for p in (home / "src").rglob(".aider.chat.history.md")})
    (tmp / "config.toml").write_text("[roots]\naider = " + orjson.dumps(repositories).decode() + "\n")
    scanned = _harvester(tmp, "scan", "--json")
    assert scanned.returncode == 0, scanned.stderr
    shown = _harvester(tmp, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    return orjson.loads(shown.stdout)


def _expected_sessions() -> Counter:
    """Sessions per harness as the reviewed golden readings of the same trees say."""
    counts: Counter = Counter()
    for key in PLACES:
        counts[LAYOUTS[key].harness] += len(orjson.loads(expected_path(key, LAYOUTS[key].hand.replace(
            "/", "-")).read_bytes())["sessions"])
    return counts


def test_every_harness_is_placed() -> None:
    assert {LAYOUTS[key].harness for key in PLACES} == set(HARNESSES)


def test_status_lists_every_harness_with_sessions_and_no_drift(status: dict) -> None:
    rows = {h["name"]: h for h in status["harnesses"]}
    assert set(rows) == set(HARNESSES)
    for name, row in rows.items():
        assert row["sessions"] > 0, f"{name}: nothing imported from {row['roots']}"
        assert row["unknown_types"] == 0 and row["drift"] == {}, f"{name}: drift {row['drift']}"
        assert (row["malformed"], row["oversize"], row["unreadable"]) == (0, 0, 0), f"{name}: {row}"
        assert (row["sources_failed"], row["sources_unreadable"]) == (0, 0), f"{name}: {row}"
    assert status["recent_problems"] == []


def test_no_harness_reads_another_ones_files(status: dict) -> None:
    """Nested stores (Antigravity inside ~/.gemini, Cline SDK inside ~/.cline/data, extensions inside
    Cursor's user folder) are each read by their own harness only: counts match the golden readings."""
    got = {h["name"]: h["sessions"] for h in status["harnesses"]}
    assert got == dict(_expected_sessions())
