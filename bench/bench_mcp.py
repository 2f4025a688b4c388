"""Latency of the MCP server's tools through the SDK's own stdio client, on a bank of a million events.

    python bench/bench_mcp.py [--events 1000000] [--calls 200] [--bank PATH]

The bank comes from bench/gen_bank.py (built once into bench/out/, reused after). ``harvester mcp`` runs
as a real subprocess in a directory named demo-repo, so it answers about ``coding-agent::demo-repo`` (a
tenth of the sessions); each tool is called ``--calls`` times with varied arguments (search: one- and
two-word queries, common and rare words of the bank's vocabulary). Beside them, in the same run, the CLI
(``search``, ``context``, ``sessions``, ``status``: process start included, median of 10) and the start
of a bare Python interpreter as the reference floor. Targets: p50 <= 50 ms for recent_sessions and
handoff, <= 100 ms for search_history.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_bank import build, vocabulary  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def tool_latencies(bank: Path, work: Path, calls: int, rng: random.Random) -> dict[str, list[float]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    words, _ = vocabulary()
    common, rare = words[:200], words[3000:8000]
    env = {**os.environ, "HARVESTER_BANK": str(bank), "HOME": str(work), "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "harvester", "mcp"], env=env,
                                   cwd=str(work / "demo-repo"))
    out: dict[str, list[float]] = {}
    async with Client(params) as client:
        listed = await client.call_tool("recent_sessions", {"limit": 100, "max_bytes": 200000})
        sessions = [line.split("`")[1] for line in listed.content[0].text.splitlines() if line.startswith("- session `")]

        def queries() -> dict:
            n = rng.random()
            if n < 0.25:
                return {"query": rng.choice(common)}
            if n < 0.5:
                return {"query": rng.choice(rare)}
            if n < 0.75:
                return {"query": f"{rng.choice(common)} {rng.choice(common)}"}
            return {"query": f"{rng.choice(common)} {rng.choice(rare)}"}

        plans = {
            "recent_sessions": lambda: {"limit": rng.choice((5, 10, 20))},
            "handoff": lambda: {"session": rng.choice(sessions)} if rng.random() < 0.5 else {},
            "search_history": queries,
            "get_events": lambda: {"session": rng.choice(sessions), "start": rng.randint(0, 100)},
        }
        for name, arguments in plans.items():
            await client.call_tool(name, arguments())  # warm
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool(name, arguments())
                times.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result.content[0].text
            out[name] = times
    return out


def cli_latency(args: list[str], bank: Path, work: Path, runs: int = 10) -> float:
    env = {**os.environ, "HARVESTER_BANK": str(bank), "HOME": str(work), "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "harvester", *args], env=env, cwd=work / "demo-repo",
                       capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--bank", type=Path, help="A bank to use (default: bench/out/bank-<events>.sqlite)")
    args = parser.parse_args()
    bank = (args.bank or ROOT / "bench" / "out" / f"bank-{args.events}.sqlite").resolve()  # the server runs elsewhere
    if not bank.exists():
        bank.parent.mkdir(parents=True, exist_ok=True)
        print(f"building {bank} ...", file=sys.stderr)
        build(bank, args.events, 7)
    # Outside any git repository (this one included): the server's cwd names its bank, coding-agent::demo-repo.
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "demo-repo").mkdir()
        report(bank, work, args.calls)


def report(bank: Path, work: Path, calls: int) -> None:
    rng = random.Random(11)
    times = asyncio.run(tool_latencies(bank, work, calls, rng))
    floor = []
    for _ in range(10):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append((time.perf_counter() - started) * 1000)
    print(f"bank: {bank} ({bank.stat().st_size / 1e9:.2f} GB); {calls} calls per tool through the stdio client")
    print(f"{'tool':<18}{'p50 ms':>9}{'p99 ms':>9}{'target p50':>12}")
    for name, values in times.items():
        target = {"recent_sessions": 50, "handoff": 50, "search_history": 100}.get(name)
        print(f"{name:<18}{percentile(values, .5):>9.1f}{percentile(values, .99):>9.1f}"
              f"{(f'<= {target}' if target else '-'):>12}")
    print("CLI, process start included (median of 10):")
    for label, cli in (("search", ["search", "parser"]), ("context", ["context"]), ("sessions", ["sessions", "--limit", "20"]),
                       ("status", ["status"])):
        print(f"  harvester {label:<10}{cli_latency(cli, bank, work):>8.0f} ms")
    print(f"  python -c pass   {statistics.median(floor):>8.0f} ms (the floor: an interpreter's start)")


if __name__ == "__main__":
    main()
