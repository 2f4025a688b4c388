"""Which sessions are still in use: agent processes, recent writes, and the state that follows.

A session is *live* while its source was written recently or an agent process of its harness is
running in its directory. Once neither holds: *abandoned* if the process that held it died with the
last turn incomplete, else *ended* (at once when its process exits, or after an idle period when no
process was ever seen for it, e.g. sessions imported from history).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from harvester.parsers.base import Harness


@dataclass(frozen=True, slots=True)
class AgentProcess:
    harness: str
    pid: int
    cwd: str
    started: float  # epoch seconds


def agent_processes(harnesses: Iterable[Harness]) -> list[AgentProcess]:
    """Running processes of the given agents (this user's; others' cwds are not readable anyway)."""
    wanted = [(h.name, h.processes) for h in harnesses if h.processes]
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "name", "cmdline", "create_time"]):
        info = proc.info
        if info["pid"] == me:
            continue
        name = info.get("name") or ""
        cmdline = info.get("cmdline") or []
        for harness, marks in wanted:
            if _is_agent(name, cmdline, marks):
                try:
                    cwd = proc.cwd()
                except (psutil.Error, OSError):
                    break
                found.append(AgentProcess(harness, info["pid"], cwd, info.get("create_time") or 0.0))
                break
    return found


def _is_agent(name: str, cmdline: list[str], marks: tuple[str, ...]) -> bool:
    # The executable's own name, or the script a runtime runs (node .../bin/claude, python -m aider),
    # or a package path in the command line. Only those first arguments: a shell running
    # `grep claude` is not Claude Code.
    heads = [os.path.basename(a) for a in cmdline[:2]]
    if len(cmdline) > 2 and cmdline[1] == "-m":
        heads.append(cmdline[2])
    return any(m == name or m in heads or ("/" in m and any(m in a for a in cmdline[:2])) for m in marks)


@dataclass(slots=True)
class Verdict:
    state: str  # live | ended | abandoned
    reason: str


def judge(*, held: bool, was_held: bool, source_mtime: float | None, last_turn: str | None, recent_s: float,
          idle_end_s: float, now: float | None = None) -> Verdict:
    """The state a session is in, from what the service can observe right now."""
    now = time.time() if now is None else now
    age = now - source_mtime if source_mtime is not None else float("inf")
    if held:
        return Verdict("live", "an agent process is running in its directory")
    if was_held:  # its process is gone
        if last_turn == "open":
            return Verdict("abandoned", "its agent process exited in the middle of a turn")
        return Verdict("ended", "its agent process exited")
    if age < recent_s:
        return Verdict("live", "written recently")
    if age >= idle_end_s:
        return Verdict("ended", "idle")
    return Verdict("live", "quiet, but not idle long enough to be ended")
