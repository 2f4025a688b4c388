"""What the reading commands of :mod:`harvester.cli` do beyond parsing their options: whole texts from the
archive for ``show --full``, the hint when a repository's scope is empty, and the judging of stale live states
before a scan. Here so that cli.py stays the commands (and command modules need not import it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvester.bank import Bank
    from harvester.config import Settings
    from harvester.parsers.base import Harness


def judge_stale_states(bank: Bank, settings: Settings, harnesses: list[Harness]) -> None:
    """Sessions a stopped service left marked live are judged again (harvester/capture/liveness.py); a running service
    judges them itself, every half minute."""
    from harvester.capture.liveness import judge_stale_live
    from harvester.heartbeat import read_heartbeat, service_alive

    beat = read_heartbeat()
    if beat is not None and service_alive(beat):
        return
    t = settings.timings
    judge_stale_live(bank, harnesses, t.recent_minutes * 60, t.idle_end_minutes * 60)


def whole_texts(bank: Bank, events: list[dict[str, Any]]) -> None:
    """Each clipped text made whole from the archive; where the archive lacks it, the clipped copy says so."""
    for event in events:
        clipped = (event.get("meta") or {}).get("clipped")
        if not clipped:
            continue
        whole = bank.whole_text(event)
        if whole is not None:
            event["text"] = whole
            clipped["whole"] = True
        elif getattr(bank, "team", None) is not None:
            event["text"] += "\n[the whole text is in the archive of the machine that captured it: it never leaves it]"
        elif clipped.get("text") and getattr(bank, "archive", None) is not None and \
                bank.archive.blob_path("texts", str(clipped["text"])).exists():  # type: ignore[attr-defined]
            event["text"] += "\n[the whole text in the archive is damaged: it is not shown]"
        else:
            event["text"] += "\n[the whole text is not in the archive: it was off, or retention removed it]"


def unknown_hint(bank: Any, scope: Any) -> str:
    """When a repository's scope came up empty: the sessions filed under its bank id whose repository is unknown
    (recorded in a folder of that name that is not here), which it does not include, and how to read them."""
    from harvester.bank.scope import Scope

    if not scope.keys:
        return ""
    rows = bank.scoped_sessions(Scope(scope.label, bank_id=scope.label), 10_000, listed=True)
    n = sum(1 for row in rows if "repo_key" in row and row["repo_key"] is None)
    if not n:
        return ""
    return (f"\n{n} {'session' if n == 1 else 'sessions'} filed under {scope.label} {'was' if n == 1 else 'were'} "
            "recorded in a folder of that name that is not here (repository unknown), so not this repository's: "
            f"`harvester sessions --bank-id {scope.label}` lists them, `harvester show ID` reads one")
