"""Expected normalized readings of the fixture trees ("golden" files).

Each fixture tree (a harness's hand-written cases, and each captured real run) is scanned into a
fresh bank; the sessions and events the bank then holds are written to
``fixtures/<harness>/expected/<tree>.json``. The tests compare a fresh reading with those files, so
any change in what a parser produces shows up as a diff to review. After a deliberate parser change:

    python -m tests.golden          # rewrite the expected files, then review `git diff fixtures`
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from harvester.bank import open_bank
from tests.helpers import FIXTURES, scan

# harness -> (environment variable naming the agent's root, parser name)
HARNESS_ROOT_ENV = {"claude_code": ("CLAUDE_CONFIG_DIR", "claude-code"), "codex": ("CODEX_HOME", "codex")}
TEXT_KEPT = 160  # characters of each event's text in the expected file; content_hash covers the rest


def trees() -> list[tuple[str, str, Path]]:
    """(harness folder, tree name, root) for every fixture tree."""
    out = []
    for folder in HARNESS_ROOT_ENV:
        base = FIXTURES / folder
        if (base / "hand").is_dir():
            out.append((folder, "hand", base / "hand"))
        for scenario in sorted(p for p in (base / "real").glob("*") if p.is_dir()):
            out.append((folder, f"real-{scenario.name}", scenario))
    return out


def reading(folder: str, root: Path) -> dict[str, Any]:
    env_name, harness = HARNESS_ROOT_ENV[folder]
    with tempfile.TemporaryDirectory() as tmp:
        home, bank_path = Path(tmp) / "home", Path(tmp) / "bank.sqlite"
        home.mkdir()
        scan(home, bank_path, (harness,), env={"HOME": str(home), env_name: str(root)})
        bank = open_bank(bank_path)
        try:
            sessions = []
            for s in sorted(bank.list_sessions(), key=lambda s: s["native_id"]):
                events = bank.events(s["id"])
                for e in events:
                    e["text"] = e["text"][:TEXT_KEPT]
                    if e["tool_input"] is not None:
                        e["tool_input"] = orjson.dumps(e["tool_input"]).decode()[:TEXT_KEPT]
                sessions.append(
                    {
                        **{
                            k: s[k]
                            for k in (
                                "native_id",
                                "bank_id",
                                "cwd",
                                "title",
                                "title_source",
                                "model",
                                "agent_version",
                                "started_at",
                                "updated_at",
                                "parent_native_id",
                                "parent_kind",
                                "state",
                                "event_count",
                                "redactions",
                                "branch",
                                "commit_sha",
                                "origin_url",
                                "meta",
                            )
                        },
                        "events": events,
                    }
                )
            problems = [
                dict(zip(("path", "line", "kind", "detail"), row, strict=True))
                for row in bank.conn.execute(
                    "SELECT source_path, line, kind, detail FROM problems ORDER BY source_path, line"
                )
            ]
            for p in problems:
                p["path"] = str(Path(p["path"]).relative_to(root))
            sources = sorted(str(Path(c.path).relative_to(root)) for c in bank.cursors())
        finally:
            bank.close()
    return {"sources": sources, "sessions": sessions, "problems": problems}


def expected_path(folder: str, name: str) -> Path:
    return FIXTURES / folder / "expected" / f"{name}.json"


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main() -> None:
    for folder, name, root in trees():
        path = expected_path(folder, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dumps(reading(folder, root)))
        print(f"wrote {path.relative_to(FIXTURES.parent)}", file=sys.stderr)


if __name__ == "__main__":
    sqlite3.enable_callback_tracebacks(True)
    main()
