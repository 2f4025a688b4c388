"""``harvester serve``: the local web viewer (harvester/web), over the local bank or with ``--team`` the team bank."""

from __future__ import annotations

import click

from harvester import terminal
from harvester.config import Settings


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="The port (default: 8765 if free, else any free one; 0: any free one).")
@click.option("--host", default=None, metavar="ADDRESS",
              help="Listen on this address instead of 127.0.0.1. Anything but loopback lets other machines reach the "
                   "viewer (with the token): said with a warning.")
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in the default browser.")
@click.option("--team", is_flag=True, help="Show the team bank (team_bank in the config): every machine's sessions.")
@click.pass_obj
def serve(settings: Settings, port: int | None, host: str | None, open_browser: bool, team: bool) -> None:
    """Browse sessions, transcripts, search and status in a local, read-only web viewer."""
    from harvester.web.reading import LocalSource, TeamSource
    from harvester.web.server import DEFAULT_HOST, is_loopback, serve

    if host is not None and not is_loopback(host):
        terminal.echo(f"harvester serve: WARNING: listening on {host}: other machines can reach the viewer "
                      "(each request still needs the token this run prints)", err=True)
    if team and settings.team is None:
        where = settings.config_file or settings.config_path
        raise click.ClickException(f"--team: no team bank is set: set team_bank in {where} "
                                   "(or $HARVESTER_TEAM_BANK) to a postgresql:// URL")
    local = LocalSource(str(settings.bank))
    source = TeamSource(settings) if team else local
    opener = None
    if open_browser:
        import webbrowser

        opener = webbrowser.open
    try:
        serve(source, local, settings, host or DEFAULT_HOST, port, lambda line: terminal.echo(line), opener)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host or DEFAULT_HOST}:{port}: {exc.strerror or exc}") from exc
