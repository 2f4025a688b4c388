"""Where the pi family keeps its sessions: one function per member (see ``harvester/parsers/pi.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path


def _dedup(paths: Iterable[Path | None]) -> list[Path]:
    return list(dict.fromkeys(p for p in paths if p is not None))


def _absolute(value: str | None, home: Path) -> Path | None:
    """``~`` expanded; a relative value is resolved by the agent against its own cwd: not followable."""
    value = (value or "").strip()
    if value == "~" or value.startswith(("~/", "~\\")):
        return home / value[2:]
    return Path(value) if value and Path(value).is_absolute() else None


def pi_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``PI_CODING_AGENT_SESSION_DIR`` holds sessions flat; ``PI_CODING_AGENT_DIR`` moves ``~/.pi/agent``.
    The default stays a root: sessions written before a variable was set are still there."""
    agent = _absolute(env.get("PI_CODING_AGENT_DIR"), home)
    return _dedup([_absolute(env.get("PI_CODING_AGENT_SESSION_DIR"), home),
                    agent / "sessions" if agent else None, home / ".pi" / "agent" / "sessions"])


def prime_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """Each sessions folder, and the ``session-artifacts`` beside it that holds RLM children."""
    agent = _absolute(env.get("PRIME_AGENT_CODING_AGENT_DIR"), home)
    moved = env.get("PRIME_AGENT_SESSION_DIR") or env.get("PRIME_AGENT_CODING_AGENT_SESSION_DIR")
    sessions = [_absolute(moved, home), agent / "sessions" if agent else None,
                home / ".prime" / "agent" / "sessions"]
    return _dedup(x for s in sessions if s is not None for x in (s, s.parent / "session-artifacts"))


def omp_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """A named profile (``OMP_PROFILE``, else the legacy ``PI_PROFILE``) has its own tree; the default
    one honours ``PI_CODING_AGENT_DIR``; ``$XDG_DATA_HOME/omp`` holds sessions once omp migrated there."""
    config = home / (env.get("PI_CONFIG_DIR") or ".omp")
    profile = (env["OMP_PROFILE"] if "OMP_PROFILE" in env else env.get("PI_PROFILE") or "").strip()
    xdg = _absolute(env.get("XDG_DATA_HOME"), home)
    if profile and profile != "default":
        return _dedup([xdg / "omp" / "profiles" / profile / "sessions" if xdg else None,
                        config / "profiles" / profile / "agent" / "sessions"])
    agent = _absolute(env.get("PI_CODING_AGENT_DIR"), home)
    return _dedup([xdg / "omp" / "sessions" if xdg and not agent else None,
                    (agent or config / "agent") / "sessions", config / "agent" / "sessions"])


def openclaw_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``OPENCLAW_STATE_DIR`` (legacy ``CLAWDBOT_STATE_DIR``), else ``~/.openclaw``, a state dir of its
    earlier names, or Kimi's packaging's (``~/.kimi_openclaw``); ``OPENCLAW_HOME`` replaces the home directory."""
    base = _absolute(env.get("OPENCLAW_HOME"), home) or home
    state = _absolute(env.get("OPENCLAW_STATE_DIR") or env.get("CLAWDBOT_STATE_DIR"), home)
    return _dedup([state / "agents" if state else None,
                    *(base / d / "agents" for d in (".openclaw", ".clawdbot", ".moldbot", ".moltbot",
                                                    ".kimi_openclaw"))])
