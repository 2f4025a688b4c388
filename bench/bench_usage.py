"""How long `harvester usage daily` takes on a bank of a million events, process start included, beside a bare SQL
aggregate of the same bank's token counts (issue 27: ≤ 200 ms).

    python bench/bench_usage.py [--bank bench/out/bank-usage-1000000.sqlite] [--events 1000000] [--rounds 9]

The bank comes from bench/gen_bank.py (made the first time: its assistant responses carry usage as agents record
it, once per response, with their models). Each round runs, each in a fresh process and in a rotated order:

- ``harvester usage daily`` (UTC, and in the machine's local time zone), as a person runs it;
- ``harvester --help``: the CLI's own start, the floor any harvester command pays;
- the bare aggregate in the ``sqlite3`` shell: the events' token columns summed by day and model, what a script
  over the bank would do (no response counted once, no price, no time zone);
- the same through Python's sqlite3 (``python -c``), and over the usage table (migration 16) instead of the events.

Python writes no bytecode here (PYTHONDONTWRITEBYTECODE); the benchmark gives it a bytecode cache of its own under
bench/out/ (PYTHONPYCACHEPREFIX), warmed by a first untimed round, as an installed harvester has one. The price
book beside the bank is warmed too (a report's first run asks the catalogue). Medians of the rounds, and the
ratio to the bare aggregate, are printed, wall and CPU (user + system) time; the machine is shared, so the ratios
and the CPU time are the figures to compare.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"

BARE_EVENTS = ("SELECT substr(ts, 1, 10), model, sum(tokens_in), sum(tokens_out), sum(tokens_cache_read), "
               "sum(tokens_cache_write) FROM events WHERE tokens_in IS NOT NULL GROUP BY 1, 2;")
BARE_USAGE = ("SELECT substr(ts, 1, 10), model, sum(tokens_in), sum(tokens_out), sum(tokens_cache_read), "
              "sum(tokens_cache_write) FROM usage WHERE counted = 1 GROUP BY 1, 2;")


def commands(bank: Path) -> dict[str, list[str]]:
    harvester = [sys.executable, "-m", "harvester", "--bank", str(bank)]
    python_sql = ("import sqlite3, sys; c = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); "
                  "print(len(c.execute(sys.argv[2]).fetchall()))")
    return {
        "harvester usage daily --timezone UTC": [*harvester, "usage", "daily", "--timezone", "UTC"],
        "harvester usage daily (local time)": [*harvester, "usage", "daily"],
        "harvester --help (CLI start)": [*harvester, "--help"],
        "sqlite3 shell: events by day, model": ["sqlite3", "-readonly", str(bank), BARE_EVENTS],
        "python sqlite3: events by day, model": [sys.executable, "-c", python_sql, str(bank), BARE_EVENTS],
        "python sqlite3: usage table by day, model": [sys.executable, "-c", python_sql, str(bank), BARE_USAGE],
    }


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run. On a shared, loaded machine the wall time is
    mostly waiting for a core; the CPU time is what the command itself costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:6]} failed: {done.stderr.strip()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bank", type=Path, default=OUT / "bank-usage-1000000.sqlite")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if shutil.which("sqlite3") is None:
        raise SystemExit("the sqlite3 shell is not on PATH")
    if not args.bank.exists():
        print(f"making {args.bank} (bench/gen_bank.py, {args.events:,} events) ...", file=sys.stderr)
        subprocess.run([sys.executable, str(ROOT / "bench" / "gen_bank.py"), str(args.bank), "--events",
                        str(args.events)], check=True)
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(OUT / "pycache"), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    runs = commands(args.bank)
    for argv in runs.values():  # warm: bytecode, the price book, the page cache
        timed(argv, env)
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for n in range(args.rounds):
        for name in names[n % len(names):] + names[:n % len(names)]:
            wall, used = timed(runs[name], env)
            times[name].append(wall)
            cpu[name].append(used)
    events = subprocess.run(["sqlite3", "-readonly", str(args.bank), "SELECT count(*) FROM events; "
                             "SELECT count(*) FROM usage WHERE counted = 1; SELECT count(*) FROM usage_hours;"],
                            capture_output=True, text=True, check=True).stdout.split()
    bare = statistics.median(times["sqlite3 shell: events by day, model"])
    bare_cpu = statistics.median(cpu["sqlite3 shell: events by day, model"])
    print(f"bank: {args.bank} ({int(events[0]):,} events, {int(events[1]):,} responses, {int(events[2]):,} hourly "
          f"sums); median of {args.rounds} rounds, process start included; load average {os.getloadavg()[0]:.1f}")
    for name, values in times.items():
        median, used = statistics.median(values), statistics.median(cpu[name])
        print(f"  {name:<44} {median * 1000:7.0f} ms wall (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f}; "
              f"{median / bare:.2f}x the sqlite3 shell's)  {used * 1000:5.0f} ms CPU ({used / bare_cpu:.2f}x)")


if __name__ == "__main__":
    main()
