"""Never touch what is not ours: agents' stores are read without a byte changed or a file created beside
them (SQLite -wal and -shm included), also where their directory is read-only; a file at --bank that is
not a harvester bank is refused untouched; a bank this user cannot write, or that a newer harvester wrote,
is still readable; scan's reader processes do not outlive it.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import pytest

from harvester.bank.migrations import MIGRATIONS
from harvester.bank.sqlite import APPLICATION_ID
from tests.daemon import AgentFilesWatch, wait_for
from tests.helpers import ClaudeSession, events_of
from tests.machine import harvester_cli, harvester_env, lay_out_every_store

SQLITE_SUFFIXES = (".db", ".sqlite", ".vscdb")
HOLD = """
import sqlite3, sys, time
conns = []
for path in sys.argv[1:]:
    conn = sqlite3.connect(path)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # an agent at work: -wal and -shm exist
    conns.append(conn)
print("holding", flush=True)
time.sleep(600)
"""


def snapshot(root: Path) -> dict[str, tuple]:
    """Every file under ``root``: size, mtime and content hash (what "changed nothing" means)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            st = path.stat()
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def databases(home: Path) -> list[Path]:
    """The agents' SQLite databases (not a store of that name that is encrypted: Trae's database.db)."""
    return sorted(p for p in home.rglob("*") if p.suffix in SQLITE_SUFFIXES and p.is_file()
                  and p.read_bytes()[:16] == b"SQLite format 3\x00")


def to_wal(paths: list[Path]) -> None:
    for path in paths:
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.close()  # the last connection checkpoints and removes -wal and -shm


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    lay_out_every_store(tmp_path / "home")
    repositories = sorted({str(p.parent) for p in (tmp_path / "home" / "src").rglob(".aider.chat.history.md")})
    (tmp_path / "config.toml").write_text("[roots]\naider = " + orjson.dumps(repositories).decode() + "\n")
    return tmp_path


@pytest.fixture
def holder(machine: Path) -> Iterator[subprocess.Popen]:
    """Every SQLite store in WAL mode and held open by another process, as by a running agent."""
    stores = databases(machine / "home")
    to_wal(stores)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, *map(str, stores)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    assert all(Path(f"{p}-shm").exists() and Path(f"{p}-wal").exists() for p in stores)
    yield proc
    proc.kill()
    proc.wait()


def _sqlite_harnesses(status: dict) -> set[str]:
    return {h["name"] for h in status["harnesses"] if h["sessions"] and any(
        r.endswith(SQLITE_SUFFIXES) or "sqlite" in r for r in h["roots"])}


@pytest.mark.parametrize("mode", ["rollback journal", "WAL, no side files"])
def test_scan_and_a_minute_of_run_change_nothing_in_any_agent_directory(machine: Path, mode: str) -> None:
    home = machine / "home"
    stores = databases(home)
    assert len(stores) >= 8, stores  # opencode, kilo, cline, cursor-cli x2, cursor x3, devin, dcode, openclaw
    if mode.startswith("WAL"):
        to_wal(stores)  # the riskiest case: a plain read-only open creates -wal and -shm here
    before = snapshot(home)
    scanned = harvester_cli(machine, "scan", "--json")
    assert scanned.returncode == 0, scanned.stderr
    assert snapshot(home) == before
    config = machine / "config.toml"
    config.write_text(config.read_text() + "\n[timings]\npoll_seconds = 0.2\nunfinished_seconds = 0.5\n"
                      "reconcile_minutes = 0.05\nheartbeat_seconds = 1\n")
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "run"], env=harvester_env(machine), cwd=machine,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(60 if mode.startswith("WAL") else 20)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    assert snapshot(home) == before
    status = orjson.loads(harvester_cli(machine, "status", "--json").stdout)
    assert all(h["sources_unreadable"] == 0 and h["sources_failed"] == 0 for h in status["harnesses"])


def test_stores_held_open_by_their_agent_are_read_without_touching_wal_or_shm(machine: Path,
                                                                               holder: subprocess.Popen) -> None:
    home = machine / "home"
    before = snapshot(home)
    scanned = harvester_cli(machine, "scan", "--json")
    assert scanned.returncode == 0, scanned.stderr
    config = machine / "config.toml"
    config.write_text(config.read_text() + "\n[timings]\npoll_seconds = 0.2\nunfinished_seconds = 0.5\n")
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "run"], env=harvester_env(machine), cwd=machine,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Nothing of an agent's directory is open for writing, nor mapped writable (-shm), in the service.
        with AgentFilesWatch(proc.pid, home) as watch:
            time.sleep(10)
        assert watch.samples > 20 and watch.offenders == set(), watch.offenders
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    assert snapshot(home) == before
    status = orjson.loads(harvester_cli(machine, "status", "--json").stdout)
    rows = {h["name"]: h for h in status["harnesses"]}
    for name in ("opencode", "kilo", "cline", "cursor-cli", "cursor", "devin", "dcode", "openclaw"):
        assert rows[name]["sessions"] > 0 and rows[name]["sources_unreadable"] == 0, rows[name]


def _read_only(paths: list[Path], command: list[str]) -> list[str]:
    """``command`` run where ``paths`` are read-only: a read-only bind mount in a private mount namespace
    as root (where permissions bind nothing), plain permissions otherwise."""
    if os.geteuid() != 0:
        for path in paths:
            for p in [path, *path.rglob("*")]:
                p.chmod(p.stat().st_mode & ~0o222)
        return command
    mounts = " && ".join(f"mount --bind {p} {p} && mount -o remount,bind,ro {p} {p}" for p in map(str, paths))
    return ["unshare", "-m", "sh", "-c", f'{mounts} && exec "$0" "$@"', *command]


def test_stores_in_a_read_only_directory_are_read(machine: Path) -> None:
    home = machine / "home"
    to_wal(databases(home))
    before = snapshot(home)
    command = _read_only([home], [sys.executable, "-m", "harvester", "scan", "--json"])
    scanned = subprocess.run(command, env=harvester_env(machine), cwd=machine, capture_output=True, text=True,
                             timeout=120)
    assert scanned.returncode == 0, scanned.stderr
    assert snapshot(home) == before
    status = orjson.loads(harvester_cli(machine, "status", "--json").stdout)
    rows = {h["name"]: h for h in status["harnesses"]}
    for name in ("opencode", "kilo", "cline", "cursor-cli", "cursor", "devin", "dcode", "openclaw", "claude-code"):
        assert rows[name]["sessions"] > 0 and rows[name]["sources_unreadable"] == 0, rows[name]


# --- the bank: ours, or refused ----------------------------------------------------------------------------

def _file_facts(path: Path) -> tuple:
    st = path.stat()
    siblings = sorted(p.name for p in path.parent.iterdir())
    return st.st_size, st.st_mtime_ns, st.st_mode, hashlib.sha256(path.read_bytes()).hexdigest(), siblings


@pytest.mark.parametrize("kind", ["another program's database", "not SQLite at all"])
def test_a_bank_path_that_is_not_a_harvester_bank_is_refused_untouched(tmp_path: Path, kind: str) -> None:
    other = tmp_path / "theirs" / "app.db"
    other.parent.mkdir()
    if kind.startswith("another"):
        conn = sqlite3.connect(other)
        conn.executescript("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine'); PRAGMA user_version = 3;")
        conn.close()
        other.chmod(0o644)
    else:
        other.write_text("just some text\n" * 20)
    before = _file_facts(other)
    for command in (["scan"], ["status"], ["sessions"]):
        result = subprocess.run([sys.executable, "-m", "harvester", "--bank", str(other), *command],
                                env=harvester_env(tmp_path), capture_output=True, text=True, timeout=60)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert "is not a harvester bank" in result.stderr and "was not changed" in result.stderr
        assert _file_facts(other) == before


def test_banks_are_stamped_and_a_bank_from_before_the_stamp_is_still_ours(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    conn = sqlite3.connect(bank)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.execute("PRAGMA application_id = 0")  # as every bank was written before this version
    conn.close()
    assert harvester_cli(tmp_path, "sessions", "--json").returncode == 0
    assert harvester_cli(tmp_path, "scan").returncode == 0
    conn = sqlite3.connect(bank)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()


def test_a_bank_written_by_a_newer_harvester_is_refused_for_writing_and_read_read_only(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    conn = sqlite3.connect(bank)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    before = _file_facts(bank)
    scanned = harvester_cli(tmp_path, "scan")
    assert scanned.returncode == 1 and "written by a newer harvester" in scanned.stderr, scanned.stderr
    listed = harvester_cli(tmp_path, "sessions", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["native_id"] for r in orjson.loads(listed.stdout)] == [s.id]
    assert harvester_cli(tmp_path, "show", s.id).returncode == 0
    assert _file_facts(bank)[:4] == before[:4]


def test_a_bank_this_user_cannot_write_can_still_be_read(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "banks" / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(2))
    env = {**harvester_env(tmp_path), "HARVESTER_BANK": str(bank)}
    assert subprocess.run([sys.executable, "-m", "harvester", "scan"], env=env, timeout=60).returncode == 0
    assert not Path(f"{bank}-wal").exists() or Path(f"{bank}-wal").stat().st_size >= 0
    before = snapshot(bank.parent)
    for command in (["sessions", "--json"], ["show", s.id], ["search", "module"], ["status", "--json"]):
        run = _read_only([bank.parent], [sys.executable, "-m", "harvester", *command])
        result = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (command, result.stderr)
        assert "readonly database" not in result.stderr
    assert "module 1" in result.stdout or "claude-code" in result.stdout
    assert snapshot(bank.parent) == before


def test_killing_scan_kills_its_second_process(tmp_path: Path) -> None:
    """Before, `kill -9` of a scan left `spawn_main` and `resource_tracker` behind for ever."""
    home = tmp_path / "home"
    for n in range(12):  # past PARALLEL_BYTES (32 MB): the scan starts a second process
        s = ClaudeSession(home, f"/work/app{n}")
        s.write(*s.conversation(5000))
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "scan"], env=harvester_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    wait_for(lambda: any("harvester.capture.second" in " ".join(_cmdline(c)) for c in _children(parent)), 60,
             "the second process")
    children = _children(parent)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _, alive = psutil.wait_procs(children, timeout=5)
    # A zombie has exited: it waits only for whoever inherited it to reap it (in a container, maybe nobody).
    running = [c for c in alive if _status(c) not in (psutil.STATUS_ZOMBIE, "gone")]
    assert running == [], [_cmdline(c) for c in running]


def _status(proc: psutil.Process) -> str:
    try:
        return proc.status()
    except psutil.NoSuchProcess:
        return "gone"


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:  # ended meanwhile (a zombie not reaped yet, on a loaded machine)
        return []


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def test_what_the_scan_read_is_in_the_bank(tmp_path: Path) -> None:
    """The read-only and refusal paths above must not cost the ordinary case: a new bank, created 0600."""
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    bank = tmp_path / "bank.sqlite"
    assert bank.stat().st_mode & 0o777 == 0o600
    assert len(events_of(bank, s.id)) == 2
