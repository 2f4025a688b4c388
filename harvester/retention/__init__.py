"""Which agents delete their own session history, and what their settings make of it (``harvester status``).

The entry point: :func:`status_entries` (``status``'s list: what each installed agent will delete on its own,
:func:`warnings`, each said by :func:`describe`).

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
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harvester.parsers import HARNESSES
from harvester.retention import others
from harvester.retention.files import (
    Env,
    Retention,
    _days,
    _env_path,
    _exists,
    _Files,
    _get,
    _has,
    _listing,
    _listing_dirs,
    _roots_exist,
    _shown,
    _text,
    _truthy,
    _Unreadable,
    _valid_days,
    _whole_number,
)

ARCHIVE_KEEPS = "harvester's archive keeps them"
ARCHIVE_OFF = "harvester's bank keeps what it imported, but not the raw files: the archive is off (archive = false)"

# Claude Code's managed (policy) settings live outside HOME and no variable moves them (its rI()).
CLAUDE_MANAGED_DIR = Path({"darwin": "/Library/Application Support/ClaudeCode",
                           "win32": "C:\\Program Files\\ClaudeCode"}.get(sys.platform, "/etc/claude-code"))
# Gemini CLI's system-wide files, unless GEMINI_CLI_SYSTEM_SETTINGS_PATH / _DEFAULTS_PATH say otherwise.
GEMINI_SYSTEM_DIR = Path({"darwin": "/Library/Application Support/GeminiCli",
                          "win32": "C:\\ProgramData\\gemini-cli"}.get(sys.platform, "/etc/gemini-cli"))


def warnings(env: Env, home: Path) -> list[Retention]:
    """What each installed agent will delete on its own, per :data:`POLICIES`."""
    found: list[Retention] = []
    for policy in POLICIES:
        if policy.installed(env, home):
            found += policy.read(env, home)
    return found


def describe(warning: Retention, home: Path, archive: bool = True) -> str:
    """One line for ``status``: what, why (the setting and its file), and that the archive keeps it."""
    if warning.default:
        where = f"{warning.setting}, default"
        if warning.unset_in:
            where += "; " + ", ".join(_shown(f, home) for f in warning.unset_in) + " " + \
                     ("sets none" if len(warning.unset_in) == 1 else "set none")
    else:
        where = f"{warning.setting} in {_shown(warning.file or '?', home)}"
    problems = "".join(f"; {p}" for p in warning.problems)
    return f"{warning.harness} {warning.deletes} ({where}{problems}) — {ARCHIVE_KEEPS if archive else ARCHIVE_OFF}"


@dataclass(frozen=True, slots=True)
class Policy:
    """One agent that deletes history on its own: whether it is installed here, and what it will do."""

    harness: str
    installed: Callable[[Env, Path], bool]
    read: Callable[[Env, Path], list[Retention]]


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


def _claude_warning(days: int, file: str | None, default: bool, files: _Files) -> Retention:
    return Retention(CLAUDE_CODE, f"deletes sessions older than {_days(days)}", CLEANUP_PERIOD_DAYS, file, days,
                     default, tuple(files.unset), tuple(files.problems))


def _claude_invalid(raw: Any, path: Path, files: _Files, when: str = "") -> Retention:
    return Retention(CLAUDE_CODE, f"skips its cleanup{when} while {CLEANUP_PERIOD_DAYS} is {raw!r} (it takes a "
                     f"whole number of days, at least 1); fixed, it deletes sessions older than that",
                     CLEANUP_PERIOD_DAYS, str(path), raw, False, tuple(files.unset), tuple(files.problems))


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
    try:  # read as settings are (connect.files): a FIFO there is refused, not waited on
        registry = json.loads(_text(base / "projects.json") or "")
        found.update(Path(p) for p in (_get(registry, "projects") or {}) if isinstance(p, str))
    except (_Unreadable, ValueError, TypeError, RecursionError):
        pass  # the registry is Gemini's cache, not a setting: nothing to warn about
    for folder in _listing_dirs(base / "tmp"):
        try:
            found.add(Path((_text(folder / ".project_root") or "").strip()))
        except _Unreadable:
            continue
    return sorted(p for p in found if p.is_absolute() and p != home)


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
    # Name the key a file set, if one did (the other may be a default).
    key = next((k for k in ("maxAge", "maxCount") if k in origin and config.get(k) is not None),
               "maxAge" if max_age is not None else "maxCount")
    file = origin.get(key)
    return Retention(GEMINI_CLI, f"deletes the sessions{where or ' of each project, when started there,'} "
                     + " and ".join(parts), f"{'.'.join(_RETENTION)}.{key}", str(file) if file else None,
                     config.get(key), file is None, tuple(files.unset), tuple(files.problems))


POLICIES: tuple[Policy, ...] = (
    Policy(CLAUDE_CODE, _claude_installed, _claude_code),
    Policy(GEMINI_CLI, lambda env, home: _exists(_gemini_dir(env, home)), _gemini_cli),
    Policy(others.KILO, others.kilo_installed, others.kilo),
    Policy(others.KILO_CODE, _roots_exist(others.KILO_CODE), others.kilo_code),
    Policy(others.OPENCLAW, others.openclaw_installed, others.openclaw),
    Policy(others.OH_MY_PI, others.oh_my_pi_installed, others.oh_my_pi),
    Policy(others.WARP, others.warp_installed, others.warp),
)


def harness_names() -> Iterable[str]:
    """The harnesses :data:`POLICIES` covers (for tests: each must be a harness harvester reads)."""
    return (p.harness for p in POLICIES)


def status_entries(env: Env, home: Path, archive: bool = True) -> list[dict[str, Any]]:
    """``status``'s ``"retention"`` list: each warning's fields and its line of text (``archive``: whether
    harvester's raw archive is on, to say what keeps the history)."""
    return [{**asdict(w), "text": describe(w, home, archive)} for w in warnings(env, home)]
