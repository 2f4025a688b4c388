"""What ``harvester status`` reports: gathered here, rendered by :func:`harvester.cli.render_status.status_text`
(or printed as JSON). Every figure comes from the bank's own tables, a few stat calls and the agents' settings
files: status stays quick on a bank of millions of events. The entry points: :func:`gather` (a bank there) and
:func:`gather_before_first_scan`; what it says of the login unit is :mod:`harvester.status.unit`'s.

It sits beside recall, below the service: it reads the service's heartbeat (harvester/heartbeat.py) and its unit,
never the service itself, so that anything of that layer (a web page) can show it too."""

from __future__ import annotations

import os
from typing import Any

from harvester import config
from harvester.bank import Bank
from harvester.config import Settings
from harvester.parsers import HARNESSES

# A harness's row before the bank holds anything of it.
EMPTY_STATS: dict[str, Any] = {
    "sources": 0, "sources_missing": 0, "sources_unreadable": 0, "sources_failed": 0, "sessions": 0,
    "sessions_originals_gone": 0,
    "events": 0, "last_import": None, "git_errors": 0, "malformed": 0, "oversize": 0, "unreadable": 0,
    "failed": 0, "unknown_types": 0, "drift": {}, "unknown_fields": 0, "drift_report": [], "version": None,
    "failures": [], "unlisted_directories": [], "problems": [],
}


def gather(bank: Bank, settings: Settings) -> dict[str, Any]:
    from harvester import retention
    from harvester.connect import registered
    from harvester.gitident import git_found
    from harvester.parsers.base import harness_roots, opaque_found

    home = config.home()
    stats = bank.harness_stats()
    versions = bank.session_versions()
    harnesses = []
    for name, harness in HARNESSES.items():
        roots = harness_roots(harness, bank.known_directories, os.environ, home, settings.roots.get(name, ()))
        entry = {"name": name, "label": harness.label, "enabled": settings.enabled(name),
                 "roots": [str(r) for r in roots]}
        entry.update(stats.pop(name, None) or EMPTY_STATS)
        # Present, not readable (encrypted): said, so that an agent in use never shows as an empty row.
        entry["not_readable"] = opaque_found(harness, roots)
        # Made by a parser older than this version's: `harvester reparse` would make them again.
        entry["sessions_older_parser"] = sum(n for v, n in versions.get(name, {}).items()
                                             if v is None or v < harness.version)
        # Found on this machine: its store is here (for an agent that keeps history in each repository, the
        # repositories sessions worked in are no sign of it), or the bank holds its sessions.
        entry["found"] = bool(entry["sessions"] or entry["sources"] or entry["not_readable"]
                              or (roots and not harness.roots_in_repositories))
        harnesses.append(entry)
    for name, leftover in stats.items():  # harnesses in the bank that this version lacks
        harnesses.append({"name": name, "label": name, "enabled": False, "roots": [], **leftover,
                          "sessions_older_parser": 0, "not_readable": [], "found": True})
    connected = registered(home, os.environ, only_installed=True)
    for entry in harnesses:
        entry["mcp_registered"] = connected.get(entry["name"])  # None: an agent connect does not know
    return {
        "bank": {"path": str(settings.bank), "size_bytes": bank.size_bytes(), "exists": True},
        "archive": archive_status(bank, settings),
        "git": {"found": git_found()},
        "mcp": {"registered": sorted(n for n, yes in connected.items() if yes),
                "not_registered": sorted(n for n, yes in connected.items() if not yes)},
        "service": service_status(bank, settings),
        "sinks": sinks_status(bank, settings),
        "team": team_status(bank, settings),
        "harnesses": harnesses,
        "repositories": repositories_status(bank),
        # History the agents delete on their own (harvester/retention)
        "retention": retention.status_entries(os.environ, home, archive=settings.archive),
        "recent_imports": bank.recent_imports(20),
        "recent_problems": bank.recent_problems(10),
    }


def repositories_status(bank: Bank) -> dict[str, Any]:
    """Sessions of unknown repository, and the bank ids that unrelated repositories share (harvester/gitident.py,
    harvester/bank/identities.py): each repository's key, its sessions, and the label Hindsight keeps it under."""
    from harvester.bank.identities import repositories

    found = repositories(bank.conn)  # type: ignore[attr-defined]
    return {"unknown_sessions": found.unknown,
            "shared_bank_ids": [{"bank_id": label, "repositories": [
                {"key": r.key, "sessions": r.sessions, "label": r.label} for r in shared]}
                for label, shared in sorted(found.shared.items())]}


def gather_before_first_scan(settings: Settings) -> dict[str, Any]:
    """What status says before there is a bank (the agents found, the service, the MCP registrations): gathered
    over an empty bank made in a temporary directory, which goes when done. The bank's own path is not created: a
    reading command never makes a bank (a typo in --bank would leave one behind)."""
    import tempfile

    from harvester.bank import open_bank

    with tempfile.TemporaryDirectory(prefix="harvester-status-") as tmp, \
            open_bank(os.path.join(tmp, "bank.sqlite"), archive=False) as empty:
        data = gather(empty, settings)
    data["bank"] = {"path": str(settings.bank), "size_bytes": 0, "exists": False}
    return data


def sinks_status(bank: Bank, settings: Settings) -> dict[str, Any]:
    """Per sink configured (harvester/sinks): per bank, forwarded / pending / lag / last success / last error."""
    if not settings.sinks:
        return {}
    from harvester.sinks import outbox

    out = {}
    for name, options in settings.sinks.items():
        stats = outbox.stats(bank, name)  # type: ignore[arg-type]
        stats["url"] = options.url
        out[name] = stats
    return out


def team_status(bank: Bank, settings: Settings) -> dict[str, Any] | None:
    """The team push (harvester/team): sessions by state, the lag, last push, last error; None without one."""
    if settings.team is None:
        return None
    from harvester.config.team import masked
    from harvester.team import outbox

    stats = outbox.stats(bank)  # type: ignore[arg-type]
    stats["url"] = masked(settings.team.url)
    stats["host"] = settings.team.host_name()
    stats["held_banks"] = settings.team.held_banks
    return stats


def archive_status(bank: Bank, settings: Settings) -> dict[str, Any]:
    from harvester.capture.archive import archive_dir

    where = archive_dir(settings.bank)
    out: dict[str, Any] = {"on": settings.archive, "path": str(where), "exists": where.is_dir(),
                           "max_age_days": settings.archive_max_age_days,
                           "max_size_bytes": settings.archive_max_size_bytes}
    out.update(bank.archive_stats())
    archive = getattr(bank, "archive", None)
    out["missing"] = archive.missing(bank.conn) if archive is not None else []  # type: ignore[attr-defined]
    return out


def service_status(bank: Bank, settings: Settings) -> dict[str, Any]:
    from harvester.bank.gone import recorded
    from harvester.heartbeat import read_heartbeat, responding, service_alive
    from harvester.status import unit

    beat = read_heartbeat()
    running = beat is not None and service_alive(beat)
    return {
        "running": running,
        "responding": running and beat is not None and responding(beat, settings.timings.heartbeat_seconds),
        "busy": beat.get("busy") if running and beat else None,
        "pid": beat["pid"] if running and beat else None,
        "started_at": beat.get("started_at") if running and beat else None,
        "heartbeat_at": beat.get("heartbeat_at") if beat else None,
        # The bank's own latest import: the heartbeat's copy is only as fresh as the last beat.
        "last_activity": max(filter(None, [beat.get("last_activity") if beat else None,
                                           *(i["at"] for i in bank.recent_imports(1))]), default=None),
        "watched": beat.get("watched", []) if running and beat else [],
        "live_sessions": bank.live_count(),
        "unit": unit.service_state(),
        # The bank deleted (or replaced) under a running service, which made it again: when, why, by which pid.
        "bank_made_again": recorded(bank),
    }
