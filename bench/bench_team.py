"""The team bank (issue 15) on a real PostgreSQL 18 (tests/services.py): push throughput, and append-to-searchable lag.

    python bench/bench_team.py [--events 1000000] [--rounds 3] [--hosts 4] [--appends 50] [--json FILE]

1. Push throughput. A bank of ``--events`` events from bench/gen_bank.py (built once into
   ``bench/out/bank-<events>.sqlite`` and reused), copied for each round. In each round three engines run,
   each in a fresh process into a fresh database of the same server, the order rotated round by round:
   - **harvester**: ``Pusher.push()`` (harvester/team/push.py) as ``harvester team push`` runs it: the outbox
     filled from the bank, then every session and event pushed in batches (COPY into a temporary table,
     ``INSERT ... ON CONFLICT``) into the team schema (``tsvector`` from the search text the client prepared +
     GIN index).
   - **floor**: the same rows read from the same SQLite bank and COPYed into two tables with the same columns
     and no index, key, ``tsvector`` or GIN at all, in one transaction. What no push can go below.
   - **naive**: what a straightforward importer does: the team schema (the same migrations, tsvector and GIN
     included, each event's vector made from the same search text), then per session ``INSERT ... RETURNING
     id`` and psycopg's ``executemany`` of an ``INSERT`` for its events (psycopg 3 pipelines it), one
     transaction per session; no outbox, no cursor, no
     idempotency.
   Each: wall seconds of its work (the process's own measure, from before the bank is opened to the last
   commit), events/s and MB/s (the bytes of the rows' values as text, about what a text COPY sends), the
   client's CPU seconds (wait4; its start-up included) and peak RSS (VmHWM sampled from /proc), the server's
   CPU seconds (the postmaster's processes, from /proc), the database's size after. Ratios harvester/floor
   and harvester/naive (of events/s, so above 1 is faster) within each round; medians over rounds.
   ``--engines harvester,floor`` runs some of them.
2. Lag. ``--hosts`` ``harvester run`` services, each with its own HOME, bank, config (the tests' short timings,
   tests/daemon.py FAST) and ``HARVESTER_HOST_NAME``, all pushing to one team bank (the last round's harvester
   database, vacuumed and analyzed as autovacuum leaves it: the bank's events already there, as a team's bank
   holds them; ``--no-push``: an empty one). Each host has a git clone with the same origin and a live Claude
   Code transcript in it; one thread per host appends a line with a unique word (write + close), then polls
   every 10 ms until ``count(*) ... WHERE search @@ plainto_tsquery('simple', word)`` finds it in
   ``harvester.events``; the local bank's FTS5 index is polled too, so the lag splits into capture (append ->
   in the local bank) and push (local -> team). ``--appends`` per host, all hosts at once (a random pause of
   0-200 ms after each, so they do not march in step). p50 / p99.

Results: a table on stdout, everything in ``bench/out/team-<events>.json`` (or ``--json FILE``). No target is
asserted here; the machine is shared: compare ratios, not seconds across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

from bench.bench_backfill import base_env, measured  # noqa: E402
from harvester.team.push import EVENT_COLUMNS, SESSION_COLUMNS  # noqa: E402

ENGINES = ("harvester", "floor", "naive")
COMPARE_ROOT = ROOT  # --compare-root: the checkout the "before" engine pushes with
POLL = 0.01
INTEGER = {"seq": "integer", "is_error": "boolean", "recall": "boolean", "tokens_in": "bigint", "tokens_out": "bigint",
           "tokens_cache_read": "bigint", "tokens_cache_write": "bigint", "tokens_reasoning": "bigint",
           "event_count": "integer", "redactions": "integer"}


# -- the engines, each run as `python bench/bench_team.py --engine NAME BANK URL` in a fresh process -------------
def engine_harvester(bank_path: Path, url: str) -> dict[str, Any]:
    from harvester.bank import open_bank
    from harvester.config.team import TeamSettings
    from harvester.team.push import Pusher
    from harvester.team.server import TeamBank

    started = time.perf_counter()
    bank = open_bank(bank_path, archive=False)
    push = Pusher(bank, TeamBank(TeamSettings(url=url, host="bench")))  # type: ignore[arg-type]
    report = push.push()
    push.team.close()
    bank.close()
    seconds = time.perf_counter() - started
    if report.stopped_by or report.failed:
        raise SystemExit(f"push stopped: {report.stopped_by} {report.errors[:3]}")
    return {"seconds": seconds, "events": report.events, "sessions": report.sessions}


def _column_types(columns: tuple[str, ...]) -> str:
    return ", ".join(f"{c} {INTEGER.get(c, 'text')}" for c in columns)


def engine_floor(bank_path: Path, url: str) -> dict[str, Any]:
    import psycopg

    started = time.perf_counter()
    local = sqlite3.connect(f"file:{bank_path}?mode=ro", uri=True)
    sessions = events = 0
    with psycopg.connect(url) as conn:  # one transaction, committed on leaving
        conn.execute("CREATE SCHEMA floor")
        conn.execute(f"CREATE TABLE floor.sessions (id bigint, harness text, native_id text, "
                     f"{_column_types(SESSION_COLUMNS)})")
        conn.execute(f"CREATE TABLE floor.events (session_id bigint, {_column_types(EVENT_COLUMNS)})")
        cur = conn.cursor()
        with cur.copy(f"COPY floor.sessions (id, harness, native_id, {', '.join(SESSION_COLUMNS)}) FROM STDIN") as copy:
            for row in local.execute(f"SELECT id, harness, native_id, {', '.join(SESSION_COLUMNS)} FROM sessions"):
                copy.write_row(row)
                sessions += 1
        with cur.copy(f"COPY floor.events (session_id, {', '.join(EVENT_COLUMNS)}) FROM STDIN") as copy:
            for row in local.execute(f"SELECT session_id, {', '.join(EVENT_COLUMNS)} FROM events"):
                copy.write_row(row)
                events += 1
    local.close()
    return {"seconds": time.perf_counter() - started, "events": events, "sessions": sessions}


def engine_naive(bank_path: Path, url: str) -> dict[str, Any]:
    import psycopg

    from harvester.team import schema

    started = time.perf_counter()
    local = sqlite3.connect(f"file:{bank_path}?mode=ro", uri=True)
    machine = str(uuid.uuid4())
    sessions = events = 0
    insert_event = (f"INSERT INTO harvester.events (session_id, {', '.join(EVENT_COLUMNS)}, search) VALUES "
                    f"(%s, {', '.join(['%s'] * len(EVENT_COLUMNS))}, to_tsvector('simple'::regconfig, %s))")
    insert_session = (f"INSERT INTO harvester.sessions (harness, native_id, machine_id, repository_id, host, os_user, "
                      f"{', '.join(SESSION_COLUMNS)}) VALUES (%s, %s, %s, %s, 'naive', 'naive', "
                      f"{', '.join(['%s'] * len(SESSION_COLUMNS))}) RETURNING id")
    with psycopg.connect(url, autocommit=True) as conn:
        schema.migrate(conn)
        conn.execute("INSERT INTO harvester.machines (id, host, os_user) VALUES (%s, 'naive', 'naive')", (machine,))
        repos: dict[str, int] = {}
        cur = conn.cursor()
        for row in local.execute(f"SELECT id, harness, native_id, {', '.join(SESSION_COLUMNS)} FROM sessions").fetchall():
            local_id, harness, native_id, *values = row
            bank_id = values[0]
            with conn.transaction():
                if bank_id not in repos:
                    repos[bank_id] = conn.execute(
                        "INSERT INTO harvester.repositories (repo_key, name) VALUES (%s, %s) RETURNING id",
                        (bank_id, bank_id)).fetchone()[0]
                session_id = conn.execute(insert_session, (harness, native_id, machine, repos[bank_id],
                                                           *values)).fetchone()[0]
                rows = local.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE session_id = ? ORDER BY seq",
                                     (local_id,)).fetchall()
                cur.executemany(insert_event, [(session_id, *r[:9], bool(r[9]), *r[10:18], bool(r[18]),
                                              schema.search_text(r[3], r[4])) for r in rows])
            sessions += 1
            events += len(rows)
    local.close()
    return {"seconds": time.perf_counter() - started, "events": events, "sessions": sessions}


def run_engine(argv: list[str]) -> None:
    name, bank_path, url = argv
    result = {"harvester": engine_harvester, "floor": engine_floor, "naive": engine_naive}[name](Path(bank_path), url)
    print(json.dumps(result))


# -- measuring ----------------------------------------------------------------------------------------------
def bank_for(events: int) -> Path:
    path = OUT / f"bank-{events}.sqlite"
    if not path.exists():
        from bench.gen_bank import build

        OUT.mkdir(parents=True, exist_ok=True)
        part = path.with_name(path.name + ".part")
        part.unlink(missing_ok=True)
        print(f"building {path} (bench/gen_bank.py, ~4,000 events/s) ...", file=sys.stderr)
        build(part, events, 7)
        with contextlib.closing(sqlite3.connect(part)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        part.rename(path)
    return path


def copy_bank(source: Path, bank: Path) -> None:
    """A copy of the bank as SQLite sees it (what its WAL holds included), for one round to write into."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(bank) + suffix).unlink(missing_ok=True)
    with contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src, \
            contextlib.closing(sqlite3.connect(bank)) as dst:
        src.backup(dst)


def row_bytes(bank: Path) -> dict[str, Any]:
    """The rows the push sends, measured once per bank (cached beside it): counts, and the bytes of their values
    as text (about a text COPY's stream)."""
    cache = bank.with_name(bank.name + ".rows.json")
    stat = bank.stat()
    if cache.exists():
        found = json.loads(cache.read_text())
        if found.get("mtime") == stat.st_mtime and found.get("size") == stat.st_size:
            return found

    def width(columns: tuple[str, ...]) -> str:
        return " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in columns)

    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True)
    events, ebytes, tbytes = conn.execute(f"SELECT count(*), sum({width(EVENT_COLUMNS)}), "
                                          "sum(length(CAST(text AS BLOB))) FROM events").fetchone()
    sessions, sbytes = conn.execute(f"SELECT count(*), sum({width(SESSION_COLUMNS)}) FROM sessions").fetchone()
    conn.close()
    found = {"mtime": stat.st_mtime, "size": stat.st_size, "events": events, "sessions": sessions,
             "row_bytes": ebytes + sbytes, "text_bytes": tbytes, "file_bytes": stat.st_size}
    cache.write_text(json.dumps(found))
    return found


def server_cpu(pids: list[int]) -> float:
    """CPU seconds of the postmaster and its processes so far: its own and what it reaped (backends that ended),
    plus each live child's. Differences of this over a run are the server's share of it."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for n, pid in enumerate(pids):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
            if n == 0:
                total += int(fields[13]) + int(fields[14])  # cutime, cstime: the children it waited for
    return total / tick


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def one_pass(pg: Any, name: str, bank: Path, dbname: str) -> dict[str, Any]:
    url = pg.uri(dbname)
    env = base_env()
    env = {k: v for k, v in env.items() if not k.startswith(("HARVESTER_", "PG"))}
    env.update(PYTHONPATH=str(ROOT), HARVESTER_CONFIG=str(bank.parent / "none.toml"))
    (bank.parent / "none.toml").write_text("")
    cpu_before = server_cpu(pg.pids)
    script, engine = (__file__, name) if name != "before" else (str(COMPARE_ROOT / "bench" / "bench_team.py"),
                                                                 "harvester")
    if name == "before":  # the push of another checkout (the commit before a change), in the same round
        env["PYTHONPATH"] = str(COMPARE_ROOT)
    wall, cpu, rss, _, out, _ = measured([sys.executable, script, "--engine", engine, str(bank), url], env, bank.parent)
    # Its backends gone (and reaped, so their CPU is the postmaster's cutime), then the server's share.
    deadline = time.monotonic() + 30
    while int(pg.psql(f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{dbname}'").strip()) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    server = server_cpu(pg.pids) - cpu_before
    result = json.loads(out.strip().splitlines()[-1])
    table = "floor.events" if name == "floor" else "harvester.events"
    there = int(pg.psql(f"SELECT count(*) FROM {table}", dbname).strip())
    if there != result["events"]:
        raise SystemExit(f"{name}: {result['events']} events sent, {there} in {table}")
    size = int(pg.psql(f"SELECT pg_database_size('{dbname}')").strip())
    result.update(engine=name, process_seconds=wall, cpu_seconds=cpu, peak_rss_mb=rss, server_cpu_seconds=server,
                  database_mb=size / 1e6, rows_there=there)
    return result


def throughput(pg: Any, source: Path, rounds: int, work: Path, keep_last: bool,
               engines: tuple[str, ...] = ENGINES) -> tuple[list[dict], str | None]:
    rows = row_bytes(source)
    passes: list[dict] = []
    kept = None
    for r in range(rounds):
        bank = work / "bank.sqlite"
        copy_bank(source, bank)
        warm(bank)
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for n, name in enumerate(order):
            if n and name in ("harvester", "before"):  # a push writes its cursors into the bank: each its own copy
                copy_bank(source, bank)
                warm(bank)
            dbname = f"team_{name}_{r}"
            result = one_pass(pg, name, bank, dbname)
            result.update(round=r, events_per_s=result["events"] / result["seconds"],
                          events_per_cpu_s=result["events"] / (result["cpu_seconds"] + result["server_cpu_seconds"]),
                          mb_per_s=rows["row_bytes"] / 1e6 / result["seconds"])
            passes.append(result)
            print(f"  round {r + 1}/{rounds} {name:9} {result['seconds']:8.1f} s  {result['events_per_s']:9,.0f} ev/s  "
                  f"client CPU {result['cpu_seconds']:6.1f} s  server CPU {result['server_cpu_seconds']:6.1f} s  "
                  f"RSS {result['peak_rss_mb']:5.0f} MB  db {result['database_mb']:6.0f} MB", file=sys.stderr)
            if keep_last and r == rounds - 1 and name == "harvester":
                kept = dbname
            else:
                pg.psql(f'DROP DATABASE "{dbname}"')
    return passes, kept


def median_of(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(passes: list[dict], rounds: int, engines: tuple[str, ...] = ENGINES) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in engines:
        mine = [p for p in passes if p["engine"] == name]
        out[name] = {key: median_of([p[key] for p in mine]) for key in
                     ("seconds", "events_per_s", "mb_per_s", "events_per_cpu_s", "cpu_seconds", "server_cpu_seconds",
                      "peak_rss_mb", "database_mb")}
    by_round = {(p["round"], p["engine"]): p for p in passes}
    for other in [e for e in ("floor", "naive", "before") if e in engines and "harvester" in engines]:
        ratios = [by_round[(r, other)]["seconds"] / by_round[(r, "harvester")]["seconds"] for r in range(rounds)]
        cpu = [(by_round[(r, other)]["cpu_seconds"] + by_round[(r, other)]["server_cpu_seconds"])
               / (by_round[(r, "harvester")]["cpu_seconds"] + by_round[(r, "harvester")]["server_cpu_seconds"])
               for r in range(rounds)]
        out[f"harvester/{other}"] = {"speed": median_of(ratios), "cpu": median_of(cpu)}
    return out


# -- lag ----------------------------------------------------------------------------------------------------
FAST = """
[timings]
debounce_ms = 20
unfinished_seconds = 0.3
recent_minutes = 0.02
idle_end_minutes = 30
reconcile_minutes = 30
poll_seconds = 0.3
heartbeat_seconds = 0.3
"""  # tests/daemon.py's


class Host:
    """One simulated machine: HOME with a clone of acme/shop and a live Claude Code session in it, its own bank
    and config, ``harvester run`` in a subprocess."""

    def __init__(self, work: Path, n: int, url: str) -> None:
        from tests.helpers import ClaudeSession, make_repo

        self.n, self.name = n, f"host-{n}"
        self.root = work / self.name
        self.home, self.bank = self.root / "home", self.root / "bank.sqlite"
        self.home.mkdir(parents=True)
        self.config = self.root / "config.toml"
        self.config.write_text(f'team_bank = "{url}"\n{FAST}')
        repo = make_repo(self.home / "src" / "shop", origin="git@github.com:acme/shop.git")
        self.session = ClaudeSession(self.home, str(repo), live=True)
        self.proc: subprocess.Popen | None = None
        self.log = self.root / "service.log"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in base_env().items() if not k.startswith(("HARVESTER_", "PG"))}
        env.update(HOME=str(self.home), HARVESTER_BANK=str(self.bank), HARVESTER_CONFIG=str(self.config),
                   HARVESTER_RUNTIME_DIR=str(self.root / "run"), HARVESTER_HOST_NAME=self.name,
                   HARVESTER_LOG_LEVEL="info", PYTHONPATH=str(ROOT))
        return env

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "harvester", "run"], env=self.env(), cwd=self.root,
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def append(self, n: int, word: str) -> None:
        s = self.session
        if n % 2 == 0:
            s.write(s.user(f"Where does {word} get parsed? Look at the push and the outbox."))
        else:
            s.write(s.assistant(f"The {word} path goes through push.py, then the COPY into the temporary table."))


def probe(host: Host, url: str, appends: int, seed: int, out: list[dict], errors: list[str],
          start: threading.Barrier, probes: list[float]) -> None:
    import psycopg

    rng = random.Random(seed)
    # Not `... LIMIT 1` (nor EXISTS): for a word it has no statistics of, the planner expects ~100 matches and
    # takes a sequential scan to find the first, 40 ms on 20,000 events and growing with the bank; count(*)
    # goes through the GIN index (1-7 ms, the pending list included).
    team_q = "SELECT count(*) FROM harvester.events WHERE search @@ plainto_tsquery('simple', %s)"
    local_q = "SELECT 1 FROM events_fts WHERE events_fts MATCH ? LIMIT 1"
    try:
        with psycopg.connect(url, autocommit=True) as team:
            local = sqlite3.connect(f"file:{host.bank}?mode=ro", uri=True, timeout=5)
            start.wait()
            for n in range(appends):
                word = f"lag{host.n}x{n:03d}q{uuid.uuid4().hex[:8]}"
                t0 = time.monotonic()
                host.append(n, word)
                local_at = None
                while True:
                    now = time.monotonic()
                    if local_at is None and local.execute(local_q, (word,)).fetchone():
                        local_at = now - t0
                    asked = time.perf_counter()
                    hit = team.execute(team_q, (word,)).fetchone()[0]
                    probes.append(time.perf_counter() - asked)
                    if hit:
                        found = time.monotonic() - t0
                        break
                    if now - t0 > 60:
                        raise RuntimeError(f"{host.name}: append {n} not in the team bank after 60 s")
                    time.sleep(POLL)
                out.append({"host": host.name, "n": n, "seconds": found,
                            "local_seconds": local_at if local_at is not None else found})
                time.sleep(rng.uniform(0, 0.2))
            local.close()
    except Exception as exc:  # reported by the caller
        errors.append(f"{host.name}: {exc!r}")
        with contextlib.suppress(threading.BrokenBarrierError):
            start.abort()


def lag(pg: Any, dbname: str, hosts: int, appends: int, work: Path) -> dict[str, Any]:
    url = pg.uri(dbname)
    import psycopg

    # A team bank in its steady state, as autovacuum keeps it: analyzed, the GIN index's pending list merged.
    # Right after a bulk push that list holds megabytes that every search reads through (3-7 ms a probe, 400
    # probes a second here: the probes alone would take a core).
    with psycopg.connect(url, autocommit=True) as conn:
        before = 0
        if conn.execute("SELECT to_regclass('harvester.events')").fetchone()[0] is not None:
            conn.execute("VACUUM (ANALYZE) harvester.events")
            before = conn.execute("SELECT count(*) FROM harvester.events").fetchone()[0]
    machines = [Host(work, n, url) for n in range(hosts)]
    for m in machines:
        m.session.write(m.session.user(f"first prompt on {m.name}"))
    samples: list[dict] = []
    errors: list[str] = []
    probes: list[float] = []  # each search query's own time, as the prober sees it
    try:
        for m in machines:
            m.start()
        # Each host's first line in the team bank: the services run, the schema is there, each machine's row.
        deadline = time.monotonic() + 120
        with psycopg.connect(url, autocommit=True) as conn:
            while True:
                there = 0
                if conn.execute("SELECT to_regclass('harvester.sessions')").fetchone()[0] is not None:  # migrated
                    there = conn.execute("SELECT count(DISTINCT host) FROM harvester.sessions WHERE host = ANY(%s)",
                                         ([m.name for m in machines],)).fetchone()[0]
                if there == hosts:
                    break
                for m in machines:
                    if m.proc is not None and m.proc.poll() is not None:
                        raise SystemExit(f"{m.name}'s service exited: {m.log.read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise SystemExit(f"only {there} of {hosts} hosts pushed their first line within 120 s")
                time.sleep(0.1)
        time.sleep(1.0)  # the first passes settle
        barrier = threading.Barrier(hosts)
        threads = [threading.Thread(target=probe, args=(m, url, appends, 100 + m.n, samples, errors, barrier, probes))
                   for m in machines]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        with psycopg.connect(url, autocommit=True) as conn:
            repos = conn.execute("SELECT count(DISTINCT repository_id) FROM harvester.sessions WHERE host = ANY(%s)",
                                 ([m.name for m in machines],)).fetchone()[0]
            team_events = conn.execute("SELECT count(*) FROM harvester.events e JOIN harvester.sessions s ON "
                                       "s.id = e.session_id WHERE s.host = ANY(%s)",
                                       ([m.name for m in machines],)).fetchone()[0]
    finally:
        for m in machines:
            m.stop()
    if errors:
        raise SystemExit("lag: " + "; ".join(errors))
    total = sum(1 for _ in samples)
    return {"hosts": hosts, "appends_per_host": appends, "team_events_before": before, "samples": samples,
            "seconds": elapsed,
            "appends_per_s": total / elapsed, "repositories": repos, "events_there": team_events,
            "expected_events": hosts * (appends + 1),
            "lag_ms": quantiles([s["seconds"] for s in samples]),
            "capture_ms": quantiles([s["local_seconds"] for s in samples]),
            "push_ms": quantiles([s["seconds"] - s["local_seconds"] for s in samples]),
            "probe_query_ms": quantiles(probes),
            "per_host_ms": {m.name: quantiles([s["seconds"] for s in samples if s["host"] == m.name])
                            for m in machines}}


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000

    return {"p50": statistics.median(ordered) * 1000, "p90": at(0.9), "p99": at(0.99), "max": ordered[-1] * 1000,
            "n": len(ordered)}


# -- report -------------------------------------------------------------------------------------------------
def print_report(rows: dict[str, Any], summary: dict[str, Any] | None, lagged: dict[str, Any] | None,
                 rounds: int) -> None:
    if summary is not None:
        print(f"\npush of {rows['events']:,} events in {rows['sessions']:,} sessions ({rows['row_bytes'] / 1e6:,.0f} MB "
              f"of row values, bank file {rows['file_bytes'] / 1e6:,.0f} MB) into PostgreSQL 18, medians of {rounds} "
              "round(s):")
        print(f"  {'engine':10} {'seconds':>8} {'events/s':>10} {'MB/s':>6} {'client CPU s':>12} {'server CPU s':>12} "
              f"{'events/CPU-s':>12} {'peak RSS MB':>11} {'db MB':>7}")
        for name in [e for e in (*ENGINES, "before") if e in summary]:
            s = summary[name]
            print(f"  {name:10} {s['seconds']['median']:8.1f} {s['events_per_s']['median']:10,.0f} "
                  f"{s['mb_per_s']['median']:6.1f} {s['cpu_seconds']['median']:12.1f} "
                  f"{s['server_cpu_seconds']['median']:12.1f} {s['events_per_cpu_s']['median']:12,.0f} "
                  f"{s['peak_rss_mb']['median']:11.0f} {s['database_mb']['median']:7.0f}")
        for other in [e for e in ("floor", "naive", "before") if f"harvester/{e}" in summary]:
            r = summary[f"harvester/{other}"]
            print(f"  harvester/{other}: {r['speed']['median']:.2f}x the speed ({r['speed']['min']:.2f}-"
                  f"{r['speed']['max']:.2f}), {other}'s CPU (client + server) / harvester's: {r['cpu']['median']:.2f}x")
    if lagged is not None:
        print(f"\nlag, append -> found by plainto_tsquery in the team bank: {lagged['hosts']} hosts appending at once, "
              f"{lagged['appends_per_host']} appends each ({lagged['appends_per_s']:.1f} appends/s overall), "
              f"{lagged['team_events_before']:,} events there before")
        for key, what in (("lag_ms", "append -> team bank"), ("capture_ms", "  append -> local bank"),
                          ("push_ms", "  local -> team bank")):
            q = lagged[key]
            print(f"  {what:24} p50 {q['p50']:6.0f} ms   p90 {q['p90']:6.0f} ms   p99 {q['p99']:6.0f} ms   "
                  f"max {q['max']:6.0f} ms")
        q = lagged["probe_query_ms"]
        print(f"  the search query itself: p50 {q['p50']:.1f} ms, p99 {q['p99']:.1f} ms ({q['n']:,} queries)")
        print(f"  {lagged['repositories']} repository for the {lagged['hosts']} hosts' sessions; "
              f"{lagged['events_there']} of {lagged['expected_events']} events there")


def source_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": git("status", "--porcelain", "harvester/"),
            "python": platform.python_version(), "cpus": os.cpu_count(), "load_before": os.getloadavg()}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--engine":
        run_engine(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=1_000_000, help="events in the bank pushed (default 1,000,000)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--appends", type=int, default=50, help="appends per host for the lag")
    p.add_argument("--engines", default=",".join(ENGINES), help="which of harvester,floor,naive to run")
    p.add_argument("--no-lag", action="store_true")
    p.add_argument("--no-push", action="store_true", help="the lag alone (into an empty team bank)")
    p.add_argument("--json", type=Path, help="default: bench/out/team-<events>.json")
    p.add_argument("--compare-root", type=Path, help="also the push of this checkout (engine \"before\"), each round")
    a = p.parse_args()
    engines = tuple(e for e in ENGINES if e in a.engines.split(","))
    if a.compare_root is not None:
        global COMPARE_ROOT
        COMPARE_ROOT = a.compare_root.resolve()
        engines = (*engines, "before")
    if not engines or (not a.no_lag and not a.no_push and "harvester" not in engines):
        p.error("--engines: some of harvester,floor,naive (harvester among them for the lag)")
    from tests.services import running_postgres

    state = source_state()
    source = bank_for(a.events)
    rows = row_bytes(source)
    print(f"bank {source}: {rows['events']:,} events, {rows['sessions']:,} sessions", file=sys.stderr)
    summary = lagged = None
    passes: list[dict] = []
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT, prefix="team-work-") as tmp, running_postgres() as pg:
        work = Path(tmp)
        version = pg.psql("SHOW server_version").strip()
        kept = "team_lag"
        if not a.no_push:
            passes, found = throughput(pg, source, a.rounds, work, keep_last=not a.no_lag, engines=engines)
            summary = summarize(passes, a.rounds, engines)
            kept = found or kept
        if not a.no_lag:
            print(f"lag: {a.hosts} hosts x {a.appends} appends into {kept} ...", file=sys.stderr)
            lagged = lag(pg, kept, a.hosts, a.appends, work)
    state["load_after"] = os.getloadavg()
    print_report(rows, summary, lagged, a.rounds)
    out = a.json or OUT / f"team-{a.events}.json"
    out.write_text(json.dumps({"source": state, "server": f"PostgreSQL {version}", "bank": rows,
                               "rounds": a.rounds, "summary": summary, "passes": passes, "lag": lagged}, indent=1))
    print(f"\n{out}")


if __name__ == "__main__":
    main()
