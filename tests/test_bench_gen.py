"""The benchmark's generated history is what harvester's parsers read without a complaint.

bench/gen_tree.py writes Claude Code, Codex and opencode history in the captured agents' shapes; if a
generated record drifted from those shapes, the benchmark would time the drift path instead of the
import. No timing here: this only checks that a tiny tree parses cleanly and lands for all three agents.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from bench.gen_tree import generate, layout
from harvester.bank import open_bank
from harvester.capture.ingest import Ingestor
from harvester.parsers import HARNESSES

AGENTS = ("claude-code", "codex", "opencode")


def tree_digest(home: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in home.rglob("*") if p.is_file() and p.name != "manifest.json"):
        digest.update(str(path.relative_to(home)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_a_generated_tree_imports_without_problems(tmp_path: Path) -> None:
    # The generator's words come from the project's own files (bench/gen_bank.vocabulary), so which seed draws an
    # Agent call (2 % of calls) moves as the code changes: the first seed whose tree has a subagent is taken.
    for seed in range(3, 23):
        home = tmp_path / f"home-{seed}"
        manifest = generate(home, megabytes=1.0, seed=seed)
        paths = layout(home)
        if list(paths["claude-code"].glob("*/*/subagents/agent-*.jsonl")):
            break
    else:
        raise AssertionError("no seed from 3 to 22 made a Claude Code subagent: the generator lost its Agent calls")
    assert all(manifest["bytes"][agent] > 0 for agent in AGENTS)
    bank = open_bank(tmp_path / "bank.sqlite", archive=True)
    try:
        with Ingestor(bank, "coding-agent::{gitProject}") as ingestor:
            report = ingestor.scan([HARNESSES[name] for name in AGENTS], {"HOME": str(home)}, home)
        problems = bank.conn.execute("SELECT harness, kind, detail, source_path, line FROM problems").fetchall()
    finally:
        bank.close()
    assert problems == []
    for agent in AGENTS:
        hr = report.harnesses[agent]
        assert (hr.problems, hr.unreadable, hr.failed) == (0, 0, 0), agent
        assert hr.sources_read == hr.sources > 0, agent
        assert hr.events_added > 0, agent


def test_a_seed_gives_the_same_tree(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    generate(first, megabytes=0.3, seed=11)
    generate(second, megabytes=0.3, seed=11)
    assert tree_digest(first) == tree_digest(second)
