"""Generate a realistic agent history tree: Claude Code, Codex and opencode, laid out as a HOME.

    python bench/gen_tree.py OUT_DIR [--mb 300] [--seed 7]
    python bench/gen_tree.py --cached [--mb 300] [--seed 7]   # bench/out/tree-s7-300mb-v1, made once

``OUT_DIR`` becomes a home directory: ``.claude/projects/<encoded cwd>/<uuid>.jsonl`` (with
``<uuid>/subagents/agent-<id>.jsonl`` and ``.meta.json``), ``.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
and ``.local/share/opencode/opencode.db``, so any importer finds them with ``HOME=OUT_DIR``. ``--mb`` is
split 50 % Claude Code, 35 % Codex, 15 % opencode (bytes of JSONL, or of the database's rows).
``manifest.json`` says what was made (sizes, files, planted secrets). Deterministic for a seed, size and
checkout (the vocabulary is the checkout's own words, see below).

How the shapes were derived (``python bench/shapes.py`` prints the measurements, for the captures and for a
generated tree alike):

* Record kinds, their order in a turn, their fields and envelope sizes are the captured real runs'
  (``fixtures/claude_code/real/``, ``fixtures/codex/real/``, ``fixtures/opencode/real/``, written by the
  unmodified agents against a scripted fake model). Measured there: Claude Code lines have a median of
  560 B and at most 2.7 KB (``queue-operation`` 150 B, ``user`` prompt 540 B, ``assistant`` text 1.0 KB,
  tool_use 1.1 KB, the session's ``skill_listing``/``agent_listing_delta`` attachments 2.7/2.0 KB); Codex
  lines 800 B (``token_count`` 710 B, ``token_usage_record`` 830 B, ``turn_context`` 800 B, the developer
  message 3.2 KB, ``world_state`` 3.4 KB, ``session_meta`` 22 KB with the system prompt); opencode rows
  190 B (``part`` ``step-start`` 75 B, ``step-finish`` 195 B, ``tool`` 560 B, assistant ``message`` 440 B).
  Those fixed parts are kept as measured (the per-session ones are copied from the captures).
* Widened, because the scripted runs are one or two turns of one-sentence answers and two-line files:
  sessions are log-normal in turns (median ~7), turns have ~3.5 model calls with tool round trips
  (exponential), a call is sometimes parallel (2-4 tools), and texts are sized as in working sessions:
  prompts ~160 characters, replies ~450, thinking ~700, tool output ~1.5 KB, all log-normal (sigma 1.0-1.3,
  so a long tail: outputs to 256 KB). The result (seed 7, 200 MB): Claude Code lines median 1.3 KB, p90
  5 KB, max 384 KB; Codex lines median 860 B, p90 3.3 KB; opencode rows median 390 B, p90 2.7 KB.
* Tools and their shares: Claude Code Read 33 %, Bash 30 %, Edit 13 %, Grep 10 %, Glob 5 %, Write 4 %,
  TodoWrite 3 %, Agent 2 % (a subagent file); Codex ``exec_command`` 85 %, ``apply_patch`` 15 %; opencode
  read/bash 35 % each, edit 14 %, grep 10 %, glob 6 %. About 4-5 % of calls fail. A third of Claude Code
  sessions of 12+ turns hold a ``/compact``.
* Texts (``bench/gen_text.py``): the words and identifiers of this repository's source and docs in their
  frequencies (``bench/gen_bank.py``'s vocabulary), code in fences, ``cat -n`` file contents, pytest runs
  with tracebacks, grep hits, git logs, listings, diffs; ~0.4 % of prompts and shell outputs carry a
  planted secret (Anthropic key, AWS key pair, GitHub token, PEM private key).
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

from bench import gen_claude, gen_codex, gen_opencode  # noqa: E402
from bench.gen_bank import vocabulary  # noqa: E402
from bench.gen_common import repositories  # noqa: E402
from bench.gen_text import SecretLog, Writing  # noqa: E402

GENERATOR_VERSION = 1  # bump when the shapes change: cached trees of another version are not reused
SHARES = {"claude-code": 0.50, "codex": 0.35, "opencode": 0.15}
OUT = ROOT / "bench" / "out"


def layout(home: Path) -> dict[str, Path]:
    return {"claude-code": home / ".claude" / "projects", "codex": home / ".codex" / "sessions",
            "opencode": home / ".local" / "share" / "opencode" / "opencode.db"}


def generate(home: Path, megabytes: float, seed: int = 7) -> dict:
    """Write the tree under ``home`` (which must not exist yet); returns its manifest."""
    started = time.monotonic()
    paths = layout(home)
    target = megabytes * 1024 * 1024
    secrets = SecretLog()
    made: dict[str, int] = {}
    for agent, generator in (("claude-code", gen_claude.generate), ("codex", gen_codex.generate),
                             ("opencode", gen_opencode.generate)):
        # One random stream per agent: the size of one does not move the others' contents.
        writing = Writing(random.Random(f"{seed}:{agent}"), secrets)
        repos = repositories(random.Random(seed), writing.words)
        made[agent] = generator(paths[agent], int(target * SHARES[agent]), writing, repos)
    words, _ = vocabulary()
    manifest = {
        "generator_version": GENERATOR_VERSION, "seed": seed, "mb": megabytes,
        "bytes": made, "total_bytes": sum(made.values()),
        "files": {agent: sum(1 for p in paths[agent].rglob("*.jsonl")) if paths[agent].is_dir() else 1
                  for agent in made},
        "secrets_planted": secrets.planted,
        "vocabulary_sha256": hashlib.sha256("\n".join(words).encode()).hexdigest()[:16],
        "seconds": round(time.monotonic() - started, 1),
    }
    (home / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def cached_tree(megabytes: float, seed: int = 7, out: Path = OUT) -> Path:
    """The tree for this seed and size under ``bench/out/``, generated the first time. Kept across
    commits on purpose: the same bytes are what makes two commits' figures comparable."""
    home = out / f"tree-s{seed}-{megabytes:g}mb-v{GENERATOR_VERSION}"
    if (home / "manifest.json").is_file():
        return home
    partial = home.with_name(home.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    print(f"generating {megabytes:g} MB (seed {seed}) under {home} ...", file=sys.stderr)
    generate(partial, megabytes, seed)
    partial.rename(home)  # only a complete tree is ever found by the check above
    return home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?", help="a new directory (omit with --cached)")
    parser.add_argument("--mb", type=float, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cached", action="store_true", help="reuse or make bench/out/tree-s<seed>-<mb>mb-v<n>")
    args = parser.parse_args()
    if args.cached:
        home = cached_tree(args.mb, args.seed)
    elif args.out is None:
        parser.error("give OUT_DIR or --cached")
    else:
        if args.out.exists():
            parser.error(f"{args.out} exists")
        home = args.out
        generate(home, args.mb, args.seed)
    print(json.dumps(json.loads((home / "manifest.json").read_text()), indent=2))


if __name__ == "__main__":
    main()
