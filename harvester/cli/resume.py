"""``harvester resume``: continue a captured session inside another agent (harvester/resume).

Registered on the ``harvester`` group, under "Switch", by :mod:`harvester.cli`.
"""

from __future__ import annotations

import click

from harvester import terminal
from harvester.config import Settings

TARGET_NAMES = ("claude-code", "codex", "gemini-cli", "opencode", "kilo", "qwen-code")


@click.command("resume")
@click.argument("session")
@click.option("--in", "target", required=True, type=click.Choice(TARGET_NAMES), metavar="AGENT",
              help=f"The agent to continue it in: {', '.join(TARGET_NAMES)}.")
@click.option("--upto", type=click.IntRange(min=1), metavar="N",
              help="Only the events up to #N (included): the session as it stood before a later turn.")
@click.option("--tools", type=click.Choice(["native", "text"]), default="native", show_default=True,
              help="Tool calls and results as the agent's own records, or as plain text.")
@click.option("--max-bytes", type=int, default=None, metavar="N",
              help="At most this much history (default 400000, a 200k-token context's share): older turns are "
                   "summarized, long results cut.")
@click.option("--cwd", type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="The directory you will continue it in (default: this one).")
@click.option("--dry-run", is_flag=True, help="Say what would be written, and where; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_obj
def resume(settings: Settings, session: str, target: str, upto: int | None, tools: str, max_bytes: int | None,
           cwd: str | None, dry_run: bool, as_json: bool) -> None:
    """Continue SESSION (any captured session: its id, or a prefix) inside another agent: ONE new session in its
    own store, under a new id, holding every earlier turn, tool call and result; then the command that
    continues it."""
    import os

    from harvester.cli.common import _print_json, open_bank_or_fail
    from harvester.resume.convert import ResumeError
    from harvester.resume.convert import resume as resuming
    from harvester.resume.placement import Refused
    from harvester.resume.size import DEFAULT_MAX_BYTES, MIN_MAX_BYTES

    if max_bytes is not None and max_bytes < MIN_MAX_BYTES:  # a usage error: exit 2, before the bank is opened
        raise click.BadParameter(f"{max_bytes} is less than {MIN_MAX_BYTES}, the least that holds a summary and one "
                                 "exchange", param_hint="'--max-bytes'")
    with open_bank_or_fail(settings) as bank:
        try:
            outcome = resuming(bank, session, target, upto=upto, tools=tools, dry_run=dry_run, cwd=cwd,
                               max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes, env=os.environ)
        except (ResumeError, Refused) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _print_json(outcome.as_dict())
        return
    terminal.echo(outcome_text(outcome, dry_run))


def outcome_text(outcome: object, dry_run: bool) -> str:
    """What a resume wrote, what the conversion lost or changed, and the command that continues it."""
    from harvester.resume.convert import LABELS, Outcome, command_line

    assert isinstance(outcome, Outcome)
    label, s = LABELS[outcome.target], outcome.source
    what = "imported into its database from" if outcome.target in ("opencode", "kilo") else "in"
    lines = [f"{'Would write' if dry_run else 'Wrote'} {label} session {outcome.native_id} ({outcome.turns} turns) "
             f"from {s.harness} session {terminal.one_line(s.native_id)} (its events #1 to #{s.last_seq}),",
             f"  {what} {outcome.path}",
             "Lost or changed in the conversion: " + ("; ".join(outcome.changes.lines()) or "nothing") + ".",
             *(f"Note: {terminal.one_line(note)}." for note in outcome.notes),
             f"{'It would be continued' if dry_run else 'Continue it'} in {label} with:",
             f"  {command_line(outcome.command, outcome.cwd)}"]
    return "\n".join(lines)
