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
from harvester.recall.views import (
    DEFAULT_MAX_BYTES,
    Recall,
    RecallError,
    bounded,
    check_max_bytes,
    clip,
    session_in_scope,
    state_words,
    text_of,
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
        other = f" other than this {r.caller} session" if r.caller else ""
        raise RecallError(f"no session{other} in {r.scope.label}" + (f" of {harness}" if harness else ""))
    return rows[0]


def handoff(r: Recall, session: str | None = None, harness: str | None = None,
            max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    check_max_bytes(max_bytes)
    s = pick_session(r, session, harness)
    return bounded(brief_body(r, s, max_bytes - 700), "handoff", r.scope, max_bytes,
                   f"get_events(session={s['native_id']!r}) has the whole transcript")


def brief_body(r: Recall, s: dict[str, Any], budget: int = DEFAULT_MAX_BYTES) -> str:
    """The brief of session ``s`` in about ``budget`` bytes: the head and the ending whole, the last exchange
    with up to 40 % of the room, the asks and the actions sharing the rest (each cut at a line, saying so)."""
    events = r.bank.session_events(s["id"])
    asks = [e for e in events if e["role"] == "user" and e["kind"] == "text" and (e["text"] or "").strip()]
    done = actions_of(events)
    head = [f"# Handoff: {text_of(clip(s['title'], 120)) or '(untitled)'}",
            f"Session `{s['native_id']}` of {s['harness']}{' ' + s['agent_version'] if s['agent_version'] else ''}"
            f" in {text_of(s['cwd'] or '-')}" + (f", branch {text_of(s['branch'])}" if s["branch"] else "") + ".",
            f"Started {when(s['started_at'])}, last written {when(s['updated_at'])}; {state_words(s)}.",
            f"{len(events)} events: {len(asks)} asks, {sum(1 for e in events if e['kind'] == 'tool_call')} tool calls, "
            f"{len(done.errors)} tool errors."]
    if s["parent_native_id"]:
        head.append(f"A {s['parent_kind'] or 'child'} of session `{s['parent_native_id']}`.")
    head_text, ending = "\n".join(head), _ending(s, events)
    room = max(budget - len(head_text.encode()) - len(ending.encode()), 1000)
    last = _trim(_last_exchange(events, room * 2 // 5), room * 2 // 5)
    rest = max(room - len(last.encode()), 600)
    did = _trim(_did(done), rest // 2)
    asked = _trim(_asks(asks), rest - len(did.encode()))
    return "\n\n".join(p for p in (head_text, asked, did, ending, last) if p)


def _trim(section: str, budget: int) -> str:
    """A section cut at a line end to fit ``budget`` bytes, saying how many lines were left out."""
    if len(section.encode()) <= budget:
        return section
    lines, kept, used = section.split("\n"), [], 0
    for line in lines:
        if used + len(line.encode()) + 1 > budget - 80 and kept:
            break
        kept.append(line)
        used += len(line.encode()) + 1
    return "\n".join(kept) + f"\n- … {len(lines) - len(kept)} more lines (get_events has them)"


def _asks(asks: list[dict[str, Any]]) -> str:
    if not asks:
        return "## What the user asked\n(no ask recorded)"
    shown = asks if len(asks) <= ASKS_SHOWN else [*asks[:5], None, *asks[-(ASKS_SHOWN - 5):]]
    lines = ["## What the user asked"]
    for e in shown:
        if e is None:
            lines.append(f"- … {len(asks) - ASKS_SHOWN} more asks (get_events has them)")
            continue
        lines.append(f"- #{e['seq']} ({when(e['ts'])[11:] or '-'}): {text_of(clip(e['text'], 400))}")
    return "\n".join(lines)


def _did(done: Any) -> str:
    lines = ["## What the agent did"]
    if done.read:
        files = list(done.read)
        lines.append(f"- read {len(files)} files: " + ", ".join(text_of(f) for f in files[:ITEMS_SHOWN])
                     + (" …" if len(files) > ITEMS_SHOWN else ""))
    if done.changed:
        items = [f"{text_of(p)} ({', '.join(sorted(set(tools)))}{' ×' + str(len(tools)) if len(tools) > 1 else ''})"
                 for p, tools in done.changed.items()]
        lines.append(f"- changed {len(items)} files: " + ", ".join(items[:ITEMS_SHOWN])
                     + (" …" if len(items) > ITEMS_SHOWN else ""))
    if done.commands:
        lines.append(f"- ran {len(done.commands)} commands:")
        shown = done.commands if len(done.commands) <= ITEMS_SHOWN else done.commands[-ITEMS_SHOWN:]
        if len(shown) < len(done.commands):
            lines.append(f"  - … {len(done.commands) - len(shown)} earlier ones")
        lines += [f"  - #{seq} `{text_of(clip(cmd, 200))}` → {status}" for seq, cmd, status in shown]
    if done.errors:
        lines.append(f"- {len(done.errors)} tool calls failed:")
        lines += [f"  - #{seq} {text_of(tool)}: {text_of(clip(first, 200))}" for seq, tool, first in done.errors[-10:]]
    if done.other:
        lines.append("- other tools: " + ", ".join(f"{text_of(n)} ×{c}" for n, c in done.other.items()))
    return "\n".join(lines) if len(lines) > 1 else "## What the agent did\n(no tool calls)"


def _ending(s: dict[str, Any], events: list[dict[str, Any]]) -> str:
    lines = ["## How it ended"]
    if s["state"] == "abandoned":
        lines.append("The agent was stopped in the middle of a turn (killed, crashed, or interrupted): its last "
                     "request did not get a finished answer. Check the files it was changing before going on.")
    elif s["state"] == "live":
        lines.append("The session is still live: another agent may be working in it now. Coordinate before "
                     "changing the same files.")
    elif s["state"] == "ended":
        lines.append("It ended cleanly.")
    else:
        lines.append("Unknown: the capture service did not see it end.")
    calls = {e["tool_call_id"] for e in events if e["kind"] == "tool_call" and e.get("tool_call_id")}
    answered = {e["tool_call_id"] for e in events if e["kind"] == "tool_result" and e.get("tool_call_id")}
    pending = [e for e in events if e["kind"] == "tool_call" and e.get("tool_call_id") in calls - answered]
    if pending:
        last = pending[-1]
        lines.append(f"A tool call got no result: #{last['seq']} {text_of(clip(last['text'], 200))}")
    return "\n".join(lines)


def _last_exchange(events: list[dict[str, Any]], budget: int) -> str:
    last_ask = max((i for i, e in enumerate(events) if e["role"] == "user" and e["kind"] == "text"), default=None)
    if last_ask is None:
        return ""
    lines = ["## The last exchange, verbatim"]
    for e in events[last_ask:]:
        if e["kind"] == "text" and e["role"] in ("user", "assistant"):
            text = e["text"] or ""
            if len(text.encode()) > budget // 2:  # a long answer: its start and its end, where the conclusion is
                keep = budget // 4
                text = f"{text[:keep]}\n[… {len(text) - 2 * keep} characters …]\n{text[-keep:]}"
            lines.append(f"**{e['role']}** (#{e['seq']}):\n{text_of(text)}")
        elif e["kind"] in ("tool_call", "tool_result"):
            lines.append(f"*{e['kind'].replace('_', ' ')}* (#{e['seq']}): {text_of(clip(e['text'], 300))}")
    return "\n\n".join(lines)
