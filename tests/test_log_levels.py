"""A line below the configured level costs nothing, not even the logging library's import: a large scan logs a
debug line per chunk, and structlog (imported for it) was ~9 MB in each of a scan's two processes (issue 29)."""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
import sys
from harvester import log
log.configure("warning")
logger = log.get_logger("harvester.test")
logger.debug("committed", events=3)
logger.info("read again")
print("structlog" in sys.modules)
logger.warning("said", path="x")
print("structlog" in sys.modules)
"""


def test_lines_below_the_level_do_not_import_the_logging_library() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
    assert "said" in done.stderr and "committed" not in done.stderr and "read again" not in done.stderr


def test_lines_at_the_level_are_logged_before_and_after_the_import() -> None:
    script = _SCRIPT.replace('log.configure("warning")', 'log.configure("debug")')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
    assert "committed" in done.stderr and "read again" in done.stderr and "said" in done.stderr
