"""The handoff brief keeps what matters, in any budget (issue 24, item 3): how the session ended and the last
exchange, the files changed with their diff stat, the commands that failed and the tool errors with the line
that says why, the latest asks, then the files read (counted); paths relative to the repository; every cut
naming the command (`harvester show ID --around N`) or the tool call (`get_events(session, start=N)`) that
shows the rest.

Golden files at 2, 8 and 32 KB pin the brief of a long session shaped like real ones: 25 turns of Claude Code
2.1.197 as bench/gen_claude.py writes them (edits, failing commands, tool errors, subagents, a compaction),
from a fixed seed and a fixed vocabulary (fixtures/recall/long-session-words.txt: the generator's default one is
this repository's words, which change with it). ``HARVESTER_REGEN=1`` rewrites them after a deliberate change.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from harvester.bank import open_bank
from harvester.bank.scope import EVERYTHING
from harvester.cli import cli
from harvester.recall import brief
from harvester.recall.actions import actions_of, diff_stat, error_line
from harvester.recall.views import Recall
from tests.helpers import FIXTURES, scan

EXPECTED = FIXTURES / "recall" / "expected"
REGEN = bool(os.environ.get("HARVESTER_REGEN"))
REPO = "/home/dev/src/shop"  # where the long session was recorded (not on this machine)
SEED = 44  # 25 turns: 156 tool calls, 22 files changed, 7 failed commands, 2 other tool errors, a compaction


def long_session(home: Path, seed: int = SEED, turns: int = 25) -> str:
    """A long Claude Code session (and its subagents' files) under ``home``, as bench/gen_claude.py writes it;
    its id."""
    from bench.gen_claude import ClaudeSession, _listing_templates, slug
    from bench.gen_text import Writing

    words = [line.split(" ") for line in (FIXTURES / "recall" / "long-session-words.txt").read_text().splitlines()]
    writing = Writing(random.Random(seed), words=([w for w, _ in words], [float(n) for _, n in words]))
    session = ClaudeSession(writing, REPO, _listing_templates())
    session.write(turns=turns, resumed=False)
    folder = home / ".claude" / "projects" / slug(REPO)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session.sid}.jsonl").write_bytes(b"\n".join(session.lines) + b"\n")
    for agent_id, lines, meta in session.subagents:
        (folder / session.sid / "subagents").mkdir(parents=True, exist_ok=True)
        (folder / session.sid / "subagents" / f"agent-{agent_id}.jsonl").write_bytes(lines)
        (folder / session.sid / "subagents" / f"agent-{agent_id}.meta.json").write_bytes(meta)
    return session.sid


@pytest.fixture(scope="module")
def long(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("handoff")
    home, bank = tmp / "home", tmp / "bank.sqlite"
    sid = long_session(home)
    scan(home, bank, ("claude-code",))
    yield {"home": home, "bank": bank, "id": sid, "tmp": tmp}


def _context(long: dict[str, Any], max_bytes: int, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["--bank", str(long["bank"]), "context", "--repo", REPO, "--session", long["id"],
                                      "--max-bytes", str(max_bytes), *extra], env={"HOME": str(long["home"])})
    assert result.exit_code == 0, result.output
    return result.stdout


def _golden(name: str, text: str) -> None:
    text = re.sub(r'seal="[0-9a-f]{16}\.[0-9a-f]{32}"', 'seal="(nonce.mac)"', text)
    path = EXPECTED / name
    if REGEN:
        path.write_text(text)
    assert path.read_text() == text, f"{name} differs from its golden file (HARVESTER_REGEN=1 rewrites it)"


CUT = re.compile(r"^(?:- … |\*… |\[… )")  # a line that stands for what was left out


def _sections(text: str) -> dict[str, str]:
    return {part.split("\n", 1)[0]: part for part in re.split(r"\n(?=## )", text)}


@pytest.mark.parametrize("kb", [2, 8, 32])
def test_the_brief_of_a_long_session_at_2_8_and_32_kb(long: dict[str, Any], kb: int) -> None:
    text = _context(long, kb * 1024)
    assert len(text.encode()) <= kb * 1024
    _golden(f"handoff-long-{kb}k.md", text)


def test_at_8_kb_the_changed_files_the_failed_commands_and_the_errors_are_there(long: dict[str, Any]) -> None:
    with open_bank(long["bank"]) as bank:
        [s] = [s for s in bank.list_sessions() if s["native_id"] == long["id"]]
        done = actions_of(bank.session_events(s["id"]), None, REPO)
    commands = [f for f in done.failures if f.command is not None]
    errors = [f for f in done.failures if f.command is None]
    assert len(done.changed) >= 10 and len(commands) >= 5 and len(errors) >= 2  # the session is what it should be
    text = _context(long, 8192)
    sections = _sections(text)
    heads = list(sections)
    order = ["## How it ended", "## The last exchange", "## Files changed", "## Failed", "## Earlier asks"]
    assert [next(h for h in heads if h.startswith(o)) for o in order] == [h for h in heads if h.startswith(tuple(order))]
    changed = next(v for k, v in sections.items() if k.startswith("## Files changed"))
    latest_changed = sorted(done.changed.items(), key=lambda item: -item[1].last)[:5]
    for path, change in latest_changed:
        assert f"- `{path}` +{change.added} -{change.removed} (" in changed
    failed = next(v for k, v in sections.items() if k.startswith("## Failed"))
    for f in commands[-3:]:
        assert f"- #{f.seq} `" in failed and f.why in failed and "Exit code" not in f.why
    for f in errors[-2:]:
        assert f"- #{f.seq} {f.tool}" in failed and f.why[:60] in failed
    assert REPO not in changed and REPO not in "".join(line for line in failed.splitlines() if " `" not in line[:12])
    assert "Read `" in failed  # a failed read names its file, relative (a command is quoted as it was run)
    assert re.search(r"^Read \d+ files besides those it changed \(not listed", text, re.M)


def test_every_cut_names_the_command_or_the_call_that_shows_the_rest(long: dict[str, Any]) -> None:
    for kb in (2, 8):
        text = _context(long, kb * 1024)
        cuts = [line for line in text.splitlines() if CUT.match(line)]
        assert len(cuts) >= 3, text
        for line in cuts:
            assert re.search(rf"`harvester show {long['id']} --around \d+`", line), line
        assert "get_events" not in text
    with open_bank(long["bank"]) as bank:
        agent = brief.handoff(Recall(bank, EVERYTHING), long["id"], None, 8192)
    cuts = [line for line in agent.splitlines() if CUT.match(line)]
    assert cuts and all(re.search(rf"`get_events\(session='{long['id']}', start=\d+(, limit=1, full=true)?\)`", line)
                        for line in cuts), cuts
    assert "harvester show" not in agent


def test_the_brief_grows_with_its_budget_and_keeps_its_order(long: dict[str, Any]) -> None:
    small, medium, large = (_context(long, kb * 1024) for kb in (2, 8, 32))
    for text in (small, medium, large):
        assert text.index("## How it ended") < text.index("## The last exchange") < text.index("## Files changed") \
            < text.index("## Failed")
    count = [len(re.findall(r"^- `", t, re.M)) for t in (small, medium, large)]
    assert count[0] < count[1] <= count[2]
    json = orjson.loads(_context(long, 8192, "--json"))
    assert json["brief"] == medium.rstrip("\n") + "\n" or json["brief"].startswith("<harvester-history")


# --- the diff stat, the error line, relative paths ------------------------------------------------------

@pytest.mark.parametrize("tool_input, stat", [
    ({"file_path": "/r/a.py", "old_string": "x = 1\ny = 2\nz = 3", "new_string": "x = 1\ny = 20\nz = 3\nw = 4"},
     {"/r/a.py": (2, 1)}),  # Claude Code Edit: one line changed, one added
    ({"filePath": "b.ts", "oldString": "a\nb", "newString": ""}, {"b.ts": (0, 2)}),  # opencode edit
    ({"file_path": "/r/c.py", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "", "new_string": "c\nd"}]},
     {"/r/c.py": (3, 1)}),  # MultiEdit
    ({"file_path": "/r/d.md", "content": "one\ntwo\nthree\n"}, {"/r/d.md": (3, 0)}),  # Write: all added
    ({"input": "*** Begin Patch\n*** Update File: src/e.py\n@@\n-old\n+new\n+more\n ctx\n*** Add File: f.py\n+x\n"
               "*** End Patch"}, {"src/e.py": (2, 1), "f.py": (1, 0)}),  # Codex apply_patch
    ("*** Begin Patch\n*** Delete File: g.py\n*** End Patch", {"g.py": (0, 0)}),
    ({"file_path": "/r/h.py"}, {}),  # nothing to count from
    ({"pattern": "x"}, {}), (None, {}),
])
def test_diff_stat_counts_the_lines_a_change_adds_and_removes(tool_input: Any, stat: dict) -> None:
    assert diff_stat(tool_input) == stat


@pytest.mark.parametrize("output, why", [
    ("Exit code 1\n===== test session starts =====\ntests/test_a.py F\nFAILED tests/test_a.py::test_x - AssertionError: "
     "bad\n===== 1 failed, 3 passed in 0.2s =====", "FAILED tests/test_a.py::test_x - AssertionError: bad"),
    ("Exit code 1\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nKeyError: 'k'", "KeyError: 'k'"),
    ("Exit code 127\n/bin/bash: line 1: pytset: command not found", "/bin/bash: line 1: pytset: command not found"),
    ("File does not exist. Note: your current working directory is /r.", "File does not exist. Note: your current "
                                                                         "working directory is /r."),
    ("Exit code 2", ""), ("", ""),
])
def test_the_error_line_is_the_one_that_says_why(output: str, why: str) -> None:
    assert error_line(output) == why


def test_paths_are_relative_to_the_repository_or_the_sessions_directory() -> None:
    def call(seq: int, name: str, tool_input: dict) -> dict[str, Any]:
        return {"seq": seq, "kind": "tool_call", "role": "assistant", "tool_name": name, "tool_input": tool_input,
                "tool_call_id": f"t{seq}", "text": name}
    events = [call(1, "Edit", {"file_path": "/repo/sub/a.py", "old_string": "a", "new_string": "b"}),
              call(2, "apply_patch", {"input": "*** Update File: b.py\n+x\n"}),  # relative to the cwd /repo/sub
              call(3, "Write", {"file_path": "/elsewhere/c.py", "content": "x"}),
              call(4, "Edit", {"file_path": "/repo/sub/a.py", "old_string": "b", "new_string": "c\nd"})]
    done = actions_of(events, "/repo", "/repo/sub")
    assert {p: (c.added, c.removed, c.tools, c.first, c.last) for p, c in done.changed.items()} == {
        "sub/a.py": (3, 2, ["Edit", "Edit"], 1, 4), "sub/b.py": (1, 0, ["apply_patch"], 2, 2),
        "/elsewhere/c.py": (1, 0, ["Write"], 3, 3)}


# --- real captures ------------------------------------------------------------------------------------------

def test_real_tool_errors_are_listed_with_their_line_and_relative_paths(tmp_path: Path) -> None:
    """Every captured real run that recorded a failed tool call (Claude Code's missing file, Codex's failed
    command, ...): its brief lists the failure with the line that says why, and names files relatively."""
    from tests.machine import real_capture_bank

    bank_path = real_capture_bank(tmp_path)
    checked = []
    with open_bank(bank_path) as bank:
        for s in bank.list_sessions():
            events = bank.session_events(s["id"])
            done = actions_of(events, s["repo_root"], s["cwd"])
            if not done.failures:
                continue
            text = brief.handoff(Recall(bank, EVERYTHING), s["native_id"], None, 8192, reader="cli")
            failed = next(v for k, v in _sections(text).items() if k.startswith("## Failed"))
            last = done.failures[-1]
            assert f"- #{last.seq} " in failed and last.why[:80] in failed, (s["harness"], failed)
            assert s["cwd"] is None or not re.search(rf"^- #\d+ \S+ `{re.escape(s['cwd'])}/", failed, re.M), failed
            checked.append((s["harness"], s["cwd"]))
    assert len(checked) >= 5, checked
    claude = next(c for h, c in checked if h == "claude-code" and "tool_error" in (c or ""))
    with open_bank(bank_path) as bank:
        [s] = [s for s in bank.list_sessions() if s["cwd"] == claude]
        text = brief.handoff(Recall(bank, EVERYTHING), s["native_id"], None, 4096, reader="cli")
    assert "Read `missing.txt`: File does not exist." in text
    assert "1 ask," in text and "1 tool call," in text and "1 tool error." in text


def test_the_last_exchange_shows_what_each_call_changed_searched_for_and_ran(tmp_path: Path) -> None:
    """Issue 24 item 2 in the handoff: a call of the last exchange shows its edit as a compact diff, a write as its
    size and head, a search as its pattern (which Claude Code's Grep text does not name), clipped with a count and
    the command that shows the rest; not the bare ``Edit: path``."""
    from tests.helpers import ClaudeSession

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    old = "\n".join(f"line {i}" for i in range(10))
    new = "\n".join(f"line {i}" if i % 2 else f"changed {i}" for i in range(10))
    s.write(s.user("fix the retries"),
            s.tool_use("Grep", {"pattern": "retry|backoff", "path": "/work/app/src"}, "t1"), s.tool_result("t1", "a"),
            s.tool_use("Edit", {"file_path": "/work/app/src/a.py", "old_string": old, "new_string": new}, "t2"),
            s.tool_result("t2", "ok"),
            s.tool_use("Write", {"file_path": "/work/app/notes.md", "content": "# Notes\nretry twice\n"}, "t3"),
            s.tool_result("t3", "ok"), s.assistant("done"))
    scan(home, bank)
    result = CliRunner().invoke(cli, ["--bank", str(bank), "context", "--repo", "/work/app", "--session", s.id],
                                env={"HOME": str(home)})
    assert result.exit_code == 0, result.output
    last = _sections(result.stdout)["## The last exchange"]
    assert "> pattern retry|backoff in /work/app/src" in last, last
    assert "> -line 0\n> +changed 0\n" in last and "changed 8" not in last
    assert re.search(rf"\*… \d+ more lines: `harvester show {s.id} --around 4`\*", last), last
    assert "> 2 lines, 20 bytes:\n> +# Notes\n> +retry twice" in last
