"""Forwarding into a REAL Hindsight 1.1.0 server (tests/services.py starts it: embedded PostgreSQL, no LLM,
the rrf reranker, tests/fakeembed.py as embedder). Never skipped in CI.

What is proven here that tests/test_sink.py proves against the recording stand-in: the documents land in the
right banks with the expected ids, text, tags and metadata; an append grows the text and keeps tags and
metadata; a rewind replaces; a server stopped mid-stream, and kill -9 of `harvester run` during a forward,
lose and double nothing (every document ends equal to what a fresh backfill sends); a document Hindsight's
own hooks wrote is not duplicated; recall finds a forwarded phrase; an opted-out bank gets nothing; the token
is sent and checked.
"""

from __future__ import annotations

import itertools
import json
import random
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from harvester.bank import open_bank
from harvester.capture.contract import Cursor, SessionWrite, Write
from harvester.config.sinks import HindsightSettings, bank_for
from harvester.model import Event, Mark, SessionPatch
from harvester.sinks.document import build
from harvester.sinks.forward import Forwarder
from harvester.sinks.hindsight import Hindsight
from tests.daemon import FAST, Daemon, wait_for
from tests.helpers import ClaudeSession, scan
from tests.machine import real_capture_bank

_sources = itertools.count()


def _get(url: str, path: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(url + path, headers=headers, timeout=30)


def _doc(url: str, bank: str, doc_id: str) -> dict[str, Any] | None:
    r = _get(url, f"/v1/default/banks/{_q(bank)}/documents/{_q(doc_id)}")
    return r.json() if r.status_code == 200 else None


def _q(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _documents(url: str, bank: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    offset = 0
    while True:
        r = _get(url, f"/v1/default/banks/{_q(bank)}/documents?limit=100&offset={offset}")
        if r.status_code == 404:
            return out
        items = r.json()["items"]
        out.update({i["id"]: i for i in items})
        if len(items) < 100:
            return out
        offset += 100


def _expected(bank_path: Path, template: str = "coding-agent::{gitProject}") -> dict[tuple[str, str], str]:
    """What a fresh backfill sends: (bank, document id) -> text, from the bank as it stands. Different folders of
    one name (the Aider runs, each in its own folder named repo, outside git) are kept apart: the one whose first
    session started first keeps the bank, each other one goes to <bank>@<its key as a suffix>."""
    from harvester.bank.identities import suffix

    out = {}
    with open_bank(bank_path) as bank:
        cur = bank.conn.execute("SELECT * FROM sessions")
        names = [d[0] for d in cur.description]
        sessions = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        firsts: dict[str, dict[str, str]] = {}
        for s in sessions:
            if s["repo_key"]:
                started = s["started_at"] or s["first_imported_at"]
                keys = firsts.setdefault(bank_for(template, s), {})
                keys[s["repo_key"]] = min(keys.get(s["repo_key"], started), started)
        for s in sessions:
            doc = build(s, bank.session_events(s["id"]), host="x")
            target = bank_for(template, s)
            keys = sorted(firsts.get(target, {}).items(), key=lambda kv: (kv[1], kv[0]))
            if s["repo_key"] and len(keys) > 1 and s["repo_key"] != keys[0][0]:
                target += "@" + suffix(s["repo_key"])
            if doc.lines:
                out[(target, doc.document_id)] = doc.text()
    return out


def _arrived(url: str, expected: dict[tuple[str, str], str]) -> bool:
    for (bank, doc_id), text in expected.items():
        found = _doc(url, bank, doc_id)
        if found is None or found.get("original_text") != text:
            return False
    return True


def _differences(url: str, expected: dict[tuple[str, str], str]) -> str:
    out = []
    for (bank, doc_id), text in expected.items():
        found = (_doc(url, bank, doc_id) or {}).get("original_text")
        if found != text:
            out.append(f"{doc_id}: expected {text.count(chr(10)) + 1} lines, server has "
                       f"{None if found is None else found.count(chr(10)) + 1}:\n{found}\n--- expected:\n{text}\n")
    return "\n".join(out)


def _write(bank: Any, harness: str, session: str, events: list[Event], cwd: str, marks: list[Mark] | None = None) -> None:
    cursor = Cursor(harness, f"/src/{session}-{next(_sources)}.jsonl", "jsonl")
    patch = SessionPatch(session, cwd=cwd, started_at="2026-11-30T09:00:00.000Z")
    bank.apply(Write(cursor, [SessionWrite(harness, patch, "x")], events, [], is_new_source=True, marks=marks or []))


def _said(session: str, n: int, text: str, role: str = "user") -> Event:
    return Event(session, f"{session}:{n}", role, "text", text, ts=f"2026-11-30T09:{n:02d}:00.000Z")  # type: ignore[arg-type]


def _forwarder(bank: Any, url: str, **options: Any) -> Forwarder:
    return Forwarder(bank, HindsightSettings(url=url, **options), Hindsight(url), host="test-host")


def test_sessions_of_many_harnesses_land_in_their_repositories_banks(tmp_path: Path, hindsight_server: Any) -> None:
    url = hindsight_server.url
    bank_path = real_capture_bank(tmp_path)  # every captured real run: many harnesses, in demo-repo
    home = tmp_path / "home-other"
    other = ClaudeSession(home, "/work/other-repo")
    other.write(*other.conversation(2))
    scan(home, bank_path, ("claude-code",), env={"HOME": str(home)})
    expected = _expected(bank_path)
    harnesses = {doc_id.split(":")[1] for _, doc_id in expected}
    banks = {b for b, _ in expected}
    assert len(harnesses) >= 3 and {"coding-agent::demo-repo", "coding-agent::other-repo"} <= banks
    with open_bank(bank_path) as bank:
        report = _forwarder(bank, url).forward()
    assert report.sent == len(expected) and not report.errors
    wait_for(lambda: _arrived(url, expected), 120, "every document")
    for bank_id in banks:
        listed = _documents(url, bank_id)
        assert set(listed) == {d for b, d in expected if b == bank_id}  # one document per session, no other
    doc = _doc(url, "coding-agent::other-repo", f"harvester:claude-code:{other.id}")
    assert doc is not None and sorted(doc["tags"]) == ["harness:claude-code", "source:harvester"]
    meta = doc["document_metadata"]
    assert meta["harness"] == "claude-code" and meta["session_id"] == other.id and meta["host"] == "test-host"
    assert meta["branch"] == "main" and all(isinstance(v, str) for v in meta.values())
    first = json.loads(doc["original_text"].split("\n")[0])
    assert first == {"role": "user", "content": "question 0: how does module 0 work?",
                     "timestamp": "2026-11-01T10:00:01.000Z"}


def test_a_new_turn_appends_and_a_rewind_replaces(tmp_path: Path, hindsight_server: Any) -> None:
    url = hindsight_server.url
    cwd = f"/work/append-{uuid.uuid4().hex[:6]}"
    bank_id = f"coding-agent::{cwd.rsplit('/', 1)[1]}"
    doc_id = "harvester:gemini-cli:g1"
    with open_bank(tmp_path / "bank.sqlite") as bank:
        f = _forwarder(bank, url)
        _write(bank, "gemini-cli", "g1", [_said("g1", 1, "how do I run the tests?"),
                                          _said("g1", 2, "Run bash .ci/run.", "assistant")], cwd)
        f.forward()
        wait_for(lambda: (_doc(url, bank_id, doc_id) or {}).get("original_text", "").count("\n") == 1, 60, "v1")
        _write(bank, "gemini-cli", "g1", [_said("g1", 3, "and the linter?")], cwd)
        assert f.forward().appended == 1
        wait_for(lambda: (_doc(url, bank_id, doc_id) or {}).get("original_text", "").count("\n") == 2, 60, "append")
        doc = _doc(url, bank_id, doc_id)
        assert doc is not None
        assert [json.loads(x)["content"] for x in doc["original_text"].split("\n")] == [
            "how do I run the tests?", "Run bash .ci/run.", "and the linter?"]
        assert sorted(doc["tags"]) == ["harness:gemini-cli", "source:harvester"]  # an append kept them
        assert doc["document_metadata"]["session_id"] == "g1"
        _write(bank, "gemini-cli", "g1", [], cwd, marks=[Mark("g1", {"rewound": True}, uids=("g1:2", "g1:3"))])
        assert f.forward().sent == 1  # a replace
        wait_for(lambda: (_doc(url, bank_id, doc_id) or {}).get("original_text", "").count("\n") == 0, 60, "replace")
        assert set(_documents(url, bank_id)) == {doc_id}


def test_a_document_of_hindsights_own_hooks_is_not_duplicated_and_an_opted_out_bank_gets_nothing(
        tmp_path: Path, hindsight_server: Any) -> None:
    url = hindsight_server.url
    tag = uuid.uuid4().hex[:6]
    bank_id, secret = f"coding-agent::hooks-{tag}", f"coding-agent::secret-{tag}"
    body = {"items": [{"content": "user: hello from the hook", "document_id": "conversation:c1"}], "async": False}
    assert httpx.post(f"{url}/v1/default/banks/{_q(bank_id)}/memories", json=body, timeout=60).status_code == 200
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "claude-code", "c1", [_said("c1", 1, "hello from the transcript")], f"/w/hooks-{tag}")
        _write(bank, "claude-code", "c2", [_said("c2", 1, "a second session")], f"/w/hooks-{tag}")
        _write(bank, "codex", "x1", [_said("x1", 1, "nothing of this may leave")], f"/w/secret-{tag}")
        report = _forwarder(bank, url, opted_out=[secret]).forward()
    assert (report.skipped, report.held, report.sent) == (1, 1, 1)
    wait_for(lambda: set(_documents(url, bank_id)) == {"conversation:c1", "harvester:claude-code:c2"}, 60, "c2")
    assert _doc(url, bank_id, "conversation:c1")["original_text"] == "user: hello from the hook"  # type: ignore[index]
    assert _get(url, f"/v1/default/banks/{_q(secret)}/documents").status_code in (200, 404)
    assert _documents(url, secret) == {}


def test_recall_finds_a_phrase_of_a_forwarded_session(tmp_path: Path, hindsight_server: Any) -> None:
    url = hindsight_server.url
    tag = uuid.uuid4().hex[:6]
    bank_id = f"coding-agent::recall-{tag}"
    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "opencode", "o1", [
            _said("o1", 1, "why does the flaky websocket reconnect test fail on CI?"),
            _said("o1", 2, "The websocket reconnect test races the heartbeat timer; pin the clock.", "assistant"),
        ], f"/w/recall-{tag}")
        _forwarder(bank, url).forward()
    wait_for(lambda: _doc(url, bank_id, "harvester:opencode:o1") is not None, 60, "the document")

    def found() -> bool:
        r = httpx.post(f"{url}/v1/default/banks/{_q(bank_id)}/memories/recall",
                       json={"query": "websocket reconnect heartbeat", "budget": "low", "max_tokens": 1024}, timeout=60)
        return any("heartbeat timer" in x["text"] for x in r.json().get("results", []))

    wait_for(found, 60, "recall to find the phrase")


def test_the_token_is_sent_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    from tests.services import require, running_hindsight

    with running_hindsight(api_key="tok-123") as server:
        assert Hindsight(server.url, "tok-123").version()["api_version"] == "1.1.0"
        with pytest.raises(Exception, match="401"):
            Hindsight(server.url, "wrong").banks()
    assert require  # the same installation as the fixtures'


def _service(tmp_path: Path, url: str) -> Daemon:
    (tmp_path / "config.toml").write_text(FAST + f'\n[sinks.hindsight]\nurl = "{url}"\n')
    return Daemon(tmp_path)


def test_server_stopped_mid_stream_and_kill_9_lose_and_double_nothing(tmp_path: Path, hindsight_server: Any) -> None:
    url = hindsight_server.url
    rng = random.Random(11)
    cwd = f"/work/stream-{uuid.uuid4().hex[:6]}"
    daemon = _service(tmp_path, url)
    sessions = [ClaudeSession(daemon.home, cwd, live=True) for _ in range(3)]
    daemon.start()

    written = [0]  # texts written into the sessions' files

    def talk(round_: int) -> None:
        for n in range(rng.randint(2, 5)):
            s = rng.choice(sessions)
            s.write(s.user(f"round {round_} question {n}: what about module {rng.randint(1, 99)}?"),
                    s.assistant(f"round {round_} answer {n}"))
            written[0] += 2
            time.sleep(rng.uniform(0.0, 0.1))

    try:
        talk(0)
        wait_for(lambda: daemon.query("SELECT count(*) FROM sink_documents WHERE state = 'sent'")[0][0] >= 1, 60,
                 "a first forward")
        hindsight_server.stop()  # the server goes away mid-stream: capture goes on, the outbox grows
        for round_ in range(1, 4):
            talk(round_)
        wait_for(lambda: "pending" in daemon.cli("sink", "status").stdout, 30, "the outbox to show what waits")
        hindsight_server.start()
        for round_ in range(4, 8):  # and kill -9 of the service during forwards
            talk(round_)
            time.sleep(rng.uniform(0.05, 0.5))
            daemon.stop(signal.SIGKILL)
            daemon.start()
        # What the server must end with is the bank once the service has read every line written before the last
        # kill: taken earlier, on a loaded machine, it missed the last lines, which the server then rightly had.
        wait_for(lambda: daemon.query("SELECT count(*) FROM events WHERE kind = 'text'")[0][0] >= written[0], 60,
                 "the restarted service to read every line written")
        expected = _expected(daemon.bank)
        assert len(expected) == 3
        try:
            wait_for(lambda: _arrived(url, expected), 180, "the lag to drain")
        except AssertionError:
            raise AssertionError(_differences(url, expected) + daemon.cli("sink", "status").stdout
                                 + daemon.log.read_text()[-3000:]) from None
        status = daemon.cli("sink", "status").stdout
        assert "3 sessions forwarded, 0 pending" in status, status
    finally:
        daemon.stop()
    bank_id = f"coding-agent::{cwd.rsplit('/', 1)[1]}"
    assert set(_documents(url, bank_id)) == {doc_id for _, doc_id in expected}  # no duplicate document
