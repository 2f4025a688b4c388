"""The handoff brief: where work stands in a session, for the agent (or person) who picks it up.

"I was working with another agent; pick up where it stopped." The brief keeps what matters most to the next
agent first, in any budget: how the session ended and the last exchange, the files it changed (with the lines
added and removed), the commands that failed and the tool calls that returned an error (each with the line that
says why), the latest asks, then how many files it read. Every section fits the room it is given by dropping its
least recent items, and every cut names the exact command (``harvester show ID --around N``, for a person) or
tool call (``get_events(session=ID, start=N)``, for an agent) that shows what was left out. Paths are relative to
the repository (or the session's directory) when inside it.

It is extractive: every line comes from the transcript, cited by event position; nothing is summarized by a
model. The same brief is the MCP ``handoff`` tool and ``harvester context``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from harvester.recall.actions import Actions, actions_of
from harvester.recall.frame import frame
from harvester.recall.shown import EMPTY, Md, md, quote
from harvester.recall.tools import call_lines
from harvester.recall.views import (
    DEFAULT_MAX_BYTES,
    NoSession,
    Recall,
    bounded,
    check_max_bytes,
    clip,
    counted,
    filed_in,
    session_in_scope,
    state_words,
    when,
)

# The share of the room (after the head and the ending) each section gets first, in the order of their value
# to the next agent; what a section does not use goes to the others, in the same order.
SHARES = (("last", 0.30), ("changed", 0.22), ("failed", 0.22), ("asks", 0.16), ("read", 0.03), ("also", 0.07))
DROPPED_FIRST = ("also", "read", "asks")  # where the room cannot hold every section
ASK_CHARS = 300  # of an earlier ask, in its list
LINE_CHARS = 200  # of a command, an error line, a tool call in the last exchange
STEP_LINES = 3  # of a call's diff, written head or pattern under it in the last exchange (show has the rest)


def pick_session(r: Recall, session: str | None, harness: str | None) -> dict[str, Any]:
    """The session to hand off: the one named, else the latest in scope (of ``harness`` if given) that is
    not the caller's own (a session of the caller's harness still being written)."""
    if session:
        return session_in_scope(r, session)
    recent = (datetime.now(UTC) - timedelta(minutes=r.recent_minutes)).strftime("%Y-%m-%dT%H:%M:%S")
    rows = r.bank.scoped_sessions(r.scope, 1, harness=harness, skip_live_of=r.caller, recent_since=recent)
    if not rows:
        raise NoSession(r.scope.label, f" other than this {r.caller} session" if r.caller else "", harness)
    return rows[0]


def none_to_hand_off(r: Recall, none: NoSession, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The answer of handoff where there is no session to hand off: there is none, and where to look."""
    return bounded(r, md("No session{} in {}{} yet. recent_sessions(all_repos=true) lists every repository's "
                         "sessions.", none.other, none.where, md(" of {}", none.harness) if none.harness else EMPTY),
                   "handoff", max_bytes)


def handoff(r: Recall, session: str | None = None, harness: str | None = None,
            max_bytes: int = DEFAULT_MAX_BYTES, reader: str = "agent") -> str:
    """The framed brief within ``max_bytes``. ``reader``: "agent" (an MCP client: cuts name ``get_events``
    calls) or "cli" (a person: cuts name ``harvester show`` commands)."""
    check_max_bytes(max_bytes)
    try:
        s = pick_session(r, session, harness)
    except NoSession as none:
        return none_to_hand_off(r, none, max_bytes)
    key = r.bank.recall_key()
    room = max_bytes - len(frame(EMPTY, "handoff", key, repository=r.scope.label).encode()) - 16
    pointers = Pointers(s["native_id"], reader)
    return bounded(r, brief_body(r, s, room, pointers), "handoff", max_bytes, pointers.whole())


@dataclass(frozen=True)
class Pointers:
    """Where the rest of a session is read: a command for a person, a tool call for an agent."""

    session: str
    reader: str = "agent"

    def at(self, seq: int, whole: bool = False) -> Md:
        """The events from position ``seq`` (``whole``: that event's text whole)."""
        if self.reader == "cli":
            return md("`harvester show {} --around {}`", shlex.quote(self.session), seq)
        return md("`get_events(session={!r}, start={}{})`", self.session, seq, md(", limit=1, full=true") if whole
                  else EMPTY)

    def whole(self) -> Md:
        if self.reader == "cli":
            return md("`harvester show {}` has the whole session", shlex.quote(self.session))
        return md("`get_events(session={!r})` has the whole session", self.session)

    def legend(self) -> Md:
        """How to read on from any line of the brief, all of which cite their event's position."""
        if self.reader == "cli":
            shown = md("`harvester show {} --around N`", shlex.quote(self.session))
        else:
            shown = md("`get_events(session={!r}, start=N, limit=1, full=true)`", self.session)
        return md("{}; {} shows event #N whole (a line cut short here ends in …).", self.whole(), shown)


def brief_body(r: Recall, s: dict[str, Any], budget: int = DEFAULT_MAX_BYTES,
               pointers: Pointers | None = None) -> Md:
    """The brief of session ``s`` in about ``budget`` bytes: the head and the ending whole, then each section
    in the order of :data:`SHARES`, given its share of the rest and what the sections before it left."""
    pointers = pointers or Pointers(s["native_id"])
    events = r.bank.session_events(s["id"])
    asks = [e for e in events if e["role"] == "user" and e["kind"] == "text" and (e["text"] or "").strip()]
    done = actions_of(events, s.get("repo_root") or r.scope.repo_root, s.get("cwd"))
    head, ending = _head(r, s, events, asks, pointers), _ending(s, events)
    sections: dict[str, Callable[[int], Md]] = {
        "last": lambda room: _last_exchange(events, asks, room, pointers),
        "changed": lambda room: _changed(done, room, pointers),
        "failed": lambda room: _failed(done, room, pointers),
        "asks": lambda room: _asks(asks[:-1], room, pointers),
        "read": lambda room: _read(done, pointers),
        "also": lambda room: _also(done, room, pointers),
    }
    rest = budget - _size(head) - _size(ending) - 2 * (len(sections) + 1)
    wanted = {name: _size(build(1 << 30)) for name, build in sections.items()}
    rooms = _rooms(wanted, {name: _least(build, wanted[name]) for name, build in sections.items()}, rest)
    made = {name: sections[name](rooms[name]) for name, _ in SHARES}
    # A room too small for every section's least (its title and where the rest is): the least valuable go, and
    # so does one that holds nothing but its title and where the rest is, for the items of those before it.
    for name in DROPPED_FIRST:
        if sum(map(_size, made.values())) > rest or _bare(made[name]):
            made[name] = EMPTY
    _spend_slack(made, sections, wanted, rest)
    parts = [head, ending, *(made[name] for name, _ in SHARES)]
    return Md("\n\n").join(p for p in parts if p)


def _spend_slack(made: dict[str, Md], sections: dict[str, Callable[[int], Md]], wanted: dict[str, int],
                 rest: int) -> None:
    """A section cut at a line leaves part of its room unused: what all of them left goes to the first one that
    was cut (one that shows none of its items first, then in the order of value), made again with it, and so on."""
    for name in sorted((name for name, _ in SHARES), key=lambda name: not _bare(made[name])):
        slack = rest - sum(map(_size, made.values()))
        if slack < 64:
            return
        if made[name] and _size(made[name]) < wanted[name]:
            made[name] = sections[name](_size(made[name]) + slack)


def _bare(section: Md) -> bool:
    """A list that shows none of its items: its title, and the line saying where they are."""
    lines = section.lines()
    return len(lines) == 2 and lines[1].startswith("- … ")


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _least(build: Callable[[int], Md], wanted: int) -> int:
    """The fewest bytes in which a section says something: a list, its first item (the smallest room in which it
    is not bare); any other section, what it holds in no room at all."""
    low, high = _size(build(0)), wanted
    if not _bare(build(0)):
        return low
    while low < high:  # bare below some room, not at ``wanted``: the smallest room that is not
        middle = (low + high) // 2
        if _bare(build(middle)):
            low = middle + 1
        else:
            high = middle
    return high


def _rooms(wanted: dict[str, int], least: dict[str, int], room: int) -> dict[str, int]:
    """Each section's bytes: first its least, in the order of value, while the room holds it; then its share of
    what is left (no more than it wants); then, in order, what is left after that."""
    given = {}
    left = room
    for name, _ in SHARES:
        given[name] = least[name] if least[name] <= left else 0
        left -= given[name]
    shared = left
    for name, share in SHARES:
        more = max(0, min(wanted[name] - given[name], int(shared * share)))
        given[name] += more
        left -= more
    for name, _ in SHARES:
        more = max(0, min(wanted[name] - given[name], left))
        given[name] += more
        left -= more
    return given


def _head(r: Recall, s: dict[str, Any], events: list[dict[str, Any]], asks: list[dict[str, Any]],
          pointers: Pointers) -> Md:
    lines = [md("# Handoff: {}", clip(s["title"], 120) or "(untitled)"),
             md("Session `{}` of {}{} in {}{}{}.", s["native_id"], s["harness"],
                md(" {}", s["agent_version"]) if s["agent_version"] else EMPTY, s["cwd"] or "-",
                md(", branch {}", s["branch"]) if s["branch"] else EMPTY, filed_in(r, s)),
             md("Started {}, last written {}; {}.", when(s["started_at"]), when(s["updated_at"]), state_words(s)),
             md("{}: {}, {}, {}.", counted(len(events), "event"), counted(len(asks), "ask"),
                counted(sum(1 for e in events if e["kind"] == "tool_call"), "tool call"),
                counted(sum(1 for e in events if e["kind"] == "tool_result" and e.get("is_error")), "tool error")),
             pointers.legend()]
    if s["parent_native_id"]:
        lines.append(md("A {} of session `{}`.", s["parent_kind"] or "child", s["parent_native_id"]))
    return Md("\n").join(lines)


def _ending(s: dict[str, Any], events: list[dict[str, Any]]) -> Md:
    lines = [Md("## How it ended")]
    if s["state"] == "abandoned":
        lines.append(Md("The agent was stopped in the middle of a turn (killed, crashed, or interrupted): its last "
                        "request did not get a finished answer. Check the files it was changing before going on."))
    elif s["state"] == "live":
        lines.append(Md("The session is still live: another agent may be working in it now. Coordinate before "
                        "changing the same files."))
    elif s["state"] == "ended":
        lines.append(Md("It ended cleanly."))
    else:
        lines.append(Md("Not known: no capture service watched it (`harvester run` does: live, ended or abandoned)."))
    calls = {e["tool_call_id"] for e in events if e["kind"] == "tool_call" and e.get("tool_call_id")}
    answered = {e["tool_call_id"] for e in events if e["kind"] == "tool_result" and e.get("tool_call_id")}
    pending = [e for e in events if e["kind"] == "tool_call" and e.get("tool_call_id") in calls - answered]
    if pending:
        last = pending[-1]
        lines.append(md("A tool call got no result: #{} {}", last["seq"], clip(last["text"], LINE_CHARS)))
    return Md("\n").join(lines)


def _fitting(title: Md, items: list[Md], room: int, more: Callable[[int], Md]) -> Md:
    """``title``, then as many of ``items`` as ``room`` holds, then (``more(i)``, ``i`` the first left out) a line
    saying how many were left out and where they are."""
    lines, used = [title], _size(title)
    for i, item in enumerate(items):
        after = _size(more(i + 1)) + 1 if i + 1 < len(items) else 0
        if used + _size(item) + 1 + after > room:
            lines.append(more(i))
            break
        lines.append(item)
        used += _size(item) + 1
    return Md("\n").join(lines)


def _changed(done: Actions, room: int, pointers: Pointers) -> Md:
    if not done.changed:
        return EMPTY
    latest = sorted(done.changed.items(), key=lambda item: -item[1].last)
    items = []
    for path, change in latest:
        tools = Md(", ").join(md("{}{}", name, md(" ×{}", change.tools.count(name)) if change.tools.count(name) > 1
                                 else EMPTY) for name in dict.fromkeys(change.tools))
        stat = md(" +{} -{}", change.added, change.removed) if change.added or change.removed else EMPTY
        items.append(md("- `{}`{} ({}, #{})", path, stat, tools, change.last))

    def more(i: int) -> Md:
        return md("- … {} more, the latest changed at #{}: {}", counted(len(latest) - i, "file"), latest[i][1].last,
                  pointers.at(latest[i][1].first))
    return _fitting(md("## Files changed ({}), latest first", len(latest)), items, room, more)


def _failed(done: Actions, room: int, pointers: Pointers) -> Md:
    if not done.failures:
        return EMPTY
    latest = done.failures[::-1]
    items = []
    for f in latest:
        if f.command is not None:
            items.append(md("- #{} `{}` → {}: {}", f.seq, clip(f.command, LINE_CHARS), f.status, f.why or "-"))
        else:
            items.append(md("- #{} {}{}: {}", f.seq, f.tool, md(" `{}`", f.target) if f.target else EMPTY,
                            f.why or "(no message)"))
    commands = sum(1 for f in latest if f.command is not None)

    def more(i: int) -> Md:
        return md("- … {} more, the latest at #{}: {}", len(latest) - i, latest[i].seq, pointers.at(latest[i].seq))
    what = [counted(commands, "command")] if commands else []
    if len(latest) > commands:
        what.append(counted(len(latest) - commands, "other tool call" if commands else "tool call"))
    title = md("## Failed: {}, latest first", Md(" and ").join(what))
    return _fitting(title, items, room, more)


def _asks(earlier: list[dict[str, Any]], room: int, pointers: Pointers) -> Md:
    if not earlier:
        return EMPTY
    latest = earlier[::-1]
    items = [md("- #{} ({}): {}", e["seq"], when(e["ts"])[11:] or "-", clip(e["text"], ASK_CHARS)) for e in latest]

    def more(i: int) -> Md:
        return md("- … {} before, the latest at #{}: {}", counted(len(latest) - i, "ask"), latest[i]["seq"],
                  pointers.at(latest[i]["seq"]))
    return _fitting(md("## Earlier asks ({}), latest first", len(latest)), items, room, more)


def _read(done: Actions, pointers: Pointers) -> Md:
    only_read = [(path, seq) for path, seq in done.read.items() if path not in done.changed]
    if not only_read:
        return EMPTY
    first = min(seq for _, seq in only_read)
    return md("Read {} besides those it changed (not listed: the first at #{}, {}).",
              counted(len(only_read), "file"), first, pointers.at(first))


def _also(done: Actions, room: int, pointers: Pointers) -> Md:
    """The commands that ran (the latest with how they ended), and the other tools used: what is left of the room."""
    lines = []
    if done.commands:
        ok = sum(1 for _, _, status in done.commands if status in ("ok", "exit 0"))
        lines.append(md("Ran {} ({} ok).", counted(len(done.commands), "command"), ok))
    if done.other:
        lines.append(md("Other tools: {}.", Md(", ").join(md("{} ×{}", n, c) for n, c in done.other.items())))
    if not done.commands:
        return Md("\n").join(lines)
    latest = done.commands[::-1]
    items = [md("- #{} `{}` → {}", seq, clip(command, LINE_CHARS), status) for seq, command, status in latest]

    def more(i: int) -> Md:
        return md("- … {} before, the latest at #{}: {}", counted(len(latest) - i, "command"), latest[i][0],
                  pointers.at(latest[i][0]))
    title = Md("\n").join([*lines, Md("Commands, latest first:")])
    if _size(title) + _size(items[0]) + (_size(more(1)) if len(items) > 1 else 0) > room:
        return Md("\n").join(lines)
    return _fitting(title, items, room, more)


def _last_exchange(events: list[dict[str, Any]], asks: list[dict[str, Any]], room: int, pointers: Pointers) -> Md:
    """The last ask, what followed it, and the answer: the ask and the answer whole where they fit (else their
    start, and for the answer its end too, where the conclusion is), the events between them from the latest
    back as far as the room holds."""
    if not asks:
        return EMPTY
    start = next(i for i, e in enumerate(events) if e is asks[-1])
    after = events[start + 1:]
    answers = [e for e in after if e["kind"] == "text" and e["role"] == "assistant" and (e["text"] or "").strip()]
    answer = answers[-1] if answers else None
    title = Md("## The last exchange")
    ask = _said(asks[-1], max(room // 4, 120), pointers, keep_end=False)
    told = _said(answer, max(room // 2 - _size(ask) // 2, 200), pointers, keep_end=True) if answer else EMPTY
    left = room - _size(title) - _size(ask) - _size(told) - 6
    between = [e for e in after if e is not answer and e["kind"] in ("text", "tool_call", "tool_result")
               and (e["kind"] != "text" or e["role"] == "assistant")]
    kept: list[dict[str, Any]] = []
    for e in reversed(between):  # the latest first: where the session stopped
        line = _step(e, pointers)
        gap = _size(_skipped(between, len(between) - len(kept) - 1, pointers)) if len(kept) + 1 < len(between) else 0
        if left - _size(line) - 2 - gap < 0:
            break
        kept.insert(0, e)
        left -= _size(line) + 2
    shown = [e for e in after if e is answer or any(e is k for k in kept)]
    parts = [title, ask]
    if len(kept) < len(between):
        parts.append(_skipped(between, len(between) - len(kept), pointers))
    parts += [told if e is answer else _step(e, pointers) for e in shown]
    return Md("\n\n").join(p for p in parts if p)


def _skipped(between: list[dict[str, Any]], n: int, pointers: Pointers) -> Md:
    """The line standing for the first ``n`` events of ``between``, left out."""
    first = between[0]["seq"]
    return md("*… {} before these (#{}–#{}): {}*", counted(n, "event"), first, between[n - 1]["seq"],
              pointers.at(first))


def _step(e: dict[str, Any], pointers: Pointers) -> Md:
    """One event of the last exchange: a line; a tool call's with what its text leaves out (an edit's diff, a
    write's head, a search's pattern, as show has them) quoted below it, clipped with a count and where it is whole."""
    what = e["kind"].replace("_", " ") if e["kind"] != "text" else "assistant"
    error = md(" (error)") if e.get("is_error") else EMPTY
    if e["kind"] != "tool_call":
        return md("*{}* (#{}){}: {}", what, e["seq"], error, clip(e["text"], LINE_CHARS))
    head, *details = call_lines(e, full=True) or [""]
    details = [x for x in details if not (x.startswith("pattern ") and x[8:] in head)]  # Glob: P, then pattern P
    line = md("*{}* (#{}){}: {}", what, e["seq"], error, clip(head, LINE_CHARS))
    shown = details[:STEP_LINES]
    if shown:
        line += Md("\n") + quote("\n".join(clip(x, LINE_CHARS) for x in shown))
    if len(details) > len(shown):
        line += md("\n*… {} more lines: {}*", len(details) - len(shown), pointers.at(e["seq"], whole=True))
    return line


def _said(e: dict[str, Any], room: int, pointers: Pointers, keep_end: bool) -> Md:
    """A user's or an assistant's words, quoted: whole within ``room`` bytes, else their start (and with
    ``keep_end``, their end), the cut naming where the whole text is."""
    text = e["text"] or ""
    said = md("**{}** (#{}):\n", e["role"], e["seq"])
    if _size(quote(text)) + _size(said) <= room:
        return said + quote(text)
    cut = md("\n[… cut: the whole text at {}]", pointers.at(e["seq"], whole=True))
    keep = max(room - _size(said) - _size(cut) - 1, 80)
    if keep_end:
        return said + quote(_start(text, keep // 2)) + cut + Md("\n") + quote(_end(text, keep // 2))
    return said + quote(_start(text, keep)) + cut


def _start(text: str, size: int) -> str:
    """The start of ``text`` whose quoted form fits ``size`` bytes, cut at a word where it can be."""
    part = text.encode("utf-8", "surrogatepass")[:size].decode("utf-8", "ignore")
    while part and _size(quote(part)) > size:
        part = part[: max(0, len(part) - max(1, (_size(quote(part)) - size)))]
    return part.rsplit(" ", 1)[0] if " " in part[-40:] else part


def _end(text: str, size: int) -> str:
    part = text.encode("utf-8", "surrogatepass")[-size:].decode("utf-8", "ignore") if size else ""
    while part and _size(quote(part)) > size:
        part = part[max(1, _size(quote(part)) - size):]
    return part.split(" ", 1)[1] if " " in part[:40] else part
