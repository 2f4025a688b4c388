"""The team push's lines in ``harvester status`` and ``harvester team status``, from :func:`outbox.stats`."""

from __future__ import annotations

from typing import Any

from harvester.terminal import visible


def describe(stats: dict[str, Any], detail: bool = False) -> list[str]:
    states, lag = stats["states"], stats["lag"]
    head = (f"Team bank ({visible(stats['url'])}, as {visible(stats['host'])}): "
            f"{states.get('pushed', 0)} sessions pushed ({stats['pushed_events']:,} events), "
            f"lag {lag['events']:,} events in {lag['sessions']} sessions")
    head += f", last push {stats['last_push_at'][:19].replace('T', ' ')}" if stats["last_push_at"] else ", never pushed"
    lines = [head]
    if stats["last_error"]:
        lines.append(f"  last error ({(stats['last_error_at'] or '')[:19].replace('T', ' ')}): "
                     f"{visible(stats['last_error'][:300])}")
    others = []
    if states.get("theirs"):
        others.append(f"{states['theirs']} owned by another machine there (not overwritten)")
    if states.get("held"):
        others.append(f"{states['held']} held (push = false: {', '.join(map(visible, stats['held_banks']))})")
    if others:
        lines.append("  " + "; ".join(others))
    for f in stats["failing"] if detail else stats["failing"][:3]:
        when = f", next try {f['next_try_at'][:19].replace('T', ' ')}" if f["next_try_at"] else ""
        lines.append(f"  refused: {f['harness']} {visible(f['session'])} ({f['attempts']} attempts{when}): "
                     f"{visible((f['error'] or '')[:200])}")
    return lines
