"""Settings: where things live, and the few knobs that change them.

The entry point: :func:`load` (defaults, the file, the environment and the command line's options made one
:class:`Settings`, every value checked).

Zero configuration is the normal case: every value has a default. An optional TOML file
(``~/.config/harvester/config.toml`` on Linux; ``HARVESTER_CONFIG`` points elsewhere) overrides the
defaults, environment variables override the file, command-line options override everything.
Each value remembers where it came from, which ``harvester config`` prints.

    bank = "~/harvester/bank.sqlite"
    bank_id_template = "coding-agent::{gitProject}"
    harnesses = ["claude-code", "codex"]        # enabled; default: all
    exclude = ["~/clients/secret"]              # sessions whose cwd is under these: never captured
    log_level = "info"
    archive = true              # keep the raw archive beside the bank (harvester/capture/archive); false: none
    archive_max_age = "365d"    # archive retention, off by default: drop what is older (d, w, y)...
    archive_max_size = "20GB"   # ...or past this size (KB, MB, GB, TB), oldest first

    [roots]                                     # extra roots per harness, beside the defaults
    claude-code = ["/mnt/old-laptop/.claude/projects"]

    [timings]
    debounce_ms = 20          # file events on one source within this window make one read
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

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from harvester.config.common import (
    APP,
    BANK_ENV,
    BANK_ID_TEMPLATE_ENV,
    CONFIG_ENV,
    LOG_LEVEL_ENV,
    RUNTIME_ENV,
    TEAM_BANK_ENV,
    ConfigError,
    _absolute_path,
    _absolute_paths,
    _age,
    _boolean,
    _harness_name,
    _harness_names,
    _log_level,
    _nonempty_string,
    _only_known_keys,
    _positive_number,
    _show_bytes,
    _show_days,
    _size,
    _table,
    _template,
)

if TYPE_CHECKING:
    from harvester.config.limits import ReadLimits
    from harvester.config.sinks import HindsightSettings
    from harvester.config.team import TeamSettings

DEFAULT_BANK_ID_TEMPLATE = "coding-agent::{gitProject}"


@dataclass(slots=True)
class Timings:
    # An append is searchable about this long plus ~10 ms after it is written (bench/bench_service.py: p50 59 ms
    # at 50, 22 ms at 15, back to back on the same machine); an agent's burst of lines within it is one read.
    debounce_ms: int = 20
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
    archive_max_age_days: float | None = None  # archive retention (harvester/capture/archive/expiry.py); None: off
    archive_max_size_bytes: int | None = None
    sinks: dict[str, HindsightSettings] = field(default_factory=dict)  # [sinks.*] (harvester/config/sinks.py)
    team: TeamSettings | None = None  # team_bank + [team] (harvester/config/team.py); None: no team bank
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
        """What reading one source may cost (:class:`harvester.config.limits.ReadLimits`)."""
        from harvester.config.limits import ReadLimits

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
         bank_id_template: str | None = None, *, harness_names: Collection[str]) -> Settings:
    """Defaults, then the config file, then the environment, then these options. Every value is checked
    wherever it comes from; a mistake raises :class:`ConfigError`.

    ``harness_names`` are the names a file may use (``harnesses``, ``[roots]``, a sink's harnesses): the parser
    registry's, ``harvester.parsers.HARNESSES``, passed in by the caller because the configuration imports no
    stage of the pipeline (it is below them all)."""
    settings = Settings(bank=default_bank_path())
    _apply_file_if_any(settings, env, harness_names)
    _apply_environment(settings, env)
    _apply_team(settings, env)
    _apply_options(settings, bank, bank_id_template)
    return settings


def _apply_file_if_any(settings: Settings, env: Mapping[str, str], harness_names: Collection[str]) -> None:
    path = config_path(env)
    chosen_by = f"${CONFIG_ENV}" if env.get(CONFIG_ENV) else "default location"
    settings.config_path, settings.origins["config_file"] = path, chosen_by
    named = f"${CONFIG_ENV}: {path}" if env.get(CONFIG_ENV) else str(path)
    if path.is_file():
        settings.config_file = path
        _apply_file(settings, path, harness_names)
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
# Sections of numbers, and whether theirs must be whole: the limits count megabytes; timings may be
# fractions (the service's tests run it at 0.3 s).
_NUMBER_SECTIONS = {"timings": False, "limits": True}


def _apply_file(settings: Settings, path: Path, harness_names: Collection[str]) -> None:
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
        "bank": _absolute_path, "bank_id_template": _template, "harnesses": lambda where, value: _harness_names(where, value, harness_names),
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
        for name, paths in _roots(f"{label}: roots", data["roots"], harness_names).items():
            settings.roots[name] = paths
            settings.origins[f"roots.{name}"] = label
    for section, whole in _NUMBER_SECTIONS.items():
        if section in data:
            _apply_numbers(settings, label, section, data[section], whole)
    if "sinks" in data:
        from harvester.config.sinks import parse_sinks

        settings.sinks = parse_sinks(f"{label}: sinks", data["sinks"], harness_names)
        for name in settings.sinks:
            settings.origins[f"sinks.{name}"] = label
    if "team_bank" in data or "team" in data:
        settings.team_file = (label, data.get("team_bank"), data.get("team"))


def _apply_team(settings: Settings, env: Mapping[str, str]) -> None:
    """``team_bank`` (the file; ``$HARVESTER_TEAM_BANK`` wins) and ``[team]``, checked once both are known."""
    label, url, table = settings.team_file or ("", None, None)
    if url is None and table is None and not env.get(TEAM_BANK_ENV):
        return  # the normal case: no team bank, and nothing of harvester/config/team.py imported for it
    from harvester.config.team import check_url, parse_team

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


def _roots(where: str, value: Any, harness_names: Collection[str]) -> dict[str, list[Path]]:
    table = _table(where, value, "a table of harness = [paths]")
    # A root for a harness that does not exist is the same typo as in `harnesses`: its files unread.
    return {_harness_name(where, name, harness_names): _absolute_paths(f"{where}.{name}", paths) for name, paths in table.items()}
