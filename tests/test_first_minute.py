"""The first minute and the edges (issue 24, item 5): what every reading command and the MCP server say before
the first scan, session states that never go stale, a status that fits the terminal, options that say what
they take (`--repo`, the bank file and the bank id, `--harness`), counts in words, and the MCP prompts."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from harvester.cli import cli
from harvester.parsers import HARNESSES
from tests.helpers import ClaudeSession, make_repo, scan

NO_HISTORY = "No history yet: run `harvester scan`"


def _cli(home: Path, bank: Path, *args: str, cwd: Path | None = None) -> Result:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)},
                                  catch_exceptions=False)
    finally:
        os.chdir(before)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# --- before the first scan --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["sessions"], ["sessions", "--json"], ["show", "abc"], ["search", "pelican"],
                                  ["search", "pelican", "--json"], ["context"], ["context", "--json"],
                                  ["export"], ["status"], ["status", "--json"],
                                  ["usage"], ["usage", "session"], ["resume", "abc", "--in", "codex"]])  # later reads too
def test_every_read_before_the_first_scan_says_there_is_no_history_and_creates_nothing(
        tmp_path: Path, args: list[str]) -> None:
    home, repo = tmp_path / "home", make_repo(tmp_path / "repo")
    home.mkdir()
    bank = tmp_path / "data" / "bank.sqlite"  # neither the file nor its directory exists yet
    before = _tree(tmp_path)
    result = _cli(home, bank, *args, cwd=repo)
    assert result.exit_code == 0, result.output
    assert "Errno" not in result.output and "Traceback" not in result.output
    if "--json" in args:
        data = orjson.loads(result.stdout)  # stdout stays JSON
        assert data == [] or data is None or data["bank"]["exists"] is False
        if args[0] != "status":
            assert NO_HISTORY in result.stderr
    else:
        assert NO_HISTORY in result.stdout, result.output
    assert _tree(tmp_path) == before  # no bank, no directory, no export made


def test_status_before_the_first_scan_still_shows_the_agents_found(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(1))
    result = _cli(home, tmp_path / "bank.sqlite", "status")
    assert result.exit_code == 0 and result.stdout.startswith(NO_HISTORY), result.output
    assert "claude-code" in result.stdout
    assert not (tmp_path / "bank.sqlite").exists()


def test_a_reading_command_never_creates_a_bank_at_a_path_that_is_not_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for args in (["sessions"], ["search", "x"], ["show", "x"], ["context"], ["status"]):
        result = _cli(home, tmp_path / "typo" / "nowhere.db", *args, cwd=tmp_path)
        assert result.exit_code == 0, result.output
    assert not (tmp_path / "typo").exists()
    empty = tmp_path / "empty.db"
    empty.touch()  # an empty file: no history in it either, and left as it is
    assert NO_HISTORY in _cli(home, empty, "sessions").stdout
    assert empty.stat().st_size == 0 and not (tmp_path / "empty.db-wal").exists()


def _mcp_subprocess(home: Path, bank: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]],
                    between: Any = None) -> dict[str, Any]:
    """`harvester mcp` as an agent starts it, driven by the SDK's client: each call's (is_error, text); ``between``
    runs after the first call (the server still up)."""
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.machine import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_"))}
    env.update(HOME=str(home), HARVESTER_BANK=str(bank), PYTHONPATH=str(ROOT))
    params = StdioServerParameters(command=sys.executable, args=["-m", "harvester", "mcp"], env=env, cwd=str(cwd))

    async def talk() -> dict[str, Any]:
        async with Client(params) as client:
            results = []
            for n, (name, arguments) in enumerate(calls):
                if n == 1 and between is not None:
                    between()
                result = await client.call_tool(name, arguments)
                results.append((bool(result.is_error), "".join(c.text for c in result.content)))
            return {"results": results, "resources": (await client.list_resources()).resources,
                    "prompts": (await client.list_prompts()).prompts}
    return asyncio.run(talk())


def test_the_mcp_server_starts_before_the_first_scan_and_every_tool_says_so(tmp_path: Path) -> None:
    home, bank, repo = tmp_path / "home", tmp_path / "data" / "bank.sqlite", make_repo(tmp_path / "repo")
    out = _mcp_subprocess(home, bank, repo, [("recent_sessions", {}), ("handoff", {}),
                                             ("search_history", {"query": "x"}), ("get_events", {"session": "x"})])
    for error, text in out["results"]:
        assert not error and text.startswith("<harvester-history") and NO_HISTORY in text, text
    assert out["resources"] == [] and not (tmp_path / "data").exists()


def test_the_mcp_server_reads_the_bank_the_first_scan_makes_while_it_runs(tmp_path: Path) -> None:
    home, bank, repo = tmp_path / "home", tmp_path / "bank.sqlite", make_repo(tmp_path / "repo")
    s = ClaudeSession(home, str(repo))
    s.write(s.user("find the pelican"), s.assistant("found it"))
    out = _mcp_subprocess(home, bank, repo, [("recent_sessions", {}), ("recent_sessions", {})],
                          between=lambda: scan(home, bank))
    assert NO_HISTORY in out["results"][0][1]
    assert s.id in out["results"][1][1] and [r.name for r in out["resources"]] == [s.id]


# --- session states never go stale ------------------------------------------------------------------------

def _stale_bank(tmp_path: Path) -> tuple[Path, Path, dict[str, ClaudeSession]]:
    """A bank as a service killed with -9 left it: every session marked live. One session's agent stopped
    writing two hours ago; one is being written now; one no service ever judged (unknown)."""
    import sqlite3

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    quiet, busy, unjudged = (ClaudeSession(home, "/work/quiet"), ClaudeSession(home, "/work/busy", live=True),
                             ClaudeSession(home, "/work/unjudged"))
    for s in (quiet, busy, unjudged):
        s.write(s.user("go on"), s.assistant("on it"))
    old = os.path.getmtime(quiet.path) - 7200
    os.utime(quiet.path, (old, old))
    os.utime(unjudged.path, (old, old))
    scan(home, bank)
    conn = sqlite3.connect(bank)
    conn.execute("UPDATE sessions SET state = 'live' WHERE native_id IN (?, ?)", (quiet.id, busy.id))
    conn.commit()
    conn.close()
    return home, bank, {"quiet": quiet, "busy": busy, "unjudged": unjudged}


def _states(bank: Path) -> dict[str, str]:
    from tests.helpers import sessions_of

    return {s["native_id"]: s["state"] for s in sessions_of(bank)}


def test_a_scan_judges_again_the_sessions_a_stopped_service_left_live(tmp_path: Path) -> None:
    home, bank, s = _stale_bank(tmp_path)
    result = CliRunner().invoke(cli, ["--bank", str(bank), "scan"],
                                env={"HOME": str(home), "HARVESTER_RUNTIME_DIR": str(tmp_path / "run")})
    assert result.exit_code == 0, result.output
    states = _states(bank)
    assert states[s["quiet"].id] == "ended"  # no agent process, quiet for two hours
    assert states[s["busy"].id] == "live"  # written a moment ago
    assert states[s["unjudged"].id] == "unknown"  # never judged: explained, not guessed


def test_the_service_judges_again_at_start_the_sessions_it_left_live(tmp_path: Path) -> None:
    from watchdog.observers import Observer

    from harvester import config
    from harvester.bank import open_bank
    from harvester.capture.ingest import Ingestor
    from harvester.service import run as service

    home, bank_path, s = _stale_bank(tmp_path)
    env = {"HOME": str(home), "HARVESTER_BANK": str(bank_path)}
    svc = service.Service(config.load(env, harness_names=HARNESSES), env, home)
    svc.bank = open_bank(bank_path)
    svc.ingestor = Ingestor(svc.bank, svc.settings.bank_id_template)
    svc.observer = Observer()
    try:
        svc.check_sessions()
    finally:
        svc.ingestor.close()
        svc.bank.close()
    states = _states(bank_path)
    assert (states[s["quiet"].id], states[s["busy"].id]) == ("ended", "live")


def test_show_explains_a_state_of_unknown(tmp_path: Path) -> None:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("hello"), s.assistant("hi"))
    scan(home, bank)
    out = _cli(home, bank, "show", s.id).stdout
    assert "state unknown (no capture service watched it: `harvester run` judges whether it is live, ended or " \
           "abandoned)" in out


# --- status: the agents found, in the terminal's width ----------------------------------------------------

def test_status_lists_the_agents_found_one_line_for_the_rest_and_fits_the_terminal(tmp_path: Path) -> None:
    from tests.test_terminal import on_a_terminal, terminal_env

    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/a-repository-with-a-name-long-enough-to-push-every-line-past-eighty-columns")
    s.write(s.user("a title that goes on and on " * 6), s.assistant("ok"), b"not json\n")
    (home / ".codex").mkdir()  # an agent installed, nothing recorded yet: found all the same
    scan(home, bank)
    code, out = on_a_terminal(terminal_env(home), "--bank", str(bank), "status", columns=80)
    assert code == 0, out
    lines = out.replace("\r", "").splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    rows = [line.split()[0] for line in lines[lines.index(next(x for x in lines if x.startswith("HARNESS"))) + 1:]
            if line and not line.startswith(" ")][:2]
    assert rows == ["claude-code", "codex"]
    rest = next(line for line in lines if "not found" in line)
    assert "`harvester status --all`" in rest and "aider" not in out.split(rest)[0]
    code, every = on_a_terminal(terminal_env(home), "--bank", str(bank), "status", "--all", columns=80)
    assert code == 0 and "not found" not in every and all(f"\n{n} " in every for n in ("aider", "zed", "warp"))
    assert all(len(line) <= 80 for line in every.replace("\r", "").splitlines())
    data = orjson.loads(_cli(home, bank, "status", "--json").stdout)
    assert len(data["harnesses"]) > 40  # JSON keeps every agent


def test_the_scan_progress_line_counts_the_agent_it_reads_and_fits_the_terminal(tmp_path: Path) -> None:
    """Every agent's sources are found before any is read: the line named the last agent found (zcode) and its
    count, "scanning zcode: 231/1 sources" while other agents were read, and at 80 columns a longer line wrapped,
    leaving its first part on the screen when it was cleared."""
    from tests.machine import lay_out_every_store
    from tests.test_terminal import on_a_terminal, terminal_env

    home = tmp_path / "home"
    lay_out_every_store(home, only=("claude_code", "codex", "visualstudio_copilot"))
    code, out = on_a_terminal(terminal_env(home), "--bank", str(tmp_path / "bank.sqlite"), "scan", columns=60)
    assert code == 0, out
    drawn = [line for line in out.split("\r\x1b[2K") if line.startswith("scanning ")]
    assert drawn, out
    for line in drawn:
        assert len(line) < 60, drawn  # one line, short of the last column (a full line wraps on some terminals)
        done, total = map(int, re.search(r": (\d+)/(\d+) sources", line).groups())
        assert done <= total, drawn
    assert re.search(r": (\d+)/\1 sources", drawn[-1]), drawn  # the last line drawn: every source done


def test_the_scan_progress_line_names_the_agent_whose_source_was_read() -> None:
    """What the scan calls, in its order: every agent's sources found, then read (here one of each)."""
    import io

    from harvester.capture.ingest import SourceResult
    from harvester.capture.sources import Found
    from harvester.cli.render import ScanProgress

    claude, codex = HARNESSES["claude-code"], HARNESSES["codex"]
    stream = io.StringIO()
    progress = ScanProgress(stream)
    progress.EVERY = 0  # every call draws
    found = {h.name: [Found(Path(f"/nowhere/{h.name}/{n}.jsonl"), Path("/nowhere"), h.sources[0]) for n in range(k)]
             for h, k in ((claude, 2), (codex, 3))}
    progress.start(claude, found["claude-code"])
    progress.start(codex, found["codex"])
    progress.advance(claude, found["claude-code"][0], SourceResult("a", "new", 1, {"s1": 1}))
    assert stream.getvalue().rsplit("\r\x1b[2K", 1)[1].startswith("scanning claude-code: 1/5 sources, ")
    assert stream.getvalue().endswith(", 1 session with new events")  # not "1 sessions"
    for item in found["codex"]:
        progress.advance(codex, item, SourceResult("b", "unchanged"))
    assert stream.getvalue().rsplit("\r\x1b[2K", 1)[1].startswith("scanning codex: 4/5 sources, ")


def test_a_scan_that_finds_no_agent_says_where_it_looked_and_what_to_do(tmp_path: Path) -> None:
    """On a machine where no agent's store is at its default place, scan said "Nothing new: 0 sources of 0 agents
    checked": as if it had looked at no agent, and nothing to do about it."""
    home = tmp_path / "home"
    home.mkdir()
    result = _cli(home, tmp_path / "bank.sqlite", "scan")
    assert result.exit_code == 0, result.output
    said = result.stdout
    assert "0 agents" not in said and f"none of the {len(HARNESSES)} agents" in said, said
    assert "docs/agents.md" in said and "[roots]" in said, said


def test_status_where_no_agent_is_found_says_so_without_an_empty_table(tmp_path: Path) -> None:
    """It printed the table's header with no row under it, then "73 other agents not found here": other than what?"""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    home.mkdir()
    _cli(home, bank, "scan")
    said = _cli(home, bank, "status").stdout
    assert "HARNESS" not in said and " other agents" not in said, said
    assert f"No agent found here: none of the {len(HARNESSES)} agents" in said and "status --all" in said, said
    assert "HARNESS" in _cli(home, bank, "status", "--all").stdout


# --- options that say what they take ----------------------------------------------------------------------

def _one_session(tmp_path: Path) -> tuple[Path, Path, ClaudeSession]:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, str(tmp_path / "gone" / "demo-repo"))  # not here: a repository known by its sessions
    s.write(s.user("find the pelican"), s.tool_use("Bash", {"command": "ls"}, "t1"), s.tool_result("t1", "a"),
            s.assistant("found it"))
    scan(home, bank)
    return home, bank, s


@pytest.mark.parametrize("args", [["export", "--repo", "{tmp}/nonexistent/x"], ["context", "--repo", "{tmp}/nonexistent/x"],
                                  ["sessions", "--repo", "{tmp}/nonexistent/x"],
                                  ["search", "x", "--repo", "{tmp}/nonexistent/x"],
                                  ["export", "--repo", "{tmp}/plain"], ["sessions", "--repo", "{tmp}/plain"],
                                  # these answered "No model responses recorded." and "Nothing to forget"
                                  ["usage", "--repo", "{tmp}/nonexistent/x"],
                                  ["forget", "--repo", "{tmp}/nonexistent/x", "--dry-run"],
                                  # here, no repository, and sessions were recorded only beneath it (in a folder
                                  # that is gone): export made {tmp}/.harvester/history for none of them
                                  ["export", "--repo", "{tmp}"], ["sessions", "--repo", "{tmp}"]])
def test_repo_must_be_a_git_work_tree_or_a_directory_sessions_were_recorded_in(tmp_path: Path,
                                                                              args: list[str]) -> None:
    home, bank, _ = _one_session(tmp_path)
    (tmp_path / "plain").mkdir()  # exists, but no repository and no session there
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    before = _tree(tmp_path)
    result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)})
    assert result.exit_code == 2, result.output
    assert "is not a git work tree, and no session was recorded there" in result.stderr
    assert _tree(tmp_path) == before


def test_repo_may_name_where_sessions_were_recorded_and_export_never_creates_it(tmp_path: Path) -> None:
    home, bank, s = _one_session(tmp_path)
    recorded = str(tmp_path / "gone" / "demo-repo")
    listed = _cli(home, bank, "sessions", "--repo", recorded, "--json")
    assert [r["native_id"] for r in orjson.loads(listed.stdout)] == [s.id]
    refused = CliRunner().invoke(cli, ["--bank", str(bank), "export", "--repo", recorded], env={"HOME": str(home)})
    assert refused.exit_code == 2 and "give --to DIR" in refused.stderr and not (tmp_path / "gone").exists()
    done = _cli(home, bank, "export", "--repo", recorded, "--to", str(tmp_path / "out"))
    assert done.exit_code == 0 and len(list((tmp_path / "out").iterdir())) == 1


def test_the_bank_file_and_the_bank_id_have_distinct_names(tmp_path: Path) -> None:
    home, bank, s = _one_session(tmp_path)
    by_id = _cli(home, bank, "sessions", "--bank-id", "coding-agent::demo-repo", "--json")
    assert [r["native_id"] for r in orjson.loads(by_id.stdout)] == [s.id]
    found = _cli(home, bank, "search", "pelican", "--bank-id", "coding-agent::demo-repo", "--json")
    assert [h["session"] for h in orjson.loads(found.stdout)["hits"]] == [s.id]
    old = _cli(home, bank, "sessions", "--bank", "coding-agent::demo-repo", "--json")  # the old spelling works
    assert [r["native_id"] for r in orjson.loads(old.stdout)] == [s.id] and "--bank-id" in old.stderr
    for value in (str(bank), "other.sqlite", "~/banks/x.db"):  # a file: the global option, given too late
        wrong = CliRunner().invoke(cli, ["--bank", str(bank), "sessions", "--bank", value], env={"HOME": str(home)})
        assert wrong.exit_code == 2 and "harvester --bank PATH sessions" in wrong.stderr, wrong.output
    for command in (["sessions"], ["search"], ["sink", "backfill"]):
        text = CliRunner().invoke(cli, [*command, "--help"]).output
        assert "--bank-id ID" in text and "--bank " not in text


def test_a_number_out_of_range_is_a_usage_error_that_names_the_option(tmp_path: Path) -> None:
    """`context --max-bytes 10` said "max_bytes must be between ..." (the MCP argument's name) with exit 1, and
    `resume --max-bytes 5` exit 1: the docs promise exit 2, before anything is done, for a usage error."""
    home, bank, s = _one_session(tmp_path)
    for args, said in ((["context", "--repo", str(tmp_path / "gone" / "demo-repo"), "--max-bytes", "10"],
                        "between 512 and 200000"),
                       (["resume", s.id, "--in", "codex", "--dry-run", "--max-bytes", "5"], "16384")):
        result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)})
        assert result.exit_code == 2, result.output
        assert "'--max-bytes'" in result.stderr and said in result.stderr and "max_bytes" not in result.stderr


def test_a_bad_time_is_named_once(tmp_path: Path) -> None:
    """"Invalid value for --before: before: 'bogus' ..." named the option twice (and export's, sink's --since)."""
    home, bank, _ = _one_session(tmp_path)
    for args, option in ((["forget", "--before", "bogus", "--dry-run"], "--before"),
                         (["export", "--since", "bogus", "--to", str(tmp_path / "out")], "--since"),
                         (["search", "x", "--since", "bogus"], "--since")):
        result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)})
        assert result.exit_code == 2, result.output
        assert f"Invalid value for '{option}': 'bogus' is neither" in result.stderr, result.stderr


def test_search_with_a_limit_of_zero_does_not_say_there_are_no_matches(tmp_path: Path) -> None:
    """`search pelican --limit 0` said "No matches for 'pelican'" where --json counted them."""
    home, bank, _ = _one_session(tmp_path)
    result = CliRunner().invoke(cli, ["--bank", str(bank), "search", "pelican", "--limit", "0"], env={"HOME": str(home)})
    assert "No matches" not in result.output
    assert result.exit_code == 2 and "'--limit'" in result.stderr, result.output


@pytest.mark.parametrize("command", [["show"], ["reparse", "--session"], ["forget", "--dry-run"],
                                     ["resume", "--in", "codex", "--dry-run"]])
def test_a_session_that_is_not_found_or_not_one_says_what_to_give(tmp_path: Path, command: list[str]) -> None:
    """"no session matches 'zzz'" and "'a' matches several sessions: ..." said what was wrong, not what to do."""
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    for cwd in ("/work/a", "/work/b"):
        s = ClaudeSession(home, cwd, session_id="abcdef00-0000-4000-8000-" + cwd[-1] * 12)  # two ids, one start
        s.write(s.user("hello"), s.assistant("hi"))
    scan(home, bank)
    for ref, hint in (("abcdef", "give more of the id"), ("zzz", "`harvester sessions` lists")):
        args = [*command[:1], ref, *command[1:]] if command[0] != "reparse" else [*command, ref]
        result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)})
        assert result.exit_code == 1 and hint in result.stderr, result.output


def test_show_refuses_an_event_number_below_one_and_a_negative_context(tmp_path: Path) -> None:
    """`show ID --around -1` showed #1, `--from -3` every event and `-C -2` the one event, as if they meant something."""
    home, bank, s = _one_session(tmp_path)
    for args, option in ((["--around", "-1"], "'--around'"), (["--around", "0"], "'--around'"),
                         (["--from", "-3"], "'--from'"), (["--around", "2", "-C", "-2"], "'-C' / '--context'")):
        result = CliRunner().invoke(cli, ["--bank", str(bank), "show", s.id, *args], env={"HOME": str(home)})
        assert result.exit_code == 2 and f"Invalid value for {option}" in result.stderr, result.output
    assert _cli(home, bank, "show", s.id, "--around", "2", "-C", "0").exit_code == 0


def test_a_wrong_harness_gets_a_did_you_mean(tmp_path: Path) -> None:
    home, bank, _ = _one_session(tmp_path)
    for args, meant in ((["sessions", "--harness", "claud"], "'claude-code'"),
                        (["search", "x", "--harness", "Codex"], "'codex'"),
                        (["scan", "--harness", "gemini"], "'gemini-cli'"),
                        (["connect", "cladue-code"], "'claude-code'")):
        result = CliRunner().invoke(cli, ["--bank", str(bank), *args], env={"HOME": str(home)})
        assert result.exit_code == 2 and f"did you mean {meant}" in result.stderr, result.output
        assert "'zed'" not in result.stderr  # not every name there is
    unlike = CliRunner().invoke(cli, ["--bank", str(bank), "sessions", "--harness", "xyzzy"], env={"HOME": str(home)})
    assert unlike.exit_code == 2 and "did you mean" not in unlike.stderr and "status --all" in unlike.stderr


def test_connects_usage_line_does_not_wrap_mid_word() -> None:
    text = CliRunner().invoke(cli, ["connect", "--help"], terminal_width=80, prog_name="harvester").output
    usage = text.split("\n\n")[0]
    assert usage.startswith("Usage: harvester connect [OPTIONS] [AGENT]...") and len(usage.splitlines()) == 1
    assert "claude-code, codex, gemini-cli" in text
    for command in (["connect"], ["disconnect"], []):  # no agent's name (nor a bank id) cut at its hyphen
        text = CliRunner().invoke(cli, [*command, "--help"], terminal_width=80, prog_name="harvester").output
        assert not re.search(r"[a-z]-\n", text), text
        assert all(len(line) <= 80 for line in text.splitlines()), text


def test_counts_are_in_words(tmp_path: Path) -> None:
    from harvester.bank.scope import EVERYTHING
    from harvester.recall import brief, views
    from harvester.recall.views import Recall

    home, bank_path, s = _one_session(tmp_path)
    from harvester.bank import open_bank

    with open_bank(bank_path) as bank:
        r = Recall(bank, EVERYTHING)
        texts = [brief.handoff(r, s.id), views.recent_sessions(r), views.get_events(r, s.id)]
    said = "\n".join(texts)
    assert "1 ask," in said and "1 tool call," in said and "1 tool calls" not in said and "1 asks" not in said
    assert "4 events" in said and "1 answer," in said
    assert "4 events" in _cli(home, bank_path, "show", s.id).stdout


# --- MCP: every repository named, none said, prompts ------------------------------------------------------

def _in_process(bank: Any, cwd: Path, calls: list[tuple[str, dict[str, Any]]],
                prompts: list[tuple[str, dict[str, str]]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    from mcp import Client

    from harvester.config import DEFAULT_BANK_ID_TEMPLATE
    from harvester.recall.mcp import build_server

    server = build_server(bank, str(cwd), DEFAULT_BANK_ID_TEMPLATE)

    async def talk() -> dict[str, Any]:
        async with Client(server) as client:
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                results.append((bool(result.is_error), "".join(c.text for c in result.content)))
            got = []
            for name, arguments in prompts:
                prompt = await client.get_prompt(name, arguments)
                got.append([(m.role, m.content.text) for m in prompt.messages])
            listed = (await client.list_resources()).resources
            return {"results": results, "prompts": (await client.list_prompts()).prompts, "got": got,
                    "resources": listed,
                    "read": [(await client.read_resource(r.uri)).contents[0].text for r in listed[:1]]}
    return asyncio.run(talk())


def _two_repositories(tmp_path: Path) -> tuple[Path, dict[str, ClaudeSession]]:
    home, bank = tmp_path / "home", tmp_path / "bank.sqlite"
    out = {}
    for name in ("shop", "blog"):
        s = ClaudeSession(home, str(make_repo(tmp_path / name)))
        s.write(s.user(f"fix the pelican in {name}"), s.assistant(f"fixed the pelican in {name}"))
        out[name] = s
    scan(home, bank)
    return bank, out


def test_all_repos_answers_name_each_sessions_repository(tmp_path: Path) -> None:
    from harvester.bank import open_bank

    bank_path, s = _two_repositories(tmp_path)
    with open_bank(bank_path) as bank:
        out = _in_process(bank, tmp_path, [
            ("recent_sessions", {"all_repos": True}), ("search_history", {"query": "pelican", "all_repos": True}),
            ("handoff", {"session": s["shop"].id, "all_repos": True}),
            ("get_events", {"session": s["blog"].id, "all_repos": True})])
    recent, found, handed, events = (text for _, text in out["results"])
    for name in ("shop", "blog"):
        block = next(b for b in recent.split("\n## ") if s[name].id in b)
        assert f"coding-agent::{name}" in block, block
        assert any(s[name].id in line and f"coding-agent::{name}" in line for line in found.splitlines()), found
    assert "coding-agent::shop" in handed.split("\n\n")[1] and "coding-agent::blog" in events.split("\n\n")[1]


def test_handoff_where_there_is_no_session_says_there_is_none(tmp_path: Path) -> None:
    from harvester.bank import open_bank

    bank_path, _ = _two_repositories(tmp_path)
    empty = make_repo(tmp_path / "empty")
    result = CliRunner().invoke(cli, ["--bank", str(bank_path), "context", "--repo", str(empty)],
                                env={"HOME": str(tmp_path / "home")})
    assert result.exit_code == 0 and result.stdout.startswith("No session in coding-agent::empty yet"), \
        result.output
    with open_bank(bank_path) as bank:
        [(error, text)] = _in_process(bank, empty, [("handoff", {})])["results"]
    assert not error and text.startswith("<harvester-history") and "No session in coding-agent::empty" in text
    assert "all_repos" in text


def test_context_of_a_session_not_in_this_repository_names_the_command_that_lists_them(tmp_path: Path) -> None:
    """A person's `context --session ID` of another repository's session is told a command, not an MCP tool."""
    bank_path, s = _two_repositories(tmp_path)
    empty = make_repo(tmp_path / "empty")
    result = CliRunner().invoke(cli, ["--bank", str(bank_path), "context", "--repo", str(empty), "--session",
                                      s["shop"].id], env={"HOME": str(tmp_path / "home")})
    assert result.exit_code == 1 and f"no session '{s['shop'].id}' in coding-agent::empty" in result.stderr
    assert "recent_sessions" not in result.stderr and "`harvester sessions`" in result.stderr, result.stderr


def test_the_server_offers_handoff_and_search_prompts_and_its_resources_still_work(tmp_path: Path) -> None:
    from harvester.bank import open_bank

    bank_path, s = _two_repositories(tmp_path)
    with open_bank(bank_path) as bank:
        out = _in_process(bank, tmp_path / "shop", [], prompts=[("handoff", {}), ("search", {"query": "pelican"})])
    assert {p.name for p in out["prompts"]} == {"handoff", "search"}
    search = next(p for p in out["prompts"] if p.name == "search")
    assert [(a.name, a.required) for a in search.arguments] == [("query", True)]
    [[(role, handoff)], [(_, found)]] = out["got"]
    assert role == "user" and "<harvester-history kind=\"handoff\"" in handoff and s["shop"].id in handoff
    assert "Pick up where" in handoff.split("<harvester-history")[0]
    assert "<harvester-history kind=\"search_history\"" in found and s["shop"].id in found
    assert [str(r.uri).rsplit("/", 1)[1] for r in out["resources"]] == [s["shop"].id]
    assert "# Handoff:" in out["read"][0]


# --- the same on every captured real run ------------------------------------------------------------------

def test_on_the_real_captures(tmp_path: Path) -> None:
    """The bank of every captured real run (fixtures/*/real): the bank-id filter, --repo naming where sessions
    were recorded (not on this machine), all_repos naming each repository, a status that fits 80 columns, and a
    brief that counts in words."""
    from harvester.bank import open_bank
    from tests.machine import real_capture_bank
    from tests.test_terminal import on_a_terminal, terminal_env

    bank, home = real_capture_bank(tmp_path), tmp_path / "home"
    home.mkdir()
    by_id = orjson.loads(_cli(home, bank, "sessions", "--bank-id", "coding-agent::demo-repo", "--json").stdout)
    assert len(by_id) > 20 and {s["bank_id"] for s in by_id} == {"coding-agent::demo-repo"}
    recorded = by_id[0]["cwd"]
    assert not os.path.exists(recorded)
    assert [s["native_id"] for s in orjson.loads(_cli(home, bank, "sessions", "--repo", recorded, "--json").stdout)]
    wrong = CliRunner().invoke(cli, ["--bank", str(bank), "sessions", "--repo", recorded + "-typo"],
                               env={"HOME": str(home)})
    assert wrong.exit_code == 2 and "no session was recorded there" in wrong.stderr
    with open_bank(bank) as opened:
        [(error, text)] = _in_process(opened, tmp_path, [("recent_sessions", {"all_repos": True, "limit": 100,
                                                                              "max_bytes": 200_000})])["results"]
    blocks = text.split("\n## ")[1:]
    assert not error and len(blocks) > 40 and all(", in coding-agent::" in b for b in blocks)
    code, out = on_a_terminal(terminal_env(home), "--bank", str(bank), "status", columns=80)
    assert code == 0 and all(len(line) <= 80 for line in out.replace("\r", "").splitlines())
    context = _cli(home, bank, "context", "--repo", recorded, "--session", by_id[0]["native_id"]).stdout
    assert not re.search(r"\b1 (asks|tool calls|tool errors|events|files|commands)\b", context), context
