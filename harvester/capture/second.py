"""The second ingesting process of a large scan, its side: set up from the first message it is sent, then each
unit of sources it is sent ingested (``Ingestor.ingest_unit``: its own transactions, its own cursors) and its
results sent back, until the pipe of sources closes or the first process says stop
(harvester/capture/workers.py starts it and says why it is a plain child). Ingesting here is what ingesting in
the first process is; nothing is written but through the bank's transactions."""

from __future__ import annotations

import pickle
import select
import signal
import sys
from collections.abc import Callable
from typing import Any

from harvester.capture import workers


def serve() -> None:
    """The child: set up from the first message, then ingest each source sent until the pipe closes."""
    tasks, results, stop = (int(arg) for arg in sys.argv[1:4])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent's scan, which stops this one
    setup = workers.receive(tasks)
    if setup is None:
        return
    parent_pid, open_bank, template, exclude, limits, log_level = pickle.loads(setup)
    workers.die_with_parent(parent_pid)
    from harvester.capture.ingest import Ingestor
    from harvester.log import configure
    from harvester.parsers import HARNESSES

    configure(level=log_level)
    bank = open_bank()  # the bank's own way to open it again here (CaptureBank.for_another_process)
    bank.share_writes()
    bank.defer_index(True)  # the first process's catch-ups index what this one adds
    ingestor = Ingestor(bank, template, exclude=exclude, limits=limits, parallel_bytes=1 << 62)
    ingestor._should_stop = _stop_flag(stop)
    try:
        while True:
            task = workers.receive(tasks)
            if task is None:
                break
            sources = [(HARNESSES[name], item) for name, item in pickle.loads(task)]
            try:
                answer: tuple[str, Any] = ("ok", ingestor.ingest_unit(sources))
            except Exception as exc:  # the parent raises it, as if it had ingested the source itself
                answer = ("error", exc)
            try:
                data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that cannot be pickled: said as what it was
                data = pickle.dumps(("error", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]}")))
            workers.write(results, data)
    finally:
        bank.close()


def _stop_flag(fd: int) -> Callable[[], bool]:
    stopped = False

    def should_stop() -> bool:
        nonlocal stopped
        if not stopped:
            stopped = bool(select.select([fd], [], [], 0)[0])  # a byte written, or the parent gone
        return stopped

    return should_stop
