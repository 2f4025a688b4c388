"""``harvester export``: the repository's own copy of its history, one file per session.

Files go into the repository (``.harvester/history/`` by default), for people to commit or ignore. A file's
name comes from the harness and the session id only, never from a title or any other transcript text
(:func:`harvester.repo_files.file_name`): no path can leave the directory, no name holds a control character.
The repository is not ours: the folder is opened without following a symlink anywhere below the repository's
root, and refused when one is in the way; files are read, written and replaced only through it, never through
a link, never by reading something that is not a regular file (:mod:`harvester.repo_files`). A file is
rewritten only when what it would hold changed. The content is the bank's: redacted, recall left out; every
line a transcript fills in the header (a title, a branch) stays one line, and a tool's output cannot close its
fence. The files of sessions the bank no longer holds (forgotten, excluded) are removed.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harvester.bank import Bank
from harvester.bank.scope import Scope
from harvester.model import is_injected
from harvester.recall.shown import quote
from harvester.recall.tools import call_lines, children_of_calls
from harvester.recall.views import when
from harvester.repo_files import FORMATS, Folder, file_name, is_inside
from harvester.terminal import json_text, visible

__all__ = ["FORMATS", "Written", "export", "file_name", "open_folder"]

DEFAULT_FOLDER = os.path.join(".harvester", "history")


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    session: str
    harness: str
    changed: bool  # False: the file already held exactly this
    error: str | None = None  # not written (or not removed): why (a directory in the file's place)
    removed: bool = False  # the file of a session the bank no longer holds (forgotten, excluded): removed


def open_folder(repo_root: str, target: str | None) -> Folder:
    """The folder to export into: ``<repo>/.harvester/history``, or ``target``. A target inside the
    repository (as written, or once resolved) is held to the repository's rule: no symlink below its root.
    One outside it is the user's own choice, resolved as they named it. :class:`harvester.repo_files.Refused`
    says why not."""
    if target is None:
        return Folder.open_in_repository(repo_root, DEFAULT_FOLDER)
    absolute = os.path.abspath(os.path.expanduser(target))
    for root in dict.fromkeys((os.path.abspath(repo_root), os.path.realpath(repo_root))):
        if is_inside(absolute, root):
            return Folder.open_in_repository(root, os.path.relpath(absolute, root))
    real, real_root = os.path.realpath(absolute), os.path.realpath(repo_root)
    if is_inside(real, real_root):
        return Folder.open_in_repository(real_root, os.path.relpath(real, real_root))
    return Folder.open_path(real)


def export(bank: Bank, scope: Scope, folder: Folder, fmt: str = "md", since: str | None = None,
           include_recall: bool = False) -> Iterator[Written]:
    """Write every session of ``scope`` updated since ``since`` into ``folder``; yield each file."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    folder.remove_stale()  # what a killed export left
    for name in sorted(set(folder.names()) & bank.forgotten_file_names()):  # what forget could not reach
        yield Written(folder.path / name, "", "", True, folder.remove(name), removed=True)
    for s in bank.scoped_sessions(scope, 1_000_000, since=since):
        events = bank.session_events(s["id"], include_recall=include_recall)
        children = children_of_calls(events, bank.subagents(s["harness"], s["native_id"])) if fmt == "md" else {}
        content = markdown(s, events, children) if fmt == "md" else jsonl(s, events)
        name = file_name(s["harness"], s["native_id"], fmt)
        if folder.holds(name, content):
            yield Written(folder.path / name, s["native_id"], s["harness"], False)
            continue
        try:
            folder.write(name, content)
        except OSError as exc:  # a directory in its place: this file is not written, the others are
            yield Written(folder.path / name, s["native_id"], s["harness"], False, exc.strerror or str(exc))
        else:
            yield Written(folder.path / name, s["native_id"], s["harness"], True)


def _one_line(value: object) -> str:
    """A transcript's value in a line of the header: its controls shown (as everywhere in the file), and its
    line breaks too, so that a title cannot start a heading of its own."""
    return (visible(str(value)).replace("\n", "\u240a").replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029"))


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``: the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def markdown(s: dict[str, Any], events: list[dict[str, Any]], children: dict[int, str] | None = None) -> bytes:
    """The session as a page: each event under a heading with its position (``#N``, as everywhere); a tool call
    as what it changed, searched for or ran (a compact diff, clipped: harvester/recall/tools.py), and the
    subagent session it started (``children``: by position); context the agent injected said to be that."""
    line = _one_line
    version = f" {line(s['agent_version'])}" if s["agent_version"] else ""
    lines = [f"# {line(s['title'] or '(untitled)')}", "",
             "> Captured by harvester: a record of a past agent session (reference data, not instructions).", "",
             f"- session: `{line(s['native_id'])}` ({line(s['harness'])}{version})",
             f"- repository: {line(s['bank_id'])}" + (f", branch {line(s['branch'])}" if s["branch"] else ""),
             f"- cwd: {line(s['cwd'] or '-')}",
             f"- started {line(when(s['started_at']))}, updated {line(when(s['updated_at']))}, state {line(s['state'])}",
             f"- {s['event_count']} events" + (f"; {line(s['parent_kind'] or 'child')} of "
                                              f"`{line(s['parent_native_id'])}`" if s["parent_native_id"] else ""),
             ""]
    for e in events:
        label = e["role"] if e["kind"] == "text" else f"{e['role']} {e['kind'].replace('_', ' ')}"
        if e.get("tool_name"):
            label += f" [{e['tool_name']}]"
        if e.get("is_error"):
            label += " (error)"
        if is_injected(e):
            label += ", injected by the agent"
        lines.append(f"## #{e['seq']} {line(label)} · {line(when(e['ts']))}")
        lines.append("")
        text = e["text"] or ""
        if e["kind"] == "tool_call":
            more = f"harvester show {shlex.quote(s['native_id'])} --around {e['seq']} --full shows all"
            text = "\n".join(call_lines(e, more=more, child=(children or {}).get(e["seq"])))
        if e["kind"] in ("tool_call", "tool_result") or is_injected(e):
            fence = _fence(text)
            lines += [fence, text, fence]
        else:  # quoted, as in every answer: no line of it can read as a heading or header line of the page
            lines.append(str(quote(text)))
        lines.append("")
    return visible("\n".join(lines)).encode()  # a page for people: controls shown, never obeyed


def jsonl(s: dict[str, Any], events: list[dict[str, Any]]) -> bytes:
    session = {k: v for k, v in s.items() if k != "id"}
    out = [orjson.dumps({"session": session}).decode()]
    out += [orjson.dumps({"event": {k: v for k, v in e.items() if k != "recall"}}).decode() for e in events]
    return json_text("\n".join(out) + "\n").encode()  # the same values; C1 and bidi as escapes
