"""kill -9 at any moment loses nothing and duplicates nothing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ClaudeSession, KillPoints, bank_rows, sessions_of

ROOT = Path(__file__).resolve().parent.parent


def _scan_cmd(bank: Path) -> list[str]:
    return [sys.executable, "-m", "harvester", "--bank", str(bank), "scan", "--json"]


def _env(home: Path, parallel: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_", "XDG_", "HARVESTER_"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), HARVESTER_LOG_LEVEL="error")
    if parallel:  # however little there is to read, two processes ingest, each committing its sources
        env["HARVESTER_PARALLEL_BYTES"] = "1"
    return env


def _build_tree(home: Path) -> None:
    for i in range(12):
        s = ClaudeSession(home, f"/work/project-{i % 3}")
        for start in range(0, 1500, 100):
            s.write(*s.conversation(100, start=start))
            s.write(
                s.tool_use("Read", {"file_path": f"/work/f{start}.py"}, f"toolu_{i}_{start}"),
                s.tool_result(f"toolu_{i}_{start}", "line of code\n" * 200),
            )


def _kill_after(bank: Path, home: Path, seconds: float, parallel: bool = False) -> bool:
    """Start a scan, SIGKILL it after ``seconds``; True if it was still running."""
    proc = subprocess.Popen(
        _scan_cmd(bank), env=_env(home, parallel), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(seconds)
    alive = proc.poll() is None
    if alive:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    return alive


def _rows_so_far(bank: Path) -> int:
    """Events a killed scan left; none when it died before the bank (or its schema) was made."""
    try:
        return len(bank_rows(bank)) if bank.exists() else 0
    except sqlite3.OperationalError:  # killed during start-up: the file exists, its tables not yet
        return 0


def _sessions_without_times(bank: Path) -> list[dict]:
    volatile = ("id", "first_imported_at", "last_imported_at")
    rows = [{k: v for k, v in s.items() if k not in volatile} for s in sessions_of(bank)]
    return sorted(rows, key=lambda s: s["native_id"])


def test_sigkill_during_scan_then_rescan_equals_clean_import(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _build_tree(home)
    clean = tmp_path / "clean.sqlite"
    started = time.monotonic()
    subprocess.run(_scan_cmd(clean), env=_env(home), check=True, capture_output=True)
    clean_seconds = time.monotonic() - started
    expected = bank_rows(clean)
    assert len(expected) > 30_000

    # Killed at several independent points of a scan, each time followed by a full scan.
    kills = KillPoints((0.35, 0.55, 0.75, 0.9))
    for n, fraction in enumerate(kills):
        bank = tmp_path / f"killed-{n}.sqlite"
        if _kill_after(bank, home, clean_seconds * fraction):
            partial = _rows_so_far(bank)
            kills.landed += partial < len(expected)
        subprocess.run(_scan_cmd(bank), env=_env(home), check=True, capture_output=True)
        assert bank_rows(bank) == expected, f"kill at {fraction:.0%} of a scan"
        assert _sessions_without_times(bank) == _sessions_without_times(clean)
    assert kills.landed >= 2, "the scans finished before they could be killed: make the tree bigger"

    # Killed again and again while resuming, then finished.
    chained = tmp_path / "chained.sqlite"
    for fraction in (0.4, 0.4, 0.4):
        _kill_after(chained, home, clean_seconds * fraction)
    subprocess.run(_scan_cmd(chained), env=_env(home), check=True, capture_output=True)
    assert bank_rows(chained) == expected


def _archive_holds_every_file_once(bank: Path) -> None:
    """Each source's archived stream is the file, byte for byte: nothing lost, nothing twice."""
    from harvester.capture.archive import Archive, archive_dir

    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        archive = Archive(archive_dir(bank), readonly=True)
        assert archive.missing(conn) == []
        for source_id, path in conn.execute("SELECT id, path FROM sources"):
            epochs = [e for (e,) in conn.execute("SELECT DISTINCT epoch FROM archive_frames WHERE source_id = ? AND "
                                                 "kind = 'streams'", (source_id,))]
            assert epochs == [0], path
            kept = b"".join(raw for _, raw in archive.frames(conn, source_id, "streams", 0))
            assert kept == Path(path).read_bytes(), path
    finally:
        conn.close()


@pytest.mark.parametrize("parallel", [False, True], ids=["one-process", "two-processes"])
def test_sigkill_with_the_archive_on_then_rescan_and_reparse_equal_a_clean_import(tmp_path: Path,
                                                                                  parallel: bool) -> None:
    """Also with two processes ingesting at once (a large backfill), both committing to the bank and
    its archive: a kill takes both down at any point of either's transactions."""
    home = tmp_path / "home"
    _build_tree(home)
    clean = tmp_path / "clean.sqlite"
    started = time.monotonic()
    subprocess.run(_scan_cmd(clean), env=_env(home, parallel), check=True, capture_output=True)
    clean_seconds = time.monotonic() - started
    expected = bank_rows(clean)
    _archive_holds_every_file_once(clean)
    kills = KillPoints((0.3, 0.6, 0.85))
    for n, fraction in enumerate(kills):
        bank = tmp_path / f"killed-{n}.sqlite"
        kills.landed += _kill_after(bank, home, clean_seconds * fraction, parallel)
        subprocess.run(_scan_cmd(bank), env=_env(home, parallel), check=True, capture_output=True)
        assert bank_rows(bank) == expected, f"kill at {fraction:.0%} of a scan"
        _archive_holds_every_file_once(bank)
        reparse = [sys.executable, "-m", "harvester", "--bank", str(bank), "reparse"]
        subprocess.run(reparse, env=_env(home), check=True, capture_output=True)
        assert bank_rows(bank) == expected, "reparse after a kill"
    assert kills.landed >= 2


def test_a_reparse_killed_midway_goes_on_where_it_stood(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _build_tree(home)
    bank = tmp_path / "bank.sqlite"
    subprocess.run(_scan_cmd(bank), env=_env(home), check=True, capture_output=True)
    expected = bank_rows(bank)
    reparse = [sys.executable, "-m", "harvester", "--bank", str(bank), "reparse"]
    started = time.monotonic()
    subprocess.run(reparse, env=_env(home), check=True, capture_output=True)
    seconds = time.monotonic() - started
    proc = subprocess.Popen(reparse, env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds * 0.6)
    killed = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert bank_rows(bank) == expected  # every source either as before or rebuilt
    again = subprocess.run(reparse, env=_env(home), check=True, capture_output=True, text=True)
    assert bank_rows(bank) == expected
    assert killed, "the reparse finished before it could be killed: make the tree bigger"
    assert "carrying on a run that was stopped" in again.stdout
