"""``harvester team``: the team bank (harvester/team) by hand: push now, see what waits.

Registered on the ``harvester`` group by :mod:`harvester.cli` (imported at its end, so this module can use
its helpers). Reading the team bank is ``--team`` on ``sessions``, ``show``, ``search``, ``context``, ``mcp``.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from harvester import terminal
from harvester.cli import open_bank_or_fail
from harvester.config import Settings


def team_settings(settings: Settings) -> Any:
    if settings.team is None:
        where = settings.config_file or settings.config_path
        raise click.ClickException(f"no team bank is set: set team_bank in {where} (or $HARVESTER_TEAM_BANK) "
                                   "to a postgresql:// URL")
    return settings.team


@click.group()
def team() -> None:
    """The team bank on PostgreSQL (team_bank in the config): push, status."""


@team.command("push")
@click.pass_obj
def team_push(settings: Settings) -> None:
    """Push what the team bank lacks now, with progress (the service does it after every import)."""
    from harvester.config.team import masked
    from harvester.render import ProgressLine
    from harvester.team import outbox, pusher

    options = team_settings(settings)
    bank = open_bank_or_fail(settings, write=True, archive=False)
    push = pusher(bank, settings)  # type: ignore[arg-type]
    assert push is not None
    outbox.enqueue(bank)  # type: ignore[arg-type]
    outbox.rehold(bank, options.held_banks)  # type: ignore[arg-type]
    outbox.requeue(bank, ("theirs",))  # type: ignore[arg-type]  # its owner there may have let go (held: push)
    total = outbox.pending_count(bank)  # type: ignore[arg-type]
    line = ProgressLine()
    seen = 0

    def progress(report: Any, n: int) -> None:
        nonlocal seen
        seen += n
        line.show(f"pushing: {seen} of {total} sessions ({report.events:,} events)", force=seen >= total)

    try:
        report = push.push(on_batch=progress)
    finally:
        line.finish()
        push.team.close()
        bank.close()
    parts = [f"{report.sessions} sessions", f"{report.events:,} events"]
    for name, word in (("deleted", "deleted there"), ("held", "held (push = false)"),
                       ("theirs", "owned by another machine"), ("failed", "refused")):
        if getattr(report, name):
            parts.append(f"{getattr(report, name)} {word}")
    terminal.echo(f"Pushed to {masked(options.url)}: " + ", ".join(parts) + ".")
    for error in report.errors[:10]:
        terminal.echo(f"  {error}", err=True)
    if report.stopped_by:
        why = report.stopped_by if report.refused else f"the team bank cannot be reached ({report.stopped_by})"
        terminal.echo(f"stopped: {why}; the rest stays queued", err=True)
        sys.exit(1)
    if report.failed:
        sys.exit(1)


@team.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable.")
@click.pass_obj
def team_status(settings: Settings, as_json: bool) -> None:
    """Sessions pushed, the lag (events not pushed yet), last push, last error, the sessions refused."""
    from harvester.status import team_status as stats_of
    from harvester.team.report import describe

    team_settings(settings)
    bank = open_bank_or_fail(settings)
    try:
        stats = stats_of(bank, settings)
    finally:
        bank.close()
    if as_json:
        import orjson

        terminal.echo(terminal.json_text(orjson.dumps(stats, option=orjson.OPT_INDENT_2).decode()))
    else:
        terminal.echo("\n".join(describe(stats, detail=True)))  # type: ignore[arg-type]
