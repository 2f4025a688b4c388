"""The service commands: ``run`` (the capture service, in the foreground), ``install`` and ``uninstall`` (it as a
login service), ``status`` (what was imported, from where, and the service) and ``config`` (the effective
configuration and where each value comes from)."""

from __future__ import annotations

import os
import sys

import click
import orjson

from harvester import config, terminal
from harvester.cli.common import NoHistory, open_bank_or_fail, print_json
from harvester.config import Settings


@click.command()
@click.pass_obj
def run(settings: Settings) -> None:
    """Run the capture service in the foreground (what the login units start)."""
    from harvester.bank import BankError
    from harvester.service.instance import AlreadyRunning
    from harvester.service.run import Service

    try:
        code = Service(settings, os.environ, config.home()).run()
    except AlreadyRunning as exc:
        terminal.echo(f"harvester: {exc}", err=True)
        sys.exit(1)
    except BankError as exc:
        raise click.ClickException(str(exc)) from exc
    sys.exit(code)


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the unit and the commands; change nothing.")
def install(dry_run: bool) -> None:
    """Install and start the login service (systemd user unit, or launchd agent on macOS)."""
    from harvester.service import units

    sys.exit(units.apply(units.install_plan(), dry_run, terminal.echo))


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the commands; change nothing.")
def uninstall(dry_run: bool) -> None:
    """Stop and remove the login service."""
    from harvester.service import units

    sys.exit(units.apply(units.uninstall_plan(), dry_run, terminal.echo))


@click.command()
@click.option("--all", "every", is_flag=True, help="A row for every agent harvester knows, not only those found.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (every agent).")
@click.option("--drift", is_flag=True,
              help="Only the record types and fields no reader knows, per agent: how often, and where.")
@click.pass_obj
def status(settings: Settings, every: bool, as_json: bool, drift: bool) -> None:
    """What was imported, from where, whether every harness parses cleanly, and the service."""
    from harvester.cli import render_status
    from harvester.status import gather, gather_before_first_scan

    try:
        bank = open_bank_or_fail(settings)
    except NoHistory:  # status still says what it found on this machine
        data = gather_before_first_scan(settings)
    else:
        with bank:
            data = gather(bank, settings)
    if drift and as_json:
        print_json({"drift": {h["name"]: h["drift_report"] for h in data["harnesses"] if h.get("drift_report")}})
    elif drift:
        terminal.echo(render_status.drift_text(data))
    elif as_json:
        print_json(data)
    else:
        terminal.echo(render_status.status_text(data, _terminal_width(), every))


def _terminal_width() -> int | None:
    """The terminal's columns, when stdout is one (piped output keeps its lines whole)."""
    import shutil

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def show_config(settings: Settings, as_json: bool) -> None:
    """Print the effective configuration and where each value comes from."""
    rows = settings.describe()
    found = settings.config_file is not None
    if as_json:
        table = {key: {"value": value, "from": origin} for key, value, origin in rows}
        table["config_file"]["found"] = found
        print_json(table)
        return
    _, path, chosen_by = rows[0]
    terminal.echo(f"# config file: {path} ({'found' if found else 'none'}; {chosen_by})")
    for key, value, origin in rows[1:]:
        shown = value if isinstance(value, str) else orjson.dumps(value).decode()
        terminal.echo(f"{key:<28} {terminal.visible(shown):<50} {origin}")
