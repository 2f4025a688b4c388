"""iFlow CLI: what the fixtures must read as (fixtures/iflow/SOURCE.md), the real sample included."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson
import pytest

from harvester.capture.sources import discover
from harvester.parsers import iflow
from harvester.parsers.base import Harness, Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of, shapes

HAND = FIXTURES / "iflow" / "hand"
REAL = FIXTURES / "iflow" / "real" / "agentsview-sample"
NAME = iflow.NAME
A = "session-7a1f0c2e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"  # a burst of streaming snapshots, a failed call
B = "session-9c2e1d3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f"  # resumed: its first record names A's sessionId
SAMPLE = "session-5de701fc-7454-4858-a249-95cac4fd3b51"


def _bank(tmp: Path, tree: Path) -> Path:
    home, bank = tmp / "home", tmp / "bank.sqlite"
    home.mkdir()
    (home / ".iflow").symlink_to(tree, target_is_directory=True)
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_roots_are_the_one_default_place() -> None:
    assert iflow.roots({}, Path("/home/u")) == [Path("/home/u/.iflow/projects")]


def test_only_session_files_are_sources(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    for name in ("session-x.jsonl", "other.jsonl", "session-y.json"):
        (tmp_path / "p" / name).write_text("")
    harness = Harness(NAME, iflow.roots, iflow.SOURCES, iflow.parse, "iFlow CLI", iflow.PROCESSES)
    assert [f.path.name for f in discover(harness, [tmp_path])] == ["session-x.jsonl"]


def test_streaming_snapshots_keep_each_call_once(tmp_path: Path) -> None:
    bank = _bank(tmp_path, HAND)
    events = events_of(bank, A)
    calls = [e["tool_call_id"] for e in events if e["kind"] == "tool_call"]
    assert calls == ["call_aaa", "call_bbb"]  # three snapshot lines, two calls
    assert shapes(events) == [("user", "text"), ("assistant", "text"), ("assistant", "tool_call"),
                              ("assistant", "tool_call"), ("tool", "tool_result"), ("tool", "tool_result"),
                              ("assistant", "text"), ("user", "text"), ("assistant", "text")]
    failed = [e for e in events if e["kind"] == "tool_result" and e["is_error"]]
    assert [e["tool_name"] for e in failed] == ["read_file"]
    session = session_of(bank, A)
    assert (session["cwd"], session["branch"], session["model"]) == ("/home/dev/src/demo-repo", "main", "glm-4.7")
    assert not (session["meta"] or {}).get("last_turn")  # iFlow writes no end of turn: nothing claimed


def test_a_resumed_session_points_at_the_one_it_continues(tmp_path: Path) -> None:
    session = session_of(_bank(tmp_path, HAND), B)
    assert (session["parent_native_id"], session["parent_kind"]) == (A, "fork")


def test_the_real_sample_reads_every_call_once(tmp_path: Path) -> None:
    bank = _bank(tmp_path, REAL)
    events = events_of(bank, SAMPLE)
    calls = [e["tool_call_id"] for e in events if e["kind"] == "tool_call"]
    results = [e["tool_call_id"] for e in events if e["kind"] == "tool_result"]
    assert len(calls) == len(set(calls)) == 6  # 13 tool_use blocks over 10 snapshot lines
    assert sorted(calls) == sorted(results)
    session = session_of(bank, SAMPLE)
    assert session["parent_native_id"] is None  # sessionId is the file's own stem
    assert session["cwd"] == "C:\\exp\\docker-image-retagger"


def test_unknown_record_types_are_drift() -> None:
    ref = SourceRef(PurePath("/r/p/session-z.jsonl"), PurePath("/r"))
    lines = [{"type": "telemetry", "uuid": "u1"}, {"type": "user", "uuid": "u2", "message": {"content": "hi"}}]
    batch = iflow.parse(ref, [Record(n, orjson.dumps(x)) for n, x in enumerate(lines, 1)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"]
    assert [e.text for e in batch.events] == ["hi"]


@pytest.mark.parametrize("split", [1, 2, 3])
def test_a_call_split_across_batches_is_still_kept_once(split: int) -> None:
    ref = SourceRef(PurePath("/r/p/session-z.jsonl"), PurePath("/r"))
    raw = (HAND / "projects" / "demo-repo" / f"{A}.jsonl").read_bytes().splitlines()[:4]
    records = [Record(n, line) for n, line in enumerate(raw, 1)]
    state: dict = {}
    first = iflow.parse(ref, records[:split], state)
    second = iflow.parse(ref, records[split:], orjson.loads(orjson.dumps(state)))
    calls = [e.tool_call_id for e in first.events + second.events if e.kind == "tool_call"]
    assert calls == ["call_aaa", "call_bbb"]


@pytest.mark.parametrize("tree", [HAND, REAL], ids=["hand", "real"])
def test_its_all_zero_usage_is_no_usage_recorded(tmp_path: Path, tree: Path) -> None:
    """iFlow writes Claude Code's ``usage`` on every assistant line, but all zeros (it records none): `harvester
    usage` must not list its responses as costing nothing (a known model would show $0.00), and the usage table
    holds no row for them (issue 27: what is not known is never shown as zero)."""
    from click.testing import CliRunner

    from harvester.cli import cli

    bank = _bank(tmp_path, tree)
    done = CliRunner().invoke(cli, ["--bank", str(bank), "usage", "--json", "--timezone", "UTC"])
    assert done.exit_code == 0, done.output
    assert orjson.loads(done.output)["rows"] == []
    listed = CliRunner().invoke(cli, ["--bank", str(bank), "sessions", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [s["usage"] for s in orjson.loads(listed.output)] == [None] * len(orjson.loads(listed.output))
