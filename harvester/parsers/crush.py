"""Crush (charmbracelet/crush): ``<project>/.crush/crush.db``, one SQLite database per project.

Format facts and their sources: ``fixtures/crush/SOURCE.md``. In short:

- ``sessions(id, parent_session_id, title, message_count, prompt_tokens, completion_tokens, cost,
  updated_at, created_at, summary_message_id, todos)`` and ``messages(id, session_id, role, parts, model,
  provider, created_at, updated_at, finished_at, is_summary_message)``; times are Unix SECONDS
  (``strftime('%s', 'now')`` in every insert; the schema's comments say milliseconds).
- ``parts`` is a JSON array of ``{type, data}``: text, reasoning, tool_call, tool_result, finish, image_url,
  binary, shell_command. A message is updated in place while it streams (revised here, by message id).
- Agent-tool sessions are ``<messageID>$$<toolCallID>`` with ``parent_session_id`` (subagents);
  ``title-<parent>`` sessions generate a title and are skipped. Compaction: the message with
  ``is_summary_message = 1``.
- The database names no directory: the project is the folder holding ``.crush/``. Crush lists every
  project it ran in (``projects.json`` in its global data folder): those are the roots, and, as for Aider,
  the repositories the bank knows and the configured roots.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from harvester.model import Batch, Event, Problem, SessionPatch
from harvester.parsers.base import (
    Record,
    SourceRef,
    SourceSpec,
    SqliteQuery,
    describe_error,
    iso_ms,
    json_objects,
    render_call,
)

NAME = "crush"
PROCESSES = ("crush",)
DATA_DIR = ".crush"  # internal/config/config.go defaultDataDirectory
_CALL_KEYS = ("command", "file_path", "path", "pattern", "query", "url", "prompt")
PART_TYPES = frozenset({"text", "reasoning", "tool_call", "tool_result", "finish", "image_url", "binary",
                        "shell_command"})
ROLES = frozenset({"user", "assistant", "system", "tool"})


def global_data(env: Mapping[str, str], home: Path, platform: str = sys.platform) -> Path:
    """internal/config/load.go GlobalConfigData's folder: $CRUSH_GLOBAL_DATA, $XDG_DATA_HOME/crush,
    %LOCALAPPDATA%\\crush on Windows, else ~/.local/share/crush."""
    if env.get("CRUSH_GLOBAL_DATA"):
        return Path(env["CRUSH_GLOBAL_DATA"])
    if env.get("XDG_DATA_HOME"):
        return Path(env["XDG_DATA_HOME"]) / "crush"
    if platform == "win32":
        local = env.get("LOCALAPPDATA") or os.path.join(env.get("USERPROFILE", str(home)), "AppData", "Local")
        return Path(local) / "crush"
    return home / ".local" / "share" / "crush"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The project folders of projects.json (``{projects: [{path, data_dir, last_accessed}]}``, written by
    internal/projects/projects.go at every start) whose data folder is named ``.crush`` (a custom
    ``data_directory`` of another name is not read: UNCONFIRMED how common). Unreadable or absent: none."""
    try:
        listed = orjson.loads((global_data(env, home) / "projects.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return []
    out = []
    for project in listed.get("projects") or [] if isinstance(listed, dict) else []:
        if isinstance(project, dict) and isinstance(project.get("data_dir"), str):
            data_dir = Path(project["data_dir"])
            if data_dir.name == DATA_DIR:
                out.append(data_dir.parent)
    return out


_SINCE = ":since"
QUERIES = (
    SqliteQuery("session", "SELECT id, parent_session_id, title, prompt_tokens, completion_tokens, cost, created_at, "
                f"updated_at, summary_message_id, todos FROM sessions WHERE updated_at >= {_SINCE} "
                "ORDER BY updated_at, id", "updated_at", ordered=True),
    SqliteQuery("message", "SELECT rowid AS row, id, session_id, role, parts, model, provider, created_at, updated_at, "
                f"finished_at, is_summary_message FROM messages WHERE updated_at >= {_SINCE} "
                "ORDER BY updated_at, rowid", "updated_at", ordered=True),
)
# watch=False: a WAL database is polled; the root is a whole project folder.
SOURCES = (SourceSpec(f"{DATA_DIR}/crush.db", "sqlite", watch=False, queries=QUERIES),)


class _Reader:
    def __init__(self, ref: SourceRef) -> None:
        self.batch = Batch(revise=True)  # a message is rewritten while it streams
        self.line = 0
        self.cwd = str(ref.path.parent.parent)  # <project>/.crush/crush.db
        self.drifted: set[str] = set()
        self.finish_part_ends = False

    def patch(self, sid: str) -> SessionPatch:
        patch = self.batch.session(sid)
        patch.cwd = patch.cwd or self.cwd
        return patch

    def drift(self, detail: str) -> None:
        if detail not in self.drifted:
            self.drifted.add(detail)
            self.batch.problems.append(Problem("unknown_type", self.line, detail))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any], *, finish_part_ends: bool = False) -> Batch:
    """``finish_part_ends``: a message with a finish part is finished even without ``finished_at`` (opencode,
    Crush's ancestor, writes a summary message whole with its finish part and never sets the column)."""
    reader = _Reader(ref)
    reader.finish_part_ends = finish_part_ends
    reader.batch.state = state
    for record, data in json_objects(records, reader.batch.problems):
        reader.line = record.line
        table, row = data.get("table"), data.get("row")
        start = len(reader.batch.events)
        try:
            if not isinstance(row, dict):
                raise ValueError("row is not an object")
            if str(row.get("id") or row.get("session_id") or "").startswith("title-") or str(
                    row.get("session_id") or "").startswith("title-"):
                continue  # the title generator's side conversation
            if table == "session":
                _session(reader, row)
            elif table == "message":
                _message(reader, row)
            else:
                reader.drift(f"table={table!r}")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            del reader.batch.events[start:]
            reader.batch.problems.append(Problem("malformed", record.line, f"row of unexpected shape: "
                                                                           f"{describe_error(exc)}"))
    return reader.batch


def _seconds(value: Any) -> str | None:
    return iso_ms(value * 1000) if isinstance(value, int) and not isinstance(value, bool) else None


def _session(reader: _Reader, row: dict) -> None:
    patch = reader.patch(str(row["id"]))
    # Not updated_at: its trigger sets it to "now" on every change, the message-count trigger included.
    patch.started_at = _seconds(row.get("created_at"))
    if row.get("parent_session_id"):
        patch.parent_native_id, patch.parent_kind = str(row["parent_session_id"]), "subagent"
    if isinstance(row.get("title"), str) and row["title"].strip():
        patch.offer_title(row["title"].strip(), "ai")  # generated by the title session (or renamed: the db cannot say)
    patch.note(tokens={"prompt": row.get("prompt_tokens"), "completion": row.get("completion_tokens")},
               cost_usd=row.get("cost"))
    if row.get("summary_message_id"):
        patch.note(summary_message_id=row["summary_message_id"])
    if row.get("todos"):
        with contextlib.suppress(orjson.JSONDecodeError):
            patch.note(todos=orjson.loads(row["todos"]))


def _message(reader: _Reader, row: dict) -> None:
    sid, mid, role = str(row["session_id"]), str(row["id"]), row.get("role")
    patch = reader.patch(sid)
    if role not in ROLES:
        reader.drift(f"role={role!r}")
        return
    parts = orjson.loads(row.get("parts") or "[]")
    ts = _seconds(row.get("created_at"))
    model = row.get("model") if isinstance(row.get("model"), str) and row["model"] else None
    if model and role == "assistant":
        patch.model = model
    place = f"{int(row.get('created_at') or 0):012d}:{int(row.get('row') or 0):012d}"
    summary = bool(row.get("is_summary_message"))

    def event(n: int, **fields: Any) -> None:
        reader.batch.events.append(Event(sid, f"{mid}:{n}", ts=ts, place=f"{place}:{n:04d}", **fields))

    last_finish = None
    for n, wrapper in enumerate(parts):
        ptype = wrapper.get("type") if isinstance(wrapper, dict) else None
        data = wrapper.get("data") if isinstance(wrapper, dict) and isinstance(wrapper.get("data"), dict) else {}
        if ptype not in PART_TYPES:
            reader.drift(f"part type={ptype!r}")
        elif ptype == "text" and summary:
            event(n, role="system", kind="compaction", text=str(data.get("text") or ""), model=model)
        elif ptype == "text":
            event(n, role="user" if role == "user" else "system" if role == "system" else "assistant",
                  kind="text", text=str(data.get("text") or ""), model=model if role == "assistant" else None,
                  meta={"injected": True} if role == "system" else None)
        elif ptype == "reasoning":
            event(n, role="assistant", kind="thinking", text=str(data.get("thinking") or ""), model=model)
        elif ptype == "tool_call":
            tool_input: Any = data.get("input")
            if isinstance(tool_input, str):
                with contextlib.suppress(orjson.JSONDecodeError):  # still streaming: the partial text as it is
                    tool_input = orjson.loads(tool_input) if tool_input.strip() else {}
            event(n, role="assistant", kind="tool_call", text=render_call(data.get("name"), tool_input, _CALL_KEYS),
                  tool_name=data.get("name"), tool_input=tool_input, tool_call_id=data.get("id"), model=model)
        elif ptype == "tool_result":
            event(n, role="tool", kind="tool_result", text=str(data.get("content") or ""), tool_name=data.get("name"),
                  tool_call_id=data.get("tool_call_id"), is_error=bool(data.get("is_error")))
        elif ptype == "shell_command":  # the user's bang-mode command and its output
            event(n, role="user", kind="text", text=f"! {data.get('command') or ''}\n{data.get('output') or ''}",
                  meta={"shell_command": True, "exit_code": data.get("exit_code")})
        elif ptype in ("image_url", "binary"):
            event(n, role="user" if role == "user" else "assistant", kind="text",
                  text=f"[{'image' if ptype == 'image_url' else data.get('MIMEType') or 'file'}]")
        elif ptype == "finish":
            last_finish = data.get("reason")
    if role == "assistant":
        done = ((row.get("finished_at") is not None or reader.finish_part_ends)
                and last_finish not in (None, "tool_use"))
        state = ("failed" if last_finish == "error" else "aborted" if last_finish == "canceled"
                 else "complete" if done else "open")
        patch.note(last_turn=state)
    elif role in ("user", "tool"):
        patch.note(last_turn="open")
