"""``harvester usage`` as text: one table per report, a total line, the breakdowns under their rows. Cells come
from transcripts (model names, titles): the CLI prints them through terminal.echo, which shows control
characters instead of obeying them."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from harvester.terminal import one_line

TOKEN_COLUMNS = (("Input", "input_tokens"), ("Output", "output_tokens"), ("Cache write", "cache_write_tokens"),
                 ("Cache read", "cache_read_tokens"), ("Reasoning", "reasoning_tokens"), ("Total", "total_tokens"))
FIRST_COLUMN = {"daily": ("Date", "date"), "weekly": ("Week of", "week"), "monthly": ("Month", "month"),
                "session": ("Session", "session")}


def cost_cell(usd: float | None, unpriced: int, responses: int) -> str:
    """A cost as a reader should take it: unknown (and of how many responses) is never shown as zero."""
    if responses == 0:
        return "-"
    if usd is None:
        return f"unknown ({unpriced})"
    money = f"${usd:,.2f}"
    return f"{money} +{unpriced} unpriced" if unpriced else money


def _counts(row: dict[str, Any]) -> list[str]:
    return [f"{row[key]:,}" for _, key in TOKEN_COLUMNS]


def _costs(row: dict[str, Any], recorded: bool) -> list[str]:
    cells = [cost_cell(row["cost_usd"], row["unpriced_responses"], row["responses"])]
    if recorded:  # the agent's own figure beside the catalogue's, for the responses it recorded one for
        cells.append(cost_cell(row["recorded_cost_usd"], 0, row["recorded_responses"]))
        cells.append(cost_cell(row["calculated_cost_usd"], row["calculated_unpriced_responses"], row["responses"]))
    return cells


def _models(models: list[str], limit: int = 60) -> str:
    text = ", ".join(models) or "-"
    return text if len(text) <= limit else text[: limit - 1] + "…"


CELL_CHARS = 120  # a cell's width at most: past it, clipped with "…"


def _clipped(cell: str) -> str:
    return cell if len(cell) <= CELL_CHARS else cell[: CELL_CHARS - 1] + "…"


def report_text(data: dict[str, Any], zone: tzinfo | None = None) -> str:
    if data["report"] == "blocks":
        return blocks_text(data, zone)
    rows = data["rows"]
    title = (f"Token usage and cost, {data['report']} ({data['timezone']} time; cost: {data['cost_mode']}, "
             f"prices: {data['price_catalogue']})")
    if not rows:
        return title + "\n\nNo model responses recorded" + (" in that span." if data["since"] or data["until"] else ".")
    recorded = any(r["recorded_responses"] for r in rows)
    first, key = FIRST_COLUMN[data["report"]]
    headers = [first, *(name for name, _ in TOKEN_COLUMNS), "Cost (USD)"]
    if recorded:
        headers += ["Recorded", "Calculated"]
    headers.append("Models")
    table: list[list[str]] = []
    for row in rows:
        label = row[key] or "(no time)"
        if data["report"] == "session":
            label = f"{row['session']} ({row['harness']}" + (f", +{row['subagents']} subagents" if row["subagents"]
                                                              else "") + ")"
        table.append([label, *_counts(row), *_costs(row, recorded), _models(row["models"])])
        for part in row.get("breakdown", []):
            name = " · ".join(str(part[k]) or "-" for k in ("host", "harness", "model", "repo") if k in part)
            table.append([f"  └ {name}", *_counts(part), *_costs(part, recorded), _models(part["models"])])
    total = data["totals"]
    table.append(["Total", *_counts(total), *_costs(total, recorded), ""])
    return title + "\n\n" + _aligned(headers, table, numeric=set(range(1, len(headers) - 1)))


def blocks_text(data: dict[str, Any], zone: tzinfo | None = None) -> str:
    title = (f"Five-hour billing blocks ({data['timezone']} time; cost: {data['cost_mode']}, "
             f"prices: {data['price_catalogue']})")
    blocks = data["blocks"]
    if not blocks:
        return title + "\n\nNo model responses recorded."
    headers = ["Block start", "Status", *(name for name, _ in TOKEN_COLUMNS), "Cost (USD)", "Models"]
    table = []
    for b in blocks:
        start = _local(b["start"], zone)
        if b["gap"]:
            table.append([start, f"gap until {_local(b['end'], zone)}", *([""] * len(TOKEN_COLUMNS)), "", ""])
            continue
        status = "ACTIVE" if b["active"] else f"ended {_local(b['last_at'], zone)[11:]}"
        table.append([start, status, *_counts(b), cost_cell(b["cost_usd"], b["unpriced_responses"], b["responses"]),
                      _models(b["models"])])
        for part in b.get("breakdown", []):
            name = " · ".join(str(part[k]) or "-" for k in ("host", "harness", "model", "repo") if k in part)
            table.append([f"  └ {name}", "", *_counts(part),
                          cost_cell(part["cost_usd"], part["unpriced_responses"], part["responses"]),
                          _models(part["models"])])
    out = title + "\n\n" + _aligned(headers, table, numeric=set(range(2, 2 + len(TOKEN_COLUMNS) + 1)))
    active = next((b for b in blocks if b["active"]), None)
    if active is not None and active["burn_rate"]:
        burn, projection = active["burn_rate"], active["projection"]
        out += (f"\n\nActive block: {burn['tokens_per_minute']:,.0f} tokens/min "
                f"({burn['input_output_tokens_per_minute']:,.0f} input+output), "
                f"${burn['cost_per_hour_usd']:,.2f}/hour")
        if projection:
            out += (f"; by its end ({projection['remaining_minutes']} min left): "
                    f"{projection['total_tokens']:,} tokens, ${projection['cost_usd']:,.2f}")
    return out


def _local(ts: str, zone: tzinfo | None) -> str:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(zone).strftime("%Y-%m-%d %H:%M")


def _aligned(headers: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    # Measured as shown, one line each and clipped: a model name or a session id cannot print a row of its own,
    # nor pad every row to its width (a transcript's model name can be megabytes long).
    rows = [[_clipped(one_line(cell)) for cell in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])
