"""Forwarding into Hindsight (harvester/sinks), against tests/hindsight_fake.py: documents, appends and
replaces, exactly once across crashes, the outbox while the server is away, retries, coexistence with
Hindsight's own hooks, opt-outs, status. tests/test_sink_real.py runs the same against the real server."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harvester import config
from harvester.bank import open_bank
from harvester.bank.outbox import seconds_until
from harvester.capture.contract import Cursor, SessionWrite, Write
from harvester.cli import cli
from harvester.config.sinks import HindsightSettings
from harvester.model import Event, Mark, SessionPatch
from harvester.parsers import HARNESSES
from harvester.sinks import forwarder, outbox
from harvester.sinks.document import build, fingerprint
from harvester.sinks.forward import Forwarder
from harvester.sinks.hindsight import Hindsight, SinkError
from tests.hindsight_fake import FakeHindsight

_sources = itertools.count()


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    server = FakeHindsight().start()
    yield server
    server.stop()


def write(bank: Any, harness: str, session: str, events: list[Event], cwd: str = "/work/demo",
          marks: list[Mark] | None = None, revise: bool = False) -> None:
    """Events of a session, as a source of their own (a later call adds to the same session)."""
    cursor = Cursor(harness, f"/src/{session}-{next(_sources)}.jsonl", "jsonl")
    patch = SessionPatch(session, cwd=cwd, started_at="2026-11-30T09:00:00.000Z")
    bank.apply(Write(cursor, [SessionWrite(harness, patch, "coding-agent::demo")], events, [], is_new_source=True,
                     marks=marks or [], revise=revise))


def said(session: str, n: int, role: str = "user", text: str | None = None) -> Event:
    return Event(session, f"{session}:{n}", role, "text", text or f"{role} line {n}",  # type: ignore[arg-type]
                 ts=f"2026-11-30T09:{n:02d}:00.000Z")


def make(bank: Any, url: str, **options: Any) -> Forwarder:
    return Forwarder(bank, HindsightSettings(url=url, **options), Hindsight(url), host="test-host")


def doc_lines(fake: FakeHindsight, bank: str, doc_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in fake.text(bank, doc_id).split("\n")]


def test_a_session_becomes_one_document_of_its_turns(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [
            said("s1", 1, text="please fix the failing test <hindsight_memories>old memory</hindsight_memories>"),
            Event("s1", "s1:2", "assistant", "thinking", "let me think about it"),
            Event("s1", "s1:3", "assistant", "tool_call", "", tool_name="Bash", tool_input={"command": "pytest -x"},
                  tool_call_id="c1"),
            Event("s1", "s1:4", "tool", "tool_result", "3 failed, 2 passed", tool_call_id="c1"),
            Event("s1", "s1:5", "assistant", "tool_call", "", tool_name="Edit",
                  tool_input={"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, tool_call_id="c2"),
            said("s1", 6, "assistant", "Fixed: the fixture was stale."),
            Event("s1", "s1:7", "assistant", "tool_call", "", tool_name="mcp__harvester__handoff", tool_input={}),
        ])
        write(bank, "codex", "s2", [said("s2", 1), said("s2", 2, "assistant")], cwd="/work/other")
        report = make(bank, fake.url).forward()
    assert (report.sent, report.appended) == (2, 0)
    lines = doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")
    assert [(t["role"], t["content"]) for t in lines] == [
        ("user", "please fix the failing test"),
        ("assistant", "[tool Bash] pytest -x"),
        ("assistant", "[tool Edit] src/app.py"),
        ("assistant", "Fixed: the fixture was stale."),
    ]  # no thinking, no tool output, no injected memories, no call of the harvester's own tools
    assert lines[0]["timestamp"] == "2026-11-30T09:01:00.000Z"
    doc = fake.documents["coding-agent::demo"]["harvester:claude-code:s1"]
    assert doc["tags"] == ["harness:claude-code", "source:harvester"]
    assert doc["document_metadata"]["harness"] == "claude-code"
    assert doc["document_metadata"]["session_id"] == "s1" and doc["document_metadata"]["host"] == "test-host"
    assert all(isinstance(v, str) for v in doc["document_metadata"].values())
    assert doc["context"] and doc["timestamp"] == "2026-11-30T09:00:00.000Z"
    assert set(fake.documents["coding-agent::other"]) == {"harvester:codex:s2"}


def test_new_turns_append_with_tags_and_metadata_and_nothing_new_sends_nothing(tmp_path: Path,
                                                                                fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1), said("s1", 2, "assistant")])
        f = make(bank, fake.url)
        f.forward()
        write(bank, "claude-code", "s1", [said("s1", 3), said("s1", 4, "assistant")])
        report = f.forward()
        assert (report.sent, report.appended, report.lines) == (0, 1, 2)
        appended = fake.retains()[-1]["items"][0]
        assert appended["update_mode"] == "append"
        assert [json.loads(x)["content"] for x in appended["content"].split("\n")] == ["user line 3",
                                                                                       "assistant line 4"]
        assert appended["tags"] and appended["metadata"]  # an append without them clears them
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")] == [
            "user line 1", "assistant line 2", "user line 3", "assistant line 4"]
        before = len(fake.requests)
        assert f.forward().forwarded == 0 and len(fake.requests) == before  # nothing changed: not a call
        write(bank, "claude-code", "s1", [said("s1", 1)])  # a re-read of what it has: no change either
        assert f.forward().forwarded == 0 and not [r for r in fake.requests[before:] if r.method == "POST"]


def test_a_rewind_or_a_revised_event_replaces_the_document(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "gemini-cli", "g1", [said("g1", 1), said("g1", 2, "assistant"), said("g1", 3)])
        f = make(bank, fake.url)
        f.forward()
        write(bank, "gemini-cli", "g1", [], marks=[Mark("g1", {"rewound": True}, uids=("g1:3",))])
        assert f.forward().sent == 1
        assert fake.retains()[-1]["items"][0]["update_mode"] == "replace"
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:gemini-cli:g1")] == [
            "user line 1", "assistant line 2"]
        write(bank, "gemini-cli", "g1", [said("g1", 2, "assistant", "assistant line 2, revised")], revise=True)
        assert f.forward().sent == 1
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:gemini-cli:g1")] == [
            "user line 1", "assistant line 2, revised"]


def test_a_crash_after_the_server_took_an_append_sends_nothing_twice(tmp_path: Path, fake: FakeHindsight,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1), said("s1", 2, "assistant")])
        make(bank, fake.url).forward()
        write(bank, "claude-code", "s1", [said("s1", 3)])
        real_update = outbox.update

        def crash_after_send(b: Any, sink: str, h: str, n: str, **fields: Any) -> None:
            if fields.get("state") == "sent":  # the server took it; the cursor is not written: kill -9 here
                raise KeyboardInterrupt
            real_update(b, sink, h, n, **fields)

        monkeypatch.setattr(outbox, "update", crash_after_send)
        with pytest.raises(KeyboardInterrupt):
            make(bank, fake.url).forward()
        monkeypatch.setattr(outbox, "update", real_update)
        write(bank, "claude-code", "s1", [said("s1", 4, "assistant")])  # and the session went on meanwhile
        make(bank, fake.url).forward()
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")] == [
            "user line 1", "assistant line 2", "user line 3", "assistant line 4"]  # line 3 once


def test_a_crash_before_the_server_took_it_sends_it_again_as_it_was(tmp_path: Path, fake: FakeHindsight,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        make(bank, fake.url).forward()
        write(bank, "claude-code", "s1", [said("s1", 2, "assistant")])

        def killed(*args: Any, **kwargs: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(Hindsight, "retain", killed)
        with pytest.raises(KeyboardInterrupt):
            make(bank, fake.url).forward()
        monkeypatch.undo()
        flight = outbox.due(bank, "hindsight")[0]["in_flight"]
        assert flight["mode"] == "append" and "assistant line 2" in flight["content"]
        write(bank, "claude-code", "s1", [said("s1", 3)])
        make(bank, fake.url).forward()
        ops = [r["operation_id"] for r in fake.retains()]
        assert flight["operation_id"] in ops
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")] == [
            "user line 1", "assistant line 2", "user line 3"]


def test_while_the_server_is_away_the_outbox_keeps_everything(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        away = make(bank, "http://127.0.0.1:9")  # nothing listens there
        write(bank, "claude-code", "s1", [said("s1", 1)])
        write(bank, "codex", "s2", [said("s2", 1)])
        report = away.forward()
        assert report.stopped_by and report.forwarded == 0 and report.retry == 1  # one try, not one per session
        stats = outbox.stats(bank, "hindsight")
        assert sum(b["pending"] for b in stats["banks"]) == 2 and "ConnectError" in stats["last_error"]
        assert bank.conn.execute("SELECT count(*) FROM sink_documents WHERE next_try_at IS NULL").fetchone()[0] == 2
        write(bank, "claude-code", "s1", [said("s1", 2, "assistant")])  # not the documents' fault: due at once
        assert make(bank, fake.url).forward().forwarded == 2
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")] == [
            "user line 1", "assistant line 2"]
        assert sum(b["pending"] for b in outbox.stats(bank, "hindsight")["banks"]) == 0


def test_429_waits_as_asked_5xx_retries_and_another_4xx_gives_up_with_the_error_kept(tmp_path: Path,
                                                                                       fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        fake.fail(404, times=3)  # the three looks for Hindsight's own documents: none
        fake.fail(429, headers={"Retry-After": "120"})
        f = make(bank, fake.url)
        assert f.forward().retry == 1
        row = bank.conn.execute("SELECT next_try_at, last_error, state FROM sink_documents").fetchone()
        assert row[2] == "pending" and "429" in row[1]
        assert 110 < seconds_until(row[0]) <= 121
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        fake.fail(404, times=3)
        fake.fail(503)
        assert f.forward().retry == 1
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        fake.fail(404, times=3)
        fake.fail(400)
        assert f.forward().failed == 1
        state, error = bank.conn.execute("SELECT state, last_error FROM sink_documents").fetchone()
        assert state == "failed" and "HTTP 400" in error
        assert f.forward().forwarded == 0  # given up until the session changes
        write(bank, "claude-code", "s1", [said("s1", 2, "assistant")])
        assert f.forward().sent == 1


@pytest.mark.parametrize("theirs", ["conversation:s1", "chat:s1", "s1"])
def test_a_session_filed_by_hindsights_own_hooks_is_skipped_or_taken_over(tmp_path: Path, fake: FakeHindsight,
                                                                          theirs: str) -> None:
    fake.documents["coding-agent::demo"] = {theirs: {"id": theirs, "original_text": "theirs", "tags": []}}
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        write(bank, "claude-code", "s2", [said("s2", 1)])
        assert make(bank, fake.url).forward().skipped == 1
        assert set(fake.documents["coding-agent::demo"]) == {theirs, "harvester:claude-code:s2"}
        assert fake.text("coding-agent::demo", theirs) == "theirs"
        stats = outbox.stats(bank, "hindsight")["banks"][0]
        assert stats["skipped"] == 1
    with open_bank(tmp_path / "converge.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        f = make(bank, fake.url, converge=True)
        f.forward()
        write(bank, "claude-code", "s1", [said("s1", 2, "assistant")])
        f.forward()
        assert set(fake.documents["coding-agent::demo"]) == {theirs, "harvester:claude-code:s2"}  # no duplicate
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", theirs)] == ["user line 1",
                                                                                        "assistant line 2"]


def test_an_opted_out_or_denied_bank_or_harness_sends_nothing(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)], cwd="/work/secret")
        write(bank, "claude-code", "s2", [said("s2", 1)], cwd="/work/scratch")
        write(bank, "aider", "s3", [said("s3", 1)])
        write(bank, "codex", "s4", [said("s4", 1)])
        report = make(bank, fake.url, opted_out=["coding-agent::secret"], exclude_banks=["coding-agent::scr*"],
                      exclude_harnesses=["aider"]).forward()
        assert (report.sent, report.held) == (1, 3)
        assert {b: set(d) for b, d in fake.documents.items() if d} == {"coding-agent::demo": {"harvester:codex:s4"}}
        held = {b["bank"]: b["held"] for b in outbox.stats(bank, "hindsight")["banks"] if b["held"]}
        assert held == {"coding-agent::secret": 1, "coding-agent::scratch": 1, "coding-agent::demo": 1}


def test_a_forgotten_session_is_deleted_from_the_sink(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        f = make(bank, fake.url)
        f.forward()
        from harvester.bank import forget

        forget.forget(bank, forget.choose(bank, session="s1"))
        assert f.forward().deleted == 1
        assert fake.documents["coding-agent::demo"] == {}


def test_the_token_is_sent_in_the_header_and_never_shown(tmp_path: Path, fake: FakeHindsight,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake.token = "s3cret-token-value"
    monkeypatch.setenv("HS_TOKEN", "s3cret-token-value")
    conf = tmp_path / "config.toml"
    conf.write_text(f'[sinks.hindsight]\nurl = "{fake.url}"\ntoken_env = "HS_TOKEN"\n')
    monkeypatch.setenv("HARVESTER_CONFIG", str(conf))
    bank_path = tmp_path / "bank.sqlite"
    with open_bank(bank_path) as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        f = forwarder(bank, config.load(bank=str(bank_path), harness_names=HARNESSES))
        assert f is not None and f.forward().sent == 1
    runner = CliRunner()
    for args in (["sink", "test"], ["sink", "status"], ["status"], ["config"], ["sink", "backfill"]):
        out = runner.invoke(cli, ["--bank", str(bank_path), *args])
        assert out.exit_code == 0, (args, out.output)
        assert "s3cret" not in out.output
    assert "Hindsight API 1.1.0" in runner.invoke(cli, ["--bank", str(bank_path), "sink", "test"]).output
    monkeypatch.setenv("HS_TOKEN", "wrong")
    out = runner.invoke(cli, ["--bank", str(bank_path), "sink", "test"])
    assert out.exit_code != 0 and "401" in out.output and "wrong" not in out.output


def test_status_shows_per_bank_forwarded_pending_lag_and_last_error(tmp_path: Path, fake: FakeHindsight,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "config.toml"
    conf.write_text(f'[sinks.hindsight]\nurl = "{fake.url}"\n')
    monkeypatch.setenv("HARVESTER_CONFIG", str(conf))
    bank_path = tmp_path / "bank.sqlite"
    with open_bank(bank_path) as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        write(bank, "codex", "s2", [said("s2", 1)], cwd="/work/other")
        fake.fail(404, times=3)
        fake.fail(500)
        make(bank, fake.url).forward()
    out = CliRunner().invoke(cli, ["--bank", str(bank_path), "status"]).output
    assert "Hindsight (" in out and "1 sessions forwarded, 1 pending" in out
    assert "coding-agent::demo: 0 forwarded, 1 pending, lag" in out or "coding-agent::other: 0 forwarded" in out
    assert "HTTP 500" in out
    data = json.loads(CliRunner().invoke(cli, ["--bank", str(bank_path), "sink", "status", "--json"]).output)
    assert {b["bank"]: (b["sent"], b["pending"]) for b in data["banks"]} in (
        {"coding-agent::demo": (0, 1), "coding-agent::other": (1, 0)},
        {"coding-agent::demo": (1, 0), "coding-agent::other": (0, 1)})


def test_backfill_forwards_a_bank_or_recent_sessions_and_leaves_the_rest_queued(tmp_path: Path,
                                                                                fake: FakeHindsight,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "config.toml"
    conf.write_text(f'[sinks.hindsight]\nurl = "{fake.url}"\n')
    monkeypatch.setenv("HARVESTER_CONFIG", str(conf))
    bank_path = tmp_path / "bank.sqlite"
    with open_bank(bank_path) as bank:
        for n in range(5):
            write(bank, "claude-code", f"d{n}", [said(f"d{n}", 1)])
        write(bank, "codex", "o1", [said("o1", 1)], cwd="/work/other")
    runner = CliRunner()
    out = runner.invoke(cli, ["--bank", str(bank_path), "sink", "backfill", "--bank-id", "coding-agent::other"])
    assert out.exit_code == 0 and "Forwarded 1 of 1 sessions" in out.output, out.output
    assert set(fake.documents.get("coding-agent::demo", {})) == set()
    out = runner.invoke(cli, ["--bank", str(bank_path), "sink", "backfill"])
    assert "Forwarded 5 of 5 sessions" in out.output, out.output
    assert len(fake.documents["coding-agent::demo"]) == 5


def test_config_checks_the_sink_table(tmp_path: Path) -> None:
    conf = tmp_path / "config.toml"
    for text, message in (
        ('[sinks.hindsight]\ntoken_env = "X"\n', "expected a url"),
        ('[sinks.hindsight]\nurl = "ftp://x"\n', "an http:// or https:// URL"),
        ('[sinks.hindsight]\nurl = "http://x"\ntoken = "abc"\n', 'unknown key "token"'),
        ('[sinks.hindsight]\nurl = "http://x"\nharnesses = ["claude"]\n', 'unknown harness "claude"'),
        ('[sinks.hindsight]\nurl = "http://x"\nbank_template = "hs::{repo}"\n', 'unknown placeholder "{repo}"'),
        ('[sinks.hindsight.bank."a"]\nretain = false\n', "expected a url"),
        ('[sinks.other]\nurl = "http://x"\n', 'unknown key "other"'),
    ):
        conf.write_text(text)
        with pytest.raises(config.ConfigError, match=message.replace("(", r"\(").replace("{", r"\{")):
            config.load({"HARVESTER_CONFIG": str(conf)}, harness_names=HARNESSES)
    conf.write_text('[sinks.hindsight]\nurl = "http://x/"\nconverge = true\n'
                    '[sinks.hindsight.bank."coding-agent::secret"]\nretain_sessions = false\n')
    s = config.load({"HARVESTER_CONFIG": str(conf)}, harness_names=HARNESSES).sinks["hindsight"]
    assert (s.url, s.converge, s.opted_out) == ("http://x", True, ["coding-agent::secret"])
    assert s.bank_refusal("coding-agent::secret") and not s.bank_refusal("coding-agent::demo")


def test_fingerprint_tells_a_prefix_from_a_rewrite() -> None:
    session = {"harness": "codex", "native_id": "x", "started_at": None}
    events = [{"role": "user", "kind": "text", "text": "a"}, {"role": "assistant", "kind": "text", "text": "b"}]
    doc = build(session, events, host="h")
    grown = build(session, [*events, {"role": "user", "kind": "text", "text": "c"}], host="h")
    assert fingerprint(grown.lines[:2]) == fingerprint(doc.lines)
    assert fingerprint(build(session, events[::-1], host="h").lines) != fingerprint(doc.lines)


def test_a_sink_error_says_whether_to_retry() -> None:
    assert SinkError("x", retryable=True).retryable


def test_a_document_waits_until_the_server_applied_its_last_payload(tmp_path: Path, fake: FakeHindsight,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The server applies retains later: the cursor takes lines only once it did, and the next append of a
    document is not sent before, or it could land first."""
    from harvester.sinks import forward

    monkeypatch.setattr(forward, "SETTLE_SECONDS", 0.0)
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        f = make(bank, fake.url)
        fake.pending_polls = 3
        report = f.forward()
        assert (report.sent, report.waiting) == (0, 1)
        assert bank.conn.execute("SELECT lines FROM sink_documents").fetchone()[0] == 0  # not applied yet
        write(bank, "claude-code", "s1", [said("s1", 2, "assistant")])
        posts = len(fake.retains())
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        f.forward()
        assert len(fake.retains()) == posts  # the append waits for the replace before it
        fake.pending_polls = 0
        while bank.conn.execute("SELECT in_flight IS NOT NULL FROM sink_documents").fetchone()[0]:
            bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
            f.forward()
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        f.forward()
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")] == [
            "user line 1", "assistant line 2"]


def test_an_append_the_server_acknowledged_and_lost_is_sent_again(tmp_path: Path, fake: FakeHindsight) -> None:
    with open_bank(tmp_path / "bank.sqlite") as bank:
        write(bank, "claude-code", "s1", [said("s1", 1)])
        f = make(bank, fake.url)
        f.forward()
        write(bank, "claude-code", "s1", [said("s1", 2, "assistant")])
        fake.lose = 1  # acknowledged, then the server died before it wrote it
        assert f.forward().retry == 1
        write(bank, "claude-code", "s1", [said("s1", 3)])
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        f.forward()
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        f.forward()
        assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", "harvester:claude-code:s1")] == [
            "user line 1", "assistant line 2", "user line 3"]


def test_a_pass_sends_a_batch_of_documents_before_following_their_operations(tmp_path: Path,
                                                                           fake: FakeHindsight) -> None:
    """The server applies retains in the background: a pass sends the documents it has due, then follows their
    operations together (waiting on each in turn would cost a round of the server's worker per document)."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        for s in ("s1", "s2", "s3"):
            write(bank, "claude-code", s, [said(s, 1)])
        fake.pending_polls = 2
        assert make(bank, fake.url).forward().sent == 3
    kinds = [("post" if r.method == "POST" else "poll") for r in fake.requests
             if r.method == "POST" or "/operations/" in r.path]
    assert kinds[:4] == ["post", "post", "post", "poll"], kinds


def test_in_a_batch_a_failed_document_costs_that_document_alone(tmp_path: Path, fake: FakeHindsight) -> None:
    """One document of a batch refused (503) and another's operation failed on the server: the others are
    delivered, those two are retried, and no document gets a payload twice."""
    real_retain, real_handle = fake._retain, fake.handle
    refused: list[str] = []

    def retain(bank_id: str, docs: dict[str, Any], body: dict[str, Any]) -> tuple[int, Any, dict]:
        doc_id = body["items"][0]["document_id"]
        if doc_id == "harvester:claude-code:s2" and not refused:
            refused.append(doc_id)
            return 503, {"detail": "busy"}, {}
        return real_retain(bank_id, docs, body)

    failed_ops: list[str] = []

    def handle(method: str, raw_path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any, dict]:
        status, answer, extra = real_handle(method, raw_path, body, headers)
        if method == "POST" and isinstance(answer, dict) and answer.get("operation_id") and not failed_ops \
                and body["items"][0]["document_id"] == "harvester:claude-code:s4":
            op = answer["operation_id"]
            failed_ops.append(op)
            with fake.lock:  # the server took it, then its worker failed it: nothing applied
                fake.operations[op] = {"operation_id": op, "status": "failed"}
                fake.documents.get("coding-agent::demo", {}).pop("harvester:claude-code:s4", None)
        return status, answer, extra

    fake._retain, fake.handle = retain, handle  # type: ignore[method-assign]
    with open_bank(tmp_path / "bank.sqlite") as bank:
        for s in ("s1", "s2", "s3", "s4", "s5"):
            write(bank, "claude-code", s, [said(s, 1), said(s, 2, "assistant")])
        f = make(bank, fake.url)
        report = f.forward()
        assert (report.sent, report.retry) == (3, 2)
        assert set(fake.documents["coding-agent::demo"]) == {f"harvester:claude-code:{s}" for s in ("s1", "s3", "s5")}
        states = dict(bank.conn.execute("SELECT native_id, state FROM sink_documents"))
        assert states == {"s1": "sent", "s2": "pending", "s3": "sent", "s4": "pending", "s5": "sent"}
        bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        assert f.forward().sent == 2
        assert f.forward().forwarded == 0
    applied = [r["items"][0]["document_id"] for r in fake.retains()]
    for s in ("s1", "s3", "s5"):
        assert applied.count(f"harvester:claude-code:{s}") == 1
    for s in ("s2", "s4"):  # the refused or failed payload, then once more
        assert applied.count(f"harvester:claude-code:{s}") == 2
        assert fake.text("coding-agent::demo", f"harvester:claude-code:{s}").count("line 1") == 1


def test_a_crash_with_a_batch_in_flight_loses_and_doubles_nothing(tmp_path: Path, fake: FakeHindsight,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 after a batch of appends was sent and before any was followed: the next pass follows each one
    (or sends it again, exactly as it was), and every line lands once."""
    with open_bank(tmp_path / "bank.sqlite") as bank:
        sessions = ("s1", "s2", "s3")
        for s in sessions:
            write(bank, "claude-code", s, [said(s, 1)])
        make(bank, fake.url).forward()
        for s in sessions:
            write(bank, "claude-code", s, [said(s, 2, "assistant")])
        fake.pending_polls = 2
        fake.lose = 0

        def killed(*args: Any, **kwargs: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(Hindsight, "operation", killed)
        with pytest.raises(KeyboardInterrupt):
            make(bank, fake.url).forward()
        monkeypatch.undo()
        in_flight = bank.conn.execute("SELECT count(*) FROM sink_documents WHERE in_flight IS NOT NULL").fetchone()[0]
        assert in_flight >= 1
        f = make(bank, fake.url)
        while f.forward().waiting:
            bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        for s in sessions:
            write(bank, "claude-code", s, [said(s, 3)])
        while f.forward().waiting:
            bank.conn.execute("UPDATE sink_documents SET next_try_at = NULL")
        for s in sessions:
            assert [t["content"] for t in doc_lines(fake, "coding-agent::demo", f"harvester:claude-code:{s}")] == [
                "user line 1", "assistant line 2", "user line 3"]
