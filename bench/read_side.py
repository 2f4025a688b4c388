"""Not a timing: what a reader gets of one long session (issue 24's closing figures), here and in another checkout.

    python bench/read_side.py [--compare-root OTHER_CHECKOUT]

The session is the handoff goldens' (tests/test_handoff.py: 25 turns of Claude Code 2.1.197 from bench/gen_claude.py
with a fixed seed and vocabulary: 463 events, 22 files changed, 7 failed commands, 2 other tool errors). Each
checkout scans it into a bank of its own with its own code (``python -m harvester`` on its PYTHONPATH), then says:
the brief at 2, 8 and 32 KB (bytes, lines, how many of the 9 failures and of the 22 changed files it names, whether
it keeps the last answer, how many cuts name get_events to a person), and ``show`` and ``show --full`` (lines,
bytes, events numbered). ``--compare-root``: e.g. a ``git archive`` of the commit before issue 24's merges.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FAILURES = (362, 343, 334, 310, 305, 141, 127, 103, 12)  # the positions of the seed's failed calls
LAST_ANSWER = "Lists rest except where event leaves the dict."  # the start of its last answer (#463)


def harvester(code: Path, home: Path, bank: Path, *args: str) -> str:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(code)}
    env = {k: v for k, v in env.items() if not k.startswith(("HARVESTER_", "XDG_"))}
    done = subprocess.run([sys.executable, "-m", "harvester", "--bank", str(bank), *args], env=env, cwd="/",
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{code}: harvester {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def measure(code: Path, home: Path, sid: str, repo: str, out: Path) -> None:
    bank = out / f"{code.name}.sqlite"
    harvester(code, home, bank, "scan", "--harness", "claude-code")
    print(f"\n{code}")
    for kb in (2, 8, 32):
        text = harvester(code, home, bank, "context", "--repo", repo, "--session", sid, "--max-bytes", str(kb * 1024))
        named = sum(1 for n in FAILURES if re.search(rf"^.*#{n}\b.*(exit \d|[Ee]rror|FAILED|failed).*$", text, re.M))
        files = len(re.findall(r"^- `[^`]+` \+\d+ -\d+", text, re.M))
        print(f"  brief {kb:>2} KB: {len(text.encode()):>6,} bytes {text.count(chr(10)):>4} lines; failures named with why "
              f"{named}/{len(FAILURES)}; changed files with a diff stat {files}; last answer kept: "
              f"{LAST_ANSWER in text}; cuts naming get_events: {text.count('get_events has them')}")
    for extra in ((), ("--full",)):
        text = harvester(code, home, bank, "show", sid, *extra)  # piped: never paged
        numbered = len(re.findall(r"^#\d+ ", text, re.M))
        print(f"  show{' --full' if extra else ''}: {text.count(chr(10)):>6,} lines {len(text.encode()):>9,} bytes; "
              f"events numbered: {numbered}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare-root", type=Path, help="another checkout to measure beside this one")
    args = parser.parse_args()
    from tests.test_handoff import REPO, long_session

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        sid = long_session(home)
        for code in ([args.compare_root.resolve()] if args.compare_root else []) + [ROOT]:
            measure(code, home, sid, REPO, Path(tmp))


if __name__ == "__main__":
    main()
