"""Settings: where things live, and the few knobs that change them.

Zero configuration is the normal case: every value has a default. An optional TOML file
(``~/.config/harvester/config.toml`` on Linux; ``HARVESTER_CONFIG`` points elsewhere) overrides the
defaults, environment variables override the file, command-line options override everything.
Each value remembers where it came from, which ``harvester config`` prints.

    bank = "~/harvester/bank.sqlite"
    bank_id_template = "coding-agent::{gitProject}"
    harnesses = ["claude-code", "codex"]        # enabled; default: all
    exclude = ["~/clients/secret"]              # sessions whose cwd is under these: never captured
    log_level = "info"
    archive = true              # keep the raw archive beside the bank (harvester/archive); false: none
    archive_max_age = "365d"    # archive retention, off by default: drop what is older (d, w, y)...
    archive_max_size = "20GB"   # ...or past this size (KB, MB, GB, TB), oldest first

    [roots]                                     # extra roots per harness, beside the defaults
    claude-code = ["/mnt/old-laptop/.claude/projects"]

    [timings]
    debounce_ms = 50          # file events on one source within this window make one read
    unfinished_seconds = 30   # re-scan of unfinished sessions, and of agent processes
    recent_minutes = 10       # a source written this recently holds an unfinished session
    idle_end_minutes = 30     # a session idle this long, with no agent process, is ended
    reconcile_minutes = 15    # stat every known source and read what changed
    poll_seconds = 5          # stores that file events cannot follow (SQLite)
    heartbeat_seconds = 10
    quiet_seconds = 60        # a JSONL file unchanged this long: a last line without its newline is taken

    [limits]
    max_decompressed_mb = 4096  # a compressed source (.jsonl.zst) decompressing to more is read no further

No setting is silently ignored or left to do nothing: an unknown key (top level or in a section), an unknown harness
(in ``harnesses`` or as a ``[roots]`` key), a value of the wrong type, a number that is not positive, a
relative path, a log level other than debug/info/warning/error, and a bank id template with a brace that
is not ``{gitProject}``, ``{project}`` or ``{harness}`` (from the file, ``$HARVESTER_BANK_ID_TEMPLATE``
or ``--bank-id-template``) are a :class:`ConfigError` naming where the value came from, the key, the
value and what is valid, with the closest valid name suggested.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import date, time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

if TYPE_CHECKING:
    from harvester.reading import ReadLimits
    from harvester.sinks.config import HindsightSettings
    from harvester.team.config import TeamSettings

APP = "harvester"
DEFAULT_BANK_ID_TEMPLATE = "coding-agent::{gitProject}"
BANK_ENV = "HARVESTER_BANK"
BANK_ID_TEMPLATE_ENV = "HARVESTER_BANK_ID_TEMPLATE"
LOG_LEVEL_ENV = "HARVESTER_LOG_LEVEL"
CONFIG_ENV = "HARVESTER_CONFIG"
RUNTIME_ENV = "HARVESTER_RUNTIME_DIR"
TEAM_BANK_ENV = "HARVESTER_TEAM_BANK"  # harvester/team/config.py


class ConfigError(Exception):
    """A setting cannot be used (bad TOML, an unknown key or name, a value of the wrong type or range).
    The message is one line that starts with where the value came from (the file and its key, the
    variable, the option): ``<where>: expected <what>, got <value>`` or ``<where>: unknown <kind>
    "<name>" (did you mean "<close>"? valid: <names>)``."""


@dataclass(slots=True)
class Timings:
    debounce_ms: int = 50
    unfinished_seconds: float = 30
    recent_minutes: float = 10
    idle_end_minutes: float = 30
    reconcile_minutes: float = 15
    poll_seconds: float = 5
    heartbeat_seconds: float = 10
    quiet_seconds: float = 60  # a JSONL file unchanged this long: a last line without its newline is taken


@dataclass(slots=True)
class Limits:
    max_decompressed_mb: int = 4096  # a compressed source that decompresses to more is read no further


@dataclass(slots=True)
class Settings:
    bank: Path
    bank_id_template: str = DEFAULT_BANK_ID_TEMPLATE
    harnesses: list[str] | None = None  # None: every harness
    roots: dict[str, list[Path]] = field(default_factory=dict)
    exclude: list[Path] = field(default_factory=list)
    log_level: str = "info"
    timings: Timings = field(default_factory=Timings)
    limits: Limits = field(default_factory=Limits)
    archive: bool = True
    archive_max_age_days: float | None = None  # archive retention (harvester/archive/retention.py); None: off
    archive_max_size_bytes: int | None = None
    sinks: dict[str, HindsightSettings] = field(default_factory=dict)  # [sinks.*] (harvester/sinks/config.py)
    team: TeamSettings | None = None  # team_bank + [team] (harvester/team/config.py); None: no team bank
    team_file: tuple[str, Any, Any] | None = field(default=None, repr=False)  # (file, team_bank, [team]) as read
    config_file: Path | None = None  # the file read; None when there is none
    config_path: Path | None = None  # where the file was looked for, found or not
    origins: dict[str, str] = field(default_factory=dict)  # setting -> where its value came from

    def enabled(self, name: str) -> bool:
        return self.harnesses is None or name in self.harnesses

    def excluded(self, cwd: str | None) -> bool:
        if not cwd:
            return False
        path = os.path.normpath(cwd)
        return any(path == str(e) or path.startswith(str(e) + os.sep) for e in self.exclude)

    def describe(self) -> list[tuple[str, Any, str]]:
        """(setting, effective value, where it came from), for ``harvester config``."""
        rows: list[tuple[str, Any, str]] = [
            ("config_file", str(self.config_path) if self.config_path else None, self.origins.get("config_file", "")),
            ("bank", str(self.bank), self.origins.get("bank", "default")),
            ("bank_id_template", self.bank_id_template, self.origins.get("bank_id_template", "default")),
            ("harnesses", self.harnesses or "all", self.origins.get("harnesses", "default")),
            ("exclude", [str(p) for p in self.exclude], self.origins.get("exclude", "default")),
            ("log_level", self.log_level, self.origins.get("log_level", "default")),
            ("archive", self.archive, self.origins.get("archive", "default")),
            ("archive_max_age", _show_days(self.archive_max_age_days), self.origins.get("archive_max_age", "default")),
            ("archive_max_size", _show_bytes(self.archive_max_size_bytes),
             self.origins.get("archive_max_size", "default")),
        ]
        for name, paths in sorted(self.roots.items()):
            rows.append((f"roots.{name}", [str(p) for p in paths], self.origins.get(f"roots.{name}", "")))
        if self.team is not None:
            for key, value in self.team.describe():
                rows.append((f"team.{key}" if key != "url" else "team_bank", value,
                             self.origins.get("team_bank" if key == "url" else "team", "")))
        for sink, options in sorted(self.sinks.items()):
            for key, value in options.describe():
                rows.append((f"sinks.{sink}.{key}", value, self.origins.get(f"sinks.{sink}", "")))
        for section, values in (("timings", self.timings), ("limits", self.limits)):
            for f in fields(values):
                key = f"{section}.{f.name}"
                rows.append((key, getattr(values, f.name), self.origins.get(key, "default")))
        return rows

    def read_limits(self) -> ReadLimits:
        """What reading one source may cost (harvester.reading.ReadLimits)."""
        from harvester.reading import ReadLimits

        return ReadLimits(max_decompressed_bytes=self.limits.max_decompressed_mb * 1024 * 1024,
                          quiet_seconds=self.timings.quiet_seconds)


def default_bank_path() -> Path:
    return platformdirs.user_data_path(APP) / "bank.sqlite"


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    return platformdirs.user_config_path(APP) / "config.toml"


def runtime_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where the service keeps its lock and heartbeat: the per-user runtime dir (tmpfs, cleared at
    logout) when the system has one, else the state dir."""
    if env.get(RUNTIME_ENV):
        return Path(env[RUNTIME_ENV]).expanduser()
    if env.get("XDG_RUNTIME_DIR") and os.path.isdir(env["XDG_RUNTIME_DIR"]):
        return Path(env["XDG_RUNTIME_DIR"]) / APP
    return platformdirs.user_state_path(APP)


def home(env: Mapping[str, str] = os.environ) -> Path:
    return Path(env.get("HOME") or Path.home())


def load(env: Mapping[str, str] = os.environ, bank: str | None = None,
         bank_id_template: str | None = None) -> Settings:
    """Defaults, then the config file, then the environment, then these options. Every value is checked
    wherever it comes from; a mistake raises :class:`ConfigError`."""
    settings = Settings(bank=default_bank_path())
    _apply_file_if_any(settings, env)
    _apply_environment(settings, env)
    _apply_team(settings, env)
    _apply_options(settings, bank, bank_id_template)
    return settings


def _apply_file_if_any(settings: Settings, env: Mapping[str, str]) -> None:
    path = config_path(env)
    chosen_by = f"${CONFIG_ENV}" if env.get(CONFIG_ENV) else "default location"
    settings.config_path, settings.origins["config_file"] = path, chosen_by
    named = f"${CONFIG_ENV}: {path}" if env.get(CONFIG_ENV) else str(path)
    if path.is_file():
        settings.config_file = path
        _apply_file(settings, path)
    elif path.exists():
        raise ConfigError(f"{named} is not a file")
    elif env.get(CONFIG_ENV):  # absent from the default location is the normal case: no file
        raise ConfigError(f"{named} does not exist")


def _apply_environment(settings: Settings, env: Mapping[str, str]) -> None:
    """A variable set to the empty string counts as unset, as for most tools (``VAR= cmd`` clears it)."""
    if env.get(BANK_ENV):
        settings.bank, settings.origins["bank"] = Path(env[BANK_ENV]).expanduser(), f"${BANK_ENV}"
    if env.get(BANK_ID_TEMPLATE_ENV):
        settings.bank_id_template = _template(f"${BANK_ID_TEMPLATE_ENV}", env[BANK_ID_TEMPLATE_ENV])
        settings.origins["bank_id_template"] = f"${BANK_ID_TEMPLATE_ENV}"
    if env.get(LOG_LEVEL_ENV):
        settings.log_level = _log_level(f"${LOG_LEVEL_ENV}", env[LOG_LEVEL_ENV])
        settings.origins["log_level"] = f"${LOG_LEVEL_ENV}"


def _apply_options(settings: Settings, bank: str | None, bank_id_template: str | None) -> None:
    """An option given as the empty string is a mistake (a variable that expanded to nothing), not a
    request for the default. A relative ``--bank`` is relative to where the command runs, as any path
    typed on a command line."""
    if bank is not None:
        settings.bank = Path(_nonempty_string("--bank", bank, "a path")).expanduser()
        settings.origins["bank"] = "--bank"
    if bank_id_template is not None:
        settings.bank_id_template = _template("--bank-id-template", bank_id_template)
        settings.origins["bank_id_template"] = "--bank-id-template"


# --- the file ---

FILE_KEYS = ("archive", "archive_max_age", "archive_max_size", "bank", "bank_id_template", "exclude", "harnesses",
             "limits", "log_level", "roots", "sinks", "team", "team_bank", "timings")
LOG_LEVELS = ("debug", "info", "warning", "error")
# What harvester.gitident.bank_id fills in a template, written {name} (tests/test_config.py checks that
# it fills each). Here, not there: gitident imports GitPython, which checking a template needs not.
BANK_ID_PLACEHOLDERS = ("gitProject", "project", "harness")
# Sections of numbers, and whether theirs must be whole: the limits count megabytes; timings may be
# fractions (the service's tests run it at 0.3 s).
_NUMBER_SECTIONS = {"timings": False, "limits": True}


def _apply_file(settings: Settings, path: Path) -> None:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from exc
    if text.replace("\r\n", "\n").strip(" \t\n"):  # else only TOML's whitespace and newlines: no settings
        import tomllib  # here: most commands run without a config file, or with an empty one

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    else:
        data = {}
    label = str(path)
    _only_known_keys(label, data, FILE_KEYS)
    checks: dict[str, Callable[[str, Any], Any]] = {
        "bank": _absolute_path, "bank_id_template": _template, "harnesses": _harness_names,
        "exclude": _absolute_paths, "log_level": _log_level,
    }
    for key, check in checks.items():
        if key in data:
            setattr(settings, key, check(f"{label}: {key}", data[key]))
            settings.origins[key] = label
    retention: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
        "archive": ("archive", _boolean), "archive_max_age": ("archive_max_age_days", _age),
        "archive_max_size": ("archive_max_size_bytes", _size)}
    for key, (attribute, check) in retention.items():
        if key in data:
            setattr(settings, attribute, check(f"{label}: {key}", data[key]))
            settings.origins[key] = label
    if "roots" in data:
        for name, paths in _roots(f"{label}: roots", data["roots"]).items():
            settings.roots[name] = paths
            settings.origins[f"roots.{name}"] = label
    for section, whole in _NUMBER_SECTIONS.items():
        if section in data:
            _apply_numbers(settings, label, section, data[section], whole)
    if "sinks" in data:
        from harvester.sinks.config import parse_sinks

        settings.sinks = parse_sinks(f"{label}: sinks", data["sinks"])
        for name in settings.sinks:
            settings.origins[f"sinks.{name}"] = label
    if "team_bank" in data or "team" in data:
        settings.team_file = (label, data.get("team_bank"), data.get("team"))


def _apply_team(settings: Settings, env: Mapping[str, str]) -> None:
    """``team_bank`` (the file; ``$HARVESTER_TEAM_BANK`` wins) and ``[team]``, checked once both are known."""
    label, url, table = settings.team_file or ("", None, None)
    if url is None and table is None and not env.get(TEAM_BANK_ENV):
        return  # the normal case: no team bank, and nothing of harvester/team imported for it
    from harvester.team.config import check_url, parse_team

    where_url = f"{label}: team_bank"
    if env.get(TEAM_BANK_ENV):
        url, where_url = env[TEAM_BANK_ENV], f"${TEAM_BANK_ENV}"
    if url is not None:
        url = check_url(where_url, url)
        settings.origins["team_bank"] = where_url.removesuffix(": team_bank")
    if url is not None or table is not None:
        settings.team = parse_team(f"{label or '(no file)'}: team", table, url)
        settings.origins["team"] = label or "default"


def _apply_numbers(settings: Settings, label: str, section: str, value: Any, whole: bool) -> None:
    target = getattr(settings, section)
    table = _table(f"{label}: {section}", value, "a table")
    _only_known_keys(f"{label}: {section}", table, sorted(f.name for f in fields(target)))
    for key, number in table.items():
        setattr(target, key, _positive_number(f"{label}: {section}.{key}", number, whole))
        settings.origins[f"{section}.{key}"] = label


def _roots(where: str, value: Any) -> dict[str, list[Path]]:
    table = _table(where, value, "a table of harness = [paths]")
    # A root for a harness that does not exist is the same typo as in `harnesses`: its files unread.
    return {_harness_name(where, name): _absolute_paths(f"{where}.{name}", paths) for name, paths in table.items()}


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


def _harness_names(where: str, value: Any) -> list[str]:
    names = _array(where, value, "an array of harness names")
    if not names:
        raise ConfigError(f"{where}: expected at least one harness name "
                          "(leave harnesses out to capture every agent), got []")
    return [_harness_name(where, name) for name in names]


def _harness_name(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _wrong_type(where, "a harness name (a string)", value)
    known = _known_harnesses()
    if value not in known:
        raise _unknown(where, "harness", value, known)
    return value


def _known_harnesses() -> list[str]:
    # Imported here: harvester.log and harvester.units import this module and need no parsers, the
    # costliest import there is (0.2 s); only a file naming harnesses needs them.
    from harvester.parsers import HARNESSES

    return sorted(HARNESSES)


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
    which difflib finds too short to match), else difflib's closest, ignoring case."""
    lowered = {choice.lower(): choice for choice in valid}
    extended = [choice for low, choice in lowered.items() if name and low.startswith(name.lower())]
    if len(extended) == 1:
        return extended[0]
    import difflib  # here: only a mistake needs it

    close = difflib.get_close_matches(name.lower(), lowered, n=1)
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
