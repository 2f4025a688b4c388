"""What every part of the configuration shares: the names of the environment variables settings come from,
:class:`ConfigError`, and the checks of one value each with their messages (``where: what is wrong (what is
valid)``, on one line). The loader (:mod:`harvester.config`) and the sinks' and the team bank's sections
(:mod:`harvester.config.sinks`, :mod:`harvester.config.team`) check their values with these; the names that start
with ``_`` are the configuration package's own, not an API.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from datetime import date, time
from pathlib import Path
from typing import Any

APP = "harvester"
BANK_ENV = "HARVESTER_BANK"
BANK_ID_TEMPLATE_ENV = "HARVESTER_BANK_ID_TEMPLATE"
LOG_LEVEL_ENV = "HARVESTER_LOG_LEVEL"
CONFIG_ENV = "HARVESTER_CONFIG"
RUNTIME_ENV = "HARVESTER_RUNTIME_DIR"
TEAM_BANK_ENV = "HARVESTER_TEAM_BANK"  # harvester/config/team.py


class ConfigError(Exception):
    """A setting cannot be used (bad TOML, an unknown key or name, a value of the wrong type or range).
    The message is one line that starts with where the value came from (the file and its key, the
    variable, the option): ``<where>: expected <what>, got <value>`` or ``<where>: unknown <kind>
    "<name>" (did you mean "<close>"? valid: <names>)``."""


LOG_LEVELS = ("debug", "info", "warning", "error")
# What harvester.gitident.bank_id fills in a template, written {name} (tests/test_config.py checks that
# it fills each). Here, not there: gitident imports GitPython, which checking a template needs not.
BANK_ID_PLACEHOLDERS = ("gitProject", "project", "harness")

# --- one value each; `where` names its source (and key), and starts the message ---

_TEMPLATE_BRACES = re.compile(r"\{([^{}]*)\}|[{}]")


def _template(where: str, value: Any) -> str:
    """A bank id template: text and the placeholders :func:`harvester.gitident.bank_id` fills. It fills
    nothing else and has no escape for a literal brace, so any other brace would reach every bank id as
    it is: ``{nope}`` would file every session under the one bank ``{nope}``."""
    template = _nonempty_string(where, value, "a template")
    placeholders = [f"{{{name}}}" for name in BANK_ID_PLACEHOLDERS]
    for brace in _TEMPLATE_BRACES.finditer(template):
        if brace[1] is None:
            raise ConfigError(f'{where}: unmatched "{brace[0]}" in "{template}" '
                              f"(braces only mark a placeholder: {', '.join(placeholders)})")
        if brace[0] not in placeholders:
            raise _unknown(where, "placeholder", brace[0], placeholders, within=template)
    # A template without any placeholder is kept: one fixed bank id ("coding-agent::all") is a choice
    # someone can mean, every session in one bank, and `harvester sessions` shows it at once. It is not
    # the silent typo this check is for: a mistyped placeholder keeps its braces and is refused above.
    return template


def _log_level(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _wrong_type(where, "a log level (a string)", value)
    if value.lower() not in LOG_LEVELS:
        raise _unknown(where, "log level", value, LOG_LEVELS)
    return value.lower()  # "INFO" is what Python's logging calls it: accepted, shown as the docs write it


def _harness_names(where: str, value: Any, valid: Collection[str]) -> list[str]:
    names = _array(where, value, "an array of harness names")
    if not names:
        raise ConfigError(f"{where}: expected at least one harness name "
                          "(leave harnesses out to capture every agent), got []")
    return [_harness_name(where, name, valid) for name in names]


def _harness_name(where: str, value: Any, valid: Collection[str]) -> str:
    """``valid`` is the parser registry's names, handed in by the caller of :func:`harvester.config.load`:
    the configuration is a leaf, so it knows no harness of its own."""
    if not isinstance(value, str):
        raise _wrong_type(where, "a harness name (a string)", value)
    if value not in valid:
        raise _unknown(where, "harness", value, sorted(valid))
    return value


def _absolute_paths(where: str, value: Any) -> list[Path]:
    return [_absolute_path(where, item) for item in _array(where, value, "an array of paths")]


def _absolute_path(where: str, value: Any) -> Path:
    text = _nonempty_string(where, value, "a path")
    path = Path(text).expanduser()
    if not path.is_absolute():
        # The file is read by commands run from any directory and by the service: a relative path would
        # name another place for each (an `exclude` that never matches, a bank per directory).
        raise _wrong_value(where, "an absolute path (or one starting with ~)", text)
    return path


def _boolean(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _wrong_type(where, "true or false", value)
    return value


_AGE_UNITS = {"d": 1, "w": 7, "y": 365}
_SIZE_UNITS = {"KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4,
               "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_QUANTITY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*")


def _age(where: str, value: Any) -> float:
    """An age with its unit ("90d", "26w", "1y"): a bare number could mean days or seconds."""
    return _quantity(where, value, _AGE_UNITS, 'an age such as "90d", "26w" or "1y"')


def _size(where: str, value: Any) -> int:
    """A size with its unit ("500MB", "20GB", "1TiB")."""
    return int(_quantity(where, value, _SIZE_UNITS, 'a size such as "500MB" or "20GB"'))


def _quantity(where: str, value: Any, units: Mapping[str, int], expected: str) -> float:
    if not isinstance(value, str):
        raise _wrong_type(where, f"{expected} (a string)", value)
    match = _QUANTITY.fullmatch(value)
    if match is None or float(match[1]) <= 0:
        raise _wrong_value(where, expected, value)
    unit = next((u for u in units if u.lower() == match[2].lower()), None)  # "20gb" is meant as "20GB"
    if unit is None:
        raise _unknown(where, "unit", match[2], list(units))
    return float(match[1]) * units[unit]


def _show_days(days: float | None) -> str:
    return "off" if days is None else f"{days:g}d"


def _show_bytes(size: int | None) -> str:
    if size is None:
        return "off"
    for unit in ("TB", "GB", "MB", "KB"):
        if size >= _SIZE_UNITS[unit]:
            return f"{size / _SIZE_UNITS[unit]:g}{unit}"
    return f"{size}B"


def _positive_number(where: str, value: Any, whole: bool) -> int | float:
    expected = "a positive whole number" if whole else "a positive number"
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        raise _wrong_type(where, expected, value)
    if not (math.isfinite(value) and value > 0):  # nan and inf are TOML floats too
        raise _wrong_value(where, expected, value)
    return value


def _nonempty_string(where: str, value: Any, expected: str) -> str:
    if not isinstance(value, str):
        raise _wrong_type(where, f"{expected} (a string)", value)
    if not value:
        raise _wrong_value(where, expected, value)
    return value


def _array(where: str, value: Any, expected: str) -> list[Any]:
    if not isinstance(value, list):
        raise _wrong_type(where, expected, value)
    return value


def _table(where: str, value: Any, expected: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _wrong_type(where, expected, value)
    return value


def _only_known_keys(where: str, table: Mapping[str, Any], known: Sequence[str]) -> None:
    for key in table:  # the first in the file's order: one line, and fixing it shows the next
        if key not in known:
            raise _unknown(where, "key", key, known)


# --- the messages: `where: what is wrong (what is valid)`, on one line ---

def _unknown(where: str, kind: str, name: str, valid: Sequence[str], within: str | None = None) -> ConfigError:
    close = _close_match(name, valid)
    hint = f'did you mean "{close}"? ' if close else ""
    inside = f' in "{within}"' if within is not None else ""
    return ConfigError(f'{where}: unknown {kind} "{name}"{inside} ({hint}valid: {", ".join(valid)})')


def _close_match(name: str, valid: Sequence[str]) -> str | None:
    """The valid name this one most likely meant: the only one it begins (``roo`` -> ``roo-code``,
    which difflib finds too short to match), else difflib's closest, ignoring case; among several it begins,
    the closest of those (``claude`` -> ``claude-code``, not ``openclaude``, which only contains it)."""
    lowered = {choice.lower(): choice for choice in valid}
    extended = [low for low in lowered if name and low.startswith(name.lower())]
    if len(extended) == 1:
        return lowered[extended[0]]
    import difflib  # here: only a mistake needs it

    close = difflib.get_close_matches(name.lower(), extended or lowered, n=1)
    return lowered[close[0]] if close else None


def _wrong_type(where: str, expected: str, value: Any) -> ConfigError:
    literal = _literal(value)
    got = f"{literal} ({_toml_type(value)})" if literal is not None else _toml_type(value)
    return ConfigError(f"{where}: expected {expected}, got {got}")


def _wrong_value(where: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{where}: expected {expected}, got {_literal(value)}")


def _literal(value: Any) -> str | None:
    """The value as TOML writes it; None for an array or a table, which its type describes enough."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, date | time):
        return value.isoformat()
    return None


def _toml_type(value: Any) -> str:
    kinds: tuple[tuple[type | tuple[type, ...], str], ...] = (
        (bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"), (list, "an array"),
        (dict, "a table"), ((date, time), "a date/time"))
    return next((name for kind, name in kinds if isinstance(value, kind)), type(value).__name__)
