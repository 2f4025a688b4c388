"""Which agents delete their own session history, and what their settings make of it (``harvester status``).

:data:`POLICIES` holds one plain entry per agent that deletes (or rewrites) history on its own; every
other agent keeps its sessions until someone deletes them. ``fixtures/retention/SOURCE.md`` names the
upstream file and version behind each fact, and lists the agents that keep everything.

Each entry reads the agent's settings files the way the agent does (its file names, its precedence, its
dialect: strict JSON, JSON with comments, JSONC, JSON5, YAML, or VS Code's ``state.vscdb``) and reports
what the agent will do with the values it finds there, or with its defaults. Nothing here writes a
file. A file that cannot be read or parsed is named in the warning ("could not read …"), never raised.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from harvester import foreign_sqlite
from harvester.connect import jsonc
from harvester.parsers import HARNESSES, cline_roots

Env = Mapping[str, str]

ARCHIVE_KEEPS = "harvester's archive keeps them"

# Claude Code's managed (policy) settings live outside HOME and no variable moves them (its rI()).
CLAUDE_MANAGED_DIR = Path({"darwin": "/Library/Application Support/ClaudeCode",
                           "win32": "C:\\Program Files\\ClaudeCode"}.get(sys.platform, "/etc/claude-code"))
# Gemini CLI's system-wide files, unless GEMINI_CLI_SYSTEM_SETTINGS_PATH / _DEFAULTS_PATH say otherwise.
GEMINI_SYSTEM_DIR = Path({"darwin": "/Library/Application Support/GeminiCli",
                          "win32": "C:\\ProgramData\\gemini-cli"}.get(sys.platform, "/etc/gemini-cli"))


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


def warnings(env: Env, home: Path) -> list[Retention]:
    """What each installed agent will delete on its own, per :data:`POLICIES`."""
    found: list[Retention] = []
    for policy in POLICIES:
        if policy.installed(env, home):
            found += policy.read(env, home)
    return found


def describe(warning: Retention, home: Path) -> str:
    """One line for ``status``: what, why (the setting and its file), and that the archive keeps it."""
    if warning.default:
        where = f"{warning.setting}, default"
        if warning.unset_in:
            where += "; " + ", ".join(_shown(f, home) for f in warning.unset_in) + " " + \
                     ("sets none" if len(warning.unset_in) == 1 else "set none")
    else:
        where = f"{warning.setting} in {_shown(warning.file or '?', home)}"
    problems = "".join(f"; {p}" for p in warning.problems)
    return f"{warning.harness} {warning.deletes} ({where}{problems}) — {ARCHIVE_KEEPS}"


@dataclass(frozen=True, slots=True)
class Policy:
    """One agent that deletes history on its own: whether it is installed here, and what it will do."""

    harness: str
    installed: Callable[[Env, Path], bool]
    read: Callable[[Env, Path], list[Retention]]


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
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unreadable(exc.__class__.__name__ if isinstance(exc, UnicodeDecodeError) else
                          exc.strerror or str(exc)) from exc


def _parse(text: str, dialect: str) -> Any:
    text = text.removeprefix(_BOM)  # every one of these agents strips a BOM before parsing
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
            return yaml.safe_load(text)
    except (ValueError, RecursionError, yaml.YAMLError) as exc:  # JSONDecodeError and JsoncError are ValueErrors
        raise _Unreadable(_first_line(exc)) from exc
    raise AssertionError(dialect)


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


# ---------------------------------------------------------------------------------------- Claude Code
#
# At most once a day (its .last-cleanup marker) an interactive session deletes, across every project,
# transcripts and their side files whose mtime is older than cleanupPeriodDays (default 30). The value
# is the merge of the user file, the launch directory's .claude/settings.json and settings.local.json,
# any --settings file and the managed settings, later ones winning. A value that fails validation (not
# a whole number >= 1: 0 is rejected since 2.1.89) invalidates the whole file, and while an explicitly
# set cleanupPeriodDays sits beside validation errors Claude Code skips the cleanup altogether.

CLAUDE_CODE = "claude-code"
CLEANUP_PERIOD_DAYS = "cleanupPeriodDays"
CLAUDE_DEFAULT_DAYS = 30


def _claude_dir(env: Env, home: Path) -> Path:
    return _env_path(env, "CLAUDE_CONFIG_DIR") or home / ".claude"


def _claude_installed(env: Env, home: Path) -> bool:
    return _exists(_claude_dir(env, home), *HARNESSES[CLAUDE_CODE].roots(env, home))


def _claude_projects(env: Env, home: Path, files: _Files) -> list[Path]:
    """The directories Claude Code was started in: the keys of ``projects`` in its ``.claude.json``."""
    config = (_env_path(env, "CLAUDE_CONFIG_DIR") or home) / ".claude.json"
    data = files.load(config, "json")
    projects = _get(data, "projects")
    return sorted(Path(p) for p in projects if isinstance(p, str) and Path(p).is_absolute()) \
        if isinstance(projects, dict) else []


def _claude_code(env: Env, home: Path) -> list[Retention]:
    files = _Files(home, [], [])
    user = _claude_dir(env, home) / ("cowork_settings.json" if _truthy(env.get("CLAUDE_CODE_USE_COWORK_PLUGINS"))
                                     else "settings.json")
    managed = [CLAUDE_MANAGED_DIR / "managed-settings.json",
               *sorted(p for p in _listing(CLAUDE_MANAGED_DIR / "managed-settings.d")
                       if p.suffix == ".json" and not p.name.startswith("."))]
    policy: tuple[Path, int] | None = None
    for path in managed:  # drop-ins after the base file, in name order: the last one setting it wins
        data = files.load(path, "json")
        if _has(data, CLEANUP_PERIOD_DAYS):
            days = _valid_days(_get(data, CLEANUP_PERIOD_DAYS))
            if days is None:
                files.problems.append(f"{CLEANUP_PERIOD_DAYS} {_get(data, CLEANUP_PERIOD_DAYS)!r} in "
                                      f"{_shown(str(path), home)} is invalid")
            else:
                policy = (path, days)
    if policy is not None:  # managed settings override every other scope
        return [_claude_warning(policy[1], str(policy[0]), False, files)]

    data = files.load(user, "json")
    out: list[Retention] = []
    if _has(data, CLEANUP_PERIOD_DAYS):
        raw = _get(data, CLEANUP_PERIOD_DAYS)
        user_days = _valid_days(raw)
        if user_days is None:
            out.append(_claude_invalid(raw, user, files))
            user_days = CLAUDE_DEFAULT_DAYS
        else:
            out.append(_claude_warning(user_days, str(user), False, files))
    else:
        if data is not None or not files.problems:
            files.unset.append(str(user))
        user_days = CLAUDE_DEFAULT_DAYS
        out.append(_claude_warning(user_days, None, True, files))

    # The launch directory's files override the user's, and the cleanup then runs over every project.
    project_files = _Files(home, [], [])
    for project in _claude_projects(env, home, project_files):
        if project == home:
            continue  # ~/.claude/settings.json there is the user file itself, read once
        for path in (project / ".claude" / "settings.local.json", project / ".claude" / "settings.json"):
            data = project_files.load(path, "json")
            if not _has(data, CLEANUP_PERIOD_DAYS):
                continue
            raw = _get(data, CLEANUP_PERIOD_DAYS)
            days = _valid_days(raw)
            if days is None:
                out.append(_claude_invalid(raw, path, _Files(home, [], []), f" when started in {project}"))
            elif days != user_days:
                out.append(Retention(CLAUDE_CODE, f"started in {project} deletes sessions older than "
                                     f"{_days(days)}, every project's", CLEANUP_PERIOD_DAYS, str(path), days,
                                     False))
            break  # settings.local.json wins over settings.json
    if project_files.problems:
        first = out[0]
        out[0] = Retention(first.harness, first.deletes, first.setting, first.file, first.value, first.default,
                           first.unset_in, (*first.problems, *project_files.problems))
    return out


def _valid_days(value: Any) -> int | None:
    days = _whole_number(value)
    return days if days is not None and days >= 1 else None


def _claude_warning(days: int, file: str | None, default: bool, files: _Files) -> Retention:
    return Retention(CLAUDE_CODE, f"deletes sessions older than {_days(days)}", CLEANUP_PERIOD_DAYS, file, days,
                     default, tuple(files.unset), tuple(files.problems))


def _claude_invalid(raw: Any, path: Path, files: _Files, when: str = "") -> Retention:
    return Retention(CLAUDE_CODE, f"skips its cleanup{when} while {CLEANUP_PERIOD_DAYS} is {raw!r} (it takes a "
                     f"whole number of days, at least 1); fixed, it deletes sessions older than that",
                     CLEANUP_PERIOD_DAYS, str(path), raw, False, tuple(files.unset), tuple(files.problems))


def _listing(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.is_file()]
    except OSError:
        return []


# ----------------------------------------------------------------------------------------- Gemini CLI
#
# At every start (interactive or not) Gemini CLI deletes, in the project it was started in only, the
# sessions whose last update is older than general.sessionRetention.maxAge (default "30d"), beyond the
# newest maxCount (no default), and unreadable or empty session files; enabled (default true) switches
# it off. Its layers, lowest first: schema defaults, system defaults, user, the project's (a trusted
# folder's only), system settings. A file that does not parse stops Gemini CLI from starting at all.

GEMINI_CLI = "gemini-cli"
_RETENTION = ("general", "sessionRetention")
_PERIOD = re.compile(r"^(\d+)([dhwm])$")
_PERIOD_HOURS = {"h": 1, "d": 24, "w": 24 * 7, "m": 24 * 30}  # "m" is 30 days (sessionCleanup.ts)
_PERIOD_WORDS = {"h": "hour", "d": "day", "w": "week", "m": "month"}


def _gemini_dir(env: Env, home: Path) -> Path:
    return (_env_path(env, "GEMINI_CLI_HOME") or home) / ".gemini"


def _gemini_projects(env: Env, home: Path) -> list[Path]:
    """Projects Gemini CLI has run in: ``projects.json`` keys and each ``tmp/<slug>/.project_root``."""
    base = _gemini_dir(env, home)
    found: set[Path] = set()
    try:
        registry = json.loads((base / "projects.json").read_text(encoding="utf-8"))
        found.update(Path(p) for p in (_get(registry, "projects") or {}) if isinstance(p, str))
    except (OSError, ValueError, TypeError):
        pass  # the registry is Gemini's cache, not a setting: nothing to warn about
    for folder in _listing_dirs(base / "tmp"):
        try:
            found.add(Path((folder / ".project_root").read_text(encoding="utf-8").strip()))
        except (OSError, UnicodeDecodeError):
            continue
    return sorted(p for p in found if p.is_absolute() and p != home)


def _listing_dirs(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.is_dir()]
    except OSError:
        return []


def _gemini_cli(env: Env, home: Path) -> list[Retention]:
    files = _Files(home, [], [])
    system_defaults = _env_path(env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or GEMINI_SYSTEM_DIR / "system-defaults.json"
    system = _env_path(env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH") or GEMINI_SYSTEM_DIR / "settings.json"
    user = _gemini_dir(env, home) / "settings.json"
    below = [(p, files.load(p, "json-comments")) for p in (system_defaults, user)]
    above = [(system, files.load(system, "json-comments"))]
    for path, data in (*below, *above):
        if data is not None and not _has(data, *_RETENTION) and path == user:
            files.unset.append(str(path))
    out: list[Retention] = []
    user_level = _gemini_effective([*below, *above])
    if warning := _gemini_warning(user_level, files, ""):
        out.append(warning)
    for project in _gemini_projects(env, home):
        path = project / ".gemini" / "settings.json"
        project_files = _Files(home, [], [])
        data = project_files.load(path, "json-comments")
        if project_files.problems:
            out.append(Retention(GEMINI_CLI, f"does not start in {project} while its settings do not parse, "
                                 "so deletes nothing there", ".".join(_RETENTION), str(path), None, False,
                                 (), tuple(project_files.problems)))
            continue
        if not _has(data, *_RETENTION):
            continue
        effective = _gemini_effective([*below, (path, data), *above])
        if effective[0] == user_level[0]:
            continue
        warning = _gemini_warning(effective, project_files, f" of {project}, when started there (if it trusts "
                                  "that folder),")
        out.append(warning or Retention(GEMINI_CLI, f"keeps the sessions of {project} (when it trusts that "
                                        "folder): cleanup is off there", ".".join(_RETENTION), str(path),
                                        effective[0], False))
    return out


def _gemini_effective(layers: list[tuple[Path, dict[str, Any] | None]]) -> tuple[dict[str, Any], dict[str, Path]]:
    """The merged ``sessionRetention`` (its schema defaults first) and, per key, the file that set it."""
    merged: dict[str, Any] = {"enabled": True, "maxAge": "30d", "minRetention": "1d"}
    origin: dict[str, Path] = {}
    for path, data in layers:
        block = _get(data, *_RETENTION)
        if isinstance(block, dict):  # customDeepMerge merges this object key by key
            for key, value in block.items():
                merged[key] = value
                origin[key] = path
    return merged, origin


def _period_hours(period: Any) -> tuple[int, str] | None:
    match = _PERIOD.match(period) if isinstance(period, str) else None
    if not match or int(match.group(1)) == 0:
        return None
    n, unit = int(match.group(1)), match.group(2)
    return n * _PERIOD_HOURS[unit], f"{n} {_PERIOD_WORDS[unit]}{'s' if n != 1 else ''}"


def _gemini_warning(effective: tuple[dict[str, Any], dict[str, Path]], files: _Files, where: str) -> Retention | None:
    """None where Gemini CLI itself turns cleanup off (disabled, or a setting its validation refuses)."""
    config, origin = effective
    if files.problems and not origin:  # a file that does not parse: Gemini CLI stops before any cleanup
        return Retention(GEMINI_CLI, "does not start while its settings do not parse, so deletes nothing",
                         ".".join(_RETENTION), None, None, False, (), tuple(files.problems))
    if not config.get("enabled"):
        return None
    max_age = _period_hours(config.get("maxAge")) if config.get("maxAge") else None
    if config.get("maxAge") and max_age is None:
        return None  # validateRetentionConfig: an unreadable maxAge disables the cleanup
    minimum = _period_hours(config.get("minRetention") or "1d") or (24, "1 day")
    if max_age is not None and max_age[0] < minimum[0]:
        return None  # "maxAge cannot be less than minRetention"
    max_count = config.get("maxCount")
    if max_count is not None and (not isinstance(max_count, int | float) or max_count < 1):
        return None
    if max_age is None and max_count is None:
        return None  # "Either maxAge or maxCount must be specified"
    parts = []
    if max_age is not None:
        parts.append(f"older than {max_age[1]}")
    if max_count is not None:
        parts.append(f"beyond the newest {_whole_number(max_count) or max_count}")
    key = "maxAge" if max_age is not None else "maxCount"
    file = origin.get(key)
    return Retention(GEMINI_CLI, f"deletes the sessions{where or ' of each project, when started there,'} "
                     + " and ".join(parts), f"{'.'.join(_RETENTION)}.{key}", str(file) if file else None,
                     config.get(key), file is None, tuple(files.unset), tuple(files.problems))


# ------------------------------------------------------------------------------------------- Kilo CLI
#
# Opt-in: with retention.enabled true in its global config, Kilo's backend deletes, machine-wide and at
# most every 23 hours, the sessions (with their forks) last updated more than retention.maxAgeDays ago
# (default 30; anything but a whole number >= 1 means 30).

KILO = "kilo"
KILO_CONFIG_FILES = ("config.json", "kilo.json", "kilo.jsonc", "opencode.json", "opencode.jsonc")  # merge order


def _kilo_config_dir(env: Env, home: Path) -> Path:
    return (_env_path(env, "XDG_CONFIG_HOME") or home / ".config") / "kilo"


def _kilo(env: Env, home: Path) -> list[Retention]:
    files = _Files(home, [], [])
    enabled_in: Path | None = None
    enabled: Any = None
    days_in: Path | None = None
    days: Any = None
    read: list[Path] = []
    for name in KILO_CONFIG_FILES:
        path = _kilo_config_dir(env, home) / name
        data = files.load(path, "jsonc")
        if data is None:
            continue
        read.append(path)
        if _has(data, "retention", "enabled"):
            enabled, enabled_in = _get(data, "retention", "enabled"), path
        if _has(data, "retention", "maxAgeDays"):
            days, days_in = _get(data, "retention", "maxAgeDays"), path
    if enabled is not True:
        if files.problems:  # it may be switched on in the file we could not read
            return [Retention(KILO, "may delete old sessions (retention.enabled is in a file harvester could not "
                              "read)", "retention.enabled", None, None, False, (), tuple(files.problems))]
        return []
    valid = _valid_days(days)
    effective = valid or 30
    return [Retention(KILO, f"deletes sessions older than {_days(effective)}, every project's (switched on by "
                      f"retention.enabled in {_shown(str(enabled_in), home)})", "retention.maxAgeDays",
                      str(days_in) if valid else None, effective, valid is None,
                      tuple(str(p) for p in read if p != days_in) if valid is None else (), tuple(files.problems))]


# ------------------------------------------------------------------------- Kilo Code (legacy extension)
#
# Opt-in: with autoPurgeEnabled (VS Code global state, not a settings file) the extension deletes, 30 s
# after start and then daily, the task folders whose last activity is older than their kind's retention:
# completed 30 days, unfinished 7, favourites never (each its own autoPurge…RetentionDays key).

KILO_CODE = "kilo-code"
KILO_CODE_EXTENSION = "kilocode.kilo-code"


def _kilo_code(env: Env, home: Path) -> list[Retention]:
    out = []
    for root in cline_roots.kilo_code_roots(env, home):
        if not root.exists():
            continue
        database = root.parent / "state.vscdb"  # <User>/globalStorage/state.vscdb holds every extension's state
        files = _Files(home, [], [])
        state = _vscode_global_state(database, KILO_CODE_EXTENSION, files)
        if state is None and not files.problems:
            continue  # no state yet: the extension's default (off) applies
        if state is None:
            out.append(Retention(KILO_CODE, "may delete old tasks (its state could not be read)", "autoPurgeEnabled",
                                 str(database), None, False, (), tuple(files.problems)))
            continue
        if state.get("autoPurgeEnabled") is not True:
            continue
        completed = _valid_days(state.get("autoPurgeCompletedTaskRetentionDays")) or 30
        unfinished = _valid_days(state.get("autoPurgeIncompleteTaskRetentionDays")) or 7
        favourites = _valid_days(state.get("autoPurgeFavoritedTaskRetentionDays"))
        kept = f"favourites after {_days(favourites)}" if favourites else "favourites kept"
        out.append(Retention(KILO_CODE, f"deletes completed tasks older than {_days(completed)}, unfinished ones "
                             f"older than {_days(unfinished)} ({kept})", "autoPurgeEnabled", str(database), True,
                             False))
    return out


def _vscode_global_state(database: Path, extension: str, files: _Files) -> dict[str, Any] | None:
    """One extension's ``globalState`` object from VS Code's ``state.vscdb`` (key: its identifier)."""
    if not database.exists():
        return None
    try:
        with foreign_sqlite.open_readonly(str(database)) as conn:
            row = conn.execute("SELECT value FROM ItemTable WHERE lower(key) = ?", (extension,)).fetchone()
    except (OSError, sqlite3.Error) as exc:
        files.problems.append(f"could not read {_shown(str(database), files.home)}: {_first_line(exc)}")
        return None
    if row is None:
        return None
    value = row[0].decode("utf-8", "replace") if isinstance(row[0], bytes) else row[0]
    try:
        state = json.loads(value)
    except (TypeError, ValueError) as exc:
        files.problems.append(f"could not read {extension} in {_shown(str(database), files.home)}: "
                              f"{_first_line(exc)}")
        return None
    return state if isinstance(state, dict) else None


# ------------------------------------------------------------------------------------------- OpenClaw
#
# session.maintenance.mode "enforce" (the default) makes the gateway delete disposable runtime sessions
# (cron, hooks, heartbeat, ACP, sub-agents) idle longer than pruneAfter (default 30d) and, past
# maxDiskBytes per agent (default 10gb), the oldest history; cron.sessionRetention (default 24h)
# deletes completed isolated cron runs. "warn" only reports; false/0 switches a limit off.

OPENCLAW = "openclaw"


def _openclaw_config(env: Env, home: Path) -> Path:
    explicit = _env_path(env, "OPENCLAW_CONFIG_PATH")
    if explicit:
        return explicit
    state = _env_path(env, "OPENCLAW_STATE_DIR")
    base = Path(env["OPENCLAW_HOME"]) if Path(env.get("OPENCLAW_HOME") or "").is_absolute() else home
    profile = (env.get("OPENCLAW_PROFILE") or "").strip()
    if state is None:
        state = base / (f".openclaw-{profile}" if profile and profile.lower() != "default" else ".openclaw")
    return state / "openclaw.json"


def _openclaw_installed(env: Env, home: Path) -> bool:
    return _exists(_openclaw_config(env, home), *HARNESSES[OPENCLAW].roots(env, home))


def _off(value: Any) -> bool:
    return value is False or value == 0 or (isinstance(value, str) and value.strip() in ("0", "0h", "0d", "0s"))


def _openclaw(env: Env, home: Path) -> list[Retention]:
    files = _Files(home, [], [])
    path = _openclaw_config(env, home)
    data = files.load(path, "json5")
    if data is None and files.problems:
        return [Retention(OPENCLAW, "deletes old runtime and cron sessions by default", "session.maintenance",
                          None, None, True, (), tuple(files.problems))]
    maintenance = _get(data, "session", "maintenance")
    maintenance = maintenance if isinstance(maintenance, dict) else {}
    unset = (str(path),) if data is not None else ()
    out = []
    if maintenance.get("mode", "enforce") == "enforce":
        prune = maintenance.get("pruneAfter", "30d")
        budget = maintenance.get("maxDiskBytes", "10gb")
        parts = []
        if not _off(prune):
            parts.append(f"runtime sessions (cron, hooks, heartbeat, sub-agents) idle longer than {prune}")
        if not _off(budget):
            parts.append(f"its oldest history once an agent's sessions pass {budget}")
        if parts:
            set_here = "pruneAfter" in maintenance or "maxDiskBytes" in maintenance
            out.append(Retention(OPENCLAW, "deletes " + ", and ".join(parts), "session.maintenance",
                                 str(path) if set_here else None, {"pruneAfter": prune, "maxDiskBytes": budget},
                                 not set_here, () if set_here else unset, tuple(files.problems)))
    cron = _get(data, "cron", "sessionRetention") if _has(data, "cron", "sessionRetention") else "24h"
    if not _off(cron):
        set_here = _has(data, "cron", "sessionRetention")
        out.append(Retention(OPENCLAW, f"deletes completed isolated cron runs after {cron}", "cron.sessionRetention",
                             str(path) if set_here else None, cron, not set_here, () if set_here else unset))
    return out


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


# ------------------------------------------------------------------------------------------- oh-my-pi
#
# Not a deletion of sessions but of their content: every turn oh-my-pi rewrites its session file with
# tool results replaced by a one-line notice, when a later read of the same file supersedes them
# (compaction.supersedeReads) or they were uneventful (compaction.dropUseless); both default on. Its
# settings are YAML: the agent dir's config.yml / config.yaml, then the project's .omp/config.yml.

OH_MY_PI = "oh-my-pi"
_OMP_SETTINGS = ("compaction.supersedeReads", "compaction.dropUseless")


def _omp_agent_dir(env: Env, home: Path) -> Path:
    explicit = _env_path(env, "PI_CODING_AGENT_DIR")
    return explicit or home / (env.get("PI_CONFIG_DIR") or ".omp") / "agent"


def _omp_setting(data: dict[str, Any] | None, dotted: str) -> tuple[bool, Any]:
    """A dotted key written flat (``compaction.dropUseless: false``) or nested (``compaction: {…}``)."""
    if isinstance(data, dict) and dotted in data:
        return True, data[dotted]
    keys = dotted.split(".")
    return _has(data, *keys), _get(data, *keys)


def _oh_my_pi(env: Env, home: Path) -> list[Retention]:
    files = _Files(home, [], [])
    agent = _omp_agent_dir(env, home)
    config = next((agent / n for n in ("config.yml", "config.yaml") if (agent / n).exists()), agent / "config.yml")
    data = files.load(config, "yaml")
    on: list[str] = []
    origin: str | None = None
    for setting in _OMP_SETTINGS:
        present, value = _omp_setting(data, setting)
        if present and value is False:
            continue
        on.append(setting)
        if present:
            origin = str(config)
    if not on:
        return []
    what = {"compaction.supersedeReads": "file reads a later read superseded",
            "compaction.dropUseless": "uneventful tool results"}
    return [Retention(OH_MY_PI, "rewrites its session files, replacing " + " and ".join(what[s] for s in on)
                      + " with a one-line notice", " and ".join(on), origin, True, origin is None,
                      (str(config),) if origin is None and data is not None else (), tuple(files.problems))]


POLICIES: tuple[Policy, ...] = (
    Policy(CLAUDE_CODE, _claude_installed, _claude_code),
    Policy(GEMINI_CLI, lambda env, home: _exists(_gemini_dir(env, home)), _gemini_cli),
    Policy(KILO, lambda env, home: _exists(_kilo_config_dir(env, home), *HARNESSES[KILO].roots(env, home)), _kilo),
    Policy(KILO_CODE, _roots_exist(KILO_CODE), _kilo_code),
    Policy(OPENCLAW, _openclaw_installed, _openclaw),
    Policy(OH_MY_PI, lambda env, home: _exists(_omp_agent_dir(env, home), *HARNESSES[OH_MY_PI].roots(env, home)),
           _oh_my_pi),
)


def harness_names() -> Iterable[str]:
    """The harnesses :data:`POLICIES` covers (for tests: each must be a harness harvester reads)."""
    return (p.harness for p in POLICIES)


def status_entries(env: Env, home: Path) -> list[dict[str, Any]]:
    """``status``'s ``"retention"`` list: each warning's fields and its line of text."""
    return [{**asdict(w), "text": describe(w, home)} for w in warnings(env, home)]
