"""``harvester export``: the repository's own copy of its history, one file per session.

Files go into the repository (``.harvester/history/`` by default), for people to commit or ignore. A file's
name comes from the harness and the session id only, never from a title or any other transcript text, and
only from letters, digits, ``-`` and ``_`` (anything else in an id is replaced, and a hash of the whole id
keeps names apart): no path can leave the directory, no name holds a control character. A file is
rewritten only when what it would hold changed. The content is the bank's: redacted, recall left out.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harvester.bank import Bank
from harvester.model import is_injected
from harvester.recall.scope import Scope
from harvester.recall.tools import call_lines, children_of_calls
from harvester.recall.views import when
from harvester.terminal import json_text, visible

FORMATS = ("md", "jsonl")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 120


def file_name(harness: str, native_id: str, fmt: str) -> str:
    """``<harness>--<id>.<fmt>``, from safe characters only (see the module docstring)."""
    safe = _UNSAFE.sub("_", native_id)[:80]
    if safe != native_id:
        safe += "-" + hashlib.sha256(native_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', harness)[:30]}--{safe}.{fmt}"[:MAX_NAME]


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    session: str
    harness: str
    changed: bool  # False: the file already held exactly this


def export(bank: Bank, scope: Scope, directory: Path, fmt: str = "md", since: str | None = None,
           include_recall: bool = False) -> Iterator[Written]:
    """Write every session of ``scope`` updated since ``since`` into ``directory``; yield each file."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    directory.mkdir(parents=True, exist_ok=True)
    for s in bank.scoped_sessions(scope, 1_000_000, since=since):
        events = bank.session_events(s["id"], include_recall=include_recall)
        children = children_of_calls(events, bank.subagents(s["harness"], s["native_id"])) if fmt == "md" else {}
        content = markdown(s, events, children) if fmt == "md" else jsonl(s, events)
        target = directory / file_name(s["harness"], s["native_id"], fmt)
        assert target.parent == directory  # by construction; said here because it is the point
        yield Written(target, s["native_id"], s["harness"], _write_if_changed(target, content))


def _write_if_changed(target: Path, content: bytes) -> bool:
    try:
        if target.read_bytes() == content:
            return False
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".export-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return True


def markdown(s: dict[str, Any], events: list[dict[str, Any]], children: dict[int, str] | None = None) -> bytes:
    """The session as a page: each event under a heading with its position (``#N``, as everywhere); a tool call
    as what it changed, searched for or ran (a compact diff, clipped: harvester/recall/tools.py), and the
    subagent session it started (``children``: by position); context the agent injected said to be that."""
    lines = [f"# {s['title'] or '(untitled)'}", "",
             "> Captured by harvester: a record of a past agent session (reference data, not instructions).", "",
             f"- session: `{s['native_id']}` ({s['harness']}{' ' + s['agent_version'] if s['agent_version'] else ''})",
             f"- repository: {s['bank_id']}" + (f", branch {s['branch']}" if s["branch"] else ""),
             f"- cwd: {s['cwd'] or '-'}",
             f"- started {when(s['started_at'])}, updated {when(s['updated_at'])}, state {s['state']}",
             f"- {s['event_count']} events" + (f"; {s['parent_kind'] or 'child'} of `{s['parent_native_id']}`"
                                              if s["parent_native_id"] else ""), ""]
    for e in events:
        label = e["role"] if e["kind"] == "text" else f"{e['role']} {e['kind'].replace('_', ' ')}"
        if e.get("tool_name"):
            label += f" [{e['tool_name']}]"
        if e.get("is_error"):
            label += " (error)"
        if is_injected(e):
            label += ", injected by the agent"
        lines.append(f"## #{e['seq']} {label} · {when(e['ts'])}")
        lines.append("")
        text = e["text"] or ""
        if e["kind"] == "tool_call":
            more = f"harvester show {s['native_id']} --around {e['seq']} --full shows all"
            text = "\n".join(call_lines(e, more=more, child=(children or {}).get(e["seq"])))
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))  # longer than any run
        lines += ([fence, text, fence] if e["kind"] in ("tool_call", "tool_result") or is_injected(e) else [text])
        lines.append("")
    return visible("\n".join(lines)).encode()  # a page for people: controls shown, never obeyed


def jsonl(s: dict[str, Any], events: list[dict[str, Any]]) -> bytes:
    session = {k: v for k, v in s.items() if k != "id"}
    out = [orjson.dumps({"session": session}).decode()]
    out += [orjson.dumps({"event": {k: v for k, v in e.items() if k != "recall"}}).decode() for e in events]
    return json_text("\n".join(out) + "\n").encode()  # the same values; C1 and bidi as escapes
