"""Antigravity CLI: what the fixtures must read as (fixtures/antigravity/hand/README.md), and that its
files and Gemini CLI's never cross."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture.sources import discover, existing_roots
from harvester.parsers import antigravity, gemini_cli
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "antigravity" / "hand"
GEMINI_HAND = FIXTURES / "gemini_cli" / "hand"
NAME = antigravity.NAME
A = "7c2e9f14-3b8d-4a61-9e05-d4b7a3c2f180"  # every step type; cwd from history.jsonl
B = "9c036cf3-623e-4f36-9700-68577dfc9226"  # subagent A invoked
C = "f1e2d3c4-b5a6-4789-9abc-def012345678"  # calls on the result steps, cwd in ADDITIONAL_METADATA, cancelled
REPO = "/home/dev/src/demo-repo"


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[Harness]:
    harness = Harness(NAME, antigravity.roots, antigravity.SOURCES, antigravity.parse, "Antigravity CLI",
                      antigravity.PROCESSES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(parsers.HARNESSES, NAME, harness)
        mp.setitem(parsers.HARNESSES, gemini_cli.NAME, Harness(
            gemini_cli.NAME, gemini_cli.roots, gemini_cli.SOURCES, gemini_cli.parse, "Gemini CLI",
            gemini_cli.PROCESSES))
        yield harness


def _home(tmp: Path, tree: Path = HAND) -> Path:
    """A home whose ~/.gemini/antigravity-cli is ``tree`` (the fixtures are laid out like that folder)."""
    home = tmp / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "antigravity-cli").symlink_to(tree, target_is_directory=True)
    return home


def _scan(tmp: Path, tree: Path = HAND, names: tuple[str, ...] = (NAME,)) -> tuple[Path, int]:
    home, bank = _home(tmp, tree), tmp / "bank.sqlite"
    report = scan(home, bank, names, env={"HOME": str(home)})
    return bank, sum(report.harnesses[n].problems for n in names)


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bank, problems = _scan(tmp_path_factory.mktemp("agy"))
    assert problems == 0
    return bank




def test_only_transcripts_are_sources(hand_bank: Path, registered: Harness) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C}
    found = sorted(str(f.path.relative_to(HAND)) for f in discover(registered, [HAND]))
    assert found == [f"brain/{sid}/.system_generated/logs/transcript.jsonl" for sid in sorted((A, B, C))]


def test_every_step_type(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    assert shapes(events) == [
        ("system", "text"), ("user", "text"),  # agy's metadata blocks, then what the user typed
        ("system", "text"),  # EPHEMERAL_MESSAGE (CONVERSATION_HISTORY adds nothing)
        ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("assistant", "tool_call"),  # view_file, run_command
        ("tool", "tool_result"), ("tool", "tool_result"),  # VIEW_FILE, RUN_COMMAND (exit 1)
        ("assistant", "tool_call"), ("tool", "tool_result"),  # replace_file_content -> CODE_ACTION
        ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),  # invoke_subagent
        ("system", "text"),  # SYSTEM_MESSAGE
        ("assistant", "text"),
        ("system", "compaction"),  # CHECKPOINT
        ("user", "text"), ("assistant", "text"),
    ]
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "Fix the CSV parser: empty fields get dropped.", "Now add a changelog entry"]
    assert "<ADDITIONAL_METADATA>" in events[0]["text"] and events[0]["meta"] == {"injected": True}
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    # Steps carry no call id: each result answers the oldest call still open.
    assert [r["tool_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert [r["tool_name"] for r in results] == ["view_file", "run_command", "replace_file_content",
                                                 "invoke_subagent"]
    assert [r["is_error"] for r in results] == [False, True, False, False]  # "exited with code 1"
    # Each argument is JSON-encoded on disk: decoded once.
    assert calls[1]["tool_input"]["CommandLine"] == "pytest -q tests/test_csv.py"
    assert calls[3]["tool_input"]["Subagents"][0]["Role"] == "Test Runner"
    assert {e["model"] for e in events if e["role"] == "assistant"} == {"Gemini 3.1 Pro (High)"}
    session = session_of(hand_bank, A)
    assert (session["cwd"], session["bank_id"]) == (REPO, "coding-agent::demo-repo")  # history.jsonl
    assert (session["title"], session["title_source"]) == ("Fix the CSV parser: empty fields get dropped.",
                                                           "first-prompt")
    assert session["model"] == "Gemini 3.1 Pro (High)"
    assert (session["started_at"], session["updated_at"]) == ("2026-08-20T10:00:00Z", "2026-08-20T10:06:05Z")
    assert session["meta"]["last_turn"] == "complete"


def test_subagent_is_linked(hand_bank: Path) -> None:
    session = session_of(hand_bank, B)
    assert (session["parent_native_id"], session["parent_kind"], session["cwd"]) == (A, "subagent", REPO)
    assert shapes(events_of(hand_bank, B)) == [("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
                                               ("assistant", "text")]


def test_calls_on_result_steps_and_a_cancelled_turn(hand_bank: Path) -> None:
    events = events_of(hand_bank, C)
    assert shapes(events) == [
        ("system", "text"), ("user", "text"), ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"),  # run_command, named on the RUN_COMMAND step
        ("assistant", "tool_call"), ("tool", "tool_result"),  # edit_file (arguments as a JSON string)
        ("tool", "tool_result"),  # BROWSER_PREVIEW: no call names it
        ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),  # cancelled
    ]
    assert [e["tool_call_id"] for e in events if e["kind"] == "tool_result"][:2] == ["call_run_0001",
                                                                                     "call_edit_0002"]
    assert events[5]["tool_input"] == {"path": "out.txt", "content": "DONE"}
    assert events[-1]["is_error"] and events[-1]["meta"]["status"] == "CANCELED"
    session = session_of(hand_bank, C)
    assert session["cwd"] == "/home/dev/scratch/agy-probe"  # no history row: the metadata block names it
    assert session["meta"]["last_turn"] == "aborted"


def test_unknown_step_types_are_drift(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(HAND, tree)
    transcript = tree / "brain" / A / ".system_generated" / "logs" / "transcript.jsonl"
    with transcript.open("ab") as out:
        out.write(b'{"step_index":40,"source":"MODEL","type":"TELEPORT","status":"DONE",'
                  b'"created_at":"2026-08-20T10:07:00Z","content":"arrived"}\n')
        out.write(b'{"step_index":41,"source":"ORACLE","type":"PROPHECY","created_at":"2026-08-20T10:07:01Z"}\n')
    bank, problems = _scan(tmp_path, tree)
    assert problems == 2
    with open_bank(bank) as b:
        drift = b.harness_stats()[NAME]["drift"]
    assert set(drift) == {"step source='MODEL' type='TELEPORT'", "step source='ORACLE' type='PROPHECY'"}
    assert events_of(bank, A)[-1]["text"] == "arrived"  # an unknown MODEL step is still kept, as a tool result


def test_roots_follow_the_home(tmp_path: Path, registered: Harness) -> None:
    assert antigravity.roots({}, tmp_path) == [tmp_path / ".gemini" / "antigravity-cli"]
    # Gemini CLI's override is Gemini CLI's: agy is not known to read it.
    assert antigravity.roots({"GEMINI_CLI_HOME": "/srv/g"}, tmp_path) == [tmp_path / ".gemini" / "antigravity-cli"]
    home = _home(tmp_path)
    assert existing_roots(registered, {"HOME": str(home)}, home) == [home / ".gemini" / "antigravity-cli"]


def test_gemini_cli_and_antigravity_never_read_each_other(tmp_path: Path, registered: Harness) -> None:
    """One home holding both: ~/.gemini is Gemini CLI's tree (with its tmp/ and an antigravity/ folder),
    ~/.gemini/antigravity-cli is agy's."""
    home = tmp_path / "home"
    gemini = home / ".gemini"
    shutil.copytree(GEMINI_HAND, gemini)
    shutil.copytree(HAND, gemini / "antigravity-cli")
    gemini_harness = parsers.HARNESSES[gemini_cli.NAME]
    gemini_roots = existing_roots(gemini_harness, {"HOME": str(home)}, home)
    agy_roots = existing_roots(registered, {"HOME": str(home)}, home)
    gemini_found = [str(f.path.relative_to(gemini)) for f in discover(gemini_harness, gemini_roots)]
    agy_found = [str(f.path.relative_to(gemini)) for f in discover(registered, agy_roots)]
    assert gemini_found and not any(p.startswith(("antigravity", "antigravity-cli")) for p in gemini_found)
    assert agy_found and all(p.startswith("antigravity-cli/brain/") for p in agy_found)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (gemini_cli.NAME, NAME), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0 and report.harnesses[gemini_cli.NAME].problems == 0
    by_harness: dict[str, set[str]] = {}
    for s in sessions_of(bank):
        by_harness.setdefault(s["harness"], set()).add(s["native_id"])
    assert by_harness[NAME] == {A, B, C}
    assert not by_harness[gemini_cli.NAME] & {A, B, C, "6c1f0e2a", "6c1f0e2a-7b3d-4e59-a8c4-2d9f1b7e3a60"}


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/a/brain/c1/.system_generated/logs/transcript.jsonl"), PurePath("/a"))
    raw = b'{"step_index":0,"type":[1]}'
    batch = antigravity.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "step of unexpected shape: an array where text or a number was expected")]
