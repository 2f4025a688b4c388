"""Qoder CLI: ``~/.qoder/projects/<encoded cwd>/<sessionId>.jsonl``, Claude Code's transcript format.

A member of the Claude Code family (sources: ``fixtures/qoder/SOURCE.md``): the records are Claude Code's,
read by :mod:`claude_code`; subagents sit in ``<sessionId>/subagents/agent-<id>.jsonl`` as there. What Qoder
adds is a sidecar ``<sessionId>-session.json`` beside each session with its ``title``, the session it was
forked from (``fork_from``), a ``parent_session_id`` and the ``working_dir``: read here with every read
of the session (the service re-reads the session when the sidecar changes).

Newer Qoder builds write the same files into the IDE's data folder (``SharedClientCache/cli/projects``),
sometimes flat, with no project folder: both are roots, both layouts are sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch
from harvester.parsers import claude_code
from harvester.parsers.base import Record, SourceRef, SourceSpec

NAME = "qoder"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # No variable of Qoder's own is known to move these (agentsview's QODER_PROJECTS_DIR is agentsview's
    # setting). The IDE's data folder is Electron's: $XDG_CONFIG_HOME or ~/.config on Linux, Application
    # Support on macOS, %APPDATA% on Windows.
    linux = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    windows = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    shared = [base / "Qoder" / "SharedClientCache" / "cli" / "projects"
              for base in (linux, home / "Library" / "Application Support", windows)]
    return [home / ".qoder" / "projects", home / ".qoderwork" / "projects", *shared]


def _session_json(path: PurePath) -> PurePath:
    return path.with_name(path.stem + "-session.json")


SOURCES = (
    SourceSpec("*/*.jsonl", "jsonl", "main", sidecar=_session_json),
    SourceSpec("*.jsonl", "jsonl", "main", sidecar=_session_json),  # SharedClientCache's flat layout
    SourceSpec("*/*/subagents/agent-*.jsonl", "jsonl", "subagent"),
)

# The npm package @qoder-ai/qodercli installs a node script named qodercli.
PROCESSES = ("qodercli", "@qoder-ai/qodercli")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = claude_code.parse(ref, records, state)
    if ref.variant == "main" and ref.sidecar:
        _apply_session_json(batch, state, ref.sidecar)
    return batch


def _apply_session_json(batch: Batch, state: dict[str, Any], raw: bytes) -> None:
    """Title, fork source and working dir from ``<id>-session.json``. A ``fork_from`` wins over a parent
    the records imply (agentsview does the same), which wins over ``parent_session_id``."""
    try:
        meta = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return  # half-written while Qoder rewrites it: the next read has it whole
    if not isinstance(meta, dict):
        return
    patch = batch.session(state["session"])
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "ai")  # Qoder names sessions itself; a /rename record still wins
    cwd = meta.get("working_dir")
    if isinstance(cwd, str) and cwd and not state.get("cwd"):
        state["cwd"] = cwd
        patch.cwd = cwd
    fork, parent = meta.get("fork_from"), meta.get("parent_session_id")
    if isinstance(fork, str) and fork and fork != state["session"]:
        patch.parent_native_id, patch.parent_kind = fork, "fork"
    elif isinstance(parent, str) and parent and parent != state["session"] and patch.parent_native_id is None:
        patch.parent_native_id, patch.parent_kind = parent, "fork"
