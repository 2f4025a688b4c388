"""QClaw (Tencent's packaging of OpenClaw): OpenClaw's agents folder in ``~/.qclaw/agents``, OpenClaw's parser.

Format facts and their sources: ``fixtures/qclaw/SOURCE.md``. In short: QClaw runs OpenClaw with its state dir
at ``~/.qclaw`` (its ``openclaw.json`` there), so its sessions are OpenClaw's:
``agents/<agent>/sessions/<id>.jsonl`` (pi's JSONL tree; the agent database of OpenClaw 2026.8.1+ and its cold
archives, should QClaw's OpenClaw be that recent). Unlike the OpenClaw harness, the transcripts OpenClaw moves
aside (``<id>.jsonl.reset.<time>`` on ``/reset``, ``<id>.jsonl.deleted.<time>`` when a session is deleted,
``<id>.jsonl.full.bak``) are read too, as the session their header names: agentsview keeps them, and an archive
is the only copy of a history reset or deleted before harvester read it. Entry ids are the uids, so an archive
of a history already read adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harvester.model import Batch
from harvester.parsers import openclaw
from harvester.parsers.base import Record, SourceRef, SourceSpec

NAME = "qclaw"
PROCESSES = ("QClaw", "qclaw")
_UUID = "????????-????-????-????-????????????"
ARCHIVES = tuple(SourceSpec(f"*/sessions/{_UUID}.jsonl.{suffix}", "jsonl", "openclaw")
                 for suffix in ("reset.*", "deleted.*", "full.bak"))
SOURCES = (*openclaw.SOURCES, *ARCHIVES)


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    return [home / ".qclaw" / "agents"]  # no variable of QClaw's own is known to move it


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    name = ref.path.name
    if ".jsonl." in name:  # an archive: named as the transcript it was (the id before a header says it)
        ref = replace(ref, path=ref.path.with_name(name[:name.index(".jsonl.")] + ".jsonl"))
    return openclaw.parse(ref, records, state)
