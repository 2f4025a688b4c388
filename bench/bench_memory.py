"""Peak memory of `harvester scan` on one very large store of each shape (issue 13: at most 250 MB).

Generates under bench/out/memory/ (kept between runs, remade when the scale changes) a Cursor
``state.vscdb`` (2 GB at scale 1.0), an opencode database (1 GB), one Claude Code session (500 MB) and
one Codex ``.jsonl.zst`` rollout (200 MB) — see bench/gen_stores.py — then scans each in a child
process, with HOME at the generated store and a fresh bank, sampling the resident memory of the scan
and of its second process ten times a second. With ``--before REV`` the same scan runs on that
revision's code too (exported with ``git archive``, nothing else touched), for the number before.

    python bench/bench_memory.py [--scale 1.0] [--before main] [--shape cursor-vscdb ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_stores import SHAPES  # noqa: E402

TARGET_MB = 250
OUT = ROOT / "bench" / "out" / "memory"


def generated(name: str, scale: float) -> Path:
    """The shape's home directory, generated unless a run at this scale left it."""
    generate, size, _ = SHAPES[name]
    base = OUT / name
    marker = base / "generated.json"
    if marker.exists() and orjson.loads(marker.read_bytes()).get("scale") == scale:
        return base / "home"
    shutil.rmtree(base, ignore_errors=True)
    started = time.monotonic()
    written = generate(base / "home", int(size * scale))
    marker.write_bytes(orjson.dumps({"scale": scale, "bytes": written}))
    print(f"  generated {name}: {written / 1e6:.0f} MB in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return base / "home"


def _tree(pid: int) -> list[int]:
    """The process and its descendants (the scan's second process, its resource tracker)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += parents.get(p, [])
    return out


def _kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(home: Path, harness: str, source: Path | None) -> dict:
    """Scan ``home`` in a child process; the peak of its (and its children's) resident memory."""
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CLAUDE_", "CODEX_", "VSCODE_"))}
        env.update(HOME=str(home), HARVESTER_LOG_LEVEL="error", PYTHONPATH=str(source or ROOT))
        command = [sys.executable, "-m", "harvester", "--bank", f"{tmp}/bank.sqlite", "scan", "--harness", harness,
                   "--json"]
        started = time.monotonic()
        proc = subprocess.Popen(command, env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peak_sum, peaks = 0, {}
        while proc.poll() is None:
            pids = _tree(proc.pid)
            peak_sum = max(peak_sum, sum(_kb(p, "VmRSS:") for p in pids))
            for p in pids:
                peaks[p] = max(peaks.get(p, 0), _kb(p, "VmHWM:"))
            time.sleep(0.1)
        out, err = proc.communicate()
        seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"scan failed ({proc.returncode}): {err.decode()[-2000:]}")
    report = orjson.loads(out)
    events = sum(h["events_added"] for h in report["harnesses"])
    return {"peak_mb": peak_sum / 1024, "largest_process_mb": max(peaks.values(), default=0) / 1024,
            "seconds": seconds, "events": events}


def export(rev: str) -> Path:
    """``rev``'s harvester package in bench/out, to run the same scan on the code before."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], check=True, capture_output=True,
                            text=True).stdout.strip()
    target = OUT / f"src-{commit[:12]}"
    if not (target / "harvester").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "harvester"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="sizes relative to 2 GB / 1 GB / 500 MB / 200 MB")
    parser.add_argument("--before", default="", help="a git revision to measure too (e.g. main)")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only this shape (repeatable)")
    args = parser.parse_args()
    before = export(args.before) if args.before else None
    rows = []
    for name in args.shape or list(SHAPES):
        home = generated(name, args.scale)
        size = orjson.loads((OUT / name / "generated.json").read_bytes())["bytes"]
        after = measure(home, SHAPES[name][2], None)
        old = measure(home, SHAPES[name][2], before) if before else None
        rows.append((name, size, after, old))
        verdict = "ok" if after["peak_mb"] <= TARGET_MB else "OVER"
        line = (f"{name:14} {size / 1e6:7.0f} MB  peak {after['peak_mb']:6.0f} MB ({verdict}; largest process "
                f"{after['largest_process_mb']:.0f} MB)  {after['seconds']:6.1f} s  {after['events']} events")
        if old is not None:
            line += f"  | before: peak {old['peak_mb']:.0f} MB, {old['seconds']:.1f} s, {old['events']} events"
        print(line, flush=True)
    worst = max(after["peak_mb"] for _, _, after, _ in rows)
    print(f"target: every shape at most {TARGET_MB} MB of resident memory (scan and its second process); "
          f"worst {worst:.0f} MB at scale {args.scale}")


if __name__ == "__main__":
    main()
