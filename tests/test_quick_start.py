"""The README's quick start, as written, on a fresh HOME: pipx (installed from PyPI first, as a stock
machine gets it from apt or brew) installs this repository, and the harvester it links answers `scan` and
`status`; the login unit it would write starts that pipx virtualenv's Python, which exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson

from tests.helpers import ClaudeSession

ROOT = Path(__file__).resolve().parent.parent


def quick_start_block() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Quick start"):readme.index("\n## ", readme.index("## Quick start") + 5)]
    return re.search(r"```sh\n(.*?)```", section, re.S)[1].strip()


def test_the_readme_quick_start_installs_a_harvester_that_scans_and_answers_status(tmp_path: Path) -> None:
    block = quick_start_block()
    assert block.startswith("pipx install .")  # what a newcomer types after installing pipx
    clone = tmp_path / "harvester"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    tools = tmp_path / "tools"  # pipx, as apt or brew would provide it
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True, timeout=120)
    subprocess.run([tools / "bin" / "pip", "install", "--quiet", "pipx"], check=True, timeout=600)
    home = tmp_path / "home"
    s = ClaudeSession(home, "/work/app")
    s.write(*s.conversation(2))
    env = {"HOME": str(home), "PATH": f"{tools / 'bin'}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": str(tmp_path / "no-manager")}
    # How this machine reaches the package registry (pip's own settings), and nothing else of this process.
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("SSL_CERT_FILE", "HTTPS_PROXY")})
    ran = subprocess.run(["bash", "-c", block], cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "\n+4 events in 1 session (" in ran.stdout, ran.stdout  # after pipx's own words
    harvester = home / ".local" / "bin" / "harvester"
    status = subprocess.run([harvester, "status", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    claude = next(h for h in orjson.loads(status.stdout)["harnesses"] if h["name"] == "claude-code")
    assert (claude["sessions"], claude["events"]) == (1, 4)
    unit = subprocess.run([harvester, "install", "--dry-run"], env=env, capture_output=True, text=True, timeout=120)
    assert unit.returncode == 0, unit.stdout + unit.stderr
    exec_start = re.search(r"^ExecStart=(\S+) -m harvester run$", unit.stdout, re.M)
    assert exec_start, unit.stdout
    python = Path(exec_start[1])
    assert python.is_absolute() and python.exists() and str(home / ".local") in str(python)
