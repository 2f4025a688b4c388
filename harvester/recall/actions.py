"""What an agent did, read from its tool calls: the files it read and changed, the commands it ran and how
they ended, and the calls that failed. Every agent names its tools its own way (Claude Code ``Read`` /
``Edit`` / ``Bash``, Codex ``shell_command`` / ``apply_patch``, Gemini CLI ``read_file`` /
``run_shell_command``, opencode ``read`` / ``bash``, Cline ``execute_command``...); the table below sorts
them by what their names say, and the file or command by the argument names agents use for it."""

from __future__ import annotations

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
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_EXIT = re.compile(r"(?:exit(?:ed with)? (?:code|status)|exit_code|returncode)\W{0,3}(-?\d+)", re.IGNORECASE)


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


@dataclass
class Actions:
    """What a session's tool calls did, each item with the event position that shows it."""

    read: OrderedDict[str, int] = field(default_factory=OrderedDict)  # path -> first seq
    changed: OrderedDict[str, list[str]] = field(default_factory=OrderedDict)  # path -> tool names
    commands: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, command, status)
    errors: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, tool, first line of the error)
    other: OrderedDict[str, int] = field(default_factory=OrderedDict)  # tool name -> calls


def actions_of(events: list[dict[str, Any]]) -> Actions:
    """Sort a session's tool calls (events in order) into reads, changes, commands and errors."""
    results = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_result" and e.get("tool_call_id")}
    done = Actions()
    for e in events:
        if e["kind"] == "tool_result" and e.get("is_error"):
            first = next((line for line in (e.get("text") or "").splitlines() if line.strip()), "")
            done.errors.append((e["seq"], e.get("tool_name") or "tool", first[:200]))
        if e["kind"] != "tool_call":
            continue
        kind = kind_of(e.get("tool_name"))
        tool_input = e.get("tool_input")
        if kind == "command":
            command = command_of(tool_input) or e.get("text") or ""
            status = exit_status(results.get(e.get("tool_call_id") or ""))
            done.commands.append((e["seq"], " ".join(command.split())[:300], status))
        elif kind in ("change", "read") and (paths := paths_of(tool_input)):
            for path in paths:
                if kind == "change":
                    done.changed.setdefault(path, []).append(e.get("tool_name") or "edit")
                else:
                    done.read.setdefault(path, e["seq"])
        else:
            name = e.get("tool_name") or "tool"
            done.other[name] = done.other.get(name, 0) + 1
    return done
