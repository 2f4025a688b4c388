"""``harvester connect`` / ``disconnect`` on fake HOMEs holding each agent's real default config.

``fixtures/connect/<agent>/default/`` is what the agent's own CLI wrote under a fresh HOME (see
fixtures/connect/capture.py), ``hand/`` a file with comments, odd key order and unrelated servers;
``<scenario>-connected/`` is the golden tree after ``connect`` (``HARVESTER_UPDATE_GOLDEN=1`` rewrites
them; review the diff). ``own-add/`` is what the agent's own ``mcp add`` wrote: the entry must match it.
The last tests run each installed real CLI's own "list MCP servers" on our result.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import tomlkit
import yaml
from click.testing import CliRunner

from harvester import connect
from harvester.cli import cli
from harvester.cli.agents import _AGENT_CHOICE
from harvester.connect import files, jsonc, toml_edit, yaml_edit
from harvester.connect.agents import AGENTS, Agent

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "connect"
COMMAND = ["/opt/harvester/bin/harvester"]  # the command every fixture registers (capture.py's too)
UPDATE = os.environ.get("HARVESTER_UPDATE_GOLDEN") == "1"
SCENARIOS = [(a, s) for a in AGENTS for s in ("default", "hand") if s == "default" or (FIXTURES / a / s).is_dir()]
OVERRIDES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "QWEN_HOME",
             "COPILOT_HOME", "CLINE_DIR", "CLINE_DATA_DIR", "CLINE_MCP_SETTINGS_PATH", "CONTINUE_GLOBAL_DIR")


def env_for(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": ""}  # no PATH: "installed" goes by the HOME alone


def make_home(tmp_path: Path, agent: str, scenario: str) -> Path:
    home = tmp_path / "home"
    source = FIXTURES / agent / scenario
    if source.is_dir():
        shutil.copytree(source, home)
    home.mkdir(exist_ok=True)
    return home


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def stamps(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def run(agent: str, home: Path, remove: bool = False, dry_run: bool = False) -> tuple[int, str]:
    lines: list[str] = []
    code = connect.run((agent,), all_agents=False, remove=remove, dry_run=dry_run, env=env_for(home), home=home,
                       out=lines.append, command=COMMAND)
    return code, "\n".join(lines)


def without_backups(found: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in found.items() if not k.endswith(files.BACKUP_SUFFIX)}


@pytest.mark.parametrize(("agent", "scenario"), SCENARIOS)
def test_connect_writes_the_golden_tree_and_a_backup(tmp_path: Path, agent: str, scenario: str) -> None:
    home = make_home(tmp_path, agent, scenario)
    before = tree(home)
    code, out = run(agent, home)
    assert code == 0, out
    after = tree(home)
    golden = FIXTURES / agent / f"{scenario}-connected"
    if UPDATE:
        shutil.rmtree(golden, ignore_errors=True)
        for name, data in without_backups(after).items():
            (golden / name).parent.mkdir(parents=True, exist_ok=True)
            (golden / name).write_bytes(data)
    assert without_backups(after) == tree(golden)
    for name, data in before.items():  # every file we changed has its previous bytes beside it
        if after[name] != data:
            assert after[name + files.BACKUP_SUFFIX] == data
            backup, original = home / (name + files.BACKUP_SUFFIX), home / name
            assert stat.S_IMODE(backup.stat().st_mode) == stat.S_IMODE(original.stat().st_mode)
    assert set(after) - set(before) <= {str(p.relative_to(home)) for p in _edited(agent, home)} | {
        n + files.BACKUP_SUFFIX for n in before}


@pytest.mark.parametrize(("agent", "scenario"), SCENARIOS)
def test_a_second_connect_changes_no_byte_and_no_mtime(tmp_path: Path, agent: str, scenario: str) -> None:
    home = make_home(tmp_path, agent, scenario)
    run(agent, home)
    first = stamps(home)
    code, out = run(agent, home)
    assert (code, stamps(home)) == (0, first)
    assert "already registered" in out and "nothing written" in out


@pytest.mark.parametrize(("agent", "scenario"), SCENARIOS)
def test_disconnect_gives_back_the_original_bytes(tmp_path: Path, agent: str, scenario: str) -> None:
    home = make_home(tmp_path, agent, scenario)
    before = tree(home)
    run(agent, home)
    code, out = run(agent, home, remove=True)
    assert code == 0, out
    after = without_backups(tree(home))
    for name, data in before.items():
        assert after.pop(name) == data, name
    for name, data in after.items():  # files connect created hold an empty document now (documented)
        assert data in (b"{}\n", b""), name
    assert run(agent, home, remove=True)[1].count("not registered") == 1


@pytest.mark.parametrize("agent", [a for a in AGENTS if (FIXTURES / a / "own-add").is_dir()])
def test_our_entry_is_what_the_agents_own_mcp_add_writes(agent: str) -> None:
    spec = AGENTS[agent]
    home = Path("/home")
    relative = spec.file(env_for(home), home).relative_to(home)
    ours = _server(spec, (FIXTURES / agent / "default-connected" / relative).read_text())
    theirs = _server(spec, (FIXTURES / agent / "own-add" / relative).read_text())
    if agent == "codex":  # our one addition: run our (read-only) tools without asking
        assert ours.pop("default_tools_approval_mode") == "approve"
    assert ours == theirs


@pytest.mark.parametrize("agent", ["claude-code", "qwen-code", "opencode", "kilo", "copilot-cli", "cline", "codex"])
def test_the_whole_file_is_byte_for_byte_what_the_agent_writes(agent: str) -> None:
    """On its own default file our edit gives exactly the agent's own bytes (Gemini CLI's own add also
    drops the file's final newline, which we keep; Codex's differs by our approval line alone)."""
    spec = AGENTS[agent]
    home = Path("/home")
    relative = spec.file(env_for(home), home).relative_to(home)
    ours = (FIXTURES / agent / "default-connected" / relative).read_text()
    theirs = (FIXTURES / agent / "own-add" / relative).read_text()
    if agent == "codex":
        ours = ours.replace('default_tools_approval_mode = "approve"\n', "")
    assert ours == theirs


@pytest.mark.parametrize("agent", [a for a in AGENTS if (FIXTURES / a / "hand").is_dir()])
def test_comments_and_unrelated_servers_stay(tmp_path: Path, agent: str) -> None:
    home = make_home(tmp_path, agent, "hand")
    before = tree(home)
    run(agent, home)
    after = tree(home)
    for name, data in before.items():
        kept = after[name].decode()
        for line in data.decode().splitlines():
            if "//" in line or "#" in line or "/*" in line or '"docs"' in line or "name: fs" in line:
                assert line in kept, (name, line)


BROKEN = {"json": '{"mcpServers": {"a": 1,}\n', "json-comments": '{"mcpServers": {}, }\n',
          "jsonc": '{"mcpServers": {\n', "toml": "[mcp_servers\ncommand = 1\n", "continue-yaml": "name: [x\n"}


@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_file_that_does_not_parse_is_refused_untouched(tmp_path: Path, agent: str) -> None:
    home = tmp_path / "home"
    path = AGENTS[agent].file(env_for(home), home)
    path.parent.mkdir(parents=True)
    path.write_text(BROKEN[AGENTS[agent].format])
    before = stamps(home)
    result = _cli(home, "connect", agent)
    assert result.exit_code == 1
    assert str(path) in result.output and "left untouched" in result.output
    assert stamps(home) == before  # no backup, no temporary file, nothing else of this agent


@pytest.mark.parametrize("agent", ["claude-code", "cline", "cursor"])
def test_a_comment_is_refused_where_the_agent_reads_strict_json(tmp_path: Path, agent: str) -> None:
    home = tmp_path / "home"
    path = AGENTS[agent].file(env_for(home), home)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // a comment\n  "mcpServers": {}\n}\n')
    code, out = run(agent, home)
    assert code == 1 and "comment" in out and str(path) in out


@pytest.mark.parametrize(("agent", "scenario"), SCENARIOS)
def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path, agent: str, scenario: str) -> None:
    home = make_home(tmp_path, agent, scenario)
    before = stamps(home)
    code, out = run(agent, home, dry_run=True)
    assert (code, stamps(home)) == (0, before)
    assert "+++ " in out and any(line.startswith("+") and "harvester" in line for line in out.splitlines())
    assert out.endswith("dry run: nothing written")


def test_the_cli_connects_the_installed_agents_and_names_the_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                      ) -> None:
    monkeypatch.setattr(connect, "server_command", lambda env=None: COMMAND)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".gemini").mkdir()
    result = _cli(home, "connect")
    assert result.exit_code == 0, result.output
    assert connect.registered(home, env_for(home)) == {a: a in ("codex", "gemini-cli") for a in AGENTS}
    assert "skipped, not installed: claude-code, qwen-code, opencode, kilo, copilot-cli, cline, continue, cursor" \
        in result.output
    assert "codex (Codex CLI): connected in" in result.output
    result = _cli(home, "disconnect", "--dry-run")
    assert result.exit_code == 0 and "-[mcp_servers.harvester]" in result.output
    assert _cli(home, "disconnect").exit_code == 0
    assert not any(connect.registered(home, env_for(home)).values())


def test_continue_without_its_config_file_is_skipped_not_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".continue").mkdir(parents=True)
    code, out = run("continue", home)
    assert code == 0 and "skipped" in out and not (home / ".continue" / "config.yaml").exists()


def test_no_session_history_store_is_touched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stores = [".claude/projects/-repo/s.jsonl", ".codex/sessions/2026/01/01/rollout-x.jsonl",
              ".gemini/tmp/repo/chats/session-1.jsonl", ".qwen/projects/-repo/chats/s.jsonl",
              ".local/share/opencode/opencode.db", ".local/share/kilo/kilo.db", ".copilot/session-state/x/events.jsonl",
              ".cline/data/sessions/x/x.json", ".continue/sessions/x.json", ".cursor/chats/x/store.db"]
    for name in stores:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("history\n")
    (home / ".continue" / "config.yaml").write_text("name: x\nversion: 1.0.0\nschema: v1\n")
    before = stamps(home)
    lines: list[str] = []
    assert connect.run((), all_agents=True, remove=False, dry_run=False, env=env_for(home), home=home,
                       out=lines.append, command=COMMAND) == 0
    now = stamps(home)
    assert {name: now[name] for name in stores} == {name: before[name] for name in stores}


def test_a_symlinked_config_stays_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles" / "mcp.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{\n  "mcpServers": {}\n}\n')
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").symlink_to(dotfiles)
    assert run("cursor", home)[0] == 0
    assert (home / ".cursor" / "mcp.json").is_symlink()
    assert json.loads(dotfiles.read_text())["mcpServers"]["harvester"]["command"] == COMMAND[0]


def test_a_file_rewritten_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"b": 2}\n')
    read = files.read(path)
    path.write_text("{}\n")
    with pytest.raises(files.ChangedMeanwhile):
        files.replace(path, '{"a": 1}\n', read)
    assert path.read_text() == "{}\n"


def test_env_overrides_move_the_files(tmp_path: Path) -> None:
    home = tmp_path
    env = {"CLAUDE_CONFIG_DIR": "/c", "CODEX_HOME": "/x", "GEMINI_CLI_HOME": "/g", "QWEN_HOME": "~/q",
           "XDG_CONFIG_HOME": "/cfg", "COPILOT_HOME": "/cp", "CLINE_DIR": "/cl", "CONTINUE_GLOBAL_DIR": "/cn"}
    assert {name: str(agent.file(env, home)) for name, agent in AGENTS.items()} == {
        "claude-code": "/c/.claude.json", "codex": "/x/config.toml", "gemini-cli": "/g/.gemini/settings.json",
        "qwen-code": f"{home}/q/settings.json", "opencode": "/cfg/opencode/opencode.json",
        "kilo": "/cfg/kilo/kilo.json", "copilot-cli": "/cp/mcp-config.json",
        "cline": "/cl/data/settings/cline_mcp_settings.json", "continue": "/cn/config.yaml",
        "cursor": f"{home}/.cursor/mcp.json"}
    assert str(AGENTS["claude-code"].approval.file(env, home)) == "/c/settings.json"  # type: ignore[union-attr]
    assert str(AGENTS["cline"].file({"CLINE_MCP_SETTINGS_PATH": "/m.json", "CLINE_DIR": "/cl"}, home)) == "/m.json"
    assert str(AGENTS["cline"].file({"CLINE_DATA_DIR": "/d"}, home)) == "/d/settings/cline_mcp_settings.json"


def test_opencode_and_kilo_pick_the_file_their_own_mcp_add_picks(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    (tmp_path / ".config" / "opencode").mkdir(parents=True)
    (tmp_path / ".config" / "opencode" / "opencode.jsonc").write_text("{}")
    assert AGENTS["opencode"].file(env, tmp_path).name == "opencode.jsonc"
    (tmp_path / ".config" / "opencode" / "opencode.json").write_text("{}")
    assert AGENTS["opencode"].file(env, tmp_path).name == "opencode.json"
    (tmp_path / ".config" / "kilo").mkdir()
    (tmp_path / ".config" / "kilo" / "opencode.json").write_text("{}")
    assert AGENTS["kilo"].file(env, tmp_path).name == "opencode.json"


def test_the_server_command_is_the_running_harvester(tmp_path: Path) -> None:
    executable = tmp_path / "bin" / "harvester"
    executable.parent.mkdir()
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    assert connect.server_command({"PATH": ""}, argv0=str(executable)) == [str(executable)]
    assert connect.server_command({"PATH": str(executable.parent)}, argv0="/usr/bin/pytest") == [str(executable)]
    assert connect.server_command({"PATH": ""}, argv0="/usr/bin/pytest")[1:] == ["-m", "harvester"]


def test_the_cli_offers_every_agent() -> None:
    assert list(_AGENT_CHOICE.choices) == list(AGENTS)


# ------------------------------------------------------------------------------------- the editors


@pytest.mark.parametrize(("text", "expected"), [
    ("{}", '{\n  "s": {\n    "h": 1\n  }\n}'),
    ('{\n  "s": {\n    "x": 2\n  }\n}\n', '{\n  "s": {\n    "x": 2,\n    "h": 1\n  }\n}\n'),
    ('{"a": 1}', '{"a": 1, "s": {"h": 1}}'),
    ('{\n\t"a": 1\n}\n', '{\n\t"a": 1,\n\t"s": {\n\t\t"h": 1\n\t}\n}\n'),
    ('{\n  "a": 1 // one\n}', '{\n  "a": 1, // one\n  "s": {\n    "h": 1\n  }\n}'),
    ('{\n  "a": 1,\n}', '{\n  "a": 1,\n  "s": {\n    "h": 1\n  },\n}'),
    ('{\n  "s": {\n    // none yet\n  }\n}', '{\n  "s": {\n    // none yet\n    "h": 1\n  }\n}'),
])
def test_jsonc_set_and_delete_round_trip(text: str, expected: str) -> None:
    assert jsonc.set_member(text, ("s", "h"), 1, jsonc.JSONC) == expected
    assert jsonc.set_member(expected, ("s", "h"), 1, jsonc.JSONC) == expected
    assert jsonc.delete_member(expected, ("s", "h"), jsonc.JSONC) == text


def test_jsonc_a_repeated_key_is_edited_where_json_parse_reads_it() -> None:
    text = '{"s": {"x": 2}, "s": {"h": 0}}'
    assert jsonc.set_member(text, ("s", "h"), 1) == '{"s": {"x": 2}, "s": {"h": 1}}'



def test_jsonc_refuses_what_the_dialect_does_not_accept() -> None:
    with pytest.raises(jsonc.JsoncError, match="comment"):
        jsonc.parse("{} // x", jsonc.STRICT)
    with pytest.raises(jsonc.JsoncError, match="trailing comma"):
        jsonc.parse('{"a": 1,}', jsonc.WITH_COMMENTS)
    with pytest.raises(jsonc.JsoncError, match="not an object"):
        jsonc.set_member('{"s": []}', ("s", "h"), 1)
    assert jsonc.parse('{"a": [1, 2.5e3, "x\\u00e9", true, null]}').value == {"a": [1, 2500.0, "xé", True, None]}


def test_jsonc_list_items_come_and_go() -> None:
    text = '{\n  "permissions": {\n    "allow": [\n      "Bash(ls)"\n    ]\n  }\n}\n'
    added = jsonc.append_item(text, ("permissions", "allow"), "mcp__harvester")
    assert added == '{\n  "permissions": {\n    "allow": [\n      "Bash(ls)",\n      "mcp__harvester"\n    ]\n  }\n}\n'
    assert jsonc.append_item(added, ("permissions", "allow"), "mcp__harvester") == added
    assert jsonc.remove_item(added, ("permissions", "allow"), "mcp__harvester") == text


def test_toml_and_yaml_refuse_what_they_cannot_edit_in_place() -> None:
    with pytest.raises(toml_edit.TomlEditError):
        toml_edit.delete_table('mcp_servers = { harvester = { command = "x" } }\n', ("mcp_servers", "harvester"))
    with pytest.raises(yaml_edit.YamlEditError, match="inline"):
        yaml_edit.set_item("mcpServers: [{name: a, command: b}]\n", {"name": "harvester", "command": "c"})


# --------------------------------------------------------------------- the real agents read our entry

# Agent → (its e2e name, its own command that lists or shows MCP servers, what that must print).
LISTERS = {
    "claude-code": ("claude-code", ["mcp", "get", "harvester"], "Args: mcp --harness claude-code"),
    "codex": ("codex", ["mcp", "list", "--json"], '"--harness",\n        "codex"'),
    "gemini-cli": ("gemini-cli", ["mcp", "list"], "harvester: /opt/harvester/bin/harvester mcp --harness gemini-cli"),
    "qwen-code": ("qwen-code", ["mcp", "list"], "harvester: /opt/harvester/bin/harvester mcp --harness qwen-code"),
    "opencode": ("opencode", ["mcp", "list"], "/opt/harvester/bin/harvester mcp --harness opencode"),
    "kilo": ("kilo", ["mcp", "list"], "/opt/harvester/bin/harvester mcp --harness kilo"),
    "copilot-cli": ("copilot-cli", ["mcp", "get", "harvester"], "/opt/harvester/bin/harvester mcp --harness copilot-cli"),
    # Cline has no list command: its own remove must find our entry (and leave the file as it was).
    "cline": ("cline", ["mcp", "remove", "harvester"], "harvester"),
}


@pytest.mark.parametrize("agent", list(LISTERS))
def test_the_agent_itself_reads_our_entry(tmp_path: Path, agent: str) -> None:
    from tests import realagents

    suite_name, args, expected = LISTERS[agent]
    home = make_home(tmp_path, agent, "default")
    assert run(agent, home)[0] == 0
    result = realagents.run(suite_name, args, cwd=home, home=home, port=9, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert expected in output


def _edited(agent: str, home: Path) -> list[Path]:
    spec = AGENTS[agent]
    paths = [spec.file(env_for(home), home)]
    if spec.approval:
        paths.append(spec.approval.file(env_for(home), home))
    return paths


def _server(spec: Agent, text: str) -> dict:
    if spec.format == "toml":
        return tomlkit.parse(text).unwrap()["mcp_servers"]["harvester"]
    if spec.format == "continue-yaml":
        return next(s for s in yaml.safe_load(text)["mcpServers"] if s["name"] == "harvester")
    return jsonc.parse(text, jsonc.JSONC).value[spec.servers_key[0]]["harvester"]


def _cli(home: Path, *args: str):  # type: ignore[no-untyped-def]
    env: dict[str, str | None] = {name: None for name in OVERRIDES}
    env.update({"HOME": str(home), "PATH": "", "HARVESTER_BANK": str(home / "bank.db")})
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_subprocess_entry_point_runs(tmp_path: Path) -> None:
    """``python -m harvester connect --dry-run`` works from a real process (no CliRunner shortcuts)."""
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDES}
    env.update({"HOME": str(home), "PATH": "/usr/bin:/bin"})  # git (for GitPython), no agent
    result = subprocess.run([os.sys.executable, "-m", "harvester", "connect", "--dry-run"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '"mcpServers"' in result.stdout and not (home / ".cursor" / "mcp.json").exists()


# A stand-in for `harvester mcp` (being written elsewhere): one read-only tool, `ping`, over stdio.
STUB_SERVER = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg.get("method"), {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "harvester", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "ping", "description": "Answers pong.",
                             "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "pong from the bank"}]}
    elif method != "ping":
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''


# How each approval reads in the file, to take it out again for the control run.
APPROVAL_TEXT = {"claude-code": '"mcp__harvester"', "codex": 'default_tools_approval_mode = "approve"',
                 "gemini-cli": '"trust": true', "qwen-code": '"trust": true'}


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "control"])
@pytest.mark.parametrize("agent", list(APPROVAL_TEXT))
def test_a_headless_run_calls_our_tool_without_a_prompt(tmp_path: Path, agent: str, approved: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The approval we register is what lets a headless turn call the server's tool (the model asks for
    it; the agent must run it and hand back its result, not refuse or wait for a person); without it
    (the control) the same turn does not get the tool's result."""
    if not approved:
        assert '"annotations": {"readOnlyHint": True}, ' in STUB_SERVER
    from tests import realagents
    from tests.fakellm import FakeLLM, script

    original = script._answer

    def call_ping(conv: script.Conversation) -> script.Reply:
        """Call ``ping`` when offered; Qwen Code 0.15 defers MCP tools: load it with tool_search first."""
        ping = next((t for t in conv.tools if t.name.endswith("ping")), None)
        asked = "READ_FILE" in conv.prompt and not conv.ends_with_tool_result
        if ping and (asked or conv.result_of == "tool_search"):
            return script.Reply(tool_call=script.ToolCall(ping.name, {}, ping.namespace))
        search = next((t for t in conv.tools if t.name == "tool_search"), None)
        deferred = re.search(r'"([^"]*ping)"', conv.system)
        if asked and search and deferred:
            query = next(iter(search.properties), "query")
            return script.Reply(tool_call=script.ToolCall(search.name, {query: f"select:{deferred.group(1)}"}))
        return original(conv)

    monkeypatch.setattr(script, "_answer", call_ping)
    stub = tmp_path / "stub_mcp.py"
    # The control also drops the tool's readOnlyHint: Codex 0.171 and Qwen Code 0.15 run a tool so marked
    # without asking, approval or not; the approval is for a tool the server did not mark.
    stub.write_text(STUB_SERVER if approved else STUB_SERVER.replace('"annotations": {"readOnlyHint": True}, ', ""))
    home = tmp_path / "home"
    repo = realagents.make_repo(tmp_path)
    with FakeLLM() as llm:
        realagents.write_config(agent, home, llm.port)
        lines: list[str] = []
        assert connect.run((agent,), all_agents=False, remove=False, dry_run=False, env=env_for(home), home=home,
                           out=lines.append, command=[os.sys.executable, str(stub)]) == 0, lines
        if not approved:
            for path in _edited(agent, home):
                text = path.read_text()
                path.write_text(text.replace(APPROVAL_TEXT[agent], '"mcp__other"' if agent == "claude-code" else
                                             ('"trust": false' if "trust" in APPROVAL_TEXT[agent] else "")))
        result = realagents.run(agent, realagents.prompt_args(agent, "READ_FILE /nowhere"), cwd=repo, home=home,
                                port=llm.port, timeout=240)
    assert ("pong from the bank" in result.stdout) == approved, result.stdout + result.stderr[-3000:]


def test_status_says_in_which_installed_agents_the_server_is_registered(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect, "server_command", lambda env=None: COMMAND)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".gemini").mkdir()
    assert _cli(home, "connect", "codex").exit_code == 0
    result = CliRunner().invoke(cli, ["--bank", str(tmp_path / "bank.sqlite"), "status", "--json"],
                                env={**env_for(home), "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")})
    data = json.loads(result.output)
    assert data["mcp"] == {"registered": ["codex"], "not_registered": ["gemini-cli"]}  # the installed ones
    rows = {h["name"]: h for h in data["harnesses"]}
    assert (rows["codex"]["mcp_registered"], rows["gemini-cli"]["mcp_registered"]) == (True, False)
    assert rows["claude-code"]["mcp_registered"] is None and rows["aider"]["mcp_registered"] is None
    text = CliRunner().invoke(cli, ["--bank", str(tmp_path / "bank.sqlite"), "status"],
                              env={**env_for(home), "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")}).output
    assert "registered in: codex; not in: gemini-cli (`harvester connect` adds it)" in text
