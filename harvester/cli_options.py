"""Options the reading commands share (``--since``/``--until``, ``--kinds``/``--role``), checked where they are
parsed. Imports no stage: the model and the recall views it checks against are imported when an option is given
(reading commands start without them: tests/test_search_scale.py)."""

from __future__ import annotations

from typing import Any

import click

# The model's roles and kinds (harvester.model.ROLES, KINDS) as --help names them (tests/test_transcript.py checks).
ROLE_NAMES = "user, assistant, system, tool"
KIND_NAMES = "text, thinking, tool_call, tool_result, compaction, meta"


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
