"""Latency of the MCP server's tools through the SDK's own stdio client, on a bank of a million events.

    python bench/bench_mcp.py [--events 1000000] [--calls 200] [--bank PATH]
    python bench/bench_mcp.py --initialize [--rounds 30] [--compare-root OTHER_CHECKOUT]

The bank comes from bench/gen_bank.py (built once into bench/out/, reused after). ``harvester mcp`` runs
as a real subprocess in a directory named demo-repo, so it answers about ``coding-agent::demo-repo`` (a
tenth of the sessions); each tool is called ``--calls`` times with varied arguments (search: one- and
two-word queries, common and rare words of the bank's vocabulary). Beside them, in the same run, the CLI
(``search``, ``context``, ``sessions``, ``status``: process start included, median of 10) and the start
of a bare Python interpreter as the reference floor. Targets: p50 <= 50 ms for recent_sessions and
handoff, <= 100 ms for search_history.

``--initialize``: how long ``harvester mcp`` takes to answer ``initialize`` (a process started, the request
written, its answer read), in rounds that each start ``python -c pass`` and the server (and, with
``--compare-root``, the server of another checkout, e.g. the commit before a change), the order rotated each
round; medians of each and of the per-round differences and ratios. Target: <= 0.3 s median on an idle
2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
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
        # By bank: the bank's sessions were made under /home/dev/src/demo-repo, which a folder named demo-repo here is
        # not (the server never takes a repository for another that only shares its name).
        scope = {"bank": "coding-agent::demo-repo"}
        listed = await client.call_tool("recent_sessions", {"limit": 100, "max_bytes": 200000, **scope})
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
            await client.call_tool(name, {**arguments(), **scope})  # warm
            times = []
            for _ in range(calls):
                called = {**arguments(), **scope}
                started = time.perf_counter()
                result = await client.call_tool(name, called)
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


def initialize_latency(root: Path, bank: Path, work: Path) -> tuple[float, float]:
    """Seconds from starting ``harvester mcp`` (of the checkout ``root``) to reading its answer to initialize, and
    the CPU seconds its main thread spent until then (what the wall time is on an idle machine: the SDK's import
    runs on another thread meanwhile), from /proc in clock ticks."""
    env = {**os.environ, "HARVESTER_BANK": str(bank), "HOME": str(work), "PYTHONPATH": str(root)}
    request = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
               b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n')
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env, cwd=work / "demo-repo")
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    answer = proc.stdout.readline()
    seconds = time.perf_counter() - started
    fields = Path(f"/proc/{proc.pid}/task/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    proc.stdin.close()
    proc.wait()
    assert b'"protocolVersion"' in answer, answer
    return seconds, cpu


def bare_python() -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - started, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def report_initialize(bank: Path, work: Path, rounds: int, other: Path | None) -> None:
    engines = {"python -c pass": bare_python, "harvester mcp": lambda: initialize_latency(ROOT, bank, work)}
    if other is not None:
        engines[f"harvester mcp of {other}"] = lambda: initialize_latency(other, bank, work)
    names = list(engines)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for n in range(rounds):
        for name in names[n % len(names):] + names[:n % len(names)]:
            seconds, cpu = engines[name]()
            times[name].append(seconds)
            cpus[name].append(cpu)
    print(f"initialize answered, {rounds} rounds (order rotated), load {os.getloadavg()[0]:.1f}:")
    floor = times["python -c pass"]
    for name in names:
        values = times[name]
        extra = ""
        if name != "python -c pass":
            over = [v - f for v, f in zip(values, floor, strict=True)]
            ratio = [v / f for v, f in zip(values, floor, strict=True)]
            extra = (f"; over python -c pass {statistics.median(over) * 1000:.0f} ms, "
                     f"{statistics.median(ratio):.1f}x it (medians of per-round differences and ratios)")
        print(f"  {name:<40} median {statistics.median(values) * 1000:6.0f} ms (min {min(values) * 1000:.0f}), "
              f"CPU {statistics.median(cpus[name]) * 1000:.0f} ms{extra}")
    if other is not None:
        ratio = [o / h for o, h in zip(times[names[2]], times["harvester mcp"], strict=True)]
        print(f"  this checkout answers {statistics.median(ratio):.2f}x as fast as {other} (median of per-round ratios)")
    print("  (CPU: of the whole process for python -c pass, of the server's main thread until its answer)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--bank", type=Path, help="A bank to use (default: bench/out/bank-<events>.sqlite)")
    parser.add_argument("--initialize", action="store_true", help="Only the time to answer initialize")
    parser.add_argument("--rounds", type=int, default=30, help="--initialize: rounds")
    parser.add_argument("--compare-root", type=Path, help="--initialize: also the server of this checkout")
    args = parser.parse_args()
    if args.initialize:  # an empty bank: the answer does not depend on it
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "demo-repo").mkdir()
            report_initialize(work / "none.sqlite", work, args.rounds, args.compare_root)
        return
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
