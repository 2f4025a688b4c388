"""The ``harvester`` command line."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

import click
import orjson

from harvester import config, log, terminal
from harvester.cli_input import (
    NamedChoice,
    NoHistory,
    NotARepository,
    bank_id_given,
    check_repo,
    old_bank_id_option,
)
from harvester.cli_options import KIND_NAMES, ROLE_NAMES, names, when_option
from harvester.cli_reading import judge_stale_states, unknown_hint, whole_texts
from harvester.config import ConfigError, Settings

if TYPE_CHECKING:
    from harvester.bank import Bank
    from harvester.parsers.base import Harness

# The rest is imported by the commands that use it: `harvester mcp` answers an agent's first request
# sooner (Codex waits one second for optional MCP servers), and every command starts quicker.


def open_bank_or_fail(settings: Settings, write: bool = False, archive: bool | None = None,
                      empty: Any = None) -> Bank:
    """The bank, for writing (``scan``) or for reading: a bank this user cannot write, or one a newer
    harvester wrote, is still readable; where there is none, a reading command says there is no history yet
    (``empty``: its answer with ``--json``) and creates nothing. ``archive``: keep the raw archive (default: as
    configured)."""
    from harvester.bank import BankError, NoBank, open_bank, open_bank_to_read

    try:
        if write:
            return open_bank(settings.bank, archive=settings.archive if archive is None else archive)
        return open_bank_to_read(settings.bank)
    except NoBank as exc:
        raise NoHistory(settings.bank, empty) from exc
    except BankError as exc:
        raise click.ClickException(str(exc)) from exc


def open_reading(settings: Settings, team: bool, empty: Any = None) -> Any:
    """What a reading command reads: the local bank, or with ``--team`` the team bank (harvester/team/read.py),
    which answers the same questions in the same shapes. ``empty``: the answer with ``--json`` before the
    first scan (see :class:`NoHistory`)."""
    if not team:
        return open_bank_or_fail(settings, empty=empty)
    if settings.team is None:
        where = settings.config_file or settings.config_path
        raise click.ClickException(f"--team: no team bank is set: set team_bank in {where} "
                                   "(or $HARVESTER_TEAM_BANK) to a postgresql:// URL")
    from harvester.team.read import open_reader
    from harvester.team.schema import TeamSchemaNewer
    from harvester.team.server import Unreachable

    local = None
    if os.path.exists(settings.bank):
        from harvester.bank import BankError, open_bank

        with contextlib.suppress(BankError):
            local = open_bank(settings.bank, readonly=True, archive=False)
    try:
        return open_reader(settings, local)
    except (Unreachable, TeamSchemaNewer) as exc:
        raise click.ClickException(f"the team bank: {exc}") from exc
    finally:
        if local is not None:
            local.close()


def team_option(fn: Any) -> Any:
    return click.option("--team", is_flag=True, help="Read the team bank (team_bank in the config): every "
                                                     "machine's sessions.")(fn)


def enabled_harnesses(settings: Settings, names: tuple[str, ...] = ()) -> list[Harness]:
    from harvester.parsers import HARNESSES

    return [h for n, h in HARNESSES.items() if (n in names if names else settings.enabled(n))]


class HarnessChoice(NamedChoice):
    """A harness's name. The registry is read when a name is checked or listed, not when the CLI starts:
    importing every parser costs a reading command (search, status) more than its own work."""

    def __init__(self) -> None:
        super().__init__((), "an agent", "`harvester status --all` lists them")

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        from harvester.parsers import HARNESSES

        return tuple(sorted(HARNESSES))

    @choices.setter
    def choices(self, _: object) -> None:
        pass  # click.Choice sets them; they are the registry's


class ConfigurationError(click.ClickException):
    """A setting from the file, the environment or an option cannot be used: exit 2, click's code for a
    usage error, but only the one line naming the setting (a UsageError would add the usage text, which
    says nothing about a file or a variable)."""

    exit_code = 2


def _print_json(value: Any) -> None:
    sys.stdout.write(terminal.json_text(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()) + "\n")


class BadQuery(click.ClickException):
    """A query that cannot be searched: said in one line (no usage text), exit 2 as for any bad argument."""

    exit_code = 2


def where_option(fn: Any) -> Any:
    """``--repo PATH`` / ``--here`` / ``--bank-id ID``: which repository's sessions (default: every one). The
    bank id filter was spelled ``--bank``, as the bank FILE is before the command: that spelling still works,
    hidden, with a note (and is refused where its value is a file's name: see :func:`bank_id_given`)."""
    fn = old_bank_id_option(fn)
    fn = click.option("--bank-id", "bank_filter", metavar="ID", help="Only sessions filed under this bank id.")(fn)
    fn = click.option("--here", is_flag=True, help="Only the repository you are in.")(fn)
    return click.option("--repo", type=click.Path(file_okay=False), help="Only the repository at PATH: a git "
                        "work tree, or a directory sessions were recorded in.")(fn)


def chosen_scope(settings: Settings, repo: str | None, here: bool, bank_filter: str | None,
                 old_bank_id: str | None = None) -> Any:
    from harvester.bank.scope import EVERYTHING, Scope
    from harvester.recall.scope import scope_for

    bank_filter = bank_id_given(bank_filter, old_bank_id)
    if sum(bool(x) for x in (repo, here, bank_filter)) > 1:
        raise click.UsageError("give one of --repo, --here and --bank-id")
    if bank_filter:
        return Scope(bank_filter, bank_id=bank_filter)
    if repo or here:
        return scope_for(os.getcwd(), settings.bank_id_template, repo=repo)
    return EVERYTHING


@click.group(cls=terminal.VisibleErrors, context_settings={"help_option_names": ["-h", "--help"]})
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
        settings = config.load(os.environ, bank=bank_option, bank_id_template=bank_id_template)
    except ConfigError as exc:
        raise ConfigurationError(str(exc)) from exc
    configured = settings.log_level if settings.origins.get("log_level") else None
    log.configure("info" if ctx.invoked_subcommand == "run" else "warning", level=configured)
    ctx.obj = settings


@cli.command()
@click.option("--harness", "names", multiple=True, type=HarnessChoice(),
              help="Only this harness (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the scan report as JSON.")
@click.pass_obj
def scan(settings: Settings, names: tuple[str, ...], as_json: bool) -> None:
    """Import every session found on this machine; only what is new since the last scan."""
    from harvester import render
    from harvester.bank import BankError
    from harvester.capture.ingest import Ingestor

    bank = open_bank_or_fail(settings, write=True)
    ingestor = Ingestor(bank, settings.bank_id_template, exclude=settings.excluded, limits=settings.read_limits())
    show_progress = not as_json and sys.stderr.isatty()
    progress = render.ScanProgress() if show_progress else None
    try:
        report = ingestor.scan(enabled_harnesses(settings, names), os.environ, config.home(),
                               on_source=progress.advance if progress else None,
                               on_discovered=progress.start if progress else None, extra_roots=settings.roots)
        if progress:
            progress.finish()
        judge_stale_states(bank, settings, enabled_harnesses(settings, names))
        bank.maintain_archive(settings.archive_max_age_days, settings.archive_max_size_bytes)
    except sqlite3.Error as exc:  # the one failure that is ours: the bank cannot be written
        raise click.ClickException(f"the bank at {settings.bank} cannot be written: {exc}") from exc
    except BankError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if progress:
            progress.finish()
        ingestor.close()
        bank.close()
    if as_json:
        _print_json(render.scan_report_dict(report, settings.bank))
    else:
        terminal.echo(render.scan_report_text(report, settings.bank))


@cli.command()
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


@cli.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def show_config(settings: Settings, as_json: bool) -> None:
    """Print the effective configuration and where each value comes from."""
    rows = settings.describe()
    found = settings.config_file is not None
    if as_json:
        table = {key: {"value": value, "from": origin} for key, value, origin in rows}
        table["config_file"]["found"] = found
        _print_json(table)
        return
    _, path, chosen_by = rows[0]
    terminal.echo(f"# config file: {path} ({'found' if found else 'none'}; {chosen_by})")
    for key, value, origin in rows[1:]:
        shown = value if isinstance(value, str) else orjson.dumps(value).decode()
        terminal.echo(f"{key:<28} {terminal.visible(shown):<50} {origin}")


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print the unit and the commands; change nothing.")
def install(dry_run: bool) -> None:
    """Install and start the login service (systemd user unit, or launchd agent on macOS)."""
    from harvester.service import units

    sys.exit(units.apply(units.install_plan(), dry_run, terminal.echo))


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print the commands; change nothing.")
def uninstall(dry_run: bool) -> None:
    """Stop and remove the login service."""
    from harvester.service import units

    sys.exit(units.apply(units.uninstall_plan(), dry_run, terminal.echo))


@cli.command()
@click.option("--all", "every", is_flag=True, help="A row for every agent harvester knows, not only those found.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (every agent).")
@click.pass_obj
def status(settings: Settings, every: bool, as_json: bool) -> None:
    """What was imported, from where, whether every harness parses cleanly, and the service."""
    from harvester import render
    from harvester.status import gather, gather_before_first_scan

    try:
        bank = open_bank_or_fail(settings)
    except NoHistory:  # status still says what it found on this machine
        data = gather_before_first_scan(settings)
    else:
        with bank:
            data = gather(bank, settings)
    if as_json:
        _print_json(data)
    else:
        terminal.echo(render.status_text(data, _terminal_width(), every))


def _terminal_width() -> int | None:
    """The terminal's columns, when stdout is one (piped output keeps its lines whole)."""
    import shutil

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


@cli.command()
@where_option
@click.option("--harness", type=HarnessChoice(), help="Only this agent's sessions.")
@when_option
@click.option("--limit", type=int, default=None, help="At most this many (newest first).")
@team_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def sessions(settings: Settings, repo: str | None, here: bool, bank_filter: str | None, old_bank_id: str | None,
             harness: str | None, since: str | None, until: str | None, limit: int | None, team: bool,
             as_json: bool) -> None:
    """List sessions, newest first, each subagent under the session that started it (of every repository,
    unless --repo, --here or --bank-id; active in --since/--until)."""
    from harvester import render

    scope = chosen_scope(settings, repo, here, bank_filter, old_bank_id)
    with open_reading(settings, team, empty=[]) as bank:
        check_repo(bank, repo)
        rows = bank.scoped_sessions(scope, limit or 1_000_000_000, harness=harness, listed=not as_json, since=since,
                                    until=until)
    if as_json:
        _print_json(rows)
    else:
        import shutil

        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        terminal.echo(render.sessions_text(rows, width))


@cli.command()
@click.argument("session")
@click.option("--full", is_flag=True, help="Every text whole and nothing folded: tool output unshortened, and what "
                                           "the bank keeps clipped (past 256 KiB) read from the archive.")
@click.option("--around", type=int, metavar="N", help="Only the events around #N (see -C).")
@click.option("-C", "--context", "context_events", type=int, default=5, show_default=True, metavar="K",
              help="With --around: K events before and after it.")
@click.option("--from", "start", type=int, metavar="N", help="Only the events from #N on.")
@click.option("--kinds", callback=names("KINDS"), metavar="KINDS",
              help=f"Only these kinds, comma-separated ({KIND_NAMES}); shown unfolded.")
@click.option("--role", "roles", callback=names("ROLES"), metavar="ROLES",
              help=f"Only these roles, comma-separated ({ROLE_NAMES}).")
@click.option("--no-pager", is_flag=True, help="Print, even on a terminal (which pages through $PAGER, else less).")
@team_option
@click.option("--json", "as_json", is_flag=True, help="The normalized session and events as JSON.")
@click.pass_obj
def show(settings: Settings, session: str, full: bool, around: int | None, context_events: int, start: int | None,
         kinds: tuple[str, ...], roles: tuple[str, ...], no_pager: bool, team: bool, as_json: bool) -> None:
    """Show one session's transcript (SESSION: its id, or an unambiguous prefix), its events numbered #N."""
    from harvester import render_transcript
    from harvester.recall.tools import children_of_calls

    if around is not None and start is not None:
        raise click.UsageError("give one of --around and --from")
    with open_reading(settings, team) as bank:
        found = bank.find_sessions(session)
        if not found:
            raise click.ClickException(f"no session matches {session!r}")
        if len(found) > 1:
            listing = "\n".join(f"  {s['native_id']}  ({s['harness']})" for s in found)
            raise click.ClickException(f"{session!r} matches several sessions:\n{listing}")
        row = found[0]
        every = bank.events(row["id"])
        events = render_transcript.select_events(every, around, max(context_events, 0), start, kinds, roles)
        if full:
            whole_texts(bank, events)
        children = children_of_calls(every, bank.subagents(row["harness"], row["native_id"])) if not as_json else {}
    if as_json:
        _print_json({"session": row, "events": events})
        return
    text = render_transcript.transcript_text(row, events, full=full, shown_kinds=kinds, children=children)
    if not events and every:
        text += f"\n\nNo events match (the session's are #{every[0]['seq']} to #{every[-1]['seq']})."
    terminal.page(text, no_pager)


@cli.command()
@click.argument("query")
@where_option
@click.option("--harness", type=HarnessChoice(), help="Only this agent's sessions.")
@when_option
@click.option("--role", callback=names("ROLES", many=False), metavar="ROLE",
              help=f"Only events of this role ({ROLE_NAMES}).")
@click.option("--kind", callback=names("KINDS", many=False), metavar="KIND",
              help=f"Only events of this kind ({KIND_NAMES}).")
@click.option("--limit", type=int, default=20, show_default=True, help="Show at most this many, best first.")
@click.option("--fts", is_flag=True, help="QUERY is SQLite FTS5 syntax (OR, NOT, NEAR, prefix*), not plain words.")
@click.option("--include-injected", is_flag=True, help="Also the context agents inject into a conversation (their "
                                                       "environment preambles, AGENTS.md, reminders).")
@click.option("--include-recall", is_flag=True, help="Also the harvester's own answers that sessions recorded.")
@team_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON: the match count and the hits.")
@click.pass_obj
def search(settings: Settings, query: str, repo: str | None, here: bool, bank_filter: str | None,
           old_bank_id: str | None, harness: str | None, since: str | None, until: str | None, role: str | None,
           kind: str | None, limit: int, fts: bool, include_injected: bool, include_recall: bool, team: bool,
           as_json: bool) -> None:
    """Search every session: QUERY is plain words (all must match; "a phrase" in quotes). What agents wrote,
    patched, grepped and ran is found too (a tool call's input). A hit is #N of its session: `harvester show`
    shows it in its context (around N)."""
    from harvester import render
    from harvester.bank.sqlite_recall import plain_words

    scope = chosen_scope(settings, repo, here, bank_filter, old_bank_id)
    try:
        match = query if fts else plain_words(query)
    except ValueError as exc:
        raise BadQuery(str(exc)) from exc
    with open_reading(settings, team, empty=[]) as bank:
        check_repo(bank, repo)
        try:
            page = bank.search_page(match, scope, limit, harness=harness, since=since, until=until, role=role,
                                    kind=kind, include_recall=include_recall, include_injected=include_injected)
        except sqlite3.OperationalError as exc:
            if not fts:
                raise
            reason = str(exc).removeprefix("fts5: ")
            raise BadQuery(f"not a valid FTS5 query: {reason} (without --fts, QUERY is plain words)") from exc
    if as_json:
        _print_json({"query": query, "total": page.total, "more": page.more, "ranked": page.ranked,
                     "hits": [{k: h.get(k) for k in SEARCH_HIT_KEYS} for h in page.hits]})
    else:
        terminal.echo(render.search_text(page.hits, page.total, query, scope.label, limit, page.more,
                                          page.ranked))


# What `search --json` says of each hit: the session by its full id (a subagent's names its parent too).
SEARCH_HIT_KEYS = ("harness", "session", "parent_native_id", "parent_kind", "bank_id", "title", "seq", "role", "kind",
                   "tool_name", "ts", "snippet")


@cli.command()
@click.option("--repo", type=click.Path(file_okay=False), help="The repository (default: the one you are in).")
@click.option("--session", "session_ref", metavar="ID", help="This session (default: the latest).")
@click.option("--harness", type=HarnessChoice(), help="The latest session of this agent.")
@click.option("--max-bytes", type=int, default=8192, show_default=True, help="At most this much text.")
@team_option
@click.option("--json", "as_json", is_flag=True, help="The session and the brief as JSON.")
@click.pass_obj
def context(settings: Settings, repo: str | None, session_ref: str | None, harness: str | None, max_bytes: int,
            team: bool, as_json: bool) -> None:
    """Print where work stands in this repository: the handoff brief of the latest session."""
    from harvester.recall import brief
    from harvester.recall.scope import scope_for
    from harvester.recall.views import NoSession, Recall, RecallError

    with open_reading(settings, team) as bank:
        check_repo(bank, repo)
        r = Recall(bank, scope_for(os.getcwd(), settings.bank_id_template, repo=repo))
        try:
            chosen = brief.pick_session(r, session_ref, harness)
            text = brief.handoff(r, chosen["native_id"], None, max_bytes, reader="cli")
        except NoSession as none:  # an answer: there is none here
            said = (f"No session in {none.where}{f' of {none.harness}' if none.harness else ''} yet: "
                    "`harvester sessions` lists every repository's." + unknown_hint(bank, r.scope))
            if as_json:
                _print_json({"scope": r.scope.label, "session": None, "brief": None, "message": said})
            else:
                terminal.echo(said)
            return
        except RecallError as exc:
            raise click.ClickException(str(exc) + unknown_hint(bank, r.scope)) from exc
    if as_json:
        _print_json({"scope": r.scope.label, "session": chosen, "brief": text})
    else:
        terminal.echo(text.rstrip("\n"))


@cli.command("export")
@click.option("--repo", type=click.Path(file_okay=False), help="The repository (default: the one you are in).")
@click.option("--to", "target", type=click.Path(file_okay=False), help="Where (default: <repo>/.harvester/history).")
@click.option("--format", "fmt", type=click.Choice(["md", "jsonl"]), default="md", show_default=True)
@click.option("--since", metavar="WHEN", help="Only sessions updated since: an ISO date, or a span like 7d.")
@click.option("--include-recall", is_flag=True, help="Also the harvester's own answers that sessions recorded.")
@click.pass_obj
def export_sessions(settings: Settings, repo: str | None, target: str | None, fmt: str, since: str | None,
                    include_recall: bool) -> None:
    """Write this repository's sessions into it, one file per session (rewritten only when changed)."""
    from harvester.recall.export import export, open_folder
    from harvester.recall.scope import scope_for
    from harvester.recall.views import RecallError, parse_since
    from harvester.repo_files import Refused

    scope = scope_for(os.getcwd(), settings.bank_id_template, repo=repo)
    base = scope.repo_root or os.path.abspath(repo or os.getcwd())
    try:
        cutoff = parse_since(since)
    except RecallError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from exc
    written = unchanged = 0
    failed: list[str] = []
    with open_bank_or_fail(settings) as bank:
        check_repo(bank, repo)
        if not target and not os.path.isdir(base):  # a repository recorded elsewhere: its directory is not made here
            raise NotARepository(f"{repo!r} is not on this machine: give --to DIR to export its sessions there",
                                 param_hint="'--repo'")
        try:
            folder = open_folder(base, target)
        except Refused as exc:
            raise click.ClickException(f"export: {exc}") from exc
        with folder:
            if not getattr(bank, "readonly", False):  # for forget, which removes a session's files there too
                bank.remember_export_folder(str(folder.path))
            for item in export(bank, scope, folder, fmt, cutoff, include_recall):
                if item.error is not None:
                    failed.append(f"not {'removed' if item.removed else 'written'}: {item.path} ({item.error})")
                elif item.removed:
                    terminal.echo(f"removed {item.path} (a session the bank no longer holds)")
                elif item.changed:
                    written += 1
                    terminal.echo(f"wrote {item.path}")
                else:
                    unchanged += 1
    for line in failed:
        terminal.echo(line, err=True)
    terminal.echo(f"{written} written, {unchanged} unchanged, in {folder.path} ({scope.label})")
    if failed:
        raise SystemExit(1)


@cli.command("mcp")
@click.option("--harness", type=HarnessChoice(),
              help="The agent that starts the server: its own live session is never handed back to it.")
@team_option
@click.pass_obj
def mcp_server(settings: Settings, harness: str | None, team: bool) -> None:
    """Serve this repository's history to an agent over MCP (stdio; read-only)."""
    from harvester.recall.mcp import serve

    if not team and not _has_history(settings):  # started by an agent before the first scan: it says so
        serve(None, settings.bank_id_template, harness, settings.timings.recent_minutes, bank_path=str(settings.bank))
        return
    with open_reading(settings, team) as bank:
        serve(bank, settings.bank_id_template, harness, settings.timings.recent_minutes)


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


@cli.command("connect")
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


@cli.command("disconnect")
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


# Commands on what the bank keeps (reparse, forget) live in their own module, which uses the helpers above.
from harvester.cli_archive import forget, reparse  # noqa: E402

cli.add_command(reparse)
cli.add_command(forget)

from harvester.cli_sink import sink  # noqa: E402

cli.add_command(sink)

from harvester.cli_team import team  # noqa: E402

cli.add_command(team)


def main() -> None:
    cli(prog_name="harvester")
