"""The capture service's heartbeat file, as ``harvester status`` reads it: here, not in :mod:`harvester.service`,
whose imports (the scheduler, file watching, the whole ingest) cost status more than all of its own work."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from harvester.config import runtime_dir

HEARTBEAT_NAME = "heartbeat.json"


def read_heartbeat(env: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    try:
        return orjson.loads((runtime_dir(env) / HEARTBEAT_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def service_alive(beat: Mapping[str, Any]) -> bool:
    """Is the process a heartbeat names still a running harvester (not a reused pid)?"""
    import psutil  # here: only a heartbeat found needs it

    try:
        proc = psutil.Process(int(beat["pid"]))
        return proc.is_running() and any("harvester" in part for part in proc.cmdline())
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def responding(beat: Mapping[str, Any], heartbeat_seconds: float) -> bool:
    """Has the service written its heartbeat lately (three beats, and a little slack)?"""
    moment = epoch(beat.get("heartbeat_at"))
    return moment is not None and time.time() - moment <= 3 * heartbeat_seconds + 5


def epoch(ts: str | None) -> float | None:
    """An ISO 8601 time (UTC unless it says otherwise) as seconds since the epoch; None if it is none."""
    if not ts:
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
