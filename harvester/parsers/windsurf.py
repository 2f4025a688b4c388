"""Windsurf (Codeium's VS Code fork) and its Cascade agent: ``~/.codeium/windsurf/cascade/<uuid>.pb``.

Format facts and their sources: ``fixtures/windsurf/SOURCE.md``. In short: each Cascade conversation
(a "trajectory") is one UUID-named protobuf file, encrypted (AES-GCM, per a third-party spec) with a key
only Windsurf's language server holds; the only readable form is that server's localhost RPC while
Windsurf runs, which a reader of files on disk cannot use. So this harness reads nothing: it declares
the store opaque, and ``status`` says it is present and not readable, with how many conversations it
holds, rather than showing Windsurf as never used. The editor's own ``User/`` folder (``state.vscdb``)
holds no Cascade transcript.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harvester.model import Batch, Problem
from harvester.parsers.base import OpaqueStore, Record, SourceRef, SourceSpec

NAME = "windsurf"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # The language server's data folder sits in the home directory on every OS (%USERPROFILE% on
    # Windows); Windsurf Next keeps its own beside it. No override of Windsurf's own is known.
    return [home / ".codeium" / "windsurf", home / ".codeium" / "windsurf-next"]


SOURCES: tuple[SourceSpec, ...] = ()
OPAQUE = (OpaqueStore("cascade/*.pb", "Cascade conversations, encrypted protobuf: only the running Windsurf "
                                      "language server can read them"),)
PROCESSES = ("windsurf", "Windsurf", "Windsurf.exe", "language_server_linux_x64", "language_server_macos_arm")


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Never called: the harness has no sources. A configured source read by mistake says so."""
    return Batch(state=state, problems=[Problem("unreadable", None, "Windsurf's store is encrypted: not read")])
