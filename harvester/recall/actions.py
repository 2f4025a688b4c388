"""What an agent did, read from its tool calls: the files it read and changed (with how many lines each change
added and removed), the commands it ran and how they ended, and the calls that failed with the line that says
why. Every agent names its tools its own way (Claude Code ``Read`` / ``Edit`` / ``Bash``, Codex
``shell_command`` / ``apply_patch``, Gemini CLI ``read_file`` / ``run_shell_command``, opencode ``read`` /
``bash``, Cline ``execute_command``...); the table below sorts them by what their names say, and the file or
command by the argument names agents use for it."""

from __future__ import annotations

import difflib
import posixpath
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

# Tool name words, in the order they are tried: a name is a command, else a change, else a read.
COMMAND_WORDS = ("shell", "bash", "command", "terminal", "exec", "run_cmd", "powershell")
CHANGE_WORDS = ("write", "edit", "replace", "patch", "create", "insert", "delete", "rename", "move", "apply")
READ_WORDS = ("read", "view", "cat", "open", "fetch_file", "notebook")
PATH_KEYS = ("file_path", "path", "filePath", "filepath", "file", "target_file", "absolute_path", "filename",
             "notebook_path", "targetFile", "relative_path", "file_name")
COMMAND_KEYS = ("command", "cmd", "commandLine", "script", "input")
# A change's text, by the argument names agents use: the text replaced and its replacement, or a whole file.
OLD_KEYS = ("old_string", "oldString", "old_str", "old_text", "oldText")
NEW_KEYS = ("new_string", "newString", "new_str", "new_text", "newText")
WHOLE_KEYS = ("content", "file_text", "contents", "text")
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_EXIT = re.compile(r"(?:exit(?:ed with)? (?:code|status)|exit_code|returncode)\W{0,3}(-?\d+)", re.IGNORECASE)
# The line of a failure that says why: an error's own line first (a test's FAILED line, "KeyError: ...",
# "fatal: ..."), else one that names a failure in words; the "Exit code 1" header says nothing of why.
_WHY = (re.compile(r"^(?:FAILED|ERROR)\b|^E\s|\w(?:Error|Exception)\b|^(?:fatal|error|panic)\b|command not found",
                   re.IGNORECASE),
        re.compile(r"error|fail|denied|not found|no such|cannot|can't|invalid|refused|timed out|exception",
                   re.IGNORECASE))
_HEADER = re.compile(r"^(?:Exit code -?\d+|Error:?)$", re.IGNORECASE)
DIFF_LINES = 2000  # beyond this many lines a side, a change is counted as everything replaced (no diff computed)


def kind_of(tool_name: str | None) -> str:
    """"command", "change", "read" or "other", from what the tool's name says."""
    name = (tool_name or "").lower()
    for kind, words in (("command", COMMAND_WORDS), ("change", CHANGE_WORDS), ("read", READ_WORDS)):
        if any(w in name for w in words):
            return kind
    return "other"


def paths_of(tool_input: Any) -> list[str]:
    """The files a call names: a path argument, or the files an apply_patch touches."""
    out: list[str] = []
    if isinstance(tool_input, dict):
        for key in PATH_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                out.append(value)
                break
        for value in tool_input.values():
            if isinstance(value, str) and "*** " in value:
                out += _PATCHED.findall(value)
    elif isinstance(tool_input, str) and "*** " in tool_input:
        out += _PATCHED.findall(tool_input)
    return [p.strip() for p in out]


def command_of(tool_input: Any) -> str | None:
    if isinstance(tool_input, str):
        return tool_input
    if isinstance(tool_input, dict):
        for key in COMMAND_KEYS:
            value = tool_input.get(key)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(value)
            if isinstance(value, str) and value:
                return value
    return None


def _lines(text: str) -> list[str]:
    return text.splitlines() if text else []


def _replaced(old: str, new: str) -> tuple[int, int]:
    """Lines added and removed by replacing ``old`` with ``new``, as a diff counts them."""
    before, after = _lines(old), _lines(new)
    if len(before) > DIFF_LINES or len(after) > DIFF_LINES:
        return len(after), len(before)
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def _patch_stat(body: str) -> dict[str, tuple[int, int]]:
    """Lines added and removed per file by an apply_patch body (``*** Update File: path`` sections)."""
    out: dict[str, tuple[int, int]] = {}
    path = None
    for line in body.splitlines():
        found = _PATCHED.match(line)
        if found:
            path = found[1].strip()
            out.setdefault(path, (0, 0))
        elif path is not None and not line.startswith("***"):
            added, removed = out[path]
            if line.startswith("+"):
                out[path] = (added + 1, removed)
            elif line.startswith("-"):
                out[path] = (added, removed + 1)
    return out


def diff_stat(tool_input: Any) -> dict[str, tuple[int, int]]:
    """Lines added and removed per file by one change call, read from its input: the text replaced and its
    replacement (Edit, replace, str_replace; a list of ``edits``), a whole file written (all added: what it
    held before is not in the call), or an apply_patch body. A call it cannot read says nothing ({})."""
    if isinstance(tool_input, str):
        return _patch_stat(tool_input) if "*** " in tool_input else {}
    if not isinstance(tool_input, dict):
        return {}
    patched = {p: s for value in tool_input.values() if isinstance(value, str) and "*** " in value
               for p, s in _patch_stat(value).items()}
    if patched:
        return patched
    paths = paths_of(tool_input)
    if not paths:
        return {}
    edits = tool_input.get("edits")
    pairs = [e for e in edits if isinstance(e, dict)] if isinstance(edits, list) else [tool_input]
    added = removed = 0
    counted = False
    for edit in pairs:
        old = next((edit[k] for k in OLD_KEYS if isinstance(edit.get(k), str)), None)
        new = next((edit[k] for k in NEW_KEYS if isinstance(edit.get(k), str)), None)
        if old is not None or new is not None:
            plus, minus = _replaced(old or "", new or "")
            added, removed, counted = added + plus, removed + minus, True
    if not counted:
        whole = next((tool_input[k] for k in WHOLE_KEYS if isinstance(tool_input.get(k), str)), None)
        if whole is None:
            return {}
        added = len(_lines(whole))
    return {paths[0]: (added, removed)}


def exit_status(result: dict[str, Any] | None) -> str:
    """How a command ended, as its result says: "exit N", "failed", "ok", or "no result" (never answered)."""
    if result is None:
        return "no result"
    meta = result.get("meta") or {}
    for key in ("exit_code", "exitCode", "returncode"):
        if isinstance(meta.get(key), int):
            return f"exit {meta[key]}"
    found = _EXIT.search((result.get("text") or "")[:4000])
    if found:
        return f"exit {found[1]}"
    return "failed" if result.get("is_error") else "ok"


def failed(status: str) -> bool:
    return status == "failed" or (status.startswith("exit ") and status != "exit 0")


def error_line(text: str | None) -> str:
    """The line of a failure's output that says why (see _WHY), at most 200 characters."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip() and not _HEADER.match(line.strip())]
    for pattern in _WHY:
        chosen = next((line for line in reversed(lines) if pattern.search(line)), None)
        if chosen is not None:
            return chosen[:200]
    return (lines[-1] if lines else "")[:200]


def relative(path: str, *bases: str | None) -> str:
    """``path`` relative to the first of ``bases`` (the repository's root, the session's cwd) it is inside; a
    relative path is taken from the last base (the cwd, where the agent ran)."""
    cwd = next((b for b in reversed(bases) if b), None)
    whole = posixpath.normpath(path if path.startswith("/") or not cwd else posixpath.join(cwd, path))
    for base in bases:
        if base and (whole == base or whole.startswith(base.rstrip("/") + "/")):
            return posixpath.relpath(whole, base)
    return whole if path.startswith("/") else path


@dataclass
class Change:
    """What a session did to one file: the tools, the lines added and removed (as far as the calls say), and
    the positions of its first and last change."""

    tools: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    first: int = 0
    last: int = 0


@dataclass
class Failure:
    """A command that failed (``command`` set) or a tool call that returned an error; ``seq``: its call's
    position (its result's when the call is not recorded)."""

    seq: int
    tool: str
    why: str
    command: str | None = None
    status: str = "failed"
    target: str | None = None  # the file a failed read or change named


@dataclass
class Actions:
    """What a session's tool calls did, each item with the event position that shows it."""

    read: OrderedDict[str, int] = field(default_factory=OrderedDict)  # path -> first seq
    changed: OrderedDict[str, Change] = field(default_factory=OrderedDict)  # path -> what was done to it
    commands: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, command, status)
    failures: list[Failure] = field(default_factory=list)  # failed commands and tool errors, in order
    other: OrderedDict[str, int] = field(default_factory=OrderedDict)  # tool name -> calls


def actions_of(events: list[dict[str, Any]], root: str | None = None, cwd: str | None = None) -> Actions:
    """Sort a session's tool calls (events in order) into reads, changes, commands and failures; paths made
    relative to ``root`` (the repository) or ``cwd`` when inside them."""
    results = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_result" and e.get("tool_call_id")}
    calls = {e["tool_call_id"] for e in events if e["kind"] == "tool_call" and e.get("tool_call_id")}
    done = Actions()
    for e in events:
        if e["kind"] == "tool_result" and e.get("is_error") and e.get("tool_call_id") not in calls:
            done.failures.append(Failure(e["seq"], e.get("tool_name") or "tool", error_line(e.get("text"))))
        if e["kind"] != "tool_call":
            continue
        kind = kind_of(e.get("tool_name"))
        tool_input = e.get("tool_input")
        result = results.get(e.get("tool_call_id") or "")
        name = e.get("tool_name") or "tool"
        if kind == "command":
            command = " ".join((command_of(tool_input) or e.get("text") or "").split())[:300]
            status = exit_status(result)
            done.commands.append((e["seq"], command, status))
            if failed(status):
                done.failures.append(Failure(e["seq"], name, error_line((result or {}).get("text")), command, status))
            continue
        paths = paths_of(tool_input) if kind in ("change", "read") else []
        if result is not None and result.get("is_error"):  # done nothing: not a read or a change
            target = relative(paths[0], root, cwd) if paths else None
            done.failures.append(Failure(e["seq"], name, error_line(result.get("text")), target=target))
            continue
        if not paths:
            done.other[name] = done.other.get(name, 0) + 1
            continue
        stats = diff_stat(tool_input) if kind == "change" else {}
        for path in paths:
            shown = relative(path, root, cwd)
            if kind == "read":
                done.read.setdefault(shown, e["seq"])
                continue
            change = done.changed.setdefault(shown, Change(first=e["seq"]))
            change.tools.append(name)
            change.last = e["seq"]
            added, removed = stats.get(path, (0, 0))
            change.added, change.removed = change.added + added, change.removed + removed
    return done
