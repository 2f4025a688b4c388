"""Expected normalized readings of the fixture trees ("golden" files).

Each fixture tree (a harness's hand-written cases, and each captured real run) is scanned into a
fresh bank; the sessions and events the bank then holds are written to
``fixtures/<harness>/expected/<tree>.json``. The tests compare a fresh reading with those files, so
any change in what a parser produces shows up as a diff to review. After a deliberate parser change:

    python -m tests.golden          # rewrite the expected files, then review `git diff fixtures`
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harvester.bank import open_bank
from tests.helpers import FIXTURES, scan

FIXED_MTIME = 1_790_000_000  # 2026-09-21T14:13:20Z: every file of a copied tree, so readings are stable
TEXT_KEPT = 160  # characters of each event's text in the expected file; content_hash covers the rest


@dataclass(frozen=True)
class Layout:
    """How a fixture tree (laid out like the agent's own root) becomes what the agent would see."""

    harness: str
    place: Callable[[Path, Path], tuple[dict[str, str], dict[str, list[Path]]]]  # (copy, home) -> (env, roots)
    folder: str = ""  # fixtures/<folder>; the LAYOUTS key when empty
    hand: str = "hand"  # the hand-written tree inside it (a family may keep one per member)

    def base(self, key: str) -> Path:
        return FIXTURES / (self.folder or key)


def _env(name: str) -> Callable[[Path, Path], tuple[dict[str, str], dict[str, list[Path]]]]:
    return lambda tree, home: ({name: str(tree)}, {})


def _gemini(tree: Path, home: Path) -> tuple[dict[str, str], dict[str, list[Path]]]:
    (home / ".gemini").symlink_to(tree, target_is_directory=True)  # GEMINI_CLI_HOME names the parent
    return {}, {}


def _database(app: str, db: str) -> Callable[[Path, Path], tuple[dict[str, str], dict[str, list[Path]]]]:
    def place(tree: Path, home: Path) -> tuple[dict[str, str], dict[str, list[Path]]]:
        # Hand-written databases are kept as SQL text (no binary in the repository): build the file.
        if (tree / f"{app}.sql").exists() and not (tree / db).exists():
            conn = sqlite3.connect(tree / db)
            conn.executescript((tree / f"{app}.sql").read_text())
            conn.commit()
            conn.close()
        (home / ".local" / "share").mkdir(parents=True)
        (home / ".local" / "share" / app).symlink_to(tree, target_is_directory=True)
        return {}, {}
    return place


def _link(relative: str) -> Callable[[Path, Path], tuple[dict[str, str], dict[str, list[Path]]]]:
    """The tree is where the agent keeps it under the home directory (``relative`` to it)."""
    def place(tree: Path, home: Path) -> tuple[dict[str, str], dict[str, list[Path]]]:
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).symlink_to(tree, target_is_directory=True)
        return {}, {}
    return place


def _built(sql: str, db: str, then: Callable[[Path, Path], tuple[dict[str, str], dict[str, list[Path]]]],
           ) -> Callable[[Path, Path], tuple[dict[str, str], dict[str, list[Path]]]]:
    """Hand-written databases are kept as SQL text: every file named ``sql`` becomes ``db`` beside it."""
    def place(tree: Path, home: Path) -> tuple[dict[str, str], dict[str, list[Path]]]:
        for text in tree.rglob(sql):
            conn = sqlite3.connect(text.with_name(db))
            conn.executescript(text.read_text())
            conn.commit()
            conn.close()
        return then(tree, home)
    return place


def _cursor_ide(tree: Path, home: Path) -> tuple[dict[str, str], dict[str, list[Path]]]:
    """The tree is Cursor's ``User`` folder's parent, named ``Cursor`` under ``$VSCODE_APPDATA``."""
    (home / "appdata").mkdir()
    (home / "appdata" / "Cursor").symlink_to(tree, target_is_directory=True)
    return {"VSCODE_APPDATA": str(home / "appdata")}, {}


def _repositories(tree: Path, home: Path) -> tuple[dict[str, str], dict[str, list[Path]]]:
    """Aider keeps its history in each repository: every folder holding one is a configured root."""
    return {}, {"aider": sorted(p.parent for p in tree.rglob(".aider.chat.history.md"))}


LAYOUTS: dict[str, Layout] = {
    "claude_code": Layout("claude-code", _env("CLAUDE_CONFIG_DIR")),
    "openclaude": Layout("openclaude", _env("OPENCLAUDE_CONFIG_DIR")),
    "claude_cowork": Layout("claude-cowork", _link(".config/Claude/local-agent-mode-sessions")),
    "codebuff": Layout("codebuff", _link(".config/manicode")),  # no variable moves it
    "codex": Layout("codex", _env("CODEX_HOME")),
    "qoder": Layout("qoder", _link(".qoder")),  # no variable of Qoder's own moves it
    "qwen_code": Layout("qwen-code", _env("QWEN_HOME")),
    "rovo_dev": Layout("rovo-dev", _link(".rovodev/sessions")),  # no variable: config.yml's persistenceDir moves it
    "gemini_cli": Layout("gemini-cli", _gemini),
    "opencode": Layout("opencode", _database("opencode", "opencode.db")),
    "kilo": Layout("kilo", _database("kilo", "kilo.db")),
    "continue_cli": Layout("continue", _env("CONTINUE_GLOBAL_DIR")),
    "aider": Layout("aider", _repositories),
    "amazon_q": Layout("amazon-q", _built("amazon-q-data.sql", "data.sqlite3", _link(".local/share/amazon-q"))),
    "amp": Layout("amp", _link(".local/share/amp")),  # $XDG_DATA_HOME/amp: stripped in tests/machine.py
    "auggie": Layout("auggie", _link(".augment")),  # no variable moves it: only a --augment-cache-dir flag
    "copilot_cli": Layout("copilot-cli", _env("COPILOT_HOME")),
    "goose": Layout("goose", _built("sessions.sql", "sessions.db", _link(".local/share/goose/sessions"))),
    "gptme": Layout("gptme", _env("GPTME_LOGS_HOME")),
    "grok": Layout("grok", _env("GROK_HOME")),
    "hermes": Layout("hermes", _built("hermes-state.sql", "state.db", _env("HERMES_HOME"))),
    "hermes-transcripts": Layout("hermes", _env("HERMES_HOME"), "hermes", "hand-transcripts"),
    "iflow": Layout("iflow", _link(".iflow")),  # no variable of iFlow's own moves it
    "junie": Layout("junie", _env("JUNIE_HOME")),
    "kimi": Layout("kimi", _env("KIMI_SHARE_DIR")),
    "kiro": Layout("kiro", _link(".config/Kiro/User/globalStorage/kiro.kiroagent")),  # no variable moves it
    "kiro_cli": Layout("kiro-cli", _env("KIRO_HOME"), "kiro_cli", "hand/home"),
    "kiro_cli_db": Layout("kiro-cli", _built("kiro-cli-data.sql", "data.sqlite3", _link(".local/share/kiro-cli")),
                          "kiro_cli", "hand/db"),
    "kimi_code": Layout("kimi-code", _env("KIMI_CODE_HOME")),
    "kimi_work": Layout("kimi-work", _link(".config/kimi-desktop/daimon-share/daimon/runtime/kimi-code/home")),
    "mistral_vibe": Layout("mistral-vibe", _env("VIBE_HOME")),
    "antigravity": Layout("antigravity", _link(".gemini/antigravity-cli")),
    "deepseek_harness": Layout("deepseek-harness", _env("DSH_HOME")),
    "deepseek_tui": Layout("deepseek-tui", _link(".deepseek")),  # no variable moves it
    "devin": Layout("devin", _built("sessions.sql", "sessions.db", _link(".local/share/devin/cli"))),
    "dcode": Layout("dcode", _built("sessions.sql", "sessions.db", _env("DEEPAGENTS_HOME"))),
    "droid": Layout("droid", _link(".factory")),
    "droid-idless": Layout("droid", _link(".factory"), "droid", "hand-idless"),
    "forge": Layout("forge", _built("forge.sql", ".forge.db", _env("FORGE_CONFIG"))),
    "cline": Layout("cline", _built("sessions.sql", "sessions.db", _env("CLINE_DATA_DIR")), hand="hand/sdk"),
    "cline-legacy": Layout("cline-legacy", _env("CLINE_DATA_DIR"), "cline", "hand/legacy"),
    "roo-code": Layout("roo-code", _link(".config/Code/User/globalStorage/rooveterinaryinc.roo-cline"), "cline",
                       "hand/roo"),
    "kilo-code": Layout("kilo-code", _link(".config/Code/User/globalStorage/kilocode.kilo-code"), "cline",
                        "hand/kilo"),
    "crush": Layout("crush", _built("crush.sql", "crush.db", lambda tree, home: ({}, {"crush": [tree]}))),
    "opencode_go": Layout("opencode-go", _built("opencode.sql", "opencode.db",
                                                lambda tree, home: ({}, {"opencode-go": [tree]}))),
    "cursor-cli": Layout("cursor-cli", _built("store.sql", "store.db", _env("CURSOR_CONFIG_DIR")), "cursor/cli"),
    "cursor": Layout("cursor", _built("state.sql", "state.vscdb", _cursor_ide), "cursor/ide"),
    "cursor-transcripts": Layout("cursor-cli", _built("store.sql", "store.db", _env("CURSOR_CONFIG_DIR")),
                                 "cursor/transcripts"),
    "trae": Layout("trae", _built("state.sql", "state.vscdb", _link(".config/Trae"))),
    "traex": Layout("traex", _link(".trae/cli")),  # no variable of TRAE CLI's own is known
    "mimocode": Layout("mimocode", _built("mimocode.sql", "mimocode.db", _link(".local/share/mimocode"))),
    "icodemate": Layout("icodemate", _built("icodemate.sql", "icodemate.db", _link(".local/share/icodemate"))),
    "zcode": Layout("zcode", _built("db.sql", "db.sqlite", _link(".zcode/cli/db"))),  # no variable moves it
    "zcode-isotime": Layout("zcode", _built("db.sql", "db.sqlite", _link(".zcode/cli/db")), "zcode", "hand-isotime"),
    "omnigent": Layout("omnigent", _built("chat.sql", "chat.db", _env("OMNIGENT_DATA_DIR"))),
    "omnigent-agentconfig": Layout("omnigent", _built("chat.sql", "chat.db", _env("OMNIGENT_DATA_DIR")), "omnigent",
                                   "hand-agentconfig"),
    "poolside": Layout("poolside", _link(".local/state/poolside")),  # $XDG_STATE_HOME: stripped in tests/machine.py
    "visualstudio_copilot": Layout("visualstudio-copilot", _link(".cache/VSGitHubCopilotLogs/traces")),
    # Visual Studio 2026 keeps a conversation in the solution's .vs folder: the tree is a configured repository.
    "visualstudio_copilot-vs2026": Layout("visualstudio-copilot", lambda tree, home: ({}, {"visualstudio-copilot": [tree]}),
                                          "visualstudio_copilot", "hand-vs2026"),
    "vscode_copilot": Layout("vscode-copilot", _link(".config/Code/User")),
    "windsurf": Layout("windsurf", _link(".codeium/windsurf")),
    "windsurf-chat": Layout("windsurf", _built("state.sql", "state.vscdb", _link(".config/Windsurf")), "windsurf",
                            "hand-chat"),
    "pi": Layout("pi", _env("PI_CODING_AGENT_DIR"), "pi/pi"),
    "prime-agent": Layout("prime-agent", _env("PRIME_AGENT_CODING_AGENT_DIR"), "pi/prime_agent"),
    "oh-my-pi": Layout("oh-my-pi", _env("PI_CODING_AGENT_DIR"), "pi/oh_my_pi"),
    "openhands": Layout("openhands", _env("OPENHANDS_CONVERSATIONS_DIR")),
    "openhands-early": Layout("openhands", _env("OPENHANDS_CONVERSATIONS_DIR"), "openhands", "hand-early"),
    "openclaw": Layout("openclaw", _built("openclaw-agent.sql", "openclaw-agent.sqlite", _env("OPENCLAW_STATE_DIR")),
                       "pi/openclaw"),
    "warp": Layout("warp", _built("warp.sql", "warp.sqlite", _link(".local/state/warp-terminal"))),
    "warp-prompts": Layout("warp", _built("warp.sql", "warp.sqlite", _link(".local/state/warp-terminal")), "warp",
                           "hand-prompts"),
    "commandcode": Layout("commandcode", _link(".commandcode")),  # no variable moves it
    "workbuddy": Layout("workbuddy", _link(".workbuddy")),  # no variable moves it
    "cortex": Layout("cortex", _link(".snowflake/cortex/conversations")),  # no variable moves it
    "chatgpt_desktop": Layout("chatgpt-desktop", _link("Library/Application Support/com.openai.chat")),  # macOS's
    "qclaw": Layout("qclaw", _link(".qclaw")),  # no variable moves it
    "shelley": Layout("shelley", _built("shelley.sql", "shelley.db", _link(".config/shelley"))),
    "zencoder": Layout("zencoder", _link(".zencoder/sessions")),  # no variable moves it
    "positron": Layout("positron", _link(".config/Positron/User")),  # VS Code's variables move it: not used here
    "posit_assistant": Layout("posit-assistant", _link(".posit/assistant/workspaces")),  # no variable moves it
    "qwenpaw": Layout("qwenpaw", _env("QWENPAW_WORKING_DIR")),
    "reasonix": Layout("reasonix", _env("REASONIX_HOME")),
    "piebald": Layout("piebald", _built("app.sql", "app.db", _link(".local/share/piebald"))),  # no variable moves it
    "zed": Layout("zed", _built("threads.sql", "threads.db", _link(".local/share/zed/threads"))),
}


def trees() -> list[tuple[str, str, Path]]:
    """(layout key, tree name, root) for every fixture tree."""
    out = []
    for key, layout in LAYOUTS.items():
        base = layout.base(key)
        if (base / layout.hand).is_dir():
            out.append((key, layout.hand.replace("/", "-"), base / layout.hand))
        real = layout.hand.replace("hand", "real", 1)  # captured runs: real/<scenario>, or real/sdk/<scenario>
        for scenario in sorted(p for p in (base / real).glob("*") if p.is_dir()):
            out.append((key, f"{real.replace('/', '-')}-{scenario.name}", scenario))
    return out


def reading(folder: str, root: Path) -> dict[str, Any]:
    layout = LAYOUTS[folder]
    zone = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"  # Aider writes local times: the expected readings assume UTC
    time.tzset()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home, bank_path, tree = Path(tmp) / "home", Path(tmp) / "bank.sqlite", Path(tmp) / "tree"
            home.mkdir()
            shutil.copytree(root, tree, ignore=shutil.ignore_patterns("*.db-wal", "*.db-shm"))
            env, roots = layout.place(tree, home)
            for path in [tree, *tree.rglob("*")]:  # stores without times of their own fall back to mtimes
                os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
            scan(home, bank_path, (layout.harness,), env={"HOME": str(home), **env}, extra_roots=roots)
            return _normalized(_dump(bank_path, tree), tmp)
    finally:
        if zone is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = zone
        time.tzset()


def _dump(bank_path: Path, tree: Path) -> dict[str, Any]:
    bank = open_bank(bank_path)
    try:
        sessions = []
        for s in sorted(bank.list_sessions(), key=lambda s: s["native_id"]):
            events = bank.events(s["id"])
            for e in events:
                e["text"] = e["text"][:TEXT_KEPT]
                if e["tool_input"] is not None:
                    e["tool_input"] = orjson.dumps(e["tool_input"]).decode()[:TEXT_KEPT]
            sessions.append({
                **{k: s[k] for k in ("native_id", "bank_id", "cwd", "title", "title_source", "model",
                                     "agent_version", "started_at", "updated_at", "parent_native_id",
                                     "parent_kind", "state", "event_count", "redactions", "branch",
                                     "commit_sha", "origin_url", "meta")},
                "events": events,
            })
        problems = [dict(zip(("path", "line", "kind", "detail"), row, strict=True)) for row in bank.conn.execute(
            "SELECT source_path, line, kind, detail FROM problems ORDER BY source_path, line")]
        sources = sorted(c.path for c in bank.cursors())
    finally:
        bank.close()
    return {"sources": sources, "sessions": sessions, "problems": problems}


def _normalized(value: Any, tmp: str) -> Any:
    """Paths of the temporary copy become <tmp>/..., so readings compare across machines and runs."""
    real = os.path.realpath(tmp)
    if isinstance(value, str):
        return value.replace(real, "<tmp>").replace(tmp, "<tmp>")
    if isinstance(value, list):
        return [_normalized(v, tmp) for v in value]
    if isinstance(value, dict):
        return {k: _normalized(v, tmp) for k, v in value.items()}
    return value


def expected_path(key: str, name: str) -> Path:
    return LAYOUTS[key].base(key) / "expected" / f"{name}.json"


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main() -> None:
    for folder, name, root in trees():
        path = expected_path(folder, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dumps(reading(folder, root)))
        print(f"wrote {path.relative_to(FIXTURES.parent)}", file=sys.stderr)


if __name__ == "__main__":
    from harvester import log

    log.configure("error")
    main()
