"""Reader processes die with the process that started them.

``scan`` reads large imports in a worker process (:mod:`harvester.capture.ingest`). Were the scan killed
(``kill -9``, an OOM kill), a worker blocked on its task queue would outlive it, and so would
multiprocessing's resource tracker, which waits for the worker. So every worker arranges, when it
starts, to end when its parent does: on Linux the kernel's parent-death signal (``PR_SET_PDEATHSIG``),
and everywhere a thread that notices the parent is gone (the worker is re-parented).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
CHECK_SECONDS = 1.0


def die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this process when ``parent_pid`` ends."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="parent-watch", daemon=True).start()


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(CHECK_SECONDS)
    os._exit(1)
