"""Installing PyPI packages into a venv of their own (the agents' in tests/realagents.py, the servers' in
tests/services.py): with uv when it is there, else pip.

uv resolves as pip does (OpenHands 1.16.0's 200 pins: the same but for one release published since) at a
fraction of the cost: 13 s and 10 CPU-seconds for OpenHands cold, where pip took 4 to 13 minutes beside the
tests. Its cache goes in the git-ignored .cache/uv. Stdlib only: `.ci/run` runs these installs before the
project's own pip install.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "uv"


def uv_binary() -> str | None:
    """The uv of this interpreter's environment (the `uv` wheel, a test dependency), else one on PATH."""
    found = Path(sys.executable).parent / "uv"
    return str(found) if found.is_file() else shutil.which("uv")


def install_command(python: Path, packages: list[str]) -> list[str]:
    """The command that installs ``packages`` into the venv of ``python``, without byte-compiling them (most
    of an install's CPU; the program compiles what it imports when it first runs)."""
    uv = uv_binary()
    if uv is not None:
        return [uv, "pip", "install", "--quiet", "--python", str(python), "--cache-dir", str(CACHE), *packages]
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-compile",
            *packages]
