"""A whole machine's agent stores under one HOME, and the harvester CLI run against it as a user would.

Every harness's hand-written fixture tree is copied where the agent keeps it by default; the CLI runs
in a subprocess whose environment holds no agent overrides and points the bank, config and runtime
directory into the test's temp dir.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson

from tests.golden import LAYOUTS

ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS = ".config/Code/User/globalStorage"

# Layout key (tests/golden.py) -> where the agent keeps that store, relative to HOME, by default.
PLACES = {
    "claude_code": ".claude",
    "claude_cowork": ".config/Claude/local-agent-mode-sessions",
    "codebuff": ".config/manicode",
    "codex": ".codex",
    "qoder": ".qoder",
    "qwen_code": ".qwen",
    "rovo_dev": ".rovodev/sessions",
    "gemini_cli": ".gemini",
    "antigravity": ".gemini/antigravity-cli",
    "opencode": ".local/share/opencode",
    "kilo": ".local/share/kilo",
    "continue_cli": ".continue",
    "aider": "src",  # Aider keeps its history in each repository: configured as roots below
    "amazon_q": ".local/share/amazon-q",
    "amp": ".local/share/amp",
    "auggie": ".augment",
    "cline": ".cline/data",
    "cline-legacy": ".cline/data",
    "roo-code": f"{EXTENSIONS}/rooveterinaryinc.roo-cline",
    "kilo-code": f"{EXTENSIONS}/kilocode.kilo-code",
    "pi": ".pi/agent",
    "prime-agent": ".prime/agent",
    "oh-my-pi": ".omp/agent",
    "openclaw": ".openclaw",
    "openhands": ".openhands/conversations",
    "openhands-early": ".openhands/conversations",  # the early SDK's conversation beside the current ones
    "copilot_cli": ".copilot",
    "crush": "src/crush-demo",  # Crush keeps its database in each project: configured as a root below
    "opencode_go": "src/opencode-go-demo",  # likewise the Go opencode
    "cursor-cli": ".cursor",
    "cursor": ".config/Cursor",
    "cursor-transcripts": ".cursor",
    "trae": ".config/Trae",
    "traex": ".trae/cli",
    "vscode_copilot": ".config/Code/User",
    "windsurf": ".codeium/windsurf",
    "goose": ".local/share/goose/sessions",
    "gptme": ".local/share/gptme/logs",
    "grok": ".grok",
    "hermes": ".hermes",
    "hermes-transcripts": ".hermes/profiles/legacy",  # a profile of a build before state.db
    "iflow": ".iflow",
    "junie": ".junie",
    "kimi": ".kimi",
    "kiro": ".config/Kiro/User/globalStorage/kiro.kiroagent",
    "kiro_cli": ".kiro",
    "kiro_cli_db": ".local/share/kiro-cli",
    "kimi_code": ".kimi-code",
    "mistral_vibe": ".vibe",
    "devin": ".local/share/devin/cli",
    "deepseek_harness": ".dsh",
    "deepseek_tui": ".deepseek",
    "dcode": ".deepagents",
    "droid": ".factory",
    "forge": ".forge",
    "warp": ".local/state/warp-terminal",
    "windsurf-chat": ".config/Windsurf",
    "openclaude": ".openclaude",
    "kimi_work": ".config/kimi-desktop/daimon-share/daimon/runtime/kimi-code/home",
    "workbuddy": ".workbuddy",
    "visualstudio_copilot": ".cache/VSGitHubCopilotLogs/traces",
    "omnigent": ".omnigent",
    "mimocode": ".local/share/mimocode",
    "icodemate": ".local/share/icodemate",
    "poolside": ".local/state/poolside",
    "commandcode": ".commandcode",
    "zencoder": ".zencoder/sessions",
    "cortex": ".snowflake/cortex/conversations",
    "chatgpt_desktop": "Library/Application Support/com.openai.chat",
    "qclaw": ".qclaw",
    "shelley": ".config/shelley",
    "piebald": ".local/share/piebald",
    "reasonix": ".reasonix",
    "qwenpaw": ".qwenpaw",
    "posit_assistant": ".posit/assistant/workspaces",
    "positron": ".config/Positron/User",
    "zed": ".local/share/zed/threads",
    "zcode": ".zcode/cli/db",
}
# Hand-written databases are kept as SQL text; each becomes the file the agent writes.
DATABASES = {"opencode.sql": "opencode.db", "kilo.sql": "kilo.db", "sessions.sql": "sessions.db",
             "store.sql": "store.db", "state.sql": "state.vscdb", "crush.sql": "crush.db",
             "hermes-state.sql": "state.db", "openclaw-agent.sql": "openclaw-agent.sqlite",
             "threads.sql": "threads.db", "warp.sql": "warp.sqlite", "kiro-cli-data.sql": "data.sqlite3",
             "db.sql": "db.sqlite", "amazon-q-data.sql": "data.sqlite3", "forge.sql": ".forge.db",
             "shelley.sql": "shelley.db", "app.sql": "app.db", "chat.sql": "chat.db", "mimocode.sql": "mimocode.db",
             "icodemate.sql": "icodemate.db"}


def lay_out_every_store(home: Path, only: tuple[str, ...] = ()) -> None:
    """Every hand-written store (``only``: these layouts' stores) at its agent's default place under ``home``."""
    for key, place in PLACES.items():
        if only and key not in only:
            continue
        layout = LAYOUTS[key]
        shutil.copytree(layout.base(key) / layout.hand, home / place, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("README.md", "*.db-wal", "*.db-shm"))
    for text in home.rglob("*.sql"):
        if text.name in DATABASES:
            conn = sqlite3.connect(text.with_name(DATABASES[text.name]))
            conn.executescript(text.read_text())
            conn.commit()
            conn.close()


def roots_in_repositories(home: Path) -> dict[str, list[str]]:
    """The configured roots of the agents that keep their history in each repository (Aider, Crush, the Go
    opencode), as laid out by :func:`lay_out_every_store`: a user names them in ``[roots]``."""
    src = home / "src"
    return {"aider": sorted({str(p.parent) for p in src.rglob(".aider.chat.history.md")}),
            "crush": sorted({str(p.parent.parent) for p in src.rglob(".crush/crush.db")}),
            "opencode-go": sorted({str(p.parent.parent) for p in src.rglob(".opencode/opencode.db")})}


def roots_config(home: Path) -> str:
    """:func:`roots_in_repositories` as a config.toml ``[roots]`` table."""
    return "[roots]\n" + "".join(f'"{name}" = {orjson.dumps(paths).decode()}\n'
                                   for name, paths in roots_in_repositories(home).items())


def harvester_env(tmp: Path) -> dict[str, str]:
    """This process's environment without any agent's or harvester's overrides, HOME at ``tmp/home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "HARVESTER_"))}
    env = {k: v for k, v in env.items() if not any(k.startswith(p) for p in (
        "CLAUDE_", "CODEX_", "QWEN_", "GEMINI_", "CONTINUE_", "CLINE_", "PI_", "PRIME_", "OMP_", "OPENCLAW_",
        "COPILOT_", "CURSOR_", "AUGMENT_", "VSCODE_", "FLATPAK_", "GOOSE_", "GROK_", "DSH_", "DEEPAGENTS_",
        "OPENCODE_", "KILO_", "KIRO_", "FACTORY_", "HERMES_", "JUNIE_", "KIMI_", "OPENHANDS_", "CRUSH_",
        "VIBE_", "REASONIX_", "QWENPAW_", "OMNIGENT_"))}
    env.update(HOME=str(tmp / "home"), HARVESTER_BANK=str(tmp / "bank.sqlite"), HARVESTER_RUNTIME_DIR=str(tmp / "run"),
               PYTHONPATH=str(ROOT), TZ="UTC")
    if (tmp / "config.toml").exists():
        env["HARVESTER_CONFIG"] = str(tmp / "config.toml")
    return env


def harvester_cli(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``harvester ARGS`` in a subprocess against the machine under ``tmp`` (see :func:`harvester_env`)."""
    return subprocess.run([sys.executable, "-m", "harvester", *args], env=harvester_env(tmp), capture_output=True,
                          text=True, timeout=timeout, cwd=tmp)




def real_capture_bank(tmp: Path, repo: Path | None = None) -> Path:
    """A bank holding every captured real run (``fixtures/*/real/``), each scanned from its own HOME as its
    agent would find it; the runs were made in a repository named demo-repo, so they file under
    ``coding-agent::demo-repo``. Returns the bank's path.

    The folders they were recorded in are not on this machine, so their repository is unknown. With ``repo`` (a
    git repository), they are that repository's, as harvester knows a clone that is gone: it learned each folder
    while it existed (the directories a probe remembers), here told so before the scan."""
    from tests.golden import trees
    from tests.helpers import scan

    bank = tmp / "capture-bank.sqlite"
    runs = []
    for n, (key, name, root) in enumerate(trees()):
        if "real" not in name:
            continue
        layout = LAYOUTS[key]
        home, tree = tmp / f"home-{n}", tmp / f"tree-{n}"
        home.mkdir(parents=True)
        shutil.copytree(root, tree, ignore=shutil.ignore_patterns("*.db-wal", "*.db-shm"))
        env, roots = layout.place(tree, home)
        runs.append((home, layout.harness, {"HOME": str(home), **env}, roots))
    if repo is not None:
        _learn_capture_folders(tmp, bank, repo, runs)
    for home, harness, env, roots in runs:
        scan(home, bank, (harness,), env=env, extra_roots=roots)
    return bank


def _learn_capture_folders(tmp: Path, bank: Path, repo: Path, runs: list[tuple]) -> None:
    """Every folder the captures name as their cwd in demo-repo (found by a first scan, into a bank thrown away),
    learned as a clone of ``repo``."""
    from harvester.bank import open_bank
    from harvester.gitident import GitResolver
    from tests.helpers import scan

    scratch = tmp / "capture-folders.sqlite"
    for home, harness, env, roots in runs:
        scan(home, scratch, (harness,), env=env, extra_roots=roots)
    with open_bank(scratch, archive=False) as found:
        folders = [cwd for (cwd,) in found.conn.execute(  # type: ignore[attr-defined]
            "SELECT DISTINCT cwd FROM sessions WHERE bank_id = 'coding-agent::demo-repo' AND cwd IS NOT NULL")]
    identity = GitResolver().resolve(str(repo))
    assert identity.key is not None and identity.project == "demo-repo", identity
    with open_bank(bank, archive=False) as learning:
        for folder in folders:
            learning.remember_identity(folder, identity)
