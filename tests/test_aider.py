"""Aider: what the fixtures must read as (fixtures/aider/hand/README.md, real/CAPTURE.md)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor, ScanReport
from harvester.config import DEFAULT_BANK_ID_TEMPLATE
from harvester.model import Batch
from harvester.parsers import aider
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, bank_rows, events_of, make_repo, sessions_of

HAND = FIXTURES / "aider" / "hand"
REAL = FIXTURES / "aider" / "real"
HISTORY = ".aider.chat.history.md"
REAL_SCENARIOS = sorted(p.parent.parent.name for p in REAL.glob(f"*/repo/{HISTORY}"))
# The registry line the harness gets (harvester/parsers/__init__.py is the lead's to edit).
HARNESS = Harness(aider.NAME, aider.roots, aider.SOURCES, aider.parse, "Aider", aider.PROCESSES,
                  roots_in_repositories=True)


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The harness as the registry will hold it, and a fixed zone for Aider's local-time headers."""
    monkeypatch.setitem(parsers.HARNESSES, aider.NAME, HARNESS)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _scan(home: Path, bank_path: Path, roots: list[Path]) -> ScanReport:
    """A scan of Aider alone; ``roots`` stand for the configured roots ([roots] aider = [...])."""
    home.mkdir(parents=True, exist_ok=True)
    bank = open_bank(bank_path)
    try:
        with Ingestor(bank, DEFAULT_BANK_ID_TEMPLATE) as ingestor:
            return ingestor.scan([parsers.HARNESSES[aider.NAME]], {"HOME": str(home)}, home,
                                 extra_roots={aider.NAME: roots})
    finally:
        bank.close()


def _sessions(bank: Path) -> dict[str, dict[str, Any]]:
    return {s["native_id"]: s for s in sessions_of(bank)}


def _events(bank: Path, sid: str) -> list[tuple[str, str, str]]:
    return [(e["role"], e["kind"], e["text"][:40]) for e in events_of(bank, sid)]


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("aider")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(parsers.HARNESSES, aider.NAME, HARNESS)
        mp.setenv("TZ", "UTC")
        time.tzset()
        repos = [HAND / name for name in ("webapp", "legacy-cli", "tools")]
        report = _scan(tmp / "home", tmp / "bank.sqlite", repos)
    time.tzset()
    assert report.harnesses[aider.NAME].problems == 0
    return tmp / "bank.sqlite"


WEBAPP_A, WEBAPP_B = "webapp@2026-08-01T10:00:00", "webapp@2026-08-01T14:30:05"
WEBAPP_C = "webapp@2026-08-02T09:15:00#2"  # the second header written in that second
LEGACY_20, LEGACY_50 = "legacy-cli@2024-01-10T16:20:11", "legacy-cli@2024-08-15T09:02:47"
TOOLS_A, TOOLS_B = "tools@2026-09-10T08:00:00", "tools@2026-09-10T08:20:40"


def test_one_session_per_block(hand_bank: Path) -> None:
    sessions = _sessions(hand_bank)
    # The header written twice in one second (Aider re-made its output) has no lines: no session.
    assert set(sessions) == {WEBAPP_A, WEBAPP_B, WEBAPP_C, LEGACY_20, LEGACY_50, TOOLS_A, TOOLS_B}
    facts = {sid: (Path(s["cwd"]).name, s["started_at"], s["model"], s["agent_version"], s["state"],
                   s["meta"]["last_turn"]) for sid, s in sessions.items()}
    sonnet = "anthropic/claude-sonnet-4-20250514"
    assert facts == {
        WEBAPP_A: ("webapp", "2026-08-01T10:00:00Z", sonnet, "0.86.2", "ended", "complete"),
        WEBAPP_B: ("webapp", "2026-08-01T14:30:05Z", sonnet, "0.86.2", "ended", "complete"),
        WEBAPP_C: ("webapp", "2026-08-02T09:15:00Z", sonnet, "0.86.2", "unknown", "open"),
        LEGACY_20: ("legacy-cli", "2024-01-10T16:20:11Z", "gpt-4-1106-preview", "0.20.0", "ended",
                    "complete"),
        LEGACY_50: ("legacy-cli", "2024-08-15T09:02:47Z", "claude-3-5-sonnet-20240620", "0.50.1", "unknown",
                    "complete"),
        # The run was killed while retrying the model: the next run's header ends it mid-turn.
        TOOLS_A: ("tools", "2026-09-10T08:00:00Z", "openai/gpt-4.1", "0.86.2", "abandoned", "open"),
        TOOLS_B: ("tools", "2026-09-10T08:20:40Z", "openai/gpt-4.1-mini", "0.86.2", "unknown", "complete"),
    }
    assert {sid: s["title"] for sid, s in sessions.items()} == {
        WEBAPP_A: "add a /health route", WEBAPP_B: "add a version field to the /health response",
        WEBAPP_C: "also add a /version route", LEGACY_20: "make divide() raise ValueError when b is 0",
        LEGACY_50: "what does calc.py do?",
        TOOLS_A: "compare https://a.example/spec and https://b.example/spec",
        TOOLS_B: "add a CHANGES.md entry for the timeout field",  # the prompt of "/code <prompt>"
    }
    assert sessions[WEBAPP_B]["meta"]["restored_history"] is True
    assert sessions[LEGACY_50]["meta"]["weak_model"] == "claude-3-haiku-20240307"
    assert sessions[WEBAPP_A]["meta"]["cost_usd"] == 0.02


def test_interactive_session_in_order(hand_bank: Path) -> None:
    assert _events(hand_bank, WEBAPP_A) == [
        ("system", "meta", "/home/dev/.local/bin/aider --model sonne"),
        ("user", "text", "/add app.py"),
        ("tool", "tool_result", "Added app.py to the chat"),
        ("user", "text", 'add a /health route\nthat returns {"ok": '),
        ("assistant", "text", "I'll add the route to `app.py` and a tes"),
        ("system", "meta", "Tokens: 4.2k sent, 2.1k cache write, 1.0"),
        ("tool", "tool_result", "Applied edit to tests/test_app.py\nApplie"),
        ("system", "meta", "You can use /undo to undo and discard ea"),
        ("user", "text", "/run pytest -q"),
        ("tool", "tool_result", "Add 0.1k tokens of command output to the"),
        ("user", "text", "/ask does the health route need auth?"),
        ("system", "meta", "does the health route need auth?"),  # Aider logs the /ask prompt again
        ("assistant", "text", "No. Health checks are usually called by "),
        ("system", "meta", "Tokens: 5.0k sent, 4.1k cache hit, 41 re"),
        ("user", "text", "/git log -1"),
        ("tool", "tool_result", "commit 1a2b3c4d5e6f70819a2b3c4d5e6f70819"),
        ("tool", "tool_result", "    feat: Add /health route with test"),  # git's output after a blank line
        ("user", "text", "refactor the routes into a blueprint"),
        ("system", "meta", "^C again to exit"),
        ("assistant", "text", "Sure. I'll move the routes into `routes."),
        ("user", "text", "/exit"),
    ]
    events = events_of(hand_bank, WEBAPP_A)
    assert events[3]["text"].splitlines() == [
        "add a /health route", 'that returns {"ok": true}', "", "and a test for it in tests/test_app.py"]
    reply = events[4]
    assert "#### Changes" in reply["text"] and "> Note: the test uses" in reply["text"]  # model's Markdown
    assert reply["text"].endswith(">>>>>>> REPLACE\n```") and reply["meta"] == {"edit_blocks": 2}
    assert reply["usage"] == {"in": 2100, "out": 312, "cache_read": 1000, "cache_write": 2100}
    assert reply["model"] == "anthropic/claude-sonnet-4-20250514"
    assert events[5]["text"].endswith("\nCost: $0.02 message, $0.02 session.")
    tools = [e["tool_name"] for e in events if e["kind"] == "tool_result"]
    assert tools == ["/add", "edit", "/run", "/git", "/git"]
    assert [(e["meta"] or {}).get("command") for e in events if e["role"] == "user"] == [
        "/add", None, "/run", "/ask", "/git", None, "/exit"]
    assert events[11]["meta"] == {"aider": "echo", "command": "/ask"}
    assert events[19]["meta"] == {"interrupted": True, "edit_blocks": 1}
    assert [e["uid"] for e in events[:3]] == ["L+2", "L+9", "L+10"]  # line offsets from the header


def test_restored_session_with_thinking_and_failed_edit(hand_bank: Path) -> None:
    assert _events(hand_bank, WEBAPP_B) == [
        ("system", "meta", "/home/dev/.local/bin/aider --model sonne"),
        ("user", "text", "add a version field to the /health respo"),
        ("assistant", "thinking", "The route returns jsonify(ok=True). app."),
        ("assistant", "text", "app.py\n```python\n<<<<<<< SEARCH\n  return"),
        ("system", "meta", "Tokens: 6.1k sent, 5.0k cache hit, 120 r"),
        ("system", "meta", "The LLM did not conform to the edit form"),
        ("system", "meta", "## SearchReplaceNoExactMatch: This SEARC"),  # the rest of Aider's error message
        ("assistant", "text", "app.py\n```python\n<<<<<<< SEARCH\n    retu"),  # the retry: no #### line
        ("system", "meta", "Tokens: 6.9k sent, 5.0k cache hit, 58 re"),
        ("tool", "tool_result", "Applied edit to app.py\nCommit 5d6e7f8 fe"),
        ("system", "meta", "You can use /undo to undo and discard ea"),
        ("system", "meta", "<blank>"),  # Enter on an empty prompt
        ("user", "text", "/quit"),
    ]
    error = events_of(hand_bank, WEBAPP_B)[6]
    assert error["text"].endswith("indentation, docstrings, etc") and error["meta"]["continued"] is True
    assert _events(hand_bank, WEBAPP_C) == [
        ("system", "meta", "Terminal does not support pretty output "),
        ("user", "text", "also add a /version route"),
    ]


def test_older_versions(hand_bank: Path) -> None:
    assert _events(hand_bank, LEGACY_20) == [
        ("system", "meta", "Aider v0.20.0\n/home/dev/.venv/bin/aider "),
        ("user", "text", "make divide() raise ValueError when b is"),
        ("assistant", "text", "```diff\n--- calc.py\n+++ calc.py\n@@ ... @"),
        ("system", "meta", "Malformed response #1, retrying...\nUnifi"),
        ("system", "meta", "calc.py does not contain lines that matc"),  # unquoted error lines (< 0.36)
        ("assistant", "text", "```diff\n--- calc.py\n+++ calc.py\n@@ ... @"),
        ("tool", "tool_result", "Applied edit to calc.py\nCommit 3f2a1b9 a"),
        ("system", "meta", "^C again to exit\n^C KeyboardInterrupt"),
    ]
    assert _events(hand_bank, LEGACY_50) == [
        ("system", "meta", "/home/dev/.venv/bin/aider --sonnet\nAider"),
        ("user", "text", "what does calc.py do?"),
        ("assistant", "text", "`calc.py` defines four arithmetic helper"),
        ("system", "meta", "Tokens: 1,234 sent, 45 received. Cost: $"),
        ("user", "text", "!git status"),
        ("tool", "tool_result", "On branch main\nChanges not staged for co"),  # /run output was logged then
        ("tool", "tool_result", 'no changes added to commit (use "git add'),
        ("tool", "tool_result", "Add the output to the chat?\n(y/n/instruc"),
        ("user", "text", "/exit"),
    ]
    assert events_of(hand_bank, LEGACY_50)[2]["usage"] == {"in": 1234, "out": 45}


def test_confirmations_shell_commands_and_watch_files(hand_bank: Path) -> None:
    assert _events(hand_bank, TOOLS_A) == [
        ("system", "meta", "/home/dev/.local/bin/aider --model opena"),
        ("user", "text", "compare https://a.example/spec and https"),
        ("system", "meta", "https://a.example/spec\nAdd URL to the ch"),
        ("system", "meta", "Add URL to the chat? (Y)es/(N)o/(A)ll/(S"),  # answered by "all": not typed
        ("system", "meta", "Add URL to the chat? (Y)es/(N)o/(A)ll/(S"),
        ("assistant", "text", "Spec B adds a `timeout` field to every r"),
        ("system", "meta", "Tokens: 9.8k sent, 210 received. Cost: $"),
        ("system", "meta", "curl -s https://a.example/spec > a.md\ncu"),
        ("assistant", "text", "client.py\n```python\n<<<<<<< SEARCH\n    #"),  # an "AI!" comment's request
        ("system", "meta", "Tokens: 2.7k sent, 48 received. Cost: $0"),
        ("tool", "tool_result", "Applied edit to client.py\nCommit 0f1e2d3"),
        ("user", "text", "summarize the spec differences in CHANGE"),
        ("system", "meta", "litellm.InternalServerError: OpenAIExcep"),
    ]
    assert events_of(hand_bank, TOOLS_A)[3]["meta"] == {"aider": "auto-answer"}
    assert _events(hand_bank, TOOLS_B)[1:4] == [
        ("user", "text", "/model openai/gpt-4.1-mini"),
        ("tool", "tool_result", "Aider v0.86.2\nModel: openai/gpt-4.1-mini"),
        ("user", "text", "/code add a CHANGES.md entry for the tim"),
    ]


@pytest.mark.parametrize("scenario", REAL_SCENARIOS)
def test_real_capture_reads_cleanly(tmp_path: Path, scenario: str) -> None:
    repo = REAL / scenario / "repo"
    report = _scan(tmp_path / "home", tmp_path / "bank.sqlite", [repo])
    assert report.harnesses[aider.NAME].problems == 0
    sessions = sessions_of(tmp_path / "bank.sqlite")
    assert sessions and all(
        s["agent_version"] == "0.86.2" and s["model"] == "openai/fake-model" and s["cwd"] == str(repo)
        and s["native_id"].startswith("repo@2026-11-29T") and s["meta"]["last_turn"] == "complete"
        for s in sessions)
    for s in sessions:  # the prompt given with --message is the title and the first user event
        events = events_of(tmp_path / "bank.sqlite", s["native_id"])
        users = [e["text"] for e in events if e["role"] == "user"]
        assert users[:1] == [s["title"]]


def test_real_two_turns_in_order(tmp_path: Path) -> None:
    if "two_turns" not in REAL_SCENARIOS:
        pytest.skip("no real two_turns capture")
    _scan(tmp_path / "home", tmp_path / "bank.sqlite", [REAL / "two_turns" / "repo"])
    first, second = sorted(_sessions(tmp_path / "bank.sqlite"))
    startup = events_of(tmp_path / "bank.sqlite", first)[0]["text"].splitlines()
    assert startup[0].endswith("--message say hi") and startup[1:3] == [
        "Aider v0.86.2", "Model: openai/fake-model with whole edit format"]
    assert _events(tmp_path / "bank.sqlite", first)[1:] == [
        ("user", "text", "say hi"),
        ("assistant", "text", "Hi! I am the fake model. Nothing else to"),
        ("system", "meta", "Tokens: 766 sent, 13 received."),
    ]
    assert [(r, k) for r, k, _ in _events(tmp_path / "bank.sqlite", second)] == [
        ("system", "meta"), ("user", "text"), ("assistant", "text"), ("system", "meta"),
        ("system", "meta"),  # "notes.txt" / "Add file to the chat? ... y"
        ("assistant", "text"),  # the answer to the reflected message, which the file does not hold
        ("system", "meta"),
    ]
    assert _sessions(tmp_path / "bank.sqlite")[second]["meta"]["restored_history"] is True


def test_real_thinking_is_split(tmp_path: Path) -> None:
    if "thinking" not in REAL_SCENARIOS:
        pytest.skip("no real thinking capture")
    _scan(tmp_path / "home", tmp_path / "bank.sqlite", [REAL / "thinking" / "repo"])
    (sid,) = _sessions(tmp_path / "bank.sqlite")
    assert [(r, k) for r, k, _ in _events(tmp_path / "bank.sqlite", sid)] == [
        ("system", "meta"), ("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
        ("system", "meta")]


def test_append_adds_a_session_and_a_torn_line_waits(tmp_path: Path) -> None:
    repo = tmp_path / "webapp"
    shutil.copytree(HAND / "webapp", repo)
    bank = tmp_path / "bank.sqlite"
    _scan(tmp_path / "home", bank, [repo])
    before = bank_rows(bank)
    with open(repo / HISTORY, "a") as f:  # a new run, still writing its first multi-line prompt
        f.write("\n# aider chat started at 2026-08-03 08:00:00\n\n> aider  \n"
                "\n#### first line  \n#### second li")
    report = _scan(tmp_path / "home", bank, [repo])
    assert report.harnesses[aider.NAME].problems == 0
    new = "webapp@2026-08-03T08:00:00"
    assert _events(bank, new) == [("system", "meta", "aider"), ("user", "text", "first line")]
    with open(repo / HISTORY, "a") as f:
        f.write("ne  \n\nDone.\n\n> Tokens: 1.0k sent, 2 received.  \n")
    _scan(tmp_path / "home", bank, [repo])
    assert _events(bank, new) == [  # the prompt grew in place: same event, whole text
        ("system", "meta", "aider"), ("user", "text", "first line\nsecond line"),
        ("assistant", "text", "Done."), ("system", "meta", "Tokens: 1.0k sent, 2 received.")]
    after = bank_rows(bank)
    assert after[: len(before)] == before  # the earlier sessions are untouched
    # Without configured roots the repository is still found: the bank knows its directory.
    with open(repo / HISTORY, "a") as f:
        f.write("\n#### thanks  \n")
    assert _scan(tmp_path / "home", bank, []).events_added == 1


def test_reread_from_the_start_changes_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "webapp"
    shutil.copytree(HAND / "webapp", repo)
    bank = tmp_path / "bank.sqlite"
    _scan(tmp_path / "home", bank, [repo])
    before = bank_rows(bank)
    replacement = repo / "history.tmp"  # same bytes, new inode: read again from the start
    replacement.write_bytes((repo / HISTORY).read_bytes())
    replacement.replace(repo / HISTORY)
    report = _scan(tmp_path / "home", bank, [repo])
    assert report.events_added == 0 and report.harnesses[aider.NAME].sources_read == 1
    assert bank_rows(bank) == before


def test_repositories_under_a_configured_root_are_found(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    for repo, fixture in ((projects / "webapp", "webapp"), (projects / "clients" / "tools", "tools")):
        make_repo(repo)
        shutil.copy(HAND / fixture / HISTORY, repo / HISTORY)
    (projects / "a" / "b" / "deep").mkdir(parents=True)  # three levels down: not walked
    shutil.copy(HAND / "legacy-cli" / HISTORY, projects / "a" / "b" / "deep" / HISTORY)
    make_repo(projects / "a" / "b" / "deep")
    _scan(tmp_path / "home", tmp_path / "bank.sqlite", [projects])
    banks = {s["bank_id"] for s in sessions_of(tmp_path / "bank.sqlite")}
    assert banks == {"coding-agent::webapp", "coding-agent::tools"}
    assert aider.roots({"HOME": str(tmp_path)}, tmp_path) == []


def _fold(batches: list[Batch]) -> dict[tuple[str, str], tuple]:
    """What a bank holds after these batches (an event's uid keeps its first version unless revised)."""
    out: dict[tuple[str, str], tuple] = {}
    for batch in batches:
        for e in batch.events:
            if (e.session, e.uid) not in out or batch.revise:
                out[(e.session, e.uid)] = (e.role, e.kind, e.text, e.tool_name, e.meta, e.usage)
    return out


@pytest.mark.parametrize("fixture", ["webapp", "legacy-cli", "tools"])
def test_any_split_of_the_lines_reads_the_same(fixture: str) -> None:
    path = HAND / fixture / HISTORY
    records = [Record(n, raw) for n, raw in enumerate(path.read_bytes().split(b"\n"), 1) if raw.strip()]
    ref = SourceRef(path, path.parent)
    whole = _fold([aider.parse(ref, records, {})])
    for size in (1, 2, 3, 5, 8, 13):
        state: dict[str, Any] = {}
        batches = []
        for start in range(0, len(records), size):
            batches.append(aider.parse(ref, records[start:start + size], state))
            state = batches[-1].state
        assert _fold(batches) == whole, size


def test_header_time_is_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    ref = SourceRef(Path("/src/app") / HISTORY, Path("/src/app"))
    batch = aider.parse(ref, [Record(2, b"# aider chat started at 2026-08-01 10:00:00"),
                              Record(4, b"> aider  ")], {})
    patch = batch.sessions["app@2026-08-01T10:00:00"]
    assert (patch.started_at, patch.cwd) == ("2026-08-01T08:00:00Z", "/src/app")


def test_lines_before_the_first_header_are_counted() -> None:
    ref = SourceRef(Path("/src/app") / HISTORY, Path("/src/app"))
    batch = aider.parse(ref, [Record(1, b"#### trimmed by hand  "), Record(3, b"some reply"),
                              Record(5, b"# aider chat started at 2026-08-01 10:00:00"),
                              Record(7, b"> aider  ")], {})
    assert [(p.kind, p.line) for p in batch.problems] == [("unknown_type", 1)]
    assert [e.text for e in batch.events] == ["aider"]
