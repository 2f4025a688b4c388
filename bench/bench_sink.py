"""Forwarding into a real Hindsight 1.1.0 (tests/services.py: embedded PostgreSQL, no LLM, rrf, fakeembed).

    python bench/bench_sink.py [--events 244000] [--rounds 3] [--lag-samples 30]

1. Backfill, in paired rounds, the order rotated each round, each engine on a fresh server (its own
   PostgreSQL): a bank built by bench/gen_bank.py (``--events 244000`` gives about 1,000 sessions, the shapes
   of fixtures/*/real/ with this repository's vocabulary) forwarded by ``Forwarder.forward()`` (a copy of the
   bank each round: forwarding writes its cursors there), every document followed until the server applied
   it; and the reference, a naive forwarder that POSTs each session's whole document synchronously
   (``async: false``; no outbox, no cursor, no operation tracking): the server's own floor. Per engine: seconds,
   sessions/s, turn lines/s, the client's CPU and the server's (hindsight-api and its PostgreSQL, from /proc);
   the ratio naive seconds / harvester seconds within each round, its median and range.
2. Lag: ``harvester run`` with the sink configured; a line appended to a Claude Code transcript, timed until
   the server's document holds it (GET document), p50 / p99 over ``--lag-samples`` appends.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.gen_bank import build as build_bank  # noqa: E402
from harvester.bank import open_bank  # noqa: E402
from harvester.config.sinks import HindsightSettings, bank_for  # noqa: E402
from harvester.sinks.document import build  # noqa: E402
from harvester.sinks.forward import Forwarder  # noqa: E402
from harvester.sinks.hindsight import Hindsight  # noqa: E402
from tests.services import running_hindsight  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def _documents(bank_path: Path) -> list[tuple[str, object]]:
    out = []
    with open_bank(bank_path) as bank:
        cur = bank.conn.execute("SELECT * FROM sessions")
        names = [d[0] for d in cur.description]
        for row in cur.fetchall():
            s = dict(zip(names, row, strict=True))
            doc = build(s, bank.session_events(s["id"]), host="bench")
            if doc.lines:
                out.append((bank_for("coding-agent::{gitProject}", s), doc))
    return out


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every live descendant (utime + stime, children reaped included)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / TICKS
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


def _server_cpu(server) -> float:
    """hindsight-api's tree and its PostgreSQL's (the postmaster is not its child)."""
    pg = server.root / "postmaster.pid"
    postmaster = int(pg.read_text().split()[0]) if pg.exists() else None
    return _tree_cpu(server.pid) + (_tree_cpu(postmaster) if postmaster else 0.0)


def _client_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def naive(url: str, docs: list) -> None:
    with httpx.Client(base_url=url, timeout=120) as c:
        for bank, doc in docs:
            item = {"content": doc.text(), "document_id": doc.document_id, "context": doc.context,
                    "metadata": doc.metadata, "tags": doc.tags}
            c.post(f"/v1/default/banks/{quote(bank, safe='')}/memories",
                   json={"items": [item], "async": False}).raise_for_status()


def harvester(url: str, bank_path: Path) -> tuple[int, int]:
    with open_bank(bank_path) as bank:
        f = Forwarder(bank, HindsightSettings(url=url), Hindsight(url), host="bench")
        report = f.forward()
        forwarded, lines = report.forwarded, report.lines
        while report.waiting:
            report = f.forward()
            forwarded, lines = forwarded + report.forwarded, lines + report.lines
        if report.errors:
            raise SystemExit(f"harvester: {report.errors[:3]}")
        return forwarded, lines


def one(engine: str, bank_path: Path, docs: list, work: Path) -> dict[str, float]:
    with running_hindsight() as server:
        copy = work / "bank-copy.sqlite"
        shutil.copyfile(bank_path, copy)
        server_cpu, client_cpu, t0 = _server_cpu(server), _client_cpu(), time.monotonic()
        if engine == "naive":
            naive(server.url, docs)
            forwarded = len(docs)
        else:
            forwarded, _ = harvester(server.url, copy)
        seconds = time.monotonic() - t0
        out = {"seconds": seconds, "client_cpu": _client_cpu() - client_cpu,
               "server_cpu": _server_cpu(server) - server_cpu, "documents": forwarded}
        copy.unlink()
    return out


def lag(url: str, samples: int) -> list[float]:
    from tests.daemon import FAST, Daemon
    from tests.helpers import ClaudeSession

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.toml").write_text(FAST + f'\n[sinks.hindsight]\nurl = "{url}"\n')
        daemon = Daemon(Path(tmp))
        session = ClaudeSession(daemon.home, "/work/lag-bench", live=True)
        session.write(session.user("first"))
        daemon.start()
        doc = f"{url}/v1/default/banks/coding-agent%3A%3Alag-bench/documents/harvester%3Aclaude-code%3A{session.id}"
        out = []
        try:
            for n in range(samples):
                marker = f"lag probe {n}"
                t0 = time.monotonic()
                session.write(session.user(marker))
                while marker not in httpx.get(doc).json().get("original_text", ""):
                    time.sleep(0.01)
                    if time.monotonic() - t0 > 60:
                        raise SystemExit(f"lag probe {n} never arrived")
                out.append(time.monotonic() - t0)
                time.sleep(0.2)
        finally:
            daemon.stop()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=244_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--lag-samples", type=int, default=30, help="0: no lag")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bank_path = work / "bank.sqlite"
        build_bank(bank_path, a.events, 7)
        docs = _documents(bank_path)
        lines = sum(len(d.lines) for _, d in docs)
        print(f"backfill: {len(docs)} sessions, {lines:,} turn lines; load {os.getloadavg()[0]:.1f}", flush=True)
        rounds = []
        for n in range(a.rounds):
            order = ("harvester", "naive") if n % 2 == 0 else ("naive", "harvester")
            got = {engine: one(engine, bank_path, docs, work) for engine in order}
            rounds.append(got)
            h, v = got["harvester"], got["naive"]
            print(f"  round {n + 1} ({order[0]} first): harvester {h['seconds']:.1f} s (client {h['client_cpu']:.1f}"
                  f" + server {h['server_cpu']:.1f} CPU-s, {h['documents']} documents); naive {v['seconds']:.1f} s "
                  f"(client {v['client_cpu']:.1f} + server {v['server_cpu']:.1f}); ratio "
                  f"{v['seconds'] / h['seconds']:.2f}x", flush=True)
        for engine in ("harvester", "naive"):
            s = statistics.median(r[engine]["seconds"] for r in rounds)
            cpu = statistics.median(r[engine]["client_cpu"] + r[engine]["server_cpu"] for r in rounds)
            print(f"  {engine:<10} median {s:.1f} s, {len(docs) / s:.1f} sessions/s, {lines / s:,.0f} lines/s, "
                  f"{cpu:.1f} CPU-s (client + server)")
        ratios = sorted(r["naive"]["seconds"] / r["harvester"]["seconds"] for r in rounds)
        cpus = sorted((r["naive"]["client_cpu"] + r["naive"]["server_cpu"])
                      / (r["harvester"]["client_cpu"] + r["harvester"]["server_cpu"]) for r in rounds)
        print(f"  harvester vs naive, median of per-round ratios: {statistics.median(ratios):.2f}x as fast "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f}); CPU: naive takes {statistics.median(cpus):.2f}x harvester's; "
              f"target >= 1x; load {os.getloadavg()[0]:.1f}")
    if a.lag_samples:
        with running_hindsight() as server:
            probes = sorted(lag(server.url, a.lag_samples))
        print(f"lag append -> in the document, {len(probes)} appends: p50 {statistics.median(probes) * 1000:.0f} ms, "
              f"p99 {probes[min(len(probes) - 1, int(len(probes) * 0.99))] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
