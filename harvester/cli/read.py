"""The reading commands: ``sessions``, ``show``, ``search``, ``context`` (the handoff brief) and ``export`` (a
repository's sessions written into it). Each reads the local bank, or with ``--team`` the team bank, and prints
text for a person or JSON (``--json``)."""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

import click

from harvester import terminal
from harvester.cli.common import (
    KIND_NAMES,
    ROLE_NAMES,
    HarnessChoice,
    NotARepository,
    check_repo,
    chosen_scope,
    names,
    open_bank_or_fail,
    open_reading,
    print_json,
    team_option,
    when_option,
    where_option,
)
from harvester.config import Settings

if TYPE_CHECKING:
    from harvester.bank import Bank


class BadQuery(click.ClickException):
    """A query that cannot be searched: said in one line (no usage text), exit 2 as for any bad argument."""

    exit_code = 2


@click.command()
@where_option
@click.option("--harness", type=HarnessChoice(), help="Only this agent's sessions.")
@when_option
@click.option("--role", callback=names("ROLES", many=False), metavar="ROLE",
              help=f"Only sessions with an event of this role ({ROLE_NAMES}).")
@click.option("--kind", callback=names("KINDS", many=False), metavar="KIND",
              help=f"Only sessions with an event of this kind ({KIND_NAMES}).")
@click.option("--limit", type=int, default=None, help="At most this many (newest first).")
@team_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def sessions(settings: Settings, repo: str | None, here: bool, bank_filter: str | None, old_bank_id: str | None,
             harness: str | None, since: str | None, until: str | None, role: str | None, kind: str | None,
             limit: int | None, team: bool, as_json: bool) -> None:
    """List sessions, newest first, each subagent under the session that started it (of every repository,
    unless --repo, --here or --bank-id; active in --since/--until)."""
    from harvester.cli import render

    scope = chosen_scope(settings, repo, here, bank_filter, old_bank_id)
    with open_reading(settings, team, empty=[]) as bank:
        check_repo(bank, repo)
        rows = bank.scoped_sessions(scope, limit or 1_000_000_000, harness=harness, listed=not as_json, since=since,
                                    until=until, role=role, kind=kind)
        if not team:
            from harvester.usage.sessions import attach

            attach(bank, rows)  # tokens and cost (harvester usage)
    if as_json:
        print_json(rows)
    else:
        import shutil

        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        terminal.echo(render.sessions_text(rows, width))


@click.command()
@click.argument("session")
@click.option("--full", is_flag=True, help="Every text whole and nothing folded: tool output unshortened, and what "
                                           "the bank keeps clipped (past 256 KiB) read from the archive.")
@click.option("--around", type=click.IntRange(min=1), metavar="N", help="Only the events around #N (see -C).")
@click.option("-C", "--context", "context_events", type=click.IntRange(min=0), default=5, show_default=True, metavar="K",
              help="With --around: K events before and after it.")
@click.option("--from", "start", type=click.IntRange(min=1), metavar="N", help="Only the events from #N on.")
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
    from harvester.bank import NOT_FOUND_HINT, SEVERAL_HINT
    from harvester.cli import render_transcript
    from harvester.recall.tools import children_of_calls

    if around is not None and start is not None:
        raise click.UsageError("give one of --around and --from")
    with open_reading(settings, team) as bank:
        found = bank.find_sessions(session)
        if not found:
            raise click.ClickException(f"no session matches {session!r}: {NOT_FOUND_HINT}")
        if len(found) > 1:
            listing = "\n".join(f"  {terminal.one_line(s['native_id'])}  ({s['harness']})" for s in found)
            raise click.ClickException(f"{session!r} matches several sessions ({SEVERAL_HINT}):\n{listing}")
        row = found[0]
        if not team:
            from harvester.usage.sessions import attach

            attach(bank, [row])  # tokens and cost (harvester usage)
        every = bank.events(row["id"])
        events = render_transcript.select_events(every, around, max(context_events, 0), start, kinds, roles)
        if full:
            whole_texts(bank, events)
        children = children_of_calls(every, bank.subagents(row["harness"], row["native_id"])) if not as_json else {}
    if as_json:
        print_json({"session": row, "events": events})
        return
    text = render_transcript.transcript_text(row, events, full=full, shown_kinds=kinds, children=children)
    if not events and every:
        text += f"\n\nNo events match (the session's are #{every[0]['seq']} to #{every[-1]['seq']})."
    terminal.page(text, no_pager)


def whole_texts(bank: Bank, events: list[dict[str, Any]]) -> None:
    """Each clipped text made whole from the archive; where the archive lacks it, the clipped copy says so."""
    for event in events:
        clipped = (event.get("meta") or {}).get("clipped")
        if not clipped:
            continue
        whole = bank.whole_text(event)
        if whole is not None:
            event["text"] = whole
            clipped["whole"] = True
        elif getattr(bank, "team", None) is not None:
            event["text"] += "\n[the whole text is in the archive of the machine that captured it: it never leaves it]"
        elif clipped.get("text") and getattr(bank, "archive", None) is not None and \
                bank.archive.blob_path("texts", str(clipped["text"])).exists():  # type: ignore[attr-defined]
            event["text"] += "\n[the whole text in the archive is damaged: it is not shown]"
        else:
            event["text"] += "\n[the whole text is not in the archive: it was off, or retention removed it]"


@click.command()
@click.argument("query")
@where_option
@click.option("--harness", type=HarnessChoice(), help="Only this agent's sessions.")
@when_option
@click.option("--role", callback=names("ROLES", many=False), metavar="ROLE",
              help=f"Only events of this role ({ROLE_NAMES}).")
@click.option("--kind", callback=names("KINDS", many=False), metavar="KIND",
              help=f"Only events of this kind ({KIND_NAMES}).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="Show at most this many, best first.")
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
    from harvester.bank.sqlite_recall import plain_words
    from harvester.cli import render

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
        print_json({"query": query, "total": page.total, "more": page.more, "ranked": page.ranked,
                     "hits": [{k: h.get(k) for k in SEARCH_HIT_KEYS} for h in page.hits]})
    else:
        terminal.echo(render.search_text(page.hits, page.total, query, scope.label, limit, page.more,
                                          page.ranked))


# What `search --json` says of each hit: the session by its full id (a subagent's names its parent too).
SEARCH_HIT_KEYS = ("harness", "session", "parent_native_id", "parent_kind", "bank_id", "title", "seq", "role", "kind",
                   "tool_name", "ts", "snippet")


@click.command()
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
    from harvester.recall import brief, views
    from harvester.recall.scope import scope_for
    from harvester.recall.views import NoSession, NotInScope, Recall, RecallError

    try:
        views.check_max_bytes(max_bytes)
    except RecallError as exc:  # a usage error (exit 2), said as the option, not as the MCP argument the check names
        raise click.BadParameter(f"{max_bytes} is not between 512 and {views.MAX_MAX_BYTES}",
                                 param_hint="'--max-bytes'") from exc
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
                print_json({"scope": r.scope.label, "session": None, "brief": None, "message": said})
            else:
                terminal.echo(said)
            return
        except NotInScope as exc:
            raise click.ClickException(f"no session {exc.ref!r} in {exc.where} (`harvester sessions` lists every "
                                       "repository's, `harvester show ID` reads one)"
                                       + unknown_hint(bank, r.scope)) from exc
        except RecallError as exc:
            raise click.ClickException(str(exc) + unknown_hint(bank, r.scope)) from exc
    if as_json:
        print_json({"scope": r.scope.label, "session": chosen, "brief": text})
    else:
        terminal.echo(text.rstrip("\n"))


def unknown_hint(bank: Any, scope: Any) -> str:
    """When a repository's scope came up empty: the sessions filed under its bank id whose repository is unknown
    (recorded in a folder of that name that is not here), which it does not include, and how to read them."""
    from harvester.bank.scope import Scope

    if not scope.keys:
        return ""
    rows = bank.scoped_sessions(Scope(scope.label, bank_id=scope.label), 10_000, listed=True)
    n = sum(1 for row in rows if "repo_key" in row and row["repo_key"] is None)
    if not n:
        return ""
    return (f"\n{n} {'session' if n == 1 else 'sessions'} filed under {scope.label} {'was' if n == 1 else 'were'} "
            "recorded in a folder of that name that is not here (repository unknown), so not this repository's: "
            f"`harvester sessions --bank-id {scope.label}` lists them, `harvester show ID` reads one")


@click.command("export")
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
        raise click.BadParameter(str(exc).removeprefix("since: "), param_hint="'--since'") from exc
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
