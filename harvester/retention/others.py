"""The agents whose deletion is opt-in or partial: Kilo CLI, the Kilo Code extension, OpenClaw, oh-my-pi.

Sources: ``fixtures/retention/SOURCE.md``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from harvester.capture import foreign_sqlite
from harvester.parsers import HARNESSES, cline_roots
from harvester.retention.files import (
    Env,
    Retention,
    _days,
    _env_path,
    _exists,
    _Files,
    _first_line,
    _get,
    _has,
    _shown,
    _valid_days,
)

# ------------------------------------------------------------------------------------------- Kilo CLI
#
# Opt-in: with retention.enabled true in its global config, Kilo's backend deletes, machine-wide and at
# most every 23 hours, the sessions (with their forks) last updated more than retention.maxAgeDays ago
# (default 30; anything but a whole number >= 1 means 30).

KILO = "kilo"
KILO_CONFIG_FILES = ("config.json", "kilo.json", "kilo.jsonc", "opencode.json", "opencode.jsonc")  # merge order


def _kilo_config_dir(env: Env, home: Path) -> Path:
    return (_env_path(env, "XDG_CONFIG_HOME") or home / ".config") / "kilo"


def kilo_installed(env: Env, home: Path) -> bool:
    return _exists(_kilo_config_dir(env, home), *HARNESSES[KILO].roots(env, home))


def kilo(env: Env, home: Path) -> list[Retention]:
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


def kilo_code(env: Env, home: Path) -> list[Retention]:
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


def openclaw_installed(env: Env, home: Path) -> bool:
    return _exists(_openclaw_config(env, home), *HARNESSES[OPENCLAW].roots(env, home))


def _off(value: Any) -> bool:
    return value is False or value == 0 or (isinstance(value, str) and value.strip() in ("0", "0h", "0d", "0s"))


def openclaw(env: Env, home: Path) -> list[Retention]:
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


def oh_my_pi_installed(env: Env, home: Path) -> bool:
    return _exists(_omp_agent_dir(env, home), *HARNESSES[OH_MY_PI].roots(env, home))


def oh_my_pi(env: Env, home: Path) -> list[Retention]:
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


WARP = "warp"
WARP_KEPT_CONVERSATIONS = 200  # MAX_PERSISTED_CONVERSATION_COUNT (warpdotdev/warp app/src/persistence/agent.rs)


def warp_installed(env: Env, home: Path) -> bool:
    return any((root / "warp.sqlite").exists() for root in HARNESSES[WARP].roots(env, home))


def warp(env: Env, home: Path) -> list[Retention]:
    # No setting: every save prunes the oldest conversations (and their tasks) past the cap.
    return [Retention(WARP, f"keeps only its {WARP_KEPT_CONVERSATIONS} most recent agent conversations: older ones "
                      "are deleted, with their tasks, whenever a conversation is saved", "(none: a fixed limit)",
                      None, WARP_KEPT_CONVERSATIONS, True)]
