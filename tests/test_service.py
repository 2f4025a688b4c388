"""The capture service (`harvester run`) in a subprocess over a temporary HOME."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from tests.daemon import FAST, Daemon, wait_for
from tests.helpers import ClaudeSession, bank_rows, claude_dir, scan


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path)
    yield d
    if d.proc is not None and d.proc.poll() is None:
        d.proc.kill()
        d.proc.wait()


def test_appends_to_live_sessions_reach_the_bank_within_two_seconds(daemon: Daemon) -> None:
    claude = ClaudeSession(daemon.home, "/work/app")
    claude.write(claude.user("first question"))
    codex_day = daemon.home / ".codex" / "sessions" / "2026" / "11" / "29"
    codex_day.mkdir(parents=True)
    daemon.start()
    wait_for(lambda: "first question" in daemon.texts(), 5, "the startup reconcile")
    for i in range(3):
        claude.write(claude.assistant(f"live answer {i}"))
        assert wait_for(lambda i=i: f"live answer {i}" in daemon.texts(), 2, "a Claude append") < 2
    from tests.test_exactly_once import _codex_lines

    rollout = codex_day / "rollout-2026-11-29T10-00-00-019a0000-0000-7000-8000-0000000000aa.jsonl"
    rollout.write_bytes(_codex_lines("019a0000-0000-7000-8000-0000000000aa", 1))
    assert wait_for(lambda: "reply 0" in daemon.texts(), 2, "a new Codex rollout") < 2
    with open(rollout, "ab") as f:
        f.write(_codex_lines("019a0000-0000-7000-8000-0000000000aa", 2).split(b"\n", 6)[-1])
    assert wait_for(lambda: "reply 1" in daemon.texts(), 2, "a Codex append") < 2
    assert daemon.stop() == 0
    # Not on a terminal (journald, launchd log files): one JSON object per log line.
    records = [orjson.loads(line) for line in daemon.log.read_bytes().splitlines() if line.strip()]
    assert {"service starting", "service running", "imported", "service stopped"} <= {
        r["event"] for r in records
    }
    assert all("timestamp" in r and "level" in r for r in records)


def test_a_harness_root_created_after_start_is_picked_up(daemon: Daemon) -> None:
    daemon.start()  # no ~/.claude yet: the service watches the nearest existing parent
    status = orjson.loads(daemon.cli("status", "--json").stdout)
    assert status["service"]["running"] is True and status["service"]["pid"] == daemon.proc.pid
    s = ClaudeSession(daemon.home, "/work/late")
    s.write(*s.conversation(1))
    # Deadlines, not timings (bench/bench_service.py measures those): a loaded machine needs the margin.
    wait_for(lambda: len(daemon.texts()) == 2, 10, "sessions of an agent installed after start")
    s.write(*s.conversation(1, start=1))
    wait_for(lambda: len(daemon.texts()) == 4, 5, "appends to it")
    status = orjson.loads(daemon.cli("status", "--json").stdout)
    assert str(daemon.home / ".claude" / "projects") in status["service"]["watched"]
    assert daemon.stop() == 0


def test_half_written_line_completed_later_is_imported_once(daemon: Daemon) -> None:
    s = ClaudeSession(daemon.home, "/work/app")
    s.write(s.user("hello"))
    daemon.start()
    wait_for(lambda: daemon.texts() == ["hello"], 5, "the first line")
    line = s.assistant("a reply written in two halves")
    s.write(line[:30])
    time.sleep(0.5)
    assert daemon.texts() == ["hello"]
    s.write(line[30:])
    wait_for(lambda: len(daemon.texts()) == 2, 2, "the completed line")
    time.sleep(0.5)
    assert daemon.texts() == ["hello", "a reply written in two halves"]
    assert daemon.stop() == 0


def _fake_agent(daemon: Daemon, name: str, cwd: Path) -> subprocess.Popen:
    """A process that looks like the agent to the service: its executable is called `name`."""
    bin_dir = daemon.tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    if not exe.exists():
        exe.symlink_to("/bin/sleep")
    return subprocess.Popen([str(exe), "300"], cwd=cwd)


@pytest.mark.parametrize(("finished", "expected"), [(True, "ended"), (False, "abandoned")])
def test_session_is_ended_or_abandoned_when_its_agent_exits(
    daemon: Daemon, finished: bool, expected: str
) -> None:
    repo = daemon.tmp / "repo"
    repo.mkdir()
    daemon.start()
    agent = _fake_agent(daemon, "claude", repo)
    try:
        time.sleep(0.2)
        s = ClaudeSession(daemon.home, str(repo), live=True)
        lines = [s.user("do the thing")]
        if finished:
            line = orjson.loads(s.assistant("done"))
            line["message"]["stop_reason"] = "end_turn"
            lines.append(orjson.dumps(line) + b"\n")
        s.write(*lines)
        # Bounds, not speeds: a fresh clone's CI installs the agents beside the tests, and a first start there
        # compiles every module (it took over 5 s once).
        wait_for(lambda: daemon.state(s.id) == "live", 30, "the session to be live")
        time.sleep(1.5)  # past recent_minutes: only the agent process keeps it live now
        assert daemon.state(s.id) == "live"
    finally:
        agent.kill()
        agent.wait()
    wait_for(lambda: daemon.state(s.id) == expected, 15, f"the session to be {expected}")
    assert daemon.stop() == 0


def test_kill_9_while_an_agent_writes_loses_nothing_and_duplicates_nothing(daemon: Daemon) -> None:
    sessions = [ClaudeSession(daemon.home, f"/work/p{i}") for i in range(3)]
    for s in sessions:
        s.write(s.user("start"))
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            s = sessions[n % 3]
            s.write(s.assistant(f"streamed {n} " + "x" * (n % 500)))
            n += 1
            time.sleep(0.002)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        daemon.start()
        time.sleep(1.0)
        assert daemon.stop(signal.SIGKILL) == -signal.SIGKILL
        time.sleep(0.3)
        daemon.start()
        time.sleep(1.0)
    finally:
        stop.set()
        thread.join()
    clean = daemon.tmp / "clean.sqlite"
    scan(daemon.home, clean)
    wait_for(lambda: len(bank_rows(daemon.bank)) == len(bank_rows(clean)), 5, "the service to catch up")
    assert daemon.stop() == 0
    assert bank_rows(daemon.bank) == bank_rows(clean)


def test_changes_while_the_service_was_down_are_imported_at_start(daemon: Daemon) -> None:
    s = ClaudeSession(daemon.home, "/work/app")
    s.write(*s.conversation(2))
    daemon.start()
    wait_for(lambda: len(daemon.texts()) == 4, 5, "the first import")
    assert daemon.stop() == 0
    s.write(*s.conversation(3, start=2))
    other = ClaudeSession(daemon.home, "/work/other")
    other.write(*other.conversation(1))
    daemon.start()
    wait_for(lambda: len(daemon.texts()) == 12, 5, "the startup reconcile")
    assert daemon.stop() == 0


def test_second_instance_is_refused_and_sigterm_is_prompt(daemon: Daemon) -> None:
    daemon.start()
    second = daemon.cli("run")
    assert second.returncode == 1
    assert f"already running (pid {daemon.proc.pid}" in second.stderr
    started = time.monotonic()
    assert daemon.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 2
    status = orjson.loads(daemon.cli("status", "--json").stdout)
    assert status["service"]["running"] is False


def test_excluded_directories_are_never_captured(daemon: Daemon) -> None:
    daemon.config.write_text('exclude = ["/work/secret"]\n' + FAST)
    kept = ClaudeSession(daemon.home, "/work/app")
    kept.write(*kept.conversation(1))
    hidden = ClaudeSession(daemon.home, "/work/secret/client")
    hidden.write(*hidden.conversation(1))
    daemon.start()
    wait_for(lambda: len(daemon.texts()) == 2, 5, "the import")
    hidden.write(*hidden.conversation(1, start=1))
    kept.write(*kept.conversation(1, start=1))
    wait_for(lambda: len(daemon.texts()) == 4, 2, "the appends")
    assert daemon.stop() == 0
    assert {r[0] for r in daemon.query("SELECT native_id FROM sessions")} == {kept.id}
    assert not any("secret" in t for t in daemon.texts())
    assert claude_dir(daemon.home, "/work/secret/client").exists()  # nothing was touched there


def test_a_session_its_store_says_ended_stays_ended_until_written_to_again(daemon: Daemon) -> None:
    """Copilot CLI writes `session.shutdown`: the service must not reopen the session it just imported."""
    sid = "3f2b9c1e-8d4a-4e6b-9f0c-1a2b3c4d5e6f"
    state_dir = daemon.home / ".copilot" / "session-state"
    state_dir.mkdir(parents=True)
    fixture = Path(__file__).parent.parent / "fixtures" / "copilot_cli" / "hand" / "session-state" / sid
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    lines = [orjson.dumps({**orjson.loads(line), "timestamp": now}) + b"\n"  # a session happening now
             for line in (fixture / "events.jsonl").read_bytes().splitlines()]
    shutdown = next(i for i, line in enumerate(lines) if b'"type":"session.shutdown"' in line)
    (state_dir / sid).mkdir()
    events = state_dir / sid / "events.jsonl"
    events.write_bytes(b"".join(lines[:shutdown]))
    daemon.start()
    wait_for(lambda: daemon.state(sid) == "live", 5, "the session to be imported live")
    with open(events, "ab") as f:
        f.write(lines[shutdown])
    wait_for(lambda: daemon.state(sid) == "ended", 3, "session.shutdown to end it")
    time.sleep(1.5)  # several unfinished-session rescans and liveness judgements later
    assert daemon.state(sid) == "ended"
    resumed = orjson.loads(next(line for line in lines if b'"type":"user.message"' in line))
    resumed["id"] = "0b5e6a3c-0000-4000-8000-00000000beef"
    resumed["data"]["content"] = "one more thing"
    with open(events, "ab") as f:
        f.write(orjson.dumps(resumed) + b"\n")
    wait_for(lambda: daemon.state(sid) == "live", 3, "a new message to make it live again")
    assert daemon.stop() == 0


def test_a_change_to_a_related_document_alone_reads_its_source(daemon: Daemon) -> None:
    """Cline finishes a task by writing ui_messages.json, beside the history it belongs to; the
    unfinished-session rescan is far off here, so only the file event can bring the change in."""
    daemon.config.write_text(FAST.replace("unfinished_seconds = 0.3", "unfinished_seconds = 600"))
    tree = Path(__file__).parent.parent / "fixtures" / "cline" / "hand" / "legacy"
    shutil.copytree(tree, daemon.home / ".cline" / "data")
    task = daemon.home / ".cline" / "data" / "tasks" / "1745000000000"

    def last_turn() -> str | None:
        rows = daemon.query("SELECT meta FROM sessions WHERE native_id = '1745000000000'")
        return orjson.loads(rows[0][0]).get("last_turn") if rows and rows[0][0] else None

    daemon.start()
    wait_for(lambda: last_turn() == "aborted", 5, "the task to be imported")
    time.sleep(0.5)  # past the startup's own re-read of unfinished sessions
    ui = orjson.loads((task / "ui_messages.json").read_bytes())
    ui.append({"ts": ui[-1]["ts"] + 1000, "type": "say", "say": "completion_result", "text": "Done."})
    (task / "ui_messages.json").write_bytes(orjson.dumps(ui))
    assert wait_for(lambda: last_turn() == "complete", 2, "the completion to be read") < 2
    assert daemon.stop() == 0


@pytest.mark.parametrize("then", ["nothing", "another command makes a bank there"])
def test_a_bank_deleted_under_the_service_is_made_again_and_status_says_so(daemon: Daemon, then: str) -> None:
    """rm -rf of the data directory: the service, which held the bank open, notices that the file at the bank's
    path is gone (or another one), makes the bank and its archive again, re-scans every agent's store into it,
    and forwarding (its own thread and bank connection) follows it there. What is not history is carried over:
    this machine's identity in a team bank, and the recall key that sealed the answers the agents recorded."""
    from tests.hindsight_fake import FakeHindsight

    fake = FakeHindsight().start()
    try:
        data = daemon.tmp / "data"
        daemon.bank = data / "bank.sqlite"
        daemon.config.write_text(FAST + f'\n[sinks.hindsight]\nurl = "{fake.url}"\n')
        s = ClaudeSession(daemon.home, "/work/app")
        s.write(*s.conversation(1))
        daemon.start()
        wait_for(lambda: len(daemon.texts()) == 2, 10, "the first import")
        with sqlite3.connect(daemon.bank) as conn:  # this machine's identity in a team bank (team/outbox.py)
            conn.execute("INSERT INTO bank_facts (key, value) VALUES ('team_machine_id', 'machine-4417')")
        conn.close()
        [(key,)] = daemon.query("SELECT value FROM bank_facts WHERE key = 'recall_key'")
        shutil.rmtree(data)
        if then != "nothing":
            assert daemon.cli("sessions").returncode == 0  # opens (makes) a bank at the path: empty
        s.write(*s.conversation(1, start=1))
        wait_for(lambda: len(daemon.texts()) == 4, 20, "the bank made again, with all the agent's store holds")
        assert (data / "bank.archive").is_dir()
        assert daemon.query("SELECT value FROM bank_facts WHERE key = 'team_machine_id'") == [("machine-4417",)]
        wait_for(lambda: daemon.query("SELECT state FROM sink_documents") == [("sent",)], 20,
                 "forwarding from the new bank")
        assert daemon.proc.poll() is None
        status = orjson.loads(daemon.cli("status", "--json").stdout)
        again = status["service"]["bank_made_again"]
        assert again["why"] in ("deleted", "replaced") and again["at"] and again["pid"] == daemon.proc.pid
        text = daemon.cli("status").stdout
        assert "made again" in text and "re-scanned" in text, text
        # The answers the old bank sealed (in the agents' stores, as they recorded them) are still its own: an
        # echo read into the new bank is recall, kept out of search, as it was in the old one.
        from harvester.recall.frame import frame
        from harvester.recall.shown import md

        answer = frame(md("the wombat plan, as harvester answered it"), "search", key=bytes.fromhex(key))
        echo = ClaudeSession(daemon.home, "/work/app")
        echo.write(echo.user("the brief I pasted:\n" + answer), echo.assistant("the wombat, then"))
        wait_for(lambda: "the wombat, then" in daemon.texts(), 10, "the echo")
        assert daemon.query("SELECT recall FROM events e JOIN sessions s ON s.id = e.session_id WHERE s.native_id = ? "
                            "ORDER BY e.seq", echo.id) == [(1,), (0,)]
        assert daemon.stop() == 0
    finally:
        fake.stop()


def test_a_bank_that_cannot_be_made_again_stops_the_service_with_an_error(daemon: Daemon) -> None:
    """Its login unit restarts it on a non-zero exit (Restart=on-failure, KeepAlive/SuccessfulExit): a service
    that went on failing every import, for ever, would never be."""
    data = daemon.tmp / "data"
    daemon.bank = data / "bank.sqlite"
    s = ClaudeSession(daemon.home, "/work/app")
    s.write(*s.conversation(1))
    daemon.start()
    wait_for(lambda: len(daemon.texts()) == 2, 10, "the first import")
    shutil.rmtree(data)
    data.write_text("a file where the bank's directory was\n")  # no bank can be made under it
    wait_for(lambda: daemon.proc.poll() is not None, 20, "the service to stop")
    assert daemon.proc.returncode not in (0, None)
    daemon.proc = None
    assert "bank_cannot_be_made_again" in daemon.log.read_text()


def test_a_bank_made_again_under_the_service_keeps_what_was_forgotten_out(daemon: Daemon) -> None:
    """forget is for good (issue 23 item 5) also when the service makes its bank again (item 8): the agent's file
    still holds the forgotten session, and a fork copies its records, but the re-scan into the new bank brings
    neither back."""
    word = "qzplumzebra4417"
    data = daemon.tmp / "data"
    daemon.bank = data / "bank.sqlite"
    forgotten = ClaudeSession(daemon.home, "/work/app")
    lines = [forgotten.user(f"the staging password is {word}"), forgotten.assistant("noted")]
    forgotten.write(*lines)
    kept = ClaudeSession(daemon.home, "/work/app")
    kept.write(*kept.conversation(1))
    daemon.start()
    wait_for(lambda: len(daemon.texts()) == 4, 10, "the first import")
    assert daemon.cli("forget", forgotten.id, "--yes").returncode == 0
    wait_for(lambda: len(daemon.texts()) == 2, 10, "the forget")
    shutil.rmtree(data)
    kept.write(*kept.conversation(1, start=1))

    def kept_texts() -> list[str]:
        return [t for (t,) in daemon.query("SELECT e.text FROM events e JOIN sessions s ON s.id = e.session_id "
                                           "WHERE s.native_id = ? ORDER BY e.seq", kept.id)]
    wait_for(lambda: len(kept_texts()) == 4, 20, "the bank made again, with the kept session whole")
    fork = ClaudeSession(daemon.home, "/work/app")  # what claude --fork-session writes: the records, uuids kept
    fork.write(*[orjson.dumps({**orjson.loads(line), "sessionId": fork.id}) + b"\n" for line in lines],
               fork.user("the fork's own question"))
    wait_for(lambda: "the fork's own question" in daemon.texts(), 10, "the fork")
    assert not any(word in t for t in daemon.texts()), daemon.texts()
    assert daemon.query("SELECT count(*) FROM sessions WHERE native_id = ?", forgotten.id) == [(0,)]
    assert daemon.stop() == 0
