from __future__ import annotations

import io

import pytest

from harvester import log


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    """Library code logs through structlog; keep test output clean unless a test asks for logs."""
    log.configure("error", stream=io.StringIO())
