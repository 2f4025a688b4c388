"""OpenClaude (a fork of Claude Code that talks to other model providers): Claude Code's store, in its own place.

Format facts and their sources: ``fixtures/openclaude/SOURCE.md``. In short: OpenClaude keeps Claude Code's
session transcripts unchanged (``projects/<cwd, / -> ->/<session id>.jsonl``, subagents beside them) under its own
config dir, ``$OPENCLAUDE_CONFIG_DIR`` else ``~/.openclaude``; Claude Code's parser reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harvester.parsers import claude_code

NAME = "openclaude"
SOURCES = claude_code.SOURCES
parse = claude_code.parse
PROCESSES = ("openclaude",)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    override = (env.get("OPENCLAUDE_CONFIG_DIR") or "").strip()
    return [(Path(override).expanduser() if override else home / ".openclaude") / "projects"]
