"""Text (and JSON-ready) renderings of what the CLI prints.

The text renderings hold transcript content (titles, texts, paths, problem details): cells and
bodies pass through :func:`harvester.terminal.visible` before widths are measured or text is
indented, and the CLI prints the result through :func:`harvester.terminal.echo` as well."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.terminal import one_line, visible

if TYPE_CHECKING:  # names for annotations only: importing ingest (and every parser) costs search and sessions
    from harvester.capture.ingest import ScanReport, SourceResult
    from harvester.capture.sources import Found
    from harvester.parsers.base import Harness

# What a state of "unknown" means (harvester/capture/liveness.py): said where a session's state is shown.
UNKNOWN_STATE = "no capture service watched it: `harvester run` judges whether it is live, ended or abandoned"


class ScanProgress:
    """One line on stderr that follows a scan (only on a terminal): the agent whose source was read last, the
    sources done of all those found so far, the bytes read and the sessions that got new events. A scan finds
    every agent's sources before it reads any (harvester.capture.ingest), so the count is the scan's, not one
    agent's. The line is cut short of the terminal's last column: a line that wraps is not cleared whole, and
    its first part would stay on the screen. Cleared at the end; the summary says the rest."""

    EVERY = 0.1  # seconds between redraws: a scan of thousands of small files must not spend its time drawing

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.harness = ""
        self.total = self.done = self.bytes = 0
        self.sessions: set[str] = set()
        self._drawn = 0.0
        self._shown = False

    def start(self, harness: Harness, found: list[Found]) -> None:
        self.total += len(found)
        if found and not self.done:  # still finding: the agent being looked at
            self.harness = harness.name
            self._draw()

    def advance(self, harness: Harness, found: Found, result: SourceResult) -> None:
        self.harness = harness.name
        self.done += 1
        self.sessions.update(n for n, added in result.sessions.items() if added)
        if result.outcome in ("new", "read", "restarted"):
            with contextlib.suppress(OSError):  # gone since: the summary counts what was read
                self.bytes += found.path.stat().st_size
        self._draw(force=self.done == self.total)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn < self.EVERY:
            return
        self._drawn = now
        line = visible(f"scanning {self.harness}: {self.done}/{self.total} sources, {human_bytes(self.bytes)}, "
                       f"{len(self.sessions)} {plural(len(self.sessions), 'session')} with new events")
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):  # not a terminal after all: nothing to wrap
            columns = 0
        if columns and len(line) >= columns:
            line = line[: max(columns - 2, 0)] + "…"
        self.stream.write("\r\x1b[2K" + line)  # back to the line's start, clear it, draw
        self.stream.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False


class ProgressLine:
    """One line on stderr, redrawn in place at most every 0.1 s (only on a terminal), cleared at the end."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.on = self.stream.isatty()
        self._drawn = 0.0
        self._shown = False

    def show(self, line: str, force: bool = False) -> None:
        now = time.monotonic()
        if not self.on or (not force and now - self._drawn < ScanProgress.EVERY):
            return
        self._drawn = now
        self.stream.write("\r\x1b[2K" + visible(line))
        self.stream.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def scan_report_dict(report: ScanReport, bank_path: Path) -> dict[str, Any]:
    return {
        "bank": str(bank_path),
        "seconds": round(report.seconds, 3),
        "bytes_read": report.bytes_read,
        "events_added": report.events_added,
        "harnesses": [
            {"name": h.harness, "roots": h.roots, "sources": h.sources, "sources_read": h.sources_read,
             "sessions": len(h.sessions), "events_added": h.events_added, "problems": h.problems,
             "unreadable": h.unreadable, "failed": h.failed}
            for h in report.harnesses.values()
        ],
    }


def scan_report_text(report: ScanReport, bank_path: Path) -> str:
    """A few lines: what was new, per agent that had any; what could not be read, and where to look."""
    new = [h for h in report.harnesses.values() if h.events_added]
    checked = sum(h.sources for h in report.harnesses.values())
    problems = sum(h.problems for h in report.harnesses.values())
    failed = sum(h.failed for h in report.harnesses.values())
    took = f"{human_bytes(report.bytes_read)} read in {report.seconds:.1f} s"
    if not new and not problems:
        stores = sum(1 for h in report.harnesses.values() if h.roots)
        if not stores:  # a machine without any agent at its default place, or a store kept somewhere else
            looked = (f"{next(iter(report.harnesses))} has no store" if len(report.harnesses) == 1 else
                      f"none of the {len(report.harnesses)} agents harvester reads has a store")
            return (f"No agent's history found: {looked} at its default place here (docs/agents.md says where each "
                    f"keeps it; [roots] in the config adds other places). Bank: {bank_path}.")
        return (f"Nothing new: {checked} {plural(checked, 'source')} of {stores} {plural(stores, 'agent')} "
                f"checked in {report.seconds:.1f} s (bank: {bank_path}).")
    sessions = sum(len(h.sessions_changed) for h in new)
    lines = [f"+{report.events_added:,} events in {sessions:,} {plural(sessions, 'session')} ({took}):"]
    for h in sorted(new, key=lambda h: -h.events_added):
        lines.append(f"  {h.harness:<16} +{h.events_added:,} events in {len(h.sessions_changed):,} "
                     f"{plural(len(h.sessions_changed), 'session')}")
    if problems:
        what = f"{problems:,} {plural(problems, 'record')} could not be read"
        if failed:
            what += f", {failed} {plural(failed, 'source')} failed"
        lines.append(f"{what}: `harvester status` says which and why.")
    lines.append(f"Bank: {bank_path}")
    return "\n".join(lines)


def plural(n: int, word: str) -> str:
    return word if n == 1 else word + ("es" if word.endswith(("ch", "sh", "s", "x")) else "s")


def _label(role: str, kind: str) -> str:
    """What an event is, in a reader's words: "user", "assistant thinking", "tool call", "tool result". On one
    line: a teammate's row can hold any role or kind."""
    role, kind = one_line(role), one_line(kind)
    if kind == "text":
        return role
    if kind in ("tool_call", "tool_result"):
        return kind.replace("_", " ")
    return f"{role} {kind}"


def _visible_cells(rows: list[list[str]]) -> list[list[str]]:
    """Every cell as it will be shown (:func:`one_line`: a cell's line break, a version's or an id's from a
    transcript, cannot print a row of its own), to be measured so. One look at all of them first: a clean
    table, the usual one, costs one search, not one a cell."""
    every = "\t".join("\t".join(row) for row in rows)
    return rows if one_line(every) == every else [[one_line(cell) for cell in row] for row in rows]


def _table(headers: list[str], rows: list[list[str]]) -> str:
    return _aligned(headers, _visible_cells(rows))


def _aligned(headers: list[str], rows: list[list[str]], first_at_most: int | None = None) -> str:
    """Cells already made visible, in columns; ``first_at_most``: the first column that wide at most (a longer
    cell runs past it, whole)."""
    columns = zip(*rows, strict=True) if rows else ((),) * len(headers)
    widths = [max([len(h), *map(len, column)]) for h, column in zip(headers, columns, strict=True)]
    if first_at_most is not None:
        widths[0] = min(widths[0], first_at_most)
    # One format for every row: each cell padded as str.ljust pads it (a listing has thousands of rows).
    line = "  ".join(f"{{:<{width}}}" for width in widths).format
    return "\n".join([line(*headers).rstrip(), *(line(*row).rstrip() for row in rows)])


def _when(ts: str | None) -> str:
    """A stored UTC timestamp in the reader's local time (JSON output keeps UTC ISO 8601)."""
    if not ts:
        return "-"
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return one_line(ts.replace("T", " ")[:19])  # a teammate's row or a damaged bank: never a line break
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().isoformat(" ", "seconds")[:19]  # as strftime("%Y-%m-%d %H:%M:%S"), at a third of it


def _short(text: str | None, width: int) -> str:
    """One line of at most ``width`` characters, counted as they are shown."""
    text = " ".join(visible(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _seconds_since(ts: str | None) -> float:
    try:
        return (datetime.now(UTC) - datetime.fromisoformat((ts or "").replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return 0.0


def _ago(ts: str | None) -> str:
    if not ts:
        return "never"
    try:
        seconds = (datetime.now(UTC) - datetime.fromisoformat(ts.replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return ts
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


UNKNOWN_MARK = " (unknown repository)"
AGENT_PREFIX = "coding-agent::"  # the common start of bank ids (the default template): the first thing cut


ID_COLUMN_AT_MOST = 100  # the id column's width when no terminal says one (a subagent's id is under 80)
ROOM_BESIDE_AN_ID = 28  # what the rest of a row takes at its narrowest: its time, events, a title's start, the gaps


def sessions_text(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """The sessions as a table, each subagent under the session that started it (``└``); ``width`` (a
    terminal's columns): what each cost gives way first, then titles, then bank ids (their common
    ``coding-agent::``, then their end), the year of the time, the bank column, the harness column: never a
    session's id, which is what a reader copies (``--json`` has every whole value)."""
    from harvester.recall.tools import grouped

    if not rows:
        return "No sessions."
    ordered = grouped(rows)
    # A listing's rows carry their time in local time already (SqliteRecall.scoped_sessions, listed=True).
    # A session whose repository is unknown (harvester/gitident.py) is no repository's: said beside its bank id.
    # A title on one line, its line breaks spaces (split after visible: \x1c-\x1e are spaces to split).
    table = _visible_cells([[("  " * (depth - 1) + "└ " if depth else "") + r["native_id"], r["harness"],
                             r["bank_id"] + UNKNOWN_MARK * ("repo_key" in r and not r["repo_key"]),
                             r.get("updated_local") or _when(r["updated_at"] or r["started_at"])[:16],
                             str(r["event_count"]), " ".join(visible(r["title"] or "").split())]
                            for r, depth in ordered])
    headers = ["SESSION", "HARNESS", "BANK", "UPDATED", "EVENTS", "TITLE"]
    if "usage" in rows[0]:  # what each cost (harvester/usage/sessions.py): after the events
        from harvester.usage.sessions import short

        headers[5:5] = ["TOKENS", "COST"]
        for row, (r, _) in zip(table, ordered, strict=True):
            row[5:5] = list(short(r.get("usage")))
    if "host" in rows[0]:  # the team bank's (harvester/team/read.py): whose machine each came from, last
        headers.append("HOST")
        for row, r in zip(table, _visible_cells([[r["host"] or ""] for r, _ in ordered]), strict=True):
            row.append(r[0])
    if not width:  # piped: an id past ID_COLUMN_AT_MOST runs past the column on its own row, as below
        return _aligned(headers, table, first_at_most=ID_COLUMN_AT_MOST)
    # An id too long to share a line with the rest at its narrowest (a subagent's: its parent's id and more) is not
    # cut: it runs past the id column on its own row, and does not widen the column for every row (at 80 columns
    # one 79-character subagent id made every row of a listing 81 wide).
    ids = [row[0] for row in table]
    for row in table:
        row[0] = row[0] if len(row[0]) <= width - ROOM_BESIDE_AN_ID else ""
    headers, table = _fitted(headers, table, width)
    column = max(len(headers[0]), *(len(row[0]) for row in table))
    for row, whole in zip(table, ids, strict=True):
        row[0] = whole
    return _aligned(headers, table, first_at_most=column)


def _fitted(headers: list[str], table: list[list[str]], width: int) -> tuple[list[str], list[list[str]]]:
    """The table made to fit ``width`` columns, giving way in the order sessions_text says."""
    def widths() -> list[int]:
        return [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]

    def over() -> int:
        return sum(widths()) + 2 * (len(headers) - 1) - width

    def cut(name: str, floor: int) -> None:
        if name in headers and over() > 0:
            i = headers.index(name)
            room = max(floor, widths()[i] - over())
            for row in table:
                row[i] = _short(row[i], room)

    def drop(name: str) -> None:
        if name in headers and over() > 0:
            i = headers.index(name)
            del headers[i]
            for row in table:
                del row[i]

    drop("COST")  # what a session cost gives way before anything the listing showed without it
    drop("TOKENS")
    cut("TITLE", 10)
    if over() > 0 and "BANK" in headers:
        i = headers.index("BANK")
        for row in table:
            row[i] = row[i].removeprefix(AGENT_PREFIX)
    cut("BANK", 8)
    if over() > 0:
        i = headers.index("UPDATED")
        for row in table:
            row[i] = row[i][5:] if row[i][4:5] == "-" else row[i]  # 2026-11-01 10:00 -> 11-01 10:00
    cut("HOST", 8)
    cut("TITLE", 5)
    drop("BANK")
    drop("HARNESS")
    cut("TITLE", 1)
    return headers, table


def search_text(hits: list[dict[str, Any]], total: int, query: str, where: str, limit: int,
                more: bool = False, ranked: bool = True) -> str:
    """``more``: more than ``total`` events match; not ``ranked``: too many to rank, the hits are those stored
    last (harvester.bank.sqlite_recall.RANKED_AT_MOST)."""
    if not hits:
        return f"No matches for {query!r} in {where}."
    head = f"{'More than ' if more else ''}{total:,} {plural(total, 'match')} for {query!r} in {where}"
    if not ranked:
        head += (f", too many to rank; the {len(hits)} stored last (more words, --harness or --repo narrow it "
                 "to matches ranked best first):")
    else:
        head += f"; the best {len(hits)} (--limit for more):" if total > len(hits) else ":"
    lines = [head]
    for h in hits:  # the session's whole id: what `show` takes; a subagent's names the session that started it
        parent = (f" ({one_line(h['parent_kind'])} of {one_line(h['parent_native_id'])})"
                  if h.get("parent_native_id") else "")
        tool = (f" [{one_line(h['tool_name'])}]" if h.get("tool_name") and h["kind"] in ("tool_call", "tool_result")
                else "")
        lines.append(f"{one_line(h['harness'])} {one_line(h['session'])}{parent} #{h['seq']} "
                     f"{_label(h['role'], h['kind'])}{tool} ({one_line(h['bank_id'])}): {_short(h['snippet'], 100)}")
    return "\n".join(lines)
