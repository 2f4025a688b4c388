"""What `show` prints: a session's transcript for a person, its events numbered as everywhere else.

Transcript text reaches the terminal through :func:`harvester.terminal.visible` (here, and again in
:func:`harvester.terminal.page`/``echo``): bodies are made visible before they are indented, as textwrap also
starts a line after the control characters str.splitlines takes for line ends."""

from __future__ import annotations

import textwrap
from typing import Any

from harvester.cli.render import UNKNOWN_STATE, _label, _short, _when, plural
from harvester.model import is_injected
from harvester.recall.tools import call_lines, lines_of
from harvester.terminal import one_line, visible

# What `show` folds unless asked (--full, or --kinds naming the kind): what a reader skips.
FOLDED_KINDS = ("thinking", "meta")
OUTPUT_LINES = 6  # a tool's output up to this many lines is shown whole; longer, its first OUTPUT_LINES - 2
OUTPUT_CHARS = 2000  # and at most this many characters of it


def select_events(events: list[dict[str, Any]], around: int | None = None, context: int = 5,
                  start: int | None = None, kinds: tuple[str, ...] = (), roles: tuple[str, ...] = ()
                  ) -> list[dict[str, Any]]:
    """The events `show` prints: positions ``around - context`` to ``around + context``, or from ``start`` on,
    of the ``kinds`` and ``roles`` given (every one when none)."""
    low, high = (around - context, around + context) if around is not None else (start or 0, None)
    return [e for e in events if e["seq"] >= low and (high is None or e["seq"] <= high)
            and (not kinds or e["kind"] in kinds) and (not roles or e["role"] in roles)]


def transcript_text(session: dict[str, Any], events: list[dict[str, Any]], full: bool = False,
                    shown_kinds: tuple[str, ...] = (), children: dict[int, str] | None = None) -> str:
    """The session's head, then each event numbered as everywhere else (``#N``: search hits, exports and MCP
    answers cite the same positions). Unless ``full``, what a reader skips is folded, each fold saying how to
    unfold it: context the agent injected, thinking, per-step meta records (unless ``shown_kinds`` names
    them), tool output past OUTPUT_LINES lines; a tool call shows its edit as a compact diff, its write, patch,
    search, command or task (harvester/recall/tools.py), clipped. ``full``: every text whole, nothing folded.
    ``children``: the subagent session each call (by position) started."""
    s = {key: one_line(value) if isinstance(value, str) else value for key, value in session.items()}
    head = [f"{s['title'] or '(untitled)'}",
            f"session {s['native_id']} ({s['harness']}{', ' + s['agent_version'] if s['agent_version'] else ''})",
            f"bank {s['bank_id']}   cwd {s['cwd'] or '-'}"]
    if s["repo_root"]:
        head.append(f"repo {s['repo_root']}" + (f" ({s['origin_id']})" if s["origin_id"] else "")
                    + (f"   branch {s['branch']}" if s["branch"] else ""))
    if s["git_error"]:
        head.append(f"git probe failed: {s['git_error']}")
    if s["parent_native_id"]:
        head.append(f"{s['parent_kind'] or 'child'} of {s['parent_native_id']}")
    head.append(f"started {_when(s['started_at'])}   updated {_when(s['updated_at'])}   model {s['model'] or '-'}"
                f"   {s['event_count']} {plural(s['event_count'], 'event')}   state {s['state']}"
                + (f" ({UNKNOWN_STATE})" if s["state"] == "unknown" else ""))
    if s.get("usage"):  # harvester/usage/sessions.py
        u = s["usage"]
        from harvester.usage.render import cost_cell

        head.append(f"tokens {u['total_tokens']:,} ({u['input_tokens']:,} in, {u['output_tokens']:,} out, "
                    f"{u['cache_read_tokens']:,} cache read, {u['cache_write_tokens']:,} cache write) in "
                    f"{u['responses']:,} {plural(u['responses'], 'response')}   cost "
                    f"{cost_cell(u['cost_usd'], u['unpriced_responses'], u['responses'])}")
    out: list[str] = []
    folded: dict[str, int] = {}
    meta_run: list[dict[str, Any]] = []

    def fold(what: str) -> None:
        folded[what] = folded.get(what, 0) + 1

    def flush_meta() -> None:
        if meta_run:
            first = meta_run[0]
            said = " · ".join(_short(m["text"] or m["kind"], 48) for m in meta_run[:4])
            said += f" · … {len(meta_run) - 4} more" if len(meta_run) > 4 else ""
            what = f"{len(meta_run)} meta records" if len(meta_run) > 1 else "meta record"
            span = f"#{first['seq']}" + (f"-#{meta_run[-1]['seq']}" if len(meta_run) > 1 else "")
            out.append(f"{span} [{_when(first['ts'])[11:] or '-'}] {what} folded (--full): {said}")
            meta_run.clear()

    for e in events:
        label = _label(e["role"], e["kind"])
        if e["tool_name"] and e["kind"] in ("tool_call", "tool_result"):
            label += f" [{one_line(e['tool_name'])}]"
        if e["is_error"]:
            label += " (error)"
        at = f"#{e['seq']} [{_when(e['ts'])[11:] or '-'}]"
        body = e["text"] or ""
        if not full and e["kind"] == "meta" and "meta" not in shown_kinds:
            meta_run.append(e)
            fold("meta")
            continue
        flush_meta()
        if not full and (is_injected(e) or (e["kind"] in FOLDED_KINDS and e["kind"] not in shown_kinds)):
            what = "injected by the agent" if is_injected(e) else e["kind"]
            fold(what)
            lines = lines_of(body)
            out.append(f"{at} {label}{', ' + what if is_injected(e) else ''}: {len(lines)} "
                       f"{plural(len(lines), 'line')} folded (--full): {_short(lines[0] if lines else '', 70)}")
            continue
        if e["kind"] == "tool_call":
            child = (children or {}).get(e["seq"])
            body = "\n".join(call_lines(e, full=full, more="--full shows all", child=child))
        elif not full and e["kind"] == "tool_result":
            lines = lines_of(body)
            if len(lines) > OUTPUT_LINES:
                kept = "\n".join(lines[:OUTPUT_LINES - 2])
                body = f"{kept}\n… {len(lines) - OUTPUT_LINES + 2} more lines folded (--full)"
                fold("tool output")
            if len(body) > OUTPUT_CHARS:
                body = body[:OUTPUT_CHARS] + f"\n… ({len(body) - OUTPUT_CHARS} more characters; --full)"
        body = visible(body)  # before indenting: textwrap.indent also starts lines after \r and \x1c-\x1e
        out.append(f"{at} {label}\n{textwrap.indent(body, '  ')}".rstrip())
    flush_meta()
    if folded:
        head.append("folded: " + ", ".join(f"{n} {what}" for what, n in folded.items())
                    + " (--full shows everything; --kinds thinking,meta shows those)")
    return "\n\n".join(["\n".join(visible(line) for line in head), *out])
