"""Measure the record mix and record sizes of agent history: the captured real runs, or a generated tree.

    python bench/shapes.py                      # the captures under fixtures/*/real/
    python bench/shapes.py bench/out/tree-7-200  # a tree bench/gen_tree.py wrote (a HOME-like folder)

For each agent it prints, per record kind, the share of records, the median and largest size in bytes,
then the median and 90th percentile of all records. A record is a line of a JSONL file (Claude Code,
Codex) or a row of ``message``/``part`` (opencode, its ``data`` JSON). The kind is the field a reader
dispatches on: Claude Code ``type`` plus content-block types, ``attachment.type`` or ``system.subtype``;
Codex ``type`` plus ``payload.type`` (message role, ``item_completed`` item type); opencode the message
role or the part type. ``bench/gen_tree.py`` takes its record mix and envelope sizes from what this
prints for the captures (its docstring and ``bench/README.md`` say where it widened them).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def claude_kind(record: dict[str, Any]) -> str:
    kind = str(record.get("type"))
    if kind == "attachment":
        return f"attachment/{(record.get('attachment') or {}).get('type')}"
    if kind == "system":
        return f"system/{record.get('subtype')}"
    if kind in ("user", "assistant"):
        content = (record.get("message") or {}).get("content")
        if isinstance(content, str):
            return f"{kind}/string"
        blocks = sorted({str(b.get("type")) for b in content or [] if isinstance(b, dict)})
        return f"{kind}/{'+'.join(blocks)}"
    return kind


def codex_kind(record: dict[str, Any]) -> str:
    kind = str(record.get("type"))
    payload = record.get("payload") or {}
    if kind == "response_item":
        sub = payload.get("type")
        return f"response_item/{sub}/{payload.get('role')}" if sub == "message" else f"response_item/{sub}"
    if kind == "event_msg":
        sub = payload.get("type")
        if sub == "item_completed":
            return f"event_msg/item_completed/{(payload.get('item') or {}).get('type')}"
        return f"event_msg/{sub}"
    return kind


def jsonl_records(files: Iterable[Path], kind_of: Any) -> Iterator[tuple[str, int]]:
    for path in files:
        for line in path.read_bytes().splitlines():
            if line.strip():
                yield kind_of(orjson.loads(line)), len(line) + 1


def opencode_records(dbs: Iterable[Path]) -> Iterator[tuple[str, int]]:
    for db in dbs:
        conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
        try:
            for (data,) in conn.execute("SELECT data FROM message"):
                yield f"message/{orjson.loads(data).get('role')}", len(data)
            for (data,) in conn.execute("SELECT data FROM part"):
                yield f"part/{orjson.loads(data).get('type')}", len(data)
            for (data,) in conn.execute("SELECT coalesce(title, '') || directory FROM session"):
                yield "session", len(data) + 200  # the other columns: ids, times, model, permission JSON
        finally:
            conn.close()


def agent_records(home: Path | None) -> dict[str, list[tuple[str, int]]]:
    """Every record of the three agents: under ``fixtures/<agent>/real/`` or under a HOME-like tree."""
    if home is None:
        claude = sorted((FIXTURES / "claude_code" / "real").rglob("*.jsonl"))
        codex = sorted((FIXTURES / "codex" / "real").rglob("*.jsonl"))
        opencode = sorted((FIXTURES / "opencode" / "real").rglob("opencode.db"))
    else:
        claude = sorted((home / ".claude" / "projects").rglob("*.jsonl"))
        codex = sorted((home / ".codex").rglob("rollout-*.jsonl"))
        opencode = sorted((home / ".local" / "share" / "opencode").glob("opencode*.db"))
    return {"claude-code": list(jsonl_records(claude, claude_kind)),
            "codex": list(jsonl_records(codex, codex_kind)),
            "opencode": list(opencode_records(opencode))}


def quantile(sizes: list[int], q: float) -> int:
    ordered = sorted(sizes)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(records: dict[str, list[tuple[str, int]]], out: Any = sys.stdout) -> None:
    for agent, rows in records.items():
        if not rows:
            print(f"{agent}: no records", file=out)
            continue
        by_kind: dict[str, list[int]] = defaultdict(list)
        for kind, size in rows:
            by_kind[kind].append(size)
        sizes = [size for _, size in rows]
        print(f"\n{agent}: {len(rows):,} records, {sum(sizes) / 1e6:.2f} MB; record median "
              f"{statistics.median(sizes):,.0f} B, p90 {quantile(sizes, 0.9):,} B, max {max(sizes):,} B", file=out)
        print(f"  {'kind':<52} {'share':>6} {'median B':>9} {'max B':>9}", file=out)
        for kind, group in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
            print(f"  {kind:<52} {len(group) / len(rows):6.1%} {statistics.median(group):9,.0f} {max(group):9,}",
                  file=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("home", type=Path, nargs="?", help="a generated tree (default: the captures)")
    args = parser.parse_args()
    report(agent_records(args.home))


if __name__ == "__main__":
    main()
