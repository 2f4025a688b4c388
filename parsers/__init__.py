"""One module per harness, behind the interface in :mod:`parsers.base`.

Adding a harness: write ``parsers/<name>.py``, add ``fixtures/<name>/`` with a SOURCE.md, and add one
line to ``HARNESSES`` below.
"""

from __future__ import annotations

from parsers import claude_code, codex
from parsers.base import Harness

HARNESSES: dict[str, Harness] = {
    h.name: h
    for h in (
        Harness(claude_code.NAME, claude_code.roots, claude_code.SOURCES, claude_code.parse, "Claude Code",
                claude_code.PROCESSES),
        Harness(codex.NAME, codex.roots, codex.SOURCES, codex.parse, "Codex CLI", codex.PROCESSES),
    )
}
