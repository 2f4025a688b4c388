"""Kimi Work (the Kimi desktop app, ``kimi-desktop``): its agent runs Kimi Code's kernel, whose sessions it keeps
in the app's own folder.

Format facts and their sources: ``fixtures/kimi_work/SOURCE.md``. In short: ``<app data>/kimi-desktop/
daimon-share/daimon/runtime/kimi-code/home`` is a Kimi Code home: ``sessions/<workDirKey>/<session>/agents/
<agent>/wire.jsonl`` + ``state.json``, read by Kimi Code's parser. Only ``conv-*`` sessions are the user's
conversations; the runtime's own helper sessions in the same tree (``ctitle-*`` title generation, ``sklsum-*``
skill summaries, ``dvlt-*`` dev-loop tasks) are not read.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path, PurePath

from harvester.parsers import kimi_code
from harvester.parsers.base import SourceSpec

NAME = "kimi-work"
RUNTIME = Path("kimi-desktop", "daimon-share", "daimon", "runtime", "kimi-code", "home")
# The desktop app runs all day: its process says nothing about whether a conversation is in use.
PROCESSES: tuple[str, ...] = ()
parse = kimi_code.parse


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return roots_for(sys.platform, env, home)


def roots_for(platform: str, env: Mapping[str, str], home: Path) -> list[Path]:
    """The app's data folder per OS (Electron's userData); on Linux both places readers have seen."""
    if platform == "darwin":
        return [home / "Library" / "Application Support" / RUNTIME]
    if platform == "win32":
        return [Path(env.get("APPDATA") or home / "AppData" / "Roaming") / RUNTIME]
    return [home / ".config" / RUNTIME, home / ".local" / "share" / RUNTIME]


def _session_state(path: PurePath) -> PurePath:
    return path.parents[2] / "state.json"


SOURCES = (
    SourceSpec("sessions/*/conv-*/agents/*/wire.jsonl", "jsonl", "wire", sidecar=_session_state),
    SourceSpec("sessions/*/conv-*/state.json", "json", "state"),
)
