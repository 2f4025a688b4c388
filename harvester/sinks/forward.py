"""Forwarding: the outbox's queued sessions, each sent to Hindsight as what it gained since the last send.

For each queued session, :meth:`Forwarder.forward_one` builds the document from the bank and compares it
with the cursor: the same bank and document and the sent lines still its prefix (their fingerprint) -> the
new lines go as an ``append``; anything else (a rewind, a revised event, a re-parse, another bank) -> the
whole document as a ``replace``; nothing new -> nothing sent. Every payload has an ``operation_id`` made of
what it is (document, mode, lines), so sending it twice is one operation to the server. Before it is sent,
the payload is written to the cursor as in flight, and the cursor takes its lines only when the server says
the operation is completed (it applies retains in the background): after a crash an append is sent again
exactly as it was (the server collapses it if it had it), never rebuilt with more lines behind the same id,
and a document's next payload waits for the previous one to be applied, so appends land in order.

A pass sends a batch of due documents (BATCH, each its own payload and operation, each written down as in flight
before it goes), then follows their operations together: the server's worker applies them meanwhile, where
waiting on each before sending the next would cost a round of that worker per document. One payload in flight
per document holds as before (a batch holds each document once); a kill -9 with a batch in flight leaves each
its own in-flight payload, followed (or sent again as it was) at the next pass; a document refused or failed
costs that document alone.

Two repositories that share a bank (``coding-agent::api`` of two unrelated ``api`` folders) are never merged:
the one whose earliest session started first keeps the bank, each other one goes to ``<bank>@<its identity>``
(harvester/bank/identities.py says the rule), when the bank template names the repository ({gitProject} or
{project}). A document already sent to the shared bank (before the rule, or before its identity was known) is
queued again and moved: a replace in its bank, then a delete in the old one. Sessions of unknown repository go
to the bank as it is.

A session already filed by Hindsight's own hooks (``conversation:<id>``, ``chat:<id>``, ``<id>`` in the
bank) is skipped (``skipped`` in status), or with ``converge = true`` taken over: its document is replaced
by ours and kept up from then on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harvester.bank.identities import Repositories, repositories
from harvester.bank.outbox import note_outcome, now_iso
from harvester.bank.sqlite import SqliteBank
from harvester.config.sinks import HindsightSettings, bank_for
from harvester.log import get_logger
from harvester.sinks import outbox
from harvester.sinks.document import Document, build, fingerprint, their_document_ids
from harvester.sinks.hindsight import MAX_WAIT_SECONDS, Hindsight, SinkError

SINK = "hindsight"
NAMESPACE = uuid.UUID("6f1b0c1e-4a47-4c55-9a53-6861727665a7")  # operation ids: uuid5(NAMESPACE, what is sent)
MAX_BACKOFF = MAX_WAIT_SECONDS
SETTLE_SECONDS = 20.0  # how long one pass follows a batch's operations before it moves on to other documents
BATCH = 50  # documents sent before their operations are followed together
log = get_logger("harvester.sinks")


@dataclass(slots=True)
class ForwardReport:
    queued: int = 0
    sent: int = 0  # documents created or replaced
    appended: int = 0
    lines: int = 0
    unchanged: int = 0
    skipped: int = 0
    held: int = 0
    failed: int = 0
    deleted: int = 0
    retry: int = 0
    waiting: int = 0  # sent, not yet applied by the server: followed at the next pass
    errors: list[str] = field(default_factory=list)
    stopped_by: str | None = None  # the server is unreachable: the rest waits for the next pass

    @property
    def forwarded(self) -> int:
        return self.sent + self.appended


@dataclass(slots=True)
class _Sent:
    """A payload sent and not yet followed: its outbox row, the setter of that row, and the document's old place
    (a move: deleted once the new one was followed)."""

    row: dict[str, Any]
    put: Any
    old: tuple[str, str] | None = None


@dataclass
class Forwarder:
    bank: SqliteBank
    settings: HindsightSettings
    client: Hindsight
    host: str = field(default_factory=socket.gethostname)
    _repositories: Repositories | None = field(default=None, init=False, repr=False)

    def forward(self, keys: list[tuple[str, str]] | None = None, on_document: Any = None) -> ForwardReport:
        """Queue what changed, then send what is due, until nothing is due or the server stops answering.
        ``keys``: only these sessions, (harness, native id)."""
        self._repositories = None  # read again: a scan since may have brought another repository of a bank
        report = ForwardReport(queued=outbox.enqueue(self.bank, SINK) + self._requeue_moved())
        chunks = [None] if keys is None else [keys[i:i + 400] for i in range(0, len(keys), 400)]
        for chunk in chunks:
            while not report.stopped_by:
                rows = outbox.due(self.bank, SINK, BATCH, chunk)
                if not rows:
                    break
                sent: list[_Sent] = []
                for row in rows:
                    with self._one_document(row, report):
                        flight = self.forward_one(row, report, follow=False)
                        if flight is not None:
                            sent.append(flight)
                            continue
                    if on_document is not None:
                        on_document(row, report)
                    if report.stopped_by:
                        break
                self._follow(sent, report, on_document)
        if report.forwarded:
            note_outcome(self.bank, SINK, None)
        return report

    def target(self, session: dict[str, Any]) -> str:
        """The Hindsight bank of a session (a bank row): its bank template's, kept apart from another repository's
        that shares it (see the module)."""
        bank = bank_for(self.settings.bank_template, session)
        shared = self._shared()
        return bank if shared is None else shared.label(bank, session.get("repo_key"))

    def _shared(self) -> Repositories | None:
        """The repositories of each bank (read once a pass), or None when the template files every repository
        together (no {gitProject} nor {project}): as the configuration asks."""
        template = self.settings.bank_template
        if not any(name in template for name in ("{gitProject}", "{project}")):
            return None
        if self._repositories is None:
            self._repositories = repositories(self.bank.conn, lambda row: bank_for(template, row))
        return self._repositories

    def _requeue_moved(self) -> int:
        """Queue the documents sent to a bank their repository no longer goes to (it shares the bank with another
        one, which keeps it; or it did, and no longer does): each is moved at its turn."""
        shared = self._shared()
        keys = shared.shared_keys() if shared is not None else []
        marks = ", ".join("?" * len(keys))
        rows = self.bank.conn.execute(
            "SELECT d.harness, d.native_id, d.bank, s.project, s.cwd, s.repo_key FROM sink_documents d JOIN sessions s "
            "ON s.harness = d.harness AND s.native_id = d.native_id WHERE d.sink = ? AND d.state IN ('sent', 'empty') "
            f"AND (s.repo_key IN ({marks}) OR d.bank LIKE '%@%')", [SINK, *keys]).fetchall()
        moved = [(h, n) for h, n, bank, project, cwd, key in rows
                 if bank != self.target({"harness": h, "project": project, "cwd": cwd, "repo_key": key})]
        if moved:
            with self.bank.transaction() as conn:
                conn.executemany("UPDATE sink_documents SET state = 'pending', next_try_at = NULL, queued_at = ? "
                                 "WHERE sink = ? AND harness = ? AND native_id = ?",
                                 [(now_iso(), SINK, h, n) for h, n in moved])
        return len(moved)

    def _bank_refusal(self, named: str, target: str) -> str | None:
        """Why nothing of a session goes to ``target``, the bank ``named`` kept apart (see the module): an opt-out
        or a deny pattern of either refuses it, an allow-list admits it when it names either."""
        reasons = [self.settings.bank_refusal(bank) for bank in dict.fromkeys((named, target))]
        denied = [r for r in reasons if r and r != "not in banks"]
        if denied:
            return denied[0]
        return reasons[0] if all(reasons) else None

    def _session(self, row: dict[str, Any]) -> dict[str, Any] | None:
        cur = self.bank.conn.execute("SELECT * FROM sessions WHERE harness = ? AND native_id = ?",
                                     (row["harness"], row["native_id"]))
        found = cur.fetchone()
        return None if found is None else dict(zip([d[0] for d in cur.description], found, strict=True))

    @contextlib.contextmanager
    def _one_document(self, row: dict[str, Any], report: ForwardReport) -> Iterator[None]:
        """What fails while ``row`` is handled costs that document; a server that cannot be reached stops the
        pass (the others would wait as long)."""
        try:
            yield
        except SinkError as exc:
            self._failed(row, exc, report)
            if exc.retryable and exc.status is None:
                report.stopped_by = str(exc)
        except Exception as exc:  # a bug or a bad row costs that document, not the pass
            log.exception("sink_document_failed", harness=row["harness"], session=row["native_id"])
            self._failed(row, SinkError(f"{type(exc).__name__}: {exc}", retryable=True, status=0), report)

    def forward_one(self, row: dict[str, Any], report: ForwardReport, follow: bool = True) -> _Sent | None:
        """Send what ``row``'s session gained, if anything. ``follow``: wait (a while) for the server to apply
        it; else the payload in flight is returned, for :meth:`_follow` to follow with the rest of its batch."""
        harness, native_id = row["harness"], row["native_id"]

        def put(**fields: Any) -> None:
            outbox.update(self.bank, SINK, harness, native_id, **fields)
            row.update(fields)

        session = self._session(row)
        if session is None:  # forgotten (harvester forget): its document goes too
            if row["document_id"] and row["bank"] and row["lines"]:
                self.client.delete_document(row["bank"], row["document_id"])
            put(state="deleted", lines=0, fingerprint=None, in_flight=None, last_error=None)
            report.deleted += 1
            return
        target = self.target(session)
        refusal = None if self.settings.harness_allowed(harness) else "harness not forwarded"
        refusal = refusal or self._bank_refusal(bank_for(self.settings.bank_template, session), target)
        if refusal:
            put(state="held", bank=row["bank"] or target, last_error=refusal, in_flight=None)
            report.held += 1
            return
        if row["in_flight"] and not self._settle(row, put, report, resend=True):
            return
        doc = build(session, self.bank.session_events(session["id"]), self.host)
        if row["document_id"] is None or (row["lines"] == 0 and row["state"] != "sent"):
            theirs = self._theirs(target, native_id)
            if theirs and not self.settings.converge:
                put(state="skipped", bank=target, document_id=theirs, last_error=None)
                report.skipped += 1
                return
            if theirs:
                doc = dataclasses.replace(doc, document_id=theirs)
        elif row["document_id"] != doc.document_id:  # taken over earlier: it stays that document
            doc = dataclasses.replace(doc, document_id=row["document_id"])
        if not doc.lines:
            if row["lines"]:  # everything it held was rewound: the document goes
                self.client.delete_document(row["bank"], row["document_id"])
            put(state="empty", bank=target, document_id=doc.document_id, lines=0, fingerprint=None, last_error=None)
            report.unchanged += 1
            return
        same_place = row["bank"] == target and row["document_id"] == doc.document_id and row["lines"] > 0
        if same_place and len(doc.lines) >= row["lines"] and fingerprint(doc.lines[:row["lines"]]) == row["fingerprint"]:
            if len(doc.lines) == row["lines"]:
                put(state="sent", last_error=None, attempts=0)
                report.unchanged += 1
                return
            flight = self._send(row, put, target, doc, row["lines"], "append")
        else:
            old = (row["bank"], row["document_id"]) if row["lines"] and not same_place else None
            # moved to another bank: one copy, not two (the old one goes once the new one was followed)
            flight = self._send(row, put, target, doc, 0, "replace",
                                old if old and old != (target, doc.document_id) else None)
        if follow:
            self._follow([flight], report)
            return None
        return flight

    def _send(self, row: dict[str, Any], put: Any, target: str, doc: Document, start: int, mode: str,
              old: tuple[str, str] | None = None) -> _Sent:
        """Write the payload down as in flight and send it; the server applies it later (see :meth:`_follow`)."""
        fp = fingerprint(doc.lines)
        key = f"{SINK}|{target}|{doc.document_id}|{mode}|{start}|{len(doc.lines)}|{fp}|{row.get('attempts') or 0}"
        op = str(uuid.uuid5(NAMESPACE, key))  # a failed operation is not retried under its own id: attempts
        content = doc.text(start)
        put(in_flight={"operation_id": op, "mode": mode, "bank": target, "document_id": doc.document_id,
                       "start": start, "lines": len(doc.lines), "fingerprint": fp,
                       # an append is sent again exactly as it was; a replace is rebuilt (it carries everything)
                       "content": content if mode == "append" else None,
                       "context": doc.context, "timestamp": doc.timestamp, "metadata": doc.metadata, "tags": doc.tags})
        self.client.retain(target, doc, content, mode, op)
        return _Sent(row, put, old)

    def _follow(self, sent: list[_Sent], report: ForwardReport, on_document: Any = None) -> None:
        """Follow the operations of a batch together until the server applied each (the cursor then takes its
        lines) or gave it up, for SETTLE_SECONDS at most: what is still being applied then waits for the next
        pass, and the other documents go on. A document's next payload is only built once its previous one was
        applied, so one document never has two payloads in flight."""
        deadline = time.monotonic() + SETTLE_SECONDS
        delay = 0.02
        waiting = list(sent)
        while waiting:
            still: list[_Sent] = []
            for n, flight in enumerate(waiting):
                done = True
                with self._one_document(flight.row, report):
                    done = self._check(flight.row, flight.put, report) == "done"
                    if done and flight.old:
                        self.client.delete_document(*flight.old)
                if done:
                    if on_document is not None:
                        on_document(flight.row, report)
                else:  # the server applies them in about the order sent: those behind are not asked yet (each
                    still.extend(waiting[n:])  # look is a request the server answers from its database)
                    break
            if still and time.monotonic() > deadline:  # still being applied: they wait, the others go on
                for flight in still:
                    with self._one_document(flight.row, report):
                        flight.put(next_try_at=now_iso(1.0), last_error=None)
                        report.waiting += 1
                    if on_document is not None:
                        on_document(flight.row, report)
                return
            if len(still) == len(waiting):  # none applied since the last look: give the server a moment
                time.sleep(delay)
                delay = min(0.1, delay * 2)  # a retain in chunks mode is applied in tens of ms
            waiting = still

    def _settle(self, row: dict[str, Any], put: Any, report: ForwardReport, resend: bool = False) -> bool:
        """Follow the operation in flight until the server applied it (the cursor then takes its lines) or
        gave it up; True when nothing is in flight any more. The server takes a retain at once and applies it
        later (a worker, which a restart may interrupt and resume): the next payload of a document is sent
        only once the previous one is applied, or an append could land before the one it follows.
        ``resend``: the operation is one a crash may have lost before the server had it: sent again."""
        deadline = time.monotonic() + SETTLE_SECONDS
        delay = 0.02
        while True:
            look = self._check(row, put, report, resend)
            if look == "done":
                return True
            if look == "resent":
                resend = False
                continue
            if time.monotonic() > deadline:  # still being applied: this document waits, the others go on
                put(next_try_at=now_iso(1.0), last_error=None)
                report.waiting += 1
                return False
            time.sleep(delay)
            delay = min(0.1, delay * 2)  # a retain in chunks mode is applied in tens of ms

    def _check(self, row: dict[str, Any], put: Any, report: ForwardReport, resend: bool = False) -> str:
        """One look at the operation in flight: ``done`` (applied: the cursor took its lines; or given up: it is
        to be sent again), ``pending`` (still being applied) or ``resent`` (see :meth:`_settle`)."""
        f = row["in_flight"]
        found = self.client.operation(f["bank"], f["operation_id"]) or {}
        status = found.get("status") or "not_found"
        if status == "completed":
            now = now_iso()
            put(state="sent", bank=f["bank"], document_id=f["document_id"], lines=f["lines"],
                fingerprint=f["fingerprint"], in_flight=None, attempts=0, next_try_at=None, last_error=None,
                last_sent_at=now, first_sent_at=row.get("first_sent_at") or now)
            if f["mode"] == "append":
                report.appended += 1
                report.lines += f["lines"] - f.get("start", 0)
            else:
                report.sent += 1
                report.lines += f["lines"]
            return "done"
        if status in ("failed", "cancelled") or (status == "not_found" and f["mode"] != "append"):
            # Not applied: what it carried is sent again, built anew, under another operation id; after the
            # back-off when the server just took and dropped it (a server that fails every retain is not
            # sent one after another), at once when a crash may have lost it before the server had it.
            error = found.get("error_message") or f"operation {status}"
            attempts = (row.get("attempts") or 0) + 1
            put(in_flight=None, attempts=attempts, last_error=f"server: {str(error)[:300]}",
                next_try_at=None if resend else now_iso(backoff(attempts)))
            report.retry += status != "not_found"
            return "done"
        if status == "not_found":  # an append the server never had: again, exactly as it was
            if not resend:
                raise SinkError(f"operation {f['operation_id']} unknown to the server", retryable=True, status=0)
            doc = Document(f["document_id"], [], f["context"], f["timestamp"], f["metadata"], f["tags"])
            self.client.retain(f["bank"], doc, f["content"], "append", f["operation_id"])
            return "resent"
        return "pending"

    def _theirs(self, bank: str, native_id: str) -> str | None:
        """The document Hindsight's own integration keeps of this session, if there is one."""
        for candidate in their_document_ids(native_id):
            if self.client.document(bank, candidate) is not None:
                return candidate
        return None

    def _failed(self, row: dict[str, Any], exc: SinkError, report: ForwardReport) -> None:
        message = str(exc)
        if exc.retryable and exc.status is None:  # the server is away, not this document's fault: the sink waits
            report.retry += 1
        elif exc.retryable:
            attempts = (row.get("attempts") or 0) + 1
            # The server may ask for a longer wait (capped when its Retry-After was parsed), never a shorter one.
            wait = max(backoff(attempts), exc.retry_after or 0.0)
            outbox.update(self.bank, SINK, row["harness"], row["native_id"], attempts=attempts,
                          next_try_at=now_iso(wait), last_error=message)
            report.retry += 1
        else:  # the request is wrong and would stay wrong: kept, with why, until the session changes
            outbox.update(self.bank, SINK, row["harness"], row["native_id"], state="failed", in_flight=None,
                          last_error=message, attempts=(row.get("attempts") or 0) + 1)
            report.failed += 1
        report.errors.append(f"{row['harness']} {row['native_id']}: {message}")
        note_outcome(self.bank, SINK, message)
        log.warning("sink_failed", sink=SINK, harness=row["harness"], session=row["native_id"], error=message,
                    retryable=exc.retryable)


def backoff(attempts: int) -> float:
    """Seconds before a document's next try after ``attempts`` failed ones: 2, 4, 8, ... up to MAX_BACKOFF."""
    return min(MAX_BACKOFF, 2.0 ** min(attempts, 10))
