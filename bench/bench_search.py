"""Search, status and sessions on a bank of a million events: in-process latency per query class, and the
CLI's wall time with the interpreter's start beside it.

    python bench/bench_search.py [--bank bench/out/bank-1000000.sqlite] [--queries 60] [--runs 10] [--copy]

The bank comes from bench/gen_bank.py (``python bench/gen_bank.py bench/out/bank-1000000.sqlite``). Query
classes, drawn from the words of the bank's own index ranked by how many events hold them (the range is
printed): one word, common (ranks 0-149), medium (ranks 1,000-2,999) and rare (ranks 4,000-7,999); two words, common + common and common + rare; and a phrase
("two words" as they stand next to each other in a stored text). Each query is timed in-process, after a
warm-up pass over all of them, the way two readers ask it:

- ``mcp``: the MCP tool search_history (harvester.recall.views) in coding-agent::demo-repo, the scope a
  server started there answers about (a tenth of the sessions);
- ``cli``: what ``harvester search`` computes (the page of hits and how many matched) over every repository.

Then the CLI (``search`` with a common and with a rare word, ``status``, ``sessions``, all of them and the
newest 20; process start
included; a median of --runs runs, interleaved with ``python -c pass`` runs, the floor measured in the same
run; wall time, and the CPU time it took, which a busy machine inflates less). A pure-Python loop is timed beside the in-process figures: on a shared machine it says how loaded it
was. A bank of an older schema is upgraded when first opened, as by any command (``--copy``: a copy of it,
keeping the original); the upgrade's time is printed.

Not a test: timings belong here, not in the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEMO = "coding-agent::demo-repo"
CLASSES = ("common", "medium", "rare", "common+common", "common+rare", "phrase")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def reference_ms() -> float:
    """A fixed piece of pure-Python work: how fast this machine runs right now."""
    started = time.perf_counter()
    total = 0
    for i in range(300_000):
        total += i * i % 7
    return (time.perf_counter() - started) * 1000


def query_words(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Words of the bank's own index by how many events hold them (the same bank gives the same words, whatever
    this checkout's source says): the most frequent 150, ranks 1,000-2,999, and ranks 4,000-7,999."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.bench_vocab USING fts5vocab(main, events_fts, row)")
    ranked = [term for (term,) in conn.execute("SELECT term FROM temp.bench_vocab ORDER BY doc DESC, term")
              if term.isalpha() and term.isascii() and len(term) >= 3]
    return {"common": ranked[:150], "medium": ranked[1000:3000], "rare": ranked[4000:8000]}


def phrases(conn: sqlite3.Connection, rng: random.Random, n: int) -> list[str]:
    """Two words that stand next to each other in stored texts (so the phrase is found)."""
    (top,) = conn.execute("SELECT max(id) FROM events").fetchone()
    out: list[str] = []
    while len(out) < n:
        row = conn.execute("SELECT text FROM events WHERE id = ? AND kind IN ('text', 'thinking')",
                           (rng.randint(1, top),)).fetchone()
        if row is None:
            continue
        tokens = re.findall(r"[A-Za-z]{3,}", row[0][:2000])
        if len(tokens) >= 2:
            i = rng.randrange(len(tokens) - 1)
            out.append(f'"{tokens[i].lower()} {tokens[i + 1].lower()}"')
    return out


def queries(conn: sqlite3.Connection, per_class: int, rng: random.Random) -> dict[str, list[str]]:
    bands = query_words(conn)
    common, medium, rare = bands["common"], bands["medium"], bands["rare"]
    return {
        "common": [rng.choice(common) for _ in range(per_class)],
        "medium": [rng.choice(medium) for _ in range(per_class)],
        "rare": [rng.choice(rare) for _ in range(per_class)],
        "common+common": [f"{rng.choice(common)} {rng.choice(common)}" for _ in range(per_class)],
        "common+rare": [f"{rng.choice(common)} {rng.choice(rare)}" for _ in range(per_class)],
        "phrase": phrases(conn, rng, per_class),
    }


def document_counts(conn: sqlite3.Connection, words: list[str]) -> list[int]:
    """How many events each word is in, from the index's own vocabulary."""
    return [(conn.execute("SELECT doc FROM temp.bench_vocab WHERE term = ?", (w,)).fetchone() or (0,))[0]
            for w in words]


def searchers(bank: Any) -> dict[str, Callable[[str], Any]]:
    from harvester.bank.scope import EVERYTHING, Scope
    from harvester.bank.sqlite_recall import plain_words
    from harvester.recall.views import Recall, search_history

    demo = Recall(bank, Scope(DEMO, bank_id=DEMO))

    def cli(query: str) -> Any:
        match = plain_words(query)
        if hasattr(bank, "search_page"):
            return bank.search_page(match, EVERYTHING, 20)
        hits = bank.search_events(match, EVERYTHING, 20)  # the harvester before search_page
        return hits, bank.count_matches(match, EVERYTHING) if hits else 0

    return {"mcp": lambda q: search_history(demo, q), "cli": cli}


def in_process(bank: Any, classes: dict[str, list[str]]) -> tuple[dict[tuple[str, str], list[float]], list[float]]:
    run = searchers(bank)
    for items in classes.values():  # warm: the OS cache, SQLite's, Python's imports
        for q in items:
            for fn in run.values():
                fn(q)
    times: dict[tuple[str, str], list[float]] = {}
    reference = []
    for name, items in classes.items():
        for reader, fn in run.items():
            out = times.setdefault((name, reader), [])
            for q in items:
                started = time.perf_counter()
                fn(q)
                out.append((time.perf_counter() - started) * 1000)
            reference.append(reference_ms())
    return times, reference


def segments(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(DISTINCT segid) FROM events_fts_idx").fetchone()[0]


def print_in_process(bank: Any, classes: dict[str, list[str]], per_class: int, what: str) -> None:
    times, reference = in_process(bank, classes)
    print(f"\nin-process, {per_class} queries per class, {what} (ms; targets p50 <= 20, p99 <= 100):")
    print(f"{'class':<16}{'mcp p50':>9}{'mcp p99':>9}{'cli p50':>9}{'cli p99':>9}   example")
    for name in CLASSES:
        mcp, cli = times[(name, "mcp")], times[(name, "cli")]
        print(f"{name:<16}{percentile(mcp, .5):>9.1f}{percentile(mcp, .99):>9.1f}"
              f"{percentile(cli, .5):>9.1f}{percentile(cli, .99):>9.1f}   {classes[name][0]}")
    print(f"reference (a fixed pure-Python loop, between classes): median {statistics.median(reference):.1f} ms")


def cli_times(bank: Path, work: Path, runs: int, common: str, rare: str) -> dict[str, tuple[list[float], list[float]]]:
    """Per command: wall times and CPU times (user + system), in ms."""
    # As installed: byte-code cached (pip compiles it); PYTHONDONTWRITEBYTECODE would compile every run anew.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVESTER_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HARVESTER_BANK=str(bank), HOME=str(work), HARVESTER_CONFIG=str(work / "none.toml"),
               HARVESTER_RUNTIME_DIR=str(work / "run"), PYTHONPATH=str(ROOT))
    (work / "none.toml").write_text("")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        f"harvester search {common}": [sys.executable, "-m", "harvester", "search", common],
        f"harvester search {rare}": [sys.executable, "-m", "harvester", "search", rare],
        "harvester status": [sys.executable, "-m", "harvester", "status"],
        "harvester sessions": [sys.executable, "-m", "harvester", "sessions"],
        "harvester sessions --limit 20": [sys.executable, "-m", "harvester", "sessions", "--limit", "20"],
    }
    out: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label in commands}
    for n in range(runs + 1):  # round-robin, so that a busy moment of the machine hits every command alike
        for label, argv in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=work / "demo-repo", capture_output=True)
            wall = (time.perf_counter() - started) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode:
                raise SystemExit(f"{label} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
            if n:  # the first round warms the OS cache (and writes byte-code)
                out[label][0].append(wall)
                out[label][1].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return out


def open_for_bench(path: Path) -> tuple[Any, float]:
    """The bank as commands open it (upgraded if older), and how long that took."""
    from harvester.bank import open_bank_to_read

    started = time.perf_counter()
    bank = open_bank_to_read(path)
    return bank, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bank", type=Path, default=ROOT / "bench" / "out" / "bank-1000000.sqlite")
    parser.add_argument("--queries", type=int, default=60, help="queries per class")
    parser.add_argument("--runs", type=int, default=10, help="runs of each CLI command")
    parser.add_argument("--copy", action="store_true", help="work on a copy of the bank (the original stays as it is)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--settle", action="store_true",
                        help="then settle the index as a scan's end does after a large import (SqliteBank.settle_index; on "
                             "the copy with --copy) and measure again: before and after")
    parser.add_argument("--no-cli", action="store_true", help="in-process figures only")
    args = parser.parse_args()
    if not args.bank.exists():
        raise SystemExit(f"no bank at {args.bank}: python bench/gen_bank.py {args.bank}")
    bank_path = args.bank = args.bank.resolve()  # the CLI runs elsewhere
    if args.copy:
        bank_path = args.bank.with_name(args.bank.stem + "-bench-copy.sqlite")
        shutil.copyfile(args.bank, bank_path)
    try:
        report(bank_path, args)
    finally:
        if args.copy:
            for suffix in ("", "-wal", "-shm"):
                Path(str(bank_path) + suffix).unlink(missing_ok=True)


def report(bank_path: Path, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    bank, opened = open_for_bench(bank_path)
    (version,) = bank.conn.execute("PRAGMA user_version").fetchone()
    (events,) = bank.conn.execute("SELECT max(id) FROM events").fetchone()
    print(f"bank: {args.bank} ({bank_path.stat().st_size / 1e9:.2f} GB, ~{events:,} events, schema {version}); "
          f"opened (and upgraded if older) in {opened:.2f} s")
    classes = queries(bank.conn, args.queries, rng)
    for name in ("common", "medium", "rare"):
        counts = sorted(document_counts(bank.conn, classes[name]))
        print(f"  {name:<7} words: in {counts[0]:,} to {counts[-1]:,} events (median {statistics.median(counts):,.0f})")
    print_in_process(bank, classes, args.queries, f"{segments(bank.conn)} segments in the index")
    if args.settle:
        started = time.perf_counter()
        settled = bank.settle_index(events, force=True)
        print(f"\nsettle_index: {'merged' if settled else 'left as it was'} in {time.perf_counter() - started:.1f} s")
        print_in_process(bank, classes, args.queries, f"{segments(bank.conn)} segments in the index")
    bank.close()
    if args.no_cli:
        return
    with tempfile.TemporaryDirectory() as tmp:  # outside any git repository
        work = Path(tmp)
        (work / "demo-repo").mkdir()
        common, rare = classes["common"][0], classes["rare"][0]
        walls = cli_times(bank_path, work, args.runs, common, rare)
    print(f"\nCLI, process start included, median of {args.runs} (targets: search <= 200 ms, status <= 200 ms, "
          "sessions <= 150 ms, wall):")
    print(f"  {'':<34}{'wall ms':>8}{'min':>6}{'max':>6}{'cpu ms':>8}")
    for label, (wall, cpu) in walls.items():
        print(f"  {label:<34}{statistics.median(wall):>8.0f}{min(wall):>6.0f}{max(wall):>6.0f}"
              f"{statistics.median(cpu):>8.0f}")


if __name__ == "__main__":
    main()
