"""Which sessions are still in use: agent processes, recent writes, and the state that follows.

A session is *live* while its source was written recently or an agent process of its harness is
running in its directory. Once neither holds: *abandoned* if the process that held it died with the
last turn incomplete, else *ended* (at once when its process exits, or after an idle period when no
process was ever seen for it, e.g. sessions imported from history).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
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
    for pid, name, cmdline in _processes():
        if pid == me:
            continue
        for harness, marks in wanted:
            if _is_agent(name, cmdline, marks):
                try:
                    proc = psutil.Process(pid)
                    found.append(AgentProcess(harness, pid, proc.cwd(), proc.create_time()))
                except (psutil.Error, OSError):
                    pass
                break
    return found


def _processes() -> Iterator[tuple[int, str, list[str]]]:
    """Every process's pid, name and command line, as psutil gives them. On Linux read from /proc here: psutil
    costs about 0.3 ms a process, and the service asks every half minute while a session is open."""
    if not os.path.isdir("/proc/self"):
        for proc in psutil.process_iter(["pid", "name", "cmdline"]):
            yield proc.info["pid"], proc.info.get("name") or "", proc.info.get("cmdline") or []
        return
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = _split_cmdline(f.read().decode("utf-8", "surrogateescape"))
            with open(f"/proc/{entry.name}/comm", "rb") as f:
                name = f.read().decode("utf-8", "surrogateescape").rstrip("\n")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        # psutil's name: the kernel keeps 15 characters of it; the command line's first word, when it begins so.
        if len(name) >= 15 and cmdline and os.path.basename(cmdline[0]).startswith(name):
            name = os.path.basename(cmdline[0])
        yield int(entry.name), name, cmdline


def _split_cmdline(data: str) -> list[str]:
    """/proc/<pid>/cmdline as psutil splits it (a process may rewrite it with spaces instead of NULs)."""
    if not data:
        return []
    sep = "\x00" if data.endswith("\x00") else " "
    if data.endswith(sep):
        data = data[:-1]
    words = data.split(sep)
    if sep == "\x00" and len(words) == 1 and " " in data:
        words = data.split(" ")
    return words


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
