"""A transcript a person can read and navigate (issue 24, items 2 and 4): what an agent changed, searched for and
ran is shown by tool family (an edit as a compact diff, a write as its size and head, a search as its pattern, a
command as the command) in `show`, the export and MCP answers, and is found by `search` (redacted); `show`
numbers events as search hits do, pages around a hit, folds what a reader skips and pages on a terminal;
`sessions` and `search` take time windows and print whole ids; subagents sit under their parent, whose call
names them. On the agents' own formats (fixtures: hand-written in each agent's exact format, and captured real
runs) and on long sessions shaped like real ones (bench/gen_tree.py)."""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from harvester.bank import open_bank
from harvester.bank.scope import EVERYTHING
from harvester.cli import cli
from harvester.recall.export import markdown
from harvester.recall.tools import call_lines, children_of_calls, tool_call
from harvester.recall.views import Recall, get_events, search_history
from tests.golden import LAYOUTS, trees
from tests.helpers import ClaudeSession, as_migration_14_left_it, scan
from tests.machine import real_capture_bank
from tests.test_terminal import assert_nothing_obeyable, on_a_terminal, terminal_env

ANTHROPIC = "sk-ant-api03-" + "Zx9" * 30 + "AA"  # as tests/test_redaction_ingest.py plants it


def fixture_bank(tmp: Path, keys: tuple[str, ...]) -> Path:
    """A bank of the hand-written fixture trees of ``keys`` (each in its agent's exact format)."""
    bank = tmp / "hand-bank.sqlite"
    for n, (key, name, root) in enumerate(trees()):
        if key not in keys or "real" in name:
            continue
        home, tree = tmp / f"home-{n}", tmp / f"tree-{n}"
        home.mkdir(parents=True)
        shutil.copytree(root, tree, ignore=shutil.ignore_patterns("*.db-wal", "*.db-shm"))
        env, roots = LAYOUTS[key].place(tree, home)
        scan(home, bank, (LAYOUTS[key].harness,), env={"HOME": str(home), **env}, extra_roots=roots)
    return bank


HAND = ("claude_code", "codex", "gemini_cli", "opencode", "cline-legacy", "roo-code", "copilot_cli", "qwen_code",
        "continue_cli")


@pytest.fixture(scope="module")
def hand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fixture_bank(tmp_path_factory.mktemp("hand"), HAND)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_capture_bank(tmp_path_factory.mktemp("captured"))


def run(bank: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--bank", str(bank), *args])
    assert result.exit_code == 0, result.output
    return result.output


def call_of(bank: Path, harness: str, tool: str, needle: str = "") -> tuple[str, int]:
    """The session and position of ``harness``'s first ``tool`` call whose input holds ``needle``."""
    with open_bank(bank) as b:
        row = b.conn.execute(
            "SELECT s.native_id, e.seq FROM events e JOIN sessions s ON s.id = e.session_id WHERE s.harness = ? AND "
            "e.kind = 'tool_call' AND e.tool_name = ? AND instr(coalesce(e.tool_input, ''), ?) ORDER BY e.id LIMIT 1",
            (harness, tool, needle)).fetchone()
    assert row, (harness, tool, needle)
    return row[0], row[1]


def shown_call(bank: Path, harness: str, tool: str, needle: str = "", *more: str) -> str:
    session, seq = call_of(bank, harness, tool, needle)
    out = run(bank, "show", session, "--around", str(seq), "-C", "0", *more)
    return out[out.index(f"\n#{seq} "):]


# --- 2. what the agent changed and searched for, by tool family -----------------------------------------------

@pytest.mark.parametrize(("harness", "tool", "needle", "lines"), [
    # an edit: old -> new, as a unified diff
    ("claude-code", "Edit", "timeout(5.0)", ["Edit: /home/dev/src/demo-repo/tests/test_client.py",
                                             "  -with timeout(1.0):", "  +with timeout(5.0):"]),
    ("gemini-cli", "replace", "", ["replace: /home/dev/src/demo-repo/src/csvkit/parse.py", "  -if f]", "  +]"]),
    ("copilot-cli", "edit", "_cache", ["  -_cache = {}"]),
    ("qwen-code", "edit", "out.pop", ["  -    out.pop();"]),
    # SEARCH/REPLACE blocks (Cline, Roo, Continue)
    ("cline-legacy", "replace_in_file", "", ["   export const app = express()", '  +app.get("/health"']),
    ("roo-code", "apply_diff", "", ["   export const app = express()", "  +app.get("]),
    ("continue", "search_and_replace_in_file", "", ["  -attempt < max", "  +attempt <= max"]),
    # a write: its size and the head of what it wrote
    ("gemini-cli", "write_file", "", ["lines, ", "  +from csvkit.parse import parse_row"]),
    ("opencode", "write", "", ["1 line, 22 bytes:", "  +def test_strict(): ..."]),
    ("cline-legacy", "write_to_file", "", ["2 lines, ", '  +import { Router } from "express"']),
    # a patch (Codex): the files, then the body without its envelope
    ("codex", "apply_patch", "trim_end", ["apply_patch: src/lib.rs", "  *** Update File: src/lib.rs",
                                  "  +    line.trim_end_matches('\\r').split(',').collect()"]),
    # a search: the pattern and where
    ("claude-code", "Grep", "", ["  pattern retry|backoff|clock in /home/dev/src/demo-repo ({CHANGELOG.md,docs/**})"]),
    ("gemini-cli", "grep_search", "", ["  pattern split\\(','\\) in /home/dev/src/demo-repo/src"]),
    ("qwen-code", "grep_search", "parse_row", ["  pattern parse_row"]),
    # a command: the command line
    ("claude-code", "Bash", "for i in", ["Bash: for i in 1 2 3 4 5; do python -m pytest tests/test_client.py"]),
])
def test_show_shows_a_tool_call_by_family(hand: Path, harness: str, tool: str, needle: str, lines: list[str]) -> None:
    shown = shown_call(hand, harness, tool, needle)
    missing = [line for line in lines if line not in shown]
    assert missing == [], shown
    assert "*** Begin Patch" not in shown and '"old_string"' not in shown  # no envelope, no JSON


def test_a_long_edit_is_clipped_with_a_count_and_whole_with_full(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    old = "\n".join(f"line {i}" for i in range(40))
    new = "\n".join(f"line {i}" if i % 3 else f"changed {i}" for i in range(40))
    s.write(s.user("change every third line"),
            s.tool_use("Edit", {"file_path": "/work/app/a.py", "old_string": old, "new_string": new}, "t1"),
            s.tool_result("t1", "ok"))
    scan(home, bank)
    shown = run(bank, "show", s.id)
    assert "  -line 0\n  +changed 0\n" in shown and "more lines (--full shows all)" in shown
    assert "changed 39" not in shown
    whole = run(bank, "show", s.id, "--full")
    assert "  -line 39\n  +changed 39" in whole and "more lines" not in whole


def test_export_and_get_events_show_the_same_compact_diff(hand: Path) -> None:
    session, seq = call_of(hand, "claude-code", "Edit", "timeout(5.0)")
    with open_bank(hand) as b:
        [s] = b.find_sessions(session)
        page = markdown(s, b.session_events(s["id"])).decode()
        answer = get_events(Recall(b, EVERYTHING), session, start=seq, limit=1, max_bytes=6000)
    assert f"## #{seq} assistant tool call [Edit]" in page and "-with timeout(1.0):\n+with timeout(5.0):" in page
    assert f"### #{seq} assistant tool call [Edit]" in answer
    assert "> -with timeout(1.0):\n> +with timeout(5.0):" in answer  # quoted: transcript text, inside the frame


@pytest.mark.parametrize(("harness", "tool", "query"), [
    ("claude-code", "Edit", '"timeout(5.0)"'),  # the new string an edit wrote
    ("claude-code", "Grep", "backoff"),  # the pattern it grepped (the call's text names only the path)
    ("gemini-cli", "write_file", "test_empty_fields parse_row"),  # what a write wrote
    ("cline-legacy", "replace_in_file", '"r.json"'),  # a SEARCH/REPLACE block's replacement
    ("continue", "search_and_replace_in_file", '"attempt <= max"'),
])
def test_search_finds_what_an_agent_wrote_and_grepped(hand: Path, harness: str, tool: str, query: str) -> None:
    found = orjson.loads(run(hand, "search", query, "--harness", harness, "--kind", "tool_call", "--json"))
    assert found["total"] >= 1 and tool in {h["tool_name"] for h in found["hits"]}, found


def test_a_secret_an_edit_wrote_is_redacted_and_not_found(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("add the key"),
            s.tool_use("Edit", {"file_path": "/work/app/conf.py", "old_string": "KEY = None",
                                "new_string": f"KEY = '{ANTHROPIC}'  # quokka"}, "t1"),
            s.tool_result("t1", "ok"))
    scan(home, bank)
    assert orjson.loads(run(bank, "search", ANTHROPIC, "--json"))["total"] == 0
    assert orjson.loads(run(bank, "search", ANTHROPIC[:30], "--json"))["total"] == 0
    found = orjson.loads(run(bank, "search", "quokka", "--json"))["hits"]  # the line is found, the key is not there
    assert [h["tool_name"] for h in found] == ["Edit"] and "REDACTED" in found[0]["snippet"]
    assert ANTHROPIC not in run(bank, "show", s.id, "--full")
    assert ANTHROPIC.encode() not in bank.read_bytes()


def test_migration_11_indexes_the_tool_calls_of_a_bank_made_before(tmp_path: Path) -> None:
    hand = fixture_bank(tmp_path, ("claude_code",))
    with open_bank(hand) as b:
        as_migration_14_left_it(b.conn)
    grep = "SELECT count(*) FROM events_fts f JOIN events e ON e.id = f.rowid WHERE events_fts MATCH 'backoff' " \
           "AND e.tool_name = 'Grep' AND e.kind = 'tool_call'"
    with sqlite3.connect(hand) as conn:
        assert conn.execute(grep).fetchone()[0] == 0  # its pattern was not indexed before
    found = orjson.loads(run(hand, "search", "backoff", "--kind", "tool_call", "--json"))  # opens, so migrates
    assert "Grep" in [h["tool_name"] for h in found["hits"]]
    with sqlite3.connect(hand) as conn:
        assert conn.execute(grep).fetchone()[0] == 1
    with sqlite3.connect(hand) as conn:
        conn.execute("INSERT INTO events_fts (events_fts) VALUES ('integrity-check')")  # the index is the view's
        injected = conn.execute("SELECT count(*) FROM events WHERE injected = 1").fetchone()[0]
        marked = conn.execute("SELECT count(*) FROM events WHERE json_extract(meta, '$.injected') = 1").fetchone()[0]
    assert injected == marked > 0
    with open_bank(hand) as b:  # an edit later keeps the index whole (the update trigger follows the input)
        b.conn.execute("UPDATE events SET tool_input = '{\"pattern\": \"okapi\"}' WHERE tool_name = 'Grep'")
        b.conn.commit()
        b.conn.execute("INSERT INTO events_fts (events_fts) VALUES ('integrity-check')")
    assert orjson.loads(run(hand, "search", "okapi", "--json"))["total"] == 1


# --- 4. from a hit to its context --------------------------------------------------------------------------------

def test_search_leaves_injected_context_out_unless_asked(captured: Path) -> None:
    """Codex's <environment_context>, Gemini CLI's <session_context>: the agents' preambles, marked by their
    parsers, match nothing by default."""
    for word in ("environment_context", "session_context"):
        assert orjson.loads(run(captured, "search", word, "--json"))["total"] == 0, word
        found = orjson.loads(run(captured, "search", word, "--include-injected", "--json"))
        assert found["total"] >= 1 and {h["role"] for h in found["hits"]} == {"system"}, word
    with open_bank(captured) as b:
        answer = search_history(Recall(b, EVERYTHING), "environment_context")
    assert "Nothing in every repository matches" in answer


def test_show_numbers_events_as_search_hits_and_exports_do(captured: Path) -> None:
    hit = orjson.loads(run(captured, "search", "pelican", "--harness", "gemini-cli", "--json"))["hits"][0]
    shown = run(captured, "show", hit["session"])
    numbers = [int(n) for n in re.findall(r"^#(\d+) ", shown, re.M)]
    with open_bank(captured) as b:
        [s] = b.find_sessions(hit["session"])
        events = b.events(s["id"])
        page = markdown(s, b.session_events(s["id"])).decode()
    assert numbers == [e["seq"] for e in events]
    assert re.findall(r"^## #(\d+) ", page, re.M) == [str(e["seq"]) for e in events]
    assert f"\n#{hit['seq']} [" in shown and "pelican" in shown.split(f"\n#{hit['seq']} [")[1].split("\n#")[0]


def test_show_around_from_kinds_and_role_choose_the_events(captured: Path) -> None:
    hit = orjson.loads(run(captured, "search", "pelican", "--harness", "gemini-cli", "--json"))["hits"][0]
    n = hit["seq"]

    def numbers(*args: str) -> list[int]:
        return [int(x) for x in re.findall(r"^#(\d+) ", run(captured, "show", hit["session"], *args), re.M)]

    assert numbers("--around", str(n), "-C", "1") == [n - 1, n, n + 1]
    assert numbers("--from", str(n)) == list(range(n, numbers()[-1] + 1))
    assert numbers("--role", "user") == [e["seq"] for e in _events(captured, hit["session"]) if e["role"] == "user"]
    kinds = numbers("--kinds", "tool_call,tool_result")
    assert kinds and all(e["kind"] in ("tool_call", "tool_result") for e in _events(captured, hit["session"])
                         if e["seq"] in kinds)
    bad = CliRunner().invoke(cli, ["--bank", str(captured), "show", hit["session"], "--kinds", "thoughts"])
    assert bad.exit_code == 2 and "'thoughts' is not one of text, thinking" in bad.output
    none = run(captured, "show", hit["session"], "--around", "900")
    assert "No events match (the session's are #1 to #" in none


def _events(bank: Path, session: str) -> list[dict[str, Any]]:
    with open_bank(bank) as b:
        [s] = b.find_sessions(session)
        return b.events(s["id"])


@pytest.mark.parametrize(("harness", "kind", "first"), [
    ("codex", "injected", "<environment_context>"),  # Codex's preambles
    ("gemini-cli", "injected", "<session_context>"),  # Gemini CLI's
    ("claude-code", "thinking", "The user wrote"),  # a model's thinking
    ("qwen-code", "thinking", ""),
])
def test_show_folds_what_a_reader_skips_and_says_how_to_unfold(captured: Path, harness: str, kind: str,
                                                              first: str) -> None:
    with open_bank(captured) as b:
        rows = [s for s in b.list_sessions() if s["harness"] == harness]
        every = {s["native_id"]: b.events(s["id"]) for s in rows}
    if kind == "injected":
        session, e = next((n, e) for n, es in every.items() for e in es if (e["meta"] or {}).get("injected")
                          and e["text"].startswith(first))
    else:
        session, e = next((n, e) for n, es in every.items() for e in es if e["kind"] == "thinking")
    folded = run(captured, "show", session)
    line = next(x for x in folded.splitlines() if x.startswith(f"#{e['seq']} "))
    assert "folded (--full): " in line and _first_line(e["text"])[:40] in line and line.startswith(
        f"#{e['seq']} [") and (", injected by the agent: " in line) == (kind == "injected")
    body = e["text"].splitlines()[1] if len(e["text"].splitlines()) > 1 else None
    if body and body.strip():
        assert body.strip() not in folded  # its lines are not shown
    assert "--full shows everything" in folded.split("\n\n")[0]  # the head says what is folded
    whole = run(captured, "show", session, "--full")
    assert all(line in whole for line in e["text"].splitlines() if line.strip())
    if kind == "thinking":
        assert e["text"].splitlines()[0] in run(captured, "show", session, "--kinds", "thinking,text")


def _first_line(text: str) -> str:
    return " ".join(text.splitlines()[0].split()) if text else ""


def test_show_folds_long_tool_output_after_a_few_lines(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("run"), s.tool_use("Bash", {"command": "pytest"}, "t1"),
            s.tool_result("t1", "\n".join(f"out {i}" for i in range(30))))
    scan(home, bank)
    shown = run(bank, "show", s.id)
    assert "  out 3\n  … 26 more lines folded (--full)" in shown and "out 4" not in shown
    assert "out 29" in run(bank, "show", s.id, "--full")


def test_a_long_realistic_session_reads_in_far_fewer_lines(tmp_path: Path) -> None:
    """The longest session of a generated history (bench/gen_tree.py: Claude Code and Codex shaped as captured):
    folding and clipping keep it well under its whole length; every event is still numbered."""
    from bench.gen_tree import generate
    from harvester.capture.ingest import Ingestor
    from harvester.parsers import HARNESSES

    home = tmp_path / "home"
    generate(home, megabytes=3.0, seed=7)
    with open_bank(tmp_path / "bank.sqlite") as bank, Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
        ingestor.scan([HARNESSES["claude-code"], HARNESSES["codex"]], {"HOME": str(home)}, home)
    with open_bank(tmp_path / "bank.sqlite") as bank:
        longest = max(bank.list_sessions(), key=lambda s: s["event_count"])
    assert longest["event_count"] >= 100
    folded = run(tmp_path / "bank.sqlite", "show", longest["native_id"])
    whole = run(tmp_path / "bank.sqlite", "show", longest["native_id"], "--full")
    assert len(folded.splitlines()) < 0.6 * len(whole.splitlines())
    assert len(re.findall(r"^#\d+ ", folded, re.M)) + sum(
        int(m[1]) - 1 for m in re.finditer(r"^#\d+-#\d+ \[\S+\] (\d+) meta records", folded, re.M)) == \
        longest["event_count"]
    fold_lines = [line for line in folded.splitlines() if re.match(r"#\d+.* folded|  … \d+ more lines", line)]
    assert len(fold_lines) > 20 and all("(--full" in line for line in fold_lines)


PAGER = """import sys
open(sys.argv[1], "w", encoding="utf-8").write(sys.stdin.read())
"""


def test_show_pages_through_the_pager_on_a_terminal_and_the_pager_gets_no_control_character(tmp_path: Path) -> None:
    from tests.test_terminal import hostile_sessions

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    first, _ = hostile_sessions(home)
    scan(home, bank)
    (tmp_path / "pager.py").write_text(PAGER)
    got = tmp_path / "paged.txt"
    env = {**terminal_env(home), "PAGER": f"{sys.executable} {tmp_path / 'pager.py'} {got}"}
    code, out = on_a_terminal(env, "--bank", str(bank), "show", first.id)
    assert code == 0, out
    paged = got.read_text()
    assert_nothing_obeyable(paged)
    assert paged.rstrip("\n") == run(bank, "show", first.id).rstrip("\n")  # what show prints, made visible
    got.unlink()
    code, out = on_a_terminal(env, "--bank", str(bank), "show", first.id, "--no-pager")
    assert code == 0 and not got.exists() and "#1 [" in out


# --- ids, windows, subagents -----------------------------------------------------------------------------------

def test_sessions_at_any_width_keep_every_id_whole_and_put_subagents_under_their_parent(captured: Path) -> None:
    with open_bank(captured) as b:
        parents = {(s["harness"], s["parent_native_id"]): s["native_id"] for s in b.list_sessions()
                   if s["parent_kind"] == "subagent"}
        ids = [s["native_id"] for s in b.list_sessions()]
    env = terminal_env(captured.parent)
    for columns in (80, 120, 250):
        code, out = on_a_terminal(env, "--bank", str(captured), "sessions", columns=columns)
        assert code == 0, out
        rows = out.splitlines()
        for native_id in ids:
            assert any(native_id in row for row in rows), (columns, native_id)
        # An id too long to share a line with the rest at its narrowest (dcode's subagent: 79 characters) runs past
        # the id column on its own row, never widening it for every row: the other rows keep within the terminal
        # (at 80 columns every row was 81 wide or more).
        fitting = [row for row in rows if len(row.split("  ")[0]) <= columns - 28]
        assert len(fitting) > len(ids) // 2 and all(len(row) <= columns for row in fitting), (columns, fitting[:3])
        for (_, parent), child in parents.items():
            at = next(i for i, row in enumerate(rows) if re.match(rf"{re.escape(parent)}\s", row))
            below = rows[at + 1:at + 1 + sum(1 for (_, p) in parents if p == parent)]
            assert any(row.lstrip().startswith(f"└ {child}") for row in below), (columns, child, rows[at:at + 3])


def test_a_narrow_terminal_cuts_titles_and_banks_never_ids() -> None:
    from harvester.cli.render import sessions_text

    def row(native_id: str, title: str, parent: str | None = None) -> dict[str, Any]:
        return {"native_id": native_id, "harness": "claude-code", "bank_id": "coding-agent::a-rather-long-repository",
                "updated_local": "2026-11-01 10:00", "event_count": 120, "title": title, "started_at": "2026-11-01",
                "parent_native_id": parent, "parent_kind": "subagent" if parent else None}

    parent = "6f1d2c9a-4b7e-4e2a-9c31-8d5f0a7b3e12"
    rows = [row("0b8549c3-1d34-4d4e-87d9-aa4ed4120fe4", "a title that goes on and on " * 4),
            row(f"{parent}:agent-a7c31e0f95b2d4e68", "the child", parent), row(parent, "the parent")]
    wide = sessions_text(rows, 250).splitlines()
    assert "coding-agent::a-rather-long-repository" in wide[1] and "a title that goes on and on " * 3 in wide[1]
    assert wide[2].startswith(parent) and wide[3].startswith(f"└ {parent}:agent-a7c31e0f95b2d4e68  ")
    for width in (120, 100, 80):
        table = sessions_text(rows, width).splitlines()
        assert table[1].startswith("0b8549c3-1d34-4d4e-87d9-aa4ed4120fe4  ") and "…" in table[1]
        assert table[3].startswith(f"└ {parent}:agent-a7c31e0f95b2d4e68  ")
        assert all(len(line) <= width for line in table) or width < 2 + len(rows[1]["native_id"]) + 20, width
    assert all(len(line) <= 80 for line in sessions_text(rows[:1] + rows[2:], 80).splitlines())


def test_search_hits_name_the_whole_session_and_a_subagents_parent(captured: Path) -> None:
    out = run(captured, "search", "pelican", "--harness", "claude-code")
    child = re.search(r"^claude-code (\S+:agent-\S+) \(subagent of (\S+)\) #\d+ ", out, re.M)
    assert child and child[1].startswith(child[2] + ":"), out
    hits = orjson.loads(run(captured, "search", "pelican", "--harness", "claude-code", "--json"))["hits"]
    assert {(h["session"], h["parent_native_id"]) for h in hits if h["parent_kind"] == "subagent"} == {
        (child[1], child[2])}
    with open_bank(captured) as b:
        answer = search_history(Recall(b, EVERYTHING), "pelican", harness="claude-code")
    assert f"- session `{child[1]}` (claude-code, subagent of `{child[2]}`, in " in answer  # every repository's: named


SUBAGENT_CAPTURES = ("claude-code", "codex", "copilot-cli", "dcode", "deepseek-harness", "hermes", "kimi", "kimi-code",
                     "openhands", "oh-my-pi")


@pytest.mark.parametrize("harness", SUBAGENT_CAPTURES)
def test_the_call_that_started_a_subagent_names_it(captured: Path, harness: str) -> None:
    with open_bank(captured) as b:
        [child] = [s for s in b.list_sessions() if s["harness"] == harness and s["parent_kind"] == "subagent"]
        [parent] = b.find_sessions(child["parent_native_id"])
        events = b.events(parent["id"])
        [(seq, linked)] = children_of_calls(events, b.subagents(harness, parent["native_id"])).items()
        answer = get_events(Recall(b, EVERYTHING), parent["native_id"], start=seq, limit=1, max_bytes=6000)
    assert linked == child["native_id"]
    assert tool_call(next(e for e in events if e["seq"] == seq)).family == "agent"
    assert f"→ subagent session {child['native_id']}" in shown_call(captured, harness, events[seq - 1]["tool_name"])
    assert f"> → subagent session {child['native_id']}" in answer


def test_subagents_of_hand_written_stores_are_linked_by_what_each_agent_records(tmp_path: Path) -> None:
    """By the call's id in the child's meta or id (Claude Code, Copilot, Qwen Code, Junie, Droid, Crush), the
    child's id in the result (opencode's meta, Codex's agent_id, Roo's "Subtask <id>"), else by time."""
    bank = fixture_bank(tmp_path, ("claude_code", "codex", "copilot_cli", "opencode", "roo-code", "qwen_code",
                                   "junie", "droid", "crush", "deepseek_harness", "kimi"))
    linked = unlinked = 0
    with open_bank(bank) as b:
        for s in b.list_sessions():
            kids = b.subagents(s["harness"], s["native_id"])
            if kids:
                found = children_of_calls(b.events(s["id"]), kids)
                linked += len(found)
                unlinked += len(kids) - len(set(found.values()))
                assert set(found.values()) <= {k["native_id"] for k in kids}
    # Not linked: a fork of a subagent and an ACP session (Qwen Code: no call started them), a workflow's agent
    # (Claude Code: its Workflow call is no agent call and names no id).
    assert (linked, unlinked) == (16, 3)


def test_sessions_and_search_take_a_time_window(tmp_path: Path) -> None:
    from tests.test_search_scale import _write

    with open_bank(tmp_path / "bank.sqlite") as bank:
        _write(bank, "codex", "early", ["zebra one", "zebra two"], day=2)
        _write(bank, "codex", "late", ["zebra three"], day=20)
    bank = tmp_path / "bank.sqlite"

    def listed(*args: str) -> list[str]:
        return [r["native_id"] for r in orjson.loads(run(bank, "sessions", "--json", *args))]

    def found(*args: str) -> list[tuple[str, int]]:
        hits = orjson.loads(run(bank, "search", "zebra", "--json", *args))["hits"]
        return sorted((h["session"], h["seq"]) for h in hits)

    assert listed("--since", "2026-01-10") == ["late"] and listed("--until", "2026-01-10") == ["early"]
    assert listed("--since", "2026-01-01", "--until", "2026-01-30") == ["late", "early"]
    assert found("--until", "2026-01-02T10:01:00Z") == [("early", 1)]
    assert found("--since", "2026-01-02T10:01:00Z", "--until", "2026-01-03") == [("early", 2)]
    assert found("--role", "user") == [("early", 2)] and found("--role", "assistant", "--since", "2026-01-15") == [
        ("late", 1)]
    assert listed("--since", "1d") == [] and found("--since", "9999d") == [("early", 1), ("early", 2), ("late", 1)]
    # sessions by what they hold: a role or a kind of event (the sessions where the user spoke, that compacted, ...)
    assert listed("--role", "user") == ["early"] and listed("--role", "assistant") == ["late", "early"]
    assert listed("--kind", "text", "--since", "2026-01-10") == ["late"] and listed("--kind", "compaction") == []
    assert listed("--role", "user", "--kind", "tool_call") == []
    bad = CliRunner().invoke(cli, ["--bank", str(bank), "search", "zebra", "--until", "soon"])
    assert bad.exit_code == 2 and "--until" in bad.output


def test_call_lines_show_transcript_controls_as_written_not_as_line_breaks() -> None:
    """A \\r or \\x1c in a command is a character a reader is shown (harvester.terminal.visible), not a line end."""
    call = {"kind": "tool_call", "tool_name": "Bash", "tool_input": {"command": "printf a\rb\x1cc"},
            "text": "Bash: printf a\rb\x1cc"}
    assert call_lines(call) == ["Bash: printf a\rb\x1cc"]


def test_the_options_name_the_models_roles_and_kinds() -> None:
    from harvester import model
    from harvester.cli import common as cli_options

    assert (", ".join(model.ROLES), ", ".join(model.KINDS)) == (cli_options.ROLE_NAMES, cli_options.KIND_NAMES)


def test_a_tool_input_nested_past_any_stack_is_read_without_failing() -> None:
    nested: dict[str, Any] = {"old_string": "a"}  # no pair at the top: the edits are looked for inside
    for _ in range(3000):
        nested = {"edits": [nested]}
    call = {"kind": "tool_call", "tool_name": "MultiEdit", "tool_input": {"file_path": "/a.py", **nested},
            "text": "MultiEdit: /a.py", "seq": 1}
    assert tool_call(call).family == "edit" and call_lines(call) == ["MultiEdit: /a.py"]


def test_a_short_call_id_does_not_link_a_subagent_whose_id_merely_ends_with_it() -> None:
    events = [{"seq": 1, "kind": "tool_call", "tool_name": "Read", "tool_call_id": "1", "tool_input": {"path": "x"},
               "text": "Read: x", "ts": "2026-01-01T10:00:00Z"}]
    child = {"native_id": "p:agent-1", "meta": None, "started_at": "2026-01-01T10:00:01Z", "first_text": "hello"}
    assert children_of_calls(events, [child]) == {}
    assert children_of_calls([{**events[0], "tool_call_id": "agent-1"}], [child]) == {1: "p:agent-1"}
