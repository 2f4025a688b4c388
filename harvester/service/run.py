"""``harvester run``: the long-running capture service that the login units start.

Threads, and why there are so few: watchdog's observer thread only notes which source changed;
APScheduler's thread only queues jobs; everything that touches the bank runs on ONE thread (the
one that called :meth:`Service.run`), in order. So there are no locks around the bank, and a
SIGTERM simply lets that thread finish the transaction it is in, then stop.

What keeps the bank complete without any help from the agents:
- file events on every harness root (and on the nearest existing parent of a root that does not
  exist yet, so an agent installed later is picked up), coalesced per source (harvester/service/watch.py);
- a reconcile at start and every ``reconcile_minutes``: every known source is stat-ed, and only
  what changed is read (this is also what catches events missed while the service was down);
- every ``unfinished_seconds``: the sources of unfinished sessions are re-read, agent processes
  are looked at, and sessions whose agent is gone are marked ended or abandoned;
- every ``poll_seconds``: sources whose store file events cannot follow (``SourceSpec.watch``).

And the bank itself, deleted or replaced while the service holds it open (``rm -rf`` of the data directory):
noticed at the next turn of the loop, made again and re-scanned (harvester/bank/gone.py), or, when no bank
can be made there, the service stops with an error and its login unit starts it again later.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from apscheduler.schedulers.background import BackgroundScheduler
from watchdog.observers import Observer

from harvester import __version__
from harvester.bank import Bank, open_bank
from harvester.bank import gone as bank_gone
from harvester.capture.ingest import Ingestor, SourceResult
from harvester.capture.liveness import AgentProcess, agent_processes, verdicts
from harvester.capture.sources import Found, discover, match
from harvester.config import Settings, runtime_dir
from harvester.heartbeat import HEARTBEAT_NAME
from harvester.log import get_logger
from harvester.parsers import HARNESSES
from harvester.parsers.base import Harness
from harvester.service.instance import InstanceLock
from harvester.service.watch import Pending, Watch, Watching

log = get_logger("harvester.service")  # through harvester.log: see there
# Quiet seconds after an import, or a job that reads many rows, after which the page cache they filled is handed
# back (Service._settle_memory): an idle service keeps its 8 MiB cache empty.
SETTLE_SECONDS = 1.0
IDLE_CACHE_KIB = 2048  # SQLite's page cache once start-up is done (opened with 8 MiB: sqlite_open._connect)
ARCHIVE_MAINTENANCE_SECONDS = 6 * 3600  # archive retention and its leftovers: a few times a day is enough

def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _written(result: SourceResult) -> list[str]:
    """Sessions written to that are live again: not those whose own store just said they ended."""
    return [sid for sid, n in result.sessions.items() if n and sid not in result.ended]


@dataclass
class Service(Watching):
    settings: Settings
    env: Mapping[str, str]
    home: Path
    harnesses: list[Harness] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.harnesses:
            self.harnesses = [h for n, h in HARNESSES.items() if self.settings.enabled(n)]
        self.timings = self.settings.timings
        self.stop_event = threading.Event()
        self._cond = threading.Condition()
        self._pending: dict[str, Pending] = {}
        self._jobs: list[tuple[str, Callable[[], None]]] = []
        self._watches: dict[tuple[str, bool], Watch] = {}
        self._held: dict[tuple[str, str], int] = {}  # (harness, native id) -> pid of its agent process
        self.started = _now()
        self.last_activity: str | None = None
        self._busy: tuple[str, str] | None = None  # what the work thread does, since when (the heartbeat says)
        self._live = 0  # live sessions, as the work thread last counted them
        self._settle_at: float | None = None  # when to hand back what imports made SQLite cache (_settle_memory)
        self._first_check = True  # the first judgement of every session's state is summarized, not itemized
        self._watched: tuple[list[str], list[str]] = ([], [])  # (roots watched, parents waited on), for the heartbeat
        self.bank: Bank | None = None
        self.ingestor: Ingestor | None = None
        self.observer: Any = None
        self.scheduler: BackgroundScheduler | None = None
        self.sinks: Any = None  # a passes.SinkThread when a sink is configured
        self.team: Any = None  # a passes.TeamThread when a team bank is set
        self._bank_file: tuple[int, int] | None = None  # the file the bank was opened from (bank_gone.identity)
        self.exit_code = 0

    # -- lifecycle -------------------------------------------------------------------------
    def run(self) -> int:
        lock = InstanceLock(runtime_dir(self.env))
        lock.acquire()  # raises AlreadyRunning
        self._install_signal_handlers()
        try:
            self._open_bank()
            log.info("service starting", pid=os.getpid(), bank=str(self.settings.bank),
                     harnesses=[h.name for h in self.harnesses])
            self.observer = Observer()
            self.observer.start()
            self._arm_watches()
            self._write_heartbeat()
            if self._start_up():
                self._loop()
        finally:
            self._shutdown()
            lock.release()
        log.info("service stopped", exit_code=self.exit_code)
        return self.exit_code

    def _start_up(self) -> bool:
        """Read what changed while the service was away, judge every open session, start the timers and the sinks.
        A stop (SIGTERM) on the way is answered at once: False, and the rest is skipped (every step is one a later
        start does again)."""
        assert self.bank is not None
        # Input never stops the service: a job that fails is logged and runs again on its timer.
        self._run_job("reconcile", self.reconcile)
        if self.stop_event.is_set():
            return False
        self._run_job("sessions", self.check_sessions)
        self._first_check = False
        if self.stop_event.is_set():
            return False
        self._start_scheduler()
        self._start_sinks()
        totals = self.bank.harness_stats()
        log.info("service running", watched=sorted(w.path for w in self._watches.values()),
                 sessions=sum(t["sessions"] for t in totals.values()),
                 events=sum(t["events"] for t in totals.values()), live=self._live)
        self._release_memory()  # what start-up read (every source, every session) is not needed again soon
        # Start-up may have been a backfill, which a large page cache speeds; what follows is appends, which
        # touch a few pages each: a small cache keeps an idle service small (bench/bench_service.py).
        self.bank.limit_cache(IDLE_CACHE_KIB)
        return True

    def _open_bank(self, made_again: Callable[[Bank], None] | None = None) -> None:
        """The bank, and the ingestor reading into it; ``made_again`` first writes what the bank it replaces
        carried over (the ingestor reads the recall key once, and the re-scan must find the tombstones)."""
        self.bank = open_bank(self.settings.bank, archive=self.settings.archive)
        self._bank_file = bank_gone.identity(self.settings.bank)
        if made_again is not None:
            made_again(self.bank)
        # Reading stays in this process (no reader process, as scan uses for large imports): a
        # service's imports are small after the first, and an idle service should be one process.
        self.ingestor = Ingestor(self.bank, self.settings.bank_id_template, exclude=self.settings.excluded,
                                 parallel_bytes=sys.maxsize, limits=self.settings.read_limits())

    def _bank_again(self) -> bool:
        """The file at the bank's path is not the one opened (deleted, or another): everything that holds the old
        one is closed, the path opened anew, every store re-scanned into it (harvester/bank/gone.py). False when
        no bank can be opened there: the service then stops with an error (its login unit restarts it)."""
        assert self.bank is not None and self.ingestor is not None
        why = "replaced" if os.path.exists(self.settings.bank) else "deleted"
        log.warning("bank_gone", bank=str(self.settings.bank), why=why)
        self._busy = ("the bank, made again", _now())
        self._stop_sinks()  # their own connections hold the old file too
        kept, previous = bank_gone.carried(self.bank), bank_gone.recorded(self.bank)
        self.ingestor.close()
        self.bank.close()
        self.bank = self.ingestor = None
        try:
            self._open_bank(lambda bank: bank_gone.record(bank, why, kept, previous))
        except Exception:
            log.exception("bank_cannot_be_made_again", bank=str(self.settings.bank))
            self.exit_code = 1
            return False
        finally:
            self._busy = None
        self._first_check = True
        self._run_job("reconcile", self.reconcile)
        self._run_job("sessions", self.check_sessions)
        self._first_check = False
        self._start_sinks()
        self.bank.limit_cache(IDLE_CACHE_KIB)
        log.info("bank made again", bank=str(self.settings.bank), why=why)
        return True

    def stop(self, *_: object) -> None:
        self.stop_event.set()
        with self._cond:
            self._cond.notify_all()

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.stop)
            signal.signal(signal.SIGINT, self.stop)

    def _start_sinks(self) -> None:
        """Forwarding runs beside capture, on its own thread and bank connection (harvester/sinks)."""
        if self.settings.sinks:
            from harvester.service.passes import SinkThread

            self.sinks = SinkThread(self.settings, self.env)
            self.sinks.start()
        if self.settings.team is not None:  # the team push likewise (harvester/team)
            from harvester.service.passes import TeamThread

            self.team = TeamThread(self.settings, self.env)
            self.team.start()

    def _wake_sinks(self) -> None:
        if self.sinks is not None:
            self.sinks.wake()
        if self.team is not None:
            self.team.wake()

    def _stop_sinks(self) -> None:
        if self.sinks is not None:
            self.sinks.stop()
        if self.team is not None:
            self.team.stop()
        self.sinks = self.team = None

    def _shutdown(self) -> None:
        self._stop_sinks()
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=1.0)
        if self.ingestor is not None:
            self.ingestor.close()
        if self.bank is not None:
            self.bank.close()
        with contextlib.suppress(OSError):
            (runtime_dir(self.env) / HEARTBEAT_NAME).unlink()

    def _start_scheduler(self) -> None:
        t = self.timings
        self.scheduler = BackgroundScheduler(daemon=True, job_defaults={"coalesce": True, "max_instances": 1})
        for name, fn, seconds in (
            ("reconcile", self.reconcile, t.reconcile_minutes * 60),
            ("sessions", self.check_sessions, t.unfinished_seconds),
            ("poll", self.poll, t.poll_seconds),
            ("archive", self.maintain_archive, ARCHIVE_MAINTENANCE_SECONDS),
        ):
            self.scheduler.add_job(self._queue_job, "interval", seconds=seconds, args=(name, fn), id=name)
        # The heartbeat is written from the scheduler's thread, not queued behind the work: a stuck
        # read still shows in status, as "busy with <what> since <when>", and a frozen process as silence.
        self.scheduler.add_job(self._write_heartbeat, "interval", seconds=t.heartbeat_seconds, id="heartbeat")
        self.scheduler.start()

    # -- the one thread that works ---------------------------------------------------------
    def _queue_job(self, name: str, fn: Callable[[], None]) -> None:
        with self._cond:
            if all(queued != name for queued, _ in self._jobs):
                self._jobs.append((name, fn))
                self._cond.notify()

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            # A stat a turn (at least one a second): the bank deleted under the service costs it a second.
            if bank_gone.identity(self.settings.bank) != self._bank_file and not self._bank_again():
                return
            with self._cond:
                now = time.monotonic()
                due = [p for p in self._pending.values() if p.due <= now]
                for p in due:
                    del self._pending[str(p.found.path)]
                jobs, self._jobs = self._jobs, []
                if not due and not jobs:
                    if self._settle_at is not None and now >= self._settle_at:
                        self._settle_memory()
                    wait = min((p.due for p in self._pending.values()), default=now + 1.0) - now
                    self._cond.wait(timeout=max(0.0, min(wait, 1.0)))
                    continue
            for p in due:
                if self.stop_event.is_set():
                    return
                self._busy = (str(p.found.path), _now())
                self._read(p.harness, p.found)
                self._busy = None
            for name, fn in jobs:
                if self.stop_event.is_set():
                    return
                self._run_job(name, fn)

    def _run_job(self, name: str, fn: Callable[[], None]) -> None:
        self._busy = (name, _now())
        try:
            fn()
        except Exception:  # one failed job must not end the service
            log.exception("job failed", job=name)
        finally:
            self._busy = None
            if self.bank is not None:
                with contextlib.suppress(Exception):
                    self._live = self.bank.live_count()
            if name != "poll":  # the others read every open session or every source (poll: what changed)
                self._settle_at = time.monotonic() + SETTLE_SECONDS
            if name in ("reconcile", "poll"):  # they import what changed
                self._wake_sinks()

    def _read(self, harness: Harness, found: Found) -> None:
        assert self.ingestor is not None and self.bank is not None
        try:
            result = self.ingestor.ingest(harness, found)
        except Exception:
            log.exception("import failed", path=str(found.path))
            return
        if result.events_added:
            self.last_activity = _now()
            self._settle_at = time.monotonic() + SETTLE_SECONDS
            self.bank.reopen(harness.name, _written(result))
            log.info("imported", harness=harness.name, path=str(found.path), events=result.events_added)
            self._wake_sinks()

    def _read_many(self, harness: Harness, found: list[Found]) -> None:
        assert self.ingestor is not None and self.bank is not None
        try:
            results = self.ingestor.ingest_many(harness, found)
        except Exception:
            log.exception("import failed", harness=harness.name)
            return
        for result in results:
            if result.events_added:
                self.last_activity = _now()
                self._settle_at = time.monotonic() + SETTLE_SECONDS
                self.bank.reopen(harness.name, _written(result))
                log.info("imported", harness=harness.name, path=result.path, events=result.events_added)
                self._wake_sinks()

    # -- jobs ------------------------------------------------------------------------------
    def reconcile(self) -> None:
        """Stat every source of every harness; read only what changed."""
        assert self.ingestor is not None
        started = time.monotonic()
        report = self.ingestor.scan(self.harnesses, self.env, self.home, extra_roots=self.settings.roots,
                                    should_stop=self.stop_event.is_set)
        if report.events_added:
            self.last_activity = _now()
        log.info("reconciled", seconds=round(time.monotonic() - started, 3), events=report.events_added,
                 sources=sum(h.sources for h in report.harnesses.values()))
        if self._arm_watches():  # a root made while this reconcile read the others: read it whole too
            self._queue_job("reconcile", self.reconcile)
        if report.events_added:
            self._release_memory()

    def maintain_archive(self) -> None:
        """Archive retention (when configured) and files the bank no longer names (harvester/capture/archive/expiry)."""
        assert self.bank is not None
        done = self.bank.maintain_archive(self.settings.archive_max_age_days, self.settings.archive_max_size_bytes,
                                          collect=True)
        if done is not None and (done.sources or done.bytes_freed):
            log.info("archive maintained", sources_removed=len(done.sources), bytes_freed=done.bytes_freed,
                     over_limit=done.over_limit)

    def poll(self) -> None:
        """Sources that file events cannot follow (SourceSpec.watch is False): read on a timer."""
        assert self.ingestor is not None
        for harness in self.harnesses:
            if all(s.watch for s in harness.sources):
                continue
            self._read_many(harness, [f for f in discover(harness, self._roots(harness)) if not f.spec.watch])

    def check_sessions(self) -> None:
        """Re-read unfinished sessions' sources; mark the ones whose agent is gone."""
        assert self.bank is not None
        processes: list[AgentProcess] | None = None
        for harness in self.harnesses:
            after = 0
            while page := self.bank.open_sessions(harness.name, after):  # pages: history can be large
                if self.stop_event.is_set():  # a stop waits for one page's judgement, not every harness's
                    return
                after = page[-1]["pk"]
                if processes is None:  # a look at every process of the machine: only when a session is open
                    processes = agent_processes(self.harnesses)
                self._check_page(harness, page, [p for p in processes if p.harness == harness.name])
        self._on_roots_changed()  # a root that appeared since (read whole), a watched root that went away

    def _check_page(self, harness: Harness, sessions: list[dict[str, Any]], running: list[AgentProcess]) -> None:
        assert self.bank is not None
        t = self.timings
        sources = {s["source_path"] for s in sessions if s["source_path"]}
        roots = self._roots(harness)
        self._read_many(harness, [f for f in (self._found(harness, Path(p), roots) for p in sorted(sources)) if f])
        changes: list[tuple[int, str]] = []
        for session, verdict, holder in verdicts(sessions, running,
                                                 lambda s: (harness.name, s["native_id"]) in self._held,
                                                 t.recent_minutes * 60, t.idle_end_minutes * 60):
            key = (harness.name, session["native_id"])
            if holder is not None:
                self._held[key] = holder.pid
            else:
                self._held.pop(key, None)
            if verdict.state != session["state"]:
                changes.append((session["pk"], verdict.state))
                # The first check judges all of history at once: that is said in one line per agent below.
                if not self._first_check and len(changes) <= 20:
                    log.info("session state", harness=harness.name, session=session["native_id"],
                             state=verdict.state, reason=verdict.reason)
        if changes and (self._first_check or len(changes) > 20):
            log.info("session states", harness=harness.name, changed=len(changes),
                     states=dict(Counter(state for _, state in changes)))
        self.bank.set_states(changes)

    def _release_memory(self) -> None:
        """After a large import, hand back what it used: the service idles for hours after."""
        assert self.bank is not None
        gc.collect()
        self._settle_memory()

    def _settle_memory(self) -> None:
        """Quiet after work: SQLite's page cache (up to 8 MiB, filled by the writes or the job's reads) back to the
        system. A few ms once a burst of appends is over; the next append reads its few pages again."""
        self._settle_at = None
        if self.bank is not None:
            self.bank.shrink_memory()
        if _malloc_trim is not None:
            _malloc_trim(0)

    # -- helpers ---------------------------------------------------------------------------
    def _roots(self, harness: Harness) -> list[Path]:
        assert self.ingestor is not None
        return self.ingestor.roots_for(harness, self.env, self.home, self.settings.roots.get(harness.name, ()))

    def _found(self, harness: Harness, path: Path, roots: list[Path]) -> Found | None:
        for root in roots:
            found = match(harness, root, path)
            if found is not None:
                return found
        return None

    def _write_heartbeat(self) -> None:
        directory = runtime_dir(self.env)
        data = {
            "pid": os.getpid(), "version": __version__, "started_at": self.started, "heartbeat_at": _now(),
            "last_activity": self.last_activity, "bank": str(self.settings.bank),
            "watched": self._watched[0], "waiting_for": self._watched[1],
            "live_sessions": self._live,
            "busy": {"with": self._busy[0], "since": self._busy[1]} if self._busy else None,
        }
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = directory / f".{HEARTBEAT_NAME}.{os.getpid()}"
        tmp.write_bytes(orjson.dumps(data))
        os.replace(tmp, directory / HEARTBEAT_NAME)


def _libc_malloc_trim() -> Callable[[int], int] | None:
    """glibc keeps freed heap pages unless asked to return them; other libcs have no such call."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_malloc_trim = _libc_malloc_trim() if sys.platform.startswith("linux") else None


