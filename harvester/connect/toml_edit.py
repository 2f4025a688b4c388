"""Codex's ``config.toml``: our ``[mcp_servers.<name>]`` table, added, replaced or removed as text.

tomlkit keeps a document's comments and order, but re-rendering a document it edited moves blank lines
around (a table appended after another leaves a blank line behind when it is removed again). So the
edit is textual, as in :mod:`harvester.connect.jsonc`: our table is a block of lines of its own
(``[mcp_servers.harvester]`` and any ``[mcp_servers.harvester.*]``), appended at the end of the file
the way ``codex mcp add`` appends it; tomlkit parses the file before and after and renders our table,
and the result must read as the original plus (or minus) exactly our entry, else nothing is written.
"""

from __future__ import annotations

import re
from typing import Any

# tomlkit is imported where a TOML text is read or written: status, which reads nothing of it unless an agent's
# TOML config exists, starts sooner.

_HEADER = re.compile(r"^[ \t]*\[(?!\[)(?P<key>[^\]\n]+)\][ \t]*(?:#.*)?$")
_ANY_HEADER = re.compile(r"^[ \t]*\[")


class TomlEditError(ValueError):
    pass


def load(text: str) -> dict[str, Any]:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text).unwrap()
    except TOMLKitError as exc:
        raise TomlEditError(str(exc)) from exc


def get(text: str, path: tuple[str, ...]) -> Any:
    value: Any = load(text)
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def set_table(text: str, path: tuple[str, ...], table: dict[str, Any]) -> str:
    """``text`` with the table at ``path`` (``("mcp_servers", "harvester")``) equal to ``table``."""
    before = load(text)
    if get(text, path) == table:
        return text
    expected = _with(before, path, table)
    import tomlkit

    block = tomlkit.dumps(_nest(path, table))
    lines = text.splitlines(keepends=True)
    spans = _sections(lines, path)
    if spans:  # ours, from an earlier connect: the new block goes where the first one was
        first = spans[0][0]
        kept = [line for i, line in enumerate(lines) if not any(a <= i < b for a, b in spans)]
        insert_at = first - sum(b - a for a, b in spans if b <= first)
        new = "".join(kept[:insert_at]) + block + "".join(kept[insert_at:])
    else:
        head = text if not text or text.endswith("\n") else text + "\n"
        new = head + ("\n" if head.strip() else "") + block
    return _checked(new, expected)


def delete_table(text: str, path: tuple[str, ...]) -> str:
    """``text`` without the table at ``path``, and without the blank line that set it apart."""
    before = load(text)
    if get(text, path) is None:
        return text
    expected = _without(before, path)
    lines = text.splitlines(keepends=True)
    spans = _sections(lines, path)
    if not spans:
        raise TomlEditError(f"{'.'.join(path)} is not a table of its own ([{'.'.join(path)}]); edit it by hand")
    drop = {i for a, b in spans for i in range(a, b)}
    first, last_end = spans[0][0], spans[-1][1]
    followed_by_gap = last_end == len(lines) or not lines[last_end].strip()
    if followed_by_gap and first > 0 and not lines[first - 1].strip():
        drop.add(first - 1)  # the blank line that set the block apart
    new = "".join(line for i, line in enumerate(lines) if i not in drop)
    if load(new) == _without(before, path, prune=False):  # an explicit [mcp_servers] header stays
        return new
    return _checked(new, expected)

def _sections(lines: list[str], path: tuple[str, ...]) -> list[tuple[int, int]]:
    """Line spans ``[start, end)`` of the sections whose header is ``path`` or below it."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for index, line in enumerate(lines):
        if not _ANY_HEADER.match(line):
            continue
        header = _HEADER.match(line.rstrip("\r\n"))
        ours = header is not None and _header_path(header.group("key"))[:len(path)] == path
        if start is not None:
            spans.append((start, index))
            start = None
        if ours:
            start = index
    if start is not None:
        spans.append((start, len(lines)))
    return [(a, _content_end(lines, a, b)) for a, b in spans]


def _content_end(lines: list[str], start: int, end: int) -> int:
    """Where a section's own lines end: blank and comment lines before the next header are the next's."""
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _header_path(key: str) -> tuple[str, ...]:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        value: Any = tomlkit.parse(f"{key} = 0").unwrap()
    except TOMLKitError:
        return ()
    path: list[str] = []
    while isinstance(value, dict) and len(value) == 1:
        name, value = next(iter(value.items()))
        path.append(name)
    return tuple(path)


def _nest(path: tuple[str, ...], table: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = table
    for key in reversed(path):
        nested = {key: nested}
    return nested


def _with(value: dict[str, Any], path: tuple[str, ...], new: Any) -> dict[str, Any]:
    copy = dict(value)
    inner = copy.get(path[0])
    copy[path[0]] = _with(inner if isinstance(inner, dict) else {}, path[1:], new) if len(path) > 1 else new
    return copy


def _without(value: dict[str, Any], path: tuple[str, ...], prune: bool = True) -> dict[str, Any]:
    copy = dict(value)
    if len(path) == 1:
        copy.pop(path[0], None)
        return copy
    inner = _without(copy[path[0]], path[1:], prune)
    if inner or not prune:
        copy[path[0]] = inner
    else:
        del copy[path[0]]  # [mcp_servers] held only ours: it was never a table of its own
    return copy


def _checked(new: str, expected: dict[str, Any]) -> str:
    if load(new) != expected:
        raise TomlEditError("the edit would change more than our entry (please report this file's layout)")
    return new
