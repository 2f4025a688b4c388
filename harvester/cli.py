"""The ``harvester`` command line."""

from __future__ import annotations

import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import orjson

from harvester import config, log, render
from harvester.bank import Bank, BankError, open_bank
from harvester.gitident import GitResolver, bank_id
from harvester.ingest import Ingestor
from harvester.sources import existing_roots
from parsers import HARNESSES


@dataclass
class Settings:
    bank_path: Path
    template: str

    def open(self) -> Bank:
        try:
            return open_bank(self.bank_path)
        except BankError as exc:
            raise click.ClickException(str(exc)) from exc


def _print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bank", "bank_option", metavar="PATH",
              help=f"The bank file (default: ${config.BANK_ENV}, else {config.default_bank_path()}).")
@click.option("--bank-id-template", metavar="TEMPLATE",
              help="How sessions are filed: {gitProject}, {project}, {harness} "
                   f"(default: ${config.BANK_ID_TEMPLATE_ENV}, else {config.DEFAULT_BANK_ID_TEMPLATE}).")
@click.version_option(package_name="harvester")
@click.pass_context
def cli(ctx: click.Context, bank_option: str | None, bank_id_template: str | None) -> None:
    """Capture every coding agent's session history into one bank per git repository."""
    log.configure()
    ctx.obj = Settings(config.bank_path(bank_option), config.bank_id_template(bank_id_template))


@cli.command()
@click.option("--harness", "names", multiple=True, type=click.Choice(sorted(HARNESSES)),
              help="Only this harness (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the scan report as JSON.")
@click.pass_obj
def scan(settings: Settings, names: tuple[str, ...], as_json: bool) -> None:
    """Import every session found on this machine; only what is new since the last scan."""
    bank = settings.open()
    ingestor = Ingestor(bank, settings.template)
    harnesses = [HARNESSES[n] for n in names] if names else list(HARNESSES.values())
    show_progress = not as_json and sys.stderr.isatty()
    progress = render.ScanProgress() if show_progress else None
    try:
        report = ingestor.scan(harnesses, os.environ, config.home(),
                               on_source=progress.advance if progress else None,
                               on_discovered=progress.start if progress else None)
    except sqlite3.Error as exc:  # the one failure that is ours: the bank cannot be written
        raise click.ClickException(f"the bank at {settings.bank_path} cannot be written: {exc}") from exc
    finally:
        if progress:
            progress.finish()
        ingestor.close()
        bank.close()
    if as_json:
        _print_json(render.scan_report_dict(report, settings.bank_path))
    else:
        click.echo(render.scan_report_text(report, settings.bank_path))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def status(settings: Settings, as_json: bool) -> None:
    """What was imported, from where, and whether every harness parses cleanly."""
    with settings.open() as bank:
        stats = bank.harness_stats()
        harnesses = []
        for name, harness in HARNESSES.items():
            entry = {"name": name, "label": harness.label,
                     "roots": [str(r) for r in existing_roots(harness, os.environ, config.home())]}
            entry.update(stats.pop(name, None) or render.EMPTY_STATS)
            harnesses.append(entry)
        for name, leftover in stats.items():  # harnesses in the bank that this version lacks
            harnesses.append({"name": name, "label": name, "roots": [], **leftover})
        data = {
            "bank": {"path": str(settings.bank_path), "size_bytes": bank.size_bytes()},
            "harnesses": harnesses,
            "recent_imports": bank.recent_imports(20),
            "recent_problems": bank.recent_problems(10),
        }
    if as_json:
        _print_json(data)
    else:
        click.echo(render.status_text(data))


@cli.command()
@click.option("--repo", type=click.Path(file_okay=False), help="Sessions of the repository at PATH.")
@click.option("--bank", "bank_filter", metavar="ID", help="Sessions filed under this bank id.")
@click.option("--harness", type=click.Choice(sorted(HARNESSES)), help="Only this harness.")
@click.option("--limit", type=int, default=None, help="At most this many (newest first).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def sessions(settings: Settings, repo: str | None, bank_filter: str | None, harness: str | None,
             limit: int | None, as_json: bool) -> None:
    """List sessions, newest first."""
    if repo and bank_filter:
        raise click.UsageError("give --repo or --bank, not both")
    with settings.open() as bank:
        repo_root = None
        if repo:
            identity = GitResolver().resolve(os.path.abspath(repo))
            if identity.in_git:
                repo_root = identity.root
            else:
                bank_filter = bank_id(settings.template, identity, os.path.abspath(repo), harness or "")
        rows = bank.list_sessions(bank_id=bank_filter, repo_root=repo_root, harness=harness, limit=limit)
    if as_json:
        _print_json(rows)
    else:
        click.echo(render.sessions_text(rows))


@cli.command()
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="The normalized session and events as JSON.")
@click.pass_obj
def show(settings: Settings, session: str, as_json: bool) -> None:
    """Show one session's transcript (SESSION: its id, or an unambiguous prefix)."""
    with settings.open() as bank:
        found = bank.find_sessions(session)
        if not found:
            raise click.ClickException(f"no session matches {session!r}")
        if len(found) > 1:
            listing = "\n".join(f"  {s['native_id']}  ({s['harness']})" for s in found)
            raise click.ClickException(f"{session!r} matches several sessions:\n{listing}")
        row = found[0]
        events = bank.events(row["id"])
    if as_json:
        _print_json({"session": row, "events": events})
    else:
        click.echo(render.transcript_text(row, events))


@cli.command()
@click.argument("query")
@click.option("--bank", "bank_filter", metavar="ID", help="Only sessions filed under this bank id.")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def search(settings: Settings, query: str, bank_filter: str | None, limit: int, as_json: bool) -> None:
    """Full-text search over every event (SQLite FTS5 query syntax)."""
    with settings.open() as bank:
        try:
            hits = bank.search(query, bank_id=bank_filter, limit=limit)
        except sqlite3.OperationalError as exc:
            raise click.ClickException(f"bad search query: {exc}") from exc
    if as_json:
        _print_json(hits)
    else:
        click.echo(render.search_text(hits))


def main() -> None:
    cli(prog_name="harvester")
