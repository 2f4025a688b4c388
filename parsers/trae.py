"""Trae (ByteDance's VS Code fork) IDE agent: ``<Trae data dir>/ModularData/ai-agent/database.db``.

Format facts and their sources: ``fixtures/trae/SOURCE.md``. In short: current builds keep the agent's
conversations in that ``database.db``, whose header is not SQLite's (encrypted, per agentsview's
measurements); no reader on disk can open it. So this harness reads nothing: it declares the store
opaque, and ``status`` says it is present and not readable, rather than showing Trae as never used.
Older builds kept a readable JSON blob in ``User/globalStorage/state.vscdb`` (``ItemTable`` key
``memento/icube-ai-agent-storage``); reading that is not done here yet (see SOURCE.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harvester.model import Batch, Problem
from harvester.parsers.base import OpaqueStore, Record, SourceRef, SourceSpec

NAME = "trae"

# The international build and the two Chinese builds each keep a data folder of their own.
_PRODUCTS = ("Trae", "Trae CN", "TRAE SOLO CN")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # Electron's user-data folder per OS (Trae is an Electron app): %APPDATA% on Windows, Application
    # Support on macOS, $XDG_CONFIG_HOME (~/.config) on Linux. Trae has no override of its own that is
    # known; agentsview's TRAE_DIR is that reader's own setting.
    bases = [Path(env.get("XDG_CONFIG_HOME") or home / ".config"), home / "Library" / "Application Support"]
    bases.append(Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming")
    return [base / product for base in bases for product in _PRODUCTS]


SOURCES: tuple[SourceSpec, ...] = ()
OPAQUE = (OpaqueStore("ModularData/ai-agent/database.db", "the agent's conversations, an encrypted database "
                                                          "(not SQLite): only the running Trae can read it"),)
PROCESSES = ("trae", "Trae", "Trae.exe", "Trae CN", "Trae CN.exe")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Never called: the harness has no sources. A configured source read by mistake says so."""
    return Batch(state=state, problems=[Problem("unreadable", None, "Trae's agent store is encrypted: not read")])
