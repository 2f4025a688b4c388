"""``harvester connect`` / ``disconnect``: our MCP server in every agent's user-level configuration.

The entry points: :func:`plan`, :func:`apply` and :func:`run` (both, as ``connect`` and ``disconnect`` do it).

:func:`plan` reads each agent's files and computes their new text, touching nothing; :func:`apply`
writes the changed ones (:mod:`harvester.connect.files`: atomic, with a backup); :func:`run` is both,
as the commands do it. Why this is safe to run on a person's real files:

- Only the files named in :mod:`harvester.connect.agents` are read, and only our entry (``harvester``)
  and our approval item change in them: each editor proves, by parsing its result, that the document
  says exactly the old one plus (or minus) ours. No session-history store is ever opened.
- A ``harvester`` entry we did not write (:func:`written_by_us`: anything but the entry connect renders
  for a harvester executable) is the user's: connect does not replace it and disconnect does not
  remove it, unless ``force``; then the backup that keeps their version is one no later run overwrites.
- A file that does not parse in the agent's own dialect, or is no regular file of a sane size, is
  refused whole: the agent is reported, none of its files is written, and the other agents go on.
- An agent is planned all at once: its server file and its approval file both change, or neither is
  planned. A file an agent rewrote between our read and our rename is not replaced: the agent is
  planned again from what its files hold now, up to ``files.EDIT_ATTEMPTS`` times.
- The file's final newline stays as it was found (present or absent).
- A second run computes the same text and writes nothing (files keep their bytes and mtime).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harvester.connect import files
from harvester.connect.agents import AGENTS, SERVER_NAME, Agent, Approval, Env, Format, argv_of

__all__ = ["AGENTS", "SERVER_NAME", "AgentPlan", "FileChange", "apply", "plan", "registered", "run",
           "server_command", "written_by_us"]

NOT_INSTALLED = "not installed"
# The editors (jsonc, toml_edit, yaml_edit) are imported when a file is read or edited: status asks whether
# each installed agent holds our server, and on a machine without their files reads none.


def _edit_errors() -> tuple[type[Exception], ...]:
    """What an editor raises for a file it cannot edit (only asked once one did raise)."""
    from harvester.connect import jsonc, toml_edit, yaml_edit

    # RecursionError: the editors bound their depth; this is for what nests deeper than Python's stack anyway.
    return jsonc.JsoncError, toml_edit.TomlEditError, yaml_edit.YamlEditError, UnicodeDecodeError, RecursionError


def _said(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "the document is nested too deeply to read"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _dialect(fmt: Format) -> Any:
    from harvester.connect import jsonc

    return {"json": jsonc.STRICT, "json-comments": jsonc.WITH_COMMENTS, "jsonc": jsonc.JSONC}[fmt]


@dataclass(frozen=True, slots=True)
class FileChange:
    path: Path
    read: files.Snapshot | None  # None: the file does not exist
    after: str
    users_entry: bool = False  # replaces or removes an entry we did not write (force)

    @property
    def before(self) -> str | None:
        return None if self.read is None else self.read.text

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return files.unified_diff(self.path, self.before, self.after)


@dataclass(frozen=True, slots=True)
class AgentPlan:
    agent: Agent
    changes: tuple[FileChange, ...] = ()
    problem: str = ""  # a file we refuse to touch; then nothing of this agent is written
    skipped: str = ""  # why this agent is left alone (not installed, …)
    again: Callable[[], AgentPlan] | None = None  # the same plan made from what the files hold now


def server_command(env: Env = os.environ, argv0: str | None = None) -> list[str]:
    """How to start the harvester that is running now: its executable (``sys.argv[0]`` when that is
    one), else ``harvester`` on PATH, else this interpreter with ``-m harvester``."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0) == "harvester" and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return [os.path.abspath(argv0)]
    if found := shutil.which("harvester", path=env.get("PATH", "")):
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "harvester"]


def plan(names: Iterable[str], *, remove: bool, env: Env, home: Path, command: list[str] | None = None,
         only_installed: bool = False, force: bool = False) -> list[AgentPlan]:
    """What connect (or, with ``remove``, disconnect) would change for each named agent; ``force``: also
    replace (remove) a ``harvester`` entry we did not write."""
    argv = [*(command or server_command(env)), "mcp", "--harness"]
    plans = []
    for name in names:
        agent = AGENTS[name]
        if only_installed and not agent.installed(env, home):
            plans.append(AgentPlan(agent, skipped=NOT_INSTALLED))
            continue
        plans.append(_plan_agent(agent, agent.entry([*argv, agent.name]), remove, env, home, force))
    return plans


def written_by_us(agent: Agent, entry: Any, current: dict[str, Any]) -> bool:
    """Whether ``entry``, found under our name, is one connect wrote: the entry we would write now
    (``current``), or the one any harvester install writes (a ``harvester`` executable, or a Python with
    ``-m harvester``, then ``mcp --harness <agent>``, in the agent's shape and nothing more). Anything
    else (their command, their args, their env) is the user's."""
    if entry == current:
        return True
    argv = argv_of(entry)
    if argv is None or argv[-3:] != ["mcp", "--harness", agent.name] or agent.entry(argv) != entry:
        return False
    program = argv[:-3]
    if len(program) == 1:
        return os.path.basename(program[0]) == "harvester"
    return len(program) == 3 and program[1:] == ["-m", "harvester"] and \
        os.path.basename(program[0]).startswith("python")


def _plan_agent(agent: Agent, entry: dict[str, Any], remove: bool, env: Env, home: Path,
                force: bool = False) -> AgentPlan:
    again = partial(_plan_agent, agent, entry, remove, env, home, force)
    path = agent.file(env, home)
    edits: list[tuple[Path, Format, Callable[[str, Format], str]]] = []
    if agent.format == "continue-yaml" and not path.exists() and not remove:
        return AgentPlan(agent, skipped=f"{path} does not exist (Continue then uses its hub assistant, "
                                        "which a new file would replace); create it first")
    server_key = (*agent.servers_key, SERVER_NAME)
    if remove:
        edits.append((path, agent.format, lambda text, fmt: _remove_server(text, fmt, server_key)))
    else:
        edits.append((path, agent.format, lambda text, fmt: _set_server(text, fmt, server_key, entry)))
    if agent.approval is not None:
        approval: Approval = agent.approval
        edit = _remove_item if remove else _add_item
        edits.append((approval.file(env, home), approval.format,
                      lambda text, fmt: edit(text, fmt, approval.key, approval.item)))
    changes = []
    for index, (file, fmt, change) in enumerate(edits):
        try:
            read = files.read(file)
            if read is None and remove:
                continue
            before = _empty(fmt) if read is None else read.text
            users = False
            if index == 0 and read is not None:  # the server file: whose is the entry there?
                found = _server(before, fmt, server_key)
                users = found is not None and not written_by_us(agent, found, entry)
                if users and not force:
                    return AgentPlan(agent, problem=_not_ours(file, remove))
            after = change(before, fmt)
            after = after if read is None or after == before else _ending_as_found(read.text, after, fmt)
            if read is None:
                after = after if after.endswith("\n") else after + "\n"
        except _edit_errors() as exc:
            return AgentPlan(agent, problem=f"cannot edit {file}: {_said(exc)}; left untouched")
        except OSError as exc:
            return AgentPlan(agent, problem=f"cannot read {file}: {exc.strerror or exc}; left untouched")
        changes.append(FileChange(file, read, after, users))
    return AgentPlan(agent, tuple(changes), again=again)


def _not_ours(file: Path, remove: bool) -> str:
    verb = "removes" if remove else "replaces"
    return (f"{file} holds a harvester entry that connect did not write (its command, args or env are not ours); "
            f"left untouched (--force {verb} it, keeping your version in a backup)")


def _ending_as_found(before: str, after: str, fmt: Format) -> str:
    """``after`` ending with a newline if and only if ``before`` did (a non-empty ``before``: an empty
    file has no ending to keep), when that reads the same (it may not, after a YAML block scalar)."""
    if not before:
        return after
    if before.endswith("\n") and not after.endswith("\n"):
        adjusted = after + ("\r\n" if before.endswith("\r\n") else "\n")
    elif not before.endswith("\n") and after.endswith("\n"):
        adjusted = after.removesuffix("\n").removesuffix("\r")
    else:
        return after
    return adjusted if _document(adjusted, fmt) == _document(after, fmt) else after


def _document(text: str, fmt: Format) -> Any:
    from harvester.connect import jsonc, toml_edit, yaml_edit

    if fmt == "toml":
        return toml_edit.load(text)
    if fmt == "continue-yaml":
        return yaml_edit.load(text)
    return jsonc.parse(text, _dialect(fmt)).value


def _empty(fmt: Format) -> str:
    return "" if fmt in ("toml", "continue-yaml") else "{}"


def _set_server(text: str, fmt: Format, key: tuple[str, ...], entry: dict[str, Any]) -> str:
    from harvester.connect import jsonc, toml_edit, yaml_edit

    if fmt == "toml":
        return toml_edit.set_table(text, key, entry)
    if fmt == "continue-yaml":
        return yaml_edit.set_item(text, entry)
    return jsonc.set_member(text, key, entry, _dialect(fmt))


def _remove_server(text: str, fmt: Format, key: tuple[str, ...]) -> str:
    from harvester.connect import jsonc, toml_edit, yaml_edit

    if fmt == "toml":
        return toml_edit.delete_table(text, key)
    if fmt == "continue-yaml":
        return yaml_edit.delete_item(text, key[-1])
    return jsonc.delete_member(text, key, _dialect(fmt))


def _add_item(text: str, fmt: Format, key: tuple[str, ...], item: str) -> str:
    from harvester.connect import jsonc

    return jsonc.append_item(text, key, item, _dialect(fmt))  # approvals live in JSON files only


def _remove_item(text: str, fmt: Format, key: tuple[str, ...], item: str) -> str:
    from harvester.connect import jsonc

    return jsonc.remove_item(text, key, item, _dialect(fmt))


def _server(text: str, fmt: Format, key: tuple[str, ...]) -> Any:
    from harvester.connect import jsonc, toml_edit, yaml_edit

    if fmt == "toml":
        return toml_edit.get(text, key)
    if fmt == "continue-yaml":
        return yaml_edit.get(text, key[-1])
    return jsonc.get(text, key, _dialect(fmt))


def apply(plans: list[AgentPlan], *, remove: bool, dry_run: bool, out: Callable[[str], None]) -> int:
    """Write (or, with ``dry_run``, print the diff of) every change; 0, or 1 if any agent was refused."""
    status = 0
    absent = [p.agent.name for p in plans if p.skipped == NOT_INSTALLED]
    for agent_plan in plans:
        if agent_plan.skipped != NOT_INSTALLED:
            status |= _apply_agent(agent_plan, remove, dry_run, out)
    if absent:
        out(f"skipped, not installed: {', '.join(absent)}")
    if dry_run:
        out("dry run: nothing written")
    return status


def _apply_agent(agent_plan: AgentPlan, remove: bool, dry_run: bool, out: Callable[[str], None]) -> int:
    """One agent's changes; planned again from the files as they are now when an agent wrote one of them
    since we read it (what was written before stays written: the new plan finds it done)."""
    done, already = ("disconnected", "not registered") if remove else ("connected", "already registered")
    label = f"{agent_plan.agent.name} ({agent_plan.agent.label})"
    written: list[str] = []

    def said(last: str | None, status: int) -> int:
        for line in [*written, *([last] if last else [])]:
            out(line)
        return status

    for _ in range(files.EDIT_ATTEMPTS):
        if agent_plan.skipped:
            return said(f"{label}: skipped: {agent_plan.skipped}", 0)
        if agent_plan.problem:
            return said(f"harvester: {label}: {agent_plan.problem}", 1)
        changed = [c for c in agent_plan.changes if c.changed]
        if not changed and not written:
            where = f" ({', '.join(str(c.path) for c in agent_plan.changes)})" if agent_plan.changes else ""
            return said(f"{label}: {already}{where}; nothing written", 0)
        if dry_run:
            for change in changed:
                out(f"{label}: would be {done} in {change.path}:\n{change.diff().rstrip(chr(10))}")
            return 0
        change = None
        try:
            for change in changed:
                backup = files.replace(change.path, change.after, change.read, keep_backup=change.users_entry)
                kept = " (new file)" if backup is None else \
                    f" (your own harvester entry kept in: {backup})" if change.users_entry else \
                    f" (previous version: {backup})"
                written.append(f"{label}: {done} in {change.path}{kept}")
        except files.ChangedMeanwhile:
            assert agent_plan.again is not None
            agent_plan = agent_plan.again()
            continue
        except OSError as exc:
            where = exc.filename or (change.path if change else "")
            return said(f"harvester: {label}: cannot write {where}: {exc.strerror or exc}; not written", 1)
        return said(None, 0)
    file = next((c.path for c in agent_plan.changes if c.changed), agent_plan.agent.name)
    return said(f"harvester: {label}: {file} changed while we were editing it ({files.EDIT_ATTEMPTS} attempts); "
                f"{'not' if written else 'nothing'} written, run again", 1)


def run(names: tuple[str, ...], *, all_agents: bool, remove: bool, dry_run: bool, env: Env, home: Path,
        out: Callable[[str], None], command: list[str] | None = None, force: bool = False) -> int:
    """The commands: the named agents, all of them, or (neither given) the installed ones."""
    chosen = list(AGENTS) if all_agents or not names else list(dict.fromkeys(names))
    plans = plan(chosen, remove=remove, env=env, home=home, command=command,
                 only_installed=not names and not all_agents, force=force)
    return apply(plans, remove=remove, dry_run=dry_run, out=out)


def registered(home: Path, env: Env = os.environ, only_installed: bool = False) -> dict[str, bool]:
    """Per agent, whether its user-level file holds our server (a file that does not parse: False);
    ``only_installed``: the agents installed here, and any other that holds it anyway."""
    found = {}
    for name, agent in AGENTS.items():
        try:
            text = files.read_text(agent.file(env, home))
            found[name] = text is not None and _server(text, agent.format, (*agent.servers_key, SERVER_NAME)) \
                is not None
        except (*_edit_errors(), OSError):
            found[name] = False
        if only_installed and not found[name] and not agent.installed(env, home):
            del found[name]
    return found
