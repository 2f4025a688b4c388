from __future__ import annotations

import io

import pytest

from harvester import log
from tests import services

# Real PostgreSQL and Hindsight servers, one each per session (tests/services.py).
postgres_server = pytest.fixture(scope="session")(services.postgres_server)
hindsight_server = pytest.fixture(scope="session")(services.hindsight_server)


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    """Library code logs through structlog; keep test output clean unless a test asks for logs."""
    log.configure("error", stream=io.StringIO())
