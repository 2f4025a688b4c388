"""Bounded, extractive answers over the bank, for agents (the MCP server) and people (``harvester context``).

Every answer is markdown inside the recall frame (:mod:`harvester.recall.frame`), at most ``max_bytes`` of
UTF-8, newest first, and cites session ids and event positions (``#12``) so the reader can page on with
``get_events``. Transcript text is shown as it was (recall events left out), with anything that could
close the frame neutralized and every control character made visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from harvester.bank import Bank
from harvester.bank.sqlite_recall import plain_words
from harvester.recall.frame import frame, neutralize
from harvester.recall.scope import Scope
from harvester.terminal import visible

DEFAULT_MAX_BYTES = 8192
MAX_MAX_BYTES = 200_000  # an answer bigger than this fills a model's context for little
ROLES = ("user", "assistant", "system", "tool")
KINDS = ("text", "thinking", "tool_call", "tool_result", "compaction", "meta")


class RecallError(ValueError):
    """A request that cannot be answered as asked: the one-line reason goes back to the caller."""


@dataclass
class Recall:
    """What an answer is given: the bank, the scope, and who asks (an agent's own live session is not
    handed back to it)."""

    bank: Bank
    scope: Scope
    caller: str | None = None  # the calling agent's harness
    recent_minutes: float = 10  # a session of the caller's harness written this recently is its own


def text_of(value: str | None) -> str:
    return visible(neutralize(value or ""))


def clip(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(ts: str | None) -> str:
    return (ts or "-").replace("T", " ")[:19] + ("Z" if ts and ts.endswith("Z") else "")


def parse_since(value: str | None) -> str | None:
    """An ISO 8601 date or time (UTC unless it says otherwise), or a span back from now: 90m, 24h, 7d, 2w."""
    if not value:
        return None
    span = re.fullmatch(r"\s*(\d+)\s*([mhdw])\s*", value)
    if span:
        unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[span[2]]
        moment = datetime.now(UTC) - timedelta(**{unit: int(span[1])})
    else:
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise RecallError(f"since: {value!r} is neither an ISO 8601 date/time nor a span like 24h or 7d") from None
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def check_max_bytes(max_bytes: int) -> int:
    if not 512 <= max_bytes <= MAX_MAX_BYTES:
        raise RecallError(f"max_bytes must be between 512 and {MAX_MAX_BYTES}, not {max_bytes}")
    return max_bytes


def bounded(body: str, kind: str, scope: Scope, max_bytes: int, more: str = "") -> str:
    """The framed answer, cut at a line end so that it stays within ``max_bytes`` (the cut is said)."""
    whole = frame(body, kind, repository=scope.label)
    if len(whole.encode()) <= max_bytes:
        return whole
    note = f"\n\n[… cut to stay within {max_bytes} bytes{'; ' + more if more else ''}]"
    budget = max_bytes - len(frame(note, kind, repository=scope.label).encode()) - 8
    cut = body.encode()[:max(budget, 0)].decode("utf-8", "ignore")
    if "\n" in cut:
        cut = cut[: cut.rfind("\n")]
    return frame(cut + note, kind, repository=scope.label)


def session_in_scope(r: Recall, ref: str) -> dict[str, Any]:
    """The session ``ref`` names (an id or an unambiguous prefix), if it is in the scope."""
    found = r.bank.find_sessions(ref)
    where = r.scope
    found = [s for s in found if where.holds(s)]
    if not found:
        raise RecallError(f"no session {ref!r} in {where.label} (recent_sessions lists them)")
    if len(found) > 1:
        raise RecallError(f"{ref!r} names {len(found)} sessions: give more of the id")
    return found[0]


def state_words(session: dict[str, Any]) -> str:
    """How a session ended, as a reader needs to know it."""
    return {
        "ended": "ended cleanly",
        "abandoned": "ABANDONED mid-turn: the agent stopped before finishing its last turn",
        "live": "still LIVE: an agent may be working in it right now",
    }.get(session["state"], "unknown (the capture service did not see it end)")


# --- recent_sessions -------------------------------------------------------------------------------------

def recent_sessions(r: Recall, limit: int = 10, harness: str | None = None, since: str | None = None,
                    max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    if not 1 <= limit <= 100:
        raise RecallError(f"limit must be between 1 and 100, not {limit}")
    check_max_bytes(max_bytes)
    rows = r.bank.scoped_sessions(r.scope, limit, harness=harness, since=parse_since(since))
    if not rows:
        return bounded(f"No sessions in {r.scope.label}" + (f" of {harness}" if harness else "") + ".",
                       "recent_sessions", r.scope, max_bytes)
    parts = [f"{len(rows)} most recent sessions in {r.scope.label}, newest first:"]
    for s in rows:
        first, last = r.bank.first_and_last(s["id"])
        counts = r.bank.event_counts(s["id"])
        lines = [f"## {text_of(clip(s['title'], 100)) or '(untitled)'}",
                 f"- session `{s['native_id']}` ({s['harness']}{', ' + s['agent_version'] if s['agent_version'] else ''})"
                 + (f", branch {text_of(s['branch'])}" if s["branch"] else ""),
                 f"- started {when(s['started_at'])}, updated {when(s['updated_at'])}; {state_words(s)}",
                 f"- {s['event_count']} events: {counts['asks']} asks, {counts['answers']} answers, "
                 f"{counts['tool_calls']} tool calls, {counts['tool_errors']} tool errors"]
        if first:
            lines.append(f"- first ask (#{first['seq']}): {text_of(clip(first['text'], 300))}")
        if last:
            lines.append(f"- last answer (#{last['seq']}): {text_of(clip(last['text'], 300))}")
        parts.append("\n".join(lines))
    return bounded("\n\n".join(parts), "recent_sessions", r.scope, max_bytes,
                   "ask for fewer sessions, or handoff / get_events for one")


# --- search_history --------------------------------------------------------------------------------------

def search_history(r: Recall, query: str, harness: str | None = None, since: str | None = None,
                   role: str | None = None, kind: str | None = None, limit: int = 10,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    if role is not None and role not in ROLES:
        raise RecallError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if kind is not None and kind not in KINDS:
        raise RecallError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
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
        return bounded(f"Nothing in {r.scope.label} matches {text_of(query)!r}.", "search_history", r.scope, max_bytes)
    matches = "match" if page.total == 1 and not page.more else "matches"
    counted = f"{'More than ' if page.more else ''}{page.total:,} {matches} for {text_of(query)!r} in {r.scope.label}"
    if page.ranked:
        parts = [counted + (", best first:" if page.total <= len(hits) else f"; the best {len(hits)}:")]
    else:
        parts = [counted + f", too many to rank; the {len(hits)} stored last, newest first:"]
    for h in hits:
        label = h["role"] if h["kind"] == "text" else f"{h['role']} {h['kind'].replace('_', ' ')}"
        if h["tool_name"]:
            label += f" [{text_of(h['tool_name'])}]"
        parts.append(f"- session `{h['session']}` ({h['harness']}) #{h['seq']} {label}, {when(h['ts'])}: "
                     f"{text_of(clip(h['snippet'], 400))}")
    if not page.ranked:
        parts.append("(add words, or narrow with harness, since, role or kind, to get the matches ranked best first)")
    elif page.total > len(hits):
        parts.append(f"(more matches past {limit}: raise limit, or narrow with harness, since, role or kind)")
    return bounded("\n".join(parts), "search_history", r.scope, max_bytes, "narrow the search")


# --- get_events ------------------------------------------------------------------------------------------

def event_block(e: dict[str, Any], limit: int) -> str:
    label = e["role"] if e["kind"] == "text" else f"{e['role']} {e['kind'].replace('_', ' ')}"
    if e.get("tool_name"):
        label += f" [{text_of(e['tool_name'])}]"
    if e.get("is_error"):
        label += " (error)"
    body = e.get("text") or ""
    if len(body) > limit:
        body = body[:limit] + f"\n[… {len(body) - limit} more characters]"
    return f"### #{e['seq']} {label} · {when(e['ts'])}\n{text_of(body)}"


def get_events(r: Recall, session: str, start: int = 0, limit: int = 50, kinds: list[str] | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES, full: bool = False, text_from: int = 0) -> str:
    """A page of events. ``full``: each text whole (the archive's copy where the bank's is clipped) as far as
    the answer's size allows; one too long for a page goes on from character ``text_from`` in the next."""
    if start < 0 or not 1 <= limit <= 500 or text_from < 0:
        raise RecallError("start and text_from must be 0 or more, and limit between 1 and 500")
    for k in kinds or ():
        if k not in KINDS:
            raise RecallError(f"kinds: {k!r} is not one of {', '.join(KINDS)}")
    check_max_bytes(max_bytes)
    s = session_in_scope(r, session)
    events = r.bank.events_page(s["id"], start, limit + 1, kinds=kinds or None)
    page, rest = events[:limit], events[limit:]
    head = (f"Session `{s['native_id']}` ({s['harness']}), {text_of(clip(s['title'], 100)) or '(untitled)'}: "
            f"{s['event_count']} events; {state_words(s)}.")
    blocks, used = [head], len(head.encode()) + 600
    next_start = rest[0]["seq"] if rest else None
    go_on = ""
    for n, e in enumerate(page):
        if full:
            e["text"] = r.bank.whole_text(e) or e.get("text") or ""
            if n == 0 and text_from:
                e["text"] = e["text"][text_from:]
            room = max_bytes - used - 200
            if n == 0 and len(e["text"].encode()) > room:  # too long for any page: this one carries a part
                part = _within(e["text"], room)
                e["text"] = part
                go_on = (f"next: get_events(session={s['native_id']!r}, start={e['seq']}, full=true, "
                         f"text_from={text_from + len(part)})")
                next_start = None
        block = event_block(e, len(e["text"] or "") if full else 4000)
        if used + len(block.encode()) > max_bytes and len(blocks) > 1:
            next_start = e["seq"]
            break
        blocks.append(block)
        used += len(block.encode()) + 2
        if go_on:
            break
    blocks.append(go_on or (f"next_start: {next_start}" if next_start is not None else "next_start: none (the end)"))
    return bounded("\n\n".join(blocks), "get_events", r.scope, max_bytes,
                   f"page on with get_events(session={s['native_id']!r}, start=…)")


def _within(text: str, size: int) -> str:
    """The longest start of ``text`` that fits ``size`` bytes in UTF-8."""
    return text.encode("utf-8", "surrogatepass")[:max(size, 1)].decode("utf-8", "ignore")
