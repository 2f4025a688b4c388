"""Factory Droid: what the fixtures must read as (fixtures/droid/hand/README.md), and the real CLI's runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.capture.sources import discover
from harvester.parsers import droid
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

HAND = FIXTURES / "droid" / "hand"
REAL = FIXTURES / "droid" / "real"
NAME = droid.NAME
A, B, C, D, E = (f"5b1e7c2a-4d3f-4e8a-9b6c-1a2b3c4d5e0{n}" for n in range(1, 6))
REPO = "/home/dev/src/demo-repo"


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[Harness]:
    harness = Harness(NAME, droid.roots, droid.SOURCES, droid.parse, "Factory Droid", droid.PROCESSES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(parsers.HARNESSES, NAME, harness)
        yield harness


def _scan(tmp: Path, tree: Path) -> tuple[Path, int]:
    home, bank = tmp / "home", tmp / "bank.sqlite"
    (tmp / "override").mkdir(parents=True)
    (tmp / "override" / ".factory").symlink_to(tree, target_is_directory=True)
    home.mkdir()
    report = scan(home, bank, (NAME,), env={"HOME": str(home), "FACTORY_HOME_OVERRIDE": str(tmp / "override")})
    return bank, report.harnesses[NAME].problems


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bank, problems = _scan(tmp_path_factory.mktemp("droid"), HAND)
    assert problems == 0
    return bank


def test_roots_follow_the_home_override_and_the_build() -> None:
    home = Path("/home/u")
    assert droid.roots_for("linux", {}, home) == [home / ".factory"]
    assert droid.roots_for("linux", {"FACTORY_HOME_OVERRIDE": "/srv/h"}, home) == [Path("/srv/h/.factory")]
    assert droid.roots_for("linux", {"FACTORY_ENV": "development"}, home) == [home / ".factory-dev"]
    assert droid.roots_for("win32", {"USERPROFILE": "C:/Users/u"}, home) == [Path("C:/Users/u/.factory")]


def test_every_layout_is_a_source_and_settings_are_not(registered: Harness) -> None:
    found = sorted(str(f.path.relative_to(HAND)) for f in discover(registered, [HAND]))
    assert found == [f"sessions/-home-dev-src-demo-repo/{A}.jsonl", f"sessions/-home-dev-src-demo-repo/{B}.jsonl",
                     f"sessions/-home-dev-src-demo-repo/{C}.jsonl", f"sessions/{E}.jsonl", f"sessions/btw/{D}.jsonl"]


def test_main_session_reads_every_record_kind(hand_bank: Path) -> None:
    s = session_of(hand_bank, A)
    assert (s["cwd"], s["title"], s["title_source"]) == (REPO, "Fix the flaky login test", "custom")
    assert s["model"] == "claude-sonnet-4-5-20250929"
    meta = orjson.loads(s["meta"]) if isinstance(s["meta"], str) else s["meta"]
    assert meta["token_totals"] == {"input": 6100, "output": 480, "cache_read": 3900, "reasoning": 12}
    assert meta["last_turn"] == "failed"  # the last agent_turn_outcome said error
    kinds = [(e["role"], e["kind"]) for e in events_of(hand_bank, A)]
    assert kinds[:3] == [("system", "text"), ("user", "text"), ("user", "text")]  # context, prompt, image
    assert ("system", "compaction") in kinds and ("assistant", "thinking") in kinds
    by_uid = {e["uid"]: e for e in events_of(hand_bank, A)}
    assert by_uid["result:tu-exec"]["is_error"] and by_uid["result:tu-exec"]["tool_name"] == "Execute"
    assert by_uid["m7"]["role"] == "system" and by_uid["m8"]["role"] == "system"  # a notice, a hook
    assert by_uid["outcome:m9"]["text"] == "turn ended: error"


def test_subagent_fork_and_btw_name_their_parent(hand_bank: Path) -> None:
    sub, fork, btw = session_of(hand_bank, B), session_of(hand_bank, C), session_of(hand_bank, D)
    assert (sub["parent_native_id"], sub["parent_kind"]) == (A, "subagent")
    assert (fork["parent_native_id"], fork["parent_kind"]) == (A, "fork")
    assert (btw["parent_native_id"], btw["parent_kind"]) == (A, "fork")
    first = events_of(hand_bank, B)[0]
    assert (first["role"], first["text"]) == ("system", "Find tests that sleep")  # the caller's task
    copied = [e["uid"] for e in events_of(hand_bank, C) if (e["meta"] or {}).get("copied_from_parent")]
    assert copied[0] == "m1" and copied[-1] == "call:tu-exec"  # up to forkedAtMessageId, m2


def test_oldest_flat_layout(hand_bank: Path) -> None:
    s = session_of(hand_bank, E)
    assert s["cwd"] == "/home/dev/src/old-tool"
    assert [e["text"] for e in events_of(hand_bank, E)][-1] == "The build passed."  # content as a string


def _parse(lines: list[dict]) -> tuple[list, list]:
    ref = SourceRef(PurePath("/r/sessions/x/s1.jsonl"), PurePath("/r"))
    records = [Record(n, orjson.dumps(line)) for n, line in enumerate(lines, 1)]
    batch = droid.parse(ref, records, {})
    return batch.events, batch.problems


def test_unknown_record_block_and_summary_key_are_drift() -> None:
    events, problems = _parse([
        {"type": "session_start", "id": "s1", "title": "t", "cwd": "/w", "brandNew": 1},
        {"type": "message", "id": "m1", "message": {"role": "user", "content": [{"type": "video", "url": "x"}]}},
        {"type": "rewind_marker", "id": "r1"},
    ])
    assert [(p.kind, p.detail) for p in problems] == [
        ("unknown_type", "session_start key='brandNew'"), ("unknown_type", "content block type='video'"),
        ("unknown_type", "type='rewind_marker'")]
    assert events == []


def test_a_message_without_its_fields_is_malformed_and_the_rest_goes_on() -> None:
    events, problems = _parse([
        {"type": "message", "id": "m1"},
        {"type": "message", "id": "m2", "message": {"role": "user", "content": "hello"}},
    ])
    assert [p.kind for p in problems] == ["malformed"]
    assert [e.text for e in events] == ["hello"]


@pytest.mark.parametrize("scenario", ["two_turns", "thinking", "tool_error"])
def test_real_runs_read_without_problems(tmp_path: Path, scenario: str) -> None:
    bank, problems = _scan(tmp_path, REAL / scenario)
    assert problems == 0
    events = events_of(bank)
    prompt = next(e["text"] for e in events if e["role"] == "user")
    assert prompt.startswith({"two_turns": "say hi", "thinking": "THINK", "tool_error": "READ_FILE"}[scenario])
    assert all(e["role"] == "system" for e in events[:7])  # Droid's system reminders come first


def test_message_lines_without_ids_are_read(tmp_path: Path) -> None:
    """fixtures/droid/hand-idless: cass's Factory fixtures' shape (no ``id``, string content). Before, every such
    line was malformed and the session read empty."""
    bank, problems = _scan(tmp_path, FIXTURES / "droid" / "hand-idless")
    assert problems == 0
    events = events_of(bank, "a7d3e1f0-0000-4000-8000-0000000001d1")
    assert [(e["role"], e["kind"], e["text"][:12]) for e in events] == [
        ("user", "text", "The login pa"), ("assistant", "text", "The redirect"), ("user", "text", "Thanks."),
        ("user", "text", "Thanks.")]
    assert session_of(bank, "a7d3e1f0-0000-4000-8000-0000000001d1")["cwd"] == "/Users/alice/project"
