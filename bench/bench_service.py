"""The capture service under load: latency, idle cost, start-up reconcile.

    python bench/bench_service.py [--appends 300] [--files 10000] [--idle 60] [--bank bench/out/bank-1000000.sqlite]

1. append -> searchable: the service runs in its own process; this process appends Claude Code
   lines (each with a unique word) to a live session, one every 50 ms, and polls the bank's
   full-text index until the word is found. Targets: p50 <= 100 ms, p99 <= 500 ms.
2. idle: 10,000 session files under watch; after the first import, CPU and RSS of the service
   (and any child) over --idle seconds. Targets: CPU <= 0.2 %, RSS <= 60 MB.
3. start-up reconcile over the same 10,000 unchanged files (a restart), beside a plain os.stat of
   every file measured in the same run. Target: <= 1.5 s.
All default timings of the service are used. ``--bank``: the service writes into a copy of that bank (from
bench/gen_bank.py; upgraded, if it is older, by the service as it opens it) instead of a new one, so that
appends land in a bank of a million events; its own sources are gone from disk, as an agent's cleanup leaves
them, and the first start marks them so.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
import psutil

ROOT = Path(__file__).resolve().parent.parent


class Daemon:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.home = work / "home"
        self.bank = work / "bank.sqlite"
        self.log = work / "service.log"
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_", "XDG_", "HARVESTER_"))}
        env.update(HOME=str(self.home), HARVESTER_BANK=str(self.bank), HARVESTER_RUNTIME_DIR=str(self.work / "run"),
                   HARVESTER_CONFIG=str(self.work / "none.toml"), PYTHONPATH=str(ROOT))
        (self.work / "none.toml").write_text("")
        return env

    def start(self) -> float:
        """Start; return seconds until its start-up reconcile is done."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "harvester", "run"], env=self.env(),
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)  # noqa: SIM115
        while True:
            for line in self.log.read_bytes()[offset:].splitlines():
                record = orjson.loads(line)
                if record.get("event") == "service running":
                    return time.monotonic() - started
            if self.proc.poll() is not None:
                raise SystemExit(f"service exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.01)

    def reconcile_seconds(self) -> float:
        """The last start-up reconcile's own measure (its log line)."""
        lines = [orjson.loads(line) for line in self.log.read_bytes().splitlines()]
        return [r["seconds"] for r in lines if r.get("event") == "reconciled"][-1]

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)


def claude_line(sid: str, cwd: str, text: str, role: str = "user") -> bytes:
    record = {"type": role, "uuid": str(uuid.uuid4()), "parentUuid": None, "sessionId": sid, "cwd": cwd,
              "version": "2.1.197", "gitBranch": "main", "timestamp": "2026-11-29T10:00:00.000Z",
              "message": {"role": role, "content": text} if role == "user" else
              {"id": f"msg_{uuid.uuid4().hex}", "role": "assistant", "model": "claude-opus-4-8",
               "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 3, "output_tokens": 9}}}
    return orjson.dumps(record) + b"\n"


def make_tree(home: Path, files: int) -> None:
    """History, as on a machine that has used an agent for a while: files last written days ago."""
    past = time.time() - 3 * 86400
    for i in range(files):
        cwd = f"/home/dev/src/project-{i % 100}"
        folder = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)
        folder.mkdir(parents=True, exist_ok=True)
        sid = str(uuid.UUID(int=i + 1))
        path = folder / f"{sid}.jsonl"
        path.write_bytes(claude_line(sid, cwd, f"question {i}") + claude_line(sid, cwd, f"answer {i}", "assistant"))
        os.utime(path, (past, past))


def latency(daemon: Daemon, appends: int) -> list[float]:
    sid = str(uuid.uuid4())
    cwd = "/home/dev/src/live"
    path = daemon.home / ".claude" / "projects" / "-home-dev-src-live" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(claude_line(sid, cwd, "start"))
    time.sleep(1.0)
    conn = sqlite3.connect(f"file:{daemon.bank}?mode=ro", uri=True)
    found = "SELECT 1 FROM events_fts WHERE events_fts MATCH ? LIMIT 1"
    out = []
    for n in range(appends):
        word = f"marker{n:06d}x{uuid.uuid4().hex[:6]}"
        with open(path, "ab") as f:
            f.write(claude_line(sid, cwd, f"live text {word}", "assistant"))
        written = time.monotonic()
        while conn.execute(found, (word,)).fetchone() is None:
            if time.monotonic() - written > 5:
                raise SystemExit(f"append {n} not searchable after 5 s")
            time.sleep(0.002)
        out.append((time.monotonic() - written) * 1000)
        time.sleep(0.05)
    conn.close()
    return out


def idle(daemon: Daemon, seconds: float) -> tuple[float, float]:
    assert daemon.proc is not None
    proc = psutil.Process(daemon.proc.pid)

    def cpu() -> float:
        total = proc.cpu_times().user + proc.cpu_times().system
        for child in proc.children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
        return total

    time.sleep(2)  # let the first import settle
    before, started = cpu(), time.monotonic()
    peak = 0.0
    while time.monotonic() - started < seconds:
        rss = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
        peak = max(peak, rss / 1e6)
        time.sleep(1)
    return (cpu() - before) / (time.monotonic() - started) * 100, peak


def copy_bank(source: Path, target: Path) -> None:
    """A consistent copy of a bank (its -wal folded in) and of its archive directory, if it has one."""
    conn, copy = sqlite3.connect(f"file:{source}?mode=ro", uri=True), sqlite3.connect(target)
    try:
        conn.backup(copy)  # page by page: the copy is the bank as it is (schema, pages, full-text segments)
    finally:
        conn.close()
        copy.close()
    target.chmod(0o600)
    archive = source.with_suffix(".archive")
    if archive.is_dir():
        shutil.copytree(archive, target.with_suffix(".archive"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=60)
    parser.add_argument("--bank", type=Path, help="write into a copy of this bank (default: a new one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.bank.resolve().parent if args.bank else None) as tmp:
        work = Path(tmp)
        daemon = Daemon(work)
        if args.bank:
            started = time.monotonic()
            copy_bank(args.bank.resolve(), daemon.bank)
            with sqlite3.connect(daemon.bank) as conn:
                events = conn.execute("SELECT max(id) FROM events").fetchone()[0]
            print(f"bank: a copy of {args.bank} ({events:,} events), made in {time.monotonic() - started:.0f} s")
        make_tree(daemon.home, args.files)
        first = daemon.start()
        print(f"first start: {args.files} files imported in {first:.2f} s")
        samples = latency(daemon, args.appends)
        cpu, rss = idle(daemon, args.idle)
        daemon.stop()
        files = list((daemon.home / ".claude" / "projects").rglob("*.jsonl"))
        started = time.perf_counter()
        for f in files:
            os.stat(f)
        stat_pass = time.perf_counter() - started
        daemon.start()
        reconcile = daemon.reconcile_seconds()
        daemon.stop()
    q = statistics.quantiles(samples, n=100)
    print(f"append -> searchable over {len(samples)} appends: p50 {statistics.median(samples):.0f} ms, "
          f"p99 {q[98]:.0f} ms, max {max(samples):.0f} ms (targets 100 / 500 ms)")
    print(f"idle over {args.idle:.0f} s watching {len(files)} files: CPU {cpu:.3f} %, RSS peak {rss:.1f} MB "
          f"(targets 0.2 %, 60 MB)")
    print(f"start-up reconcile of {len(files)} unchanged files: {reconcile:.3f} s "
          f"(plain os.stat of each: {stat_pass:.3f} s, ratio {reconcile / stat_pass:.1f}x; target 1.5 s)")


if __name__ == "__main__":
    main()
