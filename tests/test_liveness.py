"""Telling a session in use from an ended one."""

from __future__ import annotations

import os
from pathlib import Path

from harvester.capture.liveness import _is_agent, judge


def test_agent_processes_are_recognized_by_name_script_or_module() -> None:
    assert _is_agent("claude", ["claude", "-p", "hi"], ("claude",))
    assert _is_agent("node", ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"],
                     ("claude", "@anthropic-ai/claude-code"))
    assert _is_agent("python3", ["python3", "-m", "aider", "--yes-always"], ("aider",))
    assert _is_agent("aider", ["/home/u/.venv/bin/aider"], ("aider",))
    assert not _is_agent("bash", ["bash", "-c", "grep claude notes.txt"], ("claude",))
    assert not _is_agent("python3", ["python3", "script.py", "-m", "aider"], ("aider",))


def test_states() -> None:
    now = 10_000.0
    recent, idle = 600.0, 1800.0
    assert judge(held=True, was_held=False, source_mtime=0, last_turn=None, recent_s=recent, idle_end_s=idle,
                 now=now).state == "live"
    assert judge(held=False, was_held=True, source_mtime=now, last_turn="open", recent_s=recent, idle_end_s=idle,
                 now=now).state == "abandoned"
    assert judge(held=False, was_held=True, source_mtime=now, last_turn="complete", recent_s=recent,
                 idle_end_s=idle, now=now).state == "ended"
    assert judge(held=False, was_held=False, source_mtime=now - 10, last_turn=None, recent_s=recent,
                 idle_end_s=idle, now=now).state == "live"
    assert judge(held=False, was_held=False, source_mtime=now - 3600, last_turn=None, recent_s=recent,
                 idle_end_s=idle, now=now).state == "ended"


def test_a_wal_databases_last_write_is_its_wal_files(tmp_path: Path) -> None:
    """The agent holds its session while it writes: for SQLite in WAL mode that is the -wal file."""
    from harvester.capture.liveness import source_mtime as _mtime

    db = tmp_path / "sessions.db"
    db.write_bytes(b"")
    os.utime(db, (1_000_000, 1_000_000))
    assert _mtime(str(db)) == 1_000_000
    (tmp_path / "sessions.db-wal").write_bytes(b"x")
    os.utime(tmp_path / "sessions.db-wal", (2_000_000, 2_000_000))
    assert _mtime(str(db)) == 2_000_000
    assert _mtime(str(tmp_path / "gone.db")) is None and _mtime(None) is None


def test_processes_are_read_as_psutil_reads_them() -> None:
    """The service's look at every process (harvester.capture.liveness._processes, which reads /proc itself on Linux):
    the same pid, name and command line as psutil's, for a process with a name longer than the kernel keeps."""
    import shutil
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    import psutil

    from harvester.capture.liveness import _processes, _split_cmdline

    assert _split_cmdline("") == []
    assert _split_cmdline("node\x00/bin/claude\x00-p\x00") == ["node", "/bin/claude", "-p"]
    assert _split_cmdline("rewritten title with spaces") == ["rewritten", "title", "with", "spaces"]
    with tempfile.TemporaryDirectory() as tmp:
        long_name = Path(tmp) / "a-very-long-agent-name"
        shutil.copy(sys.executable, long_name)
        child = subprocess.Popen([str(long_name), "-c", "import time; time.sleep(30)", "two words"])
        try:
            proc = psutil.Process(child.pid)
            # Between fork and exec the child is still a copy of this process (its name, no command line yet).
            deadline = time.monotonic() + 30
            while not proc.cmdline() and time.monotonic() < deadline:
                time.sleep(0.01)
            ours = {pid: (name, cmdline) for pid, name, cmdline in _processes()}
            proc = psutil.Process(child.pid)
            assert ours[child.pid] == (proc.name(), proc.cmdline()) == (
                "a-very-long-agent-name", [str(long_name), "-c", "import time; time.sleep(30)", "two words"])
        finally:
            child.kill()
            child.wait()
