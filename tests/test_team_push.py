"""Pushing to the team bank (harvester/team: outbox.py, push.py) on a real PostgreSQL, as machines do it.

Each test has a database of its own on the session's server (tests/services.py) and machines of its own: a
HOME with Claude Code transcripts in real git clones, a local bank, a config, a host name, and harvester run
as a user runs it (``harvester scan``, ``team push``, ``team status``, ``run``) in subprocesses. What the
server holds is compared with the local banks row for row: every event exactly once, each session its
first pusher's, nothing that must stay home (excluded, held, forgotten, a secret, a password) there.
"""

from __future__ import annotations

import getpass
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg

from harvester import __version__
from harvester.bank import open_bank
from harvester.parsers import HARNESSES
from harvester.team.push import SESSION_COLUMNS
from tests.daemon import FAST, Daemon, wait_for
from tests.helpers import ClaudeSession, claude_dir, make_repo
from tests.machine import ROOT, harvester_env

TABLES = ("schema_migrations", "machines", "repositories", "sessions", "events")
EVENT_FIELDS = ("uid", "seq", "role", "kind", "text", "ts", "tool_name", "tool_input", "tool_call_id", "is_error",
                "model", "tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "tokens_reasoning",
                "meta", "content_hash", "recall")
BOOLEANS = {EVENT_FIELDS.index("is_error"), EVENT_FIELDS.index("recall")}
PASSWORD = "s3cretpw"
# Built by concatenation so no literal secret sits in the repository (as tests/test_redaction_ingest.py).
AWS_KEY = "AKIA" + "Q3ZT7KEYIDW2XZ4B"
ANTHROPIC = "sk-ant-api03-" + "Zx9" * 30 + "AA"


class Machine:
    """One machine: ``root/home`` with its agents' stores, ``root/bank.sqlite``, ``root/config.toml``, the host
    name the team sees, and the team bank's URL (in $HARVESTER_TEAM_BANK unless the config names it)."""

    def __init__(self, tmp: Path, host: str, url: str | None, config: str = "") -> None:
        self.root, self.host, self.url = tmp / host, host, url
        self.home, self.bank, self.config = self.root / "home", self.root / "bank.sqlite", self.root / "config.toml"
        self.home.mkdir(parents=True)
        self.config.write_text(config)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in harvester_env(self.root).items() if not k.startswith("PG")}
        env["HARVESTER_HOST_NAME"] = self.host
        if self.url is not None:
            env["HARVESTER_TEAM_BANK"] = self.url
        env.update(extra)
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "harvester", *args]

    def cli(self, *args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), env=self.env(**extra), capture_output=True, text=True, timeout=120,
                              cwd=self.root, stdin=subprocess.DEVNULL)

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(self.argv(*args), env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=self.root, stdin=subprocess.DEVNULL)

    def ok(self, *args: str, **extra: str) -> subprocess.CompletedProcess:
        done = self.cli(*args, **extra)
        assert done.returncode == 0, f"harvester {' '.join(args)}: {done.stdout}\n{done.stderr}"
        return done

    def clone(self, folder: str, origin: str | None) -> Path:
        return make_repo(self.home / folder, origin=origin)

    def session(self, cwd: Path, *texts: str) -> ClaudeSession:
        s = ClaudeSession(self.home, str(cwd))
        s.write(*(s.user(t) if n % 2 == 0 else s.assistant(t) for n, t in enumerate(texts)))
        return s

    def scan(self) -> None:
        self.ok("scan")

    def push(self) -> subprocess.CompletedProcess:
        return self.ok("team", "push")

    def team_status(self) -> dict[str, Any]:
        return json.loads(self.ok("team", "status", "--json").stdout)

    def query(self, sql: str, *args: Any) -> list[tuple]:
        conn = sqlite3.connect(f"file:{self.bank}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    @property
    def machine_id(self) -> str:
        return self.query("SELECT value FROM bank_facts WHERE key = 'team_machine_id'")[0][0]

    def events(self) -> dict[tuple[str, str], list[tuple]]:
        return bank_events(self.bank)

    def sessions(self) -> dict[tuple[str, str], tuple]:
        rows = self.query(f"SELECT harness, native_id, {', '.join(SESSION_COLUMNS)} FROM sessions")
        return {(r[0], r[1]): tuple(_text(v) for v in r[2:]) for r in rows}

    def state(self, native_id: str) -> tuple[str, str | None]:
        return self.query("SELECT state, owner FROM team_sessions WHERE native_id = ?", native_id)[0]


def bank_events(bank: Path) -> dict[tuple[str, str], list[tuple]]:
    """Every event of a local bank, per (harness, native id), as the team bank should hold it."""
    conn = sqlite3.connect(f"file:{bank}?mode=ro", uri=True, timeout=10)
    try:
        return _grouped(conn.execute(f"SELECT s.harness, s.native_id, {', '.join('e.' + c for c in EVENT_FIELDS)} "
                                     "FROM events e JOIN sessions s ON s.id = e.session_id").fetchall())
    finally:
        conn.close()


def _text(value: Any) -> Any:
    """A local value as PostgreSQL holds it: NUL is U+FFFD there (text cannot hold NUL)."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def _grouped(rows: list[tuple]) -> dict[tuple[str, str], list[tuple]]:
    out: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for harness, native_id, *values in rows:
        out[(harness, native_id)].append(tuple(bool(v) if i in BOOLEANS else _text(v) for i, v in enumerate(values)))
    return {key: sorted(events) for key, events in out.items()}


def pg_rows(url: str, sql: str, *args: Any) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, args).fetchall()


def team_events(url: str, machine: str | None = None) -> dict[tuple[str, str], list[tuple]]:
    where = "" if machine is None else "WHERE s.machine_id = %s"
    return _grouped(pg_rows(url, f"SELECT s.harness, s.native_id, {', '.join('e.' + c for c in EVENT_FIELDS)} "
                                 f"FROM harvester.events e JOIN harvester.sessions s ON s.id = e.session_id {where}",
                            *([machine] if machine else [])))


def team_sessions(url: str) -> dict[tuple[str, str], dict[str, Any]]:
    columns = ("machine_id", "host", "os_user", "harvester_version", *SESSION_COLUMNS)
    rows = pg_rows(url, f"SELECT harness, native_id, {', '.join(columns)} FROM harvester.sessions")
    out = {}
    for harness, native_id, *values in rows:
        row = dict(zip(columns, values, strict=True))
        row["machine_id"] = str(row["machine_id"])
        row["local"] = tuple(values[4:])
        out[(harness, native_id)] = row
    return out


def snapshot(url: str) -> dict[str, list[tuple]]:
    """Every row's version (xmin) and place (ctid): a write that changes nothing leaves both as they were."""
    return {t: pg_rows(url, f"SELECT xmin::text, ctid::text FROM harvester.{t} ORDER BY ctid") for t in TABLES}


def all_text(url: str) -> str:
    """Every row of every table of the team schema, as text: what a grep of the server would see."""
    return "\n".join(r[0] for t in TABLES for r in pg_rows(url, f"SELECT t::text FROM harvester.{t} t"))


def large_bank(path: Path, sessions: int, events: int) -> None:
    """A bank of ``sessions`` x ``events`` events of about 700 bytes each, written through the bank's own write path
    (as bench/gen_bank.py, without reading a vocabulary off the disk)."""
    import random

    from harvester.capture.contract import Cursor, SessionWrite, Write
    from harvester.gitident import RepoIdentity
    from harvester.model import Event, SessionPatch

    rng = random.Random(3)
    words = [f"{rng.choice('bcdfgklmnprstvz')}{rng.choice('aeiou')}{n}" for n in range(2000)]
    with open_bank(path, archive=False) as bank:
        for n in range(sessions):
            sid, cwd = f"large-{n:04d}", f"/home/dev/src/repo-{n % 5}"
            batch = [Event(sid, f"{sid}:{i}", "user" if i % 2 == 0 else "assistant", "text",
                           text=" ".join(rng.choices(words, k=120)), ts=f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z")
                     for i in range(events)]
            patch = SessionPatch(sid, cwd=cwd, title=f"large session {n}", started_at=batch[0].ts,
                                 updated_at=batch[-1].ts, state="ended")
            write = SessionWrite("claude-code", patch, bank_id=f"coding-agent::repo-{n % 5}",
                                 identity=RepoIdentity(project=f"repo-{n % 5}", root=cwd, how="cwd"))
            cursor = Cursor("claude-code", f"/large/{sid}.jsonl", "jsonl", offset=1, generation=0)
            bank.apply(Write(cursor, [write], batch, [], is_new_source=True))


def turns(tag: str, n: int = 2) -> list[str]:
    return [t for i in range(n) for t in (f"{tag} question {i}: how does part {i} work?", f"{tag} answer {i}: so.")]


def test_two_machines_pushing_at_once_share_one_repository_and_each_event_is_there_once(
        postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_two_machines")
    alpha, beta = Machine(tmp_path, "alpha", url), Machine(tmp_path, "beta", url)
    shop_a = alpha.clone("work/shop", "git@github.com:acme/shop.git")
    shop_b = beta.clone("src/shop-copy", "https://github.com/acme/shop")
    own_a = [alpha.session(shop_a, *turns(f"alpha {n}", 3)) for n in range(3)]
    own_b = [beta.session(shop_b, *turns(f"beta {n}", 2)) for n in range(2)]
    # The same transcripts on both machines (a synced home, a copied file); one has a line more on beta.
    shared = [alpha.session(shop_a, *turns(f"shared {n}")) for n in range(2)]
    for n, s in enumerate(shared):
        copy = claude_dir(beta.home, s.cwd) / s.path.name
        copy.write_bytes(s.path.read_bytes() + (s.user("a line only beta has") if n == 0 else b""))
    alpha.scan()
    beta.scan()

    pushes = [m.popen("team", "push") for m in (alpha, beta)]  # at once
    for p in pushes:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"{out}\n{err}"

    [(repo_key, name, origin)] = pg_rows(url, "SELECT repo_key, name, origin_url FROM harvester.repositories")
    assert repo_key == "github.com/acme/shop"
    assert (name, origin) in {("coding-agent::shop", "git@github.com:acme/shop.git"),
                              ("coding-agent::shop-copy", "https://github.com/acme/shop")}
    machines = {str(r[0]): r[1:] for r in pg_rows(url, "SELECT id, host, os_user, os, harvester_version "
                                                      "FROM harvester.machines")}
    user = getpass.getuser()
    assert machines == {alpha.machine_id: ("alpha", user, "linux", __version__),
                        beta.machine_id: ("beta", user, "linux", __version__)}

    there = team_sessions(url)
    assert set(there) == {*alpha.sessions(), *beta.sessions()}
    assert len(there) == len(own_a) + len(own_b) + len(shared)
    by_id = {alpha.machine_id: alpha, beta.machine_id: beta}
    owners = {there[("claude-code", s.id)]["machine_id"] for s in shared}
    assert len(owners) == 1  # both take rows in one key order: who took the first shared one took them all
    owner = by_id[owners.pop()]
    other = beta if owner is alpha else alpha
    for key, row in there.items():
        pusher = by_id[row["machine_id"]]
        assert (row["host"], row["os_user"], row["harvester_version"]) == (pusher.host, user, __version__)
        assert row["local"] == pusher.sessions()[key], key  # the owner's row, as its bank holds it
    for m in (alpha, beta):  # every event of each session exactly as its owner holds it
        assert team_events(url, m.machine_id) == {k: v for k, v in m.events().items() if there[k]["machine_id"]
                                                  == m.machine_id}
    total = pg_rows(url, "SELECT count(*), count(DISTINCT (session_id, uid)) FROM harvester.events")[0]
    assert total[0] == total[1] == sum(len(v) for v in team_events(url).values())
    assert {s.id for s in own_a} <= {k[1] for k, r in there.items() if r["machine_id"] == alpha.machine_id}
    assert {s.id for s in own_b} <= {k[1] for k, r in there.items() if r["machine_id"] == beta.machine_id}
    # The session with a line more differs between the two banks; the server holds the owner's, not a mix.
    key = ("claude-code", shared[0].id)
    assert len(alpha.events()[key]) + 1 == len(beta.events()[key])
    assert team_events(url)[key] == owner.events()[key] != other.events()[key]

    for s in shared:
        assert other.state(s.id) == ("theirs", owner.machine_id)
    status = other.team_status()
    assert status["states"] == {"pushed": len(own_a if other is alpha else own_b), "theirs": len(shared)}
    assert status["lag"]["events"] == 0 and status["last_error"] is None
    before = snapshot(url)
    pushed = other.push()  # asks again (an owner may have let go): still theirs, nothing overwritten
    assert f"{len(shared)} owned by another machine" in pushed.stdout, pushed.stdout
    assert snapshot(url) == before


def test_pushing_again_changes_no_row_even_when_every_row_is_sent_again(postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_idempotent")
    m = Machine(tmp_path, "alpha", url)
    shop = m.clone("shop", "git@github.com:acme/shop.git")
    for n in range(3):
        m.session(shop, *turns(f"session {n}", 4))
    bare = m.clone("scratch", None)  # no remote: the repository stays this machine's
    m.session(bare, *turns("scratch"))
    m.scan()
    m.push()
    keys = {r[0] for r in pg_rows(url, "SELECT repo_key FROM harvester.repositories")}
    assert keys == {"github.com/acme/shop", f"{m.machine_id}:{bare}"}
    before = snapshot(url)
    assert len(before["events"]) == m.query("SELECT count(*) FROM events")[0][0] > 20

    again = m.push()
    assert "0 sessions, 0 events" in again.stdout, again.stdout
    assert snapshot(url) == before
    # A push killed after the server committed and before the local cursor moved sends everything again.
    with sqlite3.connect(m.bank) as conn:
        conn.execute("UPDATE team_sessions SET state = 'pending', pushed_clock = -1, pushed_events = 0")
    resent = m.push()
    events = m.query("SELECT count(*) FROM events")[0][0]
    assert f"4 sessions, {events} events" in resent.stdout, resent.stdout
    assert snapshot(url) == before
    assert team_events(url) == m.events()


def test_the_service_pushes_waits_out_a_server_that_is_away_and_then_drains_the_lag(
        postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_service_offline")
    (tmp_path / "config.toml").write_text(f'team_bank = "{url}"\n{FAST}\n[team]\nhost = "svc"\n')
    daemon = Daemon(tmp_path)
    s = ClaudeSession(daemon.home, "/work/demo", live=True)
    s.write(s.user("first question"), s.assistant("first answer"))

    def there() -> int:
        try:
            return len(team_events(url).get(("claude-code", s.id), []))
        except psycopg.Error:
            return -1

    def lag() -> dict[str, int]:
        return json.loads(daemon.cli("team", "status", "--json").stdout)["lag"]

    daemon.start()
    try:
        wait_for(lambda: there() == 2, 20, "the first turn pushed")
        postgres_server.stop()
        try:
            for n in range(3):  # capture goes on while the server is away
                s.write(s.user(f"question {n} while the server is away"), s.assistant(f"answer {n}"))
                time.sleep(0.2)
            wait_for(lambda: daemon.query("SELECT count(*) FROM events")[0][0] == 8, 15, "capture meanwhile")
            wait_for(lambda: lag()["events"] == 6, 15, "the lag of what waits")
            wait_for(lambda: json.loads(daemon.cli("team", "status", "--json").stdout)["last_error"], 40,
                     "the push to notice the server is away")  # its pool waits 10 s for a connection first
        finally:
            postgres_server.start()
        wait_for(lambda: lag()["events"] == 0 and there() == 8, 60, "the lag to drain")
        status = json.loads(daemon.cli("team", "status", "--json").stdout)
        assert status["states"] == {"pushed": 1} and status["last_push_at"] > status["last_error_at"], status
    finally:
        daemon.stop()
    assert team_events(url) == bank_events(daemon.bank)
    log = daemon.log.read_text()
    assert "team_bank_away" in log and "team_bank_back" in log, log[-3000:]


def test_kill_9_during_a_large_push_then_pushing_again_holds_each_event_once(
        postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_kill_9")
    m = Machine(tmp_path, "alpha", url)
    large_bank(m.bank, sessions=48, events=250)  # 12,000 events: three batches of the push
    total = m.query("SELECT count(*) FROM events")[0][0]
    push = m.popen("team", "push")
    try:
        wait_for(lambda: pg_rows(url, "SELECT count(*) FROM harvester.events")[0][0] > 0
                 if pg_rows(url, "SELECT to_regclass('harvester.events')")[0][0] else False, 60, "the first batch")
        assert push.poll() is None, "the push ended before it could be killed: make the bank larger"
        push.send_signal(signal.SIGKILL)
    finally:
        push.communicate(timeout=30)
    assert push.returncode == -signal.SIGKILL
    assert 0 < pg_rows(url, "SELECT count(*) FROM harvester.events")[0][0] < total

    m.push()
    assert team_events(url) == m.events()
    assert pg_rows(url, "SELECT count(*) FROM harvester.events")[0][0] == total
    status = m.team_status()
    assert status["lag"] == {"sessions": 0, "events": 0} and set(status["states"]) == {"pushed"}, status


def test_what_must_stay_home_never_reaches_the_server_and_forgotten_sessions_leave_it(
        postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_privacy")
    secret_url = url.replace("postgres@", f"postgres:{PASSWORD}@")
    assert PASSWORD in secret_url
    away = tmp_path / "away"
    config = (f'team_bank = "{secret_url}"\nexclude = ["{away}"]\n'
              '[team.bank."coding-agent::vault"]\npush = false\n')
    gamma = Machine(tmp_path, "gamma", None, config)
    delta = Machine(tmp_path, "delta", url)
    shop_g = gamma.clone("shop", "git@github.com:acme/shop.git")
    shop_d = delta.clone("shop", "https://github.com/acme/shop")
    mine = [gamma.session(shop_g, *turns(f"gamma {n}")) for n in range(2)]
    later = gamma.session(gamma.clone("later", "git@github.com:acme/later.git"), *turns("later work"))
    vault = gamma.session(gamma.clone("vault", "git@github.com:acme/vault.git"), *turns("HELD-MARKER"))
    hidden = gamma.session(make_repo(away / "client", "git@github.com:client/app.git"), *turns("EXCLUDED-MARKER"))
    theirs = delta.session(shop_d, *turns("delta's own"))
    shared = delta.session(shop_d, *turns("both have it"))
    copy = claude_dir(gamma.home, shared.cwd) / shared.path.name
    copy.write_bytes(shared.path.read_bytes())
    delta.scan()
    delta.push()
    outputs = []
    outputs.append(gamma.ok("scan", HARVESTER_LOG_LEVEL="debug"))
    outputs.append(gamma.ok("team", "push", HARVESTER_LOG_LEVEL="debug"))
    native = {k[1] for k in team_sessions(url)}
    assert native == {s.id for s in (*mine, later, theirs, shared)}
    assert vault.id not in native and hidden.id not in native
    text = all_text(url)
    assert "HELD-MARKER" not in text and "EXCLUDED-MARKER" not in text and "coding-agent::vault" not in text
    assert gamma.state(vault.id)[0] == "held" and not gamma.query("SELECT 1 FROM sessions WHERE native_id = ?",
                                                                  hidden.id)
    assert gamma.state(shared.id) == ("theirs", delta.machine_id)

    # Forgotten here: deleted there, but only this machine's rows (delta's copy of the shared one stays).
    delta_rows = team_events(url, delta.machine_id)
    for s in (mine[0], shared):
        outputs.append(gamma.ok("forget", s.id, "--yes"))
    outputs.append(gamma.ok("team", "push", HARVESTER_LOG_LEVEL="debug"))
    native = {k[1] for k in team_sessions(url)}
    assert native == {s.id for s in (mine[1], later, theirs, shared)}
    assert team_events(url, delta.machine_id) == delta_rows
    assert team_events(url, gamma.machine_id) == {k: v for k, v in gamma.events().items() if k[1] in native}

    # A repository switched to push = false after it was pushed: deleted there at the next push.
    gamma.config.write_text(config + '[team.bank."coding-agent::later"]\npush = false\n')
    outputs.append(gamma.ok("team", "push", HARVESTER_LOG_LEVEL="debug"))
    assert {k[1] for k in team_sessions(url)} == {s.id for s in (mine[1], theirs, shared)}
    assert gamma.state(later.id)[0] == "held"
    text = all_text(url)
    assert "later work" not in text and "acme/later" not in text and "coding-agent::later" not in text
    assert {r[0] for r in pg_rows(url, "SELECT repo_key FROM harvester.repositories")} == {"github.com/acme/shop"}
    gamma.config.write_text(config)  # and back: pushed again
    outputs.append(gamma.ok("team", "push", HARVESTER_LOG_LEVEL="debug"))
    assert ("claude-code", later.id) in team_sessions(url) and gamma.state(later.id)[0] == "pushed"
    assert team_events(url, gamma.machine_id) == {k: v for k, v in gamma.events().items() if k[1] != vault.id}

    # The password, wherever the URL is shown: config, status, team status, logs, the error of a server away.
    for args in (("config",), ("config", "--json"), ("status",), ("status", "--json"), ("team", "status"),
                 ("team", "status", "--json")):
        outputs.append(gamma.ok(*args))
    assert json.loads(outputs[-3].stdout)["team"]["url"] == secret_url.replace(PASSWORD, "*****")
    gone = secret_url.replace(str(postgres_server.socket_dir), str(tmp_path / "no-server"))
    away_push = gamma.cli("team", "push", HARVESTER_TEAM_BANK=gone, HARVESTER_LOG_LEVEL="debug")
    assert away_push.returncode == 1 and "stopped: " in away_push.stderr, away_push.stderr
    outputs.append(away_push)
    outputs.append(gamma.ok("team", "status", "--json", HARVESTER_TEAM_BANK=gone))
    assert json.loads(outputs[-1].stdout)["last_error"]
    in_query = f"{url}&password={PASSWORD}"  # libpq's other place for it
    for args in (("config",), ("team", "push"), ("team", "status")):
        outputs.append(gamma.ok(*args, HARVESTER_TEAM_BANK=in_query, HARVESTER_LOG_LEVEL="debug"))
    assert "password=*****" in outputs[-3].stdout
    for done in outputs:
        assert PASSWORD not in done.stdout + done.stderr, (done.args, done.stdout, done.stderr)
    assert PASSWORD.encode() not in b"".join(p.read_bytes() for p in gamma.root.glob("bank.sqlite*"))


def test_a_fresh_server_is_migrated_and_a_newer_schema_is_refused_with_nothing_written(
        postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_schema")
    if not postgres_server.psql("SELECT 1 FROM pg_roles WHERE rolname = 'harvester_weak'").strip():
        postgres_server.psql("CREATE ROLE harvester_weak LOGIN")  # may not create a schema in the database
    m = Machine(tmp_path, "alpha", url.replace("postgres@", "harvester_weak@"))
    shop = m.clone("shop", "git@github.com:acme/shop.git")
    m.session(shop, *turns("before"))
    m.scan()
    weak = m.cli("team", "push")
    assert weak.returncode == 1 and "Traceback" not in weak.stderr, weak.stderr
    assert "stopped: the team bank refuses to set up its schema: permission denied" in weak.stderr, weak.stderr
    assert pg_rows(url, "SELECT to_regnamespace('harvester')") == [(None,)]

    m.url = url
    m.push()
    assert pg_rows(url, "SELECT version, harvester_version FROM harvester.schema_migrations ORDER BY 1") == [
        (1, __version__), (2, __version__)]

    pending = m.session(shop, *turns("after the upgrade elsewhere"))
    m.scan()
    postgres_server.psql("INSERT INTO harvester.schema_migrations (version) VALUES (999)", "push_schema")
    before = snapshot(url)
    refused = m.cli("team", "push")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "stopped: the team bank's schema is newer than this harvester (schema 999" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert snapshot(url) == before
    assert pending.id not in {k[1] for k in team_sessions(url)}
    status = m.team_status()
    assert status["lag"]["events"] == 4 and "newer" in status["last_error"], status


def test_a_secret_in_a_transcript_never_reaches_the_server(postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_redaction")
    m = Machine(tmp_path, "alpha", url)
    s = ClaudeSession(m.home, str(m.clone("shop", "git@github.com:acme/shop.git")))
    s.write(s.user(f"deploy with AWS key {AWS_KEY}"),
            s.tool_use("Bash", {"command": f"ANTHROPIC_API_KEY={ANTHROPIC} ./deploy"}, "t1"),
            s.tool_result("t1", f"using {ANTHROPIC} and {AWS_KEY}"),
            s.assistant("Deployed; I will not repeat the credentials."))
    m.scan()
    m.push()
    text = all_text(url)
    assert AWS_KEY not in text and ANTHROPIC not in text and ANTHROPIC[:20] not in text
    assert "[REDACTED:aws-access-key" in text and "[REDACTED:anthropic-api-key]" in text
    assert team_events(url) == m.events()


def test_a_nul_character_in_a_transcript_does_not_stop_the_push(postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.uri("push_nul")
    m = Machine(tmp_path, "alpha", url)
    shop = m.clone("shop", "git@github.com:acme/shop.git")
    s = ClaudeSession(m.home, str(shop))
    s.write(s.user("a NUL \x00 in the prompt"), s.tool_use("Bash", {"command": "printf 'a\\0b'"}, "t1"),
            s.tool_result("t1", "a\x00b"), s.assistant("it printed a, NUL, b"))
    plain = m.session(shop, *turns("plain"))
    m.scan()
    assert any("\x00" in text for (text,) in m.query("SELECT text FROM events"))
    pushed = m.push()
    assert "2 sessions" in pushed.stdout and "refused" not in pushed.stdout, pushed.stdout
    texts = {r[0] for r in pg_rows(url, "SELECT text FROM harvester.events")}
    assert "a NUL \ufffd in the prompt" in texts and "a\ufffdb" in texts
    assert team_events(url) == m.events()  # the NUL as U+FFFD, every other character as it was
    there = team_sessions(url)
    assert set(there) == {("claude-code", s.id), ("claude-code", plain.id)}
    assert there[("claude-code", s.id)]["title"] == "a NUL \ufffd in the prompt"  # the session's row too
    assert all(row["local"] == m.sessions()[key] for key, row in there.items())
    assert m.team_status()["failing"] == []


def test_a_second_connection_in_the_process_leaves_the_wal_to_the_first(tmp_path: Path) -> None:
    """``harvester run`` opens the bank again for its push thread. Closing any descriptor of a file drops every
    POSIX lock the process holds on it: had that second open read the file's header with a descriptor of its own,
    the next process to close the bank (a ``team status``) would have taken itself for the last holder and
    deleted the WAL under the service, whose writes no one would see again."""
    path = str(tmp_path / "bank.sqlite")
    service = open_bank(path, archive=False)
    try:
        open_bank(path, archive=False, repair=False).close()  # the push thread's own connection
        subprocess.run([sys.executable, "-c", f"from harvester.bank import open_bank; open_bank({path!r}).close()"],
                       check=True, cwd=ROOT, timeout=60)
        with service.transaction() as conn:
            conn.execute("INSERT INTO bank_facts (key, value) VALUES ('probe', 'written after')")
        assert (tmp_path / "bank.sqlite-wal").exists()
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as other:
            assert other.execute("SELECT value FROM bank_facts WHERE key = 'probe'").fetchall() == [("written after",)]
    finally:
        service.close()


def test_a_batch_lost_while_the_next_one_landed_costs_that_batch_alone(postgres_server: Any, tmp_path: Path,
                                                                       monkeypatch: Any) -> None:
    """Batches are pipelined (one inserted by the server while the next is sent): when the server is lost for one
    of them and the next one committed, the committed one's cursors are written, the lost one stays queued, and
    the next push sends it alone; every event is there once, and one refused row costs its session alone."""
    from harvester import config
    from harvester.team import push as pushing
    from harvester.team import pusher
    from harvester.team.server import Unreachable

    url = postgres_server.uri("push_pipelined")
    m = Machine(tmp_path, "alpha", url)
    shop = m.clone("shop", "git@github.com:acme/shop.git")
    for n in range(6):
        m.session(shop, *turns(f"session {n}", 3))
    m.scan()
    monkeypatch.setattr(pushing, "BATCH_SESSIONS", 2)  # three batches of two sessions
    real_write = pushing.Pusher._write
    calls: list[int] = []

    def write(self: Any, conn: Any, items: list[Any]) -> list[str]:
        calls.append(len(items))
        if len(calls) == 1:  # the first batch: the server goes away under it
            time.sleep(0.5)  # while the second one is sent and committed
            raise Unreachable("connection lost")
        return real_write(self, conn, items)

    monkeypatch.setattr(pushing.Pusher, "_write", write)
    with open_bank(m.bank) as bank:
        p = pusher(bank, config.load(m.env(), harness_names=HARNESSES), m.env())
        assert p is not None
        first = p.push()
        assert first.stopped_by and first.sessions in (2, 4)  # the second batch landed; the third maybe not sent
        states = dict(bank.conn.execute("SELECT native_id, state FROM team_sessions"))
        assert sorted(states.values()).count("pushed") == first.sessions
        monkeypatch.setattr(pushing.Pusher, "_write", real_write)
        second = p.push()
        assert second.stopped_by is None and first.sessions + second.sessions == 6
        assert set(dict(bank.conn.execute("SELECT native_id, state FROM team_sessions")).values()) == {"pushed"}
        p.team.close()
    assert team_events(url) == m.events()
