"""Five-hour billing windows (``harvester usage blocks``), as Claude's plans count them and ccusage shows them.

A block starts at the hour its first response falls in (UTC, floored) and lasts five hours; a response more than
five hours after the block's start, or after the previous response, starts a new one (a gap longer than five hours
is shown as a gap). The block still running (its last response less than five hours ago, and it has not ended)
is active: its burn rate is its tokens (and cost) per minute between its first and its last response, and its
projection adds that rate over the minutes it has left. The same rules as ccusage's (blocks.rs), on every agent's
responses together or on those asked for; ``--by`` breaks each block down as it does a day.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from harvester.usage.days import Days
from harvester.usage.harnesses import REASONING_APART
from harvester.usage.prices import ModelPrices
from harvester.usage.report import Totals, price_group

BLOCK = timedelta(hours=5)


@dataclass(slots=True)
class Block:
    start: datetime
    end: datetime
    last: datetime | None = None  # the last response's time; None for a gap
    first: datetime | None = None
    totals: Totals = field(default_factory=Totals)
    active: bool = False
    parts: dict[tuple[str, ...], Totals] = field(default_factory=dict)  # by the breakdown's values (--by)

    @property
    def gap(self) -> bool:
        return self.last is None

    def burn(self) -> dict[str, float] | None:
        """Tokens and cost per minute between the first and the last response (None: one instant)."""
        if self.gap or self.first is None or self.last is None:
            return None
        minutes = (self.last - self.first).total_seconds() / 60
        if minutes <= 0:
            return None
        t = self.totals
        return {"tokens_per_minute": t.total / minutes,
                "input_output_tokens_per_minute": (t.input + t.output) / minutes,
                "cost_per_hour_usd": t.cost / minutes * 60}

    def projection(self, now: datetime) -> dict[str, float] | None:
        burn = self.burn() if self.active else None
        if burn is None:
            return None
        remaining = round((self.end - now).total_seconds() / 60)
        return {"total_tokens": round(self.totals.total + burn["tokens_per_minute"] * remaining),
                "cost_usd": round(self.totals.cost + burn["cost_per_hour_usd"] / 60 * remaining, 2),
                "remaining_minutes": remaining}

    def as_json(self, now: datetime, names: list[str] | None = None) -> dict[str, Any]:
        """``names``: the breakdown's fields (``--by``), in the order of a part's values."""
        out = {"start": _iso(self.start), "end": _iso(self.end), "last_at": _iso(self.last) if self.last else None,
               "active": self.active, "gap": self.gap, **self.totals.as_json(),
               "burn_rate": self.burn() if self.active else None, "projection": self.projection(now)}
        if self.parts and names:
            out["breakdown"] = [{**dict(zip(names, part, strict=True)), **totals.as_json()}
                                for part, totals in sorted(self.parts.items())]
        return out


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def blocks(responses: list[tuple], days: Days, prices: dict[str, ModelPrices | None], mode: str,
           now: datetime | None = None, part_of: Callable[[tuple], tuple[str, ...]] | None = None) -> list[Block]:
    """``responses``: harvester/usage/query.py's, in time order (ts, harness, model, tier, six counts, recorded
    cost, then what a breakdown asks for); ``part_of``: a response's part of its block (``--by``)."""
    now = now or datetime.now(UTC)
    out: list[Block] = []
    current: Block | None = None
    for response in responses:
        ts, harness, model, tier = response[:4]
        counts, cost = list(response[4:10]), response[10]
        when = _parse(ts)
        if current is not None:
            assert current.last is not None
            if _starts_block(when, current.start, current.last):
                _close(current, now)
                out.append(current)
                if when - current.last > BLOCK:
                    out.append(Block(current.last + BLOCK, when))
                current = None
        if current is None:
            start = when.replace(minute=0, second=0, microsecond=0)
            current = Block(start, start + BLOCK, first=when)
        current.last = when
        apart = counts[5] if harness in REASONING_APART else 0
        totals = price_group(apart, model, days.of_ts(ts), tier, counts, cost, 1, prices, mode)
        totals.first = totals.last = ts
        current.totals.add(totals)
        if part_of is not None:
            current.parts.setdefault(part_of(response), Totals()).add(totals)
    if current is not None:
        _close(current, now)
        out.append(current)
    return out


def _starts_block(when: datetime, start: datetime, last: datetime) -> bool:
    """Whether a response at ``when`` starts a new block after the one that started at ``start`` and last had one
    at ``last``."""
    return when - start > BLOCK or when - last > BLOCK


def last_block_start(times: list[str]) -> str:
    """The time of the response that starts the last block of ``times`` (the times of responses in time order,
    the first starting a block), by the rule :func:`blocks` follows."""
    first = times[0]
    start = last = _parse(first)
    start = start.replace(minute=0, second=0, microsecond=0)
    for ts in times[1:]:
        when = _parse(ts)
        if _starts_block(when, start, last):
            first, start = ts, when.replace(minute=0, second=0, microsecond=0)
        last = when
    return first


def _close(block: Block, now: datetime) -> None:
    assert block.last is not None
    block.active = now - block.last < BLOCK and now < block.end
