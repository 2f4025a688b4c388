"""The code stays ruff-clean and modules stay small; CI runs these like any other test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600  # "no module over ~500 lines without a reason": the reason has to be a good one


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", str(ROOT)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_is_huge() -> None:
    sizes = {
        p.relative_to(ROOT): len(p.read_text().splitlines())
        for p in (ROOT / "harvester").rglob("*.py")
    }
    assert {str(p): n for p, n in sizes.items() if n > MAX_LINES} == {}
