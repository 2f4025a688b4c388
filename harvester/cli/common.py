"""What the command modules share: the bank opened for a command (or the team bank, with ``--team``), the options
several commands take (``--harness``, ``--repo``/``--here``/``--bank-id``, ``--since``/``--until``, ``--kinds``/
``--role``, ``--team``) checked where they are parsed, and JSON printed safely. Here, below the commands, so that no
command module imports the CLI's root (harvester/cli/__init__.py), which registers them all.

It imports no stage at start: the bank, the registry of parsers, the model and the recall views are imported when a
command or an option needs them (reading commands start without them: tests/test_search_scale.py).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

import click
import orjson

from harvester import terminal

if TYPE_CHECKING:
    from harvester.bank import Bank
    from harvester.config import Settings
    from harvester.parsers.base import Harness

# The model's roles and kinds (harvester.model.ROLES, KINDS) as --help names them (tests/test_transcript.py checks).
ROLE_NAMES = "user, assistant, system, tool"
KIND_NAMES = "text, thinking, tool_call, tool_result, compaction, meta"


# --- the bank a command reads or writes ---

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


class NoHistory(click.ClickException):
    """A reading command before the first scan: not an error (exit 0). Said on stdout; with ``--json``, on
    stderr, and stdout gets the command's empty answer (``[]`` for a list, else ``null``)."""

    exit_code = 0

    def __init__(self, bank_path: Any, empty: Any = None) -> None:
        from harvester.bank import NO_HISTORY

        super().__init__(NO_HISTORY.format(bank_path))
        context = click.get_current_context(silent=True)
        self.as_json = bool(context and context.params.get("as_json"))
        self.empty = empty

    def show(self, file: Any = None) -> None:
        if self.as_json:
            import orjson

            terminal.echo(terminal.json_text(orjson.dumps(self.empty).decode()))
        terminal.echo(self.message, err=self.as_json)


# --- what is typed: names, options, the repository ---

def enabled_harnesses(settings: Settings, names: tuple[str, ...] = ()) -> list[Harness]:
    from harvester.parsers import HARNESSES

    return [h for n, h in HARNESSES.items() if (n in names if names else settings.enabled(n))]


class RegistryNames(Collection[str]):
    """The parser registry's harness names, for :func:`harvester.config.load` (the configuration, a leaf, knows
    none): read only when a config file names a harness, for the same reason as :class:`HarnessChoice`."""

    def _names(self) -> Collection[str]:
        from harvester.parsers import HARNESSES

        return HARNESSES.keys()

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


class NamedChoice(click.Choice):
    """One of a list of names; a wrong one is answered with the names it is close to ("did you mean"), not with
    every name there is."""

    def __init__(self, names: tuple[str, ...], what: str, listed_by: str) -> None:
        super().__init__(names, case_sensitive=True)
        self.what, self.listed_by = what, listed_by

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value in self.choices:
            return value
        import difflib

        names = [str(c) for c in self.choices]
        wanted = str(value).strip().lower()
        close = [n for n in names if n.lower() == wanted] or [n for n in names if n.startswith(wanted) and wanted]
        close = (close or difflib.get_close_matches(wanted, names, n=3, cutoff=0.6))[:3]
        meant = f"did you mean {' or '.join(repr(n) for n in close)}? " if close else ""
        self.fail(f"{value!r} is not {self.what} harvester knows; {meant}{self.listed_by}", param, ctx)


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


def team_option(fn: Any) -> Any:
    return click.option("--team", is_flag=True, help="Read the team bank (team_bank in the config): every "
                                                     "machine's sessions.")(fn)


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


def old_bank_id_option(fn: Any) -> Any:
    """The hidden ``--bank ID`` of a command whose bank-id option is now ``--bank-id`` (see :func:`bank_id_given`)."""
    return click.option("--bank", "old_bank_id", metavar="ID", hidden=True)(fn)


def bank_id_given(bank_id: str | None, old_bank_id: str | None) -> str | None:
    """The bank id of ``--bank-id``, or of the old spelling ``--bank`` after a command, said to be old. A file's
    name there is the global ``--bank PATH`` given too late: refused, with where it goes."""
    if old_bank_id is None:
        return bank_id
    context = click.get_current_context()
    command = " ".join(context.command_path.split()[1:]) or context.info_name
    if os.sep in old_bank_id or old_bank_id.endswith((".sqlite", ".db")) or os.path.isfile(old_bank_id):
        raise click.UsageError(f"--bank after the command is a bank id (now --bank-id ID); the bank file goes "
                               f"before the command: harvester --bank PATH {command}")
    terminal.echo(f"harvester: `{command} --bank ID` is now `{command} --bank-id ID`", err=True)
    return bank_id or old_bank_id


class NotARepository(click.BadParameter):
    """``--repo`` names no repository: exit 2, and nothing is read, scoped or written for it."""


def check_repo(bank: Any, repo: str | None) -> None:
    """``--repo PATH`` must name a repository: a git work tree here, or a directory (or a parent of one) that
    sessions were recorded in, which the bank knows even when it is not on this machine. Anything else is a
    typo, answered as one, never an empty answer or an export into a directory made for it."""
    if repo is None:
        return
    from harvester.gitident import GitResolver

    where = os.path.normpath(os.path.abspath(os.path.expanduser(repo)))
    if os.path.isdir(where) and GitResolver().resolve(where).in_git:
        return
    known = getattr(bank, "known_directories", None)
    if known is None:  # the team bank: another machine's paths are not known here
        return
    # A path that is not here reaches what was recorded there or beneath (a deleted clone's subfolders); a
    # directory that is here and in no repository is its own folder's identity, so only sessions recorded in it.
    beneath = None if os.path.isdir(where) else where.rstrip(os.sep) + os.sep
    if any(d == where or (beneath and d.startswith(beneath)) for d in known()):
        return
    raise NotARepository(f"{repo!r} is not a git work tree, and no session was recorded there",
                         param_hint="'--repo'")


def names(which: str, many: bool = True) -> Any:
    """An option's value: some of the model's ``which`` ("ROLES" or "KINDS"), comma-separated when ``many``
    (``--kinds text,tool_call``, a tuple), else one."""
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if not value:
            return () if many else None
        from harvester import model

        choices = getattr(model, which)
        given = tuple(n.strip() for n in value.split(",") if n.strip()) if many else (value,)
        for name in given:
            if name not in choices:
                raise click.BadParameter(f"{name!r} is not one of {', '.join(choices)}")
        return given if many else value
    return convert


def when_option(fn: Any) -> Any:
    """``--since WHEN`` / ``--until WHEN``: an ISO 8601 date or time (UTC unless it says otherwise), or a span back
    from now (90m, 24h, 7d, 2w)."""
    fn = click.option("--until", metavar="WHEN", callback=_moment,
                      help="Only before: an ISO date or time, or a span back from now like 7d.")(fn)
    return click.option("--since", metavar="WHEN", callback=_moment,
                        help="Only since: an ISO date or time, or a span back from now like 7d.")(fn)


def _moment(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from harvester.recall.views import RecallError, parse_since

    try:
        return parse_since(value)
    except RecallError as exc:
        raise click.BadParameter(str(exc).removeprefix("since: ")) from exc


# --- what is printed ---

class WholeSummaries(click.Group):
    """A group whose ``--help`` gives each command's summary whole (its first sentence, wrapped), where click's
    default cuts it at the terminal's width with "...". The root's headings are harvester/cli/__init__.py's."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.format_rows(ctx, formatter, "Commands", self.list_commands(ctx))

    def format_rows(self, ctx: click.Context, formatter: click.HelpFormatter, title: str, names: list[str],
                    width: int = 0) -> None:
        """The commands ``names`` under ``title``, their names padded to ``width`` (several sections align)."""
        rows = []
        for name in names:
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name.ljust(width), command.get_short_help_str(limit=sys.maxsize)))
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


NO_BREAK_HYPHEN = "\u2011"  # a hyphen textwrap does not break at: stands in for "-" while help is wrapped


class WholeWordsHelp(click.HelpFormatter):
    """Help wrapped at spaces only. click's wrapping (textwrap's default) also breaks after a hyphen, which cut
    an agent's name ("copilot-" / "cli"), an option ("--bank-" / "id") or a bank id at the end of a line: what a
    reader copies. Each hyphen is held as U+2011 while a text is wrapped, and written back as "-"."""

    def write(self, string: str) -> None:
        super().write(string.replace(NO_BREAK_HYPHEN, "-"))

    def write_text(self, text: str) -> None:
        super().write_text(text.replace("-", NO_BREAK_HYPHEN))

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(term, text.replace("-", NO_BREAK_HYPHEN)) for term, text in rows], col_max, col_spacing)


class WholeWordsContext(click.Context):
    """The context of every harvester command (harvester/cli/__init__.py sets it): its help is WholeWordsHelp."""

    formatter_class = WholeWordsHelp


def _print_json(value: Any) -> None:
    sys.stdout.write(terminal.json_text(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()) + "\n")


print_json = _print_json  # the name commands use; tests/test_terminal.py knows this writer by its own name
