"""One module per harness, behind the interface in :mod:`parsers.base`.

Adding a harness: write ``parsers/<name>.py``, add ``fixtures/<name>/`` with a SOURCE.md, and add one
line to ``HARNESSES`` below.
"""

from __future__ import annotations

from parsers import aider, claude_code, codex, continue_cli, gemini_cli, opencode, qwen_code
from parsers.base import Harness

HARNESSES: dict[str, Harness] = {
    h.name: h
    for h in (
        Harness(claude_code.NAME, claude_code.roots, claude_code.SOURCES, claude_code.parse, "Claude Code",
                claude_code.PROCESSES),
        Harness(codex.NAME, codex.roots, codex.SOURCES, codex.parse, "Codex CLI", codex.PROCESSES),
        Harness(qwen_code.NAME, qwen_code.roots, qwen_code.SOURCES, qwen_code.parse, "Qwen Code",
                qwen_code.PROCESSES),
        Harness(gemini_cli.NAME, gemini_cli.roots, gemini_cli.SOURCES, gemini_cli.parse, "Gemini CLI",
                gemini_cli.PROCESSES),
        Harness(opencode.OPENCODE_NAME, opencode.opencode_roots, opencode.OPENCODE_SOURCES, opencode.parse,
                "opencode", opencode.OPENCODE_PROCESSES),
        Harness(opencode.KILO_NAME, opencode.kilo_roots, opencode.KILO_SOURCES, opencode.parse, "Kilo CLI",
                opencode.KILO_PROCESSES),
        Harness(continue_cli.NAME, continue_cli.roots, continue_cli.SOURCES, continue_cli.parse, "Continue",
                continue_cli.PROCESSES),
        Harness(aider.NAME, aider.roots, aider.SOURCES, aider.parse, "Aider", aider.PROCESSES,
                roots_in_repositories=True),
    )
}
