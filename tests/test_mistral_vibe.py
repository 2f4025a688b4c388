"""Mistral Vibe: the hand-written store (fixtures/mistral_vibe/hand) and the real capture, read as they must be."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.parsers import mistral_vibe
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "mistral_vibe" / "hand"
REAL = FIXTURES / "mistral_vibe" / "real" / "two_turns"
A, F = (f"0c0ffee0-0000-4000-8000-00000000000{x}" for x in "af")
S = "0c0ffee0-0000-4000-8000-00000000005b"
LEGACY = "5e551011-aaaa-4bbb-8ccc-000000000001"


def read(tmp: Path, vibe_home: Path) -> tuple[Path, int]:
    bank = tmp / "bank.sqlite"
    report = scan(tmp, bank, (mistral_vibe.NAME,), env={"HOME": str(tmp), "VIBE_HOME": str(vibe_home)})
    return bank, report.harnesses[mistral_vibe.NAME].problems


@pytest.fixture
def hand(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HAND, tmp_path / "vibe"))


def shape(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:30]) for e in events_of(bank, sid)]


def test_roots() -> None:
    assert mistral_vibe.roots({}, Path("/home/u")) == [Path("/home/u/.vibe/logs/session")]
    assert mistral_vibe.roots({"VIBE_HOME": "/srv/v"}, Path("/home/u")) == [Path("/srv/v/logs/session")]


def test_sessions_lineage_titles_and_turn_state(hand: Path, tmp_path: Path) -> None:
    bank, problems = read(tmp_path, hand)
    assert problems == 0
    got = {s["native_id"]: (s["title"], s["title_source"], s["parent_native_id"], s["parent_kind"])
           for s in sessions_of(bank)}
    assert got == {
        A: ("Fix the date test", "ai", None, None),
        F: ("Try another fix", "custom", A, "fork"),  # history copied as imported- entries
        S: ("find the date helpers", "first-prompt", A, "subagent"),
        LEGACY: ("list the python files", "first-prompt", None, None),
    }
    assert session_of(bank, A)["meta"]["last_turn"] == "open"  # the journal's second turn never completed
    assert session_of(bank, A)["cwd"] == "/home/dev/src/demo-repo"


def test_generation_then_journal(hand: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, hand)
    assert shape(bank, A) == [
        ("user", "text", "fix the failing date test"), ("assistant", "thinking", "Run the tests first."),
        ("assistant", "tool_call", "bash.run: pytest -q"), ("tool", "tool_result", "1 failed\nexit code 1"),
        ("assistant", "text", "The date test fails: it assume"), ("system", "compaction", "Context compacted"),
        ("system", "meta", "Model changed to devstral-smal"), ("system", "meta", "Hook agents_md failed"),
        # From the journal after the snapshot: the prompt, a tool still running (no result), no streaming text.
        ("user", "text", "now fix it"), ("assistant", "tool_call", "file_system.read_file: tests/t"),
    ]
    assert [e["is_error"] for e in events_of(bank, A) if e["kind"] == "tool_result"] == [True]
    # replace_entry keeps one event with the final text; the torn last journal line is no problem.
    assert shape(bank, S) == [("user", "text", "find the date helpers"),
                              ("assistant", "text", "They are in src/utils/dates.py")]


def test_legacy_messages(hand: Path, tmp_path: Path) -> None:
    bank, _ = read(tmp_path, hand)
    assert shape(bank, LEGACY) == [
        ("user", "text", "list the python files"), ("assistant", "thinking", "Use grep."),
        ("assistant", "tool_call", "grep: *.py"), ("tool", "tool_result", "main.py\nutil.py"),
        ("assistant", "text", "Two files: main.py and util.py"), ("system", "compaction", "Summary of the conversation so"),
        ("user", "text", "(AGENTS.md reminder)"),
    ]
    assert session_of(bank, LEGACY)["cwd"] == "/home/dev/src/old-repo"


def test_real_two_turns(tmp_path: Path) -> None:
    bank, problems = read(tmp_path, REAL)
    assert problems == 0
    (session,) = sessions_of(bank)
    assert session["meta"]["last_turn"] == "complete" and session["model"] == "fake-model"
    assert [(e["role"], e["kind"]) for e in events_of(bank, session["native_id"])] == [
        ("user", "text"), ("assistant", "text"), ("user", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text")]
    assert "pelican" in events_of(bank, session["native_id"])[4]["text"]


def _ref(path: str) -> SourceRef:
    return SourceRef(PurePath(path), PurePath("/r"), "unified")


def test_unknown_types_are_drift_and_a_missing_chunk_reads_nothing() -> None:
    meta = Record(1, orjson.dumps({"session_id": "x", "start_time": "2026-01-01T00:00:00+00:00"}))
    journal = Record(2, b'{"recovery_journal_record_version":1,"sequence":1,"type":"brand_new","payload":{}}\n'
                        b'{"recovery_journal_record_version":1,"sequence":2,"type":"projection_delta","payload":'
                        b'{"watermark":1,"delta":[{"op":"fold_entries"},{"op":"append_entry","entry":'
                        b'{"type":"hologram","id":"h1"}}]}}\n')
    batch = mistral_vibe.parse(_ref("/r/unified/x/meta.json"), [meta, journal], {})
    assert sorted(p.detail for p in batch.problems if p.kind == "unknown_type") == [
        "history entry type='hologram'", "journal record type='brand_new'", "projection op='fold_entries'"]
    manifest = Record(2, orjson.dumps({"manifest_version": 1, "generation": "0000000000000003", "snapshot_sequence": 3,
                                       "projection_state": {"chunks": ["ab" * 32]}}))
    batch = mistral_vibe.parse(_ref("/r/unified/x/meta.json"), [meta, manifest], {})
    assert batch.events == [] and [p.kind for p in batch.problems] == ["unreadable"]



def test_a_meta_json_that_does_not_parse_is_malformed_not_waited_for() -> None:
    """Vibe replaces meta.json atomically (vibe/core/session/metadata.py), so one that does not parse is broken,
    not half written; a journal segment's torn last line is the one that waits."""
    torn_meta = Record(1, b'{"session_id": "x", "start_ti')
    torn_journal = Record(2, b'{"recovery_journal_record_version":1,"sequ')
    batch = mistral_vibe.parse(_ref("/r/unified/x/meta.json"), [torn_meta, torn_journal], {})
    assert [(p.kind, p.detail) for p in batch.problems] == [("malformed", "meta.json: invalid JSON")]
