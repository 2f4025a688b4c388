"""OpenHands CLI: what the fixtures must read as (fixtures/openhands/hand/README.md), and the real CLI's runs."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson
import pytest

from harvester.capture.sources import discover
from harvester.parsers import HARNESSES, openhands
from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

HAND = FIXTURES / "openhands" / "hand"
REAL = FIXTURES / "openhands" / "real"
NAME = openhands.NAME
A, B, C, S = (f"{c}1b2c3d4e5f60718293a4b5c6d7e8f90" for c in "abcd")
REPO = "/home/dev/src/demo-repo"


def _scan(tmp: Path, tree: Path) -> tuple[Path, int]:
    home, bank = tmp / "home", tmp / "bank.sqlite"
    home.mkdir(parents=True)
    report = scan(home, bank, (NAME,), env={"HOME": str(home), "OPENHANDS_CONVERSATIONS_DIR": str(tree)})
    return bank, report.harnesses[NAME].problems


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bank, problems = _scan(tmp_path_factory.mktemp("openhands"), HAND)
    assert problems == 0
    return bank


def _meta(session: dict) -> dict:
    return orjson.loads(session["meta"]) if isinstance(session["meta"], str) else session["meta"]


def test_roots_follow_the_clis_overrides() -> None:
    home = Path("/home/u")
    assert openhands.roots({}, home) == [home / ".openhands" / "conversations"]
    assert openhands.roots({"OPENHANDS_PERSISTENCE_DIR": "/srv/oh"}, home) == [
        Path("/srv/oh/conversations"), home / ".openhands" / "conversations"]
    assert openhands.roots({"OPENHANDS_CONVERSATIONS_DIR": "/srv/c"}, home)[0] == Path("/srv/c")


def test_conversations_and_subagents_are_sources_events_are_related() -> None:
    harness = HARNESSES[NAME]
    found = sorted(str(f.path.relative_to(HAND)) for f in discover(harness, [HAND]))
    assert found == [f"{A}/base_state.json", f"{A}/subagents/{S}/base_state.json", f"{B}/base_state.json",
                     f"{C}/base_state.json"]
    events = [p.name for p in openhands.SOURCES[0].related(HAND / A / "base_state.json")]  # type: ignore[misc]
    assert events[-2:] == [f"event-100000-0000000d-0000-4000-8000-{A[:12]}.json",
                           f"event-100001-0000000e-0000-4000-8000-{A[:12]}.json"]  # by index, not by name
    assert ".eventlog.lock" not in events


def test_every_event_kind_is_read(hand_bank: Path) -> None:
    s = session_of(hand_bank, A)
    assert (s["cwd"], s["title"], s["model"]) == (REPO, "Fix the failing test in tests/test_app.py",
                                                  "litellm_proxy/claude-sonnet-4-5")
    assert _meta(s)["last_turn"] == "failed" and _meta(s)["execution_status"] == "error"
    kinds = [(e["role"], e["kind"]) for e in events_of(hand_bank, A)]
    assert kinds == [("user", "text"), ("system", "text"), ("assistant", "thinking"), ("assistant", "text"),
                     ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "tool_call"),
                     ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
                     ("system", "meta"), ("system", "compaction"), ("assistant", "text"), ("system", "meta"),
                     ("user", "text"), ("system", "text")]
    by_uid = {e["uid"]: e for e in events_of(hand_bank, A)}
    e = lambda n: f"0000000{n:x}-0000-4000-8000-{A[:12]}"  # noqa: E731
    assert by_uid[e(2)]["tool_name"] == "terminal" and by_uid[e(2)]["text"] == "terminal: pytest -q"
    assert by_uid[e(5)]["is_error"] and by_uid[e(7)]["is_error"] and not by_uid[e(3)]["is_error"]
    assert by_uid[e(10)]["text"] == "The tests were run: one failed."
    assert by_uid[e(11)]["usage"] == {"in": 300, "out": 30, "cache_read": 1200}  # prompt_tokens hold the cached


def test_subagent_names_its_parent_and_a_fork_stands_alone(hand_bank: Path) -> None:
    sub, fork = session_of(hand_bank, S), session_of(hand_bank, B)
    assert (sub["parent_native_id"], sub["parent_kind"]) == (A, "subagent")
    assert fork["parent_native_id"] is None  # nothing on disk names a fork's parent
    assert (fork["title"], fork["title_source"]) == ("Try another fix", "custom")


def test_a_turn_killed_midway_is_open(hand_bank: Path) -> None:
    assert _meta(session_of(hand_bank, C))["last_turn"] == "open"


def test_unknown_kinds_and_parts_are_drift() -> None:
    state = orjson.dumps({"id": "x", "execution_status": "idle", "workspace": {"working_dir": "/w"}})
    odd = orjson.dumps({"id": "e1", "kind": "BrandNewEvent", "timestamp": "2026-08-01T10:00:00"})
    part = orjson.dumps({"id": "e2", "kind": "MessageEvent", "source": "user", "timestamp": "2026-08-01T10:00:01",
                         "llm_message": {"role": "user", "content": [{"type": "audio"}]}})
    ref = SourceRef(PurePath("/c/abc/base_state.json"), PurePath("/c"))
    batch = openhands.parse(ref, [Record(1, state), Record(2, odd), Record(3, part), Record(4, b"{bad")], {})
    kinds = sorted(p.kind for p in batch.problems)
    assert kinds == ["malformed", "unknown_type", "unknown_type"]
    assert [e.role for e in batch.events] == ["user"]


@pytest.mark.parametrize("scenario", sorted(p.name for p in REAL.glob("*") if p.is_dir()))
def test_real_runs_read_without_problems(scenario: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(REAL / scenario, tree)
    bank, problems = _scan(tmp_path, tree)
    assert problems == 0
    sessions = {p.name for p in tree.glob("*/base_state.json") for p in [p.parent]}
    for sid in sessions:
        events = events_of(bank, sid)
        assert events and events[0]["role"] == "user"
        assert any(e["role"] == "assistant" for e in events)


def test_the_early_sdks_event_files_without_an_id_in_their_name(tmp_path: Path) -> None:
    """agent-sdk before 1.0 (state.py: ``event-{idx:05d}.json``, base_state with ``agent_finished`` flags):
    fixtures/openhands/hand-early. Every event of it is read, in index order."""
    bank, problems = _scan(tmp_path, FIXTURES / "openhands" / "hand-early")
    assert problems == 0
    events = events_of(bank, "e1b2c3d4e5f60718293a4b5c6d7e8f90")
    assert [(e["role"], e["kind"]) for e in events] == [
        ("user", "text"), ("system", "text"), ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[0]["text"].startswith("Fix the fa") and events[6]["text"].startswith("Fixed: the")
    assert session_of(bank, "e1b2c3d4e5f60718293a4b5c6d7e8f90")["model"] == "litellm_proxy/claude-sonnet-4-20250514"


def test_usage_input_leaves_out_the_cache_writes_it_counts() -> None:
    """OpenHands keeps litellm's counts (TokenUsage in base_state.json's stats and each event's metrics): litellm's
    ``prompt_tokens`` adds Anthropic's cache writes as well as its reads to the input (its anthropic transformation),
    so a prompt written to the cache was counted as input and again as a cache write."""
    # A Claude response through litellm: 300 uncached, 1,200 read from the cache, 800 written to it.
    raw = {"model": "anthropic/claude-sonnet-4-5", "prompt_tokens": 2300, "completion_tokens": 30,
           "cache_read_tokens": 1200, "cache_write_tokens": 800, "reasoning_tokens": 0, "context_window": 200000,
           "per_turn_token": 2330, "response_id": "msg_01"}
    got = openhands._usage(raw)
    assert (got.input, got.cache_read, got.cache_write, got.output) == (300, 1200, 800, 30)
