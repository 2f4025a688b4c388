"""The outbound commands, by hand (the service does both after every import): ``sink`` (the bank forwarded to
Hindsight: harvester/sinks; check the connection, forward now, see the queue) and ``team`` (the team bank:
harvester/team; push now, see what waits). Reading the team bank is ``--team`` on the reading commands."""

from __future__ import annotations

import sys
from typing import Any

import click

from harvester import terminal
from harvester.cli.common import WholeSummaries, bank_id_given, old_bank_id_option, open_bank_or_fail
from harvester.config import Settings

# --- harvester sink ---

def _options(settings: Settings) -> Any:
    options = settings.sinks.get("hindsight")
    if options is None:
        where = settings.config_file or settings.config_path
        raise click.ClickException(f"no sink is configured: add [sinks.hindsight] with a url to {where}")
    return options


@click.group(cls=WholeSummaries)
def sink() -> None:
    """Forward the bank to Hindsight ([sinks.hindsight] in the config): check, backfill, status."""


@sink.command("test")
@click.pass_obj
def sink_test(settings: Settings) -> None:
    """Check that the server answers (and takes the token), and print its version."""
    from harvester.sinks.hindsight import Hindsight, SinkError

    options = _options(settings)
    token = options.token()
    if options.token_env and token is None:
        terminal.echo(f"note: ${options.token_env} is not set: no token is sent", err=True)
    client = Hindsight(options.url, token)
    try:
        version = client.version()
        client.banks()
    except SinkError as exc:
        raise click.ClickException(f"{options.url}: {exc}") from exc
    finally:
        client.close()
    features = version.get("features") or {}
    on = ", ".join(sorted(k for k, v in features.items() if v)) if isinstance(features, dict) else ""
    terminal.echo(f"{options.url}: Hindsight API {version.get('api_version', '?')}"
                  + (f" ({on})" if on else "") + (", token accepted" if token else ""))


@sink.command("backfill")
@click.option("--bank-id", "bank_id", metavar="ID", help="Only sessions that go to this Hindsight bank.")
@old_bank_id_option
@click.option("--since", metavar="WHEN", help="Only sessions active since: an ISO date, or a span like 30d.")
@click.pass_obj
def sink_backfill(settings: Settings, bank_id: str | None, old_bank_id: str | None, since: str | None) -> None:
    """Forward existing sessions now, with progress. What --bank-id/--since leave out stays queued for the
    service; to keep a bank out for good, list it in exclude_banks or opt it out."""
    from harvester.cli.render import ProgressLine
    from harvester.recall.views import RecallError, parse_since
    from harvester.sinks import forwarder

    options = _options(settings)
    bank_id = bank_id_given(bank_id, old_bank_id)
    try:
        since_iso = parse_since(since)
    except RecallError as exc:
        raise click.BadParameter(str(exc).removeprefix("since: "), param_hint="'--since'") from exc
    bank = open_bank_or_fail(settings, write=True, archive=False)
    forward = forwarder(bank, settings)  # type: ignore[arg-type]
    assert forward is not None
    keys = None
    if bank_id or since_iso:
        refusal = options.bank_refusal(bank_id) if bank_id else None
        if refusal:
            bank.close()
            raise click.ClickException(f"{bank_id}: {refusal}: nothing of it is forwarded")
        rows = bank.conn.execute(  # type: ignore[attr-defined]
            "SELECT harness, native_id, project, cwd, repo_key, coalesce(updated_at, started_at, last_imported_at) "
            "FROM sessions").fetchall()
        keys = [(h, n) for h, n, project, cwd, key, at in rows
                if (not since_iso or (at or "") >= since_iso)
                and (not bank_id or forward.target({"harness": h, "project": project, "cwd": cwd, "repo_key": key})
                     == bank_id)]
    from harvester.sinks import outbox

    outbox.enqueue(bank, "hindsight")  # type: ignore[arg-type]
    # What failed for good, or was held by a setting since changed, gets another look now.
    outbox.requeue(bank, "hindsight", ("failed", "held"))  # type: ignore[arg-type]
    total = outbox.pending_count(bank, "hindsight")  # type: ignore[arg-type]
    if keys is not None:
        total = min(total, len(keys))
    line = ProgressLine()
    done = 0

    def progress(row: dict[str, Any], report: Any) -> None:
        nonlocal done
        done += 1
        line.show(f"forwarding: {done} of {total} sessions ({report.forwarded} sent)", force=done == total)

    try:
        report = forward.forward(keys=keys, on_document=progress)
    finally:
        line.finish()
        forward.client.close()
        bank.close()
    parts = [f"{report.sent} created or replaced", f"{report.appended} appended", f"{report.lines:,} lines",
             f"{report.unchanged} unchanged"]
    for name in ("skipped", "held", "failed", "retry", "deleted"):
        if getattr(report, name):
            parts.append(f"{getattr(report, name)} {'to retry' if name == 'retry' else name}")
    terminal.echo(f"Forwarded {report.forwarded} of {done} sessions to {options.url}: " + ", ".join(parts) + ".")
    for error in report.errors[:10]:
        terminal.echo(f"  {error}", err=True)
    if report.stopped_by:
        terminal.echo(f"stopped: the server does not answer ({report.stopped_by}); the rest stays queued", err=True)
        sys.exit(1)


@sink.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable.")
@click.pass_obj
def sink_status(settings: Settings, as_json: bool) -> None:
    """Per bank: sessions forwarded, pending, skipped (Hindsight's own), held (opted out), failed; lag, last
    success, last error; and the documents that wait."""
    from harvester.sinks import outbox
    from harvester.sinks.report import describe

    options = _options(settings)
    bank = open_bank_or_fail(settings)
    try:
        stats = outbox.stats(bank, "hindsight")  # type: ignore[arg-type]
        stats["waiting"] = outbox.waiting(bank, "hindsight")  # type: ignore[arg-type]
    finally:
        bank.close()
    stats["url"] = options.url
    if as_json:
        import orjson

        terminal.echo(terminal.json_text(orjson.dumps(stats, option=orjson.OPT_INDENT_2).decode()))
        return
    for text in describe(stats, detail=True):
        terminal.echo(text)


# --- harvester team ---

def team_settings(settings: Settings) -> Any:
    if settings.team is None:
        where = settings.config_file or settings.config_path
        raise click.ClickException(f"no team bank is set: set team_bank in {where} (or $HARVESTER_TEAM_BANK) "
                                   "to a postgresql:// URL")
    return settings.team


@click.group(cls=WholeSummaries)
def team() -> None:
    """The team bank on PostgreSQL (team_bank in the config): push, status."""


@team.command("push")
@click.pass_obj
def team_push(settings: Settings) -> None:
    """Push what the team bank lacks now, with progress (the service does it after every import)."""
    from harvester.cli.render import ProgressLine
    from harvester.config.team import masked
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
