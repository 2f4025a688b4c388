"""Generate a home of a few large Claude Code sessions: long sessions, big tool outputs (issue 29's second tree).

    python bench/gen_large_sessions.py OUT_DIR [--mb 450] [--files 8] [--seed 7]
    python bench/gen_large_sessions.py --cached [--mb 450]   # bench/out/large-s7-450mb-v1, made once

Where bench/gen_tree.py writes hundreds of files of median-sized sessions over three agents, this writes
``--files`` Claude Code sessions (``HOME/.claude/projects/<encoded cwd>/<uuid>.jsonl``, with their subagents)
of about ``--mb / --files`` MiB each: the shape of a heavy user's working sessions, hundreds of turns long,
whose tool output is file dumps and build logs. Every record is gen_claude.py's (the captured shapes, this
repository's vocabulary, planted secrets); only two things are widened: a session goes on turn after turn until
it has its share of the bytes, and tool output is log-normal around 3,500 characters (sigma 1.3, to the same
256 KB cap) instead of 1,500, which brings lines to ~2 KB on average (the trees the issue measured: 2.1 KB).
``manifest.json`` has the keys bench_backfill.py reads (bytes and files per agent, planted secrets).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import gen_claude  # noqa: E402
from bench.gen_bank import vocabulary  # noqa: E402
from bench.gen_common import repositories  # noqa: E402
from bench.gen_text import SecretLog, Writing  # noqa: E402

GENERATOR_VERSION = 1  # bump when the shapes change: cached trees of another version are not reused
OUT = ROOT / "bench" / "out"
BIG_OUTPUT = (3500, 1.3)  # median characters and sigma of a tool's output (gen_text.TOOL_OUTPUT: 1,500)


class BigOutputs(Writing):
    """gen_text's texts with tool output (shell output, file contents, search hits) about twice as large."""

    def output_size(self) -> int:
        return self.sized(BIG_OUTPUT)

    def file_text(self) -> str:
        return self.code_for(self.sized(BIG_OUTPUT))


def write_long_session(w: Writing, projects: Path, cwd: str, target: int,
                       listings: list[gen_claude.Template]) -> int:
    """One session of about ``target`` bytes (turn after turn), with its subagents; the bytes written."""
    session = gen_claude.ClaudeSession(w, cwd, listings)
    size, turn = 0, 0
    while size < target:
        before = len(session.lines)
        session.turn(first=turn == 0)
        size += sum(len(line) + 1 for line in session.lines[before:])
        turn += 1
    return gen_claude.save_session(session, projects, cwd)


def generate(home: Path, megabytes: float, files: int = 8, seed: int = 7) -> dict:
    """Write the tree under ``home`` (which must not exist yet); returns its manifest."""
    started = time.monotonic()
    projects = home / ".claude" / "projects"
    secrets = SecretLog()
    writing = BigOutputs(random.Random(f"{seed}:large-claude-code"), secrets)
    repos = repositories(random.Random(seed), writing.words)
    listings = gen_claude._listing_templates()
    target = int(megabytes * 1024 * 1024)
    written = 0
    for n in range(files):
        written += write_long_session(writing, projects, repos[n % len(repos)], (target - written) // (files - n),
                                      listings)
    words, _ = vocabulary()
    lines = sum(p.read_bytes().count(b"\n") for p in projects.rglob("*.jsonl"))
    manifest = {
        "generator": "gen_large_sessions", "generator_version": GENERATOR_VERSION, "seed": seed, "mb": megabytes,
        "bytes": {"claude-code": written}, "total_bytes": written,
        "files": {"claude-code": sum(1 for _ in projects.rglob("*.jsonl"))},
        "sessions": files, "lines": lines, "bytes_per_line": round(written / max(lines, 1)),
        "secrets_planted": secrets.planted,
        "vocabulary_sha256": hashlib.sha256("\n".join(words).encode()).hexdigest()[:16],
        "seconds": round(time.monotonic() - started, 1),
    }
    (home / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def cached_tree(megabytes: float, seed: int = 7, files: int = 8, out: Path = OUT) -> Path:
    """The tree for this seed, size and file count under ``bench/out/``, generated the first time."""
    home = out / f"large-s{seed}-{megabytes:g}mb-{files}f-v{GENERATOR_VERSION}"
    if (home / "manifest.json").is_file():
        return home
    partial = home.with_name(home.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    print(f"generating {megabytes:g} MB of large sessions (seed {seed}) under {home} ...", file=sys.stderr)
    generate(partial, megabytes, files, seed)
    partial.rename(home)  # only a complete tree is ever found by the check above
    return home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?", help="a new directory (omit with --cached)")
    parser.add_argument("--mb", type=float, default=450)
    parser.add_argument("--files", type=int, default=8, help="sessions (each with its subagents' files)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cached", action="store_true", help="reuse or make bench/out/large-s<seed>-<mb>mb-...")
    args = parser.parse_args()
    if args.cached:
        print(cached_tree(args.mb, args.seed, args.files))
        return
    if args.out is None:
        parser.error("give OUT_DIR, or --cached")
    if args.out.exists():
        parser.error(f"{args.out} exists")
    print(json.dumps(generate(args.out, args.mb, args.files, args.seed), indent=2))


if __name__ == "__main__":
    main()
