"""A scan that finds nothing new is mostly its own start (bench/bench_rescan.py): it imports neither the logging
library, nor the process list, nor the redaction rules (compiling them is most of their import), which only a
source to read, a line to log or an agent to look for needs; nor the rest of what reads a source, nor what starts a
second process. (Every parser module is imported: the registry's roots live in them, one module per harness.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import harvester
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
NOT_NEEDED = {"structlog", "psutil", "harvester.redact", "harvester.redact.engine", "harvester.redact.batch",
              # what reads a source: the model (its dataclasses), decompressors, hashes, git identities
              "harvester.capture.reading", "zstandard", "hashlib", "harvester.gitident",
              # what a second ingesting process needs (only a large scan starts one)
              "multiprocessing", "concurrent.futures",
              # archive retention, with no limit set (the default)
              "harvester.capture.archive.expiry"}


def _modules_of_a_rescan(tmp_path: Path, session: ClaudeSession | None = None) -> set[str]:
    """The modules a ``harvester scan`` process holds at its end, run on the bank that ``scan`` filled."""
    bank = tmp_path / "bank.sqlite"
    env = {"HOME": str(tmp_path / "home"), "HARVESTER_BANK": str(bank), "PATH": "/usr/bin:/bin",
           "HARVESTER_RUNTIME_DIR": str(tmp_path / "run"), "HARVESTER_CONFIG": str(tmp_path / "none.toml"),
           # this checkout's harvester, whichever the virtualenv installed
           "PYTHONPATH": os.path.dirname(os.path.dirname(harvester.__file__))}
    (tmp_path / "none.toml").write_text("")
    done = subprocess.run([sys.executable, "-c", _LOADED], env=env, capture_output=True, text=True, cwd=tmp_path)
    loaded = set(done.stderr.split())
    assert done.stdout and "harvester.capture.ingest" in loaded, done.stderr[-2000:]
    return loaded


def test_a_scan_with_nothing_new_imports_no_logging_process_list_nor_redaction(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "home", "/work/demo")
    session.write(session.user("hello"), session.assistant("hi there"))
    scan(tmp_path / "home", tmp_path / "bank.sqlite")
    loaded = _modules_of_a_rescan(tmp_path)
    assert NOT_NEEDED & loaded == set()
