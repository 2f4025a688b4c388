"""The conversation bounded to a size the target's model can take.

No target compacts a resumed history before its first request (Claude Code sent 2.4 MB in one; Codex only cuts
each tool output to about 12 KB), so the resume bounds it itself, to ``max_bytes`` of text (the default fits a
200k-token context with room for the agent's own instructions and tools):

1. Nothing changes while it fits.
2. Tool results longer than a sixteenth of the room are cut in the middle (their start and end stay: the
   command, the error, the summary), each cut naming where the whole text is.
3. Then the latest turns are kept whole, from a user turn on, as many as fit beside the summary's room; the
   turns before them are replaced by an extractive summary (one cited line per event, as the handoff brief
   does: nothing is written by a model), framed as harvester's reference data (harvester/recall/frame.py).
4. When even the last exchange does not fit, its longest texts are cut in the middle until it does.

What was cut is counted in the conversation's :class:`~harvester.resume.conversation.Changes`.
"""

from __future__ import annotations

import shlex

import orjson

from harvester.recall.frame import frame
from harvester.recall.shown import Md, md
from harvester.resume.conversation import Call, Conversation, Turn
from harvester.resume.tools import call_line

# 200k tokens at about 3.5 bytes a token is ~700 KB; the agent's system prompt and tool schemas take 20-40k tokens
# and the answer needs room: 400 KB of history leaves that.
DEFAULT_MAX_BYTES = 400_000
MIN_MAX_BYTES = 16_384  # below this, a summary and one exchange do not fit
SUMMARY_SHARE = 5  # the summary's room: a fifth of max_bytes, at most SUMMARY_MAX
SUMMARY_MAX = 64 * 1024
RESULT_SHARE = 16  # a result longer than max_bytes / 16 is cut first
LINE_CHARS = 240  # of an event, in the summary


def size_of(turns: list[Turn]) -> int:
    return sum(_turn_size(t) for t in turns)


def _turn_size(turn: Turn) -> int:
    total = sum(len(t.encode("utf-8", "replace")) for t in turn.texts)
    for call in turn.calls:
        total += len(call.name) + len(call_line(call).encode("utf-8", "replace"))
        if call.result is not None:
            total += len(call.result.text.encode("utf-8", "replace"))
    return total


def fit(conversation: Conversation, max_bytes: int, key: bytes | None = None) -> None:
    """Bound ``conversation`` to ``max_bytes`` (see the module), in place; ``key``: the bank's recall key, which
    seals the summary so that the harvester knows it again when the target's session is captured."""
    turns = conversation.turns
    if size_of(turns) <= max_bytes:
        return
    changes = conversation.changes
    where = conversation.source.native_id
    for turn in turns:
        for call in turn.calls:
            if call.result is not None and len(call.result.text) > max_bytes // RESULT_SHARE:
                call.result.text = middle(call.result.text, max_bytes // RESULT_SHARE, where, call.result.seq)
                changes.clipped_results += 1
    if size_of(turns) <= max_bytes:
        return
    room = min(max_bytes // SUMMARY_SHARE, SUMMARY_MAX)
    start = _kept_from(turns, max_bytes - room)
    if start > 0:
        older, conversation.turns = turns[:start], turns[start:]
        changes.summarized_events += sum(len(t.texts) + 2 * len(t.calls) for t in older)
        conversation.summary = summary(older, conversation, room, key)
    _cut_longest(conversation, max_bytes - (len(conversation.summary.encode()) if conversation.summary else 0))


def _kept_from(turns: list[Turn], room: int) -> int:
    """The first turn to keep: a user turn, the earliest from which the rest fits ``room`` (else the last user
    turn; 0 when the first turn is the only start)."""
    starts = [i for i, t in enumerate(turns) if t.role == "user" and i > 0] or [0]
    total, sizes = 0, [0] * (len(turns) + 1)
    for i in range(len(turns) - 1, -1, -1):
        total += _turn_size(turns[i])
        sizes[i] = total
    fitting = [i for i in starts if sizes[i] <= room]
    return fitting[0] if fitting else starts[-1]


def _cut_longest(conversation: Conversation, room: int) -> None:
    """Cut the longest texts and results in the middle until the turns fit ``room`` (halving each time)."""
    changes = conversation.changes
    where = conversation.source.native_id
    for _ in range(64):
        excess = size_of(conversation.turns) - room
        if excess <= 0:
            return
        pieces = [(len(t), "text", turn, i) for turn in conversation.turns for i, t in enumerate(turn.texts)]
        pieces += [(len(c.result.text), "result", c, 0) for turn in conversation.turns for c in turn.calls
                   if c.result is not None]
        length, what, owner, index = max(pieces, key=lambda p: p[0])
        if length < 512:
            return  # nothing long is left: what remains is the conversation's shape
        keep = max(256, length - excess, length // 2)
        if what == "text":
            assert isinstance(owner, Turn)
            owner.texts[index] = middle(owner.texts[index], keep, where, owner.seq)
            changes.clipped_texts += 1
        else:
            assert isinstance(owner, Call) and owner.result is not None
            owner.result.text = middle(owner.result.text, keep, where, owner.result.seq)
            changes.clipped_results += 1


def middle(text: str, keep: int, session: str, seq: int) -> str:
    """``text`` cut to about ``keep`` characters: its first two thirds and last third of that, the cut saying how
    much and where the whole text is."""
    if len(text) <= keep:
        return text
    head, tail = keep * 2 // 3, keep // 3
    where = f"`harvester show {shlex.quote(session)} --around {seq} --full`" if seq else "harvester's bank"
    return f"{text[:head]}\n[… {len(text) - head - tail} characters cut by harvester to fit; {where} has them …]\n" \
           f"{text[len(text) - tail:]}"


def summary(older: list[Turn], conversation: Conversation, room: int, key: bytes | None) -> str:
    """The turns cut to fit, one cited line per event, the latest kept when they do not all fit ``room``."""
    source = conversation.source
    lines = [line for turn in older for line in _lines(turn)]
    first, last = older[0].seq, max(t.last_seq for t in older)
    title = md("Earlier in this session ({} {}, #{}–#{}), summarized by harvester to fit; `harvester show {} "
               "--around N` shows event #N whole:", source.harness, source.native_id, first, last,
               source.native_id)
    kept: list[Md] = []
    used = len(frame(title, "resume-summary", key).encode()) + 200
    for line in reversed(lines):
        used += len(line.encode()) + 1
        if used > room:
            break
        kept.insert(0, line)
    if len(kept) < len(lines):
        kept.insert(0, md("- … {} earlier events not listed", len(lines) - len(kept)))
    return frame(Md("\n").join([title, *kept]), "resume-summary", key)


def _lines(turn: Turn) -> list[Md]:
    out = [md("- #{} {}: {}", turn.seq, turn.role, _clip(text)) for text in turn.texts]
    for call in turn.calls:
        out.append(md("- #{} tool call {}: {}", call.seq, call.name, _clip(_input_line(call))))
        if call.result is not None:
            error = Md(" (error)") if call.result.is_error else Md("")
            out.append(md("- #{} tool result{}: {}", call.result.seq, error, _clip(call.result.text)))
    return out


def _input_line(call: Call) -> str:
    if call.text:
        return call.text
    try:
        return orjson.dumps(call.input).decode()
    except (orjson.JSONEncodeError, TypeError):
        return call.name


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS - 1] + "…"
