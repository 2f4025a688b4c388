"""What the CLI takes from a person, checked before anything is read or written: a name among known ones (a
wrong one answered with the close ones), ``--repo`` naming a repository, the bank id's two spellings, and a
read before the first scan (an answer, not an error). Here, not in :mod:`harvester.cli`: the command modules
(``cli_sink``) use them too, and cli.py stays the commands."""

from __future__ import annotations

import os
from typing import Any

import click

from harvester import terminal


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
    beneath = where.rstrip(os.sep) + os.sep
    if any(d == where or d.startswith(beneath) for d in known()):
        return
    raise NotARepository(f"{repo!r} is not a git work tree, and no session was recorded there",
                         param_hint="'--repo'")
