"""A scan that finds nothing new is mostly its own start (bench/bench_rescan.py): it imports neither the logging
library, nor the process list, nor the redaction rules (compiling them is most of their import), which only a
source to read, a line to log or an agent to look for needs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ClaudeSession, scan

_LOADED = """
import runpy, sys
sys.argv = ["harvester", "scan"]
try:
    runpy.run_module("harvester", run_name="__main__")
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""
NOT_NEEDED = {"structlog", "psutil", "harvester.redact", "harvester.redact.engine", "harvester.redact.batch"}


def test_a_scan_with_nothing_new_imports_no_logging_process_list_nor_redaction(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = ClaudeSession(home, "/work/demo")
    session.write(session.user("hello"), session.assistant("hi there"))
    bank = tmp_path / "bank.sqlite"
    scan(home, bank)
    env = {"HOME": str(home), "HARVESTER_BANK": str(bank), "PATH": "/usr/bin:/bin",
           "HARVESTER_RUNTIME_DIR": str(tmp_path / "run"), "HARVESTER_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("")
    done = subprocess.run([sys.executable, "-c", _LOADED], env=env, capture_output=True, text=True, cwd=tmp_path)
    loaded = set(done.stderr.split())
    assert done.stdout and "harvester.capture.ingest" in loaded, done.stderr[-2000:]
    assert NOT_NEEDED & loaded == set()
