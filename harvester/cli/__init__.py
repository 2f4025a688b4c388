"""The ``harvester`` command line: the root group (its options load the configuration), and the commands, one
module per group of them, registered here under the headings ``--help`` shows them by:

- :mod:`~harvester.cli.capture`: ``scan``, ``reparse``, ``forget``;
- :mod:`~harvester.cli.read`: ``sessions``, ``show``, ``search``, ``context``, ``export``;
- :mod:`~harvester.cli.web`: ``serve`` (the web viewer, listed with them);
- :mod:`~harvester.cli.agents`: ``connect``, ``disconnect``, ``mcp``;
- :mod:`~harvester.cli.resume`: ``resume``;
- :mod:`~harvester.cli.service`: ``run``, ``install``, ``uninstall``, ``status``, ``config``;
- :mod:`~harvester.cli.outbound`: ``sink ...``, ``team ...``;
- :mod:`~harvester.cli.usage`: ``usage`` (listed under Read).

What they share is :mod:`~harvester.cli.common` (no command module imports this one); the text they print is made
by ``render.py``, ``render_status.py`` and ``render_transcript.py``. A command parses its options and calls the
stage that does the work; the stages are imported by the commands that use them, not here: ``harvester mcp``
answers an agent's first request sooner (Codex waits one second for optional MCP servers), and every command
starts quicker. The entry point: :func:`main` (``harvester``, ``python -m harvester``).
"""

from __future__ import annotations

import os
from typing import Any

import click

from harvester import config, log, terminal
from harvester.cli import agents, capture, outbound, read, resume, service, usage, web
from harvester.cli.common import RegistryNames, WholeSummaries, WholeWordsContext
from harvester.config import ConfigError


class Sections(WholeSummaries, terminal.VisibleErrors):
    """The root group: ``--help`` lists the commands under what they are for, in the pipeline's order (click's
    default is one alphabetical list)."""

    context_class = WholeWordsContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections: list[tuple[str, list[str]]] = []

    def add_section(self, title: str, commands: list[click.Command]) -> None:
        for command in commands:
            self.add_command(command)
            for each in (command, *getattr(command, "commands", {}).values()):  # a group's commands too
                each.context_class = WholeWordsContext
        self.sections.append((title, [command.name or "" for command in commands]))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        width = max((len(name) for _, names in self.sections for name in names), default=0)
        for title, names in self.sections:
            self.format_rows(ctx, formatter, title, names, width)


class ConfigurationError(click.ClickException):
    """A setting from the file, the environment or an option cannot be used: exit 2, click's code for a
    usage error, but only the one line naming the setting (a UsageError would add the usage text, which
    says nothing about a file or a variable)."""

    exit_code = 2


@click.group(cls=Sections, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bank", "bank_option", metavar="PATH",
              help=f"The bank file (default: ${config.BANK_ENV}, the config file, else {config.default_bank_path()}).")
@click.option("--bank-id-template", metavar="TEMPLATE",
              help="How sessions are filed: {gitProject}, {project}, {harness} "
                   f"(default: {config.DEFAULT_BANK_ID_TEMPLATE}).")
@click.version_option(package_name="harvester")
@click.pass_context
def cli(ctx: click.Context, bank_option: str | None, bank_id_template: str | None) -> None:
    """Capture every coding agent's session history into one bank per git repository."""
    try:
        settings = config.load(os.environ, bank=bank_option, bank_id_template=bank_id_template,
                               harness_names=RegistryNames())
    except ConfigError as exc:
        raise ConfigurationError(str(exc)) from exc
    configured = settings.log_level if settings.origins.get("log_level") else None
    log.configure("info" if ctx.invoked_subcommand == "run" else "warning", level=configured)
    ctx.obj = settings


cli.add_section("Capture", [capture.scan, capture.reparse, capture.forget])
cli.add_section("Read", [read.sessions, read.show, read.search, read.context, read.export_sessions, usage.usage,
                         web.serve])
cli.add_section("Agents", [agents.connect_command, agents.disconnect_command, agents.mcp_server])
cli.add_section("Switch", [resume.resume])
cli.add_section("Service", [service.run, service.install, service.uninstall, service.status, service.show_config])
cli.add_section("Outbound", [outbound.sink, outbound.team])


def main() -> None:
    cli(prog_name="harvester")
