"""The one small interface every harness parser implements.

A harness module provides, as plain data and pure functions:

``NAME``
    The harness name used everywhere (``claude-code``, ``codex``).
``roots(env, home)``
    Candidate directories where the agent keeps its history, honouring the agent's own environment
    overrides. They need not exist.
``SOURCES``
    Which files under a root are session sources, and in what container format.
``parse(source, records, state)``
    Turn records (complete lines, or a whole document) into a :class:`harvester.model.Batch`.
    ``state`` is what the previous call returned in ``Batch.state`` for the same source (``{}`` on a
    first read or a re-read from the start); it must stay JSON-serializable and small.

Parsers never open files, never talk to the bank and never know about cursors: the ingest layer
reads bytes and hands them over, which keeps every parser testable on bytes alone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any, Literal

import orjson

from harvester.model import Batch, Problem

# jsonl / lines: append-only, one record per complete line (lines: any text, e.g. Markdown).
# jsonl.zst: the same, zstd-compressed whole (read again from the start when it changes).
# zstd-frames: JSONL in a chain of zstd frames, appended frame by frame (read from the last one).
# json: a whole document, rewritten in place.
# sqlite: a database the agent keeps open; read through SourceSpec.queries.
Format = Literal["jsonl", "lines", "jsonl.zst", "zstd-frames", "json", "sqlite"]


@dataclass(frozen=True, slots=True)
class SqliteQuery:
    """Rows of one kind, changed since the last read. ``sql`` takes ``:since`` (the largest
    ``watermark`` value read so far; 0 at first) and must select rows with ``watermark >= :since``
    (rows sharing the boundary value are read again, harmlessly, rather than missed)."""

    name: str  # handed to the parser as {"table": name, "row": {...}}
    sql: str
    watermark: str  # a column that grows whenever a row is written (time_updated, rowid)
    # The table (or a column the query names) comes with a later version of the agent: a database without
    # it has no such rows (rather than an unexpected shape). OpenClaw's agent database existed before it held
    # transcripts; Zed's threads table grew columns (one query per shape, each optional).
    optional: bool = False
    # Rows come in watermark order (the SQL orders by it first): a page of a large read that ends inside
    # this query can keep the watermark its last row reached, and a read stopped there goes on from it.
    # Otherwise the query's watermark moves only once all its rows are read (a stop re-reads it all).
    ordered: bool = False
    # A column whose rows the parser must see in one call (a Cursor composer and its bubbles): a page is
    # cut only where its value changes, and the rows must come grouped by it.
    group: str | None = None


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """A kind of session file under a harness root."""

    pattern: str  # glob relative to the root; "**" allowed
    format: Format
    variant: str = "main"  # handed back to the parser in SourceRef.variant
    # A file whose presence makes this one redundant (Codex keeps .jsonl over .jsonl.zst), or several; a
    # ``*`` segment stands for any directory (Cursor's transcript is redundant beside chats/*/<id>/store.db).
    shadowed_by: Callable[[PurePath], PurePath | tuple[PurePath, ...]] | None = None
    # A small sibling document the parser wants beside the records (Claude's agent-*.meta.json).
    sidecar: Callable[[PurePath], PurePath] | None = None
    # False for stores that file events cannot follow (a SQLite database in WAL mode): the service
    # polls them instead of waiting for events.
    watch: bool = True
    # sqlite: the queries that read it, in order (parents before children).
    queries: tuple[SqliteQuery, ...] = ()
    # json: other documents that belong to this one (opencode's storage/ tree keeps a session's
    # messages and parts in files of their own); each is handed to the parser after it.
    related: Callable[[PurePath], list[PurePath]] | None = None
    # File names (or name globs) the pattern matches that are not sessions (Continue's sessions.json index).
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SourceRef:
    """What a parser may know about where its records come from."""

    path: PurePath
    root: PurePath
    variant: str = "main"
    sidecar: bytes | None = None
    mtime_ns: int = 0  # when the source was last written (for formats whose records carry no time)


@dataclass(frozen=True, slots=True)
class Record:
    line: int  # 1-based line number in the (decompressed) source; for documents and rows, their index
    raw: bytes  # the line without its newline, the whole document, or a row as {"table", "row"} JSON


@dataclass(frozen=True, slots=True)
class OpaqueStore:
    """Files that hold an agent's history but cannot be read (encrypted, or a private format with no
    known schema). Never opened, never parsed: only counted, so that ``status`` says the store is
    present and not readable instead of showing an agent with nothing, as if it had never been used."""

    pattern: str  # glob relative to a root, as SourceSpec.pattern
    reason: str  # why it cannot be read, in words for status


Roots = Callable[[Mapping[str, str], Path], list[Path]]
Parse = Callable[[SourceRef, Iterable[Record], dict[str, Any]], Batch]


@dataclass(frozen=True, slots=True)
class Harness:
    """One registry entry: everything the ingest layer needs to know about a harness."""

    name: str
    roots: Roots
    sources: tuple[SourceSpec, ...]
    parse: Parse
    label: str = ""  # human name for status output
    # How the agent's processes look (executable names, or markers in their command line), so the
    # service can tell a session still in use from an ended one.
    processes: tuple[str, ...] = ()
    # The agent keeps its history inside each repository (Aider): its roots are the directories of
    # sessions the bank already knows, and the configured roots.
    roots_in_repositories: bool = False
    # A fork is a new session file that starts with a copy of its parent's records, their ids included,
    # and names no parent (Claude Code --fork-session): the bank links two sessions of one cwd that hold
    # the same first record, the later one as a fork of the earlier.
    forks_copy_history: bool = False
    # Bumped when a change to the parser changes what it makes of records it read before: sessions made
    # by an older version are counted by status, and `harvester reparse` rebuilds them from the archive.
    version: int = 1
    # Stores of the agent's that no parser can read (Windsurf's encrypted Cascade trajectories): a harness
    # may have these only, and no sources.
    opaque: tuple[OpaqueStore, ...] = ()


def existing_roots(harness: Harness, env: Mapping[str, str], home: Path,
                   extra: tuple[Path, ...] = ()) -> list[Path]:
    seen: set[str] = set()
    out = []
    for root in [*harness.roots(env, home), *extra]:
        if not os.path.isdir(root):  # first: one stat, where realpath costs one a path component
            continue
        key = os.path.realpath(root)
        if key not in seen:
            seen.add(key)
            out.append(Path(root))
    return out


def harness_roots(harness: Harness, known_directories: Callable[[], list[str]], env: Mapping[str, str],
                  home: Path, extra: Iterable[Path] = ()) -> list[Path]:
    """Where a harness's sources are. For an agent that keeps its history inside each repository (Aider)
    that is every directory a session in the bank worked in (``known_directories``), and the git
    repositories at most two levels below each configured root (a bounded walk, not a disk crawl). Here,
    not in harvester.capture.ingest or harvester.capture.sources: status says where each harness looks without importing what
    reads them."""
    extra = tuple(extra)
    if not harness.roots_in_repositories:
        return existing_roots(harness, env, home, extra)
    dirs = [Path(d) for d in known_directories()]
    for root in extra:
        dirs.append(root)
        dirs += [p.parent for p in (*root.glob("*/.git"), *root.glob("*/*/.git"))]
    return existing_roots(harness, env, home, tuple(dirs))


OPAQUE_COUNT_CAP = 10_000  # files counted per store: enough to say "present", bounded on a huge folder


def opaque_found(harness: Harness, roots: Iterable[Path]) -> list[dict[str, Any]]:
    """Each opaque store of ``harness`` present under ``roots``: where, how many files (counting stops at
    OPAQUE_COUNT_CAP: ``capped``), and why they cannot be read. Names are listed, no file is opened."""
    out = []
    for root in roots:
        for store in harness.opaque:
            files = 0
            for path in Path(root).glob(store.pattern):
                if path.is_file():
                    files += 1
                    if files >= OPAQUE_COUNT_CAP:
                        break
            if files:
                out.append({"path": str(Path(root) / store.pattern), "files": files,
                            "capped": files >= OPAQUE_COUNT_CAP, "reason": store.reason})
    return out


def json_objects(records: Iterable[Record], problems: list[Problem]) -> Iterator[tuple[Record, dict[str, Any]]]:
    """Each record decoded as a JSON object. One that is not (bad JSON, invalid UTF-8, an array...)
    becomes a ``malformed`` problem with its line, and the rest go on."""
    for record in records:
        try:
            data = json_value(record.raw)
        except orjson.JSONDecodeError as exc:
            problems.append(Problem("malformed", record.line, f"invalid JSON: {exc}"))
            continue
        if not isinstance(data, dict):
            problems.append(Problem("malformed", record.line, "record is not an object"))
            continue
        yield record, data


def json_value(raw: bytes | str) -> Any:
    """A record's JSON value, as orjson reads it; one that escapes a lone surrogate too (see below). Raises
    orjson.JSONDecodeError as orjson does for what is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        data = _with_lone_surrogates(raw) if "surrogate" in str(exc) else None
        if data is None:
            raise
        return data


def _with_lone_surrogates(raw: bytes | str) -> Any:
    """A record whose JSON escapes a lone surrogate (``\\ud83d``: JSON.stringify writes one for an emoji cut in
    half), which orjson refuses: decoded by the standard library, which takes it, each lone half then made
    U+FFFD. None when it is not JSON for that reason either. Only on this rare path: orjson reads the rest."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    try:  # a pair was joined into one character by the decoder: a surrogate left in the text is a lone one
        return orjson.loads(_LONE_SURROGATE.sub("\ufffd", json.dumps(data, ensure_ascii=False)))
    except (orjson.JSONDecodeError, RecursionError):  # NaN, a huge integer: not JSON orjson reads, as before
        return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def unknown_fields(where: str, data: Mapping[str, Any], known: frozenset[str]) -> str | None:
    """``<where> fields: a, b``: the fields of a record that its reader does not know (format drift, reported as an
    ``unknown_field`` problem), or None. A field's name is shown when it is a name, else only counted: keys come
    from the transcript too."""
    extra = [k for k in data if k not in known]
    if not extra:
        return None
    named = sorted(k for k in extra if is_name(k))
    shown = named[:8] + ([f"{len(extra) - len(named[:8])} more"] if len(extra) > len(named[:8]) else [])
    return f"{where} fields: {', '.join(shown)}"


def render_call(name: Any, tool_input: Any, keys: Iterable[str]) -> str:
    """A tool call as one line of text: ``name: <its most telling argument>`` (the first of ``keys``
    that holds text, or a list of words such as a command's argv), else its input as JSON; the bare
    name when it has no input. Each parser names the keys of its agent's tools, in order of preference."""
    if isinstance(tool_input, dict):
        for key in keys:
            value = tool_input.get(key)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                value = " ".join(value)
            if isinstance(value, str):
                return f"{name}: {value}"
    if tool_input is None or (isinstance(tool_input, str | dict | list) and not tool_input):
        return str(name)
    if isinstance(tool_input, list) and all(isinstance(v, str) for v in tool_input):
        tool_input = " ".join(tool_input)
    try:
        text = tool_input if isinstance(tool_input, str) else orjson.dumps(tool_input, default=repr).decode()
    except orjson.JSONEncodeError:  # nested deeper than JSON can be written back (agents' JSON can be)
        text = "(input nested too deep to show)"
    return f"{name}: {text}"


def iso_ms(value: Any) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC to the millisecond (``2026-07-18T10:00:00.123Z``, the form
    every event time takes in the bank); None for anything else: a bool, text, zero, out of range."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return None
    seconds, millis = divmod(int(value), 1000)
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def iso_text(value: Any) -> str | None:
    """ISO 8601 / RFC 3339 text with any offset, in that same UTC form. A time without an offset is
    taken as UTC (agents write UTC; reading it as this machine's local time would make the bank
    depend on where it was built)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    moment = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


# Python's names for the JSON types a record's values have, as a reader of the record would say them.
_JSON_TYPES = {"NoneType": "null", "dict": "an object", "list": "an array", "str": "text", "int": "a number",
               "float": "a number", "bool": "true or false", "bytes": "bytes", "tuple": "an array"}
_NOT_SUBSCRIPTABLE = re.compile(r"'(\w+)' object is not (?:subscriptable|iterable|callable)")
_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
# Which JSON type a method asked of a value tells what the parser expected there.
_EXPECTED_BY_METHOD = {**dict.fromkeys(("get", "items", "keys", "values", "setdefault", "pop"), "an object"),
                       **dict.fromkeys(("append", "extend", "index"), "an array"),
                       **dict.fromkeys(("strip", "lower", "upper", "startswith", "endswith", "split", "replace",
                                        "encode", "splitlines", "lstrip", "rstrip", "partition", "find"), "text")}
_UNHASHABLE = re.compile(r"unhashable type: '(\w+)'")
_EXPECTED = re.compile(r"(?:must be|expected) (?:a |an )?(\w+)[^,]*, not (?:a |an )?'?(\w+)'?")
_CONCATENATE = re.compile(r'can only concatenate (\w+) \(not "(\w+)"\)')
_INSTANCE = re.compile(r"expected (\w+) instance, (\w+) found")


def _json_type(python_name: str) -> str:
    return _JSON_TYPES.get(python_name, python_name)


# A quoted value in a detail: Python's repr of text (either quote, escapes inside), standing on its own (the
# apostrophes of "agent's" open nothing).
_QUOTED = re.compile(r"""(?<!\w)(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?!\w)""")
# What of a record a detail may show: a name (a record type, a field, a key, a status): short, one word of
# printable ASCII (a repr's escapes included: a hostile type name is shown, escaped); words a person wrote,
# with their spaces, are not.
_NAME = re.compile(r"[!#-&(-~]{0,40}\Z")
# What a TypeError quotes: Python's type names, operators.
_PYTHON_NAME = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_.]{0,40}|[<>=!+*/%&|^~@-]{1,3})\Z")
MAX_DETAIL = 300  # a detail is a sentence: what was wrong and where


def is_name(value: object) -> bool:
    """Whether ``value`` is a name a problem detail may show (a type, a field): short text of name characters,
    not a value a person wrote."""
    return isinstance(value, str) and _NAME.match(value) is not None


def _unquoted(text: str, shown: Callable[[str], bool]) -> str:
    """``text`` with every quoted value that ``shown`` refuses replaced by its length."""
    def one(match: re.Match[str]) -> str:
        inner = match[0][1:-1]
        return match[0] if shown(inner) else f"(text of {len(inner)} characters)"

    return _QUOTED.sub(one, text) if "'" in text or '"' in text else text


def problem_detail(detail: str) -> str:
    """A problem's detail as the bank keeps it and the log says it: the kind of what a record held, never its
    text. A quoted value that is not a name (a record type, a field) is replaced by its length, any secret
    left is redacted, and it is cut at :data:`MAX_DETAIL` characters. Parsers say which value where
    (``type='hologram'``, ``message role='oracle'``); this holds the line for those that quote more."""
    from harvester.redact import redact  # here: a reading command imports the parsers' helpers, not this

    text = _unquoted(detail, lambda inner: _NAME.match(inner) is not None)
    text, _ = redact(text)
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL - 1] + "…"


def describe_error(exc: BaseException) -> str:
    """What a record lacked or held, in words, from the exception a parser raised reading it:
    ``KeyError('uuid')`` becomes "no 'uuid' field", a ``TypeError`` about a list becomes "an array where
    an object was expected". Problem details are read by people in ``status``; reprs are not for them, nor
    are the values an exception's message quotes (``int('hunter2')``): their length is said instead."""
    message = str(exc)
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else "?"
        if isinstance(key, str):
            return f"no {key!r} field" if is_name(key) else "no entry for a value the record holds"
        return f"no entry {key!r}" if isinstance(key, int | float | None) else f"no entry for {_json_type(type(key).__name__)}"
    if isinstance(exc, RecursionError):
        return "values nested too deep"
    if isinstance(exc, IndexError):
        return "an array shorter than expected"
    if isinstance(exc, UnicodeError):
        return "text that is not valid UTF-8"
    if isinstance(exc, AttributeError) and (m := _NO_ATTRIBUTE.search(message)):
        return f"{_json_type(m[1])} where {_EXPECTED_BY_METHOD.get(m[2], 'something else')} was expected"
    if isinstance(exc, TypeError):
        if m := _NOT_SUBSCRIPTABLE.search(message):
            return f"{_json_type(m[1])} where an object or an array was expected"
        if m := _UNHASHABLE.search(message):
            return f"{_json_type(m[1])} where text or a number was expected"
        if m := _EXPECTED.search(message) or _CONCATENATE.search(message) or _INSTANCE.search(message):
            return f"{_json_type(m[2])} where {_json_type(m[1])} was expected"
        return f"a value of the wrong type ({_unquoted(message, lambda inner: bool(_PYTHON_NAME.match(inner)))})"
    message = _unquoted(message, lambda inner: False)
    if isinstance(exc, ValueError):
        return f"a value that cannot be used ({message})" if message else "a value that cannot be used"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
