"""The commands between harvester and the agents: ``mcp`` (the bank served to an agent over MCP), ``connect`` and
``disconnect`` (``harvester mcp`` registered in, or removed from, each agent's user-level config: harvester/connect/).
"""

from __future__ import annotations

import os
import sys

import click

from harvester import config, terminal
from harvester.cli.common import HarnessChoice, NamedChoice, open_reading, team_option
from harvester.config import Settings


@click.command("mcp")
@click.option("--harness", type=HarnessChoice(),
              help="The agent that starts the server: its own live session is never handed back to it.")
@team_option
@click.pass_obj
def mcp_server(settings: Settings, harness: str | None, team: bool) -> None:
    """Serve this repository's history to an agent over MCP (stdio; read-only)."""
    from harvester.recall.mcp_start import Wire, preload

    # initialize is answered before the SDK is imported (harvester/recall/mcp_start.py says why), which it is
    # meanwhile, on another thread.
    loaded = preload(("harvester.recall.mcp",))
    try:
        wire: Wire | None = Wire.take()
    except OSError:  # no stdin or stdout to take: the SDK's transport says so
        wire = None
    else:
        wire.answer_first()
    loaded()
    from harvester.recall.mcp import serve

    if not team and not _has_history(settings):  # started by an agent before the first scan: it says so
        serve(None, settings.bank_id_template, harness, settings.timings.recent_minutes, bank_path=str(settings.bank),
              wire=wire)
        return
    with open_reading(settings, team) as bank:
        serve(bank, settings.bank_id_template, harness, settings.timings.recent_minutes, wire=wire)


def _has_history(settings: Settings) -> bool:
    """Whether a bank is there to read (an empty file is none); one that cannot be looked at is, and says why."""
    try:
        return os.stat(settings.bank).st_size > 0
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True


# --- connect / disconnect: our MCP server in every agent's user-level config (harvester/connect/) ---
CONNECTABLE = ("claude-code", "codex", "gemini-cli", "qwen-code", "opencode", "kilo", "copilot-cli", "cline",
               "continue", "cursor")
_AGENT_CHOICE = NamedChoice(CONNECTABLE, "an agent", f"connect knows {', '.join(CONNECTABLE)}")


@click.command("connect")
@click.argument("agents", nargs=-1, type=_AGENT_CHOICE, metavar="[AGENT]...")
@click.option("--all", "all_agents", is_flag=True, help="Every supported agent, installed or not.")
@click.option("--dry-run", is_flag=True, help="Print the diff of each file; write nothing.")
@click.option("--force", is_flag=True, help="Also replace a `harvester` entry that connect did not write (yours: "
              "it is kept in a backup beside the file).")
def connect_command(agents: tuple[str, ...], all_agents: bool, dry_run: bool, force: bool) -> None:
    """Register `harvester mcp` in each agent's user-level config (default: the installed agents).

    AGENT: claude-code, codex, gemini-cli, qwen-code, opencode, kilo, copilot-cli, cline, continue, cursor."""
    from harvester import connect

    sys.exit(connect.run(agents, all_agents=all_agents, remove=False, dry_run=dry_run, env=os.environ,
                         home=config.home(), out=terminal.echo, force=force))


@click.command("disconnect")
@click.argument("agents", nargs=-1, type=_AGENT_CHOICE, metavar="[AGENT]...")
@click.option("--all", "all_agents", is_flag=True, help="Every supported agent, installed or not.")
@click.option("--dry-run", is_flag=True, help="Print the diff of each file; write nothing.")
@click.option("--force", is_flag=True, help="Also remove a `harvester` entry that connect did not write (yours: "
              "it is kept in a backup beside the file).")
def disconnect_command(agents: tuple[str, ...], all_agents: bool, dry_run: bool, force: bool) -> None:
    """Remove what `harvester connect` added (default: from the installed agents).

    AGENT: claude-code, codex, gemini-cli, qwen-code, opencode, kilo, copilot-cli, cline, continue, cursor."""
    from harvester import connect

    sys.exit(connect.run(agents, all_agents=all_agents, remove=True, dry_run=dry_run, env=os.environ,
                         home=config.home(), out=terminal.echo, force=force))
