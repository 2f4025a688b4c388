from __future__ import annotations

import fnmatch
import io
import shutil
import tempfile
from pathlib import Path

import pytest

from harvester import log
from tests import services

# Real PostgreSQL and Hindsight servers, one each per session (tests/services.py); under pytest-xdist one each
# per worker.
postgres_server = pytest.fixture(scope="session")(services.postgres_server)
hindsight_server = pytest.fixture(scope="session")(services.hindsight_server)

# What the real agents (tests/e2e) are known to leave at fixed places of the temp dir, whatever TMPDIR says.
LEFTOVERS = ("openclaw", "openclaw-state-locks-*", "opencode", "kilo", "node-compile-cache",
             "node-addon-native-custom-loader-*", ".*-00000000.so")
SHARED_TEMP = tuple({Path("/tmp"), Path(tempfile.gettempdir())})
_temp_before = pytest.StashKey[dict[Path, set[str]]]()


def _controls_the_run(session: pytest.Session) -> bool:
    return not hasattr(session.config, "workerinput")  # an xdist worker has it; the controller, or a plain run, not


def pytest_sessionstart(session: pytest.Session) -> None:
    if _controls_the_run(session):
        session.stash[_temp_before] = {root: {p.name for p in root.iterdir()} for root in SHARED_TEMP
                                       if root.is_dir()}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The agents' leftovers go once the run is over, not after each test: with tests on two workers, the
    other worker's agent may be using the directory that one test's agent made."""
    if not _controls_the_run(session):
        return
    for root, names in session.stash.get(_temp_before, {}).items():
        for path in root.iterdir():
            if path.name not in names and any(fnmatch.fnmatch(path.name, p) for p in LEFTOVERS):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real agents' end-to-end tests last: on a fresh clone `.ci/run` installs their CLIs in the
    background (python -m tests.realagents install) while every other test runs."""
    items.sort(key=lambda item: "/tests/e2e/" in str(item.path).replace("\\", "/"))


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    """Library code logs through structlog; keep test output clean unless a test asks for logs."""
    log.configure("error", stream=io.StringIO())
