"""``harvester usage``: what the agents cost, by day, week, month, session or five-hour block.

The command parses its options and hands one :class:`harvester.usage.answer.Request` to the usage package; the
bank is read, never written (the price cache is the user's cache directory's)."""

from __future__ import annotations

import contextlib
import os
import re
from datetime import date, timedelta
from typing import Any

import click

from harvester import terminal
from harvester.cli.common import (
    HarnessChoice,
    check_repo,
    chosen_scope,
    open_reading,
    print_json,
    team_option,
    where_option,
)
from harvester.config import Settings

REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
JSON_FIELDS = """\b
--json: {"report", "timezone", "cost_mode", "since", "until", "price_catalogue", "rows" (blocks: "blocks"),
"totals"}; each row (and "totals", and each of a row's "breakdown" with its "harness", "model", "repo"):
"date" | "week" | "month" | "session" (with "harness", "bank_id", "title", "subagents"), "input_tokens" (not
read from nor written to the cache), "output_tokens", "cache_write_tokens", "cache_read_tokens",
"reasoning_tokens", "total_tokens", "cost_usd" (null: nothing priced), "unpriced_responses", "responses",
"recorded_cost_usd", "recorded_responses", "calculated_cost_usd", "calculated_unpriced_responses", "models",
"first_at", "last_at". A block: "start", "end", "last_at", "active", "gap", the same counts, "burn_rate"
({"tokens_per_minute", "input_output_tokens_per_minute", "cost_per_hour_usd"}) and "projection" ({"total_tokens",
"cost_usd", "remaining_minutes"}), null but for the active block, and with --by its "breakdown". docs/usage.md says
what each means."""


def _day(ctx: click.Context, param: click.Parameter, value: str | None) -> date | None:
    """A day: YYYY-MM-DD or YYYYMMDD, or a span back from today (7d, 2w)."""
    if value is None:
        return None
    span = re.fullmatch(r"(\d+)([dw])", value.strip())
    if span:
        days = int(span[1]) * (7 if span[2] == "w" else 1)
        return date.today() - timedelta(days=max(days - 1, 0))
    text = value.strip()
    if re.fullmatch(r"\d{8}", text):
        text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is no day: give YYYY-MM-DD, YYYYMMDD, or a span like 7d") from None


def _zone(value: str | None) -> Any:
    if value is None:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(f"{value!r} is no time zone (an IANA name, like Europe/Paris or UTC)",
                                 param_hint="--timezone") from None


def _breakdowns(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    names = tuple(n.strip() for n in (value or "").split(",") if n.strip())
    unknown = [n for n in names if n not in ("harness", "model", "repo", "host")]
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)}: give some of harness, model, repo (and host with --team)")
    return names


@click.command("usage", epilog=JSON_FIELDS)
@click.argument("report", type=click.Choice(REPORTS), default="daily")
@click.option("--since", callback=_day, metavar="DAY", help="From this day (YYYY-MM-DD, YYYYMMDD, or 7d).")
@click.option("--until", callback=_day, metavar="DAY", help="Up to this day, included.")
@click.option("--harness", "harnesses", type=HarnessChoice(), multiple=True, help="Only this agent (repeatable).")
@click.option("--model", "models", multiple=True, metavar="NAME",
              help="Only models whose name holds NAME, or matches it as a glob (repeatable); any case.")
@where_option
@click.option("--all", "all_repos", is_flag=True, help="Every repository (the default).")
@click.option("--by", callback=_breakdowns, metavar="FIELDS", help="Break each row down by harness, model, repo "
              "(comma-separated; host with --team).")
@click.option("--cost", "cost_mode", type=click.Choice(("auto", "calculate", "recorded")), default="auto",
              show_default=True, help="calculate: from the price catalogue; recorded: only what the agent recorded; "
              "auto: the recorded cost where it is more than zero, else calculated.")
@click.option("--timezone", "zone_name", metavar="ZONE", help="Days in this time zone (default: the local one).")
@team_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (fields below).")
@click.pass_obj
def usage(settings: Settings, report: str, since: date | None, until: date | None, harnesses: tuple[str, ...],
          models: tuple[str, ...], repo: str | None, here: bool, bank_filter: str | None, old_bank_id: str | None,
          all_repos: bool, by: tuple[str, ...], cost_mode: str, zone_name: str | None, team: bool,
          as_json: bool) -> None:
    """Token usage and cost of every agent: REPORT is daily (the default), weekly, monthly, session or blocks
    (five-hour billing windows, the active one's burn rate and projection). Each model response is counted once,
    however many records, resumed sessions or copied histories repeat it; a model with no known price is counted
    and its cost said unknown, never zero."""
    from harvester.usage.answer import Request, answer
    from harvester.usage.bankfile import quick_connection
    from harvester.usage.prices import cache_path, load_book
    from harvester.usage.render import report_text

    if all_repos and (repo or here or bank_filter):
        raise click.UsageError("give --all or one of --repo, --here and --bank-id")
    if "host" in by and not team:
        raise click.UsageError("--by host is the team bank's (--team)")
    if since and until and since > until:
        raise click.UsageError("--since is after --until")
    scope = chosen_scope(settings, repo, here, bank_filter, old_bank_id)
    # A path that is not here and where no session was recorded (a typo) is answered as one, not with "No model
    # responses recorded." (a directory that is here and holds no session's is an empty report, as it always was).
    if repo is not None and not os.path.isdir(os.path.expanduser(repo)):
        with open_reading(settings, team, empty={"rows": []}) as bank:
            check_repo(bank, repo)
    request = Request(report, since, until, harnesses, models, None if scope.everything else scope, by, cost_mode,
                      _zone(zone_name), zone_name or "local")
    quick = None if team else quick_connection(settings.bank)
    if quick is not None:  # a current bank: read as it is (harvester/usage/bankfile.py)
        with contextlib.closing(quick):
            data = answer(quick, request, load_book(cache_path(settings.bank)))
    else:
        with open_reading(settings, team, empty={"rows": []}) as bank:
            book = load_book(cache_path(None if team else settings.bank))  # here: no bank, no book beside it
            if team:
                from harvester.usage.team import answer_team

                data = answer_team(bank, request, book)
            else:
                data = answer(bank.conn, request, book)
    if as_json:
        print_json(data)
    else:
        terminal.echo(report_text(data, request.zone))
