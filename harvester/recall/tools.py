"""What a tool call did, by family, read from the normalized event: the one view every reader shows.

Agents name their tools and arguments their own way; the calls fall into a few families, told apart by the
shape of the input first (an old and a new string are an edit whatever the tool is called) and by the name
after that (:func:`harvester.recall.actions.kind_of`):

- ``edit``: old → new strings (Claude Code ``Edit``/``MultiEdit``, Gemini CLI ``replace``, opencode ``edit``,
  Copilot ``str_replace``...), or SEARCH/REPLACE blocks (Cline ``replace_in_file``, Roo ``apply_diff``);
- ``write``: a path and the whole content written;
- ``patch``: a patch body, already a diff (Codex ``apply_patch``);
- ``search``: a pattern or query and where (``Grep``, ``Glob``, ``grep_search``, ``web_search``...);
- ``command``: a command line;
- ``read``: a path read;
- ``agent``: a task handed to a subagent (the child session, when the bank can link it: :func:`children_of_calls`);
- ``other``.

:func:`tool_call` makes the view (:class:`ToolCall`); :func:`call_lines` renders a call for a reader: its
one-line text (``Edit: path``), then what that leaves out, as plain lines: a compact unified diff (old → new, clipped with a count), a
write's size and head, a search's pattern and path, a command. The lines are transcript text: a reader makes
them visible (``show``), quotes them (answers: :mod:`harvester.recall.shown`) or fences them (export).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harvester.recall.actions import kind_of

Family = Literal["edit", "write", "patch", "search", "command", "read", "agent", "other"]

# Argument names, compared in lower case (Antigravity writes TargetFile, CommandLine...).
PATH_KEYS = ("file_path", "path", "filepath", "file", "target_file", "absolute_path", "filename", "notebook_path",
             "targetfile", "relative_path", "file_name", "absolutepath", "dir_path", "directory")
PAIR_KEYS = (("old_string", "new_string"), ("oldstring", "newstring"), ("old_str", "new_str"),
             ("old_text", "new_text"), ("oldtext", "newtext"), ("targetcontent", "replacementcontent"),
             ("find", "replace"), ("search", "replace"))
CONTENT_KEYS = ("content", "file_text", "filecontent", "contents", "modifiedcontent", "code_edit", "newcontent")
COMMAND_KEYS = ("command", "cmd", "commandline", "script", "commands")
PATTERN_KEYS = ("pattern", "regex", "query", "queries", "search_term", "searchterm", "glob_pattern", "q")
FILTER_KEYS = ("glob", "include", "include_pattern", "file_pattern")
TASK_KEYS = ("prompt", "message", "task", "goal", "objective", "initialprompt", "instructions", "payload",
             "description")
# Tool names (lower case, the part after a namespace such as ``multi_agent_v1.``) that hand a task to a subagent.
AGENT_NAMES = frozenset(("task", "agent", "subagent", "new_task", "spawn_agent", "delegate_task", "invoke_subagent",
                         "runsubagent", "run_subagent", "dispatch_agent", "launch_agent", "spawn_subagent"))
SEARCH_WORDS = ("grep", "glob", "search", "find", "ripgrep", "lookup")
# A str_replace_editor-style tool says what it does in its "command" argument.
EDITOR_COMMANDS = {"view": "read", "create": "write", "write": "write", "str_replace": "edit", "insert": "edit",
                   "undo_edit": "edit"}
_BLOCK = re.compile(r"(?:<<<<<<<|-------) SEARCH\n(?::start_line:\s*\d+\n-------\n)?(.*?)\n?=======\n(.*?)\n?"
                    r"(?:>>>>>>>|\+\+\+\+\+\+\+) REPLACE", re.DOTALL)
_PATCH = re.compile(r"^\*\*\* (?:Begin Patch|(?:Update|Add|Delete) File: )", re.MULTILINE)
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)

SHOWN_LINES = 12  # lines of a diff, a write's head or a task shown before "… N more lines"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call by family; only the fields its family has are set."""

    family: Family
    name: str
    paths: tuple[str, ...] = ()
    edits: tuple[tuple[str, str], ...] = ()  # edit: (old, new) pairs, in order
    content: str | None = None  # write: what was written
    patch: str | None = None  # patch: the body (a diff already)
    pattern: str | None = None  # search: the pattern or query
    filters: tuple[str, ...] = ()  # search: a glob or file type it was limited to
    command: str | None = None  # command: the command line
    task: str | None = None  # agent: what the subagent was asked


def _lowered(tool_input: Any) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in tool_input.items()} if isinstance(tool_input, Mapping) else {}


def _text(value: Any) -> str | None:
    """A string argument, or a list of strings (argv, several queries) as one line."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return " ".join(value)
    return None


def _first(args: dict[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = _text(args.get(key))
        if value:
            return value
    return None


def _paths(args: dict[str, Any]) -> tuple[str, ...]:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return (value,)
    for key in ("paths", "file_paths", "files"):
        value = args.get(key)
        if isinstance(value, list) and value:
            found = tuple(p for v in value if (p := v if isinstance(v, str) else _first(_lowered(v), PATH_KEYS)))
            if found:
                return found
    return ()


def _pairs(args: dict[str, Any], depth: int = 0) -> list[tuple[str, str]]:
    """Old → new strings: a pair of arguments, a list of them (MultiEdit ``edits``), or SEARCH/REPLACE blocks.
    Looked for two lists deep at most: a transcript's JSON can be nested past any stack."""
    for old_key, new_key in PAIR_KEYS:
        old, new = args.get(old_key), args.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            return [(old, new)]
    if isinstance(args.get("new_str"), str) and "insert_line" in args:  # an editor's insert
        return [("", args["new_str"])]
    pairs: list[tuple[str, str]] = []
    for value in args.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping) and depth < 2:
                    pairs += _pairs(_lowered(item), depth + 1)
                elif isinstance(item, str):
                    pairs += _BLOCK.findall(item)
        elif isinstance(value, str) and "SEARCH\n" in value:
            pairs += _BLOCK.findall(value)
    return pairs


def _patch_body(tool_input: Any, args: dict[str, Any]) -> str | None:
    for value in (tool_input, *args.values()):
        if isinstance(value, str) and _PATCH.search(value):
            return value
    return None


def _last_word(name: str) -> str:
    """``multi_agent_v1.spawn_agent`` -> ``spawn_agent``; ``mcp__x__task`` -> ``task``."""
    return re.split(r"\.|__", name.lower())[-1]


def tool_call(event: Mapping[str, Any]) -> ToolCall:
    """The family view of a tool_call event (as the bank returns it: ``tool_name``, ``tool_input``)."""
    name = event.get("tool_name") or ""
    tool_input = event.get("tool_input")
    args = _lowered(tool_input)
    paths = _paths(args)
    kind = kind_of(name)
    editor = args.get("command") if isinstance(args.get("command"), str) else None
    if editor in EDITOR_COMMANDS and paths:
        family = EDITOR_COMMANDS[editor]
        if family == "read":
            return ToolCall("read", name, paths)
        if family == "write" and (content := _first(args, CONTENT_KEYS)) is not None:
            return ToolCall("write", name, paths, content=content)
        return ToolCall("edit", name, paths, edits=tuple(_pairs(args)))
    if (body := _patch_body(tool_input, args)) is not None:
        return ToolCall("patch", name, paths or tuple(p.strip() for p in _PATCHED.findall(body)), patch=body)
    if pairs := _pairs(args):
        return ToolCall("edit", name, paths, edits=tuple(pairs))
    content = next((args[k] for k in CONTENT_KEYS if isinstance(args.get(k), str)), None)
    if content is not None and (paths or kind == "change"):
        return ToolCall("write", name, paths, content=content)
    if _last_word(name) in AGENT_NAMES:
        return ToolCall("agent", name, paths, task=_task(args))
    if kind == "command":
        return ToolCall("command", name, paths, command=_command(tool_input, args))
    pattern = _first(args, PATTERN_KEYS)
    if pattern and (any(w in name.lower() for w in SEARCH_WORDS) or kind == "other"):
        filters = tuple(v for k in FILTER_KEYS if (v := _text(args.get(k))))
        return ToolCall("search", name, paths, pattern=pattern, filters=filters)
    if kind == "read" and paths:
        return ToolCall("read", name, paths)
    if kind == "change" and paths:
        return ToolCall("edit", name, paths)
    return ToolCall("other", name, paths)


def _command(tool_input: Any, args: dict[str, Any]) -> str | None:
    if isinstance(tool_input, list | str):
        return _text(tool_input)
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            value = [_text(v) or "" for v in value]  # several argvs
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return ("\n" if key == "commands" else " ").join(value)
        if isinstance(value, str) and value:
            return value
    return None


def _task(args: dict[str, Any]) -> str | None:
    task = _first(args, TASK_KEYS)
    if task is None:  # Antigravity: {"Subagents": [{"Task": ...}]}
        for value in args.values():
            if isinstance(value, list) and value and isinstance(value[0], Mapping):
                task = _first(_lowered(value[0]), TASK_KEYS)
                break
    return task


# --- what a reader is shown -------------------------------------------------------------------------------

def call_lines(event: Mapping[str, Any], full: bool = False, more: str = "show --full shows all",
               child: str | None = None) -> list[str]:
    """A tool_call event as a reader is shown it, in plain lines (transcript text: the caller makes them visible,
    quotes or fences them): its one-line text (``Edit: path``; a patch's files instead of its body), then what
    the text leaves out: a compact unified diff of an edit, a write's size and head, a patch, a search's pattern
    and path, a command, a task. ``full``: nothing clipped; else each part is clipped at SHOWN_LINES with a
    count and ``more`` (how to see the rest). ``child``: the subagent session the call started, when known."""
    call = tool_call(event)
    said = event.get("text") or ""
    if call.family == "patch" and call.patch and call.patch in said:
        files = [p.strip() for p in _PATCHED.findall(call.patch)]
        head = [f"{call.name}: {', '.join(files)}" if files else call.name]
    else:
        head = _clipped(lines_of(said) or [""], None if full else SHOWN_LINES, more)
    return head + details(call, said, full, more, child)


def details(call: ToolCall, said: str, full: bool = False, more: str = "show --full shows all",
            child: str | None = None) -> list[str]:
    """What the call's text (``said``) leaves out, as plain lines; see :func:`call_lines`."""
    limit = None if full else SHOWN_LINES
    lines: list[str] = []
    if call.family == "edit" and call.edits:
        lines = _clipped(_diff(call.edits), limit, more)
    elif call.family == "write" and call.content is not None:
        written = lines_of(call.content)
        size = len(call.content.encode("utf-8", "surrogatepass"))
        lines = [f"{_where(call, said)}{len(written):,} {'line' if len(written) == 1 else 'lines'}, "
                 f"{_size(size)}:", *_clipped(["+" + line for line in written], limit, more)]
    elif call.family == "patch" and call.patch:
        body = [line for line in lines_of(call.patch) if line not in ("*** Begin Patch", "*** End Patch")]
        lines = _clipped(body, limit, more)
    elif call.family == "search" and call.pattern:
        where = f" in {', '.join(call.paths)}" if call.paths else ""
        limited = f" ({', '.join(call.filters)})" if call.filters else ""
        line = f"pattern {call.pattern}{where}{limited}"
        lines = [] if line in said else [line]
    elif call.family == "command" and call.command and " ".join(call.command.split()) not in " ".join(said.split()):
        lines = _clipped(lines_of("$ " + call.command), limit, more)
    elif call.family == "agent" and call.task and call.task.strip() not in said:
        lines = _clipped(lines_of("task: " + call.task), limit, more)
    if child:
        lines.append(f"→ subagent session {child}")
    return lines


def lines_of(text: str) -> list[str]:
    """``text``'s lines, split at ``\n`` (and ``\r\n``) only: str.splitlines also splits at ``\r``,
    ``\x1c``-``\x1e`` and ``\x85``, control characters a reader must be shown (harvester.terminal.visible), not
    given as line breaks."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _where(call: ToolCall, said: str) -> str:
    missing = [p for p in call.paths if p not in said]
    return f"{', '.join(missing)}: " if missing else ""


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KB"


def _diff(edits: Iterable[tuple[str, str]]) -> list[str]:
    """Each old → new pair as a unified diff of two lines of context; ``@@`` between pairs and hunks (their
    line numbers would count from the start of the old string, not of the file: left out)."""
    out: list[str] = []
    for old, new in edits:
        hunks = list(difflib.unified_diff(lines_of(old), lines_of(new), lineterm="", n=2))[2:]  # no header
        out += ["@@" if line.startswith("@@") else line for line in hunks]  # a content line starts " ", - or +
    return out[1:] if out[:1] == ["@@"] else out  # the first hunk needs no separator


def _clipped(lines: list[str], limit: int | None, more: str) -> list[str]:
    if limit is None or len(lines) <= limit:
        return lines
    return [*lines[: limit - 1], f"… {len(lines) - limit + 1} more lines ({more})"]


# --- subagents --------------------------------------------------------------------------------------------

_LINK_KEYS = ("toolUseId", "tool_use_id", "parent_tool_call_id", "spawned_by", "tool_call_id", "toolCallId")


def children_of_calls(events: list[dict[str, Any]], children: list[dict[str, Any]]) -> dict[int, str]:
    """Which subagent session each call of a session started: ``{seq of the call: child's native id}``.
    ``children``: the session's subagent sessions (``native_id``, ``meta``, ``started_at``, ``first_text``: as
    SqliteRecall.subagents gives them). A child is linked by what its agent recorded: the call's id in the child's
    meta or at the end of its id, the child's id in the call's result (its meta, or its text: Codex's
    ``agent_id``) or input, the call's task as the child's first text; else, for calls that hand out a task, by
    time: each such call left takes the first child left that started after the event before it."""
    if not children:
        return {}
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = {e["tool_call_id"]: e for e in events if e["kind"] == "tool_result" and e.get("tool_call_id")}
    left = {c["native_id"]: c for c in children}
    linked: dict[int, str] = {}

    def take(call: dict[str, Any], child: str) -> None:
        linked[call["seq"]] = child
        left.pop(child, None)

    for call in calls:  # by the call's id, as the agent recorded it
        call_id = call.get("tool_call_id")
        result = results.get(call_id or "")
        named = (result or {}).get("meta") or {}
        for child_id, child in list(left.items()):
            meta = child.get("meta") or {}
            if (call_id and (any(meta.get(k) == call_id for k in _LINK_KEYS) or _ends_with_id(child_id, call_id))) \
                    or named.get("subagent_session") == child_id:
                take(call, child_id)
                break
    for call in calls:  # by the child's id in the call's result or input
        if call["seq"] in linked or not left:
            continue
        result = results.get(call.get("tool_call_id") or "")
        said = f"{(result or {}).get('text') or ''}\n{call.get('tool_input') or ''}"
        for child_id in list(left):
            tail = re.split(r"[:/]", child_id)[-1]
            if child_id in said or (len(tail) >= 6 and re.search(rf"(?<![\w-]){re.escape(tail)}(?![\w-])", said)):
                take(call, child_id)
                break
    for call in calls:  # by the task the call gave, which the child's first event holds
        task = " ".join((tool_call(call).task or "").split())
        if call["seq"] in linked or not left or len(task) < 12:
            continue
        for child_id, child in list(left.items()):
            first = " ".join((child.get("first_text") or "").split())
            if first and (first == task or first.startswith(task[:300]) or task.startswith(first[:300])):
                take(call, child_id)
                break
    # By time: an agent may stamp the call when it returns, after its subagent started (Kimi): a child that
    # started after the event before the call.
    before = {e["seq"]: previous.get("ts") or "" for previous, e in zip([{}, *events], events, strict=False)}
    spawning = [c for c in calls if c["seq"] not in linked and tool_call(c).family == "agent"]
    by_start = sorted(left.values(), key=lambda c: c.get("started_at") or "")
    for call in spawning:
        start = before.get(call["seq"]) or call.get("ts") or ""
        child = next((c for c in by_start if c["native_id"] in left and (c.get("started_at") or "") >= start), None)
        if child is not None:
            take(call, child["native_id"])
    return linked


def _ends_with_id(child_id: str, call_id: str) -> bool:
    """``parent:toolu_01B``, ``m2$$tc2``: the call's id ends the child's, after a separator, and is no number or
    letter of a name (``x:agent-1`` does not end with the id ``1``)."""
    if child_id == call_id:
        return True
    return len(call_id) >= 3 and child_id.endswith(call_id) and not child_id[-len(call_id) - 1].isalnum()


def grouped(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """The rows in their order, each subagent session moved under the listed session that started it (oldest
    first there), with its depth: ``[(row, 0), (child, 1), ...]``. A subagent whose parent is not listed keeps
    its place."""
    listed = {(r["harness"], r["native_id"]) for r in rows}
    children: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        parent = (r["harness"], r.get("parent_native_id"))
        if r.get("parent_kind") == "subagent" and parent in listed and parent != (r["harness"], r["native_id"]):
            children.setdefault(parent, []).append(r)  # type: ignore[arg-type]
    under = {id(c) for kids in children.values() for c in kids}
    out: list[tuple[dict[str, Any], int]] = []
    placed: set[int] = set()

    def place(row: dict[str, Any], depth: int) -> None:
        if id(row) in placed:  # a cycle of parents (damaged ids) places each row once
            return
        placed.add(id(row))
        out.append((row, depth))
        kids = children.get((row["harness"], row["native_id"]), [])
        for kid in sorted(kids, key=lambda k: k.get("started_at") or ""):
            place(kid, depth + 1)

    for r in rows:
        if id(r) not in under:
            place(r, 0)
    for r in rows:  # children of a cycle, never reached from a top row
        place(r, 0)
    return out
