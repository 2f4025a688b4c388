"""Texts kept on the new harnesses' hand-written stores (issue 30): harvester beside agentsview.

    python bench/bench_new_agents.py [--no-install]

For each fixture tree below, scans it with harvester (laid out as tests/golden.py does) and syncs it with agentsview
(the PyPI package, installed on first use into bench/out/agentsview-venv as bench/bench_backfill.py does), pointed at
the tree by agentsview's own variable for that agent, with a throwaway ``HOME`` and data dir, offline. Prints, for
each: sessions / events (messages) with text / characters of that text. agentsview's count is its messages'
``content`` only (its tool results are kept apart, as raw JSON); harvester's is every event's text. The last
column lists each line agentsview keeps (message contents and tool results, its own labels taken off) that is
in no event of harvester's (text, tool input or meta). Not a test: nothing here runs in the suite.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from bench.bench_backfill import agentsview_binary, base_env, ensure_agentsview  # noqa: E402
from harvester.bank import open_bank  # noqa: E402
from tests.golden import LAYOUTS  # noqa: E402
from tests.helpers import scan  # noqa: E402

# Layout key (tests/golden.py) -> agentsview's variable for the agent's store, and the folder of the tree it names.
CASES = {"zencoder": ("ZENCODER_DIR", ""), "cortex": ("CORTEX_DIR", ""), "qclaw": ("QCLAW_DIR", "agents"),
         "shelley": ("SHELLEY_DIR", "")}


# agentsview's own labels around what the agent wrote: "[Thinking]", "[Bash: ...]", "$ ", "[Turn finished: x]".
_LABEL = re.compile(r"^\[(?:/?Thinking|Turn finished: \w+|\d+ tool result\(s\))\]$|^\[[A-Za-z ]+(?:: )?|\]$|^\$ ")


def ours(key: str, tmp: Path) -> tuple[tuple[int, int, int], str]:
    layout = LAYOUTS[key]
    home, tree, bank_path = tmp / "home", tmp / "tree", tmp / "bank.sqlite"
    home.mkdir()
    shutil.copytree(layout.base(key) / layout.hand, tree)
    env, roots = layout.place(tree, home)
    scan(home, bank_path, (layout.harness,), env={"HOME": str(home), **env}, extra_roots=roots)
    bank = open_bank(bank_path)
    try:
        sessions = bank.list_sessions()
        events = [e for s in sessions for e in bank.events(s["id"])]
    finally:
        bank.close()
    texts = [e["text"] for e in events if e["text"].strip()]
    held = "\n".join(e["text"] + orjson.dumps(e["tool_input"]).decode() + orjson.dumps(e["meta"]).decode()
                     for e in events)
    return (len(sessions), len(texts), sum(len(t) for t in texts)), held.replace("\\n", "\n") + "\n" + held


def theirs(key: str, tmp: Path) -> tuple[tuple[int, int, int], list[str]] | str:
    tree = tmp / "tree"
    shutil.copytree(LAYOUTS[key].base(key) / LAYOUTS[key].hand, tree)
    for sql in tree.rglob("*.sql"):  # hand-written databases are kept as SQL text
        conn = sqlite3.connect(sql.with_suffix(".db"))
        conn.executescript(sql.read_text())
        conn.commit()
        conn.close()
    home = tmp / "home"
    home.mkdir()
    env = base_env() | {
        "HOME": str(home), "AGENTSVIEW_DATA_DIR": str(tmp / "data"),
        CASES[key][0]: str(tree / CASES[key][1] if CASES[key][1] else tree),
        "AGENTSVIEW_NO_DAEMON": "1", "AGENTSVIEW_NO_BROWSER": "1", "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        "AGENTSVIEW_TELEMETRY_ENABLED": "0", "DO_NOT_TRACK": "1",
    }
    done = subprocess.run([str(agentsview_binary()), "sync"], env=env, capture_output=True, text=True, timeout=300)
    db = tmp / "data" / "sessions.db"
    if done.returncode != 0 or not db.exists():
        return f"exit {done.returncode}"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        texts = [t for (t,) in conn.execute("SELECT content FROM messages") if isinstance(t, str) and t.strip()]
        results = [t for (t,) in conn.execute("SELECT result_content FROM tool_calls") if isinstance(t, str)]
    finally:
        conn.close()
    return (sessions, len(texts), sum(len(t) for t in texts)), texts + results


def lacking(held: str, kept: list[str]) -> list[str]:
    """The lines of ``kept`` (their labels taken off) found nowhere in ``held``."""
    out = []
    for text in kept:
        for line in text.splitlines():
            line = _LABEL.sub("", line.strip()).strip()
            # A prompt's channel envelope ("[<day> <time>] text") is its meta here, apart from its text.
            if len(line) > 8 and line not in held and not all(part in held for part in line.split("] ")):
                out.append(line)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-install", action="store_true", help="do not install agentsview from PyPI")
    args = parser.parse_args()
    version, why_not = ensure_agentsview(not args.no_install)
    print(f"agentsview: {version or why_not}")
    print(f"{'fixture':24} {'harvester':>22} {'agentsview':>22}  agentsview's lines harvester lacks")
    for key in CASES:
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            counts, held = ours(key, Path(a))
            mine = " / ".join(f"{n:,}" for n in counts)
            other = theirs(key, Path(b)) if version else "-"
            shown = other if isinstance(other, str) else " / ".join(f"{n:,}" for n in other[0])
            missing = "" if isinstance(other, str) else repr(lacking(held, other[1]))
            print(f"{key + '/hand':24} {mine:>22} {shown:>22}  {missing}")


if __name__ == "__main__":
    from harvester import log

    log.configure("error")
    main()
