"""Install ``harvester run`` as a per-user login service: systemd user unit (Linux), launchd agent (macOS).

``install_plan``/``uninstall_plan`` say what will be done (a :class:`Plan`); ``apply`` does it, or with
``dry_run`` only prints it. What ``harvester status`` says of the unit, and the unit's names and place, are
harvester/status/unit.py's.

The templates are ``harvester/service/templates/harvester.service`` and ``io.harvester.agent.plist`` (the
project's top-level ``service_units/`` is a symlink to that folder; pyproject ships it as package data).
They are :class:`string.Template` texts: ``$python`` is the interpreter's absolute path, ``$log_path`` the
agent's log file, and a doubled dollar sign stands for a literal one.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harvester import config
from harvester.status import unit

if TYPE_CHECKING:
    from string import Template

PLATFORMS = ("systemd", "launchd", "none")
COMMAND_TIMEOUT = 60.0  # enable/bootstrap start the service; that takes seconds, not minutes


@dataclass
class Plan:
    """What install or uninstall will do. ``apply`` writes ``unit_text`` to ``unit_path`` (install only),
    then runs ``commands`` in order; ``notes`` are printed last."""

    platform: str  # "systemd", "launchd", or "none" (no service manager here: notes say why)
    unit_path: Path
    unit_text: str
    commands: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    action: str = "install"  # or "uninstall", which writes nothing (its commands remove the file)


def interpreter() -> str:
    # Absolute, but symlinks are kept: a venv's bin/python is a symlink to the base interpreter, and the
    # resolved path would start Python outside the venv, where harvester is not installed.
    return os.path.abspath(sys.executable)


def log_path(home: Path) -> Path:
    return home / "Library" / "Logs" / "harvester" / "harvester.log"


def template(name: str) -> Template:
    # Imported here: only install (and uninstall) read a template; every other command starts without them.
    from importlib import resources
    from string import Template

    return Template((resources.files("harvester.service") / "templates" / name).read_text(encoding="utf-8"))


def systemd_quote(arg: str) -> str:
    # In a unit file % starts a specifier and $ a variable; whitespace, quotes and backslashes need quoting.
    arg = arg.replace("%", "%%").replace("$", "$$")
    if any(c.isspace() or c in "\"'\\" for c in arg):
        arg = '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def render_systemd(python: str) -> str:
    return template(unit.SERVICE).substitute(python=systemd_quote(python))


def render_launchd(python: str, log: Path) -> str:
    from xml.sax.saxutils import escape  # here: it imports urllib's HTTP machinery, which status needs not

    return template(unit.PLIST).substitute(python=escape(python), log_path=escape(str(log)))


def user_systemd_available() -> tuple[bool, str]:
    """Whether ``systemctl --user`` can talk to a user manager, and why (not)."""
    problem = unit.runtime_problem()
    if problem:
        return False, problem
    try:
        result = subprocess.run(["systemctl", "--user", "show-environment"], capture_output=True, text=True,
                                timeout=unit.QUERY_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"systemctl --user does not answer: {exc}"
    if result.returncode != 0:
        return False, f"systemctl --user show-environment failed: {result.stderr.strip()}"
    return True, "a systemd user manager answers"


def _choose(platform: str | None) -> tuple[str, str]:
    """The platform to install for, and, for "none", the reason."""
    if platform is None:
        if sys.platform == "darwin":
            return "launchd", ""
        available, reason = user_systemd_available()
        return ("systemd", "") if available else ("none", reason)
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; expected one of {', '.join(PLATFORMS)}")
    return platform, "no supported service manager (systemd user manager or launchd) was chosen"


def _unit(platform: str, home: Path) -> tuple[Path, str]:
    if platform == "launchd":
        return unit.unit_path(platform, home), render_launchd(interpreter(), log_path(home))
    return unit.unit_path("systemd", home), render_systemd(interpreter())


def _none_plan(reason: str, home: Path, action: str) -> Plan:
    # Still carries the unit the install would write, so a dry run can show it.
    path, text = _unit("launchd" if sys.platform == "darwin" else "systemd", home)
    notes = [f"harvester cannot be {action}ed as a login service here: {reason}."]
    if action == "install":
        notes.append("Run `harvester run` yourself instead (in a terminal, tmux or screen); it keeps the "
                     "bank current for as long as it runs.")
    return Plan("none", path, text, [], notes, action)


def install_plan(home: Path | None = None, platform: str | None = None) -> Plan:
    home = home or config.home()
    platform, reason = _choose(platform)
    if platform == "none":
        return _none_plan(reason, home, "install")
    path, text = _unit(platform, home)
    if platform == "launchd":
        target = f"gui/{os.getuid()}"
        log = log_path(home)
        # bootout first (a failure means nothing was loaded) so a second install reloads the new plist.
        commands = [["mkdir", "-p", str(log.parent)], ["launchctl", "bootout", f"{target}/{unit.LABEL}"],
                    ["launchctl", "bootstrap", target, str(path)]]
        return Plan(platform, path, text, commands, [f"Logs: {log}"])
    # restart rather than enable --now: a second install (after an upgrade) must run the new code.
    commands = [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", unit.SERVICE],
                ["systemctl", "--user", "restart", unit.SERVICE]]
    notes = [f"Logs: journalctl --user -u {unit.SERVICE} -f",
             "It runs while you are logged in; to keep it running after you log out: loginctl enable-linger"]
    return Plan(platform, path, text, commands, notes)


def uninstall_plan(home: Path | None = None, platform: str | None = None) -> Plan:
    home = home or config.home()
    platform, reason = _choose(platform)
    if platform == "none":
        return _none_plan(reason, home, "uninstall")
    path = unit.unit_path(platform, home)
    if platform == "launchd":
        commands = [["launchctl", "bootout", f"gui/{os.getuid()}/{unit.LABEL}"], ["rm", "-f", str(path)]]
    else:
        commands = [["systemctl", "--user", "disable", "--now", unit.SERVICE], ["rm", "-f", str(path)],
                    ["systemctl", "--user", "daemon-reload"]]
    return Plan(platform, path, "", commands, [], "uninstall")


def run_command(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run one plan command; a command that cannot be started is a failure like any other."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(command, 127, "", str(exc))


def _nothing_to_undo(command: list[str], result: subprocess.CompletedProcess[str]) -> bool:
    """Undoing what is not there is success: it keeps install and uninstall idempotent."""
    text = result.stdout + result.stderr
    if command[:2] == ["launchctl", "bootout"]:  # 3: "No such process", 113: "Could not find service"
        return result.returncode in (3, 113) or "No such process" in text or "Could not find" in text
    if command[:3] == ["systemctl", "--user", "disable"]:
        return "does not exist" in text or "not loaded" in text
    return False


def write_unit(path: Path, text: str) -> bool:
    """Write the unit file unless it already holds exactly this text; whether it was written."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def apply(plan: Plan, dry_run: bool, out: Callable[[str], None]) -> int:
    """Carry out the plan (or with ``dry_run`` only print it); 0 when done, 1 when it could not be."""
    if plan.platform == "none" and not dry_run:
        for note in plan.notes:
            out(note)
        return 1
    if dry_run:
        # A dry run shows what would be done, wherever it runs: reaching no service manager is said, not an error.
        if plan.action == "install":
            out(f"Would write {plan.unit_path}:")
            out(plan.unit_text.rstrip("\n"))
        elif plan.unit_path.exists():
            out(f"Would remove {plan.unit_path}")
        else:
            out(f"No unit at {plan.unit_path}: nothing to remove")
        if plan.commands:
            out("Would run:")
        for command in plan.commands:
            out(f"  {shlex.join(command)}")
        for note in plan.notes:
            out(note)
        return 0
    if plan.action == "install":
        try:
            written = write_unit(plan.unit_path, plan.unit_text)
        except OSError as exc:
            out(f"Cannot write {plan.unit_path}: {exc}")
            return 1
        out(f"Wrote {plan.unit_path}" if written else f"{plan.unit_path} is up to date")
    for command in plan.commands:
        out(f"$ {shlex.join(command)}")
        result = run_command(command)
        if result.returncode == 0:
            continue
        if _nothing_to_undo(command, result):
            out("  (nothing was loaded: fine)")
            continue
        out(f"Failed (exit {result.returncode}): {(result.stderr or result.stdout).strip()}")
        return 1
    for note in plan.notes:
        out(note)
    return 0
