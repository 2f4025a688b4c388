"""``connect`` / ``disconnect`` / ``status`` on files that are the user's (issue 23, item 6): a FIFO, a device
or an oversized file where a config should be, and a document nested thousands deep.

Every test here reproduces a way the user's file was lost, changed or hung on; see tests/test_connect.py for
what connect writes on ordinary files.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harvester.cli import cli
from harvester.connect import files
from harvester.connect.agents import AGENTS

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["/opt/harvester/bin/harvester"]
OVERRIDES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "QWEN_HOME",
             "COPILOT_HOME", "CLINE_DIR", "CLINE_DATA_DIR", "CLINE_MCP_SETTINGS_PATH", "CONTINUE_GLOBAL_DIR")
CONTINUE_HEAD = "name: x\nversion: 1.0.0\nschema: v1\n"


def env_for(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": ""}


def config_path(agent: str, home: Path) -> Path:
    return AGENTS[agent].file(env_for(home), home)


def cli_run(home: Path, *args: str) -> Any:
    env: dict[str, str | None] = {name: None for name in OVERRIDES}
    env.update({"HOME": str(home), "PATH": "", "HARVESTER_BANK": str(home / "bank.db")})
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def backups(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if files.BACKUP_SUFFIX in p.name)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ what is not a config file


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node takes root")
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # what /dev/null is, but here


def _directory(path: Path) -> None:
    path.mkdir()


def _oversized(path: Path) -> None:
    with open(path, "wb") as handle:  # sparse: no disk used, and never read
        handle.truncate(files.MAX_CONFIG_BYTES + 1)


@pytest.mark.parametrize(("kind", "make", "said"), [("fifo", _fifo, "a FIFO"), ("device", _device, "a character device"),
                                                    ("directory", _directory, "a directory"),
                                                    ("oversized", _oversized, "larger than")])
def test_a_fifo_device_or_oversized_config_is_refused_unread(tmp_path: Path, kind: str,
                                                             make: Callable[[Path], None], said: str) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    path = home / ".cursor" / "mcp.json"
    make(path)
    kind_before = stat.S_IFMT(path.stat().st_mode)
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
    env.update({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    for command in ("connect", "disconnect"):
        result = subprocess.run([sys.executable, "-m", "harvester", command, "cursor"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60)  # a hang on the FIFO fails here
        assert result.returncode == 1, result.stdout + result.stderr
        [line] = result.stdout.splitlines()
        assert line.startswith(f"harvester: cursor (Cursor): cannot read {path}: ") and said in line, line
        assert line.endswith("; left untouched") and not result.stderr, result
    assert stat.S_IFMT(path.stat().st_mode) == kind_before and backups(home) == []


def test_status_does_not_hang_on_a_fifo_claude_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    os.mkfifo(home / ".claude.json")
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
    env.update({"HOME": str(home), "PATH": "/usr/bin:/bin", "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")})
    result = subprocess.run([sys.executable, "-m", "harvester", "--bank", str(tmp_path / "bank.db"), "status",
                             "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert "claude-code" in data["mcp"]["not_registered"]
    said = " ".join(p for w in data["retention"] for p in w["problems"])
    assert "could not read ~/.claude.json: a FIFO" in said, data["retention"]


# ----------------------------------------------------------------------------------- deep nesting

DEEP = 5000


def deep_text(fmt: str) -> str:
    if fmt == "toml":
        return "a = " + "[" * DEEP + "]" * DEEP + "\n"
    if fmt == "continue-yaml":
        return CONTINUE_HEAD + "a: " + "[" * DEEP + "]" * DEEP + "\n"
    return '{"a": ' + "[" * DEEP + "]" * DEEP + "}\n"


@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli", "opencode", "codex", "continue"],
                         ids=lambda a: AGENTS[a].format)
@pytest.mark.parametrize("command", ["connect", "disconnect"])
def test_deep_nesting_is_a_one_line_error(tmp_path: Path, agent: str, command: str) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    path.write_text(deep_text(AGENTS[agent].format))
    before = tree(home)
    result = cli_run(home, command, agent)  # a traceback raises here (catch_exceptions=False)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "nested" in lines[0] and "left untouched" in lines[0], lines
    assert tree(home) == before


def test_status_says_a_deeply_nested_config_holds_no_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(deep_text("json"))
    (home / ".continue").mkdir()
    (home / ".continue" / "config.yaml").write_text(deep_text("continue-yaml"))
    result = CliRunner().invoke(cli, ["--bank", str(tmp_path / "bank.db"), "status", "--json"],
                                env={**env_for(home), "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert {"claude-code", "continue"} <= set(json.loads(result.output)["mcp"]["not_registered"])
