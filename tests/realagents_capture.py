"""``python -m tests.realagents_capture [--scenario S] [--work DIR] agent ...``: real stores into fixtures/.

For each agent and scenario, runs the real CLI offline (as :mod:`tests.realagents_check` does) in
``/tmp/cap-<agent>-<scenario>-XXXXXXXX`` and copies its genuine store into
``fixtures/<harness>/real/<scenario>/``, laid out like the agent's root (``~/.qwen``, ``~/.gemini``,
``~/.local/share/opencode``, ...; Aider's files under ``repo/``). What changes on the way:

- JSON strings longer than 4 KB (system prompts) are shortened in the middle to ``…[trimmed N chars]…``;
  a line or file is only rewritten when re-serializing its untrimmed form gives back the original bytes.
- SQLite databases are copied with their ``-wal``/``-shm`` after the agent exited, checkpointed into one
  file on the copy, long strings trimmed likewise, and dumped (schema and rows) to ``dump.json``.

The whole temporary run (HOME, repo, request log, stdout) is kept under ``--work`` for inspection and the
facts of each run are written to ``<work>/summary.json``; :mod:`tests.realagents_tables` counts record
types for CAPTURE.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests import realagents
from tests.fakellm.server import FakeLLM

FIXTURES = realagents.REPO_ROOT / "fixtures"
# Agents whose fixtures sit in a family folder (tests/golden.py LAYOUTS), not fixtures/<harness>/.
FOLDERS = {"pi": "pi/pi", "oh-my-pi": "pi/oh_my_pi", "openclaw": "pi/openclaw"}
# Agents whose captured runs sit beside a member's hand tree (hand/sdk -> real/sdk), not in real/.
REAL_TREES = {"cline": "real/sdk"}
LIMIT = 4096
# Rows a harness never reads that would only weigh the repository down, deleted from the copy (and so
# from dump.json): dcode's QuickJS interpreter snapshot, 1.3 MB of the `writes` table per run.
UNREAD_ROWS = {"dcode": ["DELETE FROM writes WHERE channel = '_quickjs_snapshot_payload'"]}
# (prompt, resume) per run; {repo} is the repo's absolute path.
SCENARIOS: dict[str, list[tuple[str, bool]]] = {
    "two_turns": [("say hi", False), ("READ_FILE {repo}/notes.txt", True)],
    "thinking": [("THINK about it, then say hi", False)],
    "tool_error": [("READ_FILE {repo}/missing.txt", False)],
    "subagent": [("SPAWN_AGENT READ_FILE {repo}/notes.txt", False)],
    # A tool result over 1 KiB (git's sample hook, ~4.9 KB): OpenClaw stores such a row zstd-compressed.
    "long_result": [("READ_FILE {repo}/.git/hooks/pre-rebase.sample", False)],
}
ON_REQUEST = ("subagent", "long_result")  # only with --scenario: not every agent has a subagent tool


def trim(value: Any) -> tuple[Any, int]:
    """``value`` with every string over :data:`LIMIT` shortened in the middle; and how many were."""
    if isinstance(value, str) and len(value) > LIMIT:
        cut = len(value) - 2000
        return f"{value[:1000]}…[trimmed {cut} chars]…{value[-1000:]}", 1
    if isinstance(value, dict):
        out, count = {}, 0
        for k, v in value.items():
            out[k], n = trim(v)
            count += n
        return out, count
    if isinstance(value, list):
        pairs = [trim(v) for v in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    return value, 0


# How agents serialize: compact (most JSONL), JSON.stringify(…, null, 2), Python's json.dumps (as is, or non-ASCII kept).
STYLES: list[dict[str, Any]] = [
    {"separators": (",", ":"), "ensure_ascii": False},
    {"indent": 2, "ensure_ascii": False},
    {"indent": 2, "ensure_ascii": True},
    {"separators": (", ", ": "), "ensure_ascii": False},
    {"separators": (", ", ": "), "ensure_ascii": True},  # json.dumps with no arguments (gptme)
]


def trim_json_text(text: str) -> tuple[str, int]:
    """Trim one JSON document (a line or a whole file) if its serialization style can be reproduced."""
    try:
        value = json.loads(text)
    except ValueError:
        return text, 0
    short, count = trim(value)
    if not count:
        return text, 0
    body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    for style in STYLES:
        if json.dumps(value, **style) == body:
            return json.dumps(short, **style) + end, count
    print(f"  cannot reproduce the JSON style; left untrimmed ({count} long strings)", file=sys.stderr)
    return text, 0


def copy_trimmed(src: Path, dst: Path) -> int:
    """Copy a store file, trimming long JSON strings (JSONL per line, JSON whole); other files as is."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix not in (".jsonl", ".json"):
        shutil.copy2(src, dst)
        return 0
    text = src.read_text(encoding="utf-8")
    if src.suffix == ".json":
        out, count = trim_json_text(text)
    else:
        pieces = [trim_json_text(line) for line in text.splitlines(keepends=True)]
        out, count = "".join(p for p, _ in pieces), sum(n for _, n in pieces)
    dst.write_text(out, encoding="utf-8")
    shutil.copystat(src, dst)
    return count


def copy_sqlite(src: Path, dst: Path, unread: list[str] | None = None) -> int:
    """Copy a WAL database with its side files, fold the WAL into the copy, trim long JSON strings,
    delete the ``unread`` rows (statements) and compact the file."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / src.name
        for suffix in ("", "-wal", "-shm"):
            side = src.with_name(src.name + suffix)
            if side.exists():
                shutil.copy2(side, staged.with_name(staged.name + suffix))
        db = sqlite3.connect(staged)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            count = _trim_tables(db)
            for statement in unread or ():
                count += db.execute(statement).rowcount
            db.commit()
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if unread:
                db.execute("VACUUM")
        finally:
            db.close()
        shutil.copy2(staged, dst)
    return count


def _trim_tables(db: sqlite3.Connection) -> int:
    count = 0
    for table, column in _text_columns(db):
        try:
            rows = db.execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE length("{column}") > ?', (LIMIT,))
        except sqlite3.OperationalError:  # a WITHOUT ROWID table (OpenClaw's FTS5 shadow tables)
            continue
        for rowid, text in rows.fetchall():
            short, n = trim_json_text(text) if text[:1] in "[{" else trim(text)
            if n:
                db.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (short, rowid))
                count += n
    return count


def _text_columns(db: sqlite3.Connection) -> list[tuple[str, str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return [
        (t, c[1])
        for t in tables
        if not t.startswith("sqlite_")
        for c in db.execute(f'PRAGMA table_info("{t}")')
        if c[2].upper() in ("TEXT", "")
    ]


def dump_sqlite(path: Path) -> dict[str, Any]:
    """Schema and rows of every table; TEXT holding a JSON object or array is shown parsed."""
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)  # a WAL database: no -wal/-shm beside it
    try:
        out: dict[str, Any] = {}
        for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type='table' ORDER BY name"):
            cursor = db.execute(f'SELECT * FROM "{name}"')
            columns = [d[0] for d in cursor.description]
            rows = [{c: _readable(v) for c, v in zip(columns, row, strict=True)} for row in cursor]
            out[name] = {"schema": sql, "rows": rows}
        indexes = db.execute(
            "SELECT sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL ORDER BY name"
        )
        out["(indexes)"] = {"schema": [r[0] for r in indexes], "rows": []}
        return out
    finally:
        db.close()


def _readable(value: Any) -> Any:
    if isinstance(value, bytes):  # for reading: a long blob's hex is shortened like a long string
        return {"hex": trim(value.hex())[0], "bytes": len(value)}
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def capture(name: str, scenario: str, work: Path) -> dict[str, Any]:
    spec = realagents.AGENTS[name]
    realagents.install(spec)
    tmp = Path(tempfile.mkdtemp(prefix=f"cap-{name}-{scenario.replace('_', '-')}-", dir="/tmp"))
    home, repo = tmp / "home", realagents.make_repo(tmp)
    facts: dict[str, Any] = {"agent": name, "version": spec.version, "scenario": scenario, "tmp": str(tmp)}
    facts["runs"] = []
    with FakeLLM(log=tmp / "requests.jsonl") as llm:
        realagents.write_config(spec, home, llm.port)
        facts["config_files"] = {
            str(p.relative_to(home)): t for p, t in realagents.config_files(spec, home, llm.port).items()
        }
        facts["env"] = {
            k: v for k, v in realagents.agent_env(spec, home, llm.port).items() if k not in _plain_env()
        }
        for prompt, resume in SCENARIOS[scenario]:
            args = realagents.prompt_args(spec, prompt.format(repo=repo), resume=resume, home=home)
            started = time.monotonic()
            try:
                done = realagents.run(spec, args, cwd=repo, home=home, port=llm.port, timeout=300)
                code: int | None = done.returncode
                out = done.stdout + "\n--- stderr ---\n" + done.stderr
            except subprocess.TimeoutExpired:
                code, out = None, "timeout"
            n = len(facts["runs"]) + 1
            (tmp / f"run{n}.out").write_text(out)
            facts["runs"].append(
                {"args": args, "exit": code, "seconds": round(time.monotonic() - started, 1)}
            )
        facts["requests"] = [path for path, _ in llm.requests]
    folder = FIXTURES / FOLDERS.get(name, spec.harness)
    facts["fixture"] = _copy_store(spec, home, repo, folder / REAL_TREES.get(name, "real") / scenario)
    kept = work / f"{name}-{scenario}"
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(tmp, kept, symlinks=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return facts


def _plain_env() -> dict[str, str]:
    return realagents.clean_env(Path("/nonexistent"))


def _copy_store(spec: realagents.Agent, home: Path, repo: Path, dest: Path) -> dict[str, Any]:
    if dest.exists():
        shutil.rmtree(dest)
    root = realagents.store_root(spec, home)
    copied: dict[str, Any] = {}
    for src in realagents.store(spec, home, repo):
        if src.name.endswith(("-wal", "-shm")):
            continue  # folded into the database copy
        rel = Path("repo", src.relative_to(repo)) if src.is_relative_to(repo) else src.relative_to(root)
        if src.suffix in (".db", ".sqlite"):
            copied[str(rel)] = {"trimmed": copy_sqlite(src, dest / rel, UNREAD_ROWS.get(spec.name))}
            dump = json.dumps(dump_sqlite(dest / rel), indent=1, ensure_ascii=False)
            (dest / "dump.json").write_text(dump + "\n", encoding="utf-8")
        else:
            copied[str(rel)] = {"trimmed": copy_trimmed(src, dest / rel)}
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realagents_capture", description=__doc__)
    parser.add_argument("agents", nargs="+", choices=list(realagents.AGENTS), metavar="agent")
    parser.add_argument("--scenario", action="append", choices=list(SCENARIOS),
                        help=f"default: all but {', '.join(ON_REQUEST)}")
    parser.add_argument("--work", type=Path, default=Path("/tmp/realagents-capture"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    summary_path = args.work / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    failed = False
    for name in args.agents:
        for scenario in args.scenario or [s for s in SCENARIOS if s not in ON_REQUEST]:
            print(f"capturing {name} {scenario} ...", file=sys.stderr, flush=True)
            facts = capture(name, scenario, args.work)
            summary[f"{name}/{scenario}"] = facts
            failed |= any(r["exit"] != 0 for r in facts["runs"])
            print(json.dumps({k: facts[k] for k in ("runs", "fixture")}), file=sys.stderr)
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
