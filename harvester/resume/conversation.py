"""A captured session as a neutral conversation: what every target's writer is given.

The bank's events of one session (any harness) become turns: a user turn holds the person's texts, an assistant
turn its texts and then its tool calls, each call carrying its result. What a model did not see as the
conversation is left out, and counted in :class:`Changes`: thinking (other agents' signed blocks cannot be
replayed), the agent's injected context (environment and permission preambles, skills listings: the target
injects its own), system notices, meta records, compaction summaries (the turns they summarize are in the bank),
the harvester's own recall seen again, and events a rewind or a new branch abandoned. A session that was itself
resumed keeps the turns it copied: they are its history.

Pure: events in, turns out (:func:`conversation_of`); :func:`read_session` is the one part that reads the bank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from harvester.terminal import visible

if TYPE_CHECKING:
    from harvester.bank import Bank

DROPPED_META = ("rewound", "abandoned", "removed")  # marks that take an event out of the conversation
ABORTED = "aborted: no result was recorded for this call"


@dataclass(slots=True)
class Result:
    text: str
    is_error: bool = False
    seq: int = 0


@dataclass(slots=True)
class Call:
    id: str
    name: str
    input: Any
    result: Result | None = None
    seq: int = 0
    text: str = ""  # the call as one line (the bank's text of it): what a flattened call shows when it has no input


@dataclass(slots=True)
class Turn:
    role: Literal["user", "assistant"]
    texts: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)  # assistant turns only, after the texts
    seq: int = 0  # the first source event it holds
    last_seq: int = 0
    ts: str | None = None
    model: str | None = None


@dataclass(slots=True)
class Changes:
    """What the conversion left out or changed, by kind: the resume's report says each that is not zero."""

    thinking: int = 0  # thinking blocks dropped
    injected: int = 0  # context the source agent injected, dropped
    system: int = 0  # system notices, meta records and compaction summaries dropped
    recall: int = 0  # the harvester's own answers seen again, dropped
    abandoned: int = 0  # events a rewind or a new branch took out of the conversation, dropped
    orphan_results: int = 0  # tool results without their call, dropped
    aborted_calls: int = 0  # tool calls without a result, closed as aborted
    flattened_calls: int = 0  # tool calls written as text (--tools text, or a name or input the target refuses)
    renamed_calls: int = 0  # shell calls given the target's shell tool
    renamed_ids: int = 0  # tool call ids rewritten into the target's alphabet
    clipped_results: int = 0  # tool results cut to fit the size
    summarized_events: int = 0  # older events replaced by an extractive summary to fit the size
    clipped_texts: int = 0  # texts cut to fit the size
    control_characters: int = 0  # texts whose control characters were made visible
    escaped_prompts: int = 0  # user texts the target would skip on resume, prefixed (Gemini CLI: "/", "?")
    unclipped_missing: int = 0  # texts the bank keeps clipped whose whole text the archive lacks

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def lines(self) -> list[str]:
        """Each change in words, for a person."""
        words = {
            "thinking": "{} thinking blocks dropped", "injected": "{} injected context blocks dropped (the target "
            "adds its own)", "system": "{} system notices, meta records and compaction summaries dropped",
            "recall": "{} harvester answers seen again dropped", "abandoned": "{} abandoned (rewound) events dropped",
            "orphan_results": "{} tool results without their call dropped", "aborted_calls": "{} tool calls "
            "without a result closed as aborted", "flattened_calls": "{} tool calls flattened to text",
            "renamed_calls": "{} shell calls given the target's shell tool", "renamed_ids": "{} tool call ids "
            "rewritten", "clipped_results": "{} tool results clipped to fit", "summarized_events": "{} older events "
            "summarized to fit", "clipped_texts": "{} texts clipped to fit", "control_characters": "{} texts had "
            "control characters made visible", "escaped_prompts": "{} prompts prefixed so that the target keeps "
            "them", "unclipped_missing": "{} long texts copied as the bank keeps them (the archive lacks them)"}
        return [words[name].format(n) for name, n in self.as_dict().items() if n]


@dataclass(slots=True)
class Source:
    """The session the conversation comes from (a bank sessions row, the fields a resume uses)."""

    harness: str
    native_id: str
    title: str | None = None
    cwd: str | None = None
    started_at: str | None = None
    model: str | None = None
    events: int = 0  # the source events read (up to --upto)
    last_seq: int = 0


@dataclass(slots=True)
class Conversation:
    source: Source
    turns: list[Turn]
    changes: Changes = field(default_factory=Changes)
    summary: str | None = None  # the extractive summary of the turns cut to fit the size (harvester.resume.size)


class NothingToResume(Exception):
    """The session holds no user or assistant turn to carry over."""


def read_session(bank: Bank, row: dict[str, Any], upto: int | None = None) -> Conversation:
    """The conversation of bank session ``row``, up to its event ``upto`` (included), every text whole: what the
    bank keeps clipped is read from the archive (redacted before it was stored, as the bank's copy was)."""
    events = bank.session_events(row["id"], include_recall=True)
    if upto is not None:
        events = [e for e in events if e["seq"] <= upto]
    missing = 0
    for event in events:
        clipped = (event.get("meta") or {}).get("clipped")
        if clipped:
            whole = bank.whole_text(event)
            if whole is None:
                missing += 1
            else:
                event["text"] = whole
    source = Source(row["harness"], row["native_id"], row.get("title"), row.get("cwd"), row.get("started_at"),
                    _shown(row.get("model")), len(events), events[-1]["seq"] if events else 0)
    conversation = conversation_of(source, events)
    conversation.changes.unclipped_missing = missing
    return conversation


def conversation_of(source: Source, events: list[dict[str, Any]]) -> Conversation:
    """Turns from a session's events (bank rows, in order): see the module."""
    changes = Changes()
    turns: list[Turn] = []
    calls: dict[str, Call] = {}  # by the source's call id, until answered
    pending: list[Call] = []  # calls without an id, in order (answered by results without an id)
    for e in events:
        if not _kept(e, changes):
            continue
        role, kind, text = e["role"], e["kind"], clean(e.get("text") or "", changes)
        if kind == "text":
            if not text.strip():
                continue
            last = turns[-1] if turns else None
            if last is not None and last.role == role and not last.calls:  # (a user turn has no calls)
                last.texts.append(text)
            else:
                turns.append(Turn(role, [text], seq=e["seq"], ts=e.get("ts"), model=_shown(e.get("model"))))
            turns[-1].last_seq = e["seq"]
        elif kind == "tool_call":
            last = turns[-1] if turns else None
            if last is None or last.role != "assistant":
                last = Turn("assistant", seq=e["seq"], ts=e.get("ts"), model=_shown(e.get("model")))
                turns.append(last)
            name = clean(e.get("tool_name") or "tool", changes)  # shown: a name the APIs refuse is written as text
            call = Call(e.get("tool_call_id") or "", name, _input_of(e, changes),
                        seq=e["seq"], text=text)
            last.calls.append(call)
            last.last_seq = e["seq"]
            if call.id and call.id not in calls:
                calls[call.id] = call
            else:
                pending.append(call)
        elif kind == "tool_result":
            call_id = e.get("tool_call_id")
            call = calls.pop(call_id, None) if call_id else (pending.pop(0) if pending else None)
            if call is None or call.result is not None:
                changes.orphan_results += 1
                continue
            call.result = Result(text, bool(e.get("is_error")), e["seq"])
    for turn in turns:
        for call in turn.calls:
            if call.result is None:
                call.result = Result(ABORTED, True)
                changes.aborted_calls += 1
    if not turns:
        raise NothingToResume(f"session {source.native_id} holds no conversation to resume")
    return Conversation(source, turns, changes)


def _kept(e: dict[str, Any], changes: Changes) -> bool:
    """Whether an event is part of the conversation a model saw (see the module); what is not is counted."""
    meta = e.get("meta") or {}
    if any(meta.get(k) for k in DROPPED_META):
        changes.abandoned += 1
        return False
    if (e.get("recall") or meta.get("recall")) and not meta.get("copied_from"):
        changes.recall += 1
        return False
    if meta.get("injected"):
        changes.injected += 1
        return False
    if e["kind"] == "thinking":
        changes.thinking += 1
        return False
    if e["role"] == "system" or e["kind"] in ("meta", "compaction"):
        changes.system += 1
        return False
    if e["kind"] == "text" and e["role"] not in ("user", "assistant"):
        changes.system += 1
        return False
    return e["kind"] in ("text", "tool_call", "tool_result")


def _shown(value: Any) -> str | None:
    """A model's name as the target's records hold it (a transcript's text too: its control characters shown)."""
    return visible(value) if isinstance(value, str) and value else None


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str, changes: Changes) -> str:
    """A text as the target's records hold it: control characters made visible (the target's own screen shows
    it on resume; ``\\r\\n`` and tabs kept), text that cannot be encoded (lone surrogates) replaced."""
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    text = text.replace("\r\n", "\n")
    if _CONTROLS.search(text):
        changes.control_characters += 1
        text = visible(text)
    return text


MAX_INPUT_DEPTH = 64  # a tool call's input nested deeper is not written back as JSON (the call keeps its line)


class TooDeep(ValueError):
    pass


def cleaned(value: Any, changes: Changes, depth: int = 0) -> Any:
    """A tool call's input with each of its texts :func:`clean`; :class:`TooDeep` past :data:`MAX_INPUT_DEPTH`."""
    if depth > MAX_INPUT_DEPTH:
        raise TooDeep
    if isinstance(value, str):
        return clean(value, changes)
    if isinstance(value, dict):
        return {clean(str(k), changes): cleaned(v, changes, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [cleaned(v, changes, depth + 1) for v in value]
    return value


def _input_of(e: dict[str, Any], changes: Changes) -> Any:
    try:
        return cleaned(e.get("tool_input"), changes)
    except TooDeep:
        return TOO_DEEP


TOO_DEEP = object()  # the input of a call nested too deep to write back: the call is written as its line
