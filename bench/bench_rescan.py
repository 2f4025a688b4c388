"""A rescan with nothing new: ``harvester scan`` on a bank of a million events whose sources were all read.

    python bench/bench_rescan.py [--events 1000000] [--mb 20] [--rounds 20] [--compare-root OTHER_CHECKOUT]

The bank comes from bench/gen_bank.py (cached as bench/out/bank-<events>.sqlite), copied; a home of ``--mb`` MiB
of Claude Code, Codex and opencode history (bench/gen_tree.py) is scanned into the copy once. Then rounds, the
order rotated each round: ``python -c pass`` (an interpreter's start, the floor), ``harvester scan`` of this
checkout, and with ``--compare-root`` the scan of another checkout (e.g. the commit before a change), each a
fresh process finding nothing new. Medians of each and of the per-round differences and ratios, and the CPU of
each process (wait4). Target: <= 150 ms on an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_bank import build  # noqa: E402
from bench.gen_tree import generate  # noqa: E402


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the child's, from wait4) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return seconds, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--bank", type=Path, help="a bank to copy (default: bench/out/bank-<events>.sqlite)")
    p.add_argument("--mb", type=float, default=20)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--compare-root", type=Path)
    a = p.parse_args()
    source = (a.bank or ROOT / "bench" / "out" / f"bank-{a.events}.sqlite").resolve()
    if not source.exists():
        source.parent.mkdir(parents=True, exist_ok=True)
        print(f"building {source} ...", file=sys.stderr)
        build(source, a.events, 7)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        home = work / "home"
        generate(home, a.mb)
        bank = work / "bank.sqlite"
        shutil.copyfile(source, bank)
        # As installed, byte-code cached (pip compiles it): PYTHONDONTWRITEBYTECODE would compile every module
        # anew in every round, which no installed harvester does. The cache is bench/out's, not the checkouts'.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HARVESTER_", "XDG_")) and k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(ROOT / "bench" / "out" / "pycache")
        env.update(HOME=str(home), HARVESTER_BANK=str(bank), HARVESTER_CONFIG=str(work / "none.toml"))
        (work / "none.toml").write_text("")

        def scan(root: Path) -> Callable[[], tuple[float, float]]:
            return lambda: timed([sys.executable, "-m", "harvester", "scan"], {**env, "PYTHONPATH": str(root)}, work)

        first = timed([sys.executable, "-m", "harvester", "scan"], {**env, "PYTHONPATH": str(ROOT)}, work)
        print(f"bank {source.name} ({bank.stat().st_size / 1e9:.2f} GB) with {a.mb:g} MiB of sources scanned into it "
              f"in {first[0]:.1f} s", flush=True)
        engines = {"python -c pass": lambda: timed([sys.executable, "-c", "pass"], env, work),
                   "harvester scan": scan(ROOT)}
        if a.compare_root is not None:
            engines[f"harvester scan of {a.compare_root}"] = scan(a.compare_root.resolve())
        for engine in engines.values():  # warm: the page cache, the bytecode caches
            engine()
        names = list(engines)
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for r in range(a.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                w, c = engines[name]()
                wall[name].append(w)
                cpu[name].append(c)
    print(f"rescan with nothing new, {a.rounds} rounds (order rotated), load {os.getloadavg()[0]:.1f}:")
    floor = wall["python -c pass"]
    for name in names:
        extra = ""
        if name != "python -c pass":
            over = statistics.median(w - f for w, f in zip(wall[name], floor, strict=True))
            ratio = statistics.median(w / f for w, f in zip(wall[name], floor, strict=True))
            extra = f"; over python -c pass {over * 1000:.0f} ms, {ratio:.1f}x it"
        print(f"  {name:<44} median {statistics.median(wall[name]) * 1000:5.0f} ms, CPU "
              f"{statistics.median(cpu[name]) * 1000:5.0f} ms{extra}")
    if len(names) == 3:
        ratio = statistics.median(o / h for o, h in zip(wall[names[2]], wall[names[1]], strict=True))
        cpu_ratio = statistics.median(o / h for o, h in zip(cpu[names[2]], cpu[names[1]], strict=True))
        print(f"  this checkout: {ratio:.2f}x as fast as {a.compare_root}, {cpu_ratio:.2f}x less CPU "
              "(medians of per-round ratios)")


if __name__ == "__main__":
    main()
