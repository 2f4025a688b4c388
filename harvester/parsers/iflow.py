"""iFlow CLI: ``~/.iflow/projects/<project>/session-<uuid>.jsonl``, Claude Code's JSONL with a twist.

A member of the Claude Code family: the records are Claude Code's ``user`` / ``assistant`` envelopes
(``uuid``, ``parentUuid``, ``sessionId``, ``cwd``, ``version``), so :mod:`claude_code` reads them. What differs
(sources: ``fixtures/iflow/SOURCE.md``):

- one model response is written as a burst of ``assistant`` lines under the same ``parentUuid``, each a
  sliding-window snapshot of the tool calls then active: a ``tool_use`` block (same ``id``) reappears in
  the next snapshot. The siblings are streaming copies, not forks: each call is kept once, at its first
  appearance (agentsview merges a burst the same way).
- ``stop_reason`` is always null, so the store never says a turn finished: no ``last_turn`` is noted
  (the service judges an iFlow session by its file's activity alone).
- ``sessionId`` is the file's stem (``session-<uuid>``), which is the native id here too.
- ``usage`` is written on every assistant line but all zeros: iFlow records no token usage, so none is kept
  (`harvester usage` would otherwise count its responses as costing nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harvester.model import Batch
from harvester.parsers import claude_code
from harvester.parsers.base import Record, SourceRef, SourceSpec

NAME = "iflow"

SOURCES = (SourceSpec("*/session-*.jsonl", "jsonl", "main"),)

# The npm package @iflow-ai/iflow-cli installs a node script named iflow.
PROCESSES = ("iflow", "@iflow-ai/iflow-cli")

_SEEN_KEEP = 256  # tool-call ids remembered across batches: a burst spans a handful of lines


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # No variable of iFlow's own is known to move ~/.iflow (agentsview's IFLOW_DIR is agentsview's own
    # setting, not the agent's): the one default place, on every OS.
    return [home / ".iflow" / "projects"]


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    batch = claude_code.parse(ref, records, state)
    seen: list[str] = state.get("calls_seen") or []
    known = set(seen)
    kept = []
    for event in batch.events:
        if event.usage is not None and not event.usage.as_dict() and not event.usage.cost:
            event.usage = None  # the zeros iFlow writes in place of counts it does not keep
        call = event.tool_call_id
        if event.kind == "tool_call" and call:
            if call in known:
                continue  # a later snapshot of a call already read
            known.add(call)
            seen.append(call)
        kept.append(event)
    batch.events[:] = kept
    state["calls_seen"] = seen[-_SEEN_KEEP:]
    # Claude Code's parser notes "open" after each prompt and "complete" on end_turn; iFlow writes no
    # end_turn, so the open note would call every quiet session abandoned mid-turn.
    for patch in batch.sessions.values():
        if patch.meta and "last_turn" in patch.meta:
            patch.meta = {k: v for k, v in patch.meta.items() if k != "last_turn"} or None
    return batch
