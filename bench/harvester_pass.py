"""One harvester backfill of a generated home, in a process of its own: what bench_backfill.py times.

    python bench/harvester_pass.py HOME WORK_DIR [--no-archive]

Imports Claude Code, Codex and opencode history under ``HOME`` into a new bank in ``WORK_DIR`` exactly as
bench/bench_scan.py does (``Ingestor.scan``, the raw archive on, redaction always on, the second ingesting
process it starts for large scans), then prints one JSON line: the scan's seconds, events, problems,
bytes read, and this process's peak RSS. A process of its own, so that its peak memory and CPU time (and
its reader's) are its own and not the benchmark's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvester import log
from harvester.bank import open_bank
from harvester.bank.sqlite import SqliteBank
from harvester.capture import workers
from harvester.capture.archive import archive_dir
from harvester.capture.ingest import Ingestor
from harvester.parsers import HARNESSES

AGENTS = ("claude-code", "codex", "opencode")
LOCK_DIR = "HARVESTER_BENCH_LOCK_DIR"  # where each process writes how long it held the bank's write lock


def _time_the_write_lock() -> None:
    """Count how long this process holds the bank's write lock: from BEGIN IMMEDIATE taken to COMMIT done,
    each transaction's seconds added to a file of this process's own (the second ingesting process imports
    this module first, see below, so it counts its own)."""
    import atexit
    import contextlib

    transaction = SqliteBank.transaction
    held = [0.0, 0]

    @contextlib.contextmanager
    def timed(self: SqliteBank):  # type: ignore[no-untyped-def]
        inner = getattr(self, "_group", None) is not None  # a savepoint in a group: the group's time counts
        with transaction(self) as conn:
            started = time.perf_counter()
            yield conn
        if not inner:
            held[0] += time.perf_counter() - started  # the body and its COMMIT
            held[1] += 1

    def written() -> None:  # once, at exit (a file a transaction cost ~1 ms of CPU on a loaded machine)
        where = os.environ.get(LOCK_DIR)
        if where and held[1]:
            with open(os.path.join(where, f"{os.getpid()}.json"), "w") as out:
                json.dump({"seconds": held[0], "transactions": held[1]}, out)

    atexit.register(written)
    _time_the_write_lock.written = written  # type: ignore[attr-defined]
    SqliteBank.transaction = timed  # type: ignore[method-assign]


_time_the_write_lock()
# The scan's second process is a fresh interpreter (harvester/capture/workers.py): it imports this module first, so
# that it times its own transactions too.
workers.CHILD_CODE = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
                      f"import harvester_pass; {workers.CHILD_CODE}")


def backfill(home: Path, work: Path, archive: bool = True) -> dict:
    bank_path = work / "bank.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{bank_path}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(archive_dir(bank_path), ignore_errors=True)
    locks = work / "write-lock"
    shutil.rmtree(locks, ignore_errors=True)
    locks.mkdir()
    os.environ[LOCK_DIR] = str(locks)
    bank = open_bank(bank_path, archive=archive)
    try:
        started = time.perf_counter()
        with Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
            # Only HOME: the agents' roots are then the tree's, whatever this machine's XDG_* say.
            report = ingestor.scan([HARNESSES[name] for name in AGENTS], {"HOME": str(home)}, home)
        seconds = time.perf_counter() - started
    finally:
        bank.close()
    written = getattr(_time_the_write_lock, "written", None)
    if written is not None:
        written()  # this process's own, now (the second process wrote its own when it ended)
    return {
        "seconds": seconds,
        "events": report.events_added,
        "problems": sum(h.problems + h.unreadable + h.failed for h in report.harnesses.values()),
        "bytes_read": report.bytes_read,
        "per_agent": {name: h.events_added for name, h in report.harnesses.items()},
        "vmhwm_kib": peak_rss_kib(),
        "lock_seconds": sum(json.loads(p.read_text())["seconds"] for p in locks.glob("*.json")),
        "lock_share": sum(json.loads(p.read_text())["seconds"] for p in locks.glob("*.json")) / seconds,
    }


def peak_rss_kib() -> int:
    """This process's peak resident size since its exec (VmHWM). Not ru_maxrss: that carries the
    high-water mark of whatever process forked this one."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmHWM:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("home", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--no-archive", action="store_true")
    args = parser.parse_args()
    log.configure("warning")  # as `harvester scan` runs: structlog unconfigured would print every commit
    args.work.mkdir(parents=True, exist_ok=True)
    print(json.dumps(backfill(args.home, args.work, archive=not args.no_archive)))


if __name__ == "__main__":
    main()
