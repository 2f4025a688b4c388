"""Scan throughput beside plain orjson.loads over the same lines, measured in one run; and what the raw
archive costs, the same scan with it on and off.

Machines here are noisy, so the figures that matter are ratios: harvester's full import (parse,
normalize, redact, git identity, SQLite writes with the FTS5 index, cursors) against the bare cost
of decoding every line with orjson (target: ratio >= 1/6), and the archive's share of the scan's time
(target: <= 15 %), each the median of paired runs.

    python bench/bench_scan.py [--mb 320] [--tree bench/out/claude-tree] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_claude_tree import generate
from harvester import log
from harvester.bank import open_bank
from harvester.capture.archive import archive_dir
from harvester.capture.ingest import Ingestor
from harvester.parsers import HARNESSES


def tree_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in tree.rglob("*.jsonl"))


def orjson_pass(tree: Path) -> float:
    """Read every file and decode every line: the floor any importer pays."""
    started = time.perf_counter()
    loads = orjson.loads
    for path in sorted(tree.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line:
                loads(line)
    return time.perf_counter() - started


def scan_pass(tree: Path, work: Path, archive: bool = True) -> tuple[float, int]:
    bank_path = work / "bank.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(bank_path) + suffix).unlink(missing_ok=True)
    shutil.rmtree(archive_dir(bank_path), ignore_errors=True)
    bank = open_bank(bank_path, archive=archive)
    try:
        started = time.perf_counter()
        with Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
            report = ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(work), "CLAUDE_CONFIG_DIR": str(tree)},
                                   work)
        seconds = time.perf_counter() - started
    finally:
        bank.close()
    return seconds, report.events_added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=320)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent / "out" / "claude-tree")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    log.configure("warning")  # as `harvester scan` runs: structlog unconfigured would print every commit
    if not (args.tree / "projects").is_dir():
        print(f"generating {args.mb} MB under {args.tree} ...", file=sys.stderr)
        generate(args.tree, args.mb)
    size = tree_bytes(args.tree)
    mb = size / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        results = []
        for n in range(args.repeat):
            reference = orjson_pass(args.tree)
            # Alternated, so that neither side always runs on a warmer cache.
            order = (False, True) if n % 2 == 0 else (True, False)
            timed = {}
            for archive in order:
                seconds, events = scan_pass(args.tree, work, archive=archive)
                timed[archive] = seconds
                if archive:
                    archive_size = sum(p.stat().st_size for p in archive_dir(work / "bank.sqlite").rglob("*")
                                       if p.is_file())
                    bank_size = sum(os.path.getsize(p) for p in work.glob("bank.sqlite*"))
            results.append((reference, timed[False], timed[True], events))
    # Each run pairs a reference pass with the scans; the median pair is reported (not the best).
    results.sort(key=lambda r: r[0] / r[2])
    reference, off, seconds, events = results[len(results) // 2]
    ratio = reference / seconds
    spread = ", ".join(f"1/{r[2] / r[0]:.2f}" for r in results)
    costs = sorted(r[2] / r[1] - 1 for r in results)
    cost = costs[len(costs) // 2]
    print(f"tree:            {mb:.0f} MB, {events} events imported, bank {bank_size / 1e6:.0f} MB")
    print(f"orjson.loads:    {mb / reference:8.1f} MB/s  ({reference:.2f} s)")
    print(f"harvester scan:  {mb / seconds:8.1f} MB/s  ({seconds:.2f} s, {events / seconds:.0f} events/s)")
    print(f"ratio (median of {len(results)}): 1/{1 / ratio:.2f} of the orjson rate (runs: {spread}); "
          f"target >= 1/6: {'met' if ratio >= 1 / 6 else 'NOT met'}")
    print(f"archive off:     {mb / off:8.1f} MB/s  ({off:.2f} s)")
    print(f"archive cost (median of {len(results)}): {cost:+.1%} of the scan's time "
          f"(runs: {', '.join(f'{c:+.1%}' for c in costs)}); target <= 15 %: {'met' if cost <= 0.15 else 'NOT met'}")
    print(f"archive size:    {archive_size / 1e6:.1f} MB for {mb:.0f} MB of sources ({archive_size / size:.1%})")

if __name__ == "__main__":
    main()
