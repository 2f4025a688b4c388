"""Edit one key of a JSON / JSONC file in place, leaving every other byte as it was.

Agents keep their MCP servers in files people also edit by hand: key order, comments, trailing commas
and indentation are theirs. So nothing here re-serializes a document. :func:`parse` reads the text into
values *and* the character spans they came from; an edit replaces, inserts or deletes one span and
renders only the new value, indented like its neighbours. Every edit is then checked by parsing the
result again and comparing it with the value it must have (:func:`set_member` and friends raise
:class:`JsoncError` rather than return a text that says something else).

Dialects: ``comments`` allows ``//`` and ``/* */`` (Gemini CLI and Qwen Code strip them before
``JSON.parse``); ``trailing_commas`` allows a comma before ``}`` or ``]`` (opencode, Kilo and Copilot CLI
read JSONC). Strict JSON (Claude Code, Cline) allows neither.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
# Containers within containers, at most. The parser recurses (three frames a level), so a document nested
# thousands deep would end in a RecursionError; no agent's config comes near this.
MAX_DEPTH = 200


class JsoncError(ValueError):
    """The text is not in the dialect, or an edit cannot be made without touching what is not ours."""


@dataclass(frozen=True, slots=True)
class Dialect:
    comments: bool = False
    trailing_commas: bool = False


STRICT = Dialect()
WITH_COMMENTS = Dialect(comments=True)
JSONC = Dialect(comments=True, trailing_commas=True)


@dataclass(slots=True)
class Node:
    """A value and where it is: ``text[start:end]``; containers also hold their entries."""

    value: Any
    start: int
    end: int
    entries: list[Entry] = field(default_factory=list)  # object members or array items, in order


@dataclass(slots=True)
class Entry:
    key: str | None  # None for an array item
    start: int  # the key's opening quote (members) or the value's start (items)
    node: Node
    comma: int | None = None  # index of the comma that follows, if any


def parse(text: str, dialect: Dialect = STRICT) -> Node:
    parser = _Parser(text, dialect)
    parser.skip()
    node = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise parser.error("unexpected text after the document")
    return node


class _Parser:
    def __init__(self, text: str, dialect: Dialect) -> None:
        self.text, self.dialect, self.pos, self.depth = text, dialect, 0, 0

    def error(self, message: str) -> JsoncError:
        line = self.text.count("\n", 0, self.pos) + 1
        column = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return JsoncError(f"{message} at line {line} column {column}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos) or text.startswith("/*", self.pos):
                if not self.dialect.comments:
                    raise self.error("a comment, which this file's agent does not accept")
                if text[self.pos + 1] == "/":
                    newline = text.find("\n", self.pos)
                    self.pos = len(text) if newline < 0 else newline
                else:
                    close = text.find("*/", self.pos + 2)
                    if close < 0:
                        raise self.error("an unterminated /* comment")
                    self.pos = close + 2
            else:
                return

    def value(self) -> Node:
        text, start = self.text, self.pos
        if start >= len(text):
            raise self.error("the document ends where a value was expected")
        char = text[start]
        if char == "{":
            return self.container("}", members=True)
        if char == "[":
            return self.container("]", members=False)
        if char == '"':
            return Node(self.string(), start, self.pos)
        if match := _NUMBER.match(text, start):
            self.pos = match.end()
            return Node(json.loads(match.group()), start, self.pos)
        for word, literal in _LITERALS.items():
            if text.startswith(word, start):
                self.pos += len(word)
                return Node(literal, start, self.pos)
        raise self.error(f"unexpected {char!r}")

    def string(self) -> str:
        text, start = self.text, self.pos
        pos = start + 1
        while pos < len(text) and text[pos] != '"':
            pos += 2 if text[pos] == "\\" else 1
        if pos >= len(text):
            raise self.error("an unterminated string")
        self.pos = pos + 1
        try:
            return str(json.loads(text[start:self.pos]))
        except ValueError as exc:
            raise self.error(f"a bad string ({exc})") from exc

    def container(self, close: str, members: bool) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} levels deep")
        node = Node({} if members else [], self.pos, self.pos)
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                if node.entries and node.entries[-1].comma is not None and not self.dialect.trailing_commas:
                    raise self.error("a trailing comma, which this file's agent does not accept")
                self.pos += 1
                node.end = self.pos
                self.depth -= 1
                return node
            if node.entries and node.entries[-1].comma is None:
                raise self.error(f"expected ',' or {close!r}")
            entry = self.member() if members else Entry(None, self.pos, self.value())
            node.entries.append(entry)
            if members:
                node.value[entry.key] = entry.node.value  # the last of a repeated key wins, as in JSON.parse
            else:
                node.value.append(entry.node.value)
            self.skip()
            if self.text.startswith(",", self.pos):
                entry.comma = self.pos
                self.pos += 1

    def member(self) -> Entry:
        start = self.pos
        if not self.text.startswith('"', start):
            raise self.error("expected a quoted key")
        key = self.string()
        self.skip()
        if not self.text.startswith(":", self.pos):
            raise self.error("expected ':'")
        self.pos += 1
        self.skip()
        return Entry(key, start, self.value())


# ---------------------------------------------------------------------------------------------- edits


def get(text: str, path: tuple[str, ...], dialect: Dialect = STRICT) -> Any:
    """The value at ``path`` (object keys from the root), or None when any step is missing."""
    value: Any = parse(text, dialect).value
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def set_member(text: str, path: tuple[str, ...], value: Any, dialect: Dialect = STRICT) -> str:
    """``text`` with the member at ``path`` set to ``value``, creating the objects on the way."""
    root = _root_object(text, dialect)
    expected = _with(root.value, path, value)
    if expected == root.value:
        return text
    node, depth = root, 0
    while depth < len(path) - 1 and (entry := _find(node, path[depth])) is not None:
        if not isinstance(entry.node.value, dict):
            raise JsoncError(f"{'.'.join(path[:depth + 1])} is not an object")
        node, depth = entry.node, depth + 1
    rest = path[depth:]
    nested: Any = value
    for key in reversed(rest[1:]):
        nested = {key: nested}
    existing = _find(node, rest[0])
    if existing is not None:  # only at the last step: earlier steps were walked into above
        indent = _line_indent(text, existing.start)
        new = text[:existing.node.start] + _render(nested, indent, _unit(text)) + text[existing.node.end:]
    else:
        new = _insert(text, node, f"{json.dumps(rest[0], ensure_ascii=False)}: ", nested)
    return _checked(new, expected, dialect)


def delete_member(text: str, path: tuple[str, ...], dialect: Dialect = STRICT) -> str:
    """``text`` without the member at ``path``. An object that only held it goes too (up to the root),
    unless a comment is in it: a comment is someone's, and stays."""
    root = _root_object(text, dialect)
    chain = [root]
    for depth, key in enumerate(path):
        entry = _find(chain[-1], key)
        if entry is None or (depth < len(path) - 1 and not isinstance(entry.node.value, dict)):
            return text
        chain.append(entry.node)
    cut = len(path)  # delete path[:cut]; widened while the parent would be left empty (never the root)
    while cut > 1 and len(chain[cut - 1].entries) == 1 and not _commented(text, chain[cut - 1]):
        cut -= 1
    parent = chain[cut - 1]
    entry = _find(parent, path[cut - 1])
    assert entry is not None
    new = _delete(text, parent, entry)
    if cut == 1 and len(root.entries) == 1 and not _commented(text, root):  # nothing left: an empty object
        new = "{}" + ("\n" if text.endswith("\n") else "")
    return _checked(new, _remove(root.value, path[:cut]), dialect)


def append_item(text: str, path: tuple[str, ...], item: Any, dialect: Dialect = STRICT) -> str:
    """``text`` with ``item`` at the end of the array at ``path`` (made if missing); kept if there."""
    root = _root_object(text, dialect)
    current = get(text, path, dialect)
    if current is None:
        return set_member(text, path, [item], dialect)
    if not isinstance(current, list):
        raise JsoncError(f"{'.'.join(path)} is not an array")
    if item in current:
        return text
    node = _walk(root, path)
    return _checked(_insert(text, node, "", item), _with(root.value, path, [*current, item]), dialect)


def remove_item(text: str, path: tuple[str, ...], item: Any, dialect: Dialect = STRICT) -> str:
    """``text`` without ``item`` in the array at ``path``; an array (and objects) left empty go too."""
    root = _root_object(text, dialect)
    current = get(text, path, dialect)
    if not isinstance(current, list) or item not in current:
        return text
    remaining = [v for v in current if v != item]
    node = _walk(root, path)
    if not remaining and not _commented(text, node):
        return delete_member(text, path, dialect)
    new = text
    for entry in reversed([e for e in node.entries if e.node.value == item]):
        new = _delete(new, node, entry)
        node = _walk(_root_object(new, dialect), path)
    return _checked(new, _with(root.value, path, remaining), dialect)


# ------------------------------------------------------------------------------------------- helpers


def _root_object(text: str, dialect: Dialect) -> Node:
    root = parse(text, dialect)
    if not isinstance(root.value, dict):
        raise JsoncError("the document is not a JSON object")
    return root


def _find(node: Node, key: str) -> Entry | None:
    found = [e for e in node.entries if e.key == key]
    return found[-1] if found else None


def _walk(root: Node, path: tuple[str, ...]) -> Node:
    node = root
    for key in path:
        entry = _find(node, key)
        assert entry is not None
        node = entry.node
    return node


def _with(value: dict[str, Any], path: tuple[str, ...], new: Any) -> dict[str, Any]:
    copy = dict(value)
    inner = copy.get(path[0])
    copy[path[0]] = _with(inner if isinstance(inner, dict) else {}, path[1:], new) if len(path) > 1 else new
    return copy


def _remove(value: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    copy = dict(value)
    if len(path) == 1:
        del copy[path[0]]
    else:
        copy[path[0]] = _remove(copy[path[0]], path[1:])
    return copy


def _commented(text: str, node: Node) -> bool:
    """Whether a container holds a comment between its entries (where nothing else but commas can be)."""
    bounds = [node.start + 1]
    for entry in node.entries:
        bounds += [entry.start, entry.node.end if entry.comma is None else entry.comma + 1]
    bounds.append(node.end - 1)
    gaps = "".join(text[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True))
    return bool(gaps.strip(" \t\r\n,\ufeff"))


def _checked(new: str, expected: Any, dialect: Dialect) -> str:
    """The edit's result, once it is proved to say exactly what it must."""
    if parse(new, dialect).value != expected:
        raise JsoncError("the edit would change more than our entry (please report this file's layout)")
    return new


def _unit(text: str) -> str:
    """The file's indentation step: the first indented line's leading whitespace (two spaces if none)."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    return prefix if not prefix.strip() else re.match(r"[ \t]*", prefix).group()  # type: ignore[union-attr]


def _render(value: Any, indent: str, unit: str) -> str:
    """``value`` as ``JSON.stringify(value, null, unit)`` writes it, continued at ``indent``."""
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def _insert(text: str, node: Node, prefix: str, value: Any) -> str:
    """``prefix + value`` as the last entry of container ``node``, laid out like the entries before it."""
    unit = _unit(text)
    close = node.end - 1
    if not node.entries:
        outer = _line_indent(text, node.start)
        inner = text[node.start + 1:close]
        if "\n" not in text[node.start:node.end] and not inner.strip():  # {} or [ ]: open it up
            body = f"\n{outer}{unit}{prefix}{_render(value, outer + unit, unit)}\n{outer}"
            return text[:node.start + 1] + body + text[close:]
        head = text[:close].rstrip(" \t")
        head = head if head.endswith("\n") else head + "\n"
        return f"{head}{outer}{unit}{prefix}{_render(value, outer + unit, unit)}\n{outer}{text[close:]}"
    last = node.entries[-1]
    multiline = "\n" in text[node.start:last.start]
    if not multiline:  # {"a": 1} stays on one line
        entry = prefix + json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        if last.comma is not None:
            return text[:last.comma + 1] + " " + entry + "," + text[last.comma + 1:]
        return text[:last.node.end] + ", " + entry + text[last.node.end:]
    indent = _line_indent(text, last.start)
    entry = prefix + _render(value, indent, unit)
    if last.comma is not None:  # a file that ends entries with commas keeps doing so
        at = _line_end(text, last.comma + 1)
        return text[:at] + "\n" + indent + entry + "," + text[at:]
    at = _line_end(text, last.node.end)
    return text[:last.node.end] + "," + text[last.node.end:at] + "\n" + indent + entry + text[at:]


def _line_end(text: str, pos: int) -> int:
    """Past a comment that ends the line at ``pos`` (so it stays with its entry); else ``pos``."""
    rest = text[pos:text.find("\n", pos) if "\n" in text[pos:] else len(text)]
    stripped = rest.strip()
    if stripped.startswith("//") or (stripped.startswith("/*") and stripped.endswith("*/")):
        return pos + len(rest.rstrip())
    return pos


def _delete(text: str, parent: Node, entry: Entry) -> str:
    """``text`` without ``entry`` and the comma that joined it; an entry on a line of its own takes the
    line (and a comment ending it: we never write one, so it was about this entry)."""
    index = parent.entries.index(entry)
    start, end = entry.start, entry.node.end if entry.comma is None else entry.comma + 1
    line_start = text.rfind("\n", 0, start)
    own_line = line_start >= 0 and not text[line_start + 1:start].strip()
    if own_line:
        start, end = line_start, _line_end(text, end)
    if entry.comma is not None:  # the next entry (or the closing bracket) keeps its own layout
        rest = text[end:]
        return text[:start] + (rest if own_line else rest.lstrip(" "))
    if index == 0:
        return text[:start] + text[end:]
    previous = parent.entries[index - 1]
    assert previous.comma is not None
    if not own_line:  # on the previous entry's line: ", " goes with it
        return text[:previous.comma] + text[end:]
    return text[:previous.comma] + text[previous.comma + 1:start] + text[end:]
