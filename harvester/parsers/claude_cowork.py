"""Claude Desktop's Cowork (local agent mode): ``<Claude user data dir>/local-agent-mode-sessions/``.

Format facts and their sources: ``fixtures/claude_cowork/SOURCE.md``. In short:

- ``<org>/<workspace>/local_<uuid>.json`` is the app's own record of a session: its title, the folders the
  user attached (``userSelectedFolders``), ``createdAt`` / ``lastActivityAt`` (epoch ms) and the
  ``cliSessionId`` of the transcript.
- ``<org>/<workspace>/local_<uuid>/.claude/projects/<enc>/<cliSessionId>.jsonl`` is the transcript: a
  standard Claude Code session (the app runs Claude Code inside a VM), subagents beside it under
  ``<cliSessionId>/subagents/``. It is read by ``claude_code.parse`` unchanged.
- The transcript's ``cwd`` is a path inside the VM (``/sessions/<name>``): the folder the user works in is
  the metadata file's first ``userSelectedFolders`` entry. So every transcript of a session, main and
  subagent, takes that metadata file as its sidecar and this module lays it over what claude_code read
  (claude_code itself is handed no sidecar). The price: a subagent's ``agent-*.meta.json`` (its type and
  description) is not read here; the subagent is still linked by its path and titled by its task. A
  subagent filed under the VM's path would be filed under a project the user never had.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path, PurePath
from typing import Any

import orjson

from harvester.model import Batch, SessionPatch
from harvester.parsers import claude_code
from harvester.parsers.base import Record, SourceRef, SourceSpec, iso_ms

NAME = "claude-cowork"

_SESSIONS = "local-agent-mode-sessions"
# The Microsoft Store (MSIX) build's virtualised %APPDATA% (agentsview's cowork_paths.go).
_MSIX = Path("Packages") / "Claude_pzs8sxrjxfjjc" / "LocalCache" / "Roaming"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # Claude Desktop is an Electron app: its user data folder is ~/.config/Claude on Linux
    # ($XDG_CONFIG_HOME), ~/Library/Application Support/Claude on macOS, %APPDATA%\Claude on Windows.
    # The app has no override of its own that is known (CLAUDE_CONFIG_DIR is Claude Code's).
    appdata = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    local = Path(env["LOCALAPPDATA"]) if env.get("LOCALAPPDATA") else home / "AppData" / "Local"
    bases = [Path(env.get("XDG_CONFIG_HOME") or home / ".config"), home / "Library" / "Application Support",
             appdata, local / _MSIX]
    return [base / "Claude" / _SESSIONS for base in bases]


def _session_metadata(path: PurePath) -> PurePath:
    """``…/local_<uuid>/.claude/projects/<enc>/…/<id>.jsonl`` -> ``…/local_<uuid>.json``."""
    parts = path.parts
    claude = len(parts) - 1 - parts[::-1].index(".claude")  # the last one: a folder may be named so too
    session_dir = PurePath(*parts[:claude])
    return session_dir.with_name(session_dir.name + ".json")


_PROJECTS = "*/*/local_*/.claude/projects"
SOURCES = (
    SourceSpec(f"{_PROJECTS}/*/*.jsonl", "jsonl", "main", sidecar=_session_metadata),
    SourceSpec(f"{_PROJECTS}/*/*/subagents/agent-*.jsonl", "jsonl", "subagent", sidecar=_session_metadata),
    SourceSpec(f"{_PROJECTS}/*/*/subagents/workflows/*/agent-*.jsonl", "jsonl", "subagent",
               sidecar=_session_metadata),
)

# The desktop app's executable (the Claude Code it runs lives inside its VM, out of sight of a process list).
PROCESSES = ("Claude", "Claude.exe")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = claude_code.parse(replace(ref, sidecar=None), records, state)
    if ref.sidecar:
        try:
            meta = orjson.loads(ref.sidecar)
        except orjson.JSONDecodeError:
            meta = None
        if isinstance(meta, dict):
            # Laid over every read: the title is renamed in the metadata file, not in the transcript.
            _apply(batch.session(state["session"]), meta, state, ref.variant == "main")
    return batch


def _apply(patch: SessionPatch, meta: dict[str, Any], state: dict[str, Any], main: bool) -> None:
    folders = [f for f in meta.get("userSelectedFolders") or [] if isinstance(f, str) and f]
    if folders:
        patch.cwd = folders[0]  # the VM's cwd says nothing about where the user's files are
    if state.get("cwd") or len(folders) > 1:
        patch.note(cowork={k: v for k, v in (("session", meta.get("sessionId")), ("vm_cwd", state.get("cwd")),
                                             ("folders", folders or None)) if v})
    if not main:  # the session's title and times are the main conversation's
        return
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        patch.offer_title(title.strip(), "custom")  # the name the app shows, as agentsview takes it
    if not state.get("started"):  # a session created but never run has no record with a time
        started = iso_ms(meta.get("createdAt"))
        if started:
            patch.started_at = started
    last = iso_ms(meta.get("lastActivityAt"))
    if last and (patch.updated_at is None or last > patch.updated_at):
        patch.updated_at = last
