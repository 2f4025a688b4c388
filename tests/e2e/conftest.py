"""Nothing of a real agent's run stays in the shared temp dir.

Every agent runs with a temp dir of its own beside its HOME (``TMPDIR``, set by tests/realagents.py), in
the test's tmp_path, which goes with the test. A few write to fixed paths whatever TMPDIR says: OpenClaw
2026.9.6 keeps its log in ``/tmp/openclaw`` and its state-database lock files in
``/tmp/openclaw-state-locks-<uid>`` (``resolveStateLifecycleRuntimeDirectory`` returns "/tmp" on POSIX).
What such an agent created there during a test, and only that (entries that were not there before), is
removed when the test ends.
"""

from __future__ import annotations

import fnmatch
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# What the agents are known to leave at fixed places of the temp dir.
LEFTOVERS = ("openclaw", "openclaw-state-locks-*", "opencode", "kilo", "node-compile-cache",
             "node-addon-native-custom-loader-*", ".*-00000000.so")
SHARED_TEMP = (Path("/tmp"), Path(tempfile.gettempdir()))


@pytest.fixture(autouse=True)
def agents_leave_nothing_in_the_temp_dir() -> Iterator[None]:
    before = {root: {p.name for p in root.iterdir()} for root in set(SHARED_TEMP) if root.is_dir()}
    yield
    for root, names in before.items():
        for path in root.iterdir():
            if path.name not in names and any(fnmatch.fnmatch(path.name, p) for p in LEFTOVERS):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
