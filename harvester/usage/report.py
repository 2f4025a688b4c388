"""``harvester usage``'s reports: the aggregate (harvester/usage/query.py) brought to days in a time zone, priced,
and added up by day, week, month or session, with breakdowns by agent, model, repository (and host).

Costs, three ways (``--cost``, as ccusage's ``--mode``): ``calculate`` prices every response's tokens from the
catalogue (harvester/usage/prices.py) at the price of its day; ``recorded`` takes only what the agent recorded
itself (opencode, Kilo, Cline, ...); ``auto`` takes the recorded cost where it is more than zero (opencode
records zero for what a subscription pays) and calculates the rest. A response nothing can price (a model the
catalogue does not know, no recorded cost) is counted, in its tokens and in ``unpriced_responses``: its cost is
unknown, never zero. Every row also carries both of the others (``recorded_cost_usd`` over the responses that
have one, ``calculated_cost_usd`` over all), so the agent's own figure and the catalogue's can be compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from harvester.usage.prices import ModelPrices
from harvester.usage.query import Group

COST_MODES = ("auto", "calculate", "recorded")
BREAKDOWNS = ("harness", "model", "repo", "host")


@dataclass(slots=True)
class Totals:
    """What a set of responses adds up to."""

    responses: int = 0
    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    reasoning: int = 0
    total: int = 0  # every token: input, output, cache read and write, and reasoning where it is apart
    cost: float = 0.0  # the mode's cost of the responses it could price
    unpriced: int = 0  # responses the mode could not price
    recorded_cost: float = 0.0
    recorded_responses: int = 0
    calculated_cost: float = 0.0
    calculated_unpriced: int = 0
    models: set[str] = field(default_factory=set)
    first: str | None = None
    last: str | None = None

    def add(self, other: Totals) -> None:
        self.responses += other.responses
        self.input += other.input
        self.output += other.output
        self.cache_write += other.cache_write
        self.cache_read += other.cache_read
        self.reasoning += other.reasoning
        self.total += other.total
        self.cost += other.cost
        self.unpriced += other.unpriced
        self.recorded_cost += other.recorded_cost
        self.recorded_responses += other.recorded_responses
        self.calculated_cost += other.calculated_cost
        self.calculated_unpriced += other.calculated_unpriced
        self.models |= other.models
        if other.first and (not self.first or other.first < self.first):
            self.first = other.first
        if other.last and (not self.last or other.last > self.last):
            self.last = other.last

    def as_json(self) -> dict[str, Any]:
        """The documented field names (``harvester usage --json``)."""
        return {
            "input_tokens": self.input, "output_tokens": self.output, "cache_write_tokens": self.cache_write,
            "cache_read_tokens": self.cache_read, "reasoning_tokens": self.reasoning, "total_tokens": self.total,
            "cost_usd": round(self.cost, 6) if self.responses > self.unpriced else None,
            "unpriced_responses": self.unpriced, "responses": self.responses,
            "recorded_cost_usd": round(self.recorded_cost, 6) if self.recorded_responses else None,
            "recorded_responses": self.recorded_responses,
            "calculated_cost_usd": round(self.calculated_cost, 6) if self.responses > self.calculated_unpriced
            else None,
            "calculated_unpriced_responses": self.calculated_unpriced,
            "models": sorted(self.models), "first_at": self.first, "last_at": self.last,
        }


@dataclass(slots=True)
class Row:
    key: str  # the day, week, month or session
    totals: Totals = field(default_factory=Totals)
    parts: dict[tuple[str, ...], Totals] = field(default_factory=dict)  # by the breakdown's values
    facts: dict[str, Any] = field(default_factory=dict)  # a session row's session


def price_group(apart: int, model: str | None, day: str, tier: int, tokens: list[int], recorded: float | None,
                responses: int, prices: dict[str, ModelPrices | None], mode: str) -> Totals:
    """The totals of ``responses`` responses of one model, day and input tier; ``apart``: the part of their
    reasoning their agents count apart from output (billed as output: harvester/usage/harnesses.py);
    ``recorded``: the cost the agents recorded for them (None: they recorded none)."""
    t_in, t_out, t_read, t_write, t_write_1h, t_reason = tokens
    output = t_out + apart
    totals = Totals(responses=responses, input=t_in, output=t_out, cache_write=t_write, cache_read=t_read,
                    reasoning=t_reason, total=t_in + output + t_read + t_write)
    if model:
        totals.models.add(model)
    calculated = _calculate(prices.get(model) if model else None, day, tier,
                            (t_in, output, t_read, t_write - t_write_1h, t_write_1h))
    if calculated is None:
        totals.calculated_unpriced = responses
    else:
        totals.calculated_cost = calculated
    if recorded is not None:
        totals.recorded_cost, totals.recorded_responses = recorded, responses
    if mode == "recorded" or (mode == "auto" and recorded):
        chosen = recorded
    else:
        chosen = calculated
    if chosen is None:
        totals.unpriced = responses
    else:
        totals.cost = chosen
    return totals


def _calculate(prices: ModelPrices | None, day: str, tier: int, counts: tuple[int, ...]) -> float | None:
    if not any(counts):
        return 0.0  # nothing billed (an agent's stand-in reply): free whatever its model
    if prices is None:
        return None
    units = prices.unit_prices(day, tier)
    cost = 0.0
    for count, unit in zip(counts, units, strict=True):
        if count:
            if unit is None:
                return None
            cost += count * unit
    return cost


def period_of(kind: str) -> Callable[[str], str]:
    """A day (``YYYY-MM-DD``) to its report period: itself, its ISO week's Monday, its month."""
    if kind == "weekly":
        return lambda day: (date.fromisoformat(day) - timedelta(days=date.fromisoformat(day).weekday())).isoformat() \
            if day else ""
    if kind == "monthly":
        return lambda day: day[:7]
    return lambda day: day


def build(groups: Iterable[Group], key_of: Callable[[Group, str], str],
          part_of: Callable[[Group], tuple[str, ...]] | None, prices: dict[str, ModelPrices | None],
          mode: str) -> list[Row]:
    """Rows keyed by ``key_of(group, day)``, each with its parts by ``part_of`` (a breakdown), in key order."""
    rows: dict[str, Row] = {}
    for group in groups:
        day = group.day
        totals = price_group(group.apart_reasoning, group.model, day, group.tier, group.tokens,
                             group.cost if group.recorded else None, group.responses, prices, mode)
        totals.first, totals.last = group.first, group.last
        key = key_of(group, day)
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(key)
        row.totals.add(totals)
        if part_of is not None:
            part = part_of(group)
            if part not in row.parts:
                row.parts[part] = Totals()
            row.parts[part].add(totals)
    return [rows[k] for k in sorted(rows)]


def grand_total(rows: Iterable[Row]) -> Totals:
    total = Totals()
    for row in rows:
        total.add(row.totals)
    return total
