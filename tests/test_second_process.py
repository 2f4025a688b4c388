"""A large scan's second ingesting process (harvester/capture/workers.py): the only process it adds, and one whose
death mid-scan costs nothing (what it had not answered is ingested by the first, exactly once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.config import DEFAULT_BANK_ID_TEMPLATE
from harvester.parsers import HARNESSES
from tests.daemon import wait_for
from tests.helpers import ClaudeSession, bank_rows, scan
from tests.machine import harvester_env


def _sessions(home: Path, n: int, turns: int) -> None:
    for i in range(n):
        s = ClaudeSession(home, f"/work/app-{i % 3}")
        s.write(*s.conversation(turns))


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [c for c in proc.children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE]
    except psutil.Error:
        return []


def test_a_parallel_scan_adds_one_process_and_no_other(tmp_path: Path) -> None:
    """Before, multiprocessing's spawn started a resource tracker beside the second process: a third process
    of 13 MB the scan never needed (issue 29: the process tree's memory)."""
    home = tmp_path / "home"
    _sessions(home, 24, 400)
    env = harvester_env(tmp_path) | {"HARVESTER_PARALLEL_BYTES": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "scan"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    seen: list[list[str]] = []

    def second_started() -> bool:
        children = _children(parent)
        if children:
            seen.append([" ".join(c.cmdline()) for c in children])
        return bool(children)

    try:
        wait_for(second_started, 60, "the second process")
        wait_for(lambda: proc.poll() is not None or (second_started() and len(seen) > 20), 60, "samples")
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    assert max(len(s) for s in seen) == 1, max(seen, key=len)


def test_a_second_process_killed_mid_scan_costs_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _sessions(home, 12, 60)
    inline, parallel = tmp_path / "inline.sqlite", tmp_path / "parallel.sqlite"
    expected = scan(home, inline, ("claude-code",))
    bank = open_bank(parallel)
    try:
        killed: list[int] = []
        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE, parallel_bytes=0) as ingestor:
            def kill_the_second(*_: object) -> None:
                second = ingestor._second
                if second is not None and not killed:  # at the first source done: it has others queued
                    os.kill(second._child.pid, signal.SIGKILL)
                    killed.append(second._child.pid)

            report = ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(home)}, home,
                                   on_source=kill_the_second)
    finally:
        bank.close()
    assert killed
    assert report.events_added == expected.events_added == 12 * 120
    assert sum(h.failed for h in report.harnesses.values()) == 0
    assert bank_rows(parallel) == bank_rows(inline)
