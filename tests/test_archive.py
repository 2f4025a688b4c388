"""The raw archive: every harvested source's bytes kept beside the bank (harvester/capture/archive).

What it is for: sessions whose agent files are gone can be parsed again (``harvester reparse``), with the
same result as when their files were there, or with a parser's fix applied; a tool output past the bank's
256 KiB copy is whole there; and what is forgotten (``harvester forget``) or excluded is not in it.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
import zstandard

from harvester import redact
from harvester.bank import open_bank
from harvester.bank.reparse import reparse
from harvester.capture.archive import Archive, archive_dir
from harvester.capture.ingest import Ingestor
from harvester.config import DEFAULT_BANK_ID_TEMPLATE
from harvester.model import MAX_EVENT_TEXT
from harvester.parsers import HARNESSES
from tests.helpers import ClaudeSession, bank_rows, sessions_of
from tests.machine import harvester_cli, lay_out_every_store, roots_config

SECRET = "ghp_" + "Z7x9Qw2Er4Ty6Ui8Op0As1Df3Gh5Jk7Lz9Xc"  # a GitHub token: the redactor knows its shape


def _sessions(bank: Path) -> list[dict]:
    volatile = ("id", "first_imported_at", "last_imported_at")
    return sorted(({k: v for k, v in s.items() if k not in volatile} for s in sessions_of(bank)),
                  key=lambda s: (s["harness"], s["native_id"]))


def _every_store(tmp: Path) -> Path:
    home = tmp / "home"
    lay_out_every_store(home)
    (tmp / "config.toml").write_text(roots_config(home))
    return home


def _archived_bytes(directory: Path) -> bytes:
    """Everything the archive holds, decompressed: what a secret must not be found in."""
    out = []
    for path in sorted(directory.rglob("*.zst")):
        data = path.read_bytes()
        try:
            out.append(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read())
        except zstandard.ZstdError:
            out.append(data)
    return b"\n".join(out)


def test_every_store_reparsed_from_the_archive_alone_is_the_bank_it_was(tmp_path: Path) -> None:
    home = _every_store(tmp_path)
    assert harvester_cli(tmp_path, "scan").returncode == 0
    bank = tmp_path / "bank.sqlite"
    rows, sessions = bank_rows(bank), _sessions(bank)
    # every harness has sessions to lose (but those whose store cannot be read: Windsurf's, Trae's)
    assert len({r[0] for r in rows}) == len([h for h in HARNESSES.values() if h.sources])

    where = archive_dir(bank)
    assert stat.S_IMODE(where.stat().st_mode) == 0o700
    for path in where.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path

    shutil.rmtree(home)  # every agent's files gone: cleanup, a new laptop, an uninstall
    home.mkdir()
    assert harvester_cli(tmp_path, "scan").returncode == 0  # finds them gone
    status = orjson.loads(harvester_cli(tmp_path, "status", "--json").stdout)
    gone = sum(h["sessions_originals_gone"] for h in status["harnesses"])
    assert gone >= len(sessions) - 5  # (a session read from several sources counts by its last)
    assert status["archive"]["size_bytes"] > 0 and status["archive"]["missing"] == []

    done = harvester_cli(tmp_path, "reparse")
    assert done.returncode == 0, done.stderr
    assert "from their files" not in done.stdout and "skipped" not in done.stdout, done.stdout
    assert bank_rows(bank) == rows
    assert _sessions(bank) == sessions

    again = harvester_cli(tmp_path, "reparse")  # idempotent
    assert again.returncode == 0 and bank_rows(bank) == rows and _sessions(bank) == sessions


def test_a_parser_fixed_since_is_applied_by_reparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    session = ClaudeSession(home, "/work/app")
    session.write(*session.conversation(3))
    bank = open_bank(bank_path)
    try:
        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
            ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(home)}, home)
        session.path.unlink()

        old = HARNESSES["claude-code"]

        def fixed(ref, records, state):
            batch = old.parse(ref, records, state)
            for event in batch.events:
                if event.role == "assistant":
                    event.text = event.text.replace("answer", "ANSWER")
            return batch

        monkeypatch.setitem(HARNESSES, "claude-code", replace(old, parse=fixed, version=old.version + 1))
        assert bank.session_versions() == {"claude-code": {old.version: 1}}  # status: made by an older parser

        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
            report = reparse(ingestor, ["claude-code"])
        assert [s.how for s in report.sources] == ["archive"]
        texts = [e["text"] for e in bank.events(bank.list_sessions()[0]["id"]) if e["role"] == "assistant"]
        assert len(texts) == 3 and all(t.startswith("ANSWER") for t in texts)
        assert bank.session_versions() == {"claude-code": {old.version + 1: 1}}
    finally:
        bank.close()


def test_the_archive_grows_by_what_is_appended(tmp_path: Path) -> None:
    """1,000 appends, a scan after each: the archive grows by each append's bytes (compressed), never by a
    copy of the file, and holds the file byte for byte."""
    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    session = ClaudeSession(home, "/work/app")
    bank = open_bank(bank_path)
    streams = archive_dir(bank_path) / "streams"
    appended, growth = 0, []
    try:
        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
            before = 0
            for i in range(1000):
                line = (session.user(f"question {i}: " + os.urandom(60).hex()) if i % 2 == 0 else
                        session.assistant(f"answer {i}: " + "the module parses rows. " * (i % 7 + 1)))
                session.write(line)
                appended += len(line)
                ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(home)}, home)
                size = sum(p.stat().st_size for p in streams.glob("*.zst"))
                growth.append((size - before, len(line)))
                before = size
        assert max(grew - size for grew, size in growth) <= 64  # a frame's header, never the file again
        assert before <= appended + 64 * 1000
        kept = b"".join(raw for _, raw in Archive(archive_dir(bank_path), readonly=True).frames(
            bank.conn, 1, "streams", 0))
        assert kept == session.path.read_bytes()
    finally:
        bank.close()


def _claude_with_big_output(home: Path, output: str) -> ClaudeSession:
    session = ClaudeSession(home, "/work/app")
    session.write(session.user("run the build"), session.tool_use("Bash", {"command": "make"}, "toolu_1"),
                  session.tool_result("toolu_1", output), session.assistant("the build passed"))
    return session


def test_a_5_mb_tool_output_is_whole_in_show_full(tmp_path: Path) -> None:
    rows = [f"{n:07d} compiling module_{n % 977}.c -O2 -Wall" for n in range(130_000)]
    rows[70_000] = f"export GITHUB_TOKEN={SECRET}"  # past the bank's copy: only the archive's holds it
    output = "\n".join(rows)
    assert len(output) > 5_000_000
    session = _claude_with_big_output(tmp_path / "home", output)
    assert harvester_cli(tmp_path, "scan").returncode == 0

    shown = harvester_cli(tmp_path, "show", session.id, "--full", "--json")
    assert shown.returncode == 0, shown.stderr
    result = next(e for e in orjson.loads(shown.stdout)["events"] if e["kind"] == "tool_result")
    assert result["text"] == redact.redact(output)[0]  # byte for byte, after redaction
    assert SECRET not in result["text"] and "[REDACTED" in result["text"]

    clipped = next(e for e in orjson.loads(harvester_cli(tmp_path, "show", session.id, "--json").stdout)["events"]
                   if e["kind"] == "tool_result")
    assert clipped["meta"]["clipped"]["chars"] == len(result["text"])
    assert len(clipped["text"]) < MAX_EVENT_TEXT + 200 and "show --full" in clipped["text"]
    assert SECRET.encode() not in (tmp_path / "bank.sqlite").read_bytes()


def test_get_events_pages_through_a_whole_tool_output(tmp_path: Path) -> None:
    from harvester.bank.scope import EVERYTHING
    from harvester.recall import views
    from harvester.recall.views import Recall

    output = "".join(f"line {n:06d} of the build log\n" for n in range(20_000))  # 560 KB: clipped in the bank
    session = _claude_with_big_output(tmp_path / "home", output)
    assert harvester_cli(tmp_path, "scan").returncode == 0
    bank = open_bank(tmp_path / "bank.sqlite", archive=False)
    try:
        r = Recall(bank, EVERYTHING)
        seq = next(e["seq"] for e in bank.events(bank.list_sessions()[0]["id"]) if e["kind"] == "tool_result")
        short = views.get_events(r, session.id, start=seq, limit=1)
        assert "line 000140" not in short  # 4,000 characters a page, unless full
        read, text_from, pages = "", 0, 0
        while True:
            page = views.get_events(r, session.id, start=seq, limit=1, full=True, text_from=text_from,
                                    max_bytes=200_000)
            pages += 1
            read += page
            if "text_from=" not in page:
                break
            text_from = int(page.rsplit("text_from=", 1)[1].split(")")[0])
        assert pages >= 3 and text_from > MAX_EVENT_TEXT  # past the bank's copy, from the archive
        assert "line 019999 of the build log" in read
    finally:
        bank.close()


def test_archive_off_keeps_no_copy(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("archive = false\n")
    session = _claude_with_big_output(tmp_path / "home", "x" * (MAX_EVENT_TEXT + 10))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert not archive_dir(tmp_path / "bank.sqlite").exists()
    shown = harvester_cli(tmp_path, "show", session.id, "--full", "--json")
    result = next(e for e in orjson.loads(shown.stdout)["events"] if e["kind"] == "tool_result")
    assert result["text"].endswith("[the whole text is not in the archive: it was off, or retention removed it]")
    status = harvester_cli(tmp_path, "status")
    assert "Archive: off (archive = false)" in status.stdout


# --- forget ---------------------------------------------------------------------------------------------

def _secret_session(home: Path, word: str) -> ClaudeSession:
    session = ClaudeSession(home, "/work/app")
    session.write(session.user(f"the staging password is {word}, keep it handy"), session.assistant("noted"))
    return session


def _bank_files(tmp: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp)): p.read_bytes() for p in sorted(tmp.glob("bank*")) if p.is_file()} | {
        str(p.relative_to(tmp)): p.read_bytes() for p in sorted(archive_dir(tmp / "bank.sqlite").rglob("*"))
        if p.is_file()}


def test_forget_takes_a_session_out_of_the_bank_the_index_and_the_archive(tmp_path: Path) -> None:
    word = "PLUM-ZEBRA-4417"  # no secret the redactor knows: what forget is for
    home = tmp_path / "home"
    forgotten, kept = _secret_session(home, word), _secret_session(home, "nothing")
    assert harvester_cli(tmp_path, "scan").returncode == 0
    bank = tmp_path / "bank.sqlite"
    assert word in harvester_cli(tmp_path, "search", word).stdout

    before = _bank_files(tmp_path)
    dry = harvester_cli(tmp_path, "forget", forgotten.id, "--dry-run")
    assert dry.returncode == 0 and forgotten.id in dry.stdout and "Nothing changed" in dry.stdout
    assert _bank_files(tmp_path) == before  # not a byte

    refused = harvester_cli(tmp_path, "forget", forgotten.id)  # not at a terminal: only with --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    done = harvester_cli(tmp_path, "forget", forgotten.id, "--yes")
    assert done.returncode == 0, done.stderr
    assert str(forgotten.path) in done.stdout  # the agent's own file, untouched, is named
    assert [s["native_id"] for s in sessions_of(bank)] == [kept.id]
    assert "No matches" in harvester_cli(tmp_path, "search", word).stdout
    on_disk = b"".join(before_bytes for before_bytes in _bank_files(tmp_path).values())
    assert word.encode() not in on_disk  # bank pages, its log, the index's segments, the archive
    assert word.encode() not in _archived_bytes(archive_dir(bank))

    forgotten.write(forgotten.user(f"and {word} again"), forgotten.assistant("still noted"))  # the agent goes on
    assert harvester_cli(tmp_path, "scan").returncode == 0
    assert [s["native_id"] for s in sessions_of(bank)] == [kept.id]
    assert word.encode() not in _archived_bytes(archive_dir(bank))

    rows = bank_rows(bank)
    assert harvester_cli(tmp_path, "reparse").returncode == 0
    assert bank_rows(bank) == rows


@pytest.mark.parametrize(("harness", "forgotten", "unique"), [
    ("aider", "webapp@2026-08-01T14:30:05", b"version field"),
    ("opencode", "ses_e07d0e17fffeSbXOIkDj8Q6xzR", b"parse_row on empty lines"),
])
def test_forget_in_a_store_shared_with_other_sessions(tmp_path: Path, harness: str, forgotten: str,
                                                      unique: bytes) -> None:
    """An Aider history file and an opencode database hold many sessions: the archive keeps the others'."""
    _every_store(tmp_path)
    assert harvester_cli(tmp_path, "scan", "--harness", harness).returncode == 0
    bank = tmp_path / "bank.sqlite"
    before = bank_rows(bank)
    assert unique in _archived_bytes(archive_dir(bank))

    done = harvester_cli(tmp_path, "forget", forgotten, "--yes")
    assert done.returncode == 0, done.stderr
    assert "could not be told apart" not in done.stdout  # re-packed, not dropped whole
    assert unique not in _archived_bytes(archive_dir(bank))
    left = {s["native_id"] for s in sessions_of(bank)}  # the forgotten one, and the sub-agents it started, went
    assert forgotten not in left and len(left) >= 2
    rows = [r for r in before if r[1] in left]
    assert bank_rows(bank) == rows

    shutil.rmtree(tmp_path / "home")  # the others come back from the archive alone, as they were
    assert harvester_cli(tmp_path, "reparse").returncode == 0
    assert bank_rows(bank) == rows


def test_forget_by_repository_and_by_age(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for cwd in ("/work/a", "/work/a", "/work/b"):
        s = ClaudeSession(home, cwd)
        s.write(*s.conversation(2))
    assert harvester_cli(tmp_path, "scan").returncode == 0
    bank = tmp_path / "bank.sqlite"
    listed = harvester_cli(tmp_path, "forget", "--before", "2026-11-02", "--dry-run")
    assert listed.stdout.startswith("Would forget 3 sessions")  # the fixtures' sessions are of 2026-11-01
    assert harvester_cli(tmp_path, "forget", "--before", "2026-10-01", "--dry-run").stdout.startswith(
        "Nothing to forget")
    by_repo = harvester_cli(tmp_path, "forget", "--repo", "/work/a", "--yes")
    assert by_repo.returncode == 0 and "Forgot 2 sessions" in by_repo.stdout, by_repo.stdout + by_repo.stderr
    assert {s["cwd"] for s in sessions_of(bank)} == {"/work/b"}


# --- retention of the archive ---------------------------------------------------------------------------

def test_retention_never_removes_what_the_bank_lacks(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from harvester.capture.archive.expiry import expire

    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    plain = ClaudeSession(home, "/work/a")
    plain.write(*plain.conversation(2))
    big = _claude_with_big_output(home, "y" * (MAX_EVENT_TEXT + 5))  # its whole text is only in the archive
    live = ClaudeSession(home, "/work/c", live=True)
    live.write(*live.conversation(1))
    bank = open_bank(bank_path)
    try:
        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
            ingestor.scan([HARNESSES["claude-code"]], {"HOME": str(home)}, home)
            with bank.transaction() as c:
                c.execute("UPDATE sessions SET state = 'live' WHERE native_id = ?", (live.id,))
            later = datetime.now(UTC) + timedelta(days=400)
            done = expire(bank.conn, bank.archive, 365, None, bank.transaction, now=later)
            assert done.sources == [str(plain.path)]
            gap = bank.conn.execute("SELECT archive_gap FROM sources WHERE path = ?", (str(plain.path),)).fetchone()[0]
            assert "archive retention removed" in gap
            assert bank.whole_text(next(e for e in bank.events(bank.find_sessions(big.id)[0]["id"])
                                        if e["kind"] == "tool_result")) == "y" * (MAX_EVENT_TEXT + 5)

            rows = bank_rows(bank_path)
            report = reparse(ingestor, ["claude-code"])  # the file is there: read from it, archived anew
            assert {s.path: s.how for s in report.sources}[str(plain.path)] == "file"
            assert bank_rows(bank_path) == rows
            assert bank.conn.execute("SELECT archive_gap FROM sources WHERE path = ?",
                                     (str(plain.path),)).fetchone()[0] is None

            expire(bank.conn, bank.archive, 365, None, bank.transaction, now=later)
            plain.path.unlink()  # now only the bank has it: a reparse leaves it as it is
            report = reparse(ingestor, ["claude-code"])
            skipped = {s.path: s for s in report.sources}[str(plain.path)]
            assert skipped.how == "skipped" and "archive retention removed" in skipped.reason
            assert bank_rows(bank_path) == rows
    finally:
        bank.close()


def test_a_forgotten_session_written_on_beside_a_new_one_stays_out_of_the_archive(tmp_path: Path) -> None:
    """The agent goes on writing the forgotten session, then starts another in the same file: the chunk read
    holds both, and the archive keeps the new one's lines alone."""
    home = _every_store(tmp_path)
    assert harvester_cli(tmp_path, "scan", "--harness", "aider").returncode == 0
    bank = tmp_path / "bank.sqlite"
    assert harvester_cli(tmp_path, "forget", "webapp@2026-08-02T09:15:00#2", "--yes").returncode == 0
    history = home / "src" / "webapp" / ".aider.chat.history.md"
    with open(history, "a") as f:
        f.write("\nSure, here is the route: it returns BLUE-HERON-77.\n\n"
                "#### /quit  \n\n# aider chat started at 2026-08-03 10:00:00\n\n"
                "#### rename the health route to /status  \n\nDone: the route is /status now.\n\n")
    assert harvester_cli(tmp_path, "scan", "--harness", "aider").returncode == 0
    names = {s["native_id"] for s in sessions_of(bank)}
    assert "webapp@2026-08-03T10:00:00" in names and "webapp@2026-08-02T09:15:00#2" not in names
    archived = _archived_bytes(archive_dir(bank))
    assert b"BLUE-HERON-77" not in archived and b"rename the health route to /status" in archived

    rows = bank_rows(bank)
    shutil.rmtree(home)
    assert harvester_cli(tmp_path, "reparse").returncode == 0
    assert bank_rows(bank) == rows
