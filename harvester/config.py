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
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

if TYPE_CHECKING:
    from harvester.reading import ReadLimits

APP = "harvester"
DEFAULT_BANK_ID_TEMPLATE = "coding-agent::{gitProject}"
BANK_ENV = "HARVESTER_BANK"
BANK_ID_TEMPLATE_ENV = "HARVESTER_BANK_ID_TEMPLATE"
LOG_LEVEL_ENV = "HARVESTER_LOG_LEVEL"
CONFIG_ENV = "HARVESTER_CONFIG"
RUNTIME_ENV = "HARVESTER_RUNTIME_DIR"


class ConfigError(Exception):
    """The configuration file cannot be used (bad TOML, an unknown key, a value of the wrong type)."""


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
    config_file: Path | None = None
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
            ("config_file", str(self.config_file) if self.config_file else None, self.origins.get("config_file", "")),
            ("bank", str(self.bank), self.origins.get("bank", "default")),
            ("bank_id_template", self.bank_id_template, self.origins.get("bank_id_template", "default")),
            ("harnesses", self.harnesses or "all", self.origins.get("harnesses", "default")),
            ("exclude", [str(p) for p in self.exclude], self.origins.get("exclude", "default")),
            ("log_level", self.log_level, self.origins.get("log_level", "default")),
        ]
        for name, paths in sorted(self.roots.items()):
            rows.append((f"roots.{name}", [str(p) for p in paths], self.origins.get(f"roots.{name}", "")))
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
    """Defaults, then the config file, then the environment, then these options."""
    settings = Settings(bank=default_bank_path())
    origins = settings.origins
    path = config_path(env)
    if path.is_file():
        settings.config_file = path
        origins["config_file"] = f"${CONFIG_ENV}" if env.get(CONFIG_ENV) else "default location"
        _apply_file(settings, path)
    elif env.get(CONFIG_ENV):
        raise ConfigError(f"{CONFIG_ENV} names {path}, which does not exist")
    for key, name in (("bank", BANK_ENV), ("bank_id_template", BANK_ID_TEMPLATE_ENV), ("log_level", LOG_LEVEL_ENV)):
        if env.get(name):
            setattr(settings, key, Path(env[name]).expanduser() if key == "bank" else env[name])
            origins[key] = f"${name}"
    if bank:
        settings.bank, origins["bank"] = Path(bank).expanduser(), "--bank"
    if bank_id_template:
        settings.bank_id_template, origins["bank_id_template"] = bank_id_template, "--bank-id-template"
    return settings


def _apply_file(settings: Settings, path: Path) -> None:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    where = str(path)
    known = {"bank", "bank_id_template", "harnesses", "exclude", "log_level", "roots", "timings", "limits"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
    if "bank" in data:
        settings.bank = Path(_typed(data, "bank", str, path)).expanduser()
        settings.origins["bank"] = where
    for key in ("bank_id_template", "log_level"):
        if key in data:
            setattr(settings, key, _typed(data, key, str, path))
            settings.origins[key] = where
    if "harnesses" in data:
        settings.harnesses = [str(h) for h in _typed(data, "harnesses", list, path)]
        settings.origins["harnesses"] = where
    if "exclude" in data:
        settings.exclude = [Path(str(p)).expanduser() for p in _typed(data, "exclude", list, path)]
        settings.origins["exclude"] = where
    for name, paths in _typed(data, "roots", dict, path).items() if "roots" in data else ():
        settings.roots[name] = [Path(str(p)).expanduser() for p in paths]
        settings.origins[f"roots.{name}"] = where
    for key, value in _typed(data, "timings", dict, path).items() if "timings" in data else ():
        if key not in {f.name for f in fields(Timings)} or not isinstance(value, int | float):
            raise ConfigError(f"{path}: timings.{key} is not a known timing (a number)")
        setattr(settings.timings, key, value)
        settings.origins[f"timings.{key}"] = where
    for key, value in _typed(data, "limits", dict, path).items() if "limits" in data else ():
        if key not in {f.name for f in fields(Limits)} or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{path}: limits.{key} is not a known limit (a positive whole number)")
        setattr(settings.limits, key, value)
        settings.origins[f"limits.{key}"] = where


def _typed(data: dict[str, Any], key: str, kind: type, path: Path) -> Any:
    value = data[key]
    if not isinstance(value, kind):
        raise ConfigError(f"{path}: {key} must be a {kind.__name__}")
    return value
