"""Build a large bank directly (through the bank's own write path), for benchmarks of what reads it.

    python bench/gen_bank.py OUT.sqlite [--events 1000000] [--seed 7]

The vocabulary is this repository's own: the words and identifiers of its source and documentation
(about 10,000 distinct, in the frequencies they have there), so common and rare words occur as they do in
transcripts about code; texts also carry paths, code lines and stack-trace lines. The record mix is the
captured real runs' (``fixtures/*/real/``: user and assistant texts ~45 %, tool calls and results ~22 %,
meta and system ~28 %, thinking ~3 %); sizes are wider than those short scripted runs: texts and tool
output follow log-normal lengths (median ~200 and ~1,500 characters, a long tail to 64 KB). Sessions have
a log-normal size (median ~150 events), twenty agents' names, across 25 repositories; one of them,
``coding-agent::demo-repo``, holds about a tenth of all sessions (what an MCP server started there sees).
Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import re
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harvester.bank import open_bank  # noqa: E402
from harvester.capture.contract import Cursor, SessionWrite, Write  # noqa: E402
from harvester.gitident import RepoIdentity  # noqa: E402
from harvester.model import Event, SessionPatch, Usage  # noqa: E402

HARNESSES = ("claude-code", "codex", "gemini-cli", "qwen-code", "opencode", "kilo", "continue", "aider", "cline",
             "pi", "oh-my-pi", "openclaw", "copilot-cli", "cursor", "cursor-cli", "devin", "grok", "dcode",
             "deepseek-harness", "roo-code")
MIX = (("user", "text", 0.223), ("assistant", "text", 0.228), ("assistant", "tool_call", 0.109),
       ("tool", "tool_result", 0.114), ("system", "meta", 0.157), ("system", "text", 0.096),
       ("assistant", "thinking", 0.032), ("assistant", "meta", 0.027), ("system", "compaction", 0.014))
# The models the bank's sessions name, per agent (a session keeps one): known to the price catalogue, and one it
# does not know (priced "unknown").
MODELS = {
    "claude-code": ("claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"),
    "codex": ("gpt-5-codex", "gpt-5.1-codex-max"),
    "gemini-cli": ("gemini-2.5-pro", "gemini-2.5-flash"),
    "": ("claude-sonnet-4-5-20250929", "gpt-5", "gemini-2.5-pro", "local-model-7b"),
}
# A session id starts with its agent's first three letters (build): enough to tell these three apart.
HARNESS_OF_PREFIX = {name[:3]: name for name in ("claude-code", "codex", "gemini-cli")}
TOOLS = ("Read", "Bash", "Edit", "Grep", "shell_command", "apply_patch", "read_file", "run_shell_command", "write")


@functools.cache  # the same for every generator in a process: the checkout's files
def vocabulary() -> tuple[list[str], list[float]]:
    counts: Counter[str] = Counter()
    # Sorted: ties in most_common keep the order words were first seen, which must not be the disk's.
    for path in sorted({*ROOT.glob("harvester/**/*.py"), *ROOT.glob("**/*.md")}):
        relative = path.relative_to(ROOT).parts
        # Only the project's own files: not installed packages, caches, or what benchmarks wrote.
        if any(part.startswith(".") for part in relative) or relative[:2] == ("bench", "out"):
            continue
        counts.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,30}", path.read_text(errors="replace")))
    words = [w for w, _ in counts.most_common(12000)]
    return words, [counts[w] for w in words]


class Texts:
    def __init__(self, rng: random.Random, words: tuple[list[str], list[float]] | None = None) -> None:
        """``words``: the vocabulary and its weights (default: this repository's, which changes with it; a test
        that pins what it generates gives its own)."""
        self.rng = rng
        self.words, weights = words or vocabulary()
        self.cum = list(_accumulate(weights))

    def words_of(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=n))

    def length(self, median: float, cap: int) -> int:
        return max(1, min(cap, int(self.rng.lognormvariate(math.log(median), 1.0))))

    def prose(self, median: float = 200) -> str:
        return self.words_of(max(1, self.length(median, 16000) // 7)).capitalize() + "."

    def output(self) -> str:
        lines, size, target = [], 0, self.length(1500, 65536)
        while size < target:
            kind = self.rng.random()
            if kind < 0.5:
                line = f"{self.rng.randint(1, 999):>5}\t    {self.words_of(6)}({self.words_of(2)})"
            elif kind < 0.7:
                line = f'  File "/home/dev/src/{self.words_of(1)}/{self.words_of(1)}.py", line {self.rng.randint(1, 900)}'
            else:
                line = self.words_of(10)
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)


def _accumulate(weights: list[int]) -> list[int]:
    total, out = 0, []
    for w in weights:
        total += w
        out.append(total)
    return out


def session_events(t: Texts, sid: str, n: int, clock: list[int]) -> list[Event]:
    rng = t.rng
    kinds = [(r, k) for r, k, _ in MIX]
    weights = [w for _, _, w in MIX]
    events = []
    call = 0
    for i in range(n):
        role, kind = rng.choices(kinds, weights)[0]
        clock[0] += rng.randint(1, 30)
        s = clock[0]
        ts = f"2026-{1 + s // 2_419_200 % 12:02d}-{1 + s // 86400 % 28:02d}T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.000Z"
        fields: dict = {}
        if kind == "tool_call":
            call += 1
            tool = rng.choice(TOOLS)
            path = f"/home/dev/src/demo/{t.words_of(1)}/{t.words_of(1)}.py"
            fields = {"tool_name": tool, "tool_call_id": f"call_{call}", "tool_input": {"file_path": path},
                      "text": f"{tool}: {path}"}
        elif kind == "tool_result":
            fields = {"tool_name": rng.choice(TOOLS), "tool_call_id": f"call_{call}", "text": t.output(),
                      "is_error": rng.random() < 0.05}
        elif kind in ("text", "thinking", "compaction"):
            fields = {"text": t.prose(60 if role == "user" else 250)}
        else:
            fields = {"text": t.words_of(4), "meta": {"subtype": t.words_of(1)}}
        usage = Usage(input=rng.randint(100, 9000), output=rng.randint(10, 900)) if role == "assistant" else None
        events.append(Event(sid, f"{sid}:{i}", role, kind, ts=ts, usage=usage, **fields))
    return responses(events, sid)


def responses(events: list[Event], sid: str) -> list[Event]:
    """As the agents record usage: once per model response (the first of a run of assistant events), with the
    session's model and the cache-heavy counts of agentic work (most input read from the cache). Drawn from a
    generator of the session's own, so the events' other values stay what the seed made them."""
    rng = random.Random(zlib.crc32(sid.encode()))
    harness = HARNESS_OF_PREFIX.get(sid[:3], "")
    models = MODELS.get(harness, MODELS[""])
    model = models[rng.randrange(len(models))]
    previous = ""
    for event in events:
        if event.role == "assistant":
            event.model = model
            if previous == "assistant":
                event.usage = None
            elif event.usage is not None:
                cached = rng.randint(0, 120_000)
                event.usage = Usage(input=event.usage.input, output=event.usage.output, cache_read=cached,
                                    cache_write=rng.randint(0, 6000) if rng.random() < 0.3 else 0,
                                    response=f"{sid}:{event.uid}")
        previous = event.role
    return events


def build(out: Path, events: int, seed: int, optimize: bool = True) -> None:
    rng = random.Random(seed)
    texts = Texts(rng)
    repos = ["demo-repo"] + [f"{texts.words_of(1).lower()}-{n}" for n in range(24)]
    written, sessions, started = 0, 0, time.monotonic()
    with open_bank(out) as bank:
        while written < events:
            n = min(events - written, max(2, min(5000, int(rng.lognormvariate(math.log(150), 1.0)))))
            repo = repos[0] if rng.random() < 0.1 else rng.choice(repos[1:])
            harness = rng.choice(HARNESSES)
            sid = f"{harness[:3]}-{sessions:06d}-{rng.getrandbits(32):08x}"
            clock = [sessions * 5000 + rng.randint(0, 4000)]
            batch = session_events(texts, sid, n, clock)
            cwd = f"/home/dev/src/{repo}"
            patch = SessionPatch(sid, cwd=cwd, title=texts.prose(40)[:80], started_at=batch[0].ts,
                                 updated_at=batch[-1].ts, state=rng.choice(("ended", "ended", "abandoned")),
                                 agent_version="1.0.0")
            write = SessionWrite(harness, patch, bank_id=f"coding-agent::{repo}",
                                 identity=RepoIdentity(project=repo, root=cwd, how="cwd"))
            for start in range(0, n, 5000):
                cursor = Cursor(harness, f"/bench/{sid}.jsonl", "jsonl", offset=start + 1, generation=start // 5000)
                bank.apply(Write(cursor, [write], batch[start:start + 5000], [], is_new_source=start == 0))
            written += n
            sessions += 1
            if sessions % 200 == 0:
                rate = written / (time.monotonic() - started)
                print(f"  {written:,} events, {sessions:,} sessions ({rate:,.0f} events/s)", file=sys.stderr)
        if optimize:  # what a scan's end does after a large import (SqliteBank.settle_index)
            bank.conn.execute("INSERT INTO events_fts(events_fts) VALUES('optimize')")
    print(f"{out}: {written:,} events in {sessions:,} sessions, {time.monotonic() - started:.0f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-optimize", action="store_true",
                        help="leave the full-text index as the writes left it (segments of every size)")
    args = parser.parse_args()
    build(args.out, args.events, args.seed, optimize=not args.no_optimize)


if __name__ == "__main__":
    main()
