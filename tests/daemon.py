"""`harvester run` in a subprocess over a temporary HOME, for tests."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

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
