"""Capture: every agent's native store read into normalized, redacted chunks, each committed with its cursor.

    sources.py -> reading.py -> ingest.py -> the bank (through contract.py)

- :mod:`~harvester.capture.sources`: which files and databases each harness keeps, found and planned (what is new
  since the cursor);
- :mod:`~harvester.capture.reading`: a source from its cursor to complete, parsed (harvester/parsers), validated
  (``validate.py``) and redacted (harvester/redact) chunks; compressed (``compressed.py``) and SQLite stores
  (``foreign_sqlite.py``, read page by page: ``paging.py``) included; the harvester's own recall marked
  (``recall_seal.py``);
- :mod:`~harvester.capture.ingest`: each chunk filed under its repository and committed with its cursor in one
  transaction, on both cores for a large scan (``workers.py``);
- :mod:`~harvester.capture.archive`: the raw archive, the bytes of every source read, kept beside the bank;
- :mod:`~harvester.capture.liveness`: which sessions are still in use (agent processes, recent writes).

The entry point: :class:`harvester.capture.ingest.Ingestor` (``scan``, the service, ``reparse``). Capture is below
the bank: :mod:`~harvester.capture.contract` says what it hands over and what it asks of a bank, and the bank
implements it; nothing here imports harvester.bank.
"""
