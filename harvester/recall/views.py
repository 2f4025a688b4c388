"""Bounded, extractive answers over the bank, for agents (the MCP server) and people (``harvester context``).

Every answer is markdown inside the recall frame (:mod:`harvester.recall.frame`), at most ``max_bytes`` of
UTF-8, newest first, and cites session ids and event positions (``#12``) so the reader can page on with
``get_events``. Answers are built with :mod:`harvester.recall.shown` only: every value a session or an event
holds is shown on one line, a transcript's text is quoted line by line (``> ``), anything that could close
the frame is neutralized and every control character is made visible. Recall events are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from harvester.bank import Bank
from harvester.bank.scope import Scope
from harvester.bank.sqlite_recall import plain_words
from harvester.model import is_injected
from harvester.recall.frame import frame
from harvester.recall.shown import EMPTY, Md, md, quote
from harvester.recall.tools import call_lines, children_of_calls, grouped

DEFAULT_MAX_BYTES = 8192
MAX_MAX_BYTES = 200_000  # an answer bigger than this fills a model's context for little
ROLES = ("user", "assistant", "system", "tool")
KINDS = ("text", "thinking", "tool_call", "tool_result", "compaction", "meta")


class RecallError(ValueError):
    """A request that cannot be answered as asked: the one-line reason goes back to the caller."""


class NotInScope(RecallError):
    """The session asked for is not in the scope (or not at all): the reason names the tool that lists them, which a
    command line replaces with its command (``where``: the scope's label)."""

    def __init__(self, ref: str, where: str) -> None:
        super().__init__(f"no session {ref!r} in {where} (recent_sessions lists them)")
        self.ref, self.where = ref, where


class NoSession(RecallError):
    """No session to hand off in the scope: an answer (there is none), not a failure."""

    def __init__(self, where: str, other: str = "", harness: str | None = None) -> None:
        super().__init__(f"no session{other} in {where}" + (f" of {clip(harness, 40)}" if harness else ""))
        self.where, self.other, self.harness = where, other, harness


@dataclass
class Recall:
    """What an answer is given: the bank, the scope, and who asks (an agent's own live session is not
    handed back to it)."""

    bank: Bank
    scope: Scope
    caller: str | None = None  # the calling agent's harness
    recent_minutes: float = 10  # a session of the caller's harness written this recently is its own


MAX_REF = 4096  # characters of a session id a caller gives (its start names it as well)
MAX_POSITION = 2**62  # an event position past this is none a bank holds (and past SQLite's integers soon)
# A time as agents write it: ISO 8601's extended format, a date with an optional time and offset.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?")


def clip(text: Any, limit: int) -> str:
    text = " ".join((text if isinstance(text, str) else "" if text is None else str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(n: int, noun: str, nouns: str | None = None) -> Md:
    """``1 ask``, ``2 asks``, ``0 tool errors``: a count and its noun, singular for one."""
    return md("{:,} {}", n, noun if n == 1 else nouns or noun + "s")


def when(ts: str | None) -> str:
    """A time as answers show it (``2026-11-01 10:00:00Z``), or "-": what is not an ISO 8601 time, whatever a
    transcript or a teammate's row holds, is not shown; nor is a time of that shape that is none (a 13th month)."""
    if not isinstance(ts, str) or _ISO_TIME.fullmatch(ts) is None:
        return "-"
    try:
        datetime.fromisoformat(ts)
    except ValueError:
        return "-"
    return ts.replace("T", " ")[:19] + ("Z" if ts.endswith("Z") else "")


def parse_since(value: str | None) -> str | None:
    """An ISO 8601 date or time (UTC unless it says otherwise), or a span back from now: 90m, 24h, 7d, 2w."""
    if not value:
        return None
    span = re.fullmatch(r"\s*(\d{1,12})\s*([mhdw])\s*", value)
    try:
        if span:
            unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[span[2]]
            moment = datetime.now(UTC) - timedelta(**{unit: int(span[1])})
        else:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    except (OverflowError, ValueError):  # a span reaching before year 1, a time past 9999, or no time at all
        raise RecallError(f"since: {clip(value, 60)!r} is neither an ISO 8601 date/time from year 1 to 9999 nor a "
                          "span like 24h or 7d that reaches no further back") from None


def check_max_bytes(max_bytes: int) -> int:
    if not 512 <= max_bytes <= MAX_MAX_BYTES:
        raise RecallError(f"max_bytes must be between 512 and {MAX_MAX_BYTES}, not {max_bytes}")
    return max_bytes


def bounded(r: Recall, body: Md, kind: str, max_bytes: int, more: Md = EMPTY) -> str:
    """The framed answer, sealed with the bank's key, cut at a line end so that it stays within ``max_bytes``
    (the cut is said)."""
    key = r.bank.recall_key()
    whole = frame(body, kind, key, repository=r.scope.label)
    if len(whole.encode()) <= max_bytes:
        return whole
    note = md("\n\n[… cut to stay within {} bytes{}]", max_bytes, md("; {}", more) if more else EMPTY)
    budget = max_bytes - len(frame(note, kind, key, repository=r.scope.label).encode()) - 8
    cut = body.encode()[:max(budget, 0)].decode("utf-8", "ignore")
    if "\n" in cut:
        cut = cut[: cut.rfind("\n")]
    return frame(Md(cut) + note, kind, key, repository=r.scope.label)  # the start of safe lines is safe


def session_in_scope(r: Recall, ref: str) -> dict[str, Any]:
    """The session ``ref`` names (an id or an unambiguous prefix), if it is in the scope."""
    if len(ref) > MAX_REF:  # SQLite refuses a LIKE pattern past 50,000 bytes; a prefix this long is one enough
        raise RecallError(f"no session {clip(ref, 80)!r}: a session id (or its start) is at most {MAX_REF} "
                          "characters here")
    found = r.bank.find_sessions(ref)
    where = r.scope
    found = [s for s in found if where.holds(s)]
    if not found:
        raise NotInScope(clip(ref, 80), where.label)
    if len(found) > 1:
        raise RecallError(f"{clip(ref, 80)!r} names {len(found)} sessions: give more of the id")
    return found[0]


def filed_in(r: Recall, s: dict[str, Any]) -> Md:
    """Where a session is filed, said when the answer spans every repository (``all_repos``)."""
    return md(", in {}", s.get("bank_id") or "an unknown repository") if r.scope.everything else EMPTY


def state_words(session: dict[str, Any]) -> str:
    """How a session ended, as a reader needs to know it."""
    return {
        "ended": "ended cleanly",
        "abandoned": "ABANDONED mid-turn: the agent stopped before finishing its last turn",
        "live": "still LIVE: an agent may be working in it right now",
    }.get(session["state"], "state unknown (no capture service watched it)")


# --- recent_sessions -------------------------------------------------------------------------------------

def recent_sessions(r: Recall, limit: int = 10, harness: str | None = None, since: str | None = None,
                    max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    if not 1 <= limit <= 100:
        raise RecallError(f"limit must be between 1 and 100, not {limit}")
    check_max_bytes(max_bytes)
    rows = r.bank.scoped_sessions(r.scope, limit, harness=harness, since=parse_since(since))
    if not rows:
        return bounded(r, md("No sessions in {}{}.", r.scope.label, md(" of {}", harness) if harness else EMPTY),
                       "recent_sessions", max_bytes)
    from harvester.usage.sessions import attach, short

    attach(r.bank, rows)  # tokens and cost (harvester usage); a team bank's rows get none
    parts = [md("{} most recent sessions in {}, newest first, each subagent under the session that started it:",
                len(rows), r.scope.label)]
    for s, depth in grouped(rows):
        if depth:  # a subagent under its parent's section
            parts[-1] += md("\n- {}subagent session `{}`: {}; {} events; updated {}; {}", "  " * (depth - 1),
                            s["native_id"], clip(s["title"], 100) or "(untitled)", s["event_count"],
                            when(s["updated_at"]), state_words(s))
            continue
        first, last = r.bank.first_and_last(s["id"])
        counts = r.bank.event_counts(s["id"])
        lines = [md("## {}", clip(s["title"], 100) or "(untitled)"),
                 md("- session `{}` ({}{}){}{}", s["native_id"], s["harness"],
                    md(", {}", s["agent_version"]) if s["agent_version"] else EMPTY,
                    md(", branch {}", s["branch"]) if s["branch"] else EMPTY, filed_in(r, s)),
                 md("- started {}, updated {}; {}", when(s["started_at"]), when(s["updated_at"]), state_words(s)),
                 *([md("- a {} of session `{}`", s["parent_kind"], s["parent_native_id"])] if s["parent_native_id"]
                   else []),
                 md("- {}: {}, {}, {}, {}", counted(s["event_count"], "event"), counted(counts["asks"], "ask"),
                    counted(counts["answers"], "answer"), counted(counts["tool_calls"], "tool call"),
                    counted(counts["tool_errors"], "tool error")),
                 *([md("- {} tokens in {}, cost {}", short(s["usage"])[0], counted(s["usage"]["responses"],
                                                                                     "model response"),
                       short(s["usage"])[1])] if s.get("usage") else [])]
        if first:
            lines.append(md("- first ask (#{}): {}", first["seq"], clip(first["text"], 300)))
        if last:
            lines.append(md("- last answer (#{}): {}", last["seq"], clip(last["text"], 300)))
        parts.append(Md("\n").join(lines))
    return bounded(r, Md("\n\n").join(parts), "recent_sessions", max_bytes,
                   md("ask for fewer sessions, or handoff / get_events for one"))


# --- search_history --------------------------------------------------------------------------------------

def search_history(r: Recall, query: str, harness: str | None = None, since: str | None = None,
                   role: str | None = None, kind: str | None = None, limit: int = 10,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    if role is not None and role not in ROLES:
        raise RecallError(f"role must be one of {', '.join(ROLES)}, not {clip(role, 40)!r}")
    if kind is not None and kind not in KINDS:
        raise RecallError(f"kind must be one of {', '.join(KINDS)}, not {clip(kind, 40)!r}")
    if not 1 <= limit <= 100:
        raise RecallError(f"limit must be between 1 and 100, not {limit}")
    check_max_bytes(max_bytes)
    try:
        match = plain_words(query)
    except ValueError as exc:
        raise RecallError(str(exc)) from None
    page = r.bank.search_page(match, r.scope, limit, harness=harness, since=parse_since(since), role=role,
                              kind=kind)
    hits = page.hits
    if not hits:
        return bounded(r, md("Nothing in {} matches {!r}.", r.scope.label, query), "search_history", max_bytes)
    counted = md("{}{:,} {} for {!r} in {}", "More than " if page.more else "", page.total,
                 "match" if page.total == 1 and not page.more else "matches", query, r.scope.label)
    if not page.ranked:
        parts = [counted + md(", too many to rank; the {} stored last, newest first:", len(hits))]
    elif page.total <= len(hits):
        parts = [counted + md(", best first:")]
    else:
        parts = [counted + md("; the best {}:", len(hits))]
    for h in hits:  # a subagent's hit names the session that started it
        parent = md(", {} of `{}`", h["parent_kind"], h["parent_native_id"]) if h.get("parent_native_id") else EMPTY
        parts.append(md("- session `{}` ({}{}{}) #{} {}, {}: {}", h["session"], h["harness"], parent, filed_in(r, h),
                        h["seq"],
                        label_of(h), when(h["ts"]), clip(h["snippet"], 400)))
    if not page.ranked:
        parts.append(md("(add words, or narrow with harness, since, role or kind, to get the matches ranked best "
                        "first)"))
    elif page.total > len(hits):
        parts.append(md("(more matches past {}: raise limit, or narrow with harness, since, role or kind)", limit))
    return bounded(r, Md("\n").join(parts), "search_history", max_bytes, md("narrow the search"))


def label_of(e: dict[str, Any]) -> Md:
    """What an event is, as answers name it: ``user``, ``assistant tool call [Bash] (error)``, ``system (injected by
    the agent)``."""
    label = md("{}", e["role"]) if e["kind"] == "text" else md("{} {}", e["role"], str(e["kind"]).replace("_", " "))
    if e.get("tool_name"):
        label += md(" [{}]", e["tool_name"])
    if e.get("is_error"):
        label += md(" (error)")
    if is_injected(e):
        label += md(" (injected by the agent)")
    return label


# --- get_events ------------------------------------------------------------------------------------------

def shown_text(e: dict[str, Any], full: bool = False, child: str | None = None) -> str:
    """What an answer shows of an event: its text; a tool call's as what it changed, searched for or ran
    (harvester/recall/tools.py: an edit as a compact diff, clipped unless ``full``), and the subagent session it
    started (``child``)."""
    if e["kind"] == "tool_call":
        return "\n".join(call_lines(e, full=full, more="get_events full=true shows all", child=child))
    return e.get("text") or ""


def event_block(e: dict[str, Any], limit: int, body: str | None = None) -> Md:
    """An event: its heading (position, what it is, when), then ``body`` (:func:`shown_text` when not given)
    quoted, cut at ``limit`` characters."""
    body = shown_text(e) if body is None else body
    more = EMPTY
    if len(body) > limit:
        body, more = body[:limit], md("\n[… {} more characters]", len(body) - limit)
    return md("### #{} {} · {}\n", e["seq"], label_of(e), when(e["ts"])) + quote(body) + more


def get_events(r: Recall, session: str, start: int = 0, limit: int = 50, kinds: list[str] | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES, full: bool = False, text_from: int = 0) -> str:
    """A page of events. ``full``: each text whole (the archive's copy where the bank's is clipped) as far as
    the answer's size allows; one too long for a page goes on from character ``text_from`` in the next."""
    if not 0 <= start <= MAX_POSITION or not 1 <= limit <= 500 or text_from < 0:
        raise RecallError(f"start and text_from must be 0 or more (start at most {MAX_POSITION}), "
                          "and limit between 1 and 500")
    for k in kinds or ():
        if k not in KINDS:
            raise RecallError(f"kinds: {clip(k, 40)!r} is not one of {', '.join(KINDS)}")
    check_max_bytes(max_bytes)
    s = session_in_scope(r, session)
    events = r.bank.events_page(s["id"], start, limit + 1, kinds=kinds or None)
    page, rest = events[:limit], events[limit:]
    children = _children(r, s, page)
    head = md("Session `{}` ({}{}), {}: {}; {}.", s["native_id"], s["harness"], filed_in(r, s),
              clip(s["title"], 100) or "(untitled)", counted(s["event_count"], "event"), state_words(s))
    blocks, used = [head], len(head.encode()) + 600
    next_start = rest[0]["seq"] if rest else None
    go_on = EMPTY
    for n, e in enumerate(page):
        if full:  # the text as shown, whole, is what a part of is carried from text_from on
            e["text"] = r.bank.whole_text(e) or e.get("text") or ""
            e["text"] = shown_text(e, full=True, child=children.get(e["seq"]))
            if n == 0 and text_from:
                e["text"] = e["text"][text_from:]
            room = max_bytes - used - 200
            # Too long for any page: this one carries a part (quoted, a text takes more room than its own size).
            raw = len(e["text"].encode("utf-8", "surrogatepass"))
            if n == 0 and (raw > room or len(quote(e["text"]).encode()) > room):
                part = _within(e["text"], room)
                e["text"] = part
                go_on = md("next: get_events(session={!r}, start={}, full=true, text_from={})", s["native_id"],
                           e["seq"], text_from + len(part))
                next_start = None
        shown = e["text"] if full else shown_text(e, child=children.get(e["seq"]))
        block = event_block(e, len(shown) if full else 4000, shown)
        if used + len(block.encode()) > max_bytes and len(blocks) > 1:
            next_start = e["seq"]
            break
        blocks.append(block)
        used += len(block.encode()) + 2
        if go_on:
            break
    blocks.append(go_on or (md("next_start: {}", next_start) if next_start is not None
                            else md("next_start: none (the end)")))
    return bounded(r, Md("\n\n").join(blocks), "get_events", max_bytes,
                   md("page on with get_events(session={!r}, start=…)", s["native_id"]))


def _children(r: Recall, s: dict[str, Any], page: list[dict[str, Any]]) -> dict[int, str]:
    """The subagent session each call of ``page`` started (by position), when the bank can tell."""
    if not any(e["kind"] == "tool_call" for e in page):
        return {}
    kids = r.bank.subagents(s["harness"], s["native_id"])
    if not kids:
        return {}
    return children_of_calls(r.bank.session_events(s["id"]), kids)


def _within(text: str, size: int) -> str:
    """A start of ``text`` (at least one character) whose quoted form fits ``size`` bytes: quote markers, shown
    controls and neutralized tags take more bytes than the text itself. Each try shrinks the part by how much
    its quoted form was over (two or three tries where the text is alike throughout)."""
    part = text.encode("utf-8", "surrogatepass")[:max(size, 1)].decode("utf-8", "ignore") or text[:1]
    while len(part) > 1:
        quoted = len(quote(part).encode())
        if quoted <= size:
            break
        part = part[:max(1, min(len(part) - 1, len(part) * size * 97 // (quoted * 100)))]
    return part
