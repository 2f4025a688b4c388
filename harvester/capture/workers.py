"""The second ingesting process of a large scan: started, fed, stopped, and dying with the process that started it.

``scan`` ingests large imports on both cores (:mod:`harvester.capture.ingest`): a second process, with its own
connection to the bank, reads and commits whole sources while the first does the rest. It is a plain child
(``python -c``, a fresh interpreter: the parent's open SQLite connection must never be inherited, as it would be
through ``fork``), spoken to over three pipes: sources to ingest one way, their results the other, and a stop.
Not multiprocessing: its start method with its queues' semaphores starts a third process, the resource
tracker (13 MB, and a start-up), which nothing here needs.

Nothing here touches data: each source is ingested by exactly one process, in the transactions it always had
(a result that never comes back, because the child died, means its source is ingested again here, from the
cursor the bank holds). A stop is noticed by the child between chunks, so it ends at a committed cursor.

Were the scan killed (``kill -9``, an OOM kill), a child blocked on its pipe would outlive it. So the child
arranges, when it starts, to end when its parent does: on Linux the kernel's parent-death signal
(``PR_SET_PDEATHSIG``), and everywhere a thread that notices the parent is gone (the child is re-parented).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from pathlib import Path
from typing import Any

# What the child runs (``python -c``). bench/harvester_pass.py puts its write-lock timing in front of it.
CHILD_CODE = "from harvester.capture.second import serve; serve()"
PR_SET_PDEATHSIG = 1
CHECK_SECONDS = 1.0
_LENGTH = struct.Struct("<Q")  # each message: its length, then its pickle


class SecondProcessLost(Exception):
    """The second process ended (killed, out of memory, could not start): what it had not answered is not done."""


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` ends."""
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


def _send(fd: int, message: Any) -> None:
    write(fd, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def write(fd: int, data: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts, left = [], n
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            return None  # the other end closed
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def receive(fd: int) -> bytes | None:
    """The next message's pickle, or None once the other end has closed."""
    head = _read_exactly(fd, _LENGTH.size)
    return None if head is None else _read_exactly(fd, _LENGTH.unpack(head)[0])


class SecondProcess:
    """The parent's handle on the child: ``submit`` a source, get a Future of its result (answered in order)."""

    def __init__(self, setup: tuple) -> None:
        tasks_r, self._tasks = os.pipe()
        self._results, results_w = os.pipe()
        stop_r, self._stop = os.pipe()
        child_fds = (tasks_r, results_w, stop_r)
        # The child imports the harvester this one runs (a checkout beside the installed one, in bench/).
        package_root = str(Path(__file__).resolve().parent.parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-c", CHILD_CODE,
                 *(str(fd) for fd in child_fds)],
                stdin=subprocess.DEVNULL, pass_fds=child_fds, env=env)
        finally:
            for fd in child_fds:
                os.close(fd)
        self._pending: deque[Future] = deque()
        self._lock = threading.Lock()
        self._lost = False
        self._reader = threading.Thread(target=self._read_results, name="second-process-results", daemon=True)
        self._reader.start()
        try:
            _send(self._tasks, setup)
        except OSError:
            self._lost = True

    def submit(self, task: Any) -> Future:
        future: Future = Future()
        with self._lock:  # (answers come in the order sent: only one thread submits)
            if self._lost:
                raise SecondProcessLost("the second ingesting process has ended")
            self._pending.append(future)
        try:
            _send(self._tasks, task)  # not under the lock, which the reader takes to answer
        except OSError as exc:  # it ended: the reader fails what it had
            with self._lock:
                if future in self._pending:
                    self._pending.remove(future)
            raise SecondProcessLost(f"the second ingesting process has ended ({exc})") from exc
        return future

    def _read_results(self) -> None:
        while True:
            try:
                message = receive(self._results)
            except OSError:
                message = None
            if message is None:
                break
            with self._lock:
                future = self._pending.popleft() if self._pending else None
            if future is None:
                continue
            try:
                kind, value = pickle.loads(message)
            except Exception as exc:  # an exception that cannot be rebuilt here: said as what it was
                kind, value = "error", RuntimeError(f"the second ingesting process's answer: {exc}")
            if kind == "ok":
                future.set_result(value)
            else:
                future.set_exception(value)
        with self._lock:
            self._lost = True
            lost, self._pending = list(self._pending), deque()
        for future in lost:
            future.set_exception(SecondProcessLost("the second ingesting process ended before it answered"))

    def stop(self) -> None:
        """The child stops at its next chunk (what it ingests stands at a committed cursor)."""
        with contextlib.suppress(OSError):
            os.write(self._stop, b"x")

    def close(self) -> None:
        """Stop, let the child end (its pipe of sources closed), and wait for it."""
        self.stop()
        for fd in (self._tasks, self._stop):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._child.wait()
        self._reader.join()
        os.close(self._results)
