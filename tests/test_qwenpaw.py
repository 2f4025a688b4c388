"""QwenPaw: what the hand-written store must read as (fixtures/qwenpaw/hand/README.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers import qwenpaw
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "qwenpaw"
V2, CONSOLE, V1 = ("default:default_1790000000000", "default:default_1790000001000",
                   "note_keeper:user@example.com_wechat--dm--42")


def test_both_document_shapes_and_the_copies_not_read(tmp_path: Path) -> None:
    bank = tmp_path / "bank.sqlite"
    report = scan(tmp_path / "home", bank, (NAME,), env={"QWENPAW_WORKING_DIR": str(FIXTURES / "qwenpaw" / "hand")})
    assert report.harnesses[NAME].problems == 0
    assert {s["native_id"] for s in sessions_of(bank)} == {V2, CONSOLE, V1}
    events = events_of(bank, V2)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("system", "text"), ("assistant", "text"),
        ("user", "text"), ("assistant", "text")]
    assert events[2]["text"] == "execute_shell_command: grep -c failed ~/cron.log"
    assert events[2]["usage"] == {"in": 2100, "out": 140, "cache_read": 1024}
    assert events[3]["text"].startswith("2 failed") and events[3]["tool_call_id"] == "call_q1"
    assert events[5]["is_error"] and events[8]["text"] == "Here is the error screen\n[data]"
    assert session_of(bank, V2)["started_at"] == "2026-09-21T14:13:20.120Z"  # local time, the test's zone is UTC
    console = events_of(bank, CONSOLE)
    assert [e["kind"] for e in console] == ["compaction", "text", "text"]
    assert console[1]["text"] == "Move the digest to 7am."  # the channel copy, not the stale root file
    old = events_of(bank, V1)
    assert [(e["role"], e["kind"]) for e in old] == [
        ("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text")]
    assert old[2]["tool_input"] == {"file_path": "NOTES.md"} and old[3]["text"].startswith("- renew passport")
    every = " ".join(e["text"] for s in (V2, CONSOLE, V1) for e in events_of(bank, s))
    assert "STALE-ROOT-COPY" not in every and "WEIXIN-LEGACY" not in every


def test_the_working_dir(tmp_path: Path) -> None:
    assert qwenpaw.roots({}, tmp_path) == [tmp_path / ".qwenpaw", tmp_path / ".copaw"]
    assert qwenpaw.roots({"QWENPAW_WORKING_DIR": "/w"}, tmp_path) == [Path("/w")]


def test_unknown_roles_blocks_and_states_are_drift() -> None:
    ref = SourceRef(PurePath("/h/.qwenpaw/workspaces/a/sessions/s.json"), PurePath("/h/.qwenpaw"))
    docs = [{"agent": {"state": {"context": [{"role": "oracle", "content": []},
                                             {"role": "assistant", "content": [{"type": "hologram"}]}]}}},
            {"agent": {"scroll": {}}}]
    batch = qwenpaw.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(docs)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type", "unknown_type", "unknown_type"]
