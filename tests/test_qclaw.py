"""QClaw: what the hand-written store must read as (fixtures/qclaw/hand/README.md)."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.helpers import FIXTURES, events_of, scan, session_of, sessions_of

NAME = "qclaw"
LIVE, RESET = "5a6b7c8d-0000-4000-8000-0000000000q1", "5a6b7c8d-0000-4000-8000-0000000000q0"
# What agentsview keeps of both sessions (its qclaw.go; each found in agentsview 0.46.1's database):
# harvester must keep them too.
KEPT = ("帮我看看 demo-repo 最近一次构建为什么失败", "Read the last CI log first.", "gh run view --log-failed",
        "npm ERR! missing script: build:prod", "没有 build:prod 脚本", "list the open pull requests",
        "Two open pull requests")


def _scan(tmp_path: Path, tree: Path = FIXTURES / "qclaw" / "hand") -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".qclaw").symlink_to(tree, target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_a_session_and_one_moved_aside_by_reset(tmp_path: Path) -> None:
    bank = _scan(tmp_path)
    assert sorted(s["native_id"] for s in sessions_of(bank)) == [RESET, LIVE]  # sessions.json is none
    events = events_of(bank, LIVE)
    assert [(e["role"], e["kind"]) for e in events] == [
        ("system", "meta"), ("user", "text"), ("assistant", "thinking"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "text")]
    assert events[1]["text"] == "帮我看看 demo-repo 最近一次构建为什么失败"  # the channel envelope in meta
    assert events[3]["text"] == "exec: gh run view --log-failed" and events[4]["is_error"]
    assert events[5]["usage"] == {"in": 3100, "out": 40, "cache_read": 1200}
    live = session_of(bank, LIVE)
    assert (live["cwd"], live["model"]) == ("/home/dev/src/demo-repo", "hunyuan-t1")
    assert [e["text"] for e in events_of(bank, RESET) if e["role"] == "user"] == ["list the open pull requests"]


def test_an_archive_of_a_history_already_read_adds_nothing(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    sessions = tree / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    live = (FIXTURES / "qclaw" / "hand" / "agents" / "main" / "sessions" / f"{LIVE}.jsonl").read_bytes()
    (sessions / f"{LIVE}.jsonl").write_bytes(live)
    (sessions / f"{LIVE}.jsonl.deleted.2026-11-05T00-00-00.000Z").write_bytes(live)
    (sessions / f"{LIVE}.jsonl.full.bak").write_bytes(live)
    bank = _scan(tmp_path, tree)
    assert [s["native_id"] for s in sessions_of(bank)] == [LIVE]
    assert len(events_of(bank, LIVE)) == 6


def test_every_text_agentsview_keeps_is_kept(tmp_path: Path) -> None:
    bank = _scan(tmp_path)
    held = [e["text"] + orjson.dumps(e["tool_input"]).decode() for s in (LIVE, RESET) for e in events_of(bank, s)]
    assert [t for t in KEPT if not any(t in h for h in held)] == []


def test_unknown_entries_are_drift_in_an_archive_too() -> None:
    from pathlib import PurePath

    from harvester.parsers import qclaw
    from harvester.parsers.base import Record, SourceRef
    ref = SourceRef(PurePath(f"/h/.qclaw/agents/main/sessions/{LIVE}.jsonl.reset.2026-11-05T00-00-00.000Z"),
                    PurePath("/h/.qclaw/agents"), "openclaw")
    lines = [{"type": "session", "version": 3, "id": LIVE, "timestamp": "2026-11-04T02:00:00.000Z"},
             {"type": "hologram", "id": "x1", "parentId": None, "timestamp": "2026-11-04T02:00:01.000Z"}]
    batch = qclaw.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(lines)], {})
    assert [p.kind for p in batch.problems] == ["unknown_type"] and set(batch.sessions) == {LIVE}
