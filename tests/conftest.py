from __future__ import annotations

import io

import pytest

from harvester import log
from tests import services

# Real PostgreSQL and Hindsight servers, one each per session (tests/services.py).
postgres_server = pytest.fixture(scope="session")(services.postgres_server)
hindsight_server = pytest.fixture(scope="session")(services.hindsight_server)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real agents' end-to-end tests last: on a fresh clone `.ci/run` installs their CLIs in the
    background (python -m tests.realagents install) while every other test runs."""
    items.sort(key=lambda item: "/tests/e2e/" in str(item.path).replace("\\", "/"))


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    """Library code logs through structlog; keep test output clean unless a test asks for logs."""
    log.configure("error", stream=io.StringIO())
