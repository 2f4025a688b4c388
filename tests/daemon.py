"""`harvester run` in a subprocess over a temporary HOME, for tests."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent

FAST = """
[timings]
debounce_ms = 20
unfinished_seconds = 0.3
recent_minutes = 0.02
idle_end_minutes = 30
reconcile_minutes = 30
poll_seconds = 0.3
heartbeat_seconds = 0.3
"""


class Daemon:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir(exist_ok=True)
        self.bank = tmp / "bank.sqlite"
        self.run_dir = tmp / "run"
        self.config = tmp / "config.toml"
        if not self.config.exists():
            self.config.write_text(FAST)
        self.proc: subprocess.Popen | None = None
        self.log = tmp / "daemon.log"

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CLAUDE_", "CODEX_", "XDG_", "HARVESTER_"))
        }
        env.update(
            HOME=str(self.home),
            HARVESTER_BANK=str(self.bank),
            HARVESTER_CONFIG=str(self.config),
            HARVESTER_RUNTIME_DIR=str(self.run_dir),
            HARVESTER_LOG_LEVEL="debug",
            PYTHONPATH=str(ROOT),
            PATH=f"{self.tmp / 'bin'}:{os.environ.get('PATH', '')}",
        )
        return env

    def start(self) -> Daemon:
        heartbeat = self.run_dir / "heartbeat.json"
        heartbeat.unlink(missing_ok=True)
        with open(self.log, "ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen([sys.executable, "-m", "harvester", "run"], env=self.env(), cwd=self.tmp,
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: heartbeat.exists() or self.proc.poll() is not None, 15, "the service to start")
        assert self.proc.poll() is None, self.log.read_text()
        return self

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=10)
        self.proc = None
        return code

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "harvester", *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=30,
        )

    def query(self, sql: str, *args: object) -> list[tuple]:
        if not self.bank.exists():
            return []
        conn = sqlite3.connect(f"file:{self.bank}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()

    def texts(self) -> list[str]:
        return [r[0] for r in self.query("SELECT text FROM events ORDER BY id")]

    def state(self, native_id: str) -> str | None:
        rows = self.query("SELECT state FROM sessions WHERE native_id = ?", native_id)
        return rows[0][0] if rows else None


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class AgentFilesWatch:
    """While it runs, samples the service process: any file under ``roots`` (the agents' HOME, a repository
    Aider writes in) that it holds open for writing, or maps writable (a SQLite -shm), is noted. Used while
    real agents run: their own files change, so "the service changed nothing" is proven by the service
    never holding a way to."""

    def __init__(self, pid: int, *roots: Path, every: float = 0.1) -> None:
        self.pid, self.roots, self.every = pid, tuple(str(r) + os.sep for r in roots), every
        self.offenders: set[str] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="agent-files-watch", daemon=True)

    def __enter__(self) -> AgentFilesWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _sample(self) -> None:
        maps = Path(f"/proc/{self.pid}/maps")
        while not self._stop.wait(self.every):
            try:
                for f in psutil.Process(self.pid).open_files():
                    # SQLite opens an existing -wal read-write even for a read-only connection (mode=ro); the
                    # read-only pager never writes through it, and the snapshot tests prove the bytes stay.
                    if f.path.startswith(self.roots) and f.mode != "r" and not (
                            f.mode == "r+" and f.path.endswith("-wal")):
                        self.offenders.add(f"open {f.mode}: {f.path}")
                if maps.exists():
                    for line in maps.read_text().splitlines():
                        fields = line.split(maxsplit=5)
                        if len(fields) == 6 and fields[5].startswith(self.roots) and "w" in fields[1]:
                            self.offenders.add(f"mapped {fields[1]}: {fields[5]}")
            except (psutil.Error, OSError):
                return  # the service is gone
            self.samples += 1
