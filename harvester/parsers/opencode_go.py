"""opencode, the original Go agent (opencode-ai/opencode, archived in 2025; Crush is its descendant):
``<project>/.opencode/opencode.db``, one SQLite database per project.

Format facts and their sources: ``fixtures/opencode_go/SOURCE.md``. In short:

- The same tables as Crush's first migrations, before Crush added columns: ``sessions(id, parent_session_id,
  title, message_count, prompt_tokens, completion_tokens, cost, updated_at, created_at, summary_message_id)``,
  ``messages(id, session_id, role, parts, model, created_at, updated_at, finished_at)``, ``files`` (snapshots,
  not transcript). Times are Unix seconds (``strftime('%s', 'now')``), as in Crush.
- ``parts`` is the JSON array of ``{type, data}`` Crush kept: text, reasoning, tool_call, tool_result, finish,
  image_url, binary. So Crush's reader reads these rows; the columns it wants that are absent here
  (``provider``, ``is_summary_message``, ``todos``) read as absent.
- The agent tool's sessions are named by their tool call id, with ``parent_session_id`` (subagents);
  ``title-<parent>`` sessions generate a title and are skipped. ``summary_message_id`` names the assistant
  message that summarises the session (noted; the message stays an assistant text: no column marks it).

A harness of its own, not a Crush variant: the user ran a program called ``opencode`` and kept its history in
``.opencode/``; listing it as Crush would name a program they never ran. Not the TypeScript opencode either
(another store, another format, found in the user's data folder, not in repositories).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harvester.model import Batch
from harvester.parsers import crush
from harvester.parsers.base import Record, SourceRef, SourceSpec, SqliteQuery

NAME = "opencode-go"
PROCESSES = ("opencode",)  # the binary's name (go install, Homebrew, the install script)
DATA_DIR = ".opencode"  # internal/config/config.go defaultDataDirectory


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # No list of projects is kept anywhere: the ingest layer finds the repositories
    # (Harness.roots_in_repositories): the bank's known directories and the configured roots.
    return []


_SINCE = ":since"
# Every column (``*``): a database last opened before 20250515105448_add_summary_message_id has no
# summary_message_id, and naming it would fail the whole read.
QUERIES = (
    SqliteQuery("session", f"SELECT * FROM sessions WHERE updated_at >= {_SINCE} ORDER BY updated_at, id",
                "updated_at", ordered=True),
    SqliteQuery("message", f"SELECT rowid AS row, * FROM messages WHERE updated_at >= {_SINCE} "
                "ORDER BY updated_at, rowid", "updated_at", ordered=True),
)
# watch=False: a WAL database is polled; the root is a whole project folder.
SOURCES = (SourceSpec(f"{DATA_DIR}/opencode.db", "sqlite", watch=False, queries=QUERIES),)


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    """Crush's reader: the rows are Crush's, as they were before Crush added to them. A message's finish part
    ends it (``IsFinished`` in internal/message/content.go): the summary is created finished, its
    ``finished_at`` never set."""
    return crush.parse(ref, records, state, finish_part_ends=True)
