"""The pi family (pi, Prime Agent, oh-my-pi, OpenClaw): what the fixtures must read as
(fixtures/pi/<member>/hand/README.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture.liveness import _is_agent
from harvester.model import Usage
from harvester.parsers import pi
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

BASE = FIXTURES / "pi"
HARNESSES = {
    "pi": Harness(pi.PI_NAME, pi.pi_roots, pi.PI_SOURCES, pi.parse, "pi", pi.PI_PROCESSES),
    "prime_agent": Harness(pi.PRIME_NAME, pi.prime_roots, pi.PRIME_SOURCES, pi.parse, "Prime Agent",
                           pi.PRIME_PROCESSES),
    "oh_my_pi": Harness(pi.OMP_NAME, pi.omp_roots, pi.OMP_SOURCES, pi.parse, "oh-my-pi", pi.OMP_PROCESSES),
    "openclaw": Harness(pi.OPENCLAW_NAME, pi.openclaw_roots, pi.OPENCLAW_SOURCES, pi.parse, "OpenClaw",
                        pi.OPENCLAW_PROCESSES),
}
# The variable that points each member at a tree laid out like its own root.
ROOT_VAR = {"pi": "PI_CODING_AGENT_DIR", "prime_agent": "PRIME_AGENT_CODING_AGENT_DIR",
            "oh_my_pi": "PI_CODING_AGENT_DIR", "openclaw": "OPENCLAW_STATE_DIR"}

A = "019ea1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b"  # pi 1.6.0: every entry kind, a branch, a context edit
B = "019ea1f0-1a2b-7c3d-9e4f-5a6b7c8d9e0f"  # /fork of A
C = "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9"  # v1 file (no ids)
D = "8b7c6d5e-4f3a-4b2c-9d1e-0f9a8b7c6d5e"  # v2 file (hookMessage)
P = "019e9a00-1111-7222-8333-944455566677"  # Prime: flat session with git_state / session_state
R = "019e9a02-2222-7333-8444-955566677788"  # Prime: its RLM child
LEGACY = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"  # Prime: still in a per-cwd folder
OMP = "019eb3c4-d5e6-7f70-8192-a3b4c5d6e7f8"  # omp main session
EXPLORE, GREP = f"{OMP}:0-Explore", f"{OMP}:0-Explore/0-Explore.1-Grep"  # its subagent, and that one's
W1 = "7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"  # OpenClaw agent main: a Telegram chat
W2 = "8d2f3e4a-5b6c-4d7e-9f80-a1b2c3d4e5f6"  # its forum topic session
W3 = "9e3a4f5b-6c7d-4e8f-a091-b2c3d4e5f607"  # OpenClaw agent work
W4 = "a04b5c6d-7e8f-4a90-b1c2-d3e4f5a6b7c8"  # a thread forked from W1
PI_DIR = "sessions/--home-dev-src-demo-repo--"


@pytest.fixture(scope="module")
def registered() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for harness in HARNESSES.values():
            mp.setitem(parsers.HARNESSES, harness.name, harness)
        yield


def _scan(tmp: Path, member: str, root: Path, var: str | None = None) -> tuple[Path, int]:
    bank = tmp / "bank.sqlite"
    name = HARNESSES[member].name
    report = scan(tmp, bank, (name,), env={"HOME": str(tmp), var or ROOT_VAR[member]: str(root)})
    return bank, report.harnesses[name].problems


@pytest.fixture(scope="module")
def banks(registered: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for member in HARNESSES:
        bank, problems = _scan(tmp_path_factory.mktemp(member), member, BASE / member / "hand")
        assert problems == 0, member
        out[member] = bank
    return out



def _meta(event: dict) -> dict:
    return event["meta"] or {}


# -- pi ------------------------------------------------------------------------------------------
def test_pi_reads_every_session(banks: dict[str, Path]) -> None:
    assert {s["native_id"] for s in sessions_of(banks["pi"])} == {A, B, C, D}


def test_pi_main_session(banks: dict[str, Path]) -> None:
    bank = banks["pi"]
    s = session_of(bank, A)
    assert (s["cwd"], s["model"], s["agent_version"], s["parent_native_id"]) == (
        "/home/dev/src/demo-repo", "claude-sonnet-4-5", None, None)  # pi records no CLI version
    assert (s["title"], s["title_source"]) == ("parse_row: keep the last field", "custom")  # /name
    assert s["meta"]["format_version"] == 3 and s["meta"]["last_turn"] == "complete"
    events = events_of(bank, A)
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "Why does parse_row drop the last field?",  # the @file contents before it are filed apart
        "Fix it by removing the pop",
        "Instead, write a failing test first",
        "!git status --short",
        "What is wrong in this screenshot?\n[image/png, 72 bytes]",
        "/skill:rust-tests for parse_row",  # the skill file's body is filed apart
    ]
    calls = [(e["tool_name"], e["tool_call_id"]) for e in events if e["kind"] == "tool_call"]
    results = [(e["tool_name"], e["tool_call_id"], e["is_error"]) for e in events
               if e["kind"] == "tool_result"]
    assert calls == [("read", "toolu_01"), ("bash", "toolu_02"), ("edit", "toolu_03"), ("write", "toolu_04")]
    assert results == [("read", "toolu_01", False), ("bash", "toolu_02", True), ("edit", "toolu_03", False),
                       ("write", "toolu_04", False), ("bash", None, False)]  # the last: the user's !command
    first = next(e for e in events if e["uid"] == "b2d1f603:0")
    assert first["kind"] == "thinking" and first["usage"] == {"in": 1840, "out": 96, "cache_read": 16384}
    [compaction] = [e for e in events if e["kind"] == "compaction"]
    assert compaction["text"].startswith("## Goal") and compaction["meta"]["first_kept"] == "5c7b90ad"
    system = next(e for e in events if e["uid"] == "5e1a0c3b")  # pi's prompt: section names, tools
    assert system["text"].startswith("sections: preamble, tools, cwd")
    error = next(e for e in events if e["uid"] == "4b6a8fad:error")
    assert (error["role"], error["kind"]) == ("system", "meta") and "overloaded" in error["text"]


def test_pi_injected_text_is_never_the_users(banks: dict[str, Path]) -> None:
    events = events_of(banks["pi"], A)
    injected = [(e["uid"], e["text"][:20]) for e in events if _meta(e).get("injected")]
    assert injected == [
        ("a1c0e5f2:context", '<file name="/home/de'),  # `pi @src/lib.rs "..."`
        ("4b6a8f9c", "The user asked to re"),  # the branch summary put into the new branch
        ("d4f31836", "Open TODOs: remove t"),  # an extension's custom_message
        ("3a597e9c:context", '<skill name="rust-te'),
    ]
    assert all(e["role"] == "system" for e in events if _meta(e).get("injected"))


def test_pi_branch_marks_the_abandoned_entries(banks: dict[str, Path]) -> None:
    events = events_of(banks["pi"], A)
    assert [(e["uid"], e["kind"]) for e in events if _meta(e).get("abandoned")] == [
        ("07264b58", "text"), ("18375c69", "tool_call"), ("29486d7a", "tool_result"), ("3a597e8b", "text")]
    summary = next(e for e in events if _meta(e).get("branch_summary"))
    assert summary["meta"]["branched_from"] == "f6153a47" and summary["meta"]["from_id"] == "3a597e8b"
    # the context edit leaves the failing test output in the transcript, marked
    assert next(e for e in events if e["uid"] == "e5042936")["meta"] == {"context_edit": "omitted"}


def test_pi_fork_skips_the_copied_path(banks: dict[str, Path]) -> None:
    s = session_of(banks["pi"], B)
    assert (s["parent_native_id"], s["parent_kind"], s["meta"]["copied_records"]) == (A, "fork", 9)
    assert [(e["role"], e["text"][:20]) for e in events_of(banks["pi"], B)] == [
        ("user", "Fix it with rsplit_o"), ("assistant", "`split` keeps every ")]


def test_pi_v1_and_v2_files(banks: dict[str, Path]) -> None:
    c, d = session_of(banks["pi"], C), session_of(banks["pi"], D)
    assert (c["cwd"], c["meta"]["format_version"], c["model"]) == ("/home/dev/src/old-repo", 1, "gpt-5")
    assert (d["meta"]["format_version"], d["model"], d["title"]) == (2, "gpt-5.1-codex", "Run the benchmarks")
    assert all(e["uid"].startswith("h:") for e in events_of(banks["pi"], C))  # no ids before v2
    hook = next(e for e in events_of(banks["pi"], D) if e["uid"] == "6f708192")
    assert (hook["role"], hook["meta"]["custom_type"]) == ("system", "bench-watch")


def _replace(path: Path, content: bytes) -> None:
    """Rewrite a file the way pi's _rewriteFile does (same path, new content)."""
    path.write_bytes(content)


def test_a_migration_rewrite_adds_nothing_and_loses_nothing(registered: None, tmp_path: Path) -> None:
    root = shutil.copytree(BASE / "pi" / "hand", tmp_path / "agent")
    bank, problems = _scan(tmp_path, "pi", root)
    before = {sid: [(e["uid"], e["content_hash"]) for e in events_of(bank, sid)] for sid in (C, D)}
    for sid, folder in ((C, "--home-dev-src-old-repo--"), (D, "--home-dev-src-demo-repo--")):
        [target] = (root / "sessions" / folder).glob(f"*_{sid}.jsonl")
        _replace(target, (BASE / "pi" / "rewrites" / target.name).read_bytes())
    _, problems_after = _scan(tmp_path, "pi", root)
    assert problems == problems_after == 0
    after = {sid: [(e["uid"], e["content_hash"]) for e in events_of(bank, sid)] for sid in (C, D)}
    assert after[D] == before[D]  # v2 -> v3: the ids stay, the renamed role reads the same
    assert after[C][:len(before[C])] == before[C]  # v1 -> v3: random ids, but content-based uids
    assert [e["text"] for e in events_of(bank, C)[len(before[C]):]] == [
        "Are there TODOs left?", "No TODOs are left in src."]  # the turn appended after the migration
    assert session_of(bank, C)["meta"]["format_version"] == 3


def test_a_branch_read_in_a_later_chunk_marks_stored_events(registered: None, tmp_path: Path) -> None:
    root = tmp_path / "agent"
    shutil.copytree(BASE / "pi" / "hand" / PI_DIR, root / PI_DIR)
    [store] = (root / PI_DIR).glob(f"*_{A}.jsonl")
    lines = store.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"type":"branch_summary"' in line)
    store.write_bytes(b"".join(lines[:cut]))
    bank, _ = _scan(tmp_path, "pi", root)
    assert not any(_meta(e).get("abandoned") for e in events_of(bank, A))
    with store.open("ab") as f:
        f.write(b"".join(lines[cut:]))
    _scan(tmp_path, "pi", root)
    assert [e["uid"] for e in events_of(bank, A) if _meta(e).get("abandoned")] == [
        "07264b58", "18375c69", "29486d7a", "3a597e8b"]


def _header(sid: str) -> dict:
    return {"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/w"}


def _write(path: Path, entries: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))


def _entry(eid: str, parent: str | None, n: int, role: str, text: str) -> dict:
    content = [{"type": "text", "text": text}]
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-11-01T10:00:{n:02d}.000Z",
            "message": {"role": role, "content": content, "timestamp": 1793527200000 + n * 1000}}


def test_returning_to_a_branch_unmarks_it(registered: None, tmp_path: Path) -> None:
    folder = tmp_path / "agent" / "sessions" / "--w--"
    folder.mkdir(parents=True)
    entries = [_header("s1"),
               _entry("e1", None, 1, "user", "one"), _entry("e2", "e1", 2, "assistant", "two"),
               _entry("e3", "e2", 3, "user", "three"), _entry("e4", "e3", 4, "assistant", "four"),
               _entry("e5", "e2", 5, "user", "three, again"),
               _entry("e6", "e5", 6, "assistant", "four, again"),
               _entry("e7", "e4", 7, "user", "back to four")]  # /tree back to e4: e3, e4 live again
    _write(folder / "2026-11-01T10-00-00-000Z_s1.jsonl", entries)
    bank, problems = _scan(tmp_path, "pi", tmp_path / "agent")
    assert problems == 0
    events = events_of(bank, "s1")
    assert [e["uid"] for e in events if _meta(e).get("abandoned")] == ["e5", "e6"]
    assert [(e["uid"], _meta(e).get("branched_from")) for e in events if _meta(e).get("branched_from")] == [
        ("e5", "e2"), ("e7", "e4")]


def test_unknown_entries_are_drift(registered: None, tmp_path: Path) -> None:
    folder = tmp_path / "agent" / "sessions" / "--w--"
    folder.mkdir(parents=True)
    lines = [_header("s2"),
             _entry("e1", None, 1, "user", "hi"),
             {"type": "hologram", "id": "e2", "parentId": "e1", "timestamp": "2026-11-01T10:00:02.000Z"},
             {**_entry("e3", "e2", 3, "user", "x"), "message": {"role": "oracle", "content": "x"}},
             {"type": "custom", "customType": "ext", "data": {}, "id": "e4", "parentId": "e3",
              "timestamp": "2026-11-01T10:00:04.000Z"}]
    _write(folder / "2026-11-01T10-00-00-000Z_s2.jsonl", lines)
    bank, problems = _scan(tmp_path, "pi", tmp_path / "agent")
    assert problems == 2  # the unknown type and the unknown role; extension state is skipped on purpose
    assert [e["text"] for e in events_of(bank, "s2")] == ["hi"]
    details = open_bank(bank).conn.execute("SELECT kind, detail FROM problems ORDER BY line").fetchall()
    assert details == [("unknown_type", "type='hologram'"), ("unknown_type", "message role='oracle'")]


# -- Prime Agent ---------------------------------------------------------------------------------
def test_prime_sessions(banks: dict[str, Path]) -> None:
    bank = banks["prime_agent"]
    assert {s["native_id"] for s in sessions_of(bank)} == {P, R, LEGACY}  # rlm-subagents.jsonl is not one
    s = session_of(bank, P)
    assert (s["state"], s["title"], s["title_source"], s["model"]) == (
        "ended", "CSV loader profiling", "custom", "claude-opus-4-5")  # session_state archived
    assert (s["branch"], s["commit_sha"], s["origin_url"]) == (
        "perf/csv", "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d",
        "https://github.com/dev/demo-repo")  # the last git_state
    assert s["meta"]["agent_status"] == "Profiled the CSV loader; tests pass"
    assert s["meta"]["task_state"] == "completed" and s["meta"]["session_status"] == "archived"
    reply = next(e for e in events_of(bank, P) if _meta(e).get("custom_type") == "agent_message")
    assert (reply["role"], reply["text"], reply["meta"]["from_agent"]) == (
        "system", "tests pass (3/3)", "child")
    assert [e["text"] for e in events_of(bank, P) if e["role"] == "user"] == [
        "Profile the CSV loader and have a helper check the tests"]


def test_prime_rlm_child(banks: dict[str, Path]) -> None:
    bank = banks["prime_agent"]
    s = session_of(bank, R)
    assert (s["parent_native_id"], s["parent_kind"], s["title"], s["meta"]["rlm_depth"]) == (
        P, "subagent", "check-tests", 1)
    first = next(e for e in events_of(bank, R) if e["kind"] != "meta")
    assert (first["role"], first["text"], first["meta"]["from_agent"]) == (
        "system", "Check that tests/rows.rs passes", "parent")  # the parent agent's task, not the user's
    assert not [e for e in events_of(bank, R) if e["role"] == "user"]
    assert session_of(bank, LEGACY)["title"] == "What does load_csv return?"


# -- oh-my-pi ------------------------------------------------------------------------------------
def test_omp_main_session(banks: dict[str, Path]) -> None:
    bank = banks["oh_my_pi"]
    assert {s["native_id"] for s in sessions_of(bank)} == {OMP, EXPLORE, GREP}
    s = session_of(bank, OMP)
    assert (s["title"], s["title_source"], s["model"]) == (
        "CSV loader: avoid per-row allocation", "custom", "claude-opus-4-5")  # renamed by the user
    events = events_of(bank, OMP)
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "Speed up the CSV loader in @src/csv.rs",
        "import csv\nprint(sum(1 for _ in csv.reader(open('data/sample.csv'))))",  # the user's Python cell
        "Start over: profile it first"]
    injected = {e["uid"]: e["meta"] for e in events if _meta(e).get("injected")}
    assert set(injected) == {"e0000004", "e0000008", "e000000a"}  # @file contents, developer, "Continue."
    assert injected["e000000a"]["synthetic"] is True
    assert next(e for e in events if e["uid"] == "e0000005:0")["text"] == "[redacted thinking]"
    usage = next(e for e in events if e["uid"] == "e0000006")  # a side call: it does not start a branch
    assert usage["usage"] == {"in": 300, "out": 12} and not any(_meta(e).get("abandoned") for e in events)
    assert not any(_meta(e).get("branched_from") for e in events)
    assert [e["text"] for e in events if _meta(e).get("record") == "reset_boundary"] == [
        "context cleared (/clear)"]


def test_omp_subagents(banks: dict[str, Path]) -> None:
    bank = banks["oh_my_pi"]
    explore, grep = session_of(bank, EXPLORE), session_of(bank, GREP)
    assert (explore["parent_native_id"], explore["parent_kind"], explore["title"]) == (
        OMP, "subagent", "explore: Find every caller of load_csv")
    assert (grep["parent_native_id"], grep["meta"]["agent"]) == (EXPLORE, "grep")
    task = events_of(bank, EXPLORE)[1]
    assert (task["role"], task["meta"]) == ("system", {"from_agent": "parent"})  # attribution: agent


def test_omp_title_slot_rewritten_in_place(registered: None, tmp_path: Path) -> None:
    """omp rewrites its fixed-width first line on a rename: the file is read again, nothing doubles."""
    root = shutil.copytree(BASE / "oh_my_pi" / "hand", tmp_path / "agent")
    bank, _ = _scan(tmp_path, "oh_my_pi", root)
    count = len(events_of(bank, OMP))
    [store] = (root / "sessions" / "-src-demo-repo").glob("*.jsonl")
    data = store.read_bytes()  # a rename appends a title_change entry and rewrites the slot (same width)
    slot = data[:256].replace(b"avoid per-row allocation", b"reuse one row buffer    ")
    rename = {"type": "title_change", "id": "e0000014", "parentId": "e0000013",
              "timestamp": "2026-11-22T10:00:00.000Z", "title": "CSV loader: reuse one row buffer",
              "source": "user"}
    store.write_bytes(slot + data[256:] + orjson.dumps(rename) + b"\n")
    _, problems = _scan(tmp_path, "oh_my_pi", root)
    assert problems == 0 and len(events_of(bank, OMP)) == count
    assert session_of(bank, OMP)["title"] == "CSV loader: reuse one row buffer"


def _exit(eid: str, parent: str, n: int, kind: str, reason: str) -> dict:
    data = {"reason": reason, "kind": kind, "recordedAt": f"2026-11-01T10:00:{n:02d}.000Z"}
    return {"type": "custom", "customType": "session_exit", "data": data, "id": eid, "parentId": parent,
            "timestamp": f"2026-11-01T10:00:{n:02d}.000Z"}


def test_omp_exit_record_ends_or_abandons_the_session(registered: None, tmp_path: Path) -> None:
    """The shapes omp 18.2.3 wrote: a clean exit after each print-mode run; on SIGTERM mid-turn the exit
    record (kind signal), then its teardown's aborted reply (which is not a resume)."""
    folder = tmp_path / "agent" / "sessions" / "-w"
    folder.mkdir(parents=True)
    store = folder / "2026-11-01T10-00-00-000Z_s3.jsonl"
    first = [_header("s3"), _entry("e1", None, 1, "user", "say hi"), _entry("e2", "e1", 2, "assistant", "hi"),
             _exit("x1", "e2", 3, "normal", "dispose")]
    _write(store, first)
    bank, problems = _scan(tmp_path, "oh_my_pi", tmp_path / "agent")
    assert problems == 0 and session_of(bank, "s3")["state"] == "ended"
    assert not [e for e in events_of(bank, "s3") if _meta(e).get("record") == "session_exit"]  # clean: silent
    with store.open("ab") as f:  # resumed (--continue): the prompt makes it live again
        f.write(orjson.dumps(_entry("e3", "x1", 4, "user", "SLOW 20 a turn that never finishes")) + b"\n")
    _scan(tmp_path, "oh_my_pi", tmp_path / "agent")
    assert session_of(bank, "s3")["state"] == "live"
    aborted = _entry("e4", "x2", 6, "assistant", "")
    aborted["message"].update(content=[], stopReason="aborted", errorMessage="Request was aborted")
    with store.open("ab") as f:
        f.write(orjson.dumps(_exit("x2", "e3", 5, "signal", "sigterm")) + b"\n" + orjson.dumps(aborted) + b"\n")
    _scan(tmp_path, "oh_my_pi", tmp_path / "agent")
    s = session_of(bank, "s3")
    assert (s["state"], s["meta"]["last_turn"]) == ("abandoned", "aborted")
    assert [e["text"] for e in events_of(bank, "s3") if e["role"] == "system"] == [
        "process exit (signal: sigterm)", "aborted: Request was aborted"]


def test_omp_usage_names_reasoning_tokens_its_own_way() -> None:
    raw = {"input": 16962, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 17002,
           "reasoningTokens": 15}  # omp 18.2.3; pi 1.6.0 writes "reasoning"
    assert pi._usage(raw) == Usage(input=16962, output=40, reasoning=15)
    assert pi._usage({**raw, "reasoningTokens": None, "reasoning": 7}) == Usage(input=16962, output=40, reasoning=7)


# -- real runs: fixtures/pi/<member>/real/<scenario>, captured by tests.realagents_capture -----------------
def _real(tmp: Path, member: str, scenario: str) -> Path:
    bank, problems = _scan(tmp, member, BASE / member / "real" / scenario)
    assert problems == 0
    return bank


def test_pi_real_resume_appends_to_the_same_file(registered: None, tmp_path: Path) -> None:
    bank = _real(tmp_path, "pi", "two_turns")
    [s] = sessions_of(bank)
    assert (s["model"], s["agent_version"], s["meta"]["format_version"]) == ("fake-model", None, 3)
    assert s["cwd"].endswith("/demo-repo") and s["title"] == "say hi"
    events = events_of(bank, s["native_id"])
    assert [e["text"] for e in events[:3]] == [  # each run's start: model, thinking level, pi's prompt
        "model: fakellm/fake-model", "thinking level: medium",
        "sections: preamble, tools, rules, docs, cwd\ntools +read, +bash, +edit, +write"]
    assert [(e["role"], e["kind"]) for e in events[3:]] == [
        ("user", "text"), ("assistant", "text"), ("user", "text"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text")]  # the --continue run: the same session, appended
    call, result = events[6], events[7]
    assert (call["tool_name"], call["tool_call_id"]) == (result["tool_name"], result["tool_call_id"])
    assert "pelican" in result["text"] and call["usage"]["out"] == 53


def test_real_thinking_and_tool_errors(registered: None, tmp_path: Path) -> None:
    for member, level in (("pi", "medium"), ("oh_my_pi", "high")):
        bank = _real(tmp_path / member / "t", member, "thinking")
        [s] = sessions_of(bank)
        events = events_of(bank, s["native_id"])
        assert f"thinking level: {level}" in [e["text"] for e in events]
        thinking = next(e for e in events if e["kind"] == "thinking")
        assert thinking["text"].endswith("I will think briefly, then answer.")
        assert thinking["usage"]["reasoning"] == 15
        bank = _real(tmp_path / member / "e", member, "tool_error")
        [s] = sessions_of(bank)
        [result] = [e for e in events_of(bank, s["native_id"]) if e["kind"] == "tool_result"]
        assert result["is_error"] and "missing.txt" in result["text"]


def test_omp_real_runs(registered: None, tmp_path: Path) -> None:
    bank = _real(tmp_path / "two", "oh_my_pi", "two_turns")
    [s] = sessions_of(bank)
    assert (s["state"], s["title"], s["model"]) == ("ended", "say hi", "fake-model")  # title slot left empty
    assert [e["text"] for e in events_of(bank, s["native_id"]) if e["role"] == "user"] == [
        "say hi", f"READ_FILE {s['cwd']}/notes.txt"]
    bank = _real(tmp_path / "sub", "oh_my_pi", "subagent")
    parent, child = sorted(sessions_of(bank), key=lambda x: len(x["native_id"]))
    assert (child["native_id"], child["parent_native_id"], child["parent_kind"]) == (
        f"{parent['native_id']}:{child['native_id'].rsplit(':', 1)[1]}", parent["native_id"], "subagent")
    assert child["meta"]["agent"] == "task" and child["title"] == "task: Complete assignment thoroughly:"
    events = events_of(bank, child["native_id"])
    assert (events[1]["role"], events[1]["meta"]) == ("system", {"from_agent": "parent"})  # the task
    assert next(e["meta"] for e in events if _meta(e).get("developer")) == {"injected": True, "developer": True}
    assert [e["tool_name"] for e in events_of(bank, parent["native_id"]) if e["kind"] == "tool_call"] == [
        "task", "hub"]


def test_real_rpc_sessions(registered: None, tmp_path: Path) -> None:
    """Driven over --mode rpc: a thinking level and a model chosen mid-session, a !command, a name, a
    compaction, and a fork at the second prompt (its copies of the parent's entries are skipped)."""
    for member, copied, role in (("pi", 8, None), ("oh_my_pi", 7, "default")):
        bank = _real(tmp_path / member, member, "rpc")
        forks = [s for s in sessions_of(bank) if s["parent_kind"] == "fork"]
        [main] = [s for s in sessions_of(bank) if s["parent_kind"] is None]
        [fork] = forks
        assert (main["title"], main["title_source"], main["model"]) == ("rpc demo", "custom", "fake-model-2")
        events = events_of(bank, main["native_id"])
        changes = [(e["text"], _meta(e).get("role")) for e in events if _meta(e).get("record")]
        assert changes[-2:] == [("thinking level: low", None), ("model: fakellm/fake-model-2", role)]
        bash = [(e["role"], e["text"]) for e in events if _meta(e).get("bash") or e["tool_name"] == "bash"]
        assert bash == [("user", "!echo rpc bash"), ("tool", "rpc bash\n")]
        [compaction] = [e for e in events if e["kind"] == "compaction"]
        assert compaction["text"].startswith("<analysis>") and compaction["meta"]["tokens_before"] > 0
        assert compaction["meta"].get("method") == (None if member == "pi" else "soft")
        assert [e["text"] for e in events if e["role"] == "user"][-1] == "say bye"
        assert (fork["parent_native_id"], fork["meta"]["copied_records"]) == (main["native_id"], copied)
        assert [e["text"] for e in events_of(bank, fork["native_id"]) if e["role"] == "user"] == [
            "say hi from the fork"]


def test_real_interrupted_turns(registered: None, tmp_path: Path) -> None:
    """SIGTERM while the model is answering: both write an aborted, empty reply; omp first its exit record."""
    bank = _real(tmp_path / "pi", "pi", "interrupted")
    [s] = sessions_of(bank)
    assert (s["state"], s["meta"]["last_turn"]) == ("unknown", "aborted")
    assert events_of(bank, s["native_id"])[-1]["text"] == "aborted: Request aborted"
    bank = _real(tmp_path / "omp", "oh_my_pi", "interrupted")
    [s] = sessions_of(bank)
    assert (s["state"], s["meta"]["last_turn"]) == ("abandoned", "aborted")
    assert [e["text"] for e in events_of(bank, s["native_id"])][-2:] == [
        "process exit (signal: sigterm)", "aborted: Request was aborted"]


# -- OpenClaw ------------------------------------------------------------------------------------
def test_openclaw_sessions(banks: dict[str, Path]) -> None:
    bank = banks["openclaw"]
    assert {s["native_id"] for s in sessions_of(bank)} == {W1, W2, W3, W4}
    sources = {Path(c.path).name for c in open_bank(bank).cursors()}
    assert not any(".trajectory." in n or ".checkpoint." in n or n == "sessions.json" for n in sources)
    s = session_of(bank, W1)
    assert (s["title"], s["model"], s["meta"]["agent"], s["cwd"]) == (
        "can you check the disk usage on the build box?", "claude-opus-4-5", "main",
        "/home/dev/.openclaw/workspace")  # the agent's workspace, not a repository
    users = [(e["text"], e["meta"]["envelope"]) for e in events_of(bank, W1) if e["role"] == "user"]
    assert users == [("can you check the disk usage on the build box?",
                      "Telegram Alice (@alice) id:4242 +2m 2026-02-18 11:21 GMT+1")]
    mirror = next(e for e in events_of(bank, W1) if _meta(e).get("synthetic"))
    assert (mirror["role"], mirror["meta"]["synthetic"]) == ("system", "delivery-mirror")


def test_openclaw_topics_agents_and_forks(banks: dict[str, Path]) -> None:
    bank = banks["openclaw"]
    assert [e["text"] for e in events_of(bank, W2) if e["role"] == "user"] == ["Bob: is the deploy green?"]
    work = session_of(bank, W3)
    assert (work["meta"]["agent"], work["model"]) == ("work", "gpt-5.2")  # gateway-injected is not the model
    assert [e["text"] for e in events_of(bank, W3) if e["role"] == "user"] == [
        "summarize yesterday's commits"]  # the gateway's "[Wed 2026-02-18 11:21 GMT+1] " stamp is meta
    relayed = next(e for e in events_of(bank, W3) if _meta(e).get("from_agent"))  # sessions_send
    assert (relayed["role"], relayed["meta"]["from_agent"]) == ("system", "agent:main:telegram:dm:4242")
    fork = session_of(bank, W4)
    assert (fork["parent_native_id"], fork["parent_kind"], fork["meta"]["copied_records"]) == (W1, "fork", 7)
    assert len(events_of(bank, W4)) == 2


# -- roots and processes ---------------------------------------------------------------------------
def test_env_overrides_move_the_roots(registered: None, tmp_path: Path) -> None:
    home = Path("/home/u")
    assert pi.pi_roots({}, home) == [home / ".pi/agent/sessions"]
    assert pi.pi_roots({"PI_CODING_AGENT_DIR": "~/pi", "PI_CODING_AGENT_SESSION_DIR": "/s"}, home) == [
        Path("/s"), home / "pi/sessions", home / ".pi/agent/sessions"]
    assert pi.pi_roots({"PI_CODING_AGENT_DIR": "relative"}, home) == [home / ".pi/agent/sessions"]
    assert pi.prime_roots({"PRIME_AGENT_SESSION_DIR": "/x/sess"}, home) == [
        Path("/x/sess"), Path("/x/session-artifacts"), home / ".prime/agent/sessions",
        home / ".prime/agent/session-artifacts"]
    assert pi.prime_roots({"PRIME_AGENT_CODING_AGENT_DIR": "/p"}, home)[:2] == [
        Path("/p/sessions"), Path("/p/session-artifacts")]
    assert pi.omp_roots({}, home) == [home / ".omp/agent/sessions"]
    assert pi.omp_roots({"OMP_PROFILE": "work", "XDG_DATA_HOME": "/xdg"}, home) == [
        Path("/xdg/omp/profiles/work/sessions"), home / ".omp/profiles/work/agent/sessions"]
    assert pi.omp_roots({"OMP_PROFILE": "", "PI_PROFILE": "old"}, home) == [home / ".omp/agent/sessions"]
    assert pi.omp_roots({"XDG_DATA_HOME": "/xdg"}, home) == [
        Path("/xdg/omp/sessions"), home / ".omp/agent/sessions"]
    assert pi.openclaw_roots({"OPENCLAW_STATE_DIR": "/srv/oc"}, home)[0] == Path("/srv/oc/agents")
    assert pi.openclaw_roots({"OPENCLAW_HOME": "/h2"}, home)[:2] == [Path("/h2/.openclaw/agents"),
                                                                     Path("/h2/.clawdbot/agents")]
    # a session folder set by PI_CODING_AGENT_SESSION_DIR holds the files flat
    bank, problems = _scan(tmp_path, "pi", BASE / "pi" / "hand" / PI_DIR, var="PI_CODING_AGENT_SESSION_DIR")
    assert problems == 0 and {s["native_id"] for s in sessions_of(bank)} == {A, B, D}


def test_processes_are_recognised() -> None:
    assert _is_agent("pi", ["pi"], pi.PI_PROCESSES)
    assert _is_agent("node", ["node", "/usr/lib/node_modules/@earendil-works/pi-coding-agent/dist/cli.js"],
                     pi.PI_PROCESSES)
    assert _is_agent("prime-agent", ["prime-agent", "--resume"], pi.PRIME_PROCESSES)
    assert _is_agent("omp", ["omp"], pi.OMP_PROCESSES)
    assert _is_agent("openclaw-gateway", ["openclaw-gateway"], pi.OPENCLAW_PROCESSES)
    assert not _is_agent("bash", ["bash", "-c", "grep pi notes.txt"], pi.PI_PROCESSES)


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/i/p/s1.jsonl"), PurePath("/i"), "pi")
    raw = b'{"type":[1]}'
    batch = pi.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "unexpected shape: an array where text or a number was expected")]
