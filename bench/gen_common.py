"""What the three agents' generators share: a session's clock and ids, the repositories, and captured records.

Records that an agent writes once per session and that do not depend on the conversation (Claude Code's
agent and skill listings, Codex's ``session_meta`` with its ~20 KB system prompt, developer message,
environment context and ``world_state``) are taken from the captured real runs under ``fixtures/*/real/``
as they are, only the capture's paths and ids replaced: they are the heavy, repetitive part of real files.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
HOME = "/home/dev"  # the generated sessions' home; their repositories are under ~/src
YEAR_START = int(datetime(2026, 1, 5, tzinfo=UTC).timestamp())
YEAR_SECONDS = 330 * 86400


def repositories(rng: random.Random, words: list[str], count: int = 14) -> list[str]:
    names: list[str] = []
    for word in words:
        name = word.lower().strip("_")
        if name.isidentifier() and len(name) > 3 and name not in names:
            names.append(name)
        if len(names) == 400:
            break
    picked = rng.sample(names, count)
    return [f"{HOME}/src/{name.replace('_', '-')}" for name in picked]


class Clock:
    """A session's time: starts somewhere in the year, moves forward a little with every record."""

    def __init__(self, rng: random.Random, start: float | None = None) -> None:
        self.rng = rng
        self.now = start if start is not None else YEAR_START + rng.random() * YEAR_SECONDS

    def tick(self, low: float = 0.005, high: float = 0.5) -> float:
        self.now += self.rng.uniform(low, high)
        return self.now

    def think(self) -> float:
        """The time a model call or a human takes between records."""
        return self.tick(1.0, 40.0)

    def iso(self) -> str:
        return datetime.fromtimestamp(self.now, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def ms(self) -> int:
        return int(self.now * 1000)


def uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def uuid7(rng: random.Random, seconds: float) -> str:
    """A time-ordered id as Codex writes them (48 bits of milliseconds, then random bits)."""
    value = (int(seconds * 1000) << 80) | (7 << 76) | (rng.getrandbits(12) << 64) | (2 << 62) | rng.getrandbits(62)
    return str(uuid.UUID(int=value))


def captured_lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


class Template:
    """One captured record as text with its capture's paths and ids as placeholders, filled per session."""

    def __init__(self, line: bytes, replace: dict[str, str]) -> None:
        text = line.decode()
        for old, placeholder in replace.items():
            text = text.replace(old, placeholder)
        self.text = text

    def fill(self, values: dict[str, str]) -> dict:
        text = self.text
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        return orjson.loads(text)
