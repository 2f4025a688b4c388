"""Generate a Claude Code-only history tree (``OUT_DIR/projects/...``), for bench/bench_scan.py.

    python bench/gen_claude_tree.py OUT_DIR [--mb 320] [--seed 7]

The sessions are bench/gen_tree.py's Claude Code part (shapes measured from ``fixtures/claude_code/real/``,
real-sized texts in this repository's vocabulary; see that module), laid out as ``CLAUDE_CONFIG_DIR``
expects. For all three agents at once, and the backfill comparison, use bench/gen_tree.py and
bench/bench_backfill.py. Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import gen_claude
from bench.gen_common import repositories
from bench.gen_text import Writing


def generate(out: Path, megabytes: float, seed: int = 7) -> int:
    """Sessions under ``out/projects`` until about ``megabytes`` MiB are written; the bytes written."""
    writing = Writing(random.Random(f"{seed}:claude-code"))
    repos = repositories(random.Random(seed), writing.words)
    return gen_claude.generate(out / "projects", int(megabytes * 1024 * 1024), writing, repos)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=320)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    size = generate(args.out, args.mb, args.seed)
    print(f"{size / 1e6:.0f} MB written under {args.out}")


if __name__ == "__main__":
    main()
