"""Redaction of what a parser returns: every string of a batch that the bank stores.

Texts are redacted with ``redact``; tool input and metadata dicts with ``redact_value`` (keys too), the metadata
also losing every URL's userinfo and credential query values (``urls.py``); and so are the short strings a
parser fills beside them: ids (session, event, tool call, parent), names (tool, model, agent version, branch,
commit, title source), the cwd, timestamps, order keys, a problem's detail, a mark's fields. Every redaction of
an event or a session is counted against its session, as text redactions are.

The strings of a batch are many (texts, every string of tool input and metadata, a few short ones per event)
and almost never hold a secret, so they are screened together (``screen.py``: joined by line breaks, one scan);
only a string the screen finds something on is redacted alone, and a value whose strings are all clean and whose
keys name no secret is not walked at all. What comes out is what redacting every string alone gives
(tests/test_redact_screen.py). The short strings (ids, names, the cwd) are screened on their own, as before. Ids are
redacted like any string: the same id always gives the same result, so an event's uid, the tool call a result
answers and the session an event belongs to still agree after redaction.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from operator import attrgetter
from typing import Any

import orjson

from harvester.model import Batch, Event, GitFacts, Mark, Problem, SessionPatch
from harvester.redact.engine import redact
from harvester.redact.screen import clean_strings
from harvester.redact.urls import clean_urls_in
from harvester.redact.values import redact_value, strings_of

# The string fields of the model that are neither texts nor dicts (those are redacted on their own).
EVENT_FIELDS = ("session", "uid", "ts", "tool_name", "tool_call_id", "model", "place")
PATCH_FIELDS = ("native_id", "cwd", "title_source", "model", "agent_version", "started_at", "updated_at",
                "parent_native_id")
GIT_FIELDS = ("branch", "commit", "origin_url")  # and a problem's detail, a mark's session, uids, since, until


def redact_batch(batch: Batch) -> Counter[str]:
    """Redact everything of ``batch`` bound for the bank, in place; the number of redactions per session."""
    redactions: Counter[str] = Counter()
    _short_strings(batch, redactions)
    # Every text and every string of tool input and metadata, screened in one scan (screen.py): a clean one is
    # not scanned again, and a value whose strings are all clean and whose keys name no secret is not walked.
    strings: list[str] = []
    spans: list[tuple[int, int, bool]] = []  # per value, in the order below: its strings, whether to walk it anyway
    for event in batch.events:
        if event.text:
            strings.append(event.text)
        for value, urls in ((event.tool_input, False), (event.meta, True)):
            if value:
                spans.append(_strings(value, urls, strings))
    for patch in batch.sessions.values():
        if patch.title:
            strings.append(patch.title)
        if patch.meta:
            spans.append(_strings(patch.meta, True, strings))
    for mark in batch.marks:
        spans.append(_strings(mark.meta, True, strings))
    clean = clean_strings(strings)
    walks = iter([forced or any(s not in clean for s in strings[start:end]) for start, end, forced in spans])
    for event in batch.events:
        n = 0
        if event.text and event.text not in clean:
            event.text, counts = redact(event.text)
            n += sum(counts.values())
        if event.tool_input and next(walks):
            event.tool_input, counts = redact_value(event.tool_input, clean=clean)
            n += sum(counts.values())
        if event.meta and next(walks):
            event.meta, counts = redact_value(event.meta, urls=True, clean=clean)
            n += sum(counts.values())
        if n:
            redactions[event.session] += n
    for patch in batch.sessions.values():
        n = 0
        if patch.title and patch.title not in clean:
            patch.title, counts = redact(patch.title)
            n += sum(counts.values())
        if patch.meta and next(walks):
            patch.meta, counts = redact_value(patch.meta, urls=True, clean=clean)
            n += sum(counts.values())
        if n:
            redactions[patch.native_id] += n
    for i, mark in enumerate(batch.marks):
        if not next(walks):
            continue
        meta, counts = redact_value(mark.meta, urls=True, clean=clean)
        if counts:
            batch.marks[i] = replace(mark, meta=meta)
            redactions[mark.session] += sum(counts.values())
    return redactions


def _strings(value: object, urls: bool, strings: list[str]) -> tuple[int, int, bool]:
    """Add the strings of a value to ``strings``: where they are, and whether ``redact_value`` must walk it even
    if all of them are clean (a key that names a secret, a URL to clean)."""
    start = len(strings)
    named = strings_of(value, strings)
    # Joined, a "://" may be made of two strings: a walk for nothing, never a URL missed.
    return start, len(strings), named or (urls and "://" in "".join(strings[start:]))


Owner = Event | SessionPatch | GitFacts | Problem


def _short_strings(batch: Batch, redactions: Counter[str]) -> None:
    """Redact the short strings of the batch: URLs by their structure, then the rules, screened in one scan."""
    event_strings, patch_strings, git_strings = (attrgetter(*f) for f in (EVENT_FIELDS, PATCH_FIELDS, GIT_FIELDS))
    joined = "\n".join([
        *(s for e in batch.events for s in event_strings(e) if s),
        *(s for p in batch.sessions.values() for s in patch_strings(p) if s),
        *(s for p in batch.sessions.values() if p.git is not None for s in git_strings(p.git) if s),
        *(p.detail for p in batch.problems),
        *(s for m in batch.marks for s in (m.session, m.since, m.until, *m.uids) if s)])
    url = "://" in joined
    dirty = bool(redact(joined)[1])  # the common case: this one scan finds nothing
    if not (url or dirty):
        return
    # (object, field, what names the session it counts against: an event, a patch, or None for a problem)
    fields: list[tuple[Owner, str, Event | SessionPatch | None]] = []
    for event in batch.events:
        fields += ((event, name, event) for name in EVENT_FIELDS if getattr(event, name))
    for patch in batch.sessions.values():
        fields += ((patch, name, patch) for name in PATCH_FIELDS if getattr(patch, name))
        if patch.git is not None:
            fields += ((patch.git, name, patch) for name in GIT_FIELDS if getattr(patch.git, name))
    fields += ((problem, "detail", None) for problem in batch.problems if problem.detail)
    values: list[str] = [getattr(owner, name) for owner, name, _ in fields]
    found: dict[int, Counter[str]] = {}  # what went from each string
    for i, value in enumerate(values):
        if url and "://" in value:
            values[i], counts = clean_urls_in(value)
            if counts:
                found[i] = Counter(counts)
        if dirty:
            values[i], counts = redact(values[i])
            if counts:
                found.setdefault(i, Counter()).update(counts)
    if dirty:
        batch.marks[:] = [Mark(_one(m.session), m.meta, tuple(_one(u) for u in m.uids), m.since and _one(m.since),
                               m.until and _one(m.until)) for m in batch.marks]
    renamed: dict[str, str] = {}  # session ids that changed: the keys of the patches' dict
    for i in sorted(found):  # in order: an event's or a patch's id is redacted before what counts against it
        owner, name, counted = fields[i]
        if owner is counted and name == "native_id":
            renamed[getattr(owner, name)] = values[i]
        setattr(owner, name, values[i])
        if counted is not None:
            redactions[counted.session if isinstance(counted, Event) else counted.native_id] += found[i].total()
    if renamed:
        batch.sessions = {renamed.get(key, key): patch for key, patch in batch.sessions.items()}


def redact_problems(problems: list[Problem]) -> None:
    """Redact, in place, the details of problems found reading a source (a parser's are in its batch)."""
    _short_strings(Batch(problems=problems), Counter())


def _one(value: str) -> str:
    return redact(clean_urls_in(value)[0])[0]


def redact_state(state: dict[str, Any]) -> dict[str, Any]:
    """A parser's state as the cursor stores it: redacted (uncounted; the parser keeps its own copy).

    One scan of its JSON, which is valid JSON again after redaction (markers sit inside strings); where it would
    not be, the state is redacted value by value."""
    if not state:
        return state
    text = orjson.dumps(state).decode()
    new, counts = redact(text)
    if not counts:
        return state
    try:
        loaded = orjson.loads(new)
    except orjson.JSONDecodeError:
        loaded = None
    return loaded if isinstance(loaded, dict) else redact_value(state)[0]
