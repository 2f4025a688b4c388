"""Where each scan of the plan can stop, found for all of them in one pass of Hyperscan (issue 29).

A scan of ``re`` costs a pass over the whole text (``engine.py``), and the scans that cost most stop at words
most texts hold (``token``, ``key``, ``auth``, `` -p``). So the plan's scans are not run over the text: one
Hyperscan pass reports every place where one of them can match (``rule.Sure``: a literal, or a short pattern,
every match of a rule or of a locator's alternative starts at a known offset from), and each scan's pattern is
matched there only, in order. ``pattern.match(text, p)`` is what ``pattern.search`` finds when it stops at ``p``
(both see the whole text, lookbehinds included), and a scan's matches are the places where its pattern matches,
so a scan run over the sure places of all its rules and hooks finds the same matches in the same order
(tests/test_redact_positions.py checks every sure on the secrets corpus, the redaction tests' strings and
mutations of them, and compares ``redact`` with the whole-text scans). A scan one of whose rules or hooks has no
sure place is run over the whole text, as before.

Hyperscan because it installs as a wheel on Linux and macOS (x86-64 and ARM, where it is Vectorscan) and runs
a hundred literals in one pass at several GB/s; it is imported and its database compiled at the first text (a
rescan with nothing new imports neither). Without it (not installed, or a database it cannot compile or run on
this CPU) every scan runs whole, with a warning: slower, the same redaction.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from harvester.redact.locate import Scan
from harvester.redact.rule import Rule, Sure


class Positions:
    """For a text, the places where each scan of ``plan`` can match; ``whole`` holds the scans that need a pass."""

    def __init__(self, plan: Sequence[Scan], rules: Sequence[Rule]) -> None:
        hooks: dict[tuple[bytes, bool], list[Sure | None]] = {}
        for rule in rules:
            for hook in rule.hooks:
                hooks.setdefault((hook.anchor, hook.low), []).append(hook.sure)
        # (expression, caseless) -> (scan index, at) for each scan it places
        owners: dict[tuple[bytes, bool], set[tuple[int, int, int]]] = {}
        whole = set()
        for n, scan in enumerate(plan):
            sures: list[Sure | None] = [s for _, r in scan.rules for s in (r.sure or (None,))]
            if scan.where is not None:
                sures += hooks.get(scan.where, [None])
            if not sures or None in sures:
                whole.add(n)
                continue
            for s in sures:
                assert s is not None
                owners.setdefault((s.expression, scan.lower), set()).add((n, s.at))
        self.whole = frozenset(whole)
        self._expressions = list(owners)
        self._owners = [tuple(sorted(o)) for o in owners.values()]
        self._db: Any = None
        self._local = threading.local()  # a Hyperscan scratch serves one scan at a time: one per thread

    def _database(self) -> Any:
        if self._db is None:  # compiled on first use: a rescan with nothing new compiles nothing
            import hyperscan

            self._db = False  # if compiling raises, this stays: the scans run whole from then on
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(expressions=[e for e, _ in self._expressions], ids=list(range(len(self._expressions))),
                       flags=[hyperscan.HS_FLAG_SOM_LEFTMOST | (hyperscan.HS_FLAG_CASELESS if caseless else 0)
                              for _, caseless in self._expressions])
            self._db = db
        return self._db

    def find(self, raw: bytes) -> dict[int, set[int]] | None:
        """Per scan (by its index in the plan), the places in ``raw`` (the text's Latin-1 bytes) where it can
        match; a scan that has none is left out. None: Hyperscan cannot run here (every scan must run whole)."""
        if self._db is False:
            return None
        try:
            import hyperscan

            db = self._database()
            scratch = getattr(self._local, "scratch", None)
            if scratch is None:
                scratch = self._local.scratch = hyperscan.Scratch(db)
        except Exception as exc:  # any failure of the native library: redact without it
            from harvester.log import get_logger  # here: importing the redaction imports no logging

            self._db = False
            get_logger("harvester.redact").warning("redaction runs without Hyperscan", error=str(exc))
            return None
        hits: list[tuple[int, int]] = []
        append = hits.append

        def on_match(expression: int, start: int, end: int, flags: int, context: object) -> None:
            append((expression, start))

        db.scan(raw, match_event_handler=on_match, scratch=scratch)
        per: dict[int, set[int]] = {}
        owners = self._owners
        for expression, start in hits:
            for n, at in owners[expression]:
                places = per.get(n)
                if places is None:
                    places = per[n] = set()
                places.add(start + at)
        return per

