"""The sinks' lines in ``harvester status`` and ``harvester sink status``, from :func:`outbox.stats`."""

from __future__ import annotations

from typing import Any

from harvester.bank.outbox import seconds_until
from harvester.terminal import visible


def lag_seconds(since: str | None) -> float | None:
    """How long ago the outbox wrote ``since`` (the oldest pending document's queueing)."""
    return None if not since else max(0.0, -seconds_until(since))


def _span(seconds: float | None) -> str:
    if seconds is None:
        return "none"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def describe(stats: dict[str, Any], detail: bool = False) -> list[str]:
    """Lines for a terminal: the sink, then a line per bank; with ``detail``, the documents that wait."""
    banks = stats["banks"]
    forwarded = sum(b["sent"] for b in banks)
    pending = sum(b["pending"] for b in banks) + stats["unqueued"]
    head = f"Hindsight ({visible(stats.get('url') or '')}): {forwarded} sessions forwarded, {pending} pending"
    if stats["last_success_at"]:
        head += f", last success {stats['last_success_at'][:19].replace('T', ' ')}"
    lines = [head]
    if stats["last_error"]:
        lines.append(f"  last error ({(stats['last_error_at'] or '')[:19].replace('T', ' ')}): "
                     f"{visible(stats['last_error'][:300])}")
    for b in banks:
        parts = [f"{b['sent']} forwarded", f"{b['pending']} pending"]
        if b["pending"]:
            parts.append(f"lag {_span(lag_seconds(b['oldest_pending']))}")
        for name, word in (("skipped", "skipped (filed by Hindsight's own hooks)"), ("held", "held (not forwarded)"),
                           ("failed", "failed"), ("empty", "without conversation"), ("deleted", "deleted")):
            if b[name]:
                parts.append(f"{b[name]} {word}")
        if b["last_sent_at"]:
            parts.append(f"last sent {b['last_sent_at'][:19].replace('T', ' ')}")
        lines.append(f"  {visible(b['bank'])}: " + ", ".join(parts))
        if b["last_error"] and (b["failed"] or b["pending"]):
            lines.append(f"    last error: {visible(b['last_error'][:300])}")
    if stats["unqueued"]:
        lines.append(f"  {stats['unqueued']} sessions changed since the last pass (queued at the next)")
    if detail:
        for w in stats.get("waiting", []):
            when = f", next try {w['next_try_at'][:19].replace('T', ' ')}" if w["next_try_at"] else ""
            why = f": {visible((w['last_error'] or '')[:200])}" if w["last_error"] else ""
            lines.append(f"  {w['state']}: {w['harness']} {visible(w['session'])} "
                         f"({w['attempts']} attempts{when}){why}")
    return lines
