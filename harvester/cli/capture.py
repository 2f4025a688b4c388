"""The capture commands: ``scan`` (import what is new), ``reparse`` (rebuild sessions from the raw archive with
today's parsers) and ``forget`` (remove sessions for good, and keep them out of later scans)."""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

import click

from harvester import config, terminal
from harvester.cli.common import HarnessChoice, check_repo, enabled_harnesses, open_bank_or_fail, print_json
from harvester.config import Settings

if TYPE_CHECKING:
    from harvester.bank import Bank
    from harvester.parsers.base import Harness


@click.command()
@click.option("--harness", "names", multiple=True, type=HarnessChoice(),
              help="Only this harness (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the scan report as JSON.")
@click.pass_obj
def scan(settings: Settings, names: tuple[str, ...], as_json: bool) -> None:
    """Import every session found on this machine; only what is new since the last scan."""
    from harvester.bank import BankError
    from harvester.capture.ingest import Ingestor
    from harvester.cli import render

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
        print_json(render.scan_report_dict(report, settings.bank))
    else:
        terminal.echo(render.scan_report_text(report, settings.bank))


def judge_stale_states(bank: Bank, settings: Settings, harnesses: list[Harness]) -> None:
    """Sessions a stopped service left marked live are judged again (harvester/capture/liveness.py); a running service
    judges them itself, every half minute."""
    from harvester.capture.liveness import judge_stale_live
    from harvester.heartbeat import read_heartbeat, service_alive

    beat = read_heartbeat()
    if beat is not None and service_alive(beat):
        return
    t = settings.timings
    judge_stale_live(bank, harnesses, t.recent_minutes * 60, t.idle_end_minutes * 60)


def _archive_wanted(settings: Settings) -> bool:
    """Whether to open the archive for writing: when it is on, or off now but still holding what it kept."""
    from harvester.capture.archive import archive_dir

    return settings.archive or archive_dir(settings.bank).is_dir()


@click.command()
@click.option("--harness", "names", multiple=True, type=HarnessChoice(),
              help="Only this harness's sessions (repeatable).")
@click.option("--session", "session_ref", metavar="ID", help="Only this session (its id, or a prefix).")
@click.pass_obj
def reparse(settings: Settings, names: tuple[str, ...], session_ref: str | None) -> None:
    """Rebuild sessions with today's parsers from the raw archive (or the agents' files, where the archive
    lacks them). Idempotent; a run that was stopped goes on where it stood. Exit status 3: the archive of some
    sources is damaged (and their agents' files cannot mend it): their sessions were left as they were, and
    `harvester status` lists the damage."""
    from harvester.bank import NOT_FOUND_HINT, SEVERAL_HINT
    from harvester.bank import reparse as reparsing
    from harvester.capture.ingest import Ingestor
    from harvester.cli.render import ProgressLine

    bank = open_bank_or_fail(settings, write=True, archive=_archive_wanted(settings))
    native_id = None
    if session_ref:
        found = bank.find_sessions(session_ref)
        if len(found) != 1:
            bank.close()
            raise click.ClickException(f"no session matches {session_ref!r}: {NOT_FOUND_HINT}" if not found else
                                       f"{session_ref!r} matches several sessions ({SEVERAL_HINT}): "
                                       + ", ".join(s["native_id"] for s in found))
        native_id = found[0]["native_id"]
    harnesses = [h.name for h in enabled_harnesses(settings, names)] if names else None
    line = ProgressLine()

    def progress(done: reparsing.SourceDone, count: int, total: int) -> None:
        line.show(f"reparsing: {count} of {total} sources ({done.harness})", force=count == total)

    ingestor = Ingestor(bank, settings.bank_id_template, exclude=settings.excluded, limits=settings.read_limits())
    try:
        report = reparsing.reparse(ingestor, harnesses, native_id, on_source=progress)
        # What a store says of its sessions (a session without its end record is live) is judged as scan judges it.
        judge_stale_states(bank, settings, enabled_harnesses(settings, names))
    finally:
        line.finish()
        ingestor.close()
        bank.close()
    terminal.echo(_reparse_summary(report))
    if report.damaged:
        sys.exit(DAMAGED_EXIT)


DAMAGED_EXIT = 3  # reparse: some sources were left as they were, their archive being damaged


def _reparse_summary(report: Any) -> str:
    ways: dict[str, int] = {}
    for done in report.sources:
        ways[done.how] = ways.get(done.how, 0) + 1
    sessions = sum(s.sessions for s in report.sources)
    head = (f"Reparsed {_count(len(report.sources), 'source')}: {report.events:,} events in "
            f"{_count(sessions, 'session')}")
    if report.resumed:
        head += " (carrying on a run that was stopped)"
    parts = [f"{ways[k]} from {w}" for k, w in (("archive", "the archive"), ("file", "their files")) if ways.get(k)]
    if ways.get("damaged"):
        parts.append(f"{ways['damaged']} left as they were, their archive damaged")
    lines = [head + (f"; {', '.join(parts)}." if parts else ".")]
    for done in report.sources:
        if done.mended:
            lines.append(f"  mended from its file, which holds what was archived: {terminal.visible(done.path)} "
                         f"({_parts(done.mended)})")
        if done.how == "skipped":
            lines.append(f"  skipped {terminal.visible(done.path)}: {done.reason}")
        elif done.how == "damaged":
            lines.append(f"  damaged, left as it was: {terminal.visible(done.path)} ({_parts(done.damage)}): the "
                         "bank keeps its sessions; `harvester status` lists the damage")
    return "\n".join(lines)


def _parts(parts: list[str]) -> str:
    shown = ", ".join(terminal.visible(p) for p in parts[:3])
    return shown + (f" and {len(parts) - 3} more" if len(parts) > 3 else "")


@click.command()
@click.argument("session", required=False)
@click.option("--repo", type=click.Path(file_okay=False), help="Every session of the repository at PATH.")
@click.option("--before", metavar="WHEN", help="Sessions last active before: an ISO date, or a span like 90d.")
@click.option("--dry-run", is_flag=True, help="List what would go; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask (needed when not at a terminal).")
@click.pass_obj
def forget(settings: Settings, session: str | None, repo: str | None, before: str | None, dry_run: bool,
           yes: bool) -> None:
    """Remove sessions from the bank, its search index and the archive, for good, and keep them out of later
    scans. SESSION: an id or a prefix; or --repo and/or --before. Sessions started from them go too."""
    from harvester.bank import forget as forgetting
    from harvester.recall.scope import scope_for
    from harvester.recall.views import RecallError, parse_since

    if session and (repo or before):
        raise click.UsageError("give SESSION, or --repo and/or --before, not both")
    if not (session or repo or before):
        raise click.UsageError("say what to forget: SESSION, --repo PATH or --before WHEN")
    try:
        cutoff = parse_since(before)
    except RecallError as exc:
        raise click.BadParameter(str(exc).removeprefix("since: "), param_hint="'--before'") from exc
    scope = scope_for(os.getcwd(), settings.bank_id_template, repo=repo) if repo else None
    bank = open_bank_or_fail(settings, write=not dry_run, archive=_archive_wanted(settings) and not dry_run)
    try:
        check_repo(bank, repo)  # a typo is answered as one, not with "Nothing to forget"
        try:
            chosen = forgetting.choose(bank, session, scope, cutoff)  # type: ignore[arg-type]
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
        if not chosen:
            terminal.echo("Nothing to forget: no session matches.")
            return
        events = sum(s["event_count"] or 0 for s in chosen)
        terminal.echo(f"{'Would forget' if dry_run else 'Forgetting'} {_count(len(chosen), 'session')} "
                      f"({events:,} events):")
        for s in chosen:
            # One line each, what is about to go for good: an id or a title cannot print a line of its own.
            title = terminal.one_line((s["title"] or "(untitled)")[:60])
            terminal.echo(f"  {s['harness']:<14} {terminal.one_line(s['native_id'])}  "
                          f"{terminal.one_line((s['started_at'] or '')[:10])}  {title}")
        if dry_run:
            for path in forgetting.sources_of(bank, [s["id"] for s in chosen]):  # type: ignore[arg-type]
                terminal.echo(f"  read from {terminal.one_line(path)}")
            terminal.echo("Nothing changed (--dry-run).")
            return
        if not yes:
            if not sys.stdin.isatty():
                raise click.ClickException("forgetting cannot be undone: run again with --yes")
            click.confirm("Forget them? This cannot be undone", abort=True)
        done = forgetting.forget(bank, chosen)  # type: ignore[arg-type]
    finally:
        bank.close()
    terminal.echo(_forget_summary(done))


def _count(n: int, word: str) -> str:
    from harvester.cli.render import plural

    return f"{n:,} {plural(n, word)}"


def _forget_summary(done: Any) -> str:
    lines = [f"Forgot {_count(len(done.sessions), 'session')} ({done.events:,} events): gone from the bank, its "
             f"search index and the archive ({done.bytes_freed / 1e6:.1f} MB of archive freed)."]
    for path in done.inseparable:
        lines.append(f"  {terminal.visible(path)} also holds other sessions, which could not be told apart from "
                     "these: its whole archive went (they stay in the bank; `harvester reparse` archives them "
                     "again from the file)")
    for path, what in done.damaged:
        lines.append(f"  {terminal.visible(path)}: its archive was damaged ({terminal.visible(what)}), and went whole "
                     "rather than be re-packed from what could not be checked (its other sessions stay in the bank; "
                     "`harvester reparse` archives them again from the file)")
    if done.copies:
        lines.append(f"  {done.copies:,} copies of their records in other sessions (a fork or a resume that nothing "
                     "links to them) went too; those sessions stay")
        lines += [f"  {terminal.visible(p)} held such copies: its archive went (`harvester reparse` reads its "
                  "sessions from the file, without the copies)" for p in done.copies_sources]
    if done.exported_removed or done.exported_left:
        lines.append(f"Their exported files: {len(done.exported_removed):,} removed"
                     + (f", {len(done.exported_left):,} not:" if done.exported_left else "."))
        lines += [f"  removed {terminal.visible(p)}" for p in done.exported_removed]
        lines += [f"  could not remove {terminal.visible(p)}: {why}" for p, why in done.exported_left]
    if not done.wal_emptied:
        lines.append("  another process is reading the bank: its write-ahead log keeps old pages until the next "
                     "checkpoint")
    if done.sources:
        lines.append("The agents' own files are untouched (harvester never writes there); later scans skip these "
                     "sessions while they hold them:")
        lines += [f"  {terminal.visible(p)}" for p in done.sources]
    return "\n".join(lines)
