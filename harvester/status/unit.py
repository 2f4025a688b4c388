"""The login unit as ``harvester status`` reports it: where it is, whether it is installed, and the state its
service manager gives (:func:`service_state`). Here, not with what installs it (harvester/service/units.py), so that
status reads it without importing the service; the unit's names and place are this module's, and install uses them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from harvester import config

SERVICE = "harvester.service"
LABEL = "io.harvester.agent"
PLIST = f"{LABEL}.plist"
QUERY_TIMEOUT = 2.0  # status must stay quick even when a service manager hangs


def unit_path(platform: str, home: Path) -> Path:
    if platform == "launchd":
        return home / "Library" / "LaunchAgents" / PLIST
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else home / ".config"  # a relative value is invalid by the spec
    return base / "systemd" / "user" / SERVICE


def runtime_problem() -> str:
    """Why ``systemctl --user`` cannot reach a user manager, found without running anything; "" if it may."""
    if not sys.platform.startswith("linux"):
        return f"this system ({sys.platform}) has neither systemd nor launchd"
    if shutil.which("systemctl") is None:
        return "systemctl is not installed, so there is no systemd here"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if not runtime:
        fallback = Path(f"/run/user/{os.getuid()}")
        if (fallback / "systemd" / "private").exists():
            return (f"XDG_RUNTIME_DIR is not set, so systemctl --user cannot find your user manager "
                    f"(it runs: `export XDG_RUNTIME_DIR={fallback}` and try again)")
        return "XDG_RUNTIME_DIR is not set and no systemd user manager runs for you (no login session?)"
    if not (Path(runtime) / "systemd" / "private").exists():
        return f"no systemd user manager runs for you ({runtime}/systemd/private does not exist)"
    return ""


def _query(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=QUERY_TIMEOUT)


def _systemd_state() -> tuple[str, str]:
    problem = runtime_problem()
    if problem:
        return "unknown", problem
    result = _query(["systemctl", "--user", "is-active", SERVICE])
    state = result.stdout.strip()  # is-active prints the state; it exits non-zero for all but "active"
    return (state, "") if state else ("unknown", result.stderr.strip() or f"exit {result.returncode}")


def _launchd_state() -> tuple[str, str]:
    result = _query(["launchctl", "print", f"gui/{os.getuid()}/{LABEL}"])
    if result.returncode == 0:
        match = re.search(r"^\s*state = (.+)$", result.stdout, re.MULTILINE)
        return (match.group(1).strip() if match else "loaded"), ""
    if result.returncode == 113 or "Could not find" in result.stderr:
        return "not loaded", ""
    return "unknown", result.stderr.strip() or f"exit {result.returncode}"


def service_state(home: Path | None = None, platform: str | None = None) -> dict[str, Any]:
    """For ``harvester status``: where the unit is, whether it is installed, and its state. Never raises."""
    if platform is None:
        platform = "launchd" if sys.platform == "darwin" else "systemd" if sys.platform.startswith("linux") \
            else "none"
    state: dict[str, Any] = {"platform": platform, "unit_path": "", "installed": False, "state": "unknown",
                             "reason": ""}
    try:
        path = unit_path(platform, home or config.home())
        state["unit_path"] = str(path)
        state["installed"] = path.is_file()
        if platform == "systemd":
            state["state"], state["reason"] = _systemd_state()
        elif platform == "launchd":
            state["state"], state["reason"] = _launchd_state()
        else:
            state["reason"] = f"this system ({sys.platform}) has neither systemd nor launchd"
    except subprocess.TimeoutExpired as exc:
        state["reason"] = f"{shlex.join(exc.cmd)} did not answer within {exc.timeout:g} s"
    except Exception as exc:  # status shows what it can, whatever the service manager does
        state["reason"] = f"{type(exc).__name__}: {exc}"
    return state
