"""DeepSeek Harness: what the fixtures must read as (fixtures/deepseek_harness/hand/README.md).

The frame-chained session is kept twice in its folder: ``session.jsonl`` (the text, reviewable) and
``session.jsonl.zstd`` (the same lines in zstd frames, built by :func:`build_frames`). The
compressed one shadows the text when the tree is scanned; a test checks that the two agree.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path, PurePath

import orjson
import pytest
import zstandard

from harvester import parsers
from harvester.bank import open_bank
from harvester.capture.sources import discover
from harvester.parsers import deepseek_harness
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, copy_tree, event_identities, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "deepseek_harness" / "hand"
PROJECT = "--home-dev-src-demo-repo--"
MAIN = "session-6b1f0a52-3c4d-4e8f-9a17-2d5c8e0b4f31"  # plain session.jsonl: every transcript record
CHILD = "0f3a9c2e-7b14-4d6a-8e25-c91b7d4a6e08"  # subagent MAIN started (call_05)
FORK = "session-a83d5e17-9f2b-4c60-b1e4-57c0d2f8a916"  # fork of MAIN, frame-chained, last turn open
HEADLESS = "headless:ci#42"  # no cwd, an id dsh escapes in its folder name, a failed request
FORK_DIR = HAND / "sessions" / PROJECT / FORK
HARNESS = Harness(deepseek_harness.NAME, deepseek_harness.roots, deepseek_harness.SOURCES, deepseek_harness.parse,
                  "DeepSeek Harness", deepseek_harness.PROCESSES)


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setitem(parsers.HARNESSES, deepseek_harness.NAME, HARNESS)
        yield


# -- the frame builder: how session.jsonl.zstd is made from session.jsonl --------------------
FRAME_ENDS = (b'{"type":"step/end"', b'{"type":"turn/end"')


def frames_of(text: bytes) -> list[bytes]:
    """dsh writes the header line as a frame of its own, then one frame per durable append batch.
    Here a batch ends after each step/end or turn/end line (the loop's commit points)."""
    lines = text.splitlines(keepends=True)
    frames, batch = [lines[0]], b""
    for line in lines[1:]:
        batch += line
        if line.startswith(FRAME_ENDS):
            frames.append(batch)
            batch = b""
    return frames + ([batch] if batch else [])


def build_frames(text: bytes) -> bytes:
    compressor = zstandard.ZstdCompressor(level=3, write_checksum=True)  # dsh: checksummed, default level
    return b"".join(compressor.compress(frame) for frame in frames_of(text))


def decoded_frames(data: bytes) -> list[bytes]:
    frames, position = [], 0
    while position < len(data):
        params = zstandard.get_frame_parameters(data[position:])
        assert params.has_checksum
        reader = zstandard.ZstdDecompressor().decompressobj()
        frames.append(reader.decompress(data[position:]))
        assert reader.eof
        position = len(data) - len(reader.unused_data)
    return frames


# -- the hand tree --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hand_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("dsh")
    bank = tmp / "bank.sqlite"
    report = scan(tmp, bank, (deepseek_harness.NAME,), env={"HOME": str(tmp), "DSH_HOME": str(HAND)})
    assert report.harnesses[deepseek_harness.NAME].problems == 0
    return bank



def _rows(bank: Path, sid: str) -> list[tuple]:
    return [(e["role"], e["kind"], e["text"][:36], e["tool_name"], e["tool_call_id"], e["is_error"])
            for e in events_of(bank, sid)]


def test_every_session_is_read(hand_bank: Path) -> None:
    assert {s["native_id"] for s in sessions_of(hand_bank)} == {MAIN, CHILD, FORK, HEADLESS}


def test_main_session(hand_bank: Path) -> None:
    s = session_of(hand_bank, MAIN)
    assert (s["cwd"], s["title"], s["model"], s["parent_native_id"]) == (
        "/home/dev/src/demo-repo", "Fix CSV export dropping the last row", "deepseek-v4-pro", None)
    assert s["meta"]["last_turn"] == "aborted" and s["meta"]["agent_preset"] == "standard"
    assert _rows(hand_bank, MAIN) == [
        ("system", "text", "<runtime-context>\ncwd: /home/dev/src", None, None, False),
        ("system", "text", "# AGENTS.md (/home/dev/src/demo-repo", None, None, False),
        ("system", "text", "Skills available:\n- release-notes: D", None, None, False),
        ("user", "text", "The CSV export drops the last row. F", None, None, False),
        ("assistant", "thinking", "The bug report points at the export ", None, None, False),
        ("assistant", "text", "Let me run the export tests and read", None, None, False),
        ("assistant", "tool_call", "bash: python -m pytest tests/test_ex", "bash", "call_01", False),
        ("assistant", "tool_call", "read: src/exporter.py", "read", "call_02", False),
        ("system", "meta", "approval asked for bash: bash writes", None, None, False),
        ("system", "meta", "approval for bash: allowed-once", None, None, False),
        ("tool", "tool_result", "F.\n1 failed, 1 passed in 0.12s\nFAILE", "bash", "call_01", False),
        ("tool", "tool_result", "ENOENT: no such file or directory, o", "read", "call_02", True),
        ("assistant", "text", "The writer slices `rows[:-1]`, which", None, None, False),
        ("assistant", "tool_call", "edit: src/export.py", "edit", "call_03", False),
        ("assistant", "tool_call", 'todo_write: {"todos":[{"content":"Fi', "todo_write", "call_04", False),
        ("tool", "tool_result", "Edited src/export.py (1 replacement)", "edit", "call_03", False),
        ("tool", "tool_result", "Todo list updated (2 items).", "todo_write", "call_04", False),
        ("assistant", "text", "Fixed: `export_csv` no longer drops ", None, None, False),
        ("user", "text", "/plan on", None, None, False),
        ("system", "meta", "plan mode: on", None, None, False),
        ("system", "meta", "Plan mode is on.", None, None, False),
        ("system", "meta", "sandbox mode: workspace-write", None, None, False),
        ("system", "meta", "approval policy: ask", None, None, False),
        ("system", "meta", "permission preset: ask-before-writes", None, None, False),
        ("system", "meta", "goal create: Ship the CSV fix with a", None, None, False),
        ("user", "text", "[image: export.png 1280x720]\nHere is", None, None, False),
        ("assistant", "tool_call", "subagent: Run the export tests", "subagent", "call_05", False),
        ("tool", "tool_result", f"Subagent {CHILD}"[:36], "subagent", "call_05", False),
        ("assistant", "tool_call", "run_code: hits = await tools.grep({p", "run_code", "call_06", False),
        ("assistant", "tool_call", "grep: def export_csv", "grep", "call_06:code:1", False),
        ("tool", "tool_result", "src/export.py:12:def export_csv(rows", "grep", "call_06:code:1", False),
        ("tool", "tool_result", "src/export.py:12:def export_csv(rows", "run_code", "call_06", False),
        ("assistant", "text", "Added `test_last_row_kept`; the suba", None, None, False),
        ("user", "meta", "Good catch on the off-by-one.", None, None, False),
        ("user", "text", "/compact", None, None, False),
        ("system", "compaction", "Summary: the user reported the CSV e", None, None, False),
        ("system", "meta", "Compacted 4 messages.", None, None, False),
        ("user", "text", "Also export as TSV.", None, None, False),
        ("assistant", "text", "Sure, I'll add a `delimiter` paramet", None, None, False),
        ("system", "meta", "turn aborted (user)", None, None, False),
    ]
    events = events_of(hand_bank, MAIN)
    # Only the human's words are filed as the user's (injected context is system, marked).
    assert all((e["meta"] or {}).get("injected") for e in events[:3])
    # Usage once per model response (on its first event), with dsh's disjoint counts.
    assert next(e["usage"] for e in events if e["usage"]) == {"in": 1830, "out": 212, "cache_read": 6400,
                                                               "reasoning": 96}
    assert sum(bool(e["usage"]) for e in events) == 7  # 6 responses + the compaction summary
    assert events[-2]["meta"] == {"interrupted": True}


def test_compaction_marks_what_it_replaced(hand_bank: Path) -> None:
    events = events_of(hand_bank, MAIN)
    compacted = [e["text"][:20] for e in events if (e["meta"] or {}).get("compacted") == "cmp-1"]
    assert compacted == ["<runtime-context>\ncw", "# AGENTS.md (/home/d", "Skills available:\n- ",
                         "The CSV export drops"]
    pruned = [e["tool_call_id"] for e in events if (e["meta"] or {}).get("pruned")]
    assert pruned == ["call_01"]  # its full output stays; only the model's context lost it


def test_subagent_is_linked_and_its_task_is_not_the_users(hand_bank: Path) -> None:
    s = session_of(hand_bank, CHILD)
    assert (s["parent_native_id"], s["parent_kind"], s["title"], s["cwd"]) == (
        MAIN, "subagent", "Run the export tests", "/home/dev/src/demo-repo")
    rows = _rows(hand_bank, CHILD)
    assert [r[:2] for r in rows] == [("system", "text"), ("system", "text"), ("assistant", "tool_call"),
                                     ("tool", "tool_result"), ("assistant", "text")]
    task = events_of(hand_bank, CHILD)[1]
    assert task["meta"] == {"injected": True, "from_agent": MAIN} and task["text"].startswith("Run `python")
    assert s["meta"]["last_turn"] == "complete" and s["meta"]["delegation_depth"] == 1


def test_fork_skips_the_copied_history(hand_bank: Path) -> None:
    s = session_of(hand_bank, FORK)
    assert (s["parent_native_id"], s["parent_kind"]) == (MAIN, "fork")
    assert s["title"] == "Instead, make the exporter stream rows so large exports do not load everything."
    assert _rows(hand_bank, FORK) == [
        ("user", "text", "Instead, make the exporter stream ro", None, None, False),
        ("assistant", "thinking", "A generator over the cursor avoids m", None, None, False),
        ("assistant", "text", "I'll turn `export_csv` into a stream", None, None, False),
        ("user", "text", "Now run the full suite.", None, None, False),
        ("assistant", "tool_call", "bash: python -m pytest -q", "bash", "call_f1", False),
    ]
    assert s["meta"]["last_turn"] == "open"  # the tool is still running: live, or abandoned if dsh died
    assert min(int(e["uid"].split(":")[1]) for e in events_of(hand_bank, FORK)) == s["meta"]["seed_length"] + 3
    # The seed is the parent's lines, verbatim (dsh copies events 0..seedLength-1).
    fork_lines = (FORK_DIR / "session.jsonl").read_bytes().splitlines()
    main_lines = (HAND / "sessions" / PROJECT / MAIN / "session.jsonl").read_bytes().splitlines()
    assert fork_lines[1:63] == main_lines[1:63] and b'"seq":78' in fork_lines[63]


def test_headless_session_without_cwd(hand_bank: Path) -> None:
    s = session_of(hand_bank, HEADLESS)
    assert (s["cwd"], s["model"], s["meta"]["agent_preset"]) == (None, "deepseek-v4-flash", "minimal")
    assert _rows(hand_bank, HEADLESS) == [
        ("user", "text", "Summarize CHANGELOG.md in three bull", None, None, False),
        ("system", "meta", "model output not kept: 3 streamed re", None, None, False),
        ("system", "meta", "turn failed: connection reset by pee", None, None, False),
    ]


# -- the two encodings ----------------------------------------------------------------------
def test_committed_frames_match_their_text() -> None:
    text = (FORK_DIR / "session.jsonl").read_bytes()
    assert decoded_frames((FORK_DIR / "session.jsonl.zstd").read_bytes()) == frames_of(text)


def test_plain_and_compressed_forms_give_the_same_uids(tmp_path: Path) -> None:
    readings = []
    for keep in ("session.jsonl", "session.jsonl.zstd"):
        home = tmp_path / keep
        folder = home / "sessions" / PROJECT / FORK
        folder.mkdir(parents=True)
        shutil.copy(FORK_DIR / keep, folder / keep)
        bank = home / "bank.sqlite"
        assert scan(home, bank, (deepseek_harness.NAME,), env={"HOME": str(home), "DSH_HOME": str(home)}).harnesses[
            deepseek_harness.NAME].problems == 0
        readings.append(event_identities(bank))
    assert readings[0] == readings[1] and len(readings[0]) == 5


def test_when_both_forms_exist_the_compressed_one_is_read(hand_bank: Path) -> None:
    found = list(discover(HARNESS, [HAND / "sessions"]))
    forks = [f.path.name for f in found if f.path.parent.name == FORK]
    assert forks == ["session.jsonl.zstd"] and len(found) == 4
    assert len(events_of(hand_bank, FORK)) == 5  # read once


def test_torn_last_frame_waits_and_completes_once(tmp_path: Path) -> None:
    home, bank = tmp_path, tmp_path / "bank.sqlite"
    folder = home / "sessions" / PROJECT / FORK
    folder.mkdir(parents=True)
    text = (FORK_DIR / "session.jsonl").read_bytes()
    more = [
        {"type": "tool/result", "seq": 89, "time": 1787220330000, "data": {"turn": 3, "step": 1, "message": {
            "source": {"kind": "tool", "callId": "call_f1"}, "content": [{"type": "tool-result", "toolCallId": "call_f1",
                                                                         "content": [{"type": "text", "text": "41 passed"}],
                                                                         "isError": False}],
            "role": "user", "id": "r-f1"}}, "surfaceOp": "append"},
        {"type": "step/end", "seq": 90, "time": 1787220330400, "data": {"turn": 3, "step": 1}},
        {"type": "turn/end", "seq": 91, "time": 1787220330800, "data": {"turn": 3, "reason": {"kind": "completed"}}},
    ]
    tail = zstandard.ZstdCompressor(write_checksum=True).compress(b"".join(orjson.dumps(r) + b"\n" for r in more))
    store = folder / "session.jsonl.zstd"
    store.write_bytes(build_frames(text) + tail[: len(tail) // 2])  # dsh is mid-append (or died here)
    env = {"HOME": str(home), "DSH_HOME": str(home)}
    assert scan(home, bank, (deepseek_harness.NAME,), env=env).events_added == 5
    assert scan(home, bank, (deepseek_harness.NAME,), env=env).events_added == 0  # the torn frame waits
    with store.open("ab") as f:
        f.write(tail[len(tail) // 2:])
    report = scan(home, bank, (deepseek_harness.NAME,), env=env)
    assert (report.events_added, report.bytes_read) == (1, len(tail))  # only the completed frame was read
    assert scan(home, bank, (deepseek_harness.NAME,), env=env).events_added == 0
    assert session_of(bank, FORK)["meta"]["last_turn"] == "complete"
    assert [e["text"] for e in events_of(bank, FORK)][-1] == "41 passed"


# -- drift and roots ------------------------------------------------------------------------
def _drift(home: Path, name: str, lines: list[bytes]) -> tuple[int, dict]:
    folder = home / "sessions" / "_no-cwd" / "s-drift"
    folder.mkdir(parents=True)
    (folder / name).write_bytes(b"".join(line + b"\n" for line in lines))
    bank = home / "bank.sqlite"
    report = scan(home, bank, (deepseek_harness.NAME,), env={"HOME": str(home), "DSH_HOME": str(home)})
    db = open_bank(bank)
    try:
        drift = db.harness_stats()[deepseek_harness.NAME]["drift"]
    finally:
        db.close()
    return report.harnesses[deepseek_harness.NAME].problems, drift


def test_an_unknown_record_type_is_drift(tmp_path: Path) -> None:
    header = b'{"type":"session","version":0,"id":"s-drift","createdAt":1787297400000,"delegationDepth":0}'
    unknown = b'{"type":"mystery/thing","seq":0,"time":1787297400100,"data":{},"ignorable":true}'
    prompt = (b'{"type":"user/message","seq":1,"time":1787297400200,"data":{"content":[{"type":"text","text":"hi"}],'
              b'"source":{"kind":"user"},"role":"user","id":"m1"},"surfaceOp":"append"}')
    assert _drift(tmp_path, "session.jsonl", [header, unknown, prompt]) == (1, {"type='mystery/thing'": 1})
    assert [e["text"] for e in events_of(tmp_path / "bank.sqlite")] == ["hi"]  # the rest still imports


def test_a_later_format_generation_is_drift_not_misread(tmp_path: Path) -> None:
    header = b'{"type":"session","version":3,"id":"s-drift","createdAt":1787297400000,"isSeeded":false}'
    renamed = b'{"type":"system/message","seq":0,"time":1787297400100,"data":{}}'
    assert _drift(tmp_path, "session.v3.jsonl", [header, renamed]) == (
        1, {"session format version=3 (this parser reads 0)": 1})
    assert events_of(tmp_path / "bank.sqlite") == []


def test_roots_follow_dsh_home(tmp_path: Path) -> None:
    assert deepseek_harness.roots({}, tmp_path) == [tmp_path / ".dsh" / "sessions"]
    assert deepseek_harness.roots({"DSH_HOME": "  "}, tmp_path) == [tmp_path / ".dsh" / "sessions"]
    assert deepseek_harness.roots({"DSH_HOME": "/srv/dsh"}, tmp_path) == [Path("/srv/dsh/sessions")]
    assert deepseek_harness.roots({"DSH_HOME": "~/agents/dsh"}, tmp_path)[0].name == "sessions"


def test_dsh_home_moves_the_root(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    shutil.copytree(HAND, moved)
    bank = tmp_path / "bank.sqlite"
    default = scan(tmp_path, bank, (deepseek_harness.NAME,), env={"HOME": str(tmp_path)})
    assert default.events_added == 0  # nothing at ~/.dsh
    moved_scan = scan(tmp_path, bank, (deepseek_harness.NAME,), env={"HOME": str(tmp_path), "DSH_HOME": str(moved)})
    assert len(moved_scan.harnesses[deepseek_harness.NAME].sessions) == 4


# -- what the real runs (real/CAPTURE.md) corrected ---------------------------------------------
def _session_of(tmp_path: Path, lines: list[bytes]) -> tuple[dict, list[dict]]:
    folder = tmp_path / "sessions" / "_no-cwd" / "s-settings"
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path, bank, (deepseek_harness.NAME,), env={"HOME": str(tmp_path), "DSH_HOME": str(tmp_path)})
    (session,) = sessions_of(bank)
    return session, events_of(bank)


def _record(kind: str, seq: int, data: dict) -> bytes:
    return orjson.dumps({"type": kind, "seq": seq, "time": 1787297400000 + seq, "data": data})


def test_starting_settings_are_facts_and_a_later_switch_is_a_line(tmp_path: Path) -> None:
    header = b'{"type":"session","version":0,"id":"s-settings","createdAt":1787297400000,"delegationDepth":0}'
    prompt = {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "m1"}
    session, events = _session_of(tmp_path, [
        header,
        _record("permission/preset", 0, {"preset": "workspace-write"}),
        _record("sandbox/mode", 1, {"mode": "workspace-write"}),
        _record("approval/policy", 2, {"policy": "ask"}),
        _record("turn/start", 3, {}),
        _record("user/message", 4, prompt),
        _record("approval/policy", 5, {"policy": "never"}),
    ])
    assert {k: session["meta"].get(k) for k in ("permission_preset", "sandbox_mode", "approval_policy")} == {
        "permission_preset": "workspace-write", "sandbox_mode": "workspace-write", "approval_policy": "never"}
    assert [e["text"] for e in events] == ["hi", "approval policy: never"]


def test_a_continuable_childs_descriptor_names_its_model(tmp_path: Path) -> None:
    header = (b'{"type":"session","version":0,"id":"s-settings","createdAt":1787297400000,'
              b'"parentSession":"session-p","origin":"subagent","delegationDepth":1}')
    descriptor = {"version": 2, "mode": "continuable", "provider": "spawn", "label": "Review the diff",
                  "agentProvider": "deepseek-official", "agentModel": "deepseek-v4-pro"}
    session, _ = _session_of(tmp_path, [header, _record("subagent/descriptor", 0, descriptor)])
    assert session["model"] == "deepseek-v4-pro"
    assert (session["title"], session["meta"]["subagent_mode"]) == ("Review the diff", "continuable")


def test_a_real_subagent_is_linked_and_its_delegated_settings_are_no_lines(tmp_path: Path) -> None:
    home = copy_tree(FIXTURES / "deepseek_harness" / "real" / "subagent", tmp_path / "dsh")
    bank = tmp_path / "bank.sqlite"
    scan(tmp_path, bank, (deepseek_harness.NAME,), env={"HOME": str(tmp_path), "DSH_HOME": str(home)})
    by_parent = {s["parent_native_id"] is not None: s for s in sessions_of(bank)}
    child, parent = by_parent[True], by_parent[False]
    assert child["parent_native_id"] == parent["native_id"]
    assert (child["title"], child["meta"]["sandbox_mode"]) == ("Fake subagent task", "workspace-write")
    assert not any(e["text"].startswith(("sandbox mode", "approval policy")) for e in events_of(bank))


def test_a_record_of_unexpected_shape_is_described_in_words() -> None:
    """Problem details are read by people (``status``): what the record held, in words, never a repr."""
    ref = SourceRef(PurePath("/s/p/s1/session.jsonl"), PurePath("/s"))
    raw = b'{"type":"user/message","seq":2,"data":5}'
    batch = deepseek_harness.parse(ref, [Record(1, raw)], {})
    assert [(p.kind, p.line, p.detail) for p in batch.problems] == [
        ("malformed", 1, "user/message record of unexpected shape: a number where an object was expected")]
