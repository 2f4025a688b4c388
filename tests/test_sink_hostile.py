"""A hostile or broken Hindsight server cannot hang or spin harvester (harvester/sinks/hindsight.py, forward.py).

A server that sends its answer a byte at a time (no per-read timeout ever fires), or an endless one, costs one
request its deadline or its size limit; a ``Retry-After`` of any value waits at most the back-off's cap and
never raises; an answer that is not JSON, or JSON of the wrong shape, is an error for that document with the
outbox's back-off: never "sent" or "skipped", never re-POSTed in a tight loop. The request counts below are
bounded by the back-off schedule (2 s, then 4 s, ...), which a slow machine only makes smaller.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harvester.bank import open_bank
from harvester.bank.outbox import seconds_until
from harvester.capture.contract import Cursor, SessionWrite, Write
from harvester.cli import cli
from harvester.config.sinks import HindsightSettings
from harvester.model import Event, SessionPatch
from harvester.sinks import hindsight
from harvester.sinks.forward import MAX_BACKOFF, Forwarder
from harvester.sinks.hindsight import Hindsight
from tests.hindsight_fake import FakeHindsight

_sources = itertools.count()
WINDOW = 3.0  # seconds of passes: a document's tries in it are at 0 s and after 2 s (the back-off), no more


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    server = FakeHindsight().start()
    yield server
    server.stop()


def write(bank: Any, session: str, n: int = 1) -> None:
    cursor = Cursor("claude-code", f"/src/{session}-{next(_sources)}.jsonl", "jsonl")
    patch = SessionPatch(session, cwd="/work/demo", started_at="2026-11-30T09:00:00.000Z")
    events = [Event(session, f"{session}:{i}", "user", "text", f"line {i}", ts=f"2026-11-30T09:{i:02d}:00.000Z")
              for i in range(1, n + 1)]
    bank.apply(Write(cursor, [SessionWrite("claude-code", patch, "coding-agent::demo")], events, [],
                     is_new_source=True))


def make(bank: Any, url: str) -> Forwarder:
    return Forwarder(bank, HindsightSettings(url=url), Hindsight(url), host="test-host")


def passes_for(forward: Forwarder, seconds: float = WINDOW) -> int:
    """Forwarding passes back to back for ``seconds``, as the service runs them when imports keep waking it;
    returns how many ended. A pass that never ends (a loop inside it) fails the test."""
    ended = 0

    def run() -> None:
        nonlocal ended
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            forward.forward()
            ended += 1
            time.sleep(0.05)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds + 10)
    assert not thread.is_alive(), "a forwarding pass never ended"
    return ended


def rows(bank: Any) -> list[tuple[str, str | None, str | None]]:
    return bank.conn.execute("SELECT state, last_error, next_try_at FROM sink_documents").fetchall()


# -- Retry-After ---------------------------------------------------------------------------------------------

@given(st.one_of(st.text(max_size=40), st.floats(allow_nan=True).map(repr), st.integers().map(str),
                 st.datetimes().map(lambda d: d.strftime("%a, %d %b %Y %H:%M:%S GMT"))))
def test_retry_after_of_any_value_is_a_wait_within_the_cap_or_none(value: str) -> None:
    wait = hindsight._retry_after(value)
    assert wait is None or 0.0 <= wait <= MAX_BACKOFF


@pytest.mark.parametrize("value", ["1e12", "inf", "nan", "-5", "0", "99999999999999999999999", "soon",
                                   "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT"])
def test_an_absurd_retry_after_neither_raises_nor_hurries_nor_waits_past_the_cap(tmp_path: Path,
                                                                                  fake: FakeHindsight,
                                                                                  value: str) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "s1")
        fake.fail(404, times=3)  # the looks for Hindsight's own documents
        fake.fail(429, headers={"Retry-After": value})
        assert make(bank, fake.url).forward().retry == 1
        [(state, error, next_try)] = rows(bank)
        assert state == "pending" and "429" in error
        assert 1.0 < seconds_until(next_try) <= MAX_BACKOFF + 1  # at least the back-off, at most the cap


def test_a_503_with_retry_after_waits_as_asked(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "s1")
        fake.fail(404, times=3)
        fake.fail(503, headers={"Retry-After": "120"})
        make(bank, fake.url).forward()
        assert 110 < seconds_until(rows(bank)[0][2]) <= 121


def test_a_server_that_always_says_retry_now_is_not_hammered(tmp_path: Path, fake: FakeHindsight) -> None:
    fake.broken = lambda method, path: ((429, {"detail": "slow down"}, {"Retry-After": "0"})
                                        if method == "POST" else None)
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "s1")
        assert passes_for(make(bank, fake.url)) >= 1
    assert 1 <= len(fake.retains()) <= 2


# -- answers that are not what the API says ------------------------------------------------------------------

HTML = b"<html><body>It works!</body></html>"


def _operation(body: Any) -> Any:
    return lambda method, path: (200, body, {}) if "/operations/" in path else None


BROKEN = {
    "every answer is a web page": lambda method, path: (200, HTML, {}),
    "a document look answers a list": lambda method, path: (200, [], {}) if "/documents/" in path else None,
    "a document look answers a page": lambda method, path: (200, HTML, {}) if "/documents/" in path else None,
    "the retain answers a list": lambda method, path: (200, [1, 2], {}) if method == "POST" else None,
    "the retain answers a page": lambda method, path: (200, HTML, {}) if method == "POST" else None,
    "the operation has no status": _operation({"operation_id": "x"}),
    "the operation's status is a number": _operation({"operation_id": "x", "status": 7}),
    "the operation is a list": _operation(["completed"]),
    "the operation always failed": _operation({"operation_id": "x", "status": "failed", "error_message": "LLM down"}),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_a_wrong_answer_is_an_error_with_back_off_never_sent_nor_skipped(tmp_path: Path, fake: FakeHindsight,
                                                                         broken: str) -> None:
    fake.broken = BROKEN[broken]
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "s1")
        assert passes_for(make(bank, fake.url)) >= 1
        [(state, error, next_try)] = rows(bank)
        assert state == "pending" and error, (state, error)
        assert next_try is not None and seconds_until(next_try) > 0  # waits its back-off
    assert len(fake.retains()) <= 2, f"{len(fake.retains())} retains in {WINDOW} s"


@pytest.mark.parametrize("answer", [HTML, [], {"features": {}}, {"api_version": 11}])
def test_sink_test_says_a_server_that_answers_wrong_is_not_hindsight(tmp_path: Path, fake: FakeHindsight,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      answer: Any) -> None:
    fake.broken = lambda method, path: (200, answer, {})
    out = _sink_test(tmp_path, fake.url, monkeypatch)
    assert out.exit_code != 0, out.output
    assert "not a Hindsight answer" in out.output and len(out.output.strip().splitlines()) == 1, out.output


def _sink_test(tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    conf = tmp_path / "config.toml"
    conf.write_text(f'[sinks.hindsight]\nurl = "{url}"\n')
    monkeypatch.setenv("HARVESTER_CONFIG", str(conf))
    return CliRunner().invoke(cli, ["--bank", str(tmp_path / "bank.sqlite"), "sink", "test"])


# -- slow and endless answers --------------------------------------------------------------------------------

class Dribbler:
    """A server that reads a request, then sends a valid answer (Hindsight's version) slowly: the headers too
    (``phase="headers"``) or only the body, one byte every ``every`` seconds, so no per-read timeout fires;
    or a body of ``pad`` bytes at full speed. ``finished``: answers sent to the end."""

    def __init__(self, phase: str = "headers", every: float = 0.1, pad: int = 0) -> None:
        body = b'{"api_version": "1.1.0", "features": {}, "pad": "' + b"x" * pad + b'"}'
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        self.quick, self.slow = (b"", head + body) if phase == "headers" else (head, body)
        if pad:
            self.quick, self.slow = head + body, b""
        self.every = every
        self.finished = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    request += chunk
                conn.sendall(self.quick)
                for i in range(len(self.slow)):
                    time.sleep(self.every)
                    conn.sendall(self.slow[i:i + 1])
                self.finished += 1
            except OSError:  # the client hung up: what a deadline does
                return

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_server_that_dribbles_its_answer_costs_sink_test_its_deadline(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        phase: str) -> None:
    monkeypatch.setattr(hindsight, "DEADLINE_SECONDS", 1.0)
    server = Dribbler(phase)  # about 10 s per answer at a byte per 0.1 s: ten times the deadline
    try:
        out = _sink_test(tmp_path, server.url, monkeypatch)
    finally:
        server.close()
    assert out.exit_code != 0, out.output
    assert "no complete answer within 1 s" in out.output and len(out.output.strip().splitlines()) == 1, out.output
    assert server.finished == 0  # the client gave up before the server was done


def test_an_endless_answer_costs_its_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hindsight, "MAX_ANSWER_BYTES", 1 << 20)
    server = Dribbler(pad=3 << 20)
    try:
        out = _sink_test(tmp_path, server.url, monkeypatch)
    finally:
        server.close()
    assert out.exit_code != 0, out.output
    assert "answer larger than 1 MiB" in out.output and len(out.output.strip().splitlines()) == 1, out.output
