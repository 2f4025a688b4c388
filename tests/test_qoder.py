"""Qoder CLI: what the fixtures must read as (fixtures/qoder/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.capture.sources import discover
from harvester.parsers import qoder
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

HAND = FIXTURES / "qoder" / "hand"
NAME = qoder.NAME
A, B, C = (f"3f6a1c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2{n}" for n in (1, 2, 3))
REPO = "/home/dev/src/demo-repo"
HARNESS = Harness(NAME, qoder.roots, qoder.SOURCES, qoder.parse, "Qoder CLI", qoder.PROCESSES)


def _bank(tmp: Path) -> Path:
    home, bank = tmp / "home", tmp / "bank.sqlite"
    home.mkdir()
    (home / ".qoder").symlink_to(HAND, target_is_directory=True)
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_roots_cover_the_cli_and_the_ides_shared_cache() -> None:
    home = Path("/home/u")
    found = qoder.roots({"APPDATA": "C:/Users/u/AppData/Roaming"}, home)
    assert found[:2] == [home / ".qoder/projects", home / ".qoderwork/projects"]
    assert home / ".config/Qoder/SharedClientCache/cli/projects" in found
    assert home / "Library/Application Support/Qoder/SharedClientCache/cli/projects" in found
    assert Path("C:/Users/u/AppData/Roaming/Qoder/SharedClientCache/cli/projects") in found


def test_sessions_flat_files_and_subagents_are_sources_sidecars_are_not() -> None:
    found = sorted(str(f.path.relative_to(HAND / "projects")) for f in discover(HARNESS, [HAND / "projects"]))
    assert found == [f"-home-dev-src-demo-repo/{A}.jsonl", f"-home-dev-src-demo-repo/{A}/subagents/agent-123.jsonl",
                     f"-home-dev-src-demo-repo/{B}.jsonl", f"{C}.jsonl"]


def test_session_json_gives_title_fork_and_working_dir(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    assert {s["native_id"] for s in sessions_of(bank)} == {A, B, C, f"{A}:agent-123"}
    a, b, c = (session_of(bank, x) for x in (A, B, C))
    assert (a["title"], a["parent_native_id"]) == ("Summarise the notes", None)
    assert (b["title"], b["parent_native_id"], b["parent_kind"]) == ("Forked work", A, "fork")
    assert (c["title"], c["cwd"], c["parent_native_id"]) == ("Greeting", "/home/dev/src/other-repo", B)


def test_subagents_link_to_their_session(tmp_path: Path) -> None:
    bank = _bank(tmp_path)
    sub = session_of(bank, f"{A}:agent-123")
    assert (sub["parent_native_id"], sub["parent_kind"], sub["cwd"]) == (A, "subagent", REPO)
    assert [e["tool_name"] for e in events_of(bank, f"{A}:agent-123") if e["kind"] == "tool_call"] == ["Read"]


def test_a_half_written_sidecar_is_ignored_and_records_still_read() -> None:
    ref = SourceRef(PurePath("/r/p/s.jsonl"), PurePath("/r"), "main", b'{"title": "Par')
    line = {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": "hi"}}
    batch = qoder.parse(ref, [Record(1, orjson.dumps(line))], {})
    assert [e.text for e in batch.events] == ["hi"]
    assert batch.sessions["s"].title == "hi"


def test_unknown_record_types_are_drift() -> None:
    ref = SourceRef(PurePath("/r/p/s.jsonl"), PurePath("/r"))
    batch = qoder.parse(ref, [Record(1, b'{"type": "qoder-telemetry", "uuid": "x"}')], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"]


def test_no_file_is_both_claude_codes_and_qoders(tmp_path: Path) -> None:
    from harvester.parsers import claude_code
    home = tmp_path
    claude = set(claude_code.roots({}, home))
    assert not claude & set(qoder.roots({}, home))
    assert all(not any(q.is_relative_to(c) or c.is_relative_to(q) for c in claude) for q in qoder.roots({}, home))
