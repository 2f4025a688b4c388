"""Tool calls made fit for the target: native records where the target's API would take them, text otherwise.

Every target writes a call as its own native record (Claude ``tool_use``/``tool_result``, Codex
``function_call``/``function_call_output``, Gemini ``functionCall``/``functionResponse``, an opencode ``tool``
part) when the ids and the pairing can be kept. The model APIs behind them are stricter than the agents' files:
a call id must be ``[A-Za-z0-9_-]`` (Anthropic's rule, the strictest), a function name ``[A-Za-z_][A-Za-z0-9_-]``
of at most 64 characters (OpenAI's and Gemini's), the input a JSON object. Ids are rewritten into that alphabet
(the same way on the call and on its result, unique in the session); a turn whose call has a name or an input
the APIs would refuse is written as text, its results as a user message that follows (as ``--tools text`` writes
every call). The one tool every agent has, the shell, is given the target's own shell tool and argument.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson

from harvester.resume.conversation import TOO_DEEP, Call, Conversation, Turn

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")
ID_REFUSED = re.compile(r"[^A-Za-z0-9_-]")
ID_CHARS = 64
# The shell tools of the agents harvester reads, by their lower-cased names; each call's command is the text (or
# the argv) under one of COMMAND_KEYS.
SHELLS = frozenset({"bash", "exec_command", "shell", "local_shell", "shell_command", "run_shell_command",
                    "execute_command", "run_command", "run_terminal_command", "run_in_terminal", "terminal",
                    "powershell"})
COMMAND_KEYS = ("command", "cmd")


def shape(conversation: Conversation, shell: tuple[str, str], as_text: bool) -> None:
    """Make ``conversation``'s calls fit a target (see the module), in place: ``shell`` is the target's shell tool
    and the name of its command argument; ``as_text``: every call written as text (``--tools text``)."""
    changes = conversation.changes
    ids: dict[str, str] = {}
    turns: list[Turn] = []
    for turn in conversation.turns:
        turns.append(turn)
        if not turn.calls:
            continue
        for call in turn.calls:
            if _to_shell(call, shell):
                changes.renamed_calls += 1
        if as_text or not all(_native(call) for call in turn.calls):
            changes.flattened_calls += len(turn.calls)
            turns.append(_flattened(turn))
            continue
        for call in turn.calls:
            new = _new_id(call.id, ids)
            if new != call.id:
                changes.renamed_ids += 1
            call.id = new
    conversation.turns = merged(turns)


def _native(call: Call) -> bool:
    return bool(NAME.match(call.name)) and isinstance(call.input, dict)


def _to_shell(call: Call, shell: tuple[str, str]) -> bool:
    """The call of a shell tool given the target's (``Bash{command}`` ↔ ``exec_command{cmd}``), when its input
    is a command and nothing else the target's tool would not know."""
    name, argument = shell
    if call.name.lower() not in SHELLS or not isinstance(call.input, dict) or call.name == name:
        return False
    command = next((call.input[k] for k in COMMAND_KEYS if k in call.input), None)
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        import shlex

        command = shlex.join(command)
    if not isinstance(command, str) or not command:
        return False
    call.name, call.input = name, {argument: command}
    return True


def _new_id(old: str, taken: dict[str, str]) -> str:
    """``old`` in the APIs' alphabet, unique among the ids given so far (``taken``: new id -> old id)."""
    base = ID_REFUSED.sub("_", old)[:ID_CHARS] or "call"
    new, n = base, 1
    while new in taken and taken[new] != old:
        n += 1
        suffix = f"_{n}"
        new = base[:ID_CHARS - len(suffix)] + suffix
    taken[new] = old
    return new


def _flattened(turn: Turn) -> Turn:
    """``turn``'s calls written into its texts, in place; returns the user turn that holds their results."""
    results = Turn("user", seq=turn.seq, last_seq=turn.last_seq, ts=turn.ts)
    for call in turn.calls:
        turn.texts.append(f"[tool call {call.name}: {call_line(call)}]")
        result = call.result
        if result is not None:
            error = ", an error" if result.is_error else ""
            results.texts.append(f"[tool result of {call.name}{error}]\n{result.text}")
    turn.calls = []
    return results


def call_line(call: Call) -> str:
    """A call's input as text: its JSON, or the call's own line when it has no input to write."""
    if call.input is None or call.input is TOO_DEEP:
        return call.text or call.name
    try:
        return orjson.dumps(call.input).decode()
    except (orjson.JSONEncodeError, TypeError):
        return call.text or call.name


def merged(turns: Iterable[Turn]) -> list[Turn]:
    """Adjacent turns of one role made one where the targets need them to alternate: two user turns, and an
    assistant turn without calls and the one after it."""
    out: list[Turn] = []
    for turn in turns:
        if not turn.texts and not turn.calls:
            continue
        last = out[-1] if out else None
        if last is not None and last.role == turn.role and not last.calls:
            last.texts += turn.texts
            last.calls = turn.calls
            last.last_seq = max(last.last_seq, turn.last_seq)
            continue
        out.append(turn)
    return out


def input_object(call: Call) -> dict[str, Any]:
    """A native call's input (an object: :func:`shape` writes any other as text)."""
    return call.input if isinstance(call.input, dict) else {}
