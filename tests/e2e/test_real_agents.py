"""Real agents, end to end: each pinned CLI runs offline against tests/fakellm while `harvester run`
watches its store; the bank must hold every turn, once, in order — live, and again after a clean scan.

Installs go to .cache/agents (reused when present), several at once before the first test (a fresh
clone downloads ~6 GB, mostly waiting on the registry). An agent that cannot be installed fails its
test with the reason: nothing here is skipped.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import realagents
from tests.daemon import FAST, AgentFilesWatch, Daemon, wait_for
from tests.fakellm import FakeLLM
from tests.helpers import scan

HELLO = "Hi! I am the fake model."
SECRET = "pelican"  # in notes.txt: the tool result must carry it


@dataclass(frozen=True)
class Expect:
    harness: str  # our harness name for the agent's store
    sessions: int = 1  # sessions the two turns make (Aider: one per run)
    tools: bool = True  # the agent calls the file-read tool (Aider has no tools: the file is in its prompt)
    kill: bool = False  # also: kill it mid-turn, the session must end abandoned or ended
    # Seconds the killed turn's prompt may take to reach the store (OpenClaw: ~25 on a quiet machine). A deadline,
    # not a timing: the wait ends as soon as the prompt is there; a loaded CI machine needs the margin.
    prompt_after: float = 60


EXPECT: dict[str, Expect] = {
    "claude-code": Expect("claude-code", kill=True),
    "codex": Expect("codex", kill=True),
    "qwen-code": Expect("qwen-code", kill=True),
    # No kill for Gemini CLI and Continue: neither stores a turn's prompt before the model answers (Gemini
    # 0.61 appends it with the reply; Continue rewrites its session file when the turn ends), so a turn
    # killed while the model is slow leaves nothing in the store to mark.
    "gemini-cli": Expect("gemini-cli"),
    "opencode": Expect("opencode", kill=True),
    "kilo": Expect("kilo", kill=True),
    "continue-cli": Expect("continue"),
    # Every Aider run starts a block of its own in the history file: two runs, two sessions. It has
    # no tools: it asks for the file, the user's next turn (--yes-always) adds it to the chat.
    "aider": Expect("aider", sessions=2, tools=False, kill=True),
    # No kill: Auggie writes its session file once an exchange is done, never while the model answers.
    "auggie": Expect("auggie"),
    # Its LangGraph server child writes the store (WAL: liveness goes by the newer of the db and its -wal).
    "dcode": Expect("dcode", kill=True, prompt_after=60),  # its LangGraph server starts slowly on a busy machine
    # Hermes writes the prompt to state.db when the turn starts; its ended_at stays empty after `chat -q`.
    # gptme appends the prompt to conversation.jsonl before it asks the model.
    "gptme": Expect("gptme", kill=True),
    "hermes": Expect("hermes", kill=True),
    # Kimi CLI writes TurnBegin (the prompt) to wire.jsonl before it asks the model.
    "kimi": Expect("kimi", kill=True),
    # Kimi Code writes turn.prompt to agents/main/wire.jsonl before it asks the model.
    "kimi-code": Expect("kimi-code", kill=True),
    # Mistral Vibe journals the prompt (a projection_delta) before it asks the model.
    "mistral-vibe": Expect("mistral-vibe", kill=True),
    "pi": Expect("pi", kill=True),
    "oh-my-pi": Expect("oh-my-pi", kill=True),
    "openclaw": Expect("openclaw", kill=True, prompt_after=120),
    # OpenHands writes each event as its own file as it happens (the prompt before the model answers). Its
    # Python start-up alone takes a minute on a loaded machine: the killed turn's prompt may take as long.
    "openhands": Expect("openhands", kill=True, prompt_after=180),  # transcripts in SQLite (polled); process title openclaw-agent
    "copilot-cli": Expect("copilot-cli", kill=True),
    # Droid appends each message as it comes (the prompt before the model answers): a killed turn is there.
    "droid": Expect("droid", kill=True),
    # Resumes go over ACP (tests/realagents_acp.py). No kill: messages.json is written at a turn's end
    # only, so a turn killed midway never reaches the store (sessions.db just says "running").
    "cline": Expect("cline"),
    # dsh: a headless run starts the session; the resume prompts it through `dsh web` (tests/realagents_dsh_web.py).
    "deepseek-harness": Expect("deepseek-harness", kill=True),
}


@pytest.fixture(scope="module", autouse=True)
def installed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every agent installing in the background, several at once, saying which as each is done (on a fresh
    clone this takes minutes: a person running the tests must see it is not stuck; `.ci/run` starts it before
    the other tests). Each test waits for its own agent only (realagents.install, under that agent's lock), so
    the first agents run while the last still install. A failure here is left for that agent's own test,
    whose install fails it with the reason."""
    import threading

    capture = request.config.pluginmanager.get_plugin("capturemanager")
    worker = threading.Thread(target=realagents.install_all, args=(lambda text: _say(capture, text), list(EXPECT)),
                              name="install-agents", daemon=True)
    worker.start()
    yield
    worker.join()  # every test has had its agent by now: nothing is left to wait for


def _say(capture: Any, text: str) -> None:
    with capture.global_and_fixture_disabled():
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def _events(bank: Path, harness: str) -> list[tuple]:
    """(session, role, kind, text, tool_name, state) of the harness's sessions in the repo's bank."""
    if not bank.exists():
        return []
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(
            "SELECT s.native_id, e.role, e.kind, e.text, e.tool_name, s.state FROM events e "
            "JOIN sessions s ON s.id = e.session_id WHERE s.harness = ? AND s.bank_id = ? "
            "AND s.parent_native_id IS NULL ORDER BY s.started_at, s.id, e.seq",
            (harness, "coding-agent::demo-repo")).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def _identities(bank: Path, harness: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT s.native_id, s.bank_id, e.seq, e.uid, e.content_hash FROM events e "
            "JOIN sessions s ON s.id = e.session_id WHERE s.harness = ? ORDER BY s.native_id, e.seq",
            (harness,)).fetchall()
    finally:
        conn.close()


def _unquote(text: str) -> str:
    return text.strip().strip('"')


def _transcript_gaps(events: list[tuple], expect: Expect, read_prompt: str) -> list[str]:
    """What the two turns should have left, in order; returns what is missing (empty: all there)."""
    wanted = [
        ("user", lambda e: _unquote(e[3]) == "say hi"),
        ("assistant", lambda e: e[2] == "text" and e[3].startswith(HELLO)),
        ("user", lambda e: _unquote(e[3]) == read_prompt),
    ]
    if expect.tools:
        wanted += [
            ("assistant tool_call", lambda e: e[2] == "tool_call"),
            ("tool result", lambda e: e[2] == "tool_result" and SECRET in e[3]),
        ]
    wanted += [("assistant", lambda e: e[2] == "text" and "The file says" in e[3] and SECRET in e[3])]
    missing, position = [], 0
    for label, test in wanted:
        hit = next((i for i in range(position, len(events)) if test(events[i])), None)
        if hit is None:
            missing.append(label)
        else:
            position = hit + 1
    return missing


# gptme -n answers a reply without a tool call itself, twice a turn (tools/complete.py auto_reply_hook): the fake
# model's answer to such a nudge repeats its last one, and is not a doubled event.
NUDGE = "<system>No tool call detected in last message"


def _duplicates(events: list[tuple]) -> list[tuple]:
    seen: dict[tuple, int] = {}
    for i, e in enumerate(events):
        if i and events[i - 1][2] == "meta" and events[i - 1][3].startswith(NUDGE):
            continue
        if e[1] in ("user", "assistant", "tool") and e[2] in ("text", "tool_call", "tool_result"):
            key = (e[1], e[2], _unquote(e[3]))
            seen[key] = seen.get(key, 0) + 1
    return [k for k, n in seen.items() if n > 1]


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_two_turns_are_captured_live_and_by_a_clean_scan(name: str, tmp_path: Path, llm: FakeLLM) -> None:
    agent, expect = realagents.AGENTS[name], EXPECT[name]
    try:
        realagents.install(agent)
    except Exception as exc:  # the registry is down, the version vanished: say so, do not skip
        pytest.fail(f"cannot install {agent.package}@{agent.version}: {exc}")
    daemon = Daemon(tmp_path)
    daemon.config.write_text(f'[roots]\naider = ["{tmp_path}"]\n' + FAST)
    home = daemon.home
    repo = realagents.make_repo(tmp_path)
    realagents.write_config(agent, home, llm.port)
    daemon.start()
    assert daemon.proc is not None
    watch = AgentFilesWatch(daemon.proc.pid, home, repo).__enter__()  # the agent's own files: never writable by us
    read_prompt = f"READ_FILE {repo / 'notes.txt'}"
    try:
        for args in (realagents.prompt_args(agent, "say hi", home=home),
                     realagents.prompt_args(agent, read_prompt, resume=True, home=home)):
            result = realagents.run(agent, args, cwd=repo, home=home, port=llm.port)
            assert result.returncode == 0, f"{name} exited {result.returncode}: {result.stderr[-2000:]}"
        try:
            wait_for(lambda: not _transcript_gaps(_events(daemon.bank, expect.harness), expect, read_prompt), 20,
                     f"{name}'s two turns in the bank")
        except AssertionError as exc:  # say what the bank holds, what is missing, what the service did
            events = _events(daemon.bank, expect.harness)
            raise AssertionError(f"{exc}\nmissing: {_transcript_gaps(events, expect, read_prompt)}\n"
                                 f"bank: {events}\nstore: {realagents.store(agent, home, repo)}\n"
                                 f"service log:\n{daemon.log.read_text()[-4000:]}") from None
        live = _events(daemon.bank, expect.harness)
        assert len({e[0] for e in live}) == expect.sessions, live
        assert _duplicates(live) == []
        # The agent has exited: a clean scan of its store into a fresh bank is the reference, and the
        # live bank must reach exactly it (records written after the last reply, such as opencode's
        # step-finish part, arrive with the next event or poll).
        clean = tmp_path / "clean.sqlite"
        env = {**realagents.agent_env(agent, home, llm.port), "HOME": str(home)}
        scan(home, clean, (expect.harness,), env=env, extra_roots={"aider": [tmp_path]})
        reference = _identities(clean, expect.harness)
        _wait_equal(daemon, expect.harness, reference, "the live bank to equal a clean scan")
        if expect.kill:
            _kill_mid_turn(agent, expect, daemon, repo, llm)
            # What the killed agent left is in the bank once: exactly what a clean scan reads now.
            after = tmp_path / "clean-after-kill.sqlite"
            scan(home, after, (expect.harness,), env=env, extra_roots={"aider": [tmp_path]})
            reference = _identities(after, expect.harness)
            _wait_equal(daemon, expect.harness, reference, "the live bank to equal a clean scan after the kill")
            assert _duplicates(_events(daemon.bank, expect.harness)) == []
        watch.__exit__()
        assert watch.samples > 10 and watch.offenders == set(), watch.offenders
    finally:
        watch.__exit__()
        try:
            if daemon.proc is not None:
                assert daemon.stop() == 0, daemon.log.read_text()[-3000:]
        finally:
            realagents.kill_leftovers(home)  # the service is stopped: what is left with this HOME is the agent's


def _wait_equal(daemon: Daemon, harness: str, reference: list[tuple], what: str) -> None:
    try:
        wait_for(lambda: _identities(daemon.bank, harness) == reference, 10, what)
    except AssertionError as exc:  # say what differs
        live = _identities(daemon.bank, harness)
        conn = sqlite3.connect(f"file:{daemon.bank}?mode=ro", uri=True)
        extra = [conn.execute("SELECT role, kind, substr(text, 1, 120), meta FROM events WHERE uid = ?",
                              (row[3],)).fetchone() for row in sorted(set(live) - set(reference))]
        conn.close()
        raise AssertionError(f"{exc}\nonly live: {sorted(set(live) - set(reference))}\nthose events: {extra}\n"
                             f"only in the clean scan: {sorted(set(reference) - set(live))}\n"
                             f"service log:\n{daemon.log.read_text()[-3000:]}") from None


def _kill_mid_turn(agent: realagents.Agent, expect: Expect, daemon: Daemon, repo: Path, llm: FakeLLM) -> None:
    """A third turn that the model answers slowly; the agent is killed while it waits."""
    prompt = "SLOW 20 a turn that never finishes"
    proc = realagents.popen(agent, realagents.prompt_args(agent, prompt, resume=True, home=daemon.home),
                            repo, daemon.home, llm.port)
    try:
        wait_for(lambda: any(prompt in e[3] for e in _events(daemon.bank, expect.harness)), expect.prompt_after,
                 "the third prompt in the bank")
        time.sleep(1.0)  # the service's process check (every 0.3 s here) sees the agent at work
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    states = lambda: {e[5] for e in _events(daemon.bank, expect.harness) if prompt in e[3]}  # noqa: E731
    wait_for(lambda: states() & {"abandoned", "ended"}, 10, "the killed session to be marked")
    assert states() <= {"abandoned", "ended"}
