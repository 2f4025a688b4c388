"""Reading agents' settings files for :mod:`harvester.retention`: each agent's dialect, nothing written.

A file that cannot be read or parsed becomes a line in the warning ("could not read …"), never an error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harvester.parsers import HARNESSES

Env = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Retention:
    """One thing an agent will delete on its own, and the setting behind it."""

    harness: str
    deletes: str  # what the agent does, in words: "deletes sessions older than 30 days"
    setting: str  # the key, as the agent's documentation spells it
    file: str | None  # the file the effective value came from; None when the default applies
    value: Any  # the effective value
    default: bool  # the agent's default applies (no file sets the setting)
    unset_in: tuple[str, ...] = ()  # files that were read and set nothing
    problems: tuple[str, ...] = ()  # "could not read <file>: <why>"


def _shown(path: str, home: Path) -> str:
    """``~/…`` for a path under HOME, as people write it."""
    try:
        return "~/" + Path(path).relative_to(home).as_posix()
    except ValueError:
        return path


# -------------------------------------------------------------------------------------- reading files


class _Unreadable(Exception):
    """A settings file that exists but cannot be read in the agent's dialect."""


_BOM = "\ufeff"


def _text(path: Path) -> str | None:
    """The file's text; None when it does not exist. A FIFO, a device or a file over the bound is refused
    unread (``harvester.connect.files.read``): status never waits on one."""
    from harvester.connect import files  # here, as jsonc below

    try:
        text = files.read_text(path)
        return None if text is None else text.replace("\r\n", "\n").replace("\r", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unreadable(exc.__class__.__name__ if isinstance(exc, UnicodeDecodeError) else
                          exc.strerror or str(exc)) from exc


def _parse(text: str, dialect: str) -> Any:
    text = text.removeprefix(_BOM)  # every one of these agents strips a BOM before parsing
    from harvester.connect import jsonc  # here: with no settings file to read, status needs no parser of them

    try:
        if dialect == "json":
            return json.loads(text)
        if dialect == "json-comments":
            return jsonc.parse(text, jsonc.WITH_COMMENTS).value
        if dialect == "jsonc":
            return jsonc.parse(text, jsonc.JSONC).value
        if dialect == "json5":
            return _Json5(text).document()
        if dialect == "yaml":
            return _yaml(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, JsoncError and YAMLError (see _yaml) are
        raise _Unreadable(_first_line(exc)) from exc
    raise AssertionError(dialect)


def _yaml(text: str) -> Any:
    import yaml  # here: status reads every agent's settings, and yaml, which few of them are, costs it most

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0][:120]


@dataclass(slots=True)
class _Files:
    """The settings files read for one agent, and what became of them (for the warning's wording)."""

    home: Path
    unset: list[str]
    problems: list[str]

    def load(self, path: Path, dialect: str) -> dict[str, Any] | None:
        """The file's top-level object; None when it does not exist or cannot be read (then said)."""
        try:
            text = _text(path)
            if text is None:
                return None
            if not text.strip():
                return {}  # an empty file is an empty object to Claude Code, Gemini CLI and Kilo alike
            data = _parse(text, dialect)
        except _Unreadable as exc:
            self.problems.append(f"could not read {_shown(str(path), self.home)}: {exc}")
            return None
        if data is None and dialect == "yaml":
            return {}
        if not isinstance(data, dict):
            self.problems.append(f"could not read {_shown(str(path), self.home)}: not an object")
            return None
        return data


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _has(data: Any, *keys: str) -> bool:
    *parents, last = keys
    parent = _get(data, *parents) if parents else data
    return isinstance(parent, dict) and last in parent


def _whole_number(value: Any) -> int | None:
    """A JSON number that JavaScript's ``Number.isInteger`` accepts (7 and 7.0 alike); bools are not."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def _exists(*paths: Path) -> bool:
    return any(p.exists() for p in paths)


def _roots_exist(harness: str) -> Callable[[Env, Path], bool]:
    return lambda env, home: _exists(*HARNESSES[harness].roots(env, home))


def _env_path(env: Env, name: str) -> Path | None:
    value = (env.get(name) or "").strip()
    return Path(value).expanduser() if value else None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")  # Claude Code's ct()


def _valid_days(value: Any) -> int | None:
    days = _whole_number(value)
    return days if days is not None and days >= 1 else None


def _listing(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.is_file()]
    except OSError:
        return []


def _listing_dirs(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.is_dir()]
    except OSError:
        return []


class _Json5:
    """Just enough JSON5 for a settings file (OpenClaw's ``openclaw.json``): comments, unquoted keys,
    single-quoted strings, trailing commas, hex and signed numbers, Infinity and NaN."""

    _NUMBER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|Infinity|NaN|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
    _NAME = re.compile(r"[A-Za-z_$][\w$]*")
    _ESCAPES: ClassVar[dict[str, str]] = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0"}

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def document(self) -> Any:
        value = self.value()
        self.skip()
        if self.pos != len(self.text):
            raise ValueError(f"unexpected text at offset {self.pos}")
        return value

    def skip(self) -> None:
        while self.pos < len(self.text):
            if self.text[self.pos].isspace():
                self.pos += 1
            elif self.text.startswith("//", self.pos):
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif self.text.startswith("/*", self.pos):
                end = self.text.find("*/", self.pos + 2)
                if end < 0:
                    raise ValueError("unterminated comment")
                self.pos = end + 2
            else:
                return

    def value(self) -> Any:
        self.skip()
        if self.pos >= len(self.text):
            raise ValueError("unexpected end of file")
        char = self.text[self.pos]
        if char == "{":
            return dict(self.items("}", self.member))
        if char == "[":
            return list(self.items("]", self.value))
        if char in "\"'":
            return self.string()
        for word, literal in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        match = self._NUMBER.match(self.text, self.pos)
        if not match:
            raise ValueError(f"unexpected {char!r} at offset {self.pos}")
        self.pos = match.end()
        word = match.group().lstrip("+")
        sign = -1 if word.startswith("-") else 1
        body = word.lstrip("-")
        if body in ("Infinity", "NaN"):
            return sign * float(body.lower().replace("infinity", "inf"))
        if body[:2] in ("0x", "0X"):
            return sign * int(body, 16)
        return sign * (float(body) if any(c in body for c in ".eE") else int(body))

    def items(self, close: str, item: Callable[[], Any]) -> Iterator[Any]:
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                self.pos += 1
                return
            yield item()
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith(close, self.pos):
                raise ValueError(f"expected ',' or {close!r} at offset {self.pos}")

    def member(self) -> tuple[str, Any]:
        if self.text[self.pos] in "\"'":
            key = self.string()
        else:
            match = self._NAME.match(self.text, self.pos)
            if not match:
                raise ValueError(f"expected a key at offset {self.pos}")
            key, self.pos = match.group(), match.end()
        self.skip()
        if not self.text.startswith(":", self.pos):
            raise ValueError(f"expected ':' at offset {self.pos}")
        self.pos += 1
        return key, self.value()

    def string(self) -> str:
        quote, out = self.text[self.pos], []
        self.pos += 1
        while self.pos < len(self.text):
            char = self.text[self.pos]
            self.pos += 1
            if char == quote:
                return "".join(out)
            if char != "\\":
                out.append(char)
                continue
            escaped = self.text[self.pos:self.pos + 1]
            self.pos += 1
            if escaped == "u":
                out.append(chr(int(self.text[self.pos:self.pos + 4], 16)))
                self.pos += 4
            elif escaped == "x":
                out.append(chr(int(self.text[self.pos:self.pos + 2], 16)))
                self.pos += 2
            elif escaped in "\n\u2028\u2029":  # a line continuation
                continue
            elif escaped == "\r":
                if self.text.startswith("\n", self.pos):
                    self.pos += 1
            else:
                out.append(self._ESCAPES.get(escaped, escaped))
        raise ValueError("unterminated string")
