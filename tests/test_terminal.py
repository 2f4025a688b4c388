"""Transcript content reaches a terminal shown, never obeyed: escape sequences, C1 controls, bidi overrides."""

from __future__ import annotations

import ast
import errno
import fcntl
import io
import os
import select
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import structlog

from harvester import log
from harvester.bank import open_bank
from harvester.cli import cli, render
from harvester.model import Problem
from harvester.terminal import VisibleErrors, visible
from tests.helpers import ClaudeSession, events_of, scan

ROOT = Path(__file__).resolve().parent.parent

BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
UNSAFE = [c for c in range(0x20) if c not in (0x09, 0x0A)] + [0x7F, *range(0x80, 0xA0), *BIDI]
HOSTILE = ("\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write the clipboard
           "\x1b]0;pwned\x07"  # OSC 0: the window title
           "\x1b[2J"  # clear the screen
           "looks fine\rcovered"  # \r: overwrite what the line showed
           "\x9b31m"  # C1 CSI, obeyed by terminals that take 8-bit controls
           "if admin\u202e } \u2066")  # Trojan Source: shown in another order than stored


def is_unsafe(ch: str) -> bool:
    return ord(ch) in UNSAFE


@pytest.mark.parametrize("text", [
    "", "plain ascii", "lines\nand\ttabs\n", "naïve — ünïcödé ✓ 日本語 🙂", "control pictures ␛ ␍ stay",
    "a backslash \\x1b is just text", "\u200f\u200e marks and \ufeff stay",
])
def test_clean_text_is_returned_as_it_is(text: str) -> None:
    assert visible(text) is text


@pytest.mark.parametrize("code", UNSAFE, ids=lambda c: f"U+{c:04X}")
def test_every_control_is_shown_visibly(code: int) -> None:
    shown = visible(f"a{chr(code)}b")
    assert shown.startswith("a") and shown.endswith("b") and len(shown) > 2
    assert not any(is_unsafe(ch) for ch in shown)
    assert all(ch.isprintable() for ch in shown)


def test_c0_and_del_become_one_column_control_pictures() -> None:
    assert visible("\x1b[2J\r\x07\x00\x7f") == "␛[2J␍␇␀␡"
    for code in [*range(0x09), *range(0x0B, 0x20), 0x7F]:
        picture = visible(chr(code))
        assert len(picture) == 1 and unicodedata.name(picture).startswith("SYMBOL FOR ")
        assert unicodedata.east_asian_width(picture) in ("N", "Na")  # one column on every terminal


def test_c1_and_bidi_become_escapes() -> None:
    assert visible("\x9b31m\x85") == "\\x9b31m\\x85"
    assert visible("x\u202ey\u2066z\u2069") == "x\\u202ey\\u2066z\\u2069"


def test_newlines_and_tabs_are_kept() -> None:
    assert visible("a\n\tb\x1b\n") == "a\n\tb␛\n"


def test_it_is_idempotent() -> None:
    once = visible(HOSTILE)
    assert visible(once) is once
    assert "␛]52;c;cHduZWQ=␇" in once and "looks fine␍covered" in once and "\\x9b31m" in once


def test_every_code_point_outside_the_set_is_left_alone() -> None:
    for code in range(0x3000):
        if 0xD800 <= code < 0xE000:
            continue
        ch = chr(code)
        assert (visible(ch) != ch) == (is_unsafe(ch)), f"U+{code:04X}"


def test_a_large_clean_transcript_costs_one_search_and_no_copy() -> None:
    text = "ordinary output, naïve ünïcode — line\n\tindented\n" * 200_000  # ~10 MB
    assert visible(text) is text


# --- through a real terminal ---------------------------------------------------------------------

# HOSTILE as it is shown (written out, not computed with visible()).
SHOWN = "␛]52;c;cHduZWQ=␇␛]0;pwned␇␛[2Jlooks fine␍covered\\x9b31mif admin\\u202e } \\u2066"
EVIL_ID = "evil\x1b]0;pwned\x07\r"  # a file name: Claude Code's native id is the file's stem


def terminal_env(home: Path) -> dict[str, str]:
    """Nothing of the real home, config or service (all found from HOME): temp paths, a UTF-8 locale. `show` on a
    terminal pages through $PAGER: cat, so that the terminal receives exactly what harvester wrote (less would
    add its own escape sequences; test_show_pages_through_the_pager checks what a pager is handed)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "TERM": "xterm", "HARVESTER_RUNTIME_DIR": str(home / "run"), "PAGER": "cat"}


@dataclass
class Hostile:
    home: Path
    bank: Path
    first: ClaudeSession

    def harvester(self, *args: str) -> tuple[int, str]:
        return on_a_terminal(terminal_env(self.home), "--bank", str(self.bank), *args)


def hostile_sessions(home: Path, prefix: str = EVIL_ID) -> list[ClaudeSession]:
    """Two sessions whose ids share a prefix; the first holds HOSTILE in every field a person reads."""
    cwd = "/tmp/shop\x1b[2J\u202e"  # its last part names the bank (no repository there)
    first = ClaudeSession(home, cwd, session_id=prefix + "-0001")
    first.write(
        orjson.dumps({"type": "custom-title", "customTitle": "T " + HOSTILE, "sessionId": first.id}) + b"\n",
        first.user("U " + HOSTILE),
        first.tool_use("Bash", {"command": "printf " + HOSTILE}, "t1"),
        first.tool_result("t1", "O " + HOSTILE),
        orjson.dumps({"type": "weird\x1b[2J", "sessionId": first.id}) + b"\n",  # drift: a record type
        b'{"broken\n',  # a problem whose source path is the hostile file name
    )
    second = ClaudeSession(home, cwd, session_id=prefix + "-0002")
    second.write(second.user("another"))
    return [first, second]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    root = tmp_path_factory.mktemp("hostile")
    home = root / "home"
    bank = root / "bank\x1b]0;pwned\x07" / "bank.sqlite"  # the bank's own path is shown too
    bank.parent.mkdir()
    first, _ = hostile_sessions(home)
    log.configure("error", stream=io.StringIO())  # set up before the per-test quiet logs are
    scan(home, bank)
    with open_bank(bank) as b:  # a detail that quotes what it read, as a parser's detail may
        b.record_problems("claude-code", str(first.path), [Problem("malformed", 9, "D " + HOSTILE)])
    return Hostile(home, bank, first)


def on_a_terminal(env: dict[str, str], *args: str, stderr_too: bool = True, columns: int = 200) -> tuple[int, str]:
    """Run ``harvester ARGS`` with stdout (and stderr) on a pty of ``columns`` columns, so isatty() is true
    and the terminal paths run; returns the exit code and every character the terminal received."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no \n -> \r\n translation: a \r that arrives was sent
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "harvester", *args], cwd=ROOT, env=env,
                                stdin=slave, stdout=slave,
                                stderr=slave if stderr_too else subprocess.DEVNULL)
    finally:
        os.close(slave)
    try:
        received = read_until_closed(master, deadline=time.monotonic() + 60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()  # only when the deadline passed
    return proc.wait(timeout=10), received.decode("utf-8")


def read_until_closed(master: int, deadline: float) -> bytes:
    received = bytearray()
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError as exc:  # EIO: every writer has closed the terminal
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        received += chunk
    return bytes(received)


def assert_nothing_obeyable(output: str) -> None:
    raw = sorted({f"U+{ord(ch):04X}" for ch in output if is_unsafe(ch)})
    assert raw == [], f"raw control characters reached the terminal: {raw}\n{output!r}"


def assert_shown(output: str, *fragments: str) -> None:
    assert_nothing_obeyable(output)
    missing = [f for f in fragments if f not in output]
    assert missing == [], f"not shown: {missing}\n{output}"


def test_show_on_a_terminal(hostile: Hostile) -> None:
    code, out = hostile.harvester("show", hostile.first.id)
    assert code == 0, out
    assert_shown(out, "T " + SHOWN, "\n  U " + SHOWN, "\n  Bash: printf " + SHOWN, "\n  O " + SHOWN,
                 "session evil␛]0;pwned␇␍-0001", "cwd /tmp/shop␛[2J\\u202e")


def test_sessions_on_a_terminal(hostile: Hostile) -> None:
    code, out = hostile.harvester("sessions")
    assert code == 0, out
    assert_shown(out, "evil␛]0;pwned␇␍-0001", "coding-agent::shop␛[2J\\u202e", "T " + SHOWN)  # a wide terminal: the whole title
    rows = out.splitlines()[1:]
    assert len({row.index("claude-code") for row in rows}) == 1  # columns line up with visible forms
    assert len({row.index("2026-11-01") for row in rows}) == 1


def test_search_on_a_terminal(hostile: Hostile) -> None:
    code, out = hostile.harvester("search", "pwned")
    assert code == 0, out
    assert_shown(out, "claude-code evil␛]0;pwned␇␍-0001 #1 user (coding-agent::shop␛[2J\\u202e): U ␛]52;c;",
                 "O ␛]52;c;cHduZWQ=␇␛]0;[pwned]␇␛[2Jlooks fine␍covered")


def test_status_on_a_terminal(hostile: Hostile) -> None:
    code, out = hostile.harvester("status")
    assert code == 0, out
    assert_shown(out, "Bank: " + str(hostile.bank.parent).replace("\x1b", "␛").replace("\x07", "␇"),
                 "  T " + SHOWN[:47] + "…", "/evil␛]0;pwned␇␍-0001.jsonl:9 malformed: D " + SHOWN,
                 "unknown record types: type='weird\\x1b[2J'")


def test_an_error_naming_sessions_on_a_terminal(hostile: Hostile) -> None:
    code, out = hostile.harvester("show", "evil")
    assert code == 1, out
    assert_shown(out, "matches several sessions", "evil␛]0;pwned␇␍-0001", "evil␛]0;pwned␇␍-0002")


def test_scan_and_its_log_lines_on_a_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hostile_sessions(home, prefix="evil\x1b]0;pwned\x07")  # no \r: the log renderer prints it unquoted
    bank = tmp_path / "b\x1b[2J" / "bank.sqlite"
    bank.parent.mkdir()
    # --json: no progress bar (click's own cursor codes), so stderr holds only the readable log lines.
    code, out = on_a_terminal(terminal_env(home), "--bank", str(bank), "scan", "--json")
    assert code == 0, out
    assert_shown(out, "record skipped", "/evil␛]0;pwned␇-0001.jsonl")
    code, out = on_a_terminal(terminal_env(home), "--bank", str(bank), "scan", stderr_too=False)
    assert code == 0, out
    assert_shown(out, "Nothing new", "b␛[2J/bank.sqlite")  # the first scan above imported everything


def test_json_output_and_the_bank_keep_the_raw_characters(hostile: Hostile) -> None:
    code, out = hostile.harvester("show", hostile.first.id, "--json")
    assert code == 0, out
    assert "\\u001b]52;c;cHduZWQ=\\u0007" in out and "looks fine\\rcovered" in out  # JSON's own escapes
    assert not any(c in out for c in "\x7f\x9b\u202e\u2066"), "DEL, C1 and bidi go out as JSON escapes too"
    document = orjson.loads(out)
    assert document["session"]["title"] == "T " + HOSTILE and document["session"]["native_id"] == hostile.first.id
    assert document["events"][0]["text"] == "U " + HOSTILE
    listed = orjson.loads(hostile.harvester("sessions", "--json")[1])
    assert {s["native_id"] for s in listed} == {EVIL_ID + "-0001", EVIL_ID + "-0002"}
    assert "U " + HOSTILE in [e["text"] for e in events_of(hostile.bank, hostile.first.id)]


# --- the choke points --------------------------------------------------------------------------

def test_the_readable_log_renderer_shows_controls() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    log.configure("info", stream=stream)
    # A value with no space or quote is printed as it is, not as a repr: the case that needs visible().
    structlog.get_logger().warning("record skipped", path="/p/evil\x1b]0;pwned\x07", detail=HOSTILE)
    assert_shown(stream.getvalue(), "record skipped", "path=/p/evil␛]0;pwned␇")


def test_tables_are_measured_as_shown() -> None:
    rows = [{"native_id": native, "harness": "claude-code", "bank_id": "b\x1b[2J", "updated_at": None,
             "started_at": None, "event_count": 1, "title": "t\x9b"} for native in ("plain-id", "id\x1b]0;x\x07")]
    lines = render.sessions_text(rows).splitlines()
    assert_nothing_obeyable("\n".join(lines))
    assert len({line.index("HARNESS" if i == 0 else "claude-code") for i, line in enumerate(lines)}) == 1


def test_cli_errors_pass_through_visible() -> None:
    assert isinstance(cli, VisibleErrors)


def _writes_to_a_terminal(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id == "print"
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return (f.value.id, f.attr) in {("click", "echo"), ("click", "secho"), ("click", "echo_via_pager")}
    return (isinstance(f, ast.Attribute) and f.attr == "write" and isinstance(f.value, ast.Attribute)
            and f.value.attr in ("stdout", "stderr"))


def test_nothing_prints_around_terminal_echo() -> None:
    """A new command cannot forget the sanitizer: harvester prints through terminal.echo, or JSON."""
    found = []
    for path in (ROOT / "harvester").rglob("*.py"):
        if path.name == "terminal.py":
            continue
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef) or func.name == "_print_json":  # JSON escapes controls
                continue
            found += [f"{path.name}:{c.lineno}" for c in ast.walk(func)
                      if isinstance(c, ast.Call) and _writes_to_a_terminal(c)]
    assert found == []


# --- one-line values cannot start a line of their own ----------------------------------------------------

FORGED = "\nFORGED #9 [10:00:00] user"  # what a value holding a line break would print at column 0


@pytest.fixture(scope="module")
def multiline(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    """A session whose one-line values (its id: a file name; its version, cwd, branch, model, a tool's name)
    hold a line break, as a transcript can write them; the rest set in the bank, as a teammate's rows or a
    damaged bank can hold them."""
    root = tmp_path_factory.mktemp("multiline")
    home, bank = root / "home", root / "bank.sqlite"
    s = ClaudeSession(home, "/tmp/shop" + FORGED, session_id="line" + FORGED, version="2.1" + FORGED)
    s.write(s.user("walrus ask"), s.assistant("walrus answer").replace(b"claude-sonnet-4-5",
                                                                        orjson.dumps("m" + FORGED)[1:-1]),
            s.tool_use("Bash" + FORGED, {"command": "walrus"}, "t1"), s.tool_result("t1", "walrus out"))
    for n in (1, 2):  # two whose ids share a prefix: an error lists them
        twin = ClaudeSession(home, "/tmp/shop", session_id=f"twin{FORGED}-{n}")
        twin.write(twin.user("twin ask"))
    scan(home, bank)
    with open_bank(bank) as b, b.conn:
        b.conn.execute("UPDATE sessions SET branch = ?, parent_native_id = ?, parent_kind = ?, origin_id = ?, "
                       "repo_root = ?, git_error = ?, state = ?, title = ?, updated_at = ?",
                       ("branch" + FORGED, "parent" + FORGED, "kind" + FORGED, "origin" + FORGED,
                        "/root" + FORGED, "git" + FORGED, "state" + FORGED, "title" + FORGED,
                        "2026-11-01T" + FORGED))
        b.conn.execute("UPDATE events SET ts = ?", ("2026-11-01T" + FORGED,))
        b.conn.execute("UPDATE events SET role = ? WHERE role = 'user' AND kind = 'text'", ("user" + FORGED,))
    return Hostile(home, bank, s)


@pytest.mark.parametrize("command", [("show", "line"), ("show", "line", "--full"), ("sessions",),
                                     ("search", "walrus"), ("usage",), ("usage", "session"), ("usage", "blocks"),
                                     ("usage", "monthly", "--by", "harness,model,repo"), ("status",),
                                     ("resume", "line", "--in", "codex", "--dry-run"),
                                     ("forget", "line", "--dry-run")])
def test_a_value_with_a_line_break_starts_no_line_on_a_terminal(multiline: Hostile, command: tuple) -> None:
    """A person reading `show`, a listing, a search, a usage table or what `resume` wrote sees every row and
    header as harvester wrote it: a session id, a model or a tool name cannot print a line (a forged event, a
    forged row, a forged command to continue it) of its own."""
    code, out = multiline.harvester(*command)
    assert code == 0, out
    assert "FORGED" in out, out
    assert_nothing_obeyable(out)
    forged = [line for line in out.splitlines() if line.startswith("FORGED")]
    assert forged == [], out


@pytest.mark.parametrize("command", [("show", "twin"), ("resume", "twin", "--in", "codex", "--dry-run"),
                                     ("forget", "twin", "--dry-run")])
def test_an_error_listing_sessions_keeps_each_on_its_line(multiline: Hostile, command: tuple) -> None:
    code, out = multiline.harvester(*command)
    assert code == 1 and "matches several sessions" in out, out
    assert "FORGED" in out and [line for line in out.splitlines() if line.startswith("FORGED")] == [], out


def test_a_huge_session_id_does_not_widen_every_row_of_a_listing() -> None:
    """Piped (no terminal width), a session id of 100,000 characters (a Gemini CLI sessionId is the file's
    content; a teammate's row is anything) padded every row of `sessions` to its width: megabytes of spaces.
    It runs past the id column on its own row, as it does on a terminal."""
    rows = [{"native_id": native, "harness": "gemini-cli", "bank_id": "coding-agent::app", "updated_at": None,
             "started_at": None, "event_count": 1, "title": "t"} for native in ("x" * 100_000, "plain-id")]
    lines = render.sessions_text(rows).splitlines()
    assert len(lines[2]) < 200, len(lines[2])
    assert lines[1].startswith("x" * 100_000) and len({line.index("gemini-cli") for line in lines[2:]}) == 1
