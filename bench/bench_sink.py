"""Forwarding into a real Hindsight 1.1.0 (tests/services.py: embedded PostgreSQL, no LLM, rrf, fakeembed).

    python bench/bench_sink.py [--events 244000] [--lag-samples 30]

1. Backfill: a bank built by bench/gen_bank.py (``--events 244000`` gives about 1,000 sessions, the shapes of
   fixtures/*/real/ with this repository's vocabulary) forwarded by ``Forwarder.forward()`` into an empty
   server: sessions/s and turns (lines)/s, each document followed until the server applied it. Beside it,
   in the same run and on a fresh server, the reference: a naive forwarder that POSTs each session's whole
   document synchronously (no outbox, no cursor, no operation tracking): the server's own floor.
2. Lag: ``harvester run`` with the sink configured; a line appended to a Claude Code transcript, timed until
   the server's document holds it (GET document), p50 / p99 over ``--lag-samples`` appends.
"""

from __future__ import annotations

import argparse
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


def naive(url: str, docs: list) -> float:
    t0 = time.monotonic()
    with httpx.Client(base_url=url, timeout=120) as c:
        for bank, doc in docs:
            item = {"content": doc.text(), "document_id": doc.document_id, "context": doc.context,
                    "metadata": doc.metadata, "tags": doc.tags}
            c.post(f"/v1/default/banks/{quote(bank, safe='')}/memories", json={"items": [item], "async": False})
    return time.monotonic() - t0


def harvester(url: str, bank_path: Path) -> tuple[float, int, int]:
    with open_bank(bank_path) as bank:
        f = Forwarder(bank, HindsightSettings(url=url), Hindsight(url), host="bench")
        t0 = time.monotonic()
        report = f.forward()
        while report.waiting:
            report = f.forward()
        return time.monotonic() - t0, report.forwarded, report.lines


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
    p.add_argument("--lag-samples", type=int, default=30)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bank_path = Path(tmp) / "bank.sqlite"
        build_bank(bank_path, a.events, 7)
        docs = _documents(bank_path)
        lines = sum(len(d.lines) for _, d in docs)
        with running_hindsight() as server:
            seconds, forwarded, sent_lines = harvester(server.url, bank_path)
            probes = lag(server.url, a.lag_samples)
        with running_hindsight() as server:
            floor = naive(server.url, docs)
    print(f"backfill: {len(docs)} sessions, {lines:,} turn lines")
    print(f"  harvester: {seconds:.1f} s, {forwarded / seconds:.1f} sessions/s, {sent_lines / seconds:,.0f} lines/s")
    print(f"  naive sync POST per session (same sessions, fresh server): {floor:.1f} s, "
          f"{len(docs) / floor:.1f} sessions/s; harvester at {floor / seconds:.2f}x its speed")
    probes.sort()
    print(f"lag append -> in the document, {len(probes)} appends: p50 {statistics.median(probes) * 1000:.0f} ms, "
          f"p99 {probes[min(len(probes) - 1, int(len(probes) * 0.99))] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
