"""Backfill speed on realistic data: harvester beside a naive importer, the decoding floor, and agentsview.

    python bench/bench_backfill.py [--mb 300] [--repeat 3] [--seed 7] [--json results.json]

Generates (once; cached under bench/out/ by seed and size) a home directory of Claude Code, Codex and
opencode history in the captured agents' shapes (bench/gen_tree.py), then runs, in paired rounds with the
order rotated every round, each engine on the whole tree in a fresh process with a fresh output:

* ``orjson floor``: read every JSONL line and opencode row and decode it (bench/naive_import.py --floor);
* ``naive``: the issue's reference importer (bench/naive_import.py: orjson, one insert per record, FTS5);
* ``harvester``: ``Ingestor.scan`` as bench/bench_scan.py runs it, raw archive on, redaction on
  (bench/harvester_pass.py; its second ingesting process included);
* ``agentsview``: ``agentsview sync`` of the PyPI package, installed on first use into
  bench/out/agentsview-venv, pointed at the tree by ``CLAUDE_PROJECTS_DIR``/``CODEX_SESSIONS_DIR``/
  ``OPENCODE_DIR`` with a throwaway ``HOME`` and data dir; skipped, with the reason, when not installable.

Per engine: wall seconds, MB/s (of the tree's bytes), events per second (each engine's own unit: harvester
events, naive rows, decoded records, agentsview messages), CPU seconds (user + system of the process and
the children it waited for, from wait4), peak RSS of its largest process (VmHWM) and of its whole
process tree (the sum of VmRSS), both sampled from /proc every 50 ms. Then the ratios that matter, computed within each round (so
that a noisy machine slows both sides of a pair) and reported as median and min-max: harvester against
naive (target >= 2x), against agentsview (target >= 8x), and as a fraction of the orjson floor's rate.
Not a test: nothing here runs in the suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_tree import OUT, cached_tree, layout  # noqa: E402
from bench.naive_import import source_bytes  # noqa: E402

AGENTSVIEW_VENV = OUT / "agentsview-venv"
ENGINES = ("floor", "naive", "harvester", "agentsview", "before")
LABELS = {"floor": "orjson floor", "naive": "naive import", "harvester": "harvester scan",
          "agentsview": "agentsview sync", "before": "harvester before"}
COMPARE_ROOT: Path | None = None  # --compare-root: another checkout, whose harvester_pass.py is the "before" engine
TARGETS = {"naive": 2.0, "agentsview": 8.0}  # harvester at least this many times as fast (issue 13)
SAMPLE_SECONDS = 0.05


@dataclass
class Pass:
    """One engine's run over the whole tree."""

    engine: str
    seconds: float
    cpu_seconds: float
    maxrss_mb: float  # the peak of its largest single process (the child, or a reader it started)
    tree_rss_mb: float  # the sampled peak of the sum over the process tree
    events: int
    output_mb: float
    detail: dict = field(default_factory=dict)


# -- running a child and measuring it -------------------------------------------------------------
def _status_kib(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) of a process in KiB: its peak and current resident size, from /proc."""
    hwm = rss = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmHWM:"):
                hwm = int(line.split()[1])
            elif line.startswith(b"VmRSS:"):
                rss = int(line.split()[1])
    return hwm, rss


class TreeMemory:
    """Samples a process tree: each process's peak (VmHWM, kept per pid) and the peak of their sum.

    Not ru_maxrss from wait4: Linux carries the parent's high-water mark into a child through fork and
    exec, so a small child of a large benchmark process would report the benchmark's size."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, int] = {}
        self.tree_peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            pids = [self.pid, *(p.pid for p in root.children(recursive=True))]
        except psutil.Error:
            return
        total = 0
        for pid in pids:
            hwm, rss = _status_kib(pid)
            self.peaks[pid] = max(self.peaks.get(pid, 0), hwm)
            total += rss
        self.tree_peak = max(self.tree_peak, total)

    def _run(self) -> None:
        while not self._done.wait(SAMPLE_SECONDS):
            self._sample()

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def largest_mb(self) -> float:
        return max(self.peaks.values(), default=0) / 1024

    def tree_mb(self) -> float:
        return self.tree_peak / 1024


def measured(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, float, str, str]:
    """Run ``argv`` to completion: (wall s, CPU s, largest-process peak MB, sampled tree peak MB, out, err)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        with TreeMemory(child.pid) as memory:
            # wait4, not Popen.wait: its rusage is this child's (and what it reaped), not all of ours.
            _, status, usage = os.wait4(child.pid, 0)
            seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if child.returncode != 0:
        raise RuntimeError(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} exited {child.returncode}: "
                           f"{stderr.strip()[-2000:]}")
    return (seconds, usage.ru_utime + usage.ru_stime, memory.largest_mb(), memory.tree_mb(), stdout, stderr)


def dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def base_env() -> dict[str, str]:
    """The benchmark's own environment minus what would point an engine at the real agents' history, and
    with byte-code cached as installed (pip compiles it): PYTHONDONTWRITEBYTECODE would have every run compile
    every module anew (about 0.45 CPU-s per harvester process on this machine, the naive importer's few
    modules next to nothing). The warm-up (``warm_bytecode``) fills the caches before the first round."""
    drop = ("XDG_", "CLAUDE_", "CODEX_", "OPENCODE_", "KILO_", "AGENTSVIEW_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "PYTHONDONTWRITEBYTECODE"}


# -- the engines -----------------------------------------------------------------------------------
def run_ours(engine: str, home: Path, work: Path) -> Pass:
    python = sys.executable
    if engine == "before":
        assert COMPARE_ROOT is not None
        argv = [python, str(COMPARE_ROOT / "bench" / "harvester_pass.py"), str(home), str(work)]
    elif engine == "floor":
        argv = [python, str(ROOT / "bench" / "naive_import.py"), str(home), "--floor"]
    elif engine == "naive":
        argv = [python, str(ROOT / "bench" / "naive_import.py"), str(home), str(work / "naive.sqlite")]
    else:
        argv = [python, str(ROOT / "bench" / "harvester_pass.py"), str(home), str(work)]
    env = base_env() | {"HOME": str(work)}
    seconds, cpu, maxrss, tree_rss, stdout, _ = measured(argv, env, work)
    result = json.loads(stdout.strip().splitlines()[-1])
    detail = {k: v for k, v in result.items() if k not in ("events",)}
    return Pass(engine, seconds, cpu, maxrss, tree_rss, int(result["events"]), dir_mb(work), detail)


def agentsview_binary() -> Path:
    return AGENTSVIEW_VENV / "bin" / "agentsview"


def ensure_agentsview(install: bool) -> tuple[str | None, str]:
    """(version, "") when agentsview can run, else (None, why not). Installs it on first use."""
    binary = agentsview_binary()
    if not binary.exists():
        if not install:
            return None, "not installed (run without --no-install to install it from PyPI)"
        print(f"installing agentsview from PyPI into {AGENTSVIEW_VENV} ...", file=sys.stderr)
        try:
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(AGENTSVIEW_VENV)], check=True,
                           capture_output=True, text=True)
            subprocess.run([str(AGENTSVIEW_VENV / "bin" / "pip"), "install", "--quiet", "agentsview"], check=True,
                           capture_output=True, text=True, timeout=900)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            reason = getattr(exc, "stderr", None) or str(exc)
            shutil.rmtree(AGENTSVIEW_VENV, ignore_errors=True)
            return None, f"not installable ({str(reason).strip().splitlines()[-1][:300]})"
    try:
        version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"not runnable ({exc})"
    if version.returncode != 0:
        return None, f"not runnable ({version.stderr.strip()[-300:]})"
    return version.stdout.strip(), ""


def run_agentsview(home: Path, work: Path) -> Pass:
    paths = layout(home)
    data = work / "agentsview-data"
    env = base_env() | {
        "HOME": str(work), "AGENTSVIEW_DATA_DIR": str(data),
        "CLAUDE_PROJECTS_DIR": str(paths["claude-code"]), "CODEX_SESSIONS_DIR": str(paths["codex"]),
        "OPENCODE_DIR": str(paths["opencode"].parent),
        # A one-shot offline sync in this process, as its `sync --help` says; no browser, no update check.
        "AGENTSVIEW_NO_DAEMON": "1", "AGENTSVIEW_NO_BROWSER": "1", "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        # Nothing leaves the machine (and no network time-outs in its figures).
        "AGENTSVIEW_TELEMETRY_ENABLED": "0", "DO_NOT_TRACK": "1",
    }
    seconds, cpu, maxrss, tree_rss, stdout, stderr = measured([str(agentsview_binary()), "sync"], env, work)
    conn = sqlite3.connect(f"file:{data / 'sessions.db'}?mode=ro", uri=True)
    try:
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        sessions = dict(conn.execute("SELECT agent, count(*) FROM sessions GROUP BY agent").fetchall())
    finally:
        conn.close()
    said = [line for line in (stdout + stderr).splitlines() if line.startswith(("Sync complete", "Database"))]
    return Pass("agentsview", seconds, cpu, maxrss, tree_rss, messages, dir_mb(data),
                {"sessions": sessions, "said": said})


def run_engine(engine: str, home: Path, scratch: Path) -> Pass:
    work = scratch / engine
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        return run_agentsview(home, work) if engine == "agentsview" else run_ours(engine, home, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def warm_bytecode(scratch: Path) -> None:
    """Run our engines once, untimed, on a tiny tree (both of harvester's processes: parallel from the first
    byte), so that every module they import is compiled before the first timed round."""
    tiny = cached_tree(1)
    for root, script in ((ROOT, "naive_import.py"), (ROOT, "harvester_pass.py"), (COMPARE_ROOT, "harvester_pass.py")):
        if root is None:
            continue
        work = scratch / "warm"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        target = work / "naive.sqlite" if script == "naive_import.py" else work
        env = base_env() | {"HOME": str(work), "HARVESTER_PARALLEL_BYTES": "0"}
        subprocess.run([sys.executable, str(root / "bench" / script), str(tiny), str(target)], env=env, cwd=work,
                       check=True, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def warm(home: Path) -> None:
    """Read the tree once, untimed: every engine then starts from the same (warm) page cache."""
    for path in home.rglob("*"):
        if path.is_file():
            with path.open("rb") as f:
                while f.read(1 << 20):
                    pass


# -- summary ---------------------------------------------------------------------------------------
def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(rounds: list[dict[str, Pass]], mb: float) -> tuple[dict, dict]:
    engines = [e for e in ENGINES if all(e in r for r in rounds)]
    per_engine = {}
    for engine in engines:
        passes = [r[engine] for r in rounds]
        seconds = spread([p.seconds for p in passes])
        median_pass = sorted(passes, key=lambda p: p.seconds)[len(passes) // 2]
        per_engine[engine] = {
            "seconds": seconds, "mb_per_s": mb / seconds["median"], "events": median_pass.events,
            "events_per_s": median_pass.events / seconds["median"], "cpu_seconds": spread([p.cpu_seconds for p in passes]),
            "maxrss_mb": max(p.maxrss_mb for p in passes), "tree_rss_mb": max(p.tree_rss_mb for p in passes),
            "output_mb": median_pass.output_mb, "detail": median_pass.detail,
        }
    ratios = {}
    if "harvester" in engines:
        for other in (e for e in engines if e != "harvester"):
            # other's time over harvester's: > 1 means harvester is that many times as fast.
            wall = [r[other].seconds / r["harvester"].seconds for r in rounds]
            cpu = [r[other].cpu_seconds / r["harvester"].cpu_seconds for r in rounds]
            ratios[other] = {"wall": spread(wall), "cpu": spread(cpu), "target": TARGETS.get(other)}
    return per_engine, ratios


def report(manifest: dict, mb: float, per_engine: dict, ratios: dict, agentsview_note: str) -> None:
    parts = ", ".join(f"{agent} {size / 1e6:.0f} MB in {manifest['files'][agent]} files"
                      for agent, size in manifest["bytes"].items())
    print(f"\ntree: {mb:.0f} MB ({parts}), seed {manifest['seed']}, "
          f"{sum(manifest['secrets_planted'].values())} planted secrets")
    print(f"{'engine':<16} {'seconds (min-max)':>22} {'MB/s':>7} {'events/s':>9} {'events':>9} "
          f"{'CPU s':>7} {'RSS MB':>7} {'tree RSS':>8} {'out MB':>7}")
    for engine, s in per_engine.items():
        sec = s["seconds"]
        print(f"{LABELS[engine]:<16} {sec['median']:7.2f} ({sec['min']:6.2f}-{sec['max']:6.2f}) "
              f"{s['mb_per_s']:7.1f} {s['events_per_s']:9,.0f} {s['events']:9,} {s['cpu_seconds']['median']:7.1f} "
              f"{s['maxrss_mb']:7.0f} {s['tree_rss_mb']:8.0f} {s['output_mb']:7.0f}")
    if agentsview_note:
        print(f"agentsview: {agentsview_note}")
    print("events/s are each engine's own unit: harvester events, naive rows, decoded records, agentsview messages")
    for other, r in ratios.items():
        wall, cpu = r["wall"], r["cpu"]
        if other == "floor":
            print(f"harvester vs orjson floor: 1/{1 / wall['median']:.2f} of the floor's rate "
                  f"(rounds 1/{1 / wall['max']:.2f}-1/{1 / wall['min']:.2f}; by CPU 1/{1 / cpu['median']:.2f})")
            continue
        verdict = ""
        if r["target"]:
            verdict = f"; target >= {r['target']:g}x: {'met' if wall['median'] >= r['target'] else 'NOT met'}"
        print(f"harvester vs {other}: {wall['median']:.2f}x as fast (rounds {wall['min']:.2f}-{wall['max']:.2f}; "
              f"by CPU {cpu['median']:.2f}x){verdict}")
    harvester = per_engine.get("harvester", {}).get("detail", {})
    if "lock_share" in harvester:
        print(f"harvester held the bank's write lock {harvester['lock_seconds']:.1f} s, "
              f"{harvester['lock_share']:.0%} of its scan's wall time (the median round; target <= 40 %)")
    if harvester.get("problems"):
        print(f"WARNING: harvester recorded {harvester['problems']} problems on the generated tree")
    for engine, s in per_engine.items():
        if s["events"] == 0:
            print(f"WARNING: {LABELS[engine]} imported nothing: is the tree a home directory?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=300)
    parser.add_argument("--repeat", type=int, default=3, help="paired rounds (at least 3 for a median)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tree", type=Path, help="an existing generated home (default: the cached one)")
    parser.add_argument("--large", action="store_true",
                        help="the tree of a few large Claude Code sessions (bench/gen_large_sessions.py) instead")
    parser.add_argument("--engines", default=",".join(ENGINES[:4]), help=f"comma-separated subset of {ENGINES}")
    parser.add_argument("--no-install", action="store_true", help="do not install agentsview when missing")
    parser.add_argument("--json", type=Path, help="also write the results here ('-' for stdout)")
    parser.add_argument("--compare-root", type=Path,
                        help="another checkout (a git worktree of the commit before a change): its harvester_pass.py "
                             "runs as the engine 'before', in the same rounds")
    args = parser.parse_args()
    global COMPARE_ROOT
    engines = [e for e in args.engines.split(",") if e]
    if args.compare_root is not None:
        COMPARE_ROOT = args.compare_root.resolve()
        if "before" not in engines:
            engines.append("before")
    elif "before" in engines:
        parser.error("the engine 'before' needs --compare-root")
    if unknown := set(engines) - set(ENGINES):
        parser.error(f"unknown engines: {sorted(unknown)}")
    agentsview_note, agentsview_version = "", None
    if "agentsview" in engines:
        agentsview_version, agentsview_note = ensure_agentsview(install=not args.no_install)
        if agentsview_version is None:
            engines.remove("agentsview")
    if args.tree is None and args.large:
        from bench.gen_large_sessions import cached_tree as cached_large_tree

        args.tree = cached_large_tree(args.mb, args.seed)
    home = (args.tree or cached_tree(args.mb, args.seed)).resolve()  # the engines run in other directories
    manifest = json.loads((home / "manifest.json").read_text())
    mb = source_bytes(home) / 1e6
    warm(home)
    scratch = OUT / "backfill-work"
    warm_bytecode(scratch)
    load_before = os.getloadavg()
    rounds: list[dict[str, Pass]] = []
    for n in range(args.repeat):
        order = engines[n % len(engines):] + engines[:n % len(engines)]  # no engine always first or last
        done: dict[str, Pass] = {}
        for engine in order:
            done[engine] = run_engine(engine, home, scratch)
            p = done[engine]
            print(f"round {n + 1}/{args.repeat} {LABELS[engine]:<16} {p.seconds:7.2f} s  CPU {p.cpu_seconds:6.1f} s  "
                  f"RSS {p.maxrss_mb:5.0f} MB  {p.events:,} events", file=sys.stderr)
        rounds.append(done)
    shutil.rmtree(scratch, ignore_errors=True)
    per_engine, ratios = summarize(rounds, mb)
    report(manifest, mb, per_engine, ratios, agentsview_note)
    if args.json:
        results = {"tree": {"path": str(home), "mb": mb, **manifest}, "engines": per_engine, "ratios": ratios,
                   "agentsview": agentsview_version or agentsview_note,
                   "machine": {"cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()},
                   "rounds": [{e: asdict(p) for e, p in r.items()} for r in rounds]}
        text = json.dumps(results, indent=2) + "\n"
        if str(args.json) == "-":
            sys.stdout.write(text)
        else:
            args.json.write_text(text)


if __name__ == "__main__":
    main()
