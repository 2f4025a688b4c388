"""`harvester serve` on a bank of a million events: each page's server time, and (``--browser``) its first paint in
Debian's Chromium.

    python bench/bench_web.py [--bank bench/out/bank-1000000.sqlite] [--runs 15] [--browser]

The bank comes from bench/gen_bank.py (``python bench/gen_bank.py bench/out/bank-1000000.sqlite``). It is opened as
the viewer opens it (read-only, harvester/web/reading.py). Server time: the request through the whole application
(the guard, the page's queries, the template), in-process through Starlette's TestClient, after one warm-up
request; median and worst of ``--runs``. Pages: repositories; the sessions list (every repository, the largest,
one agent, a state filter, its live rows); the longest session's transcript (first page, and the page holding
an event deep in it, as a search hit opens it); a session's first page; search (a common word, a rare word, two
words, a phrase, with a repository filter); status; usage (30 days by agent, 90 by model). First paint (``--browser``): ``first-contentful-paint`` of
each page loaded in Chromium over the real server (uvicorn on loopback), the median of five loads.

Targets (issue 28): server time <= 100 ms, first paint <= 300 ms. Not a test: timings belong here.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvester import config  # noqa: E402
from harvester.parsers import HARNESSES  # noqa: E402
from harvester.web.access import cookie_name  # noqa: E402
from harvester.web.app import Served, create_app  # noqa: E402
from harvester.web.reading import LocalSource  # noqa: E402

PORT = 8765


def pages(bank: Path) -> list[tuple[str, str]]:
    """(name, path) of each page timed, chosen from the bank."""
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    try:
        longest = conn.execute("SELECT harness, native_id, event_count FROM sessions ORDER BY event_count DESC "
                               "LIMIT 1").fetchone()
        median = conn.execute("SELECT harness, native_id FROM sessions ORDER BY event_count LIMIT 1 OFFSET "
                              "(SELECT count(*) / 2 FROM sessions)").fetchone()
        # The largest repository: by identity key, or (a bank whose sessions have none, as gen_bank.py writes)
        # the largest bank id of sessions of unknown repository.
        keyed = conn.execute("SELECT repo_key FROM sessions WHERE repo_key IS NOT NULL GROUP BY repo_key "
                             "ORDER BY count(*) DESC LIMIT 1").fetchone()
        big_repo = ({"repo": keyed[0]} if keyed else {"repo": conn.execute(
            "SELECT bank_id FROM sessions GROUP BY bank_id ORDER BY count(*) DESC LIMIT 1").fetchone()[0], "unknown": 1})
        agent = conn.execute("SELECT harness FROM sessions GROUP BY harness ORDER BY count(*) DESC LIMIT 1"
                             ).fetchone()[0]
        common = conn.execute("SELECT term FROM events_fts_vocab ORDER BY doc DESC LIMIT 1 OFFSET 20").fetchone()
        rare = conn.execute("SELECT term FROM events_fts_vocab WHERE doc BETWEEN 20 AND 60 AND length(term) > 6 "
                            "LIMIT 1").fetchone()
    except sqlite3.OperationalError:  # no vocabulary table: words of the generator's own
        common, rare = ("bank",), ("migrations",)
    finally:
        conn.close()
    deep = max(longest[2] - 50, 0)
    return [
        ("repositories", "/"),
        ("sessions, every repository", "/sessions"),
        ("sessions, largest repository", "/sessions?" + urlencode(big_repo)),
        ("sessions, one agent", "/sessions?" + urlencode({"agent": agent})),
        ("sessions, state=ended", "/sessions?state=ended"),
        ("sessions, 5th page", "/sessions?offset=400"),
        ("sessions, live rows", "/sessions/rows"),
        (f"transcript, longest ({longest[2]:,} events), first page",
         "/session?" + urlencode({"h": longest[0], "id": longest[1]})),
        ("transcript, longest, page of a deep hit",
         "/session?" + urlencode({"h": longest[0], "id": longest[1], "start": deep // 100 * 100})),
        ("transcript, median session", "/session?" + urlencode({"h": median[0], "id": median[1]})),
        (f"search, common word ({common[0]})", "/search?" + urlencode({"q": common[0]})),
        (f"search, rare word ({rare[0]})", "/search?" + urlencode({"q": rare[0]})),
        ("search, two words", "/search?" + urlencode({"q": f"{common[0]} {rare[0]}"})),
        ("search, a phrase", "/search?" + urlencode({"q": '"the bank"'})),
        ("search, common word in the largest repository",
         "/search?" + urlencode({"q": common[0], "repo": ("bank:" if "unknown" in big_repo else "")
                                                    + big_repo["repo"]})),
        ("status", "/status"),
        ("usage, the last 30 days by agent", "/usage"),
        ("usage, the last 90 days by model", "/usage?days=90&by=model"),
        ("usage, the last 365 days by agent (the whole bank)", "/usage?days=365"),
    ]


def server_times(bank: Path, runs: int) -> None:
    from starlette.testclient import TestClient

    with tempfile.TemporaryDirectory() as home:
        settings = config.load({"HOME": home}, bank=str(bank), harness_names=HARNESSES)
        source = LocalSource(str(bank))
        app = create_app(Served(source, source, settings, "127.0.0.1", PORT, "t"))
        with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as client:
            client.cookies.set(cookie_name(PORT), "t")
            print(f"{'page':<58} {'median ms':>10} {'worst ms':>9}  bytes")
            for name, path in pages(bank):
                first = client.get(path)
                assert first.status_code == 200, (path, first.status_code, first.text[-500:])
                times = []
                for _ in range(runs):
                    started = time.perf_counter()
                    client.get(path)
                    times.append((time.perf_counter() - started) * 1000)
                print(f"{name[:58]:<58} {statistics.median(times):>10.1f} {max(times):>9.1f}  {len(first.content):,}")
        source.close()


# first-contentful-paint (the paint entry can come after the load event: waited for, buffered), and when the DOM was
# ready, both in ms from the navigation's start.
FIRST_PAINT = """() => new Promise((done) => {
  const dom = performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd;
  new PerformanceObserver((list, observer) => {
    const fcp = list.getEntriesByName('first-contentful-paint')[0];
    if (fcp) { observer.disconnect(); done([fcp.startTime, dom]); }
  }).observe({ type: 'paint', buffered: true });
  setTimeout(() => done([-1, dom]), 2000);
})"""


def first_paints(bank: Path) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as home:
        (Path(home) / "config.toml").write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_"))}
        env.update(HOME=home, HARVESTER_BANK=str(bank), HARVESTER_CONFIG=str(Path(home) / "config.toml"),
                   PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "harvester", "serve", "--port", "0"], env=env,
                                stdout=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().split()[-1]  # type: ignore[union-attr]
            base = url.split("?")[0].rstrip("/")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=os.environ.get("HARVESTER_CHROMIUM", "/usr/bin/chromium"),
                                            args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(url)
                print(f"\n{'page':<58} {'first paint ms':>15} {'DOM ready':>9}")
                floor = ("the floor: a page of nothing (no such session)", "/go?id=none")
                for name, path in [floor, *pages(bank)]:
                    paints = []
                    for _ in range(5):
                        page.goto(base + path, wait_until="load")
                        paints.append(page.evaluate(FIRST_PAINT))
                    fcp = statistics.median(p[0] for p in paints)
                    dom = statistics.median(p[1] for p in paints)
                    print(f"{name[:58]:<58} {fcp:>15.0f} {dom:>9.0f}")
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bank", type=Path, default=ROOT / "bench" / "out" / "bank-1000000.sqlite")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--browser", action="store_true", help="Also each page's first paint in Chromium.")
    args = parser.parse_args()
    if not args.bank.exists():
        sys.exit(f"no bank at {args.bank}: python bench/gen_bank.py {args.bank}")
    conn = sqlite3.connect(f"file:{args.bank}?mode=ro", uri=True)
    events, sessions = conn.execute("SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM sessions)").fetchone()
    conn.close()
    print(f"{args.bank}: {events:,} events in {sessions:,} sessions")
    started = time.process_time()
    sum(i * i for i in range(2_000_000))
    print(f"(a pure-Python loop took {(time.process_time() - started) * 1000:.0f} ms of CPU: the machine's load)\n")
    server_times(args.bank, args.runs)
    if args.browser:
        first_paints(args.bank)


if __name__ == "__main__":
    main()
