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
from datetime import UTC, date, datetime, timedelta, tzinfo
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


class Days:
    """Days of one time zone (None: the system's local time), in SQL: a UTC time's local day is its text moved by
    the zone's offset at that time. The offsets and the instants they change (DST) since TRANSITIONS_FROM are
    found once (a look at each month, then a bisection to the hour); a CASE over them picks a row's offset."""

    def __init__(self, zone: tzinfo | None, now: datetime | None = None) -> None:
        self.zone = zone
        self._days: dict[str, str] = {}
        self.changes = self._changes(now or datetime.now(UTC))  # [(UTC instant, offset in minutes)], oldest first

    def _offset(self, when: datetime) -> int:
        local = when.astimezone(self.zone) if self.zone else when.astimezone()
        delta = local.utcoffset()
        return int(delta.total_seconds() // 60) if delta else 0

    def _changes(self, now: datetime) -> list[tuple[datetime, int]]:
        when = TRANSITIONS_FROM
        changes = [(when, self._offset(when))]
        end = now + timedelta(days=400)
        while when < end:
            later = (when + timedelta(days=32)).replace(day=1)
            if self._offset(later) != changes[-1][1]:
                low, high = when, later  # the change is in (low, high]: bisect to the hour
                while high - low > timedelta(hours=1):
                    middle = low + (high - low) / 2
                    middle = middle.replace(minute=0, second=0, microsecond=0)
                    if middle <= low:
                        break
                    if self._offset(middle) == changes[-1][1]:
                        low = middle
                    else:
                        high = middle
                changes.append((high, self._offset(high)))
            when = later
        return changes

    def whole_hours(self) -> bool:
        """Whether every offset is whole hours (usage_hours' UTC hours then fall in one local day each)."""
        return all(offset % 60 == 0 for _, offset in self.changes)

    def sql(self, column: str, hours: bool) -> str:
        """SQL for the local day (``YYYY-MM-DD``) of ``column``: a usage row's ``ts``, or (``hours``) a
        usage_hours row's ``hour`` (``YYYY-MM-DDTHH``); '' when it has none."""
        offsets = {offset for _, offset in self.changes}
        if offsets == {0}:
            return f"coalesce(substr({column}, 1, 10), '')"
        when = f"{column} || ':00'" if hours else column
        cut = 13 if hours else 24
        cases = " ".join(f"WHEN {column} < '{_utc_text(instant)[:cut]}' THEN '{previous:+d} minutes'"
                         for (instant, _), (_, previous) in zip(self.changes[1:], self.changes, strict=False))
        modifier = f"CASE {cases} ELSE '{self.changes[-1][1]:+d} minutes' END" if cases \
            else f"'{self.changes[-1][1]:+d} minutes'"
        return f"coalesce(substr(datetime({when}, {modifier}), 1, 10), '')"

    def of_ts(self, ts: str) -> str:
        """The local day of one usage row's time (the blocks report prices each response by it)."""
        hour = ts[:13]
        day = self._days.get(hour) if self.whole_hours() else None
        if day is None:
            when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
            day = (when.astimezone(self.zone) if self.zone else when.astimezone()).date().isoformat()
            self._days[hour] = day
        return day

    def bounds(self, since: date | None, until: date | None) -> tuple[str | None, str | None]:
        """The UTC times (the usage table's form) of the first moment of ``since`` and the first after ``until``."""
        def start_of(day: date) -> str:
            local = datetime(day.year, day.month, day.day, tzinfo=self.zone)
            if self.zone is None:
                local = datetime(day.year, day.month, day.day).astimezone()  # the system's zone then
            return _utc_text(local)

        return (start_of(since) if since else None), (start_of(until + timedelta(days=1)) if until else None)


# Offsets are followed from here on (earlier usage takes the first one): coding agents kept no history before.
TRANSITIONS_FROM = datetime(2020, 1, 1, tzinfo=UTC)


def _utc_text(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


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
