"""The service's file events: a recursive watch on every harness root that exists, a shallow one on the nearest
existing parent of a root that does not yet (to see it appear), and each event noted as a source to read.

Watchdog's observer thread only notes which source changed (:meth:`Watching.on_event`, under the service's
condition); the service's one work thread reads it after the debounce, so no event touches the bank from here.
A watch that cannot be made (inotify limits, permissions) is logged and left to the timers, which stat every
known source anyway. :class:`Watching` is a part of :class:`harvester.service.run.Service`, kept apart as the
bank's SQLite parts are (harvester/bank/sqlite_*.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from harvester.capture.sources import Found, match, owner
from harvester.config import Settings, Timings
from harvester.log import get_logger
from harvester.parsers.base import Harness

log = get_logger("harvester.service")  # the service's own events: through harvester.log, see there


@dataclass
class Pending:
    found: Found
    harness: Harness
    due: float  # monotonic time at which to read it


@dataclass
class Watch:
    path: str
    recursive: bool
    handle: Any


class Watching:
    """What :class:`~harvester.service.run.Service` watches, and what an event makes of it."""

    settings: Settings
    env: Mapping[str, str]
    home: Path
    harnesses: list[Harness]
    timings: Timings
    observer: Any
    _cond: threading.Condition
    _pending: dict[str, Pending]
    _watches: dict[tuple[str, bool], Watch]
    _watched: tuple[list[str], list[str]]
    _queue_job: Callable[[str, Callable[[], None]], None]
    _read: Callable[[Harness, Found], None]
    reconcile: Callable[[], None]

    def on_event(self, event: FileSystemEvent) -> None:
        """Observer thread: note which source changed; the work loop reads it after the debounce."""
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path] + ([event.dest_path] if getattr(event, "dest_path", "") else [])
        if event.is_directory:
            if event.event_type in ("created", "moved"):
                target = Path(os.fsdecode(paths[-1]))
                self._queue_job(f"dir:{target}", lambda: self._on_directory(target))
            elif event.event_type == "deleted":
                self._queue_job("roots", self._on_roots_changed)
            return
        for raw in paths:
            path = Path(os.fsdecode(raw))
            for harness, root in self._root_pairs():
                found = match(harness, root, path) or owner(harness, root, path)
                if found is None or not found.spec.watch:
                    continue
                with self._cond:
                    if str(found.path) not in self._pending:
                        self._pending[str(found.path)] = Pending(
                            found, harness, time.monotonic() + self.timings.debounce_ms / 1000)
                        self._cond.notify()
                break

    def _on_directory(self, directory: Path) -> None:
        """A directory appeared: inside a root, sources may already sit in it (written before its
        watch was in place); elsewhere it may be a root, or on the way to one."""
        pairs = [(h, r) for h, r in self._root_pairs() if directory == r or r in directory.parents]
        if not pairs:
            self._on_roots_changed()
            return
        for harness, root in pairs:
            for path in sorted(directory.rglob("*")):
                found = match(harness, root, path) if path.is_file() else None
                if found is not None and found.spec.watch:
                    self._read(harness, found)

    def _on_roots_changed(self) -> None:
        """Re-arm the watches; a root that newly exists is read in full."""
        if self._arm_watches():
            self.reconcile()

    def _arm_watches(self) -> set[str]:
        """A recursive watch on every root that exists, and a shallow one on the nearest existing
        parent of every root that does not (to see it appear). Returns the roots newly watched recursively:
        what was written in them before their watch was in place sent no event the service saw, so the caller
        reads them whole (every caller: a root is new to the watches once, whichever caller finds it).

        Watch first, look after: an agent may make its store between the look at what exists and the watch on
        the nearest parent being in place, and no event would ever say so. So the look is taken again once the
        watches are armed, until two looks agree (a store made a few directories deep takes a look a level)."""
        if self.observer is None:
            return set()
        before = {w.path for w in self._watches.values() if w.recursive}
        wanted = self._wanted_watches()
        for _ in range(8):
            self._schedule(wanted)
            again = self._wanted_watches()
            if again == wanted:
                break
            wanted = again
        self._watched = (sorted(w.path for w in self._watches.values() if w.recursive),
                         sorted(w.path for w in self._watches.values() if not w.recursive))
        return {w.path for w in self._watches.values() if w.recursive} - before

    def _wanted_watches(self) -> set[tuple[str, bool]]:
        wanted: set[tuple[str, bool]] = set()
        for harness in self.harnesses:
            if harness.roots_in_repositories:
                continue  # polled: a recursive watch on whole repositories would cost far more
            for root in self._candidate_roots(harness):
                if root.is_dir():
                    wanted.add((str(root), True))
                else:
                    parent = _nearest_existing(root)
                    if parent is not None:
                        wanted.add((str(parent), False))
        return wanted

    def _schedule(self, wanted: set[tuple[str, bool]]) -> None:
        for key in list(self._watches):
            if key not in wanted:
                with contextlib.suppress(KeyError, OSError):
                    self.observer.unschedule(self._watches[key].handle)
                del self._watches[key]
        for path, recursive in wanted - set(self._watches):
            try:
                handle = self.observer.schedule(_Handler(self), path, recursive=recursive)
            except OSError as exc:  # inotify limits, permissions: the timers still cover this root
                log.warning("cannot watch", path=path, error=str(exc))
                continue
            self._watches[(path, recursive)] = Watch(path, recursive, handle)

    def _candidate_roots(self, harness: Harness) -> list[Path]:
        return [*harness.roots(self.env, self.home), *self.settings.roots.get(harness.name, [])]

    def _root_pairs(self) -> list[tuple[Harness, Path]]:
        return [(h, Path(w.path)) for h in self.harnesses for w in list(self._watches.values())
                if w.recursive and Path(w.path) in self._candidate_roots(h)]


class _Handler(FileSystemEventHandler):
    def __init__(self, service: Watching) -> None:
        self.service = service

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.service.on_event(event)


def _nearest_existing(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.is_dir():
            return parent
    return None
