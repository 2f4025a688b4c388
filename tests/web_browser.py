"""What the viewer's browser tests share: Debian's Chromium driven by Playwright (never a downloaded browser), and
`harvester serve` in a subprocess over a test's HOME and bank.

Chromium is /usr/bin/chromium (``.ci/run`` installs it with apt-get when missing), or $HARVESTER_CHROMIUM. Without
it the browser tests skip on a developer's machine, and fail under CI=true: CI never skips them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("HARVESTER_CHROMIUM", "/usr/bin/chromium")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def chromium() -> str:
    """Chromium's path, or the test fails (CI) or skips (elsewhere) saying how to get it."""
    missing = None
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set HARVESTER_CHROMIUM)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "Playwright for Python is not installed (pip install -e '.[test]')"
    if missing:
        if _in_ci():
            pytest.fail(f"CI=true: the browser tests never skip: {missing}", pytrace=False)
        pytest.skip(missing)
    return CHROMIUM


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # As root (CI containers) Chromium needs --no-sandbox; the pages are the viewer's own.
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


class Viewer:
    """`harvester serve --port 0` over ``env`` (HOME, the bank, the config), its URL as printed."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "harvester", "serve", "--port", "0", *args], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        found = re.search(r"(http://\S+)", line)
        if not found:
            self.proc.kill()
            raise AssertionError(f"serve printed {line!r}: {self.proc.stderr.read()}")  # type: ignore[union-attr]
        self.url = found[1]
        self.base = self.url.split("?")[0].rstrip("/")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def env_for(home: Path, bank: Path, config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_", "CLAUDE_", "CODEX_"))}
    if not config.exists():
        config.write_text("")
    env.update(HOME=str(home), HARVESTER_BANK=str(bank), HARVESTER_CONFIG=str(config), PYTHONPATH=str(ROOT),
               HARVESTER_RUNTIME_DIR=str(config.parent / "run"))
    env.update(extra)
    return env


def settings_for(env: dict[str, str], bank: Path | str) -> Any:
    """The settings the viewer is given, loaded from ``env`` (HOME, the team bank...) for the bank at ``bank``."""
    from harvester import config
    from harvester.parsers import HARNESSES

    return config.load(env, bank=str(bank), harness_names=HARNESSES)


def screenshots(factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: the run's temporary directory (kept with ``--basetemp DIR``, or when a test
    fails); also copied to $HARVESTER_WEB_SCREENSHOTS when set (how docs/ gets its picture)."""
    where = factory.getbasetemp() / "web-screenshots"
    where.mkdir(exist_ok=True)
    return where


def shoot(page: Any, where: Path, name: str) -> Path:
    path = where / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    also = os.environ.get("HARVESTER_WEB_SCREENSHOTS")
    if also:
        shutil.copy(path, Path(also) / path.name)
    return path
