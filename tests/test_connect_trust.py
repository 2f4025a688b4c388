"""``connect`` / ``disconnect`` on files that are the user's: their own ``harvester`` entry, their owner and
mode, their final newline, a FIFO or a device where a config should be, a document nested thousands deep,
and an agent rewriting the file while we edit it (issue 23, item 6).

Every test here reproduces a way the user's file was lost, changed or hung on; see tests/test_connect.py for
what connect writes on ordinary files.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harvester import connect
from harvester.cli import cli
from harvester.connect import files, jsonc, toml_edit, yaml_edit
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


def run(agent: str, home: Path, remove: bool = False, force: bool = False) -> tuple[int, str]:
    lines: list[str] = []
    code = connect.run((agent,), all_agents=False, remove=remove, dry_run=False, env=env_for(home), home=home,
                       out=lines.append, command=COMMAND, **({"force": True} if force else {}))
    return code, "\n".join(lines)


def cli_run(home: Path, *args: str) -> Any:
    env: dict[str, str | None] = {name: None for name in OVERRIDES}
    env.update({"HOME": str(home), "PATH": "", "HARVESTER_BANK": str(home / "bank.db")})
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def config_text(agent: str, servers: dict[str, dict[str, Any]]) -> str:
    """A config of ``agent`` holding ``servers`` (name → entry), written by the editors connect uses."""
    spec = AGENTS[agent]
    text = {"toml": "", "continue-yaml": CONTINUE_HEAD}.get(spec.format, "{}")
    for name, entry in servers.items():
        if spec.format == "toml":
            text = toml_edit.set_table(text, ("mcp_servers", name), entry)
        elif spec.format == "continue-yaml":
            text = yaml_edit.set_item(text, {"name": name, **entry})
        else:
            text = jsonc.set_member(text, (*spec.servers_key, name), entry)
    return text if text.endswith("\n") else text + "\n"


def with_entry(agent: str, entry: dict[str, Any]) -> str:
    """A config of ``agent`` holding ``entry`` as its ``harvester`` server, after an unrelated one."""
    return config_text(agent, {"docs": {"command": "docs-server"}, "harvester": entry})


def server(agent: str, home: Path) -> Any:
    return connect._server(config_path(agent, home).read_text(), AGENTS[agent].format,
                           (*AGENTS[agent].servers_key, "harvester"))


def ours(agent: str, command: list[str] = COMMAND, *extra: str) -> dict[str, Any]:
    return AGENTS[agent].entry([*command, "mcp", "--harness", agent, *extra])


def user_entries(agent: str) -> dict[str, dict[str, Any]]:
    """A person's own ``harvester`` entries: another command, our command with their env, other args."""
    with_env = ours(agent)
    if agent == "cline":
        with_env["transport"]["env"] = {"HARVESTER_BANK": "/data/team.db"}
    else:
        with_env["env"] = {"HARVESTER_BANK": "/data/team.db"}
    return {"wrapper": ours(agent, ["/usr/local/bin/hv-wrapper"]), "env": with_env,
            "args": ours(agent, COMMAND, "--team")}


USERS = [(a, kind) for a in AGENTS for kind in ("wrapper", "env", "args")]


def backups(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if files.BACKUP_SUFFIX in p.name)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------- the user's own entry


@pytest.mark.parametrize(("agent", "kind"), USERS)
def test_connect_refuses_to_replace_an_entry_it_did_not_write(tmp_path: Path, agent: str, kind: str) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    path.write_text(with_entry(agent, user_entries(agent)[kind]))
    before = tree(home)
    code, out = run(agent, home)
    assert code == 1
    assert f"{path} holds a harvester entry that connect did not write" in out and "--force" in out, out
    assert tree(home) == before  # nothing of this agent written, no backup either


@pytest.mark.parametrize(("agent", "kind"), USERS)
def test_disconnect_leaves_an_entry_it_did_not_write(tmp_path: Path, agent: str, kind: str) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    path.write_text(with_entry(agent, user_entries(agent)[kind]))
    before = tree(home)
    code, out = run(agent, home, remove=True)
    assert code == 1
    assert f"{path} holds a harvester entry that connect did not write" in out and "--force" in out, out
    assert tree(home) == before


@pytest.mark.parametrize("agent", list(AGENTS))
def test_force_replaces_a_users_entry_and_a_later_run_keeps_their_version(tmp_path: Path, agent: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect, "server_command", lambda env=None: COMMAND)
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    theirs = with_entry(agent, user_entries(agent)["env"])
    path.write_text(theirs)
    result = cli_run(home, "connect", agent, "--force")
    assert result.exit_code == 0, result.output
    kept = [p for p in backups(home) if p.read_text() == theirs]
    assert len(kept) == 1 and str(kept[0]) in result.output, result.output
    assert stat.S_IMODE(kept[0].stat().st_mode) == stat.S_IMODE(path.stat().st_mode)
    assert server(agent, home) == ours(agent)
    assert cli_run(home, "connect", agent).output.count("already registered") == 1
    assert cli_run(home, "disconnect", agent).exit_code == 0  # ours now: removed without --force
    assert server(agent, home) is None
    assert kept[0].read_text() == theirs  # the backups of later runs did not overwrite the user's version


@pytest.mark.parametrize("agent", list(AGENTS))
def test_disconnect_force_removes_a_users_entry_keeping_it_in_a_backup(tmp_path: Path, agent: str) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    theirs = with_entry(agent, user_entries(agent)["wrapper"])
    path.write_text(theirs)
    result = cli_run(home, "disconnect", agent, "--force")
    assert result.exit_code == 0, result.output
    assert server(agent, home) is None
    assert [p.read_text() for p in backups(home)] == [theirs]


@pytest.mark.parametrize("agent", list(AGENTS))
@pytest.mark.parametrize("earlier", [["/home/u/.venvs/old/bin/harvester"], ["/usr/bin/python3.12", "-m", "harvester"],
                                     ["harvester"]], ids=["other-venv", "python-m", "on-path"])
def test_an_entry_an_earlier_harvester_wrote_is_ours(tmp_path: Path, agent: str, earlier: list[str]) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    path.write_text(with_entry(agent, ours(agent, earlier)))
    code, out = run(agent, home)
    assert code == 0, out
    assert server(agent, home) == ours(agent)
    path.write_text(with_entry(agent, ours(agent, earlier)))
    code, out = run(agent, home, remove=True)
    assert code == 0 and server(agent, home) is None, out


# ---------------------------------------------------------------------------- owner, mode, newline


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another uid takes root")
@pytest.mark.parametrize("agent", ["claude-code", "codex", "continue"])
def test_root_editing_a_users_file_keeps_its_owner_and_mode(tmp_path: Path, agent: str) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    path.write_text(config_text(agent, {"docs": {"command": "d"}}))
    os.chown(path, 4242, 4343)
    path.chmod(0o640)
    assert run(agent, home)[0] == 0
    for edited in (path, *backups(home)):
        info = edited.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4343, 0o640), edited
    assert run(agent, home, remove=True)[0] == 0
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4343, 0o640)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another uid takes root")
def test_root_creating_a_file_in_a_users_home_gives_it_to_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 4242, 4343)
    assert run("cursor", home)[0] == 0
    for made in (home / ".cursor", home / ".cursor" / "mcp.json"):
        assert (made.stat().st_uid, made.stat().st_gid) == (4242, 4343), made
    assert stat.S_IMODE((home / ".cursor" / "mcp.json").stat().st_mode) == files.NEW_FILE_MODE


@pytest.mark.parametrize("agent", list(AGENTS))
@pytest.mark.parametrize("newline", [True, False], ids=["newline", "none"])
def test_the_final_newline_is_kept_as_found(tmp_path: Path, agent: str, newline: bool) -> None:
    home = tmp_path / "home"
    path = config_path(agent, home)
    path.parent.mkdir(parents=True)
    original = config_text(agent, {"docs": {"command": "d"}}).rstrip("\n") + ("\n" if newline else "")
    path.write_text(original)
    assert run(agent, home)[0] == 0
    connected = path.read_text()
    assert server(agent, home) == ours(agent)
    assert connected.endswith("\n") == newline, connected
    assert run(agent, home, remove=True)[0] == 0
    assert path.read_text() == original


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


# ------------------------------------------------------------- an agent writing while we edit


def agent_rewrites(path: Path, in_place: bool) -> Callable[[], None]:
    """Claude Code's own save of ``~/.claude.json``: one more startup counted, the rest as it was."""
    def write() -> None:
        data = json.loads(path.read_text())
        data["numStartups"] = data.get("numStartups", 0) + 1
        text = json.dumps(data, indent=2)
        if in_place:
            with open(path, "r+") as handle:
                handle.truncate(0)
                handle.write(text)
        else:
            other = path.with_name(".claude.json.agent-tmp")
            other.write_text(text)
            os.replace(other, path)
    return write


def _while_we_write(monkeypatch: pytest.MonkeyPatch, path: Path, writes: list[Callable[[], None]]) -> None:
    """Run the agent's next write when we start writing the new ``path`` (after we read it, before our rename)."""
    real = tempfile.mkstemp

    def mkstemp(*args: Any, **kwargs: Any) -> Any:
        if Path(kwargs.get("dir", "")) == path.parent and kwargs.get("prefix") == f".{path.name}." and writes:
            writes.pop(0)()
        return real(*args, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)


@pytest.mark.parametrize("in_place", [False, True], ids=["renamed", "in-place"])
def test_an_agents_write_between_read_and_rename_is_kept_and_the_edit_redone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_place: bool) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / ".claude.json"
    path.write_text('{\n  "numStartups": 1,\n  "mcpServers": {}\n}')
    _while_we_write(monkeypatch, path, [agent_rewrites(path, in_place)])
    code, out = run("claude-code", home)
    assert code == 0, out
    data = json.loads(path.read_text())
    assert data["numStartups"] == 2 and data["mcpServers"]["harvester"] == ours("claude-code")
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []


def test_an_agent_writing_on_every_attempt_gets_a_one_line_error_and_its_file_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / ".claude.json"
    path.write_text('{\n  "numStartups": 1\n}')
    _while_we_write(monkeypatch, path, [agent_rewrites(path, False)] * 100)
    code, out = run("claude-code", home)
    assert code == 1
    assert out.splitlines() == [f"harvester: claude-code (Claude Code): {path} changed while we were editing it "
                                f"({files.EDIT_ATTEMPTS} attempts); nothing written, run again"], out
    data = json.loads(path.read_text())
    assert data["numStartups"] == 1 + files.EDIT_ATTEMPTS and "mcpServers" not in data
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []
