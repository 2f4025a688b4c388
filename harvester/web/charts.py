"""Charts as plain geometry for a server-rendered SVG (the template draws it, escaping every label): no script, no
chart library, nothing fetched. A chart is bars stacked by series, one column a day."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 900, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 40
SERIES_SHOWN = 8  # colours in the stylesheet (.c0 to .c7); the rest are drawn as "other"


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: int
    title: str  # what hovering it says (an SVG <title>)


@dataclass
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    bars: list[Bar] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)  # (y, label)
    x_labels: list[tuple[float, str]] = field(default_factory=list)  # (x, label)
    legend: list[tuple[int, str]] = field(default_factory=list)  # (colour, series)
    empty: bool = True


def _nice(top: float) -> float:
    """A round number at or above ``top`` for the axis (1, 2, 2.5 or 5 times a power of ten)."""
    if top <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(top))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= top)


def stacked(days: list[str], values: dict[tuple[str, str], float], unit: str = "$") -> Chart:
    """Bars of ``values[(day, series)]`` stacked by series, a column for each of ``days`` (in order). The series
    with the largest totals get their own colours; the others are summed as "other"."""
    totals: dict[str, float] = {}
    for (_, series), v in values.items():
        totals[series] = totals.get(series, 0.0) + v
    ranked = sorted(totals, key=lambda s: (-totals[s], s))
    own = ranked[:SERIES_SHOWN - 1] if len(ranked) > SERIES_SHOWN else ranked
    colour = {s: n for n, s in enumerate(own)}
    other = len(own) if len(ranked) > len(own) else None
    chart = Chart(legend=[(colour[s], s) for s in own] + ([(other, "other")] if other is not None else []))
    if not days:
        return chart
    per_day = {d: 0.0 for d in days}
    for (day, _), v in values.items():
        if day in per_day:
            per_day[day] += v
    top = _nice(max(per_day.values()))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / len(days)
    width = max(step * 0.8, 1.0)
    for n, day in enumerate(days):
        x = LEFT + n * step + (step - width) / 2
        base = TOP + plot_h
        stack: dict[int, tuple[float, list[str]]] = {}
        for series in ranked:
            v = values.get((day, series), 0.0)
            if v <= 0:
                continue
            c = colour.get(series, other if other is not None else 0)
            total, names = stack.get(c, (0.0, []))
            stack[c] = (total + v, [*names, f"{series} {unit}{v:,.2f}"])
        for c in sorted(stack):
            v, names = stack[c]
            h = v / top * plot_h
            base -= h
            chart.bars.append(Bar(round(x, 1), round(base, 1), round(width, 1), round(h, 1), c,
                                  f"{day}: " + ", ".join(names)))
    chart.y_ticks = [(round(TOP + plot_h - f * plot_h, 1), f"{unit}{top * f:,.2f}") for f in (0, 0.25, 0.5, 0.75, 1)]
    every = max(1, math.ceil(len(days) / 10))
    chart.x_labels = [(round(LEFT + n * step + step / 2, 1), day[5:]) for n, day in enumerate(days) if n % every == 0]
    chart.empty = not chart.bars
    return chart
