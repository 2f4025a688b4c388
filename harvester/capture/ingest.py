"""Ingest: commit what :mod:`harvester.capture.reading` read, filed under its repository, chunk by chunk.

The order of operations is what makes a crash harmless. Nothing moves a cursor except the same
transaction that writes the events read up to it; so after a kill -9 the next run re-reads from the
last committed cursor, and anything it sees again is ignored by uid.

Once there is enough to read (:data:`PARALLEL_BYTES`), ``scan`` ingests on both cores: a second process,
with its own connection to the bank, reads and commits some of the sources while this one does the rest.
Each source is ingested by exactly one of them, in the same transactions as ever; SQLite serializes the
two writers' commits (and :meth:`SqliteBank.share_writes` hands the bank over without polling). Sending
the read chunks to one committing process instead would cost their pickling and leave that process, not
the reading, the bottleneck.

Over 500 lines: one class commits chunks with their cursors and schedules a scan over two processes; the
scheduling calls the commit path at every step, and splitting them would put the transaction's order of
operations, and why a crash is harmless, in two files.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.capture import grouping
from harvester.capture.contract import BankError, CaptureBank, Cursor, CursorMoved, SessionWrite, Write
from harvester.capture.sources import Found, discover, harness_roots, source_stat, unchanged
from harvester.config.limits import LIMITS, ReadLimits
from harvester.log import configured_level, get_logger
from harvester.parsers.base import Harness

if TYPE_CHECKING:  # imported where a source is read, or a second process started: a rescan with nothing new needs
    # neither (tests/test_rescan_start.py): the reading stack (its parsers, decompressors, the model) and the
    # second process (subprocess, pickle, threads) are most of what a scan would import.
    from concurrent.futures import Future

    from harvester.capture import workers
    from harvester.capture.reading import Chunk, Failure, Outcome
    from harvester.gitident import GitResolver
    from harvester.model import Batch, Problem

log = get_logger("harvester.ingest")  # through harvester.log: see there

PROBLEMS_LOGGED_PER_SOURCE = 10  # the rest are counted in the bank, not repeated in the log
# Below this much to read, a second process costs more than it saves. $HARVESTER_PARALLEL_BYTES sets it
# (the crash tests kill scans that ingest on both cores with it at 0).
PARALLEL_BYTES = int(os.environ.get("HARVESTER_PARALLEL_BYTES") or 32 * 1024 * 1024)
IN_FLIGHT = 2  # sources queued for the other process: enough that it never waits for the next
# From this much to read on, the sources' transactions leave their events' full-text indexing to catch-ups of
# many sources' events at once (harvester/bank/sqlite_index.py): fewer index segments, a shorter write lock per
# source. Below it (a live append) each write indexes its own events, searchable the moment it commits.
# (Also whenever two processes ingest: the second always defers. $HARVESTER_DEFER_INDEX_BYTES sets it.)
DEFER_INDEX_BYTES = int(os.environ.get("HARVESTER_DEFER_INDEX_BYTES") or 8 * 1024 * 1024)


@dataclass(slots=True)
class SourceResult:
    path: str
    outcome: str  # new | read | restarted | unchanged | missing | unreadable | failed | raced
    events_added: int = 0
    sessions: dict[str, int] = field(default_factory=dict)  # native id -> events added
    problems: int = 0
    ended: set[str] = field(default_factory=set)  # sessions whose store said, last in this read, they ended
    bytes_read: int = 0


@dataclass(slots=True)
class HarnessReport:
    harness: str
    roots: list[str] = field(default_factory=list)
    sources: int = 0
    sources_read: int = 0
    sessions: set[str] = field(default_factory=set)
    sessions_changed: set[str] = field(default_factory=set)  # sessions that got new events
    events_added: int = 0
    problems: int = 0
    unreadable: int = 0
    failed: int = 0


@dataclass(slots=True)
class ScanReport:
    harnesses: dict[str, HarnessReport] = field(default_factory=dict)
    seconds: float = 0.0
    bytes_read: int = 0

    @property
    def events_added(self) -> int:
        return sum(h.events_added for h in self.harnesses.values())


OnSource = Callable[[Harness, Found, SourceResult], None]


class Ingestor:
    def __init__(self, bank: CaptureBank, template: str, resolver: GitResolver | None = None,
                 parallel_bytes: int = PARALLEL_BYTES, exclude: Callable[[str | None], bool] | None = None,
                 limits: ReadLimits = LIMITS) -> None:
        self.bank = bank
        archive = getattr(bank, "archive", None)  # a bank that keeps an archive: every read feeds it
        if limits.archive is None and archive is not None and not archive.readonly:
            limits = replace(limits, archive=str(archive.dir))
        if limits.recall_key is None:  # the harvester's own answers seen again are marked (recall/frame.py)
            limits = replace(limits, recall_key=bank.recall_key())
        self.limits = limits
        self.template = template
        self.exclude = exclude  # cwd -> never capture sessions started there
        self._git = resolver
        self.parallel_bytes = parallel_bytes
        self.bytes_read = 0
        self._second: workers.SecondProcess | None = None
        self._should_stop: Callable[[], bool] = lambda: False

    @property
    def git(self) -> GitResolver:
        """Repositories are identified the first time a session is filed: a scan with nothing new imports no git."""
        if self._git is None:
            from harvester.gitident import GitResolver

            self._git = GitResolver(learned=self.bank.learned_identity, remember=self.bank.remember_identity)
        return self._git

    def close(self) -> None:
        if self._second is not None:
            self._second.close()  # what it is ingesting stops at a committed chunk
            self._second = None
            self.bank.share_writes(False)  # type: ignore[attr-defined]

    def __enter__(self) -> Ingestor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- whole scans -----------------------------------------------------------------------
    def scan(self, harnesses: Iterable[Harness], env: Mapping[str, str], home: Path,
             on_source: OnSource | None = None,
             on_discovered: Callable[[Harness, list[Found]], None] | None = None,
             extra_roots: Mapping[str, list[Path]] | None = None,
             should_stop: Callable[[], bool] | None = None) -> ScanReport:
        """Import what is new in every source of these harnesses. ``should_stop`` is asked between
        sources and chunks: a stop leaves every source at a committed cursor."""
        started = time.monotonic()
        start_bytes = self.bytes_read
        report = ScanReport()
        self._should_stop = should_stop or (lambda: False)
        harnesses = list(harnesses)
        # Every harness's sources in one schedule, so that both processes of a large scan stay busy across
        # harnesses (one opencode database beside many small JSONL files). Those whose roots are the
        # repositories the bank knows (Aider) come after the rest, which may make more of them known.
        for wave in ([h for h in harnesses if not h.roots_in_repositories],
                     [h for h in harnesses if h.roots_in_repositories]):
            if not wave or self._should_stop():
                continue
            plans: list[tuple[Harness, list[Found], dict[str, Cursor]]] = []
            for harness in wave:
                hr = report.harnesses[harness.name] = HarnessReport(harness.name)
                roots = self.roots_for(harness, env, home, (extra_roots or {}).get(harness.name, ()))
                hr.roots = [str(r) for r in roots]
                unlisted: list[tuple[Path, str]] = []
                found = list(discover(harness, roots, unlisted))
                self._note_unlisted(harness, roots, unlisted)
                if on_discovered is not None:
                    on_discovered(harness, found)
                plans.append((harness, found, self.bank.cursors_of(harness.name, [str(f.path) for f in found])))
            for harness, item, result in self._ingest_all(plans):
                _tally(report.harnesses[harness.name], result)
                if on_source is not None:
                    on_source(harness, item, result)
                if self._should_stop():
                    break
            for harness, found, _ in plans:
                # Sources we knew that are gone: the agent deleted them (Claude's cleanup) or they were
                # replaced (.jsonl -> .jsonl.zst). Their sessions stay in the bank; say the file is gone.
                # A whole store deleted (its root gone too) is as gone as one file of it.
                seen = {str(item.path) for item in found}
                for path in self.bank.source_paths(harness.name):  # those not said to be missing already
                    if path not in seen and not os.path.lexists(path):
                        self.bank.set_source_status(path, "missing")
        self.bank.settle_index(report.events_added)  # after a backfill: one index segment (bank/sqlite_index.py)
        report.seconds = time.monotonic() - started
        report.bytes_read = self.bytes_read - start_bytes
        self.close()  # a reader process lives for the scan that needed it, not in an idle service
        return report

    def roots_for(self, harness: Harness, env: Mapping[str, str], home: Path,
                  extra: Iterable[Path] = ()) -> list[Path]:
        """Where a harness's sources are (harvester.capture.sources.harness_roots)."""
        return harness_roots(harness, self.bank.known_directories, env, home, extra)

    def _ingest_all(self, plans: list[tuple[Harness, list[Found], dict[str, Cursor]]]
                    ) -> Iterator[tuple[Harness, Found, SourceResult]]:
        """Every source of these harnesses (with the cursors known of each): unchanged ones cost a stat;
        the rest are read and committed here, or, when there is enough to read, some of them in the other
        process (see the module)."""
        pending: list[tuple[Harness, Found, Cursor | None, int]] = []
        for harness, found, known in plans:
            for item in found:
                cursor = known.get(str(item.path))
                try:
                    st = source_stat(item.path, item.spec.format, item.spec.related)
                except OSError:
                    pending.append((harness, item, cursor, 0))  # reading will say what is wrong
                    continue
                if cursor is not None and unchanged(cursor, st):
                    yield harness, item, SourceResult(str(item.path), "unchanged")
                    continue
                appended = item.spec.format in ("jsonl", "lines", "zstd-frames")
                offset = cursor.offset if cursor is not None and appended else 0
                pending.append((harness, item, cursor, max(st.st_size - offset, 0)))
        to_read = sum(entry[3] for entry in pending)
        if to_read < min(DEFER_INDEX_BYTES, self.parallel_bytes):
            yield from self._ingest_pending(pending, to_read)
            return
        self.bank.defer_index(True)
        try:
            for done in self._ingest_pending(pending, to_read):
                yield done
                self.bank.catch_up_index(whole=False)  # the whole batches gathered so far, by both processes
        except GeneratorExit:  # the scan stopped early: what it committed is searchable all the same
            self.bank.defer_index(False)
            raise
        except BaseException:
            self.bank.defer_index(False, catch_up=False)  # (the next write or start catches up)
            raise
        self.bank.defer_index(False)

    def _ingest_pending(self, pending: list[tuple[Harness, Found, Cursor | None, int]], to_read: int
                        ) -> Iterator[tuple[Harness, Found, SourceResult]]:
        # Small sources in groups, each group one transaction, when no write indexes its own events (grouping.py).
        grouped = bool(getattr(self.bank, "index_deferred", False)) and hasattr(self.bank, "grouped")
        # One source is read by one process: a second would only wait (and hold its own memory).
        if (to_read < self.parallel_bytes or len(pending) < 2 or (os.cpu_count() or 1) < 2
                or not hasattr(self.bank, "share_writes")):
            for unit in grouping.units(pending, grouped):
                if self._should_stop():
                    break
                yield from self._ingest_unit([(harness, item, cursor) for harness, item, cursor, _ in unit])
            return
        # The largest first, so that neither process is left with a long one at the end.
        pending.sort(key=lambda entry: entry[3], reverse=True)
        window: deque[tuple[list[tuple[Harness, Found]], Future]] = deque()
        for unit in grouping.units(pending, grouped):
            if self._should_stop():
                break
            while window and window[0][1].done():
                yield from self._finish_from(*window.popleft())
            sources = [(harness, item) for harness, item, _, _ in unit]
            if len(window) < IN_FLIGHT and (future := self._submit(sources)) is not None:
                window.append((sources, future))
                continue
            # The other has enough queued: this one.
            yield from self._ingest_unit([(harness, item, cursor) for harness, item, cursor, _ in unit])
        while window:
            yield from self._finish_from(*window.popleft())

    def _submit(self, sources: list[tuple[Harness, Found]]) -> Future | None:
        from harvester.capture import workers

        try:
            return self._other().submit([(harness.name, item) for harness, item in sources])
        except workers.SecondProcessLost:
            self._lost_other()
            return None

    def _finish_from(self, sources: list[tuple[Harness, Found]], future: Future
                     ) -> list[tuple[Harness, Found, SourceResult]]:
        from harvester.capture import workers

        try:
            results: list[SourceResult] = future.result()
        except workers.SecondProcessLost:  # the other process died (killed, out of memory): ingest them here
            log.warning("the second ingesting process died; going on here", path=str(sources[0][1].path))
            self._lost_other()
            return self._ingest_unit([(harness, item, self.bank.cursor(str(item.path))) for harness, item in sources])
        self.bytes_read += sum(result.bytes_read for result in results)
        return [(harness, item, result) for (harness, item), result in zip(sources, results, strict=True)]

    def _other(self) -> workers.SecondProcess:
        """The second process: an Ingestor of its own over the same bank (a fresh interpreter, not a fork:
        the parent's open SQLite connection must never be inherited). It dies with this one (workers.py)."""
        if self._second is None:
            from harvester.capture import workers

            self.bank.share_writes()  # type: ignore[attr-defined]
            self._second = workers.SecondProcess((os.getpid(), self.bank.for_another_process(), self.template,
                                                  self.exclude, self.limits, configured_level()))
        return self._second

    def _lost_other(self) -> None:
        if self._second is not None:
            self._second.close()
        self._second = None
        self.bank.share_writes(False)  # type: ignore[attr-defined]

    def ingest_many(self, harness: Harness, found: list[Found]) -> list[SourceResult]:
        """Several sources of one harness: their cursors in one query, unchanged ones for a stat."""
        known = self.bank.cursors_of(harness.name, [str(f.path) for f in found]) if len(found) > 8 else {
            str(f.path): c for f in found if (c := self.bank.cursor(str(f.path))) is not None}
        return [result for _, _, result in self._ingest_all([(harness, found, known)])]

    # -- one source ------------------------------------------------------------------------
    def ingest(self, harness: Harness, found: Found) -> SourceResult:
        """Import what is new in one source; returns once it is committed."""
        return self._ingest(harness, found, self.bank.cursor(str(found.path)))

    def ingest_unit(self, sources: list[tuple[Harness, Found]]) -> list[SourceResult]:
        """One source, or a group of small ones committed together (grouping.py); their cursors as the bank has
        them now. What a scan's second process does with what it is sent."""
        unit = [(harness, found, self.bank.cursor(str(found.path))) for harness, found in sources]
        return [result for _, _, result in self._ingest_unit(unit)]

    def _ingest_unit(self, unit: list[tuple[Harness, Found, Cursor | None]]
                     ) -> list[tuple[Harness, Found, SourceResult]]:
        if len(unit) == 1:
            harness, found, cursor = unit[0]
            return [(harness, found, self._ingest(harness, found, cursor))]
        from harvester.capture.reading import Outcome, read_source

        read = []
        for harness, found, cursor in unit:  # read whole first: the group's transaction is only its writes
            outcome = Outcome(str(found.path))
            chunks = read_source(found, harness.name, cursor, outcome, self.bank.prepare_rows, self.limits)
            read.append((harness, found, outcome, grouping.read_ahead(chunks)))
        with self.bank.grouped():  # type: ignore[attr-defined]
            return [(harness, found, self._commit_source(harness, chunks, outcome))
                    for harness, found, outcome, chunks in read]

    def _ingest(self, harness: Harness, found: Found, cursor: Cursor | None) -> SourceResult:
        from harvester.capture.reading import Outcome, read_source

        outcome = Outcome(str(found.path))
        chunks = read_source(found, harness.name, cursor, outcome, self.bank.prepare_rows, self.limits)
        return self._commit_source(harness, chunks, outcome)

    def _commit_source(self, harness: Harness, chunks: Iterator[Chunk], outcome: Outcome) -> SourceResult:
        """Commit a source's chunks in order. This is the boundary one source cannot cross: whatever it
        raises, in reading, parsing or committing, fails this source alone (recorded, retried at the next
        reconcile); only a bank that cannot be written stops the scan."""
        result = SourceResult(outcome.path, outcome.outcome)
        try:
            for chunk in chunks:  # for an inline read, each chunk is read just before it is committed
                if self._should_stop():
                    break  # the cursor stands at the last committed chunk: the next run goes on from there
                outcome.line = chunk.first_line
                self._commit_chunk(harness, chunk, result)
        except CursorMoved:  # another writer (the service beside a scan) got there first
            log.info("another writer advanced this source first", path=outcome.path)
            result.outcome = "raced"
            return result
        except Exception as exc:
            if _bank_failure(exc):
                raise BankError(f"the bank at {self.bank.path} cannot be written: {exc}") from exc
            from harvester.capture.reading import failure_of

            outcome.failure = failure_of(exc, outcome.line)
        if outcome.failure is not None:
            return self._failed(harness, outcome, result)
        if outcome.restart_reason:
            log.info("re-read source from the start", path=outcome.path, reason=outcome.restart_reason)
        result.outcome = outcome.outcome
        self.bytes_read += outcome.bytes_read
        result.bytes_read = outcome.bytes_read
        if outcome.outcome in ("new", "read", "restarted") and not any(p.line == 0 for p in outcome.problems):
            self.bank.resolve_read_problems(outcome.path)
        if outcome.problems:
            _redact_problems(outcome.problems)  # a database's or a decompressor's error may quote what it read
            for problem in outcome.problems:
                log.warning("source problem", harness=harness.name, path=outcome.path, line=problem.line,
                            kind=problem.kind, detail=problem.detail)
            self.bank.record_problems(harness.name, outcome.path, outcome.problems)
            result.problems += len(outcome.problems)
        if outcome.status is not None:
            if outcome.status[0] == "unreadable" and self.bank.cursor(outcome.path) is None:
                # Never read yet: a source row still tells status which file cannot be read.
                self.bank.apply(Write(Cursor(harness.name, outcome.path, "unknown", status="unreadable",
                                             error=outcome.status[1]), [], [], [], is_new_source=True))
            else:
                self.bank.set_source_status(outcome.path, *outcome.status)
        return result

    def _commit_chunk(self, harness: Harness, chunk: Chunk, result: SourceResult) -> None:
        self._log_problems(harness, result.path, chunk.batch)
        excluded = self._exclude(harness, chunk)
        added = self.bank.apply(Write(chunk.cursor, self._identify(harness, chunk), chunk.batch.events,
                                      chunk.batch.problems, chunk.is_new_source, chunk.prepared,
                                      excluded, revise=chunk.batch.revise, marks=chunk.batch.marks,
                                      archive=chunk.archive, forgotten_as_of=chunk.forgotten_as_of))
        log.debug("committed", path=result.path, offset=chunk.cursor.offset, line=chunk.cursor.line,
                  events=len(chunk.batch.events), added=sum(added.values()))
        for native_id, n in added.items():
            result.sessions[native_id] = result.sessions.get(native_id, 0) + n
            result.events_added += n
        for native_id, patch in chunk.batch.sessions.items():
            result.sessions.setdefault(native_id, 0)
            if patch.state is not None and patch.state != "live":
                result.ended.add(native_id)
            elif patch.state == "live":
                result.ended.discard(native_id)
        result.problems += len(chunk.batch.problems)

    def _failed(self, harness: Harness, outcome: Outcome, result: SourceResult) -> SourceResult:
        """Record that a source failed: its status, the reason and the line, and the problems read
        before the failure. What was committed before stays; the rest is read again next time."""
        failure: Failure = outcome.failure  # type: ignore[assignment]
        reason = f"{failure.detail} (line {failure.line})" if failure.line else failure.detail
        path = outcome.path
        try:
            cursor = self.bank.cursor(path)
            if cursor is None or cursor.error != reason:  # said once, not at every retry
                log.error("source failed", harness=harness.name, path=path, line=failure.line, reason=failure.detail,
                          traceback=failure.trace)
            _redact_problems(outcome.problems)  # the failure's detail is (reading.failure_of)
            from harvester.model import Problem

            problems = [*outcome.problems, Problem("failed", failure.line, failure.detail)]
            if cursor is None:  # never read: a source row still tells status which file failed
                self.bank.apply(Write(Cursor(harness.name, path, "unknown", status="failed", error=reason),
                                      [], [], problems, is_new_source=True))
            else:
                self.bank.record_problems(harness.name, path, problems)
                self.bank.set_source_status(path, "failed", reason)
        except sqlite3.Error as exc:
            raise BankError(f"the bank at {self.bank.path} cannot be written: {exc}") from exc
        self.bytes_read += outcome.bytes_read
        result.bytes_read = outcome.bytes_read
        result.outcome = "failed"
        result.problems += len(problems)
        return result

    def _note_unlisted(self, harness: Harness, roots: list[Path], unlisted: list[tuple[Path, str]]) -> None:
        """Directories under a root that could not be listed: recorded (status shows them), and cleared
        once they can be listed again."""
        for directory, reason in unlisted:
            log.warning("directory cannot be listed", harness=harness.name, path=str(directory), reason=reason)
        self.bank.set_unlisted_directories(harness.name, [str(r) for r in roots],
                                           {str(d): reason for d, reason in unlisted})

    def _exclude(self, harness: Harness, chunk: Chunk) -> list[str]:
        """Drop from the chunk the sessions never to be stored: excluded by the configuration (by the cwd
        they started in), or forgotten (``harvester forget``); return the ones newly found excluded, for
        the bank to forget."""
        batch = chunk.batch
        names = set(batch.sessions) | {e.session for e in batch.events}
        known = self.bank.excluded_sessions(harness.name, sorted(names))
        new = [sid for sid, patch in batch.sessions.items()
               if sid not in known and self.exclude is not None and self.exclude(patch.cwd)]
        dropped = known | set(new)
        if dropped:
            keep = [i for i, e in enumerate(batch.events) if e.session not in dropped]
            if chunk.prepared is not None:
                chunk.prepared = [chunk.prepared[i] for i in keep]
            batch.events = [batch.events[i] for i in keep]
            for sid in dropped:
                batch.sessions.pop(sid, None)
        if chunk.archive and chunk.origin is not None and (
                dropped or (not names and self.bank.source_forgotten(chunk.cursor.path))):
            # Nor does the archive keep them: a source that holds nothing else keeps none of this chunk,
            # one that also holds sessions that stay keeps their records alone.
            from harvester.capture.archive.attribute import without

            ref, state, line = chunk.origin
            chunk.archive, discarded, partial = without(harness, ref, chunk.cursor.format, state, line,
                                                        chunk.archive, None if names <= dropped else dropped)
            self.bank.discard_archived(discarded, partial_source=chunk.cursor.path if partial else None)
        self._keep_copies_out(harness, chunk)
        return new

    def _keep_copies_out(self, harness: Harness, chunk: Chunk) -> None:
        """The copies of forgotten records a chunk holds (a fork or a resume that replays a forgotten session):
        the bank keeps their events out (harvester/bank/sqlite_forget.py); here the archive keeps their records
        out too. The tombstones' version goes with the write: a forget committed before it makes it read again."""
        version, any_forgotten = self.bank.forgotten_records(harness.name)
        chunk.forgotten_as_of = version
        if not any_forgotten or not chunk.archive or chunk.origin is None:
            return
        from harvester.model import record_key

        keys = {record_key(e.uid, e.content_hash()) for e in chunk.batch.events}
        forgotten = self.bank.forgotten_among(harness.name, {k for k in keys if k})
        if not forgotten:
            return

        def copied(event: Any) -> bool:
            return record_key(event.uid, event.content_hash()) in forgotten

        from harvester.capture.archive.attribute import without_copies

        ref, state, line = chunk.origin
        chunk.archive, discarded, partial = without_copies(harness, ref, chunk.cursor.format, state, line,
                                                           chunk.archive, copied)
        self.bank.discard_archived(discarded, partial_source=chunk.cursor.path if partial else None)

    def _identify(self, harness: Harness, chunk: Chunk) -> list[SessionWrite]:
        """File each session under its repository the first time its cwd is known."""
        batch = chunk.batch
        for named in [*(e.session for e in batch.events), *(m.session for m in batch.marks)]:
            if named not in batch.sessions:  # every session an event or a mark names gets a row
                batch.session(named)
        heads = self.bank.session_heads(harness.name, list(batch.sessions))
        writes = []
        for native_id, patch in batch.sessions.items():
            write = SessionWrite(harness.name, patch, redactions=chunk.redactions.get(native_id, 0),
                                 find_forks=harness.forks_copy_history and patch.parent_native_id is None,
                                 parser_version=harness.version)
            head = heads.get(native_id)
            if head is None or (head.cwd is None and patch.cwd):
                from harvester.gitident import RepoIdentity, bank_id, with_recorded_origin

                identity = (self.git.resolve(patch.cwd) if patch.cwd
                            else RepoIdentity(project="unknown", how="no-cwd"))
                identity = with_recorded_origin(identity, patch.git.origin_url if patch.git else None, patch.cwd)
                write.identity = identity
                write.bank_id = bank_id(self.template, identity, patch.cwd, harness.name)
                if identity.error:
                    log.warning("git probe failed", cwd=patch.cwd, error=identity.error)
            writes.append(write)
        return writes

    def _log_problems(self, harness: Harness, path: str, batch: Batch) -> None:
        for problem in batch.problems[:PROBLEMS_LOGGED_PER_SOURCE]:
            # A field no reader knows costs nothing of its record (the rest is read): said as drift, not a skip.
            said = "fields not known" if problem.kind == "unknown_field" else "record skipped"
            log.warning(said, harness=harness.name, path=path, line=problem.line,
                        kind=problem.kind, detail=problem.detail)


def _tally(hr: HarnessReport, result: SourceResult) -> None:
    hr.sources += 1
    if result.outcome in ("new", "read", "restarted"):
        hr.sources_read += 1
    hr.sessions.update(result.sessions)
    hr.sessions_changed.update(n for n, added in result.sessions.items() if added)
    hr.events_added += result.events_added
    hr.problems += result.problems
    if result.outcome in ("unreadable", "missing"):
        hr.unreadable += 1
    if result.outcome == "failed":
        hr.failed += 1


# The conditions of the bank itself, not of what was being written to it: these stop a scan.
_BANK_CONDITIONS = ("locked", "busy", "readonly", "read-only", "disk", "full", "i/o", "unable to open",
                    "not a database", "no such table", "cannot commit", "out of memory")


def _bank_failure(exc: BaseException) -> bool:
    if isinstance(exc, BankError):
        return True
    return isinstance(exc, sqlite3.OperationalError) and any(c in str(exc).lower() for c in _BANK_CONDITIONS)


def _redact_problems(problems: list[Problem]) -> None:
    """harvester.redact imported here, not at start: a rescan with nothing new compiles none of its rules."""
    from harvester.redact.batch import redact_problems

    redact_problems(problems)
