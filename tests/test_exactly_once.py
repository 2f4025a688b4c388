"""Every event lands exactly once: appends, torn lines, rewrites, truncation, recompression."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import zstandard

from harvester.bank import open_bank
from tests.helpers import ClaudeSession, bank_rows, event_identities, events_of, scan


def test_append_then_rescan_imports_only_new_events(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(3))
    first = scan(home, bank, ("claude-code",))
    assert first.events_added == 6

    again = scan(home, bank, ("claude-code",))
    assert again.events_added == 0
    assert again.bytes_read == 0  # an unchanged file costs a stat, not a read

    s.write(*s.conversation(2, start=3))
    third = scan(home, bank, ("claude-code",))
    assert third.events_added == 4
    texts = [e["text"] for e in events_of(bank)]
    assert texts[0].startswith("question 0") and texts[-1].startswith("answer 4")
    assert len(texts) == len(set(texts)) == 10


def test_torn_last_line_waits_and_is_imported_once(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    whole = s.conversation(2)
    last = whole[-1]
    s.write(*whole[:-1], last[: len(last) // 2])  # the agent is mid-write
    assert scan(home, bank).events_added == 3
    assert [e["text"][:8] for e in events_of(bank)] == ["question", "answer 0", "question"]

    s.write(last[len(last) // 2 :])
    assert scan(home, bank).events_added == 1
    assert scan(home, bank).events_added == 0
    texts = [e["text"] for e in events_of(bank)]
    assert len(texts) == 4 and texts[-1].startswith("answer 1")


def test_rewritten_file_is_reread_without_duplicates(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    lines = s.conversation(3)
    s.write(*lines)
    scan(home, bank)
    before = bank_rows(bank)

    # The agent rewrites the file (a migration): same records, new inode, one record added.
    extra = s.conversation(1, start=3)
    tmp = s.path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(lines + extra))
    os.replace(tmp, s.path)
    assert scan(home, bank).events_added == 2
    after = bank_rows(bank)
    assert after[: len(before)] == before
    assert len(after) == len(before) + 2


def test_rewrite_in_place_with_different_content_is_detected(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    lines = s.conversation(3)
    s.write(*lines)
    scan(home, bank)
    # Same inode, longer file, but the record before the cursor is another one now (an editor, a
    # migration): the file must be re-read from the start, not continued from the old offset.
    s.n += 100  # new records get new uuids
    changed = [*lines[:-1], s.assistant("ANSWER 2 (rewritten)"), *s.conversation(1, start=3)]
    with open(s.path, "r+b") as f:
        f.write(b"".join(changed))
    scan(home, bank)
    texts = [e["text"] for e in events_of(bank)]
    assert any(t.startswith("ANSWER 2") for t in texts)
    assert any(t.startswith("answer 3") for t in texts)
    assert len(texts) == len(set(texts))


def test_truncated_file_is_reread_and_nothing_is_lost(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    lines = s.conversation(4)
    s.write(*lines)
    scan(home, bank)
    before = bank_rows(bank)
    s.path.write_bytes(b"".join(lines[:2]))  # truncated: shrinks below the cursor
    assert scan(home, bank).events_added == 0
    assert bank_rows(bank) == before  # what was captured stays captured
    s.write(*s.conversation(1, start=9))
    assert scan(home, bank).events_added == 2


def test_jsonl_replaced_by_zst_adds_nothing_and_loses_nothing(tmp_path: Path) -> None:
    from tests.helpers import FIXTURES  # noqa: F401  (fixtures dir exists for codex below)

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    day = home / ".codex" / "sessions" / "2026" / "11" / "01"
    day.mkdir(parents=True)
    sid = "019a0000-0000-7000-8000-000000000001"
    rollout = day / f"rollout-2026-11-01T10-00-00-{sid}.jsonl"
    rollout.write_bytes(_codex_lines(sid, 3))
    assert scan(home, bank, ("codex",)).events_added > 0
    before = event_identities(bank)

    # Codex's cold-storage worker: compress to .jsonl.zst, keep mtime, delete the original.
    st = rollout.stat()
    compressed = rollout.with_name(rollout.name + ".zst")
    compressed.write_bytes(zstandard.ZstdCompressor(level=3).compress(rollout.read_bytes()))
    os.utime(compressed, ns=(st.st_atime_ns, st.st_mtime_ns))
    rollout.unlink()
    assert scan(home, bank, ("codex",)).events_added == 0
    assert event_identities(bank) == before

    # Resumed: decompressed back to .jsonl and appended; both exist for a while (.jsonl wins).
    rollout.write_bytes(_codex_lines(sid, 4))
    assert scan(home, bank, ("codex",)).events_added == 2  # one more user prompt and answer
    compressed.unlink()
    assert scan(home, bank, ("codex",)).events_added == 0
    bank_handle = open_bank(bank)
    try:
        gone = [c.path for c in bank_handle.cursors("codex") if c.status == "missing"]
    finally:
        bank_handle.close()
    assert str(compressed) in gone


def test_reimport_into_fresh_bank_matches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(5))
    incremental = tmp_path / "a.sqlite"
    for _ in range(3):
        scan(home, incremental)
        s.write(*s.conversation(1, start=100 + s.n))
    scan(home, incremental)
    clean = tmp_path / "b.sqlite"
    scan(home, clean)
    assert bank_rows(incremental) == bank_rows(clean)


def test_copied_home_imports_identically(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(3))
    scan(home, tmp_path / "a.sqlite")
    shutil.copytree(home, tmp_path / "home2")
    scan(tmp_path / "home2", tmp_path / "b.sqlite")
    assert event_identities(tmp_path / "a.sqlite") == event_identities(tmp_path / "b.sqlite")


def _codex_lines(sid: str, turns: int) -> bytes:
    import orjson

    ordinal = 0

    def line(ts: str, kind: str, payload: dict) -> bytes:
        nonlocal ordinal
        ordinal += 1
        return orjson.dumps({"timestamp": ts, "ordinal": ordinal, "type": kind, "payload": payload}) + b"\n"

    out = [
        line(
            "2026-11-01T10:00:00.000Z",
            "session_meta",
            {
                "id": sid,
                "timestamp": "2026-11-01T10:00:00.000Z",
                "cwd": "/work/app",
                "originator": "codex_exec",
                "cli_version": "0.171.0",
                "source": "exec",
            },
        )
    ]
    for i in range(turns):
        ts = f"2026-11-01T10:{i + 1:02d}:00.000Z"
        out.append(line(ts, "turn_context", {"turn_id": f"t{i}", "cwd": "/work/app", "model": "gpt-5"}))
        out.append(
            line(
                ts,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"prompt {i}"}],
                },
            )
        )
        out.append(line(ts, "event_msg", {"type": "user_message", "message": f"prompt {i}"}))
        out.append(
            line(
                ts,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": f"reply {i}"}],
                },
            )
        )
        out.append(line(ts, "event_msg", {"type": "agent_message", "message": f"reply {i}"}))
    return b"".join(out)


def test_ingesting_in_two_processes_gives_the_same_bank(tmp_path: Path) -> None:
    """Large scans ingest in two processes; the result must not depend on which one read what."""
    home = tmp_path / "home"
    for i in range(6):
        s = ClaudeSession(home, f"/work/app-{i % 2}")
        s.write(*s.conversation(40), b"not json\n", *s.conversation(5, start=40))
    day = home / ".codex" / "sessions" / "2026" / "11" / "01"
    day.mkdir(parents=True)
    sid = "019a0000-0000-7000-8000-000000000002"
    (day / f"rollout-2026-11-01T10-00-00-{sid}.jsonl").write_bytes(_codex_lines(sid, 5))
    inline, worker = tmp_path / "inline.sqlite", tmp_path / "worker.sqlite"
    a = scan(home, inline)
    b = scan(home, worker, parallel_bytes=0)  # always ingest in two processes
    assert Path(f"{worker}.lock").exists()  # where the two took turns to commit (SqliteBank.share_writes)
    assert a.events_added == b.events_added == 6 * 90 + 10
    assert bank_rows(inline) == bank_rows(worker)
    assert [(a.harnesses[n].problems, b.harnesses[n].problems) for n in ("claude-code", "codex")] == [(6, 6), (0, 0)]
    s.write(*s.conversation(2, start=100))  # and incremental reads through the worker
    assert scan(home, worker, parallel_bytes=0).events_added == 4


def test_a_read_that_finds_only_a_torn_line_does_not_force_a_full_reread(tmp_path: Path) -> None:
    """Found by the kill -9 service test: the cursor committed for "nothing complete yet" lost its
    fingerprints, so the next read took the file for rewritten and read it all again."""
    from harvester.capture.ingest import Ingestor
    from harvester.capture.sources import discover, existing_roots
    from harvester.parsers import HARNESSES

    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(20))
    harness = HARNESSES["claude-code"]
    [found] = discover(harness, existing_roots(harness, {}, home))
    line = s.assistant("finished later")
    with open_bank(bank_path) as bank, Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
        assert ingestor.ingest(harness, found).outcome == "new"
        s.write(line[:25])  # the agent is mid-write
        assert ingestor.ingest(harness, found).events_added == 0
        s.write(line[25:])
        before = ingestor.bytes_read
        result = ingestor.ingest(harness, found)
        assert (result.outcome, result.events_added) == ("read", 1)
        assert ingestor.bytes_read - before == len(line)  # only the new line was read


def test_sequence_numbers_stay_dense_after_a_reread(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    lines = s.conversation(3)
    s.write(*lines)
    scan(home, bank)
    tmp = s.path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(lines + s.conversation(2, start=3)))
    os.replace(tmp, s.path)  # replaced: read again from the start
    assert scan(home, bank).events_added == 4
    assert [row[2] for row in bank_rows(bank)] == list(range(1, 11))
