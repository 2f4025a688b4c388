"""Forwarding: the outbox's queued sessions, each sent to Hindsight as what it gained since the last send.

For each queued session, :meth:`Forwarder.forward_one` builds the document from the bank and compares it
with the cursor: the same bank and document and the sent lines still its prefix (their fingerprint) -> the
new lines go as an ``append``; anything else (a rewind, a revised event, a re-parse, another bank) -> the
whole document as a ``replace``; nothing new -> nothing sent. Every payload has an ``operation_id`` made of
what it is (document, mode, lines), so sending it twice is one operation to the server; before it is sent,
an append is written to the cursor as in flight: after a crash it is sent again exactly as it was (unless
the server already knows the operation), never rebuilt with more lines behind the same id.

A session already filed by Hindsight's own hooks (``conversation:<id>``, ``chat:<id>``, ``<id>`` in the
bank) is skipped (``skipped`` in status), or with ``converge = true`` taken over: its document is replaced
by ours and kept up from then on.
"""

from __future__ import annotations

import dataclasses
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

from harvester.bank.sqlite import SqliteBank
from harvester.log import get_logger
from harvester.sinks import outbox
from harvester.sinks.config import HindsightSettings, bank_for
from harvester.sinks.document import Document, build, fingerprint, their_document_ids
from harvester.sinks.hindsight import Hindsight, SinkError

SINK = "hindsight"
NAMESPACE = uuid.UUID("6f1b0c1e-4a47-4c55-9a53-6861727665a7")  # operation ids: uuid5(NAMESPACE, what is sent)
MAX_BACKOFF = 600.0
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
    errors: list[str] = field(default_factory=list)
    stopped_by: str | None = None  # the server is unreachable: the rest waits for the next pass

    @property
    def forwarded(self) -> int:
        return self.sent + self.appended


@dataclass
class Forwarder:
    bank: SqliteBank
    settings: HindsightSettings
    client: Hindsight
    host: str = field(default_factory=socket.gethostname)

    def forward(self, limit: int | None = None, keys: list[tuple[str, str]] | None = None,
                on_document: Any = None) -> ForwardReport:
        """Queue what changed, then send what is due, until the queue is empty, ``limit`` documents were
        looked at, or the server stops answering. ``keys``: only these sessions, (harness, native id)."""
        report = ForwardReport(queued=outbox.enqueue(self.bank, SINK))
        looked = 0
        chunks = [None] if keys is None else [keys[i:i + 400] for i in range(0, len(keys), 400)]
        for chunk in chunks:
            while (limit is None or looked < limit) and not report.stopped_by:
                rows = outbox.due(self.bank, SINK, 50 if limit is None else min(50, limit - looked), chunk)
                if not rows:
                    break
                for row in rows:
                    looked += 1
                    try:
                        self.forward_one(row, report)
                    except SinkError as exc:
                        self._failed(row, exc, report)
                        if exc.retryable and exc.status is None:  # unreachable: the others would wait as long
                            report.stopped_by = str(exc)
                            break
                    except Exception as exc:  # a bug or a bad row costs that document, not the pass
                        log.exception("sink_document_failed", harness=row["harness"], session=row["native_id"])
                        self._failed(row, SinkError(f"{type(exc).__name__}: {exc}", retryable=True, status=0), report)
                    if on_document is not None:
                        on_document(row, report)
        if report.forwarded:
            outbox.note_outcome(self.bank, SINK, None)
        return report

    def _session(self, row: dict[str, Any]) -> dict[str, Any] | None:
        cur = self.bank.conn.execute("SELECT * FROM sessions WHERE harness = ? AND native_id = ?",
                                     (row["harness"], row["native_id"]))
        found = cur.fetchone()
        return None if found is None else dict(zip([d[0] for d in cur.description], found, strict=True))

    def forward_one(self, row: dict[str, Any], report: ForwardReport) -> None:
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
        target = bank_for(self.settings.bank_template, session)
        refusal = None if self.settings.harness_allowed(harness) else "harness not forwarded"
        refusal = refusal or self.settings.bank_refusal(target)
        if refusal:
            put(state="held", bank=row["bank"] or target, last_error=refusal, in_flight=None)
            report.held += 1
            return
        if row["in_flight"]:
            self._finish_in_flight(row, put, report)
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
            self._send(row, put, target, doc, row["lines"], "append", report)
            return
        old = (row["bank"], row["document_id"]) if row["lines"] and not same_place else None
        self._send(row, put, target, doc, 0, "replace", report)
        if old and old != (target, doc.document_id):  # moved to another bank: one copy, not two
            self.client.delete_document(*old)

    def _send(self, row: dict[str, Any], put: Any, target: str, doc: Document, start: int, mode: str,
              report: ForwardReport) -> None:
        fp = fingerprint(doc.lines)
        op = str(uuid.uuid5(NAMESPACE, f"{SINK}|{target}|{doc.document_id}|{mode}|{start}|{len(doc.lines)}|{fp}"))
        content = doc.text(start)
        if mode == "append":  # written before it is sent: after a crash, sent again as it was
            put(in_flight={"operation_id": op, "mode": mode, "bank": target, "document_id": doc.document_id,
                           "lines": len(doc.lines), "fingerprint": fp, "content": content,
                           "context": doc.context, "timestamp": doc.timestamp, "metadata": doc.metadata,
                           "tags": doc.tags})
        self.client.retain(target, doc, content, mode, op)
        now = outbox.now_iso()
        put(state="sent", bank=target, document_id=doc.document_id, lines=len(doc.lines), fingerprint=fp,
            in_flight=None, attempts=0, next_try_at=None, last_error=None, last_sent_at=now,
            first_sent_at=row.get("first_sent_at") or now)
        if mode == "append":
            report.appended += 1
            report.lines += len(doc.lines) - start
        else:
            report.sent += 1
            report.lines += len(doc.lines)

    def _finish_in_flight(self, row: dict[str, Any], put: Any, report: ForwardReport) -> None:
        """An append written down but not known to have reached the server: send it again as it was (its
        operation id collapses it to one if it had), then take its lines as sent."""
        f = row["in_flight"]
        if self.client.operation(f["bank"], f["operation_id"]) is None:
            doc = Document(f["document_id"], [], f["context"], f["timestamp"], f["metadata"], f["tags"])
            self.client.retain(f["bank"], doc, f["content"], f["mode"], f["operation_id"])
        now = outbox.now_iso()
        put(bank=f["bank"], document_id=f["document_id"], lines=f["lines"], fingerprint=f["fingerprint"],
            in_flight=None, last_sent_at=now, first_sent_at=row.get("first_sent_at") or now)
        report.appended += 1

    def _theirs(self, bank: str, native_id: str) -> str | None:
        """The document Hindsight's own integration keeps of this session, if there is one."""
        for candidate in their_document_ids(native_id):
            if self.client.document(bank, candidate) is not None:
                return candidate
        return None

    def _failed(self, row: dict[str, Any], exc: SinkError, report: ForwardReport) -> None:
        message = str(exc)
        if exc.retryable:
            attempts = (row.get("attempts") or 0) + 1
            wait = exc.retry_after if exc.retry_after is not None else min(MAX_BACKOFF, 2.0 ** min(attempts, 10))
            outbox.update(self.bank, SINK, row["harness"], row["native_id"], attempts=attempts,
                          next_try_at=outbox.now_iso(wait), last_error=message)
            report.retry += 1
        else:  # the request is wrong and would stay wrong: kept, with why, until the session changes
            outbox.update(self.bank, SINK, row["harness"], row["native_id"], state="failed", in_flight=None,
                          last_error=message, attempts=(row.get("attempts") or 0) + 1)
            report.failed += 1
        report.errors.append(f"{row['harness']} {row['native_id']}: {message}")
        outbox.note_outcome(self.bank, SINK, message)
        log.warning("sink_failed", sink=SINK, harness=row["harness"], session=row["native_id"], error=message,
                    retryable=exc.retryable)

