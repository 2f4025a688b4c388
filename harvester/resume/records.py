"""What every target's writer shares: the clock its records are stamped by, compact JSON lines, the title."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from harvester.resume.conversation import Conversation
from harvester.terminal import visible


@dataclass(slots=True)
class Clock:
    """Times for a session's records, one millisecond apart, in the order they are asked for: records carry the
    time they are written (the targets list and pick sessions by them), never the source's."""

    now: datetime
    step: int = 0

    def iso(self) -> str:
        moment = self.now + timedelta(milliseconds=self.step)
        self.step += 1
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def ms(self) -> int:
        moment = self.now + timedelta(milliseconds=self.step)
        self.step += 1
        return int(moment.timestamp() * 1000)


@dataclass(slots=True)
class Context:
    """What a writer needs besides the conversation: the new session's id, the directory the person resumes in
    (the target files a session by it), the clock, the title, and what the target's configuration names (the
    model provider Codex lists sessions by; opencode's ``provider/model``)."""

    session_id: str
    cwd: str
    clock: Clock
    title: str
    provider: str | None = None
    model: str | None = None


def jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    """Records as the agents write them: compact JSON, one a line (Claude Code's session picker finds
    ``"entrypoint":"cli"`` only in its compact form)."""
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def title_of(conversation: Conversation, chars: int = 80) -> str:
    """The new session's title: the source's (else its first ask), and the agent it comes from."""
    source = conversation.source
    first = next((t.texts[-1] for t in conversation.turns if t.role == "user" and t.texts), "")
    title = visible(" ".join((source.title or first or source.native_id).split()))  # the targets' pickers show it
    if len(title) > chars:
        title = title[:chars - 1] + "…"
    return f"{title} (from {source.harness})"


def joined(texts: list[str]) -> str:
    return "\n\n".join(texts)
