"""Grok Build: what the fixtures must read as (fixtures/grok/hand/README.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import orjson
import pytest

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture.sources import discover, existing_roots
from harvester.parsers import grok
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of, shapes

HAND = FIXTURES / "grok" / "hand"
NAME = grok.NAME
A = "019f7a10-2c3d-7e4f-8a9b-0c1d2e3f4a51"  # current updates.jsonl: every update kind
B = "019f7a10-5d6e-7f80-9a1b-2c3d4e5f6a52"  # subagent of A
C = "019f7b20-1a2b-7c3d-8e4f-5a6b7c8d9e53"  # rewind, compaction, manual title
D = "019f7c30-3b4c-7d5e-8f6a-7b8c9d0e1f54"  # fork of A: chat_history.jsonl only (format 1)
E = "019e1d40-4c5d-7e6f-8a7b-8c9d0e1f2a55"  # chat_history.jsonl only, legacy role rows (format 0)
F = "019f7d50-5d6e-7f8a-9b0c-1d2e3f4a5b56"  # long cwd: slug-hash folder, summary names the path
G = "019d2e60-6e7f-7a8b-9c0d-2e3f4a5b6c57"  # bare ACP lines (no envelope), no summary.json
REPO = "/home/dev/src/demo-repo"
A_DIR = HAND / "sessions" / "%2Fhome%2Fdev%2Fsrc%2Fdemo-repo" / A


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[Harness]:
    harness = Harness(NAME, grok.roots, grok.SOURCES, grok.parse, "Grok Build", grok.PROCESSES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(parsers.HARNESSES, NAME, harness)
        yield harness


def _scan(tmp: Path, tree: Path) -> tuple[Path, int]:
    home, bank = tmp / "home", tmp / "bank.sqlite"
    home.mkdir(parents=True, exist_ok=True)
    report = scan(home, bank, (NAME,), env={"HOME": str(home), "GROK_HOME": str(tree)})
    return bank, report.harnesses[NAME].problems


@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bank, problems = _scan(tmp_path_factory.mktemp("grok"), HAND)
    assert problems == 0
    return bank




def test_sources_each_session_once(hand_bank: Path, registered: Harness) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {A, B, C, D, E, F, G}
    found = sorted(str(f.path.relative_to(HAND / "sessions")).split("/", 1)[1] for f in discover(registered, [HAND]))
    # chat_history.jsonl beside an updates.jsonl is its derived cache: never a source.
    assert [p for p in found if p.startswith(A)] == [f"{A}/summary.json", f"{A}/updates.jsonl"]
    assert f"{D}/chat_history.jsonl" in found and f"{E}/chat_history.jsonl" in found
    assert not any(p.endswith(("signals.json", "plan.json", "meta.json", "prompt_history.jsonl")) for p in found)


def test_current_session(hand_bank: Path) -> None:
    events = events_of(hand_bank, A)
    assert shapes(events) == [
        ("user", "text"), ("user", "text"),  # the prompt's text block, then its file reference
        ("assistant", "thinking"), ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"),  # read_file
        ("assistant", "tool_call"), ("tool", "tool_result"),  # search_replace: input known late, failed
        ("assistant", "text"),
        ("assistant", "tool_call"), ("tool", "tool_result"),  # bash
        ("assistant", "tool_call"), ("tool", "tool_result"),  # task: the subagent
        ("assistant", "text"),
        ("system", "text"), ("system", "meta"),  # a host turn's prompt, a slash command's output
        ("user", "text"), ("assistant", "tool_call"),
        ("system", "text"), ("user", "text"),  # an interjection: grok's envelope, the user's words
        ("tool", "tool_result"), ("assistant", "text"),
        ("system", "meta"),  # auto-compact notice
        ("user", "text"),  # cancelled turn
    ]
    assert [e["text"] for e in events if e["role"] == "user"] == [
        "Find where the CSV parser drops empty fields", "[src/csv.py]", "Also add a test for empty fields",
        "use pytest parametrize", "Now run the whole suite"]
    assert not any("<user_query>" in e["text"] for e in events if e["role"] == "user")
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [c["tool_name"] for c in calls] == ["read_file", "search_replace", "bash", "task", "write_file"]
    assert [r["tool_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert [r["is_error"] for r in results] == [False, True, False, False, False]
    assert calls[1]["tool_input"] == {"file_path": "src/csv.py", "old_string": "if c]", "new_string": "]"}
    assert results[2]["text"] == "3 passed in 0.12s"  # the raw output, not the terminal reference
    assert [e["model"] for e in events if e["role"] == "assistant"][-1] == "grok-4.5"  # after model_changed
    session = session_of(hand_bank, A)
    assert (session["cwd"], session["bank_id"]) == (REPO, "coding-agent::demo-repo")
    assert (session["title"], session["title_source"]) == ("Fix CSV parser dropping empty fields", "ai")
    assert session["model"] == "grok-4.5" and session["started_at"] == "2026-08-17T10:40:01.512Z"
    assert (session["branch"], session["origin_url"]) == ("fix/csv-empty-fields", "git@github.com:dev/demo-repo.git")
    assert session["meta"]["last_turn"] == "aborted"  # turn_completed stop_reason cancelled


def test_subagent_and_fork_links(hand_bank: Path) -> None:
    b = session_of(hand_bank, B)
    assert (b["parent_native_id"], b["parent_kind"], b["cwd"]) == (A, "subagent", REPO)
    events = events_of(hand_bank, B)
    assert events[0]["role"] == "system" and events[0]["meta"] == {"injected": True, "from_agent": "parent"}
    assert shapes(events[1:]) == [("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    d = session_of(hand_bank, D)
    assert (d["parent_native_id"], d["parent_kind"]) == (A, "fork")


def test_rewind_and_compaction(hand_bank: Path) -> None:
    events = events_of(hand_bank, C)
    rows = [(e["role"], e["kind"], e["text"][:22], bool((e["meta"] or {}).get("rewound"))) for e in events]
    assert rows == [
        ("user", "text", "Rename parse_row to pa", False),
        ("assistant", "text", "Done: 4 call sites upd", False),
        ("user", "text", "Also update the docs", True),
        ("assistant", "tool_call", "write_file: docs/csv.m", True),
        ("tool", "tool_result", "[diff docs/csv.md]\n# p", True),
        ("assistant", "text", "Docs updated.", True),
        ("system", "meta", "rewound to prompt 1", False),
        ("user", "text", "Only update the README", False),
        ("assistant", "text", "README updated.", False),
        ("system", "compaction", "conversation compacted", False),
        ("system", "text", "Continue with the task", False),  # the auto-continue prompt grok injected
        ("user", "text", "Tag the release", False),
        ("assistant", "text", "Tagged v2.0.", False),
    ]
    session = session_of(hand_bank, C)
    assert (session["title"], session["title_source"]) == ("Rename helpers", "custom")  # a /rename
    assert session["meta"]["last_turn"] == "complete"


def test_chat_history_layouts(hand_bank: Path) -> None:
    d = events_of(hand_bank, D)  # format 1: typed rows
    assert shapes(d) == [
        ("system", "text"), ("user", "text"), ("assistant", "thinking"),
        ("assistant", "tool_call"), ("tool", "tool_result"),  # web_search, run by the backend
        ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("system", "text"), ("user", "text"), ("assistant", "text")]
    assert d[0]["meta"] == {"injected": True, "synthetic": "project_instructions"}
    assert [e["text"] for e in d if e["role"] == "user"] == ["Summarise the fix and check upstream docs", "keep it short"]
    e = events_of(hand_bank, E)  # format 0: role rows
    assert shapes(e) == [("user", "text"), ("assistant", "thinking"), ("assistant", "text"),
                         ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert e[3]["tool_input"] == {"command": "make build"} and e[4]["tool_name"] == "bash"
    assert (session_of(hand_bank, E)["cwd"], session_of(hand_bank, E)["model"]) == ("/home/dev/src/old-tool",
                                                                              "grok-code-fast-1")


def test_cwd_comes_from_the_data(hand_bank: Path) -> None:
    f = session_of(hand_bank, F)  # the folder is a slug and a hash: only summary.json names the path
    assert f["cwd"].endswith("/very-long-directory-name-segment-07/legacy-app") and f["cwd"].startswith("/home/dev")
    g = session_of(hand_bank, G)  # no summary.json: the folder's URL-encoded name is all there is
    assert g["cwd"] == "/home/dev/src/mystery"
    assert shapes(events_of(hand_bank, G)) == [("user", "text"), ("assistant", "text")]


def _copy(tmp: Path) -> Path:
    tree = tmp / "tree"
    shutil.copytree(HAND, tree)
    return tree


def test_rewritten_summary_changes_facts_not_events(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    bank, _ = _scan(tmp_path, tree)
    before = [(e["uid"], e["content_hash"]) for e in events_of(bank, A)]
    summary_path = tree / A_DIR.relative_to(HAND) / "summary.json"
    data = orjson.loads(summary_path.read_bytes())
    data.update(generated_title="CSV: keep empty fields", title_is_manual=True, current_model_id="grok-4.5-mini",
                last_active_at="2026-08-17T11:30:00Z")
    summary_path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    _, problems = _scan(tmp_path, tree)
    session = session_of(bank, A)
    assert problems == 0
    assert (session["title"], session["title_source"], session["model"]) == (
        "CSV: keep empty fields", "custom", "grok-4.5-mini")
    assert session["updated_at"] == "2026-08-17T11:30:00.000Z"
    assert [(e["uid"], e["content_hash"]) for e in events_of(bank, A)] == before


def test_unknown_update_kinds_are_drift(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    updates = tree / A_DIR.relative_to(HAND) / "updates.jsonl"
    with updates.open("ab") as out:
        out.write(b'{"timestamp":1786000000,"method":"_x.ai/session/update","params":{"sessionId":"' + A.encode()
                  + b'","update":{"sessionUpdate":"hologram_projected","power":9}}}\n')
        out.write(b'{"timestamp":1786000001,"method":"x.ai/other","params":{}}\n')
        out.write(b'{"timestamp":1786000002,"method":"session/update","params":{"sessionId":"' + A.encode()
                  + b'","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"still here"},'
                  b'"_meta":{"promptIndex":3}}}}\n')
    bank, problems = _scan(tmp_path, tree)
    assert problems == 2
    with open_bank(bank) as b:
        drift = b.harness_stats()[NAME]["drift"]
    assert set(drift) == {"sessionUpdate='hologram_projected'", "method='x.ai/other'"}
    assert events_of(bank, A)[-1]["text"] == "still here"


def test_appended_lines_keep_uids(tmp_path: Path, hand_bank: Path) -> None:
    tree = _copy(tmp_path)
    updates = tree / A_DIR.relative_to(HAND) / "updates.jsonl"
    lines = updates.read_bytes().splitlines(keepends=True)
    updates.write_bytes(b"".join(lines[:10]))  # up to search_replace, before its input arrived
    bank, _ = _scan(tmp_path, tree)
    early = next(e for e in events_of(bank, A) if e["tool_name"] == "search_replace")
    assert early["tool_input"] is None
    updates.write_bytes(b"".join(lines))
    _scan(tmp_path, tree)
    assert [e["uid"] for e in events_of(bank, A)] == [e["uid"] for e in events_of(hand_bank, A)]
    late = next(e for e in events_of(bank, A) if e["tool_name"] == "search_replace")
    assert late["tool_input"]["file_path"] == "src/csv.py" and late["seq"] == early["seq"]


def test_grok_home_moves_the_root(tmp_path: Path, registered: Harness) -> None:
    assert grok.roots({}, tmp_path) == [tmp_path / ".grok"]
    assert grok.roots({"GROK_HOME": "/srv/grok"}, tmp_path) == [Path("/srv/grok")]
    assert grok.roots({"GROK_HOME": ""}, tmp_path) == [tmp_path / ".grok"]
    (tmp_path / "home").mkdir()
    moved = _copy(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "GROK_HOME": str(moved)}
    assert existing_roots(registered, env, tmp_path / "home") == [moved]
    (tmp_path / "home" / ".grok").symlink_to(moved, target_is_directory=True)
    assert existing_roots(registered, {"HOME": str(tmp_path / "home")}, tmp_path / "home") == [
        tmp_path / "home" / ".grok"]


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/r/sessions/p/s1/updates.jsonl"), PurePath("/r"), "updates")
    raw = b'{"method":[1]}'
    batch = grok.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "record of unexpected shape: an array where text or a number was expected")]


def test_tool_calls_without_id_are_each_kept() -> None:
    """Two calls with no ``id`` in one chat_history row (grok names every call): each is its own event
    under the row's uid and its place, not one ``call:None`` that the second replaces."""
    row = {"type": "assistant", "content": "", "model_id": "grok-4.5",
           "tool_calls": [{"name": "read_file", "arguments": '{"target_file":"a.py"}'},
                          {"name": "read_file", "arguments": '{"target_file":"b.py"}'}]}
    ref = SourceRef(PurePath("/r/sessions/p/s1/chat_history.jsonl"), PurePath("/r"), "chat")
    batch = grok.parse(ref, [Record(1, orjson.dumps(row))], {})
    calls = [e for e in batch.events if e.kind == "tool_call"]
    assert [(e.tool_call_id, e.tool_input) for e in calls] == [
        (None, {"target_file": "a.py"}), (None, {"target_file": "b.py"})]
    assert len({e.uid for e in calls}) == 2 and batch.state.get("calls", {}) == {}


@pytest.mark.parametrize("reason", ["error", "rate_limit"])
def test_a_turn_that_ended_in_an_error_is_failed_not_complete(reason: str) -> None:
    from pathlib import PurePath

    import orjson

    from harvester.parsers import grok
    from harvester.parsers.base import Record, SourceRef

    sid = "019f7a10-5d6e-7f80-9a1b-2c3d4e5f6a99"
    line = {"timestamp": 1786963237, "method": "_x.ai/session/update", "params": {"sessionId": sid, "update": {
        "sessionUpdate": "turn_completed", "prompt_id": "p-0", "stop_reason": reason}}}
    ref = SourceRef(PurePath(f"/g/sessions/x/{sid}/updates.jsonl"), PurePath("/g"), "updates")
    batch = grok.parse(ref, [Record(1, orjson.dumps(line))], {})
    assert batch.sessions[sid].meta["last_turn"] == "failed"
