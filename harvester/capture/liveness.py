"""Which sessions are still in use: agent processes, recent writes, and the state that follows.

A session is *live* while its source was written recently or an agent process of its harness is
running in its directory. Once neither holds: *abandoned* if the process that held it died with the
last turn incomplete, else *ended* (at once when its process exits, or after an idle period when no
process was ever seen for it, e.g. sessions imported from history). *unknown*: no service has judged it
(imported by ``scan`` alone).

A state is only as fresh as the last judgement: the service judges every unfinished session at its start and
every half minute; when it stops (or is killed), the sessions it marked live would stay so. ``scan`` judges
those again (:func:`judge_stale_live`) when no service is running, from what it can see then (the agent
processes, the files' ages): it writes nothing but the states, in one transaction.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.heartbeat import epoch
from harvester.parsers.base import Harness

if TYPE_CHECKING:
    from harvester.capture.contract import CaptureBank


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
                import psutil  # here, not at start: a scan that finds no agent running starts without it

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
        import psutil

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


def source_mtime(path: str | None) -> float | None:
    """When the source was last written: a SQLite database in WAL mode is written in its -wal file,
    and its main file keeps an old time until a checkpoint."""
    if not path:
        return None
    times = []
    for candidate in (path, f"{path}-wal"):
        with contextlib.suppress(OSError):
            times.append(os.stat(candidate).st_mtime)
    return max(times) if times else None


def holder(session: dict[str, Any], mtime: float | None, running: list[AgentProcess]) -> AgentProcess | None:
    """The agent process working on this session: same harness, same directory, and started before
    the session was last written (an agent running in a repo does not hold its old sessions)."""
    cwd = session["cwd"]
    if not cwd or mtime is None:
        return None
    cwd = os.path.normpath(cwd)
    for proc in running:
        if os.path.normpath(proc.cwd) == cwd and mtime >= proc.started - 2:
            return proc
    return None


def verdicts(sessions: list[dict[str, Any]], running: list[AgentProcess], was_held: Callable[[dict[str, Any]], bool],
             recent_s: float, idle_end_s: float) -> Iterator[tuple[dict[str, Any], Verdict, AgentProcess | None]]:
    """Each open session of one harness (``CaptureBank.open_sessions``) judged now, with the process holding it."""
    # A source can hold many sessions (Aider's history file has a block per run; opencode's one
    # database has them all): a running agent works on the newest of them, not on every one.
    newest: dict[str, str] = {}
    for session in sorted(sessions, key=lambda s: s["updated_at"] or ""):
        if session["source_path"]:
            newest[session["source_path"]] = session["native_id"]
    for session in sessions:
        # When the session was last written: the earlier of its own last record's time and its
        # file's mtime (one database holds every opencode session: the file says "some session
        # was written", the session's time says which).
        times = [t for t in (epoch(session["updated_at"]), source_mtime(session["source_path"])) if t is not None]
        mtime = min(times) if times else None
        held_by = (holder(session, mtime, running)
                   if newest.get(session["source_path"], session["native_id"]) == session["native_id"] else None)
        verdict = judge(held=held_by is not None, was_held=held_by is None and was_held(session), source_mtime=mtime,
                        last_turn=session["last_turn"], recent_s=recent_s, idle_end_s=idle_end_s)
        yield session, verdict, held_by


def judge_stale_live(bank: CaptureBank, harnesses: list[Harness], recent_s: float, idle_end_s: float) -> Counter[str]:
    """The sessions marked live by a service that is no longer running, judged again now (by the agent
    processes and the files' ages, as the service would at its start): how many became each state."""
    changes: list[tuple[int, str]] = []
    processes: list[AgentProcess] | None = None
    for harness in harnesses:
        after = 0
        while page := bank.open_sessions(harness.name, after):
            after = page[-1]["pk"]
            live = [s for s in page if s["state"] == "live"]
            if not live:
                continue
            if processes is None:  # a look at every process of the machine: only when a session is live
                processes = agent_processes(harnesses)
            running = [p for p in processes if p.harness == harness.name]
            changes += [(s["pk"], v.state) for s, v, _ in verdicts(live, running, lambda _: False, recent_s, idle_end_s)
                        if v.state != s["state"]]
    bank.set_states(changes)
    return Counter(state for _, state in changes)
