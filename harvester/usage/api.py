"""The usage reports as plain functions, for a program that shows them (the web viewer, issue 28): each takes a
bank's path (or an open connection to one) and returns dataclasses whose fields are the ``--json`` names
(docs/usage.md), so a page and ``harvester usage --json`` can never say different things: the rows are the
very ones :func:`harvester.usage.answer.answer` makes for the command. A team bank's reader
(:class:`harvester.team.read.TeamReader`) may stand for the bank: the rows are then ``harvester usage --team``'s
(harvester/usage/team.py), every machine's.

Read-only, and safe beside a running service: a path is opened with the bank's read-only way
(``open_bank(readonly=True)``: a ``mode=ro`` connection that writes nothing into the bank or beside it, and
refuses with :class:`~harvester.bank.BankError`, never migrates, a bank an older harvester left). Each call opens
and closes it, so every call sees the latest commit. The price book is kept in the user's cache directory
(harvester/usage/prices.py), not beside the bank.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from harvester.usage.answer import Request, active_block, answer

if TYPE_CHECKING:
    from harvester.bank.scope import Scope
    from harvester.team.read import TeamReader

Bank = str | os.PathLike[str] | sqlite3.Connection


@dataclass(frozen=True, slots=True)
class Counts:
    """What a set of model responses adds up to (the ``--json`` counts). ``cost_usd`` is None when none of them
    could be priced; ``unpriced_responses`` says how many were not (their tokens are counted all the same)."""

    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost_usd: float | None
    unpriced_responses: int
    responses: int
    recorded_cost_usd: float | None  # what the agents recorded themselves (opencode, Cline), for those that did
    recorded_responses: int
    calculated_cost_usd: float | None  # the price catalogue's figure for every response
    calculated_unpriced_responses: int
    models: tuple[str, ...]
    first_at: str | None  # UTC, ISO 8601 with milliseconds and Z
    last_at: str | None


@dataclass(frozen=True, slots=True)
class DayCost(Counts):
    """One agent's use of one model on one day (``day``: YYYY-MM-DD in the zone asked for)."""

    day: str = ""
    harness: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class SessionCost(Counts):
    """One session with its subagents' responses (``subagents``: how many); ``session`` is its native id."""

    session: str = ""
    harness: str = ""
    bank_id: str = ""
    title: str | None = None
    subagents: int = 0


@dataclass(frozen=True, slots=True)
class ActiveBlock(Counts):
    """The five-hour billing window still running: its counts so far, its burn rate between its first and last
    response (None while it has one instant) and what that rate comes to by its ``end``."""

    start: datetime | None = None
    end: datetime | None = None
    tokens_per_minute: float | None = None
    input_output_tokens_per_minute: float | None = None
    cost_per_hour_usd: float | None = None
    remaining_minutes: int | None = None
    projected_total_tokens: int | None = None
    projected_cost_usd: float | None = None


@contextlib.contextmanager
def open_usage(bank: Bank) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the bank at ``bank`` (a connection is handed back as it is, left open)."""
    if isinstance(bank, sqlite3.Connection):
        yield bank
        return
    from harvester.bank import open_bank

    opened = open_bank(bank, readonly=True, archive=False)
    try:
        yield opened.conn  # type: ignore[attr-defined]
    finally:
        opened.close()


def _is_team(bank: Bank | TeamReader) -> bool:
    return not isinstance(bank, (str, os.PathLike, sqlite3.Connection))


def report(bank: Bank | TeamReader, request: Request, now: datetime | None = None) -> dict[str, Any]:
    """Any report, exactly as ``harvester usage --json`` prints it (``request``: :class:`Request`); of a team bank's
    reader, as ``harvester usage --team --json``."""
    from harvester.usage.prices import load_book

    if _is_team(bank):
        from harvester.usage.team import answer_team

        return answer_team(bank, request, load_book())  # type: ignore[arg-type]
    with open_usage(bank) as conn:  # type: ignore[arg-type]
        return answer(conn, request, load_book(), now=now)


def daily_costs(bank: Bank | TeamReader, since: date | None = None, until: date | None = None, zone: tzinfo | None = None,
                harnesses: tuple[str, ...] = (), models: tuple[str, ...] = (), scope: Scope | None = None,
                cost: str = "auto") -> list[DayCost]:
    """Each day's cost by agent and model, oldest day first (``zone``: None is the system's; ``scope``: None is
    every repository; ``cost``: auto, calculate or recorded, as ``--cost``)."""
    data = report(bank, Request("daily", since, until, harnesses, models, scope, ("harness", "model"), cost, zone))
    return [_made(DayCost, part, day=row["date"]) for row in data["rows"] for part in row.get("breakdown", [])]


def sessions_by_cost(bank: Bank | TeamReader, limit: int = 20, since: date | None = None, until: date | None = None,
                     harnesses: tuple[str, ...] = (), scope: Scope | None = None,
                     cost: str = "auto") -> list[SessionCost]:
    """The dearest sessions first (a subagent's responses in the session that started it); sessions whose cost
    is unknown come last, the most tokens first among them."""
    data = report(bank, Request("session", since, until, harnesses, (), scope, (), cost))
    found = [_made(SessionCost, row) for row in data["rows"]]
    found.sort(key=lambda s: (s.cost_usd is None, -(s.cost_usd or 0.0), -s.total_tokens, s.session))
    return found[:limit]


def current_block(bank: Bank | TeamReader, now: datetime | None = None, harnesses: tuple[str, ...] = (),
                  scope: Scope | None = None) -> ActiveBlock | None:
    """The active five-hour block (every agent's responses together, as ccusage counts Claude's windows), or
    None when no response came in the last five hours. The very block ``harvester usage blocks`` marks active,
    read from the last gap of over five hours between responses only (not the whole history)."""
    from harvester.usage.prices import load_book

    request = Request("blocks", harnesses=harnesses, scope=scope)
    if _is_team(bank):  # the team bank's blocks are read whole, as `harvester usage blocks --team` reads them
        found = report(bank, request, now)["blocks"]
        active = next((b for b in found if b["active"]), None)
    else:
        with open_usage(bank) as conn:  # type: ignore[arg-type]
            active = active_block(conn, request, load_book(), now=now)
    if active is None:
        return None
    burn, projection = active["burn_rate"] or {}, active["projection"] or {}
    return _made(ActiveBlock, active, start=_when(active["start"]), end=_when(active["end"]),
                 tokens_per_minute=burn.get("tokens_per_minute"),
                 input_output_tokens_per_minute=burn.get("input_output_tokens_per_minute"),
                 cost_per_hour_usd=burn.get("cost_per_hour_usd"),
                 remaining_minutes=projection.get("remaining_minutes"),
                 projected_total_tokens=projection.get("total_tokens"),
                 projected_cost_usd=projection.get("cost_usd"))


def _made(kind: type, row: dict[str, Any], **extra: Any) -> Any:
    names = {f.name for f in fields(kind)}
    values = {k: tuple(v) if k == "models" else v for k, v in row.items() if k in names}
    return kind(**{**values, **extra})


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
