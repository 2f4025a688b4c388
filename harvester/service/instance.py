"""One ``harvester run`` per user: the instance lock the service takes before it opens the bank."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "harvester.lock"


class AlreadyRunning(Exception):
    def __init__(self, pid: int | None, path: Path) -> None:
        super().__init__(f"harvester run is already running (pid {pid or '?'}, lock {path})")
        self.pid = pid


class InstanceLock:
    """One service per user: an exclusive flock on a file in the runtime dir, holding our pid.
    The kernel drops the lock when the process dies, however it dies: no stale-lock cleanup."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            raise AlreadyRunning(int(holder) if holder.isdigit() else None, self.path) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
