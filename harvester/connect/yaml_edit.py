"""Continue's ``config.yaml``: our item in its top-level ``mcpServers:`` list, added or removed as lines.

A round-tripping YAML library re-indents every sequence of the file to one style, so, as for JSON and
TOML, the edit is textual: our item is a block of lines of its own, rendered by PyYAML, put after the
last item of the ``mcpServers:`` block (or, with no such key, a new ``mcpServers:`` block at the end of
the file). PyYAML reads the file before and after; the result must read as the original plus (or
minus) exactly our item, else nothing is written. A list written inline (``mcpServers: [...]``) is
refused rather than rewritten.
"""

from __future__ import annotations

import re
from typing import Any

# yaml is imported where a YAML text is read or written (as tomlkit in toml_edit).

_KEY = re.compile(r"""^(?:mcpServers|"mcpServers"|'mcpServers')[ \t]*:[ \t]*(?P<rest>[^\n]*?)[ \t]*(?:\n|$)""",
                  re.MULTILINE)
_ITEM = re.compile(r"^(?P<indent>[ \t]*)-(?:[ \t]|$)")
_DEFAULT_INDENT = "  "


class YamlEditError(ValueError):
    pass


def load(text: str) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise YamlEditError(" ".join(str(exc).split())) from exc
    except RecursionError:  # PyYAML composes nodes recursively and sets no depth limit of its own
        raise YamlEditError("the document is nested too deeply to read") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise YamlEditError("the document is not a mapping")
    return data


def servers(text: str) -> list[Any]:
    value = load(text).get("mcpServers")
    if value is None:
        return []
    if not isinstance(value, list):
        raise YamlEditError("mcpServers is not a list")
    return value


def get(text: str, name: str) -> dict[str, Any] | None:
    return next((s for s in servers(text) if isinstance(s, dict) and s.get("name") == name), None)


def set_item(text: str, item: dict[str, Any]) -> str:
    """``text`` with the ``mcpServers`` item named ``item["name"]`` equal to ``item``."""
    data, current = load(text), servers(text)
    index = _index(current, item["name"])
    if index is not None and current[index] == item:
        return text
    wanted = [*current[:index], item, *current[index + 1:]] if index is not None else [*current, item]
    text = text if not text or text.endswith("\n") else text + "\n"  # our lines start on a line of their own
    lines = text.splitlines(keepends=True)
    key_line = _key_line(text, lines)
    if key_line is None:
        new = text + "mcpServers:\n" + _render(item, _DEFAULT_INDENT)
    else:
        items, _, indent = _items(lines, key_line, len(current))
        if index is not None:
            start, end = items[index]
            new = "".join(lines[:start]) + _render(item, indent) + "".join(lines[end:])
        else:
            at = items[-1][1] if items else key_line + 1
            new = "".join(lines[:at]) + _render(item, indent) + "".join(lines[at:])
    return _checked(new, {**data, "mcpServers": wanted})


def delete_item(text: str, name: str) -> str:
    """``text`` without the item named ``name``; a ``mcpServers:`` key left with no item goes too."""
    data, current = load(text), servers(text)
    index = _index(current, name)
    if index is None:
        return text
    remaining = current[:index] + current[index + 1:]
    lines = text.splitlines(keepends=True)
    key_line = _key_line(text, lines)
    assert key_line is not None  # the list has items, so the key is there
    items, _, _ = _items(lines, key_line, len(current))
    start, end = items[index]
    drop = set(range(start, end))
    expected = {**data, "mcpServers": remaining}
    if not remaining:
        drop.add(key_line)
        expected = {k: v for k, v in data.items() if k != "mcpServers"}
    return _checked("".join(line for i, line in enumerate(lines) if i not in drop), expected)


def _index(current: list[Any], name: str) -> int | None:
    return next((i for i, s in enumerate(current) if isinstance(s, dict) and s.get("name") == name), None)


def _key_line(text: str, lines: list[str]) -> int | None:
    """The line of the top-level ``mcpServers:`` key, which must hold a block list (or nothing yet)."""
    found = list(_KEY.finditer(text))
    if not found:
        return None
    if len(found) > 1:
        raise YamlEditError("mcpServers appears more than once")
    rest = found[0].group("rest")
    if rest and not rest.startswith("#"):
        raise YamlEditError(f"mcpServers is written inline ({rest}); make it a block list to let us add to it")
    return text.count("\n", 0, found[0].start())


def _items(lines: list[str], key_line: int, count: int) -> tuple[list[tuple[int, int]], int, str]:
    """The ``[start, end)`` line spans of the list's items, where the block ends, and its indentation."""
    end = key_line + 1
    while end < len(lines) and (_belongs(lines[end])):
        end += 1
    starts: list[int] = []
    indent: str | None = None
    for index in range(key_line + 1, end):
        match = _ITEM.match(lines[index])
        if match and (indent is None or match.group("indent") == indent):
            indent = match.group("indent")
            starts.append(index)
    if len(starts) != count:
        raise YamlEditError("the mcpServers list is laid out in a way we do not edit (anchors or flow items)")
    spans = [(a, _content_end(lines, a, b)) for a, b in zip(starts, [*starts[1:], end], strict=True)]
    return spans, end, indent if indent is not None else _DEFAULT_INDENT


def _belongs(line: str) -> bool:
    """A line inside a top-level key's block: indented, a ``-`` item at column 0, blank, or a comment."""
    return not line.strip() or line[0] in " \t#" or bool(_ITEM.match(line))


def _content_end(lines: list[str], start: int, end: int) -> int:
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def _render(item: dict[str, Any], indent: str) -> str:
    import yaml

    text = yaml.safe_dump([item], sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16)
    return "".join(indent + line for line in text.splitlines(keepends=True))


def _checked(new: str, expected: dict[str, Any]) -> str:
    if load(new) != expected:
        raise YamlEditError("the edit would change more than our entry (please report this file's layout)")
    return new
