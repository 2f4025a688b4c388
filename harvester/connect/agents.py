"""Where each agent keeps its user-level MCP servers, in which format, and the entry it expects.

One plain :class:`Agent` per agent in :data:`AGENTS`. Every fact here was read in the agent's own code
or produced by its own ``mcp add`` command; ``fixtures/connect/SOURCE.md`` says where, per agent and
version. The entry shapes are exactly what the agent's own ``mcp add`` writes (its ground truth), plus
the per-server setting that lets a headless run call our tools without a prompt where one exists
(every tool of ``harvester mcp`` only reads the bank).

Paths are functions of (environment, HOME) so that tests, and users with ``CODEX_HOME`` and the like,
get the file the agent itself would read. Nothing here reads or writes a file but :func:`first_existing`,
which looks for existence only.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

SERVER_NAME = "harvester"  # the key our entry is filed under in every agent

Format = Literal["json", "json-comments", "jsonc", "toml", "continue-yaml"]
Env = Mapping[str, str]
PathOf = Callable[[Env, Path], Path]


@dataclass(frozen=True, slots=True)
class Approval:
    """One string we add to a list in another file, so the agent runs our tools without asking."""

    file: PathOf
    format: Format
    key: tuple[str, ...]  # the list, from the document's root
    item: str


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # also the harness name given to ``harvester mcp --harness`` (see harvester/parsers/__init__.py)
    label: str
    file: PathOf  # the user-level file holding its MCP servers
    format: Format
    servers_key: tuple[str, ...]  # where the servers live in that file (Continue: the list)
    entry: Callable[[list[str]], dict[str, Any]]  # our server's argv → the entry, in the agent's shape
    homes: Callable[[Env, Path], tuple[Path, ...]]  # directories whose existence means it is installed
    executables: tuple[str, ...]  # … or one of these on PATH
    approval: Approval | None = None

    def installed(self, env: Env, home: Path) -> bool:
        search = env.get("PATH", "")
        return any(p.exists() for p in self.homes(env, home)) or any(
            shutil.which(name, path=search) for name in self.executables)


def _env_path(env: Env, name: str) -> Path | None:
    """An override variable's directory; empty or blank counts as unset (each agent tests truthiness)."""
    value = (env.get(name) or "").strip()
    return Path(value) if value else None


def first_existing(directory: Path, names: tuple[str, ...], fallback: str) -> Path:
    """The first of ``names`` that exists in ``directory`` (the agent's own order), else ``fallback``."""
    return next((directory / n for n in names if (directory / n).exists()), directory / fallback)


def xdg_config(env: Env, home: Path) -> Path:
    return _env_path(env, "XDG_CONFIG_HOME") or home / ".config"


def xdg_data(env: Env, home: Path) -> Path:
    return _env_path(env, "XDG_DATA_HOME") or home / ".local" / "share"


# --------------------------------------------------------------------------------------- the files


def claude_dir(env: Env, home: Path) -> Path:
    return _env_path(env, "CLAUDE_CONFIG_DIR") or home / ".claude"


def claude_json(env: Env, home: Path) -> Path:
    """``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json`` (beside ``~/.claude/``, not in it)."""
    config_dir = _env_path(env, "CLAUDE_CONFIG_DIR")
    return (config_dir or home) / ".claude.json"


def claude_settings(env: Env, home: Path) -> Path:
    return claude_dir(env, home) / "settings.json"


def codex_home(env: Env, home: Path) -> Path:
    return _env_path(env, "CODEX_HOME") or home / ".codex"


def gemini_dir(env: Env, home: Path) -> Path:
    return (_env_path(env, "GEMINI_CLI_HOME") or home) / ".gemini"


def qwen_dir(env: Env, home: Path) -> Path:
    """``$QWEN_HOME`` (``~`` expanded against HOME, as Qwen's ``Storage.resolvePath`` does), else ``~/.qwen``."""
    value = (env.get("QWEN_HOME") or "").strip()
    if not value:
        return home / ".qwen"
    if value == "~" or value.startswith(("~/", "~\\")):
        return home.joinpath(*[p for p in value[2:].replace("\\", "/").split("/") if p])
    return Path(value).absolute()


def opencode_config(env: Env, home: Path) -> Path:
    # `opencode mcp add` (1.18.33): the first of these that exists, else opencode.json.
    return first_existing(xdg_config(env, home) / "opencode", ("opencode.json", "opencode.jsonc"), "opencode.json")


def kilo_config(env: Env, home: Path) -> Path:
    # `kilo mcp add` (7.7.7): its own names first, then opencode's; else kilo.json.
    names = ("kilo.jsonc", "kilo.json", "opencode.jsonc", "opencode.json")
    return first_existing(xdg_config(env, home) / "kilo", names, "kilo.json")


def copilot_home(env: Env, home: Path) -> Path:
    return _env_path(env, "COPILOT_HOME") or home / ".copilot"


def cline_dir(env: Env, home: Path) -> Path:
    return _env_path(env, "CLINE_DIR") or home / ".cline"


def cline_mcp_settings(env: Env, home: Path) -> Path:
    """``$CLINE_MCP_SETTINGS_PATH``, else ``<data>/settings/cline_mcp_settings.json`` where data is
    ``$CLINE_DATA_DIR``, else ``$CLINE_DIR/data``, else ``~/.cline/data`` (@cline/shared's resolvers)."""
    if explicit := _env_path(env, "CLINE_MCP_SETTINGS_PATH"):
        return explicit
    data = _env_path(env, "CLINE_DATA_DIR") or cline_dir(env, home) / "data"
    return data / "settings" / "cline_mcp_settings.json"


def continue_dir(env: Env, home: Path) -> Path:
    return _env_path(env, "CONTINUE_GLOBAL_DIR") or home / ".continue"


# ------------------------------------------------------------------------------------- the entries


def _stdio(argv: list[str]) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:]}


def argv_of(entry: Any) -> list[str] | None:
    """The command line of an entry in any of the shapes below (``command`` + ``args``, a ``command``
    list, or Cline's ``transport``); None when it has none. The inverse of ``Agent.entry`` for the
    command only: whether the rest is ours too is for the caller to compare."""
    if not isinstance(entry, dict):
        return None
    body = entry["transport"] if isinstance(entry.get("transport"), dict) else entry
    command, args = body.get("command"), body.get("args", [])
    argv = command if isinstance(command, list) else [command, *args] if isinstance(args, list) else None
    return argv if argv and all(isinstance(a, str) for a in argv) else None


AGENTS: dict[str, Agent] = {
    a.name: a
    for a in (
        Agent("claude-code", "Claude Code", claude_json, "json", ("mcpServers",),
              lambda argv: {"type": "stdio", **_stdio(argv), "env": {}},
              lambda env, home: (claude_json(env, home), claude_dir(env, home)), ("claude",),
              # "mcp__<server>" allows every tool of that server (Claude Code's permission rules).
              Approval(claude_settings, "json", ("permissions", "allow"), f"mcp__{SERVER_NAME}")),
        Agent("codex", "Codex CLI", lambda env, home: codex_home(env, home) / "config.toml", "toml",
              ("mcp_servers",),
              # "approve": its tools run without asking, also under `codex exec` (which cannot ask).
              lambda argv: {**_stdio(argv), "default_tools_approval_mode": "approve"},
              lambda env, home: (codex_home(env, home),), ("codex",)),
        Agent("gemini-cli", "Gemini CLI", lambda env, home: gemini_dir(env, home) / "settings.json",
              "json-comments", ("mcpServers",),
              lambda argv: {**_stdio(argv), "trust": True},  # `gemini mcp add --trust`: no confirmations
              lambda env, home: (gemini_dir(env, home),), ("gemini",)),
        Agent("qwen-code", "Qwen Code", lambda env, home: qwen_dir(env, home) / "settings.json",
              "json-comments", ("mcpServers",),
              lambda argv: {**_stdio(argv), "trust": True},  # `qwen mcp add --trust`
              lambda env, home: (qwen_dir(env, home),), ("qwen",)),
        Agent("opencode", "opencode", opencode_config, "jsonc", ("mcp",),
              lambda argv: {"type": "local", "command": argv},
              lambda env, home: (xdg_config(env, home) / "opencode", xdg_data(env, home) / "opencode"),
              ("opencode",)),
        Agent("kilo", "Kilo CLI", kilo_config, "jsonc", ("mcp",),
              lambda argv: {"type": "local", "command": argv},
              lambda env, home: (xdg_config(env, home) / "kilo", xdg_data(env, home) / "kilo"), ("kilo",)),
        Agent("copilot-cli", "Copilot CLI", lambda env, home: copilot_home(env, home) / "mcp-config.json",
              "jsonc", ("mcpServers",),
              lambda argv: {"tools": ["*"], "type": "local", **_stdio(argv)},
              lambda env, home: (copilot_home(env, home),), ("copilot",)),
        Agent("cline", "Cline CLI", cline_mcp_settings, "json", ("mcpServers",),
              lambda argv: {"transport": {"type": "stdio", **_stdio(argv)}},
              lambda env, home: (cline_dir(env, home),), ("cline",)),
        Agent("continue", "Continue (cn)", lambda env, home: continue_dir(env, home) / "config.yaml",
              "continue-yaml", ("mcpServers",),
              lambda argv: {"name": SERVER_NAME, "type": "stdio", **_stdio(argv)},
              lambda env, home: (continue_dir(env, home),), ("cn",)),
        Agent("cursor", "Cursor", lambda env, home: home / ".cursor" / "mcp.json", "json", ("mcpServers",),
              _stdio, lambda env, home: (home / ".cursor",), ("cursor-agent", "cursor")),
    )
}
