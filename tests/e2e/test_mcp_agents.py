"""Real agents read the bank through `harvester mcp`, end to end.

A real Claude Code session leaves a marker word; `harvester run` captures it; `harvester connect` registers
the server for real Codex, Gemini CLI and opencode; each is driven headless (tests/fakellm's
``USE_TOOL_NAMED`` directive) to call ``handoff`` and then ``search_history`` for the marker. What it got
back, as its own transcript recorded it and `harvester run` captured it, must hold Claude's marker; those
events are marked recall in the bank; `harvester search` finds Claude's event first and no echo.

The agents are the pinned CLIs of tests/realagents.py, installed in .cache/agents (an agent that cannot be
installed fails its test with the reason: nothing here is skipped), offline against tests/fakellm.

Which harvester the agents start, and on which bank: `connect` registers the first `harvester` on PATH,
here a wrapper that runs this checkout; the bank is named in HOME's ``~/.config/harvester/config.toml``,
which the service reads too. Environment variables would not do: Codex starts an MCP server with about a
dozen of its own (HOME, PATH, LANG, SHELL, TERM, ...), while Gemini CLI and opencode pass theirs on whole.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harvester.capture.recall_seal import is_our_tool
from harvester.connect import AGENTS as CONNECT_AGENTS
from tests import realagents
from tests.daemon import FAST, ROOT, Daemon, wait_for
from tests.fakellm import FakeLLM

BANK_ID = "coding-agent::demo-repo"
AGENTS = ("codex", "gemini-cli", "opencode")
# Extra arguments each agent's headless run needs. Codex 0.171 waits `mcp_optional_startup_grace_ms`
# (default 1000 ms) for a server that is not `required` while it builds the first turn's tool list, then
# goes on without it; `harvester mcp` needs ~0.8 s to answer initialize on an idle core here, more while
# Codex itself starts, so its tools were missing from the first (and, in `exec`, only) turn. 0: wait
# for each server's own startup_timeout_sec (10 s) instead.
HEADLESS_ARGS = {"codex": ["-c", "mcp_optional_startup_grace_ms=0"]}
# A frame's opening as each agent keeps the tool result: raw, JSON-escaped (Codex wraps the result in
# {"result": ...}), HTML-escaped.
FRAME = r'(?:<|&lt;|\\u003c)harvester-history kind=(?:\\?"|&quot;){kind}'


@dataclass
class World:
    tmp: Path
    daemon: Daemon
    repo: Path
    llm: FakeLLM
    marker: str
    claude_session: str
    wrapper: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One HOME and repo for the module: `harvester run` watching, Claude's session in the bank, and the
    server registered by `harvester connect` for the three agents."""
    for name in ("claude-code", *AGENTS):  # all up front: a missing one fails here with the reason
        try:
            realagents.install(name)
        except Exception as exc:
            agent = realagents.AGENTS[name]
            pytest.fail(f"cannot install {agent.package}@{agent.version}: {exc}")
    tmp = tmp_path_factory.mktemp("mcp-e2e")
    daemon = Daemon(tmp)
    # The bank is named in HOME's config file, the one `harvester mcp` finds through HOME: Codex starts MCP
    # servers with a short environment (HOME, PATH, LANG, ...), so HARVESTER_BANK / HARVESTER_CONFIG
    # would not reach it. The service reads the same file.
    config = daemon.home / ".config" / "harvester" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f"bank = {json.dumps(str(daemon.bank))}\n{FAST}")
    daemon.config = config
    # `connect` registers the first `harvester` on PATH: this one runs this checkout (the editable
    # install's entry point would run whichever checkout it was installed from).
    wrapper = tmp / "bin" / "harvester"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} "
                       '-m harvester "$@"\n')
    wrapper.chmod(0o755)
    repo = realagents.make_repo(tmp)
    marker = f"zebra{uuid.uuid4().hex[:10]}"  # one FTS5 token: `harvester search` takes it as written
    with FakeLLM() as llm:
        for name in ("claude-code", *AGENTS):
            realagents.write_config(name, daemon.home, llm.port)
        daemon.start()
        try:
            result = realagents.run("claude-code", ["-p", f"Remember the code word {marker}."], cwd=repo,
                                    home=daemon.home, port=llm.port)
            assert result.returncode == 0, f"claude exited {result.returncode}: {result.stderr[-2000:]}"
            claude = lambda: daemon.query(  # noqa: E731
                "SELECT s.native_id FROM events e JOIN sessions s ON s.id = e.session_id WHERE s.harness = "
                "'claude-code' AND s.bank_id = ? AND e.role = 'user' AND e.text LIKE ?", BANK_ID, f"%{marker}%")
            try:
                wait_for(claude, 20, "Claude's session in the bank")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nbank: {_all_events(daemon)}\nstore: "
                                     f"{realagents.store('claude-code', daemon.home, repo)}\n"
                                     f"service log:\n{daemon.log.read_text()[-3000:]}") from None
            env = {**realagents.clean_env(daemon.home), "PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}",
                   "PYTHONPATH": str(ROOT)}
            connected = subprocess.run([sys.executable, "-m", "harvester", "connect", *AGENTS], env=env, cwd=tmp,
                                       capture_output=True, text=True, timeout=60)
            assert connected.returncode == 0, connected.stdout + connected.stderr
            yield World(tmp, daemon, repo, llm, marker, claude()[0][0], wrapper)
        finally:
            try:
                if daemon.proc is not None:
                    assert daemon.stop() == 0, daemon.log.read_text()[-3000:]
            finally:
                realagents.kill_leftovers(daemon.home)  # the service is stopped: the rest is the agents'


def _all_events(daemon: Daemon) -> list[tuple]:
    return daemon.query("SELECT s.harness, s.native_id, e.seq, e.role, e.kind, e.tool_name, e.recall, "
                        "substr(e.text, 1, 200) FROM events e JOIN sessions s ON s.id = e.session_id "
                        "ORDER BY e.id")


def _events(daemon: Daemon, harness: str) -> list[tuple]:
    """(session, seq, role, kind, tool_name, recall, text) of the harness's sessions in the repo's bank."""
    return daemon.query(
        "SELECT s.native_id, e.seq, e.role, e.kind, e.tool_name, e.recall, e.text FROM events e "
        "JOIN sessions s ON s.id = e.session_id WHERE s.harness = ? AND s.bank_id = ? "
        "ORDER BY s.started_at, s.id, e.seq", harness, BANK_ID)


def _tool_events(events: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    return [e for e in events if e[3] == "tool_call"], [e for e in events if e[3] == "tool_result"]


def _gaps(events: list[tuple], marker: str) -> list[str]:
    """What the agent's captured turn still lacks (empty: all there)."""
    calls, results = _tool_events(events)
    names = [e[4] or "" for e in calls]
    missing = [f"a call of {tool}" for tool in ("handoff", "search_history") if not any(tool in n for n in names)]
    if sum(marker in e[6] for e in results) < 2:
        missing.append(f"two tool results holding {marker}")
    if not any(e[2] == "assistant" and e[3] == "text" and "says:" in e[6] for e in events):
        missing.append("the final answer quoting the last result")
    return missing


@pytest.mark.parametrize("name", AGENTS)
def test_the_agent_gets_claudes_marker_back_and_the_echo_is_recall(world: World, name: str) -> None:
    agent, daemon, marker = realagents.AGENTS[name], world.daemon, world.marker
    registered = _registered_text(name, daemon.home)
    assert str(world.wrapper) in registered and f'"{name}"' in registered, registered
    # One turn, two calls: the handoff of Claude's session (the latest other session would be an earlier
    # agent of this module's), then a search for the marker.
    prompt = (f'USE_TOOL_NAMED:handoff:{{"harness": "claude-code"}} then '
              f'USE_TOOL_NAMED:search_history:{{"query": "{marker}"}}')
    args = realagents.prompt_args(agent, prompt, home=daemon.home)
    args[1:1] = HEADLESS_ARGS.get(name, [])  # after the subcommand (`codex exec -c ...`)
    result = realagents.run(agent, args, cwd=world.repo, home=daemon.home, port=world.llm.port, timeout=240)
    ran = f"{name} exited {result.returncode}\nstdout: {result.stdout[-3000:]}\nstderr: {result.stderr[-3000:]}"
    assert result.returncode == 0, ran

    try:
        wait_for(lambda: not _gaps(_events(daemon, name), marker), 30, f"{name}'s MCP turn in the bank")
    except AssertionError as exc:  # what the bank, the agent's store and the service hold
        events = _events(daemon, name)
        raise AssertionError(f"{exc}\nmissing: {_gaps(events, marker)}\n{ran}\nbank: "
                             f"{[(*e[:6], e[6][:300]) for e in events]}\n"
                             f"store: {realagents.store(agent, daemon.home, world.repo)}\n"
                             f"service log:\n{daemon.log.read_text()[-3000:]}") from None
    events = _events(daemon, name)
    shown = f"{name}'s events in the bank: {[(*e[:6], e[6][:300]) for e in events]}"
    calls, results = _tool_events(events)

    # The agent's own transcript holds what it received (in its own escaping), and the bank read it from
    # there: Claude's session id is in no prompt, only in the handoff result.
    files = realagents.store(agent, daemon.home, world.repo)
    stored = b"".join(p.read_bytes() for p in files)
    assert world.claude_session.encode() in stored and b"harvester-history kind=" in stored, \
        f"{name}'s store ({files}) lacks the framed handoff naming {world.claude_session}; {shown}"

    # Every call and result of this turn is the harvester's own recall: marked, so search leaves it out.
    assert calls and all(is_our_tool(e[4]) for e in calls), shown
    assert [e for e in calls + results if e[5] != 1] == [], shown
    handoff = next((e for e in results if re.search(FRAME.format(kind="handoff"), e[6])), None)
    assert handoff is not None, f"no framed handoff result; {shown}"
    assert world.claude_session in handoff[6] and marker in handoff[6], handoff[6]
    assert any(re.search(FRAME.format(kind="search_history"), e[6]) and marker in e[6] for e in results), shown
    # The final answer quotes the framed result: an echo too.
    answers = [e for e in events if e[2] == "assistant" and e[3] == "text" and "says:" in e[6]]
    assert answers and all(e[5] == 1 for e in answers), shown

    hits = _search(daemon, marker)
    assert hits and (hits[0]["harness"], hits[0]["session"]) == ("claude-code", world.claude_session), \
        f"search hits: {hits}\n{shown}"
    recall = {(h, s, q) for h, s, q in daemon.query(
        "SELECT s.harness, s.native_id, e.seq FROM events e JOIN sessions s ON s.id = e.session_id "
        "WHERE e.recall = 1")}
    assert [h for h in hits if (h["harness"], h["session"], h["seq"]) in recall] == [], f"search hits: {hits}"
    # The echoes are there, and found when asked for: it is the recall mark that keeps them out.
    echoes = [h for h in _search(daemon, marker, "--include-recall")
              if (h["harness"], h["session"], h["seq"]) in recall and h["harness"] == name]
    assert len(echoes) >= 2, f"recall hits of {name}: {echoes}\n{shown}"


def _search(daemon: Daemon, marker: str, *flags: str) -> list[dict]:
    found = daemon.cli("search", marker, "--json", "--limit", "100", *flags)
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)["hits"]


def _registered_text(name: str, home: Path) -> str:
    """The user-level file `connect` wrote our entry into."""
    return CONNECT_AGENTS[name].file(realagents.clean_env(home), home).read_text()

