"""Where the Cline family keeps its sessions: one function per harness (see ``harvester/parsers/cline.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor")  # VS Code builds' user-data folder names


def _global_storage(env: Mapping[str, str], home: Path, extension: str) -> list[Path]:
    """Every OS's place (they need not exist): Electron's appData is $XDG_CONFIG_HOME or ~/.config on Linux,
    ~/Library/Application Support on macOS, %APPDATA% on Windows; Remote-SSH keeps ~/.vscode-server/data."""
    linux = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    windows = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    users = [base / app / "User" for base in (linux, home / "Library/Application Support", windows) for app in EDITORS]
    return [user / "globalStorage" / extension for user in [*users, home / ".vscode-server/data/User"]]


def _cline_data(env: Mapping[str, str], home: Path) -> Path:
    """CLINE_DATA_DIR, else $CLINE_DIR/data, else ~/.cline/data (the SDK's and the standalone's rule)."""
    if (env.get("CLINE_DATA_DIR") or "").strip():
        return Path(env["CLINE_DATA_DIR"].strip())
    return Path((env.get("CLINE_DIR") or "").strip() or home / ".cline") / "data"


def cline_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The sessions dir and the db dir, each movable on its own (paths.ts resolveSessionDataDir, resolveDbDataDir)."""
    data = _cline_data(env, home)
    return [Path(env[v].strip()) if (env.get(v) or "").strip() else data / sub
            for v, sub in (("CLINE_SESSION_DATA_DIR", "sessions"), ("CLINE_DB_DATA_DIR", "db"))]


def cline_legacy_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # The standalone core (CLI 1-2, JetBrains) used the data dir as VS Code's globalStorage.
    return [_cline_data(env, home), *_global_storage(env, home, "saoudrizwan.claude-dev")]


def roo_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # The Roo CLI runs the extension on a VS Code shim storing under ~/.vscode-mock/global-storage.
    return [*_global_storage(env, home, "rooveterinaryinc.roo-cline"), home / ".vscode-mock" / "global-storage"]


def kilo_code_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return _global_storage(env, home, "kilocode.kilo-code")
