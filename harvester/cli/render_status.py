"""``harvester status`` as text: the agents found and what was imported of each, the service, the archive, the
repositories, the sinks and the team bank, fitted to the terminal's width (JSON is the gathered data as it is:
harvester/status/). Cells pass through :func:`harvester.terminal.visible` before widths are measured, as in
:mod:`harvester.cli.render`."""

from __future__ import annotations

import textwrap
from typing import Any

from harvester.bank import NO_HISTORY
from harvester.cli.render import (
    _ago,
    _aligned,
    _seconds_since,
    _short,
    _visible_cells,
    _when,
    human_bytes,
    plural,
)
from harvester.terminal import visible


def service_text(service: dict[str, Any]) -> list[str]:
    unit = service.get("unit") or {}
    unit_text = (f"unit {unit.get('unit_path')}: {unit.get('state')}" if unit.get("installed")
                 else f"no unit installed ({unit.get('platform', '?')})")
    if service["running"] and not service.get("responding", True):
        lines = [f"Service: NOT RESPONDING: pid {service['pid']} runs, but its last heartbeat was "
                 f"{_ago(service['heartbeat_at'])}; {unit_text}",
                 "  it may be stuck: its log (journalctl --user -u harvester) says where; restarting it is safe"]
    elif service["running"]:
        lines = [f"Service: running, pid {service['pid']}, up since {_when(service['started_at'])}, "
                 f"heartbeat {_ago(service['heartbeat_at'])}; {unit_text}"]
        lines.append("  watching: " + (", ".join(service["watched"]) or "no agent store yet"))
        busy = service.get("busy")
        if busy and _seconds_since(busy.get("since")) > 60:  # a long read is normal; a stuck one shows here
            lines.append(f"  busy with {busy.get('with')} since {_when(busy.get('since'))}")
        lines.append(f"  live sessions: {service['live_sessions']}; last import {_ago(service['last_activity'])}")
    else:
        lines = [f"Service: not running; {unit_text}",
                 "  `harvester install` starts it at login; `harvester run` runs it in the foreground"]
    again = service.get("bank_made_again")
    if again:
        times = f" ({again.get('times')} times so far)" if (again.get("times") or 0) > 1 else ""
        lines.append(f"  the bank was {again.get('why', 'deleted')} at {_when(again.get('at'))} while the service ran "
                     f"(pid {again.get('pid', '?')}): made again, and re-scanned from the agents' stores (what they "
                     f"no longer hold is not in it){times}")
    return lines


def archive_text(archive: dict[str, Any], harnesses: list[dict[str, Any]]) -> list[str]:
    """The raw archive's lines in ``status``: where, how big, what it keeps that the agents no longer have,
    and what a reparse would change."""
    gone = sum(h.get("sessions_originals_gone", 0) for h in harnesses)
    older = {h["name"]: h["sessions_older_parser"] for h in harnesses if h.get("sessions_older_parser")}
    if archive["on"]:
        retention = [f"at most {archive['max_age_days']:g} days" if archive.get("max_age_days") else "",
                     f"at most {human_bytes(archive['max_size_bytes'])}" if archive.get("max_size_bytes") else ""]
        kept = " and ".join(r for r in retention if r) or "everything, for ever"
        lines = [f"Archive: {archive['path']} ({human_bytes(archive['size_bytes'])} of {archive['sources']} "
                 f"{plural(archive['sources'], 'source')}, raw: NOT redacted; keeps {kept})"]
    elif archive.get("exists"):
        lines = [f"Archive: off (archive = false); {archive['path']} still holds {human_bytes(archive['size_bytes'])}"]
    else:
        lines = ["Archive: off (archive = false): only the bank's redacted, clipped copy is kept"]
    if gone:
        where = "the archive keeps their files' bytes" if archive.get("sources") else "only the bank has them"
        lines.append(f"  {gone} {plural(gone, 'session')} whose agent files are gone: {where}")
    if older:
        n = sum(older.values())
        lines.append(f"  {n} {plural(n, 'session')} were parsed by an older parser "
                     f"({', '.join(f'{k} {v}' for k, v in older.items())}); run `harvester reparse`")
    for gap in archive.get("gaps", [])[:3]:
        n = gap["sources"]
        lines.append(f"  {n} {plural(n, 'source')} only partly archived ({visible(_short(gap['reason'], 90))}): "
                     "reparse reads them from their files")
    damaged = archive.get("damaged", [])
    for source in damaged[:3]:
        n = len(source["parts"])
        first = source["parts"][0]
        more = f" and {n - 1} more" if n > 1 else ""
        lines.append(f"  DAMAGED: {n} archived {plural(n, 'part')} of {visible(source['path'])}: "
                     f"{visible(first['part'])} ({visible(_short(first['detail'], 60))}){more}; reparse leaves its "
                     "sessions as the bank has them, and mends it from the agent's file while that holds what was "
                     "archived")
    if len(damaged) > 3:
        lines.append(f"  DAMAGED: {len(damaged) - 3} more {plural(len(damaged) - 3, 'source')} (status --json lists them)")
    for source, epoch, frames in archive.get("missing", [])[:3]:
        lines.append(f"  MISSING: {frames} archived {plural(frames, 'chunk')} of source {source} (epoch {epoch}) "
                     "are not on disk (lost after a crash, or deleted)")
    return lines


def repositories_text(repositories: dict[str, Any]) -> list[str]:
    """Sessions of unknown repository, and bank ids that unrelated repositories share (status.repositories_status)."""
    lines = []
    n = repositories.get("unknown_sessions") or 0
    if n:
        lines.append(f"{n} {plural(n, 'session')} of unknown repository: recorded in a folder that is not on this "
                     "machine (another machine's, a deleted clone) with no remote recorded; no repository's --here, "
                     "context, MCP or export includes them (`sessions` lists them, --bank-id ID reads them)")
    for shared in repositories.get("shared_bank_ids") or []:
        listed = ", ".join(f"{r['key']} ({r['sessions']} {plural(r['sessions'], 'session')})"
                           for r in shared["repositories"])
        labels = ", ".join(r["label"] for r in shared["repositories"])
        lines.append(f"WARNING: {shared['bank_id']} is the bank id of {len(shared['repositories'])} different "
                     f"repositories: {listed}. Reads keep them apart; Hindsight gets them as {labels}")
    return ["", *(visible(line) for line in lines)] if lines else []


# The agents' table, column by column as it gives way to a narrow terminal: the first named goes first. The
# PARSE column says "check" when any of MALFORMED, DRIFT or FAILED is not 0, and the lines below the table say why.
VERSION_CHARS = 24  # an agent version is the transcript's: clipped, or one would widen every row
STATUS_COLUMNS_DROPPED = ("ROOTS", "DRIFT", "FAILED", "MALFORMED", "SOURCES", "VERSION", "EVENTS")


def drift_text(data: dict[str, Any]) -> str:
    """``status --drift``: per agent, each record type and field that no reader knows, how many records showed it
    in how many sources, and where the latest was (a path and line to open)."""
    lines = ["Drift: record types and fields that no reader knows (a new agent release writes them; "
             "the rest of each record is read)"]
    for h in data["harnesses"]:
        if not h.get("drift_report"):
            continue
        lines.append(f"{h['name']} ({h['label']})" if h.get("label") and h["label"] != h["name"] else h["name"])
        for d in h["drift_report"]:
            where = d["example"]
            lines.append(f"  {d['kind']} {visible(d['detail'])}: {d['count']} {plural(d['count'], 'record')} in "
                         f"{d['sources']} {plural(d['sources'], 'source')}, latest {visible(where['path'])}:"
                         f"{where['line']}")
    if len(lines) == 1:
        lines.append("no record type or field that no reader knows")
    return "\n".join(lines)


def _found(h: dict[str, Any]) -> bool:
    return bool(h.get("found", h["roots"] or h["sessions"] or h["sources"]))


def status_text(data: dict[str, Any], width: int | None = None, every: bool = False) -> str:
    """``width`` (a terminal's columns): no line wider; ``every``: a row for every agent, not only those found."""
    return "\n".join(fitted(_status_lines(data, width, every), width))


def fitted(lines: list[str], width: int | None) -> list[str]:
    """Each line longer than ``width`` wrapped at words (a path at any character), its rest indented."""
    if not width:
        return lines
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * min(len(line) - len(line.lstrip(" ")) + 2, width // 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [line[:width]]
    return out


def _with_path(before: str, path: str, after: str, width: int | None) -> str:
    """``before``, the path, ``after`` on one line, the path's start cut ("…/end") so that the line fits
    ``width``: the file's name and the reason stay on the line, whole."""
    path = visible(str(path))
    over = len(before) + len(path) + len(after) - (width or 10**9)
    if over > 0 and len(path) - over - 1 >= 12:
        path = "…" + path[over + 1:]
    return before + path + after


def _dropping(headers: list[str], rows: list[list[str]], width: int | None, order: tuple[str, ...]) -> str:
    """The table, without the columns named in ``order`` (first first) that it cannot hold in ``width``."""
    rows = _visible_cells(rows)
    for column in (None, *order):
        if column is not None:
            at = headers.index(column)
            headers = headers[:at] + headers[at + 1:]
            rows = [row[:at] + row[at + 1:] for row in rows]
        table = _aligned(headers, rows)
        if not width or max(map(len, table.splitlines())) <= width:
            break
    return table


def _status_lines(data: dict[str, Any], width: int | None, every: bool) -> list[str]:
    bank = data["bank"]
    if bank.get("exists", True):
        parts = [f"Bank: {bank['path']} ({human_bytes(bank['size_bytes'])})"]
    else:
        parts = [NO_HISTORY.format(bank["path"])]
    if data.get("archive"):
        parts += archive_text(data["archive"], data["harnesses"])
    if data.get("service"):
        parts += service_text(data["service"])
    if data.get("sinks"):
        from harvester.sinks.report import describe

        for stats in data["sinks"].values():
            parts += describe(stats)
    if data.get("team"):
        from harvester.team.report import describe as describe_team

        parts += describe_team(data["team"])
    parts.append("")
    rows = []
    shown = [h for h in data["harnesses"] if every or _found(h)]
    for h in shown:
        skipped = h["malformed"] + h["oversize"] + h["unreadable"]
        rows.append([
            h["name"], _short(h.get("version") or "-", VERSION_CHARS), str(len(h["roots"])), str(h["sources"]), str(h["sessions"]),
            str(h["events"]),
            _when(h["last_import"]), str(skipped), str(h["unknown_types"]), str(h["sources_failed"]),
            "check" if skipped or h["unknown_types"] or h["sources_failed"]
            else "not readable" if h.get("not_readable") and not h["sessions"] else "ok",
        ])
    rest = [h["name"] for h in data["harnesses"] if h not in shown]
    if not shown:  # not a header with no row under it
        parts.append(f"No agent found here: none of the {len(rest)} agents harvester reads keeps a store at its "
                     "default place (`harvester status --all` lists every one)")
    else:
        parts += _dropping(["HARNESS", "VERSION", "ROOTS", "SOURCES", "SESSIONS", "EVENTS", "LAST IMPORT", "MALFORMED",
                            "DRIFT", "FAILED", "PARSE"], rows, width, STATUS_COLUMNS_DROPPED).splitlines()
    if rest and shown:
        parts.append(f"{len(rest)} other {plural(len(rest), 'agent')} not found here "
                     "(`harvester status --all` lists every one)")
    for h in shown:
        notes = []
        if h["drift"]:
            notes.append("unknown record types: " + ", ".join(f"{k} ({v})" for k, v in h["drift"].items()))
        if h.get("unknown_fields"):
            notes.append(f"{h['unknown_fields']} {plural(h['unknown_fields'], 'record')} with fields no reader knows "
                         "(`harvester status --drift` lists them)")
        for key, noun, said in (("sources_missing", "source", "gone"), ("sources_unreadable", "source", "unreadable"),
                                ("sources_failed", "source", "failed (read again at the next reconcile)"),
                                ("git_errors", "session", "whose git probe failed")):
            if h.get(key):
                notes.append(f"{h[key]} {plural(h[key], noun)} {said}")
        for store in h.get("not_readable", []):
            n = store["files"]
            notes.append(f"present, not readable: {n:,}{'+' if store.get('capped') else ''} {plural(n, 'file')} "
                         f"in {store['path']} ({store['reason']})")
        if h.get("unlisted_directories"):
            n = len(h["unlisted_directories"])
            notes.append(f"{n} {plural(n, 'directory') if n == 1 else 'directories'} cannot be listed")
        if notes:
            parts.append(f"  {h['name']}: " + "; ".join(notes))
        for f in h.get("failures", [])[:3]:
            parts.append(_with_path("    failed: ", f["path"], f":{f['line'] or 0}: {_short(f['reason'], 100)}", width))
        for d in h.get("unlisted_directories", [])[:3]:
            parts.append(_with_path("    cannot list: ", d["path"], f": {_short(d['reason'], 60)}", width))
    parts += repositories_text(data.get("repositories") or {})
    if data.get("retention"):
        parts += ["", "History the agents delete on their own:"]
        parts += [f"  {visible(w['text'])}" for w in data["retention"]]
    if data.get("git", {}).get("found") is False:
        parts += ["", "git: not found on PATH. harvester reads each repository's .git directory itself to tell which "
                      "repository a session belongs to; only a repository without a remote is then known by its "
                      "folder, not by its first commit (which git reads)."]
    mcp = data.get("mcp")
    if mcp and (mcp["registered"] or mcp["not_registered"]):
        parts.append("")
        parts.append("MCP server (harvester mcp) registered in: " + (", ".join(mcp["registered"]) or "no agent")
                     + ("; not in: " + ", ".join(mcp["not_registered"]) + " (`harvester connect` adds it)"
                        if mcp["not_registered"] else ""))
    parts += ["", "Recent imports:"]
    if data["recent_imports"]:
        imports = [[_when(i["at"]), i["harness"], i["bank_id"], i["title"] or "", str(i["events_added"])]
                   for i in data["recent_imports"]]
        parts += _shrinking(["TIME", "HARNESS", "BANK", "TITLE", "+EVENTS"], imports, width,
                            ((3, 50, 10), (2, 40, 16))).splitlines()
    else:
        parts.append("  nothing imported yet: run `harvester scan`")
    if data.get("recent_problems"):
        parts += ["", "Recent problems:"]
        for p in data["recent_problems"]:
            parts.append(_with_path(f"  {p['harness']} ", p["source_path"],
                                    f":{p['line']} {p['kind']}: {_short(p['detail'], 80)}", width))
    return parts


def _shrinking(headers: list[str], rows: list[list[str]], width: int | None,
               give: tuple[tuple[int, int, int], ...]) -> str:
    """The table with the columns in ``give`` (index, widest, narrowest), first first, cut with "…" so that it
    fits ``width``."""
    rows = _visible_cells(rows)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    for column, widest, _ in give:
        widths[column] = min(widths[column], max(widest, len(headers[column])))
    for column, _, narrowest in give:
        over = sum(widths) + 2 * (len(widths) - 1) - (width or 10**9)
        if over > 0:
            widths[column] = max(narrowest, widths[column] - over)
    cut = {column for column, _, _ in give}
    return _aligned(headers, [[_short(cell, widths[i]) if i in cut else cell for i, cell in enumerate(row)]
                              for row in rows])
