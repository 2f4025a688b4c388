"""The handoff brief: where work stands in a session, for the agent (or person) who picks it up.

"I was working with another agent; pick up where it stopped." The brief says what the user asked (each
ask), what the agent did (the files it read and changed, the commands it ran and how each ended, the
tool calls that failed), how the session ended (cleanly, abandoned mid-turn, or still live elsewhere), and
the last exchange verbatim. It is extractive: every line comes from the transcript, cited by event
position; nothing is summarized by a model. The same brief is the MCP ``handoff`` tool and
``harvester context``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from harvester.recall.actions import actions_of
from harvester.recall.shown import EMPTY, Md, md, quote
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

ASKS_SHOWN = 20  # beyond this many asks, the first few and the latest ones
ITEMS_SHOWN = 25  # files, commands and errors listed per kind


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
    check_max_bytes(max_bytes)
    try:
        s = pick_session(r, session, harness)
    except NoSession as none:
        return none_to_hand_off(r, none, max_bytes)
    return bounded(r, brief_body(r, s, max_bytes - 700), "handoff", max_bytes,
                   md("get_events(session={!r}) has the whole transcript", s["native_id"]))


def brief_body(r: Recall, s: dict[str, Any], budget: int = DEFAULT_MAX_BYTES) -> Md:
    """The brief of session ``s`` in about ``budget`` bytes: the head and the ending whole, the last exchange
    with up to 40 % of the room, the asks and the actions sharing the rest (each cut at a line, saying so)."""
    events = r.bank.session_events(s["id"])
    asks = [e for e in events if e["role"] == "user" and e["kind"] == "text" and (e["text"] or "").strip()]
    done = actions_of(events)
    head = [md("# Handoff: {}", clip(s["title"], 120) or "(untitled)"),
            md("Session `{}` of {}{} in {}{}{}.", s["native_id"], s["harness"],
               md(" {}", s["agent_version"]) if s["agent_version"] else EMPTY, s["cwd"] or "-",
               md(", branch {}", s["branch"]) if s["branch"] else EMPTY, filed_in(r, s)),
            md("Started {}, last written {}; {}.", when(s["started_at"]), when(s["updated_at"]), state_words(s)),
            md("{}: {}, {}, {}.", counted(len(events), "event"), counted(len(asks), "ask"),
               counted(sum(1 for e in events if e["kind"] == "tool_call"), "tool call"),
               counted(len(done.errors), "tool error"))]
    if s["parent_native_id"]:
        head.append(md("A {} of session `{}`.", s["parent_kind"] or "child", s["parent_native_id"]))
    head_text, ending = Md("\n").join(head), _ending(s, events)
    room = max(budget - len(head_text.encode()) - len(ending.encode()), 1000)
    last = _trim(_last_exchange(events, room * 2 // 5), room * 2 // 5)
    rest = max(room - len(last.encode()), 600)
    did = _trim(_did(done), rest // 2)
    asked = _trim(_asks(asks), rest - len(did.encode()))
    return Md("\n\n").join(p for p in (head_text, asked, did, ending, last) if p)


def _trim(section: Md, budget: int) -> Md:
    """A section cut at a line end to fit ``budget`` bytes, saying how many lines were left out."""
    if len(section.encode()) <= budget:
        return section
    lines, kept, used = section.lines(), [], 0
    for line in lines:
        if used + len(line.encode()) + 1 > budget - 80 and kept:
            break
        kept.append(line)
        used += len(line.encode()) + 1
    return Md("\n").join([*kept, md("- … {} more lines (get_events has them)", len(lines) - len(kept))])


def _asks(asks: list[dict[str, Any]]) -> Md:
    if not asks:
        return Md("## What the user asked\n(no ask recorded)")
    shown = asks if len(asks) <= ASKS_SHOWN else [*asks[:5], None, *asks[-(ASKS_SHOWN - 5):]]
    lines = [Md("## What the user asked")]
    for e in shown:
        if e is None:
            lines.append(md("- … {} more asks (get_events has them)", len(asks) - ASKS_SHOWN))
            continue
        lines.append(md("- #{} ({}): {}", e["seq"], when(e["ts"])[11:] or "-", clip(e["text"], 400)))
    return Md("\n").join(lines)


def _listed(items: list[Md], total: int) -> Md:
    return Md(", ").join(items[:ITEMS_SHOWN]) + (Md(" …") if total > ITEMS_SHOWN else EMPTY)


def _did(done: Any) -> Md:
    lines = [Md("## What the agent did")]
    if done.read:
        files = [md("{}", f) for f in done.read]
        lines.append(md("- read {} files: {}", len(files), _listed(files, len(files))))
    if done.changed:
        items = [md("{} ({}{})", p, ", ".join(sorted(set(tools))), md(" ×{}", len(tools)) if len(tools) > 1 else EMPTY)
                 for p, tools in done.changed.items()]
        lines.append(md("- changed {} files: {}", len(items), _listed(items, len(items))))
    if done.commands:
        lines.append(md("- ran {} commands:", len(done.commands)))
        shown = done.commands if len(done.commands) <= ITEMS_SHOWN else done.commands[-ITEMS_SHOWN:]
        if len(shown) < len(done.commands):
            lines.append(md("  - … {} earlier ones", len(done.commands) - len(shown)))
        lines += [md("  - #{} `{}` → {}", seq, clip(cmd, 200), status) for seq, cmd, status in shown]
    if done.errors:
        lines.append(md("- {} tool calls failed:", len(done.errors)))
        lines += [md("  - #{} {}: {}", seq, tool, clip(first, 200)) for seq, tool, first in done.errors[-10:]]
    if done.other:
        lines.append(md("- other tools: {}", Md(", ").join(md("{} ×{}", n, c) for n, c in done.other.items())))
    return Md("\n").join(lines) if len(lines) > 1 else Md("## What the agent did\n(no tool calls)")


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
        lines.append(Md("Unknown: the capture service did not see it end."))
    calls = {e["tool_call_id"] for e in events if e["kind"] == "tool_call" and e.get("tool_call_id")}
    answered = {e["tool_call_id"] for e in events if e["kind"] == "tool_result" and e.get("tool_call_id")}
    pending = [e for e in events if e["kind"] == "tool_call" and e.get("tool_call_id") in calls - answered]
    if pending:
        last = pending[-1]
        lines.append(md("A tool call got no result: #{} {}", last["seq"], clip(last["text"], 200)))
    return Md("\n").join(lines)


def _last_exchange(events: list[dict[str, Any]], budget: int) -> Md:
    last_ask = max((i for i, e in enumerate(events) if e["role"] == "user" and e["kind"] == "text"), default=None)
    if last_ask is None:
        return EMPTY
    lines = [Md("## The last exchange, verbatim")]
    for e in events[last_ask:]:
        if e["kind"] == "text" and e["role"] in ("user", "assistant"):
            text = e["text"] or ""
            said = md("**{}** (#{}):\n", e["role"], e["seq"])
            if len(text.encode("utf-8", "surrogatepass")) > budget // 2:
                keep = budget // 4  # a long answer: its start and its end, where the conclusion is
                lines.append(said + quote(text[:keep]) + md("\n[… {} characters …]\n", len(text) - 2 * keep)
                             + quote(text[-keep:]))
            else:
                lines.append(said + quote(text))
        elif e["kind"] in ("tool_call", "tool_result"):
            lines.append(md("*{}* (#{}): {}", e["kind"].replace("_", " "), e["seq"], clip(e["text"], 300)))
    return Md("\n\n").join(lines)
