"""The sample outputs in README.md and docs/ are what the commands print today, on the real captures of the test
suite (fixtures/*/real/, filed under a repository named demo-repo), as a new user reading them would check.

A sample's lines must appear in the command's output in their order; a line "..." stands for lines left out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import make_repo
from tests.machine import harvester_env, real_capture_bank

ROOT = Path(__file__).resolve().parent.parent

# (page, the command as its sample gives it): each run on every real capture.
SAMPLES = [("README.md", "harvester sessions --here --harness codex --limit 1"),
           ("README.md", "harvester search pelican --here --limit 1"),
           ("README.md", "harvester show 6c8b8366-9d7e-4e26-aef9-724f017f9da9 --around 5 -C 1"),
           ("docs/commands.md", "harvester sessions --here --harness codex --limit 2"),
           ("docs/commands.md", "harvester search pelican --here --limit 1"),
           ("docs/commands.md", "harvester show 6c8b8366-9d7e-4e26-aef9-724f017f9da9 --around 5 -C 1"),
           ("docs/search.md", "harvester search pelican --here --limit 1"),
           ("docs/usage.md", "harvester usage session --timezone UTC --harness claude-code")]
# The usage page's first sample is of the Claude Code and Codex captures only: the same report, those two agents.
USAGE_BY_AGENT = ("docs/usage.md", "harvester usage --timezone UTC --by harness,model")


def sample(page: str, command: str) -> list[str]:
    """The lines a page shows under ``$ COMMAND``, up to the next command or the block's end."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"$ {command}"))
    shown = []
    for line in lines[start + 1:]:
        if line.startswith(("$ ", "```")):
            break
        shown.append(line.rstrip())
    while shown and not shown[-1]:
        shown.pop()
    return shown


def assert_shown_in(shown: list[str], output: str) -> None:
    printed = [line.rstrip() for line in output.splitlines()]
    at = 0
    for line in shown:
        if line == "...":
            continue
        try:
            at = printed.index(line, at) + 1
        except ValueError:
            raise AssertionError(f"the sample's line {line!r} is not printed (after line {at}):\n{output}") from None


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("samples")
    repo = make_repo(tmp / "demo-repo")
    (tmp / "home").mkdir()
    return tmp, real_capture_bank(tmp, repo), repo


def _run(captures: tuple[Path, Path, Path], command: str) -> str:
    tmp, bank, repo = captures
    env = {**harvester_env(tmp), "HARVESTER_BANK": str(bank)}
    args = command.split()[1:]
    done = subprocess.run([sys.executable, "-m", "harvester", *args], env=env, cwd=repo, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize(("page", "command"), SAMPLES, ids=[f"{p}: {c}" for p, c in SAMPLES])
def test_a_sample_is_what_the_command_prints(captures: tuple[Path, Path, Path], page: str, command: str) -> None:
    assert_shown_in(sample(page, command), _run(captures, command))


def test_the_usage_sample_by_agent_and_model_is_what_it_prints(captures: tuple[Path, Path, Path]) -> None:
    page, command = USAGE_BY_AGENT
    output = _run(captures, f"{command} --harness claude-code --harness codex")
    assert_shown_in(sample(page, command), output)
    unpriced = re.search(r"\+(\d+) unpriced", output)[1]  # and the sentence under it counts the same
    text = (ROOT / page).read_text(encoding="utf-8")
    assert f"`unknown ({unpriced})`: {unpriced} responses" in text and f"`+{unpriced} unpriced`" in text
