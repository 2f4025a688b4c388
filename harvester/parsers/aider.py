"""Aider: ``<repo>/.aider.chat.history.md``, append-only Markdown that every run extends.

Format facts and their sources: ``fixtures/aider/SOURCE.md``. In short (``aider/io.py``):

- Each run opens a block with ``\\n# aider chat started at YYYY-MM-DD HH:MM:SS\\n\\n`` (local time, no
  zone): one block is one session. ``--restore-chat-history`` re-sends the old blocks to the model but
  still appends a new block, so blocks never overlap.
- Every write is one of four shapes: the user's input (``#### `` + line + two spaces, one line per
  input line, after a blank line); Aider's own output (``> `` + text + two spaces, no blank line
  before; a multi-line message only gets ``> `` on its first line); the model's reply (a blank line,
  the reply stripped, a blank line); the header. Aider's own lines end in two spaces, a reply's last
  line never does: that tells a reply's own ``> quote`` or ``#### heading`` from Aider's lines, and
  the rest of an Aider message that had a blank line in it from a reply.
- The core hands over non-blank lines only; blank lines are seen as gaps in the line numbers.
- There are no ids and no per-line times: a session is ``<repo folder>@<start time>``, an event is
  its line offset within the block. A segment (a reply, a run of notices) can grow while Aider
  writes it, so the one still open is re-emitted under the same uid when it grows (``revise``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harvester.model import Batch, Event, Kind, Problem, Role, SessionPatch, Usage
from harvester.parsers.base import Record, SourceRef, SourceSpec

NAME = "aider"


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    # No central store: the history lives in each repository. The ingest layer finds the repositories
    # (Harness.roots_in_repositories): the bank's known directories and the configured roots.
    return []


# watch=False: the roots are whole repositories, and watching each one would follow every build
# and checkout in them; the service polls this one file per repository instead.
SOURCES = (SourceSpec(".aider.chat.history.md", "lines", watch=False),)

# pip/pipx/uv install a console script named aider (the process runs python .../bin/aider).
PROCESSES = ("aider",)

_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_NUM = r"[\d.,]+[kM]?"
_TOKENS = re.compile(rf"^Tokens: ({_NUM}) sent(?:, ({_NUM}) cache write)?(?:, ({_NUM}) cache hit)?, "
                     rf"({_NUM}) received\.")
_COST = re.compile(r"Cost: \$([\d.,]+) (?:message|request), \$([\d.,]+) session\.")
_VERSION = re.compile(r"^Aider v(\S+)$")
# 0.60+: "Main model: M with F edit format, ..." / "Model: ..."; 0.30-0.59: "Models: M with [♾️ ]F edit
# format, weak model W"; 0.20: "Model: M using F edit format"; 0.10: "Model: M".
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+)(?: (?:with|using) (?:\S+ )?(\S+) edit format)?"
                    r"(?:.*, weak model (\S+))?")
_WEAK = re.compile(r"^Weak model: (\S+)$")
_EDITOR = re.compile(r"^Editor model: (\S+) with (\S+) edit format")
_CUR_DIR = re.compile(r"^Cur working dir: (.+)$")
_EDIT_RESULT = re.compile(
    r"^(?:Applied edit to |Did not apply edit to |Commit [0-9a-f]{7,40} |Creating empty file )")
_INTERRUPT = ("^C again to exit", "^C KeyboardInterrupt")
# confirm_ask answered from a group's earlier "all"/"skip" is logged as if the user had typed it.
_AUTO_ANSWER = re.compile(r"\(Y\)es/\(N\)o.*\[[^\]]*\]: ?\S*$")
_THINK_OPEN = re.compile(r"^<(thinking-content-[0-9a-f]{32}|think|thinking|reasoning)>$")
_THINK_CLOSE = re.compile(r"^</(thinking-content-[0-9a-f]{32}|think|thinking|reasoning)>$")
_SEARCH = re.compile(r"^<{5,9} SEARCH\b")

# Aider's commands (``cmd_*`` in aider/commands.py, 0.86.2 and /ok after it); a typed prefix that
# names exactly one of them runs it, as Commands.matching_commands does.
COMMANDS = (
    "/add", "/architect", "/ask", "/chat-mode", "/clear", "/code", "/commit", "/context", "/copy",
    "/copy-context", "/diff", "/drop", "/edit", "/editor", "/editor-model", "/exit", "/git", "/help", "/lint",
    "/load", "/ls", "/map", "/map-refresh", "/model", "/models", "/multiline-mode", "/ok", "/paste", "/quit",
    "/read-only", "/reasoning-effort", "/report", "/reset", "/run", "/save", "/settings", "/test",
    "/think-tokens", "/tokens", "/undo", "/voice", "/weak-model", "/web",
)
# Commands whose argument is sent to the model as a prompt, which Aider logs again as an input of its
# own (/help sends "# Question: <args>" and the docs it found; /ok sends a fixed sentence + args).
PROMPT_COMMANDS = frozenset({"/ask", "/code", "/architect", "/context", "/help", "/ok"})
_OK_PROMPT = "Ok, please go ahead and make those changes."

# What a quoted line is, by category: (role, kind, tool_name); tool_name None = the command's name.
CATEGORIES: dict[str, tuple[Role, Kind, str | None]] = {
    "startup": ("system", "meta", None),  # command line, version, model, repo, repo-map notices
    "usage": ("system", "meta", None),  # Tokens: ... sent, ... received. Cost: ...
    "notice": ("system", "meta", None),  # warnings, errors, confirmations, hints
    "edit": ("tool", "tool_result", "edit"),  # Applied edit to ..., Commit <hash> <message>
    "command": ("tool", "tool_result", None),  # what a /command printed
}


class _Reader:
    """Per-call context; ``state`` carries the open block and segment between calls."""

    def __init__(self, ref: SourceRef, state: dict[str, Any]) -> None:
        self.ref = ref
        self.state = state
        self.batch = Batch(state=state)
        self.folder = ref.path.parent.name or "aider"
        self.orphans = 0  # lines before the first header in this call

    # -- sessions ------------------------------------------------------------------------------
    def patch(self) -> SessionPatch:
        """The current block's session (made on its first line: a header alone makes none)."""
        state = self.state
        patch = self.batch.session(state["sid"])
        if patch.cwd is None:
            patch.cwd = str(self.ref.path.parent)  # Aider writes the file in the repository's root
            patch.started_at = _utc(state["stamp"])
            patch.note(local_start=state["stamp"])
            state["used"] = True
        return patch

    def start_block(self, line: int, stamp: str) -> None:
        state = self.state
        dup = state.get("dup", 1) + 1 if state.get("stamp") == stamp else 1
        sid = f"{self.folder}@{stamp.replace(' ', 'T')}" + (f"#{dup}" if dup > 1 else "")
        for key in ("model", "cmd", "echo", "interrupt", "turn", "titled", "used"):
            state.pop(key, None)
        state.update(sid=sid, start=line, stamp=stamp, dup=dup, startup=True)

    def end_block(self) -> None:
        if "sid" not in self.state:
            return
        self.close_segment()
        if not self.state.get("used"):
            return  # a header and nothing else (Aider re-made its output object at start-up)
        # A new run appended its header: this one is over (its process exited, or died mid-turn).
        self.patch().state = "abandoned" if self.state.get("turn") == "open" else "ended"

    def turn(self, value: str) -> None:
        self.state["turn"] = value
        self.patch().note(last_turn=value)

    # -- lines ---------------------------------------------------------------------------------
    def line(self, number: int, text: str) -> None:
        state = self.state
        gap = number > state.get("last", 0) + 1
        state["last"] = number
        seg = state.get("seg")
        header = _HEADER.match(text)
        if header and (gap or seg is None or seg["cls"] != "text"):
            self.end_block()
            self.start_block(number, header.group(1))
            return
        if "sid" not in state:
            self.orphans += 1
            if self.orphans == 1:
                self.batch.problems.append(
                    Problem("unknown_type", number, "text before the first '# aider chat started at' header"))
            return
        shape = _shape(text, gap, seg["cls"] if seg else None)
        if shape == "user":
            if seg is not None and seg["cls"] == "user" and not gap:
                _append(seg, number, text)
            else:
                self.open_user(number, text)
        elif shape == "quote":
            body = _quote_body(text)
            category = self.category(body)
            usage = self.quote_facts(body)
            if seg is not None and seg["cls"] == "quote" and seg["cat"] == category:
                _append(seg, number, body)
            else:
                self.open_segment({"cls": "quote", "cat": category, "cmd": state.get("cmd")}, number, body,
                                  usage)
        elif shape == "more":  # the unquoted rest of a multi-line message Aider wrote
            assert seg is not None
            _append(seg, number, _plain(text))
            cost = _COST.search(text)
            if cost:
                self.patch().note(cost_usd=_float(cost.group(2)))
        elif seg is not None and seg["cls"] == "text":
            _append(seg, number, text)
            if seg.get("tail_of") and text.endswith("  "):
                self.close_segment()  # Aider's multi-line message ends here; a reply may follow
        else:
            # After Aider's lines and a blank line: the model's reply, or the rest of a multi-line
            # message of Aider's that had a blank line in it (told apart when the segment ends).
            after_quote = seg is not None and seg["cls"] == "quote"
            self.open_segment({"cls": "text", "tail_of": seg["cat"] if after_quote else None,
                               "cmd": seg.get("cmd") if after_quote else None,
                               "interrupted": state.get("interrupt", False)}, number, text)
            if after_quote and text.endswith("  "):
                self.close_segment()  # a one-line rest of Aider's message

    def open_user(self, number: int, text: str) -> None:
        state = self.state
        first = _user_line(text)
        state["startup"] = False
        state.pop("interrupt", None)
        state.pop("cmd", None)
        echo = state.pop("echo", None)
        seg: dict[str, Any] = {"cls": "user"}
        if echo is not None and (first == echo[1].splitlines()[0] or first.startswith("# Question: ")):
            seg["echo"] = echo[0]  # Aider logs a /ask prompt again when it sends it
        elif first == "<blank>" or _AUTO_ANSWER.search(first):
            seg["aside"] = "blank" if first == "<blank>" else "auto-answer"
        elif first.startswith(("/", "!")):
            command, args = _command(first)
            seg["command"] = command
            if command == "/ok":
                args = f"{_OK_PROMPT} {args}".strip()
            if command in PROMPT_COMMANDS and args:
                state["echo"] = (command, args)
                self.turn("open")
                self.title(args)
            else:
                state["cmd"] = command
                self.turn("complete")
        else:
            self.turn("open")
            self.title(first)
        self.open_segment(seg, number, text)

    def title(self, text: str) -> None:
        if not self.state.get("titled") and text.strip():
            self.state["titled"] = True
            first = text.strip()
            self.patch().offer_title(first if len(first) <= 80 else first[:79] + "…", "first-prompt")

    def category(self, body: str) -> str:
        if self.state.get("startup"):
            return "startup"
        if _TOKENS.match(body):
            return "usage"
        if self.state.get("cmd"):
            return "command"
        return "edit" if _EDIT_RESULT.match(body) else "notice"

    def quote_facts(self, body: str) -> Usage | None:
        """Session facts from one of Aider's own lines; the usage a Tokens line reports."""
        patch = self.patch()
        if match := _VERSION.match(body):
            patch.agent_version = match.group(1)
        elif match := _MODEL.match(body):
            self.state["model"] = patch.model = match.group(1)
            if match.group(2):
                patch.note(edit_format=match.group(2))
            if match.group(3):
                patch.note(weak_model=match.group(3))
        elif match := _WEAK.match(body):
            patch.note(weak_model=match.group(1))
        elif match := _EDITOR.match(body):
            patch.note(editor_model=match.group(1))
        elif body == "Restored previous conversation history.":
            patch.note(restored_history=True)
        elif match := _CUR_DIR.match(body):
            patch.note(started_in=match.group(1))
        elif body == "Processing your request...":  # --watch-files: an "AI!" comment is the prompt
            self.turn("open")
        elif body in _INTERRUPT and self.state.get("turn") == "open":
            self.state["interrupt"] = True  # the partial reply, if any, is written after this line
            self.turn("aborted")
        elif match := _TOKENS.match(body):
            sent, write, hit, received = (_count(g) for g in match.groups())
            if cost := _COST.search(body):
                patch.note(cost_usd=_float(cost.group(2)))
            if self.state.get("turn") in ("open", "complete"):
                self.turn("complete")
            # Aider counts cache writes into "sent"; hits are reported apart.
            return Usage(input=max(sent - write, 0), output=received, cache_read=hit, cache_write=write)
        return None

    # -- segments ------------------------------------------------------------------------------
    def open_segment(self, seg: dict[str, Any], number: int, text: str, usage: Usage | None = None) -> None:
        self.close_segment(usage)
        seg.update(start=number, lines=[text])
        self.state["seg"] = seg

    def close_segment(self, usage: Usage | None = None) -> None:
        seg = self.state.pop("seg", None)
        if seg is not None:
            self.emit(seg, usage, final=True)

    def emit(self, seg: dict[str, Any], usage: Usage | None = None, final: bool = False) -> None:
        """The events of a segment; one emitted before (still open then) is emitted again, whole."""
        if seg.get("emitted"):
            self.batch.revise = True
        seg["emitted"] = True
        lines: list[str] = seg["lines"]
        cls = seg["cls"]
        if cls == "user":
            text = "\n".join(_user_line(line) for line in lines)
            if seg.get("echo"):
                self.event(seg, 0, "system", "meta", text, meta={"aider": "echo", "command": seg["echo"]})
            elif seg.get("aside"):
                self.event(seg, 0, "system", "meta", text, meta={"aider": seg["aside"]})
            else:
                self.event(seg, 0, "user", "text", text, meta={"command": seg["command"]} if "command" in seg
                           else None)
        elif cls == "quote":  # its lines are kept without Aider's "> " and trailing two spaces
            self.aider_output(seg, 0, seg["cat"], lines)
        elif seg.get("tail_of") and lines[-1].endswith("  "):
            # Only Aider ends a line with two spaces: this is the rest of its message after a blank line.
            self.aider_output(seg, 0, seg["tail_of"], [_plain(x) for x in lines], {"continued": True})
        else:
            self.reply(seg, lines, usage)
            if final:  # the model answered: what follows is no longer a command's output or the startup
                for key in ("cmd", "interrupt"):
                    self.state.pop(key, None)
                self.state["startup"] = False
                if self.state.get("turn") == "open":  # a reply is written once the model is done
                    self.turn("complete")  # (before 0.46 there is no Tokens line to say so)

    def aider_output(self, seg: dict[str, Any], offset: int, cat: str, lines: list[str],
                     extra: dict[str, Any] | None = None) -> None:
        role, kind, tool = CATEGORIES[cat]
        meta = {"aider": cat, **(extra or {})}
        self.event(seg, offset, role, kind, "\n".join(lines).strip("\n"), meta=meta,
                   tool_name=tool or (seg.get("cmd") if cat == "command" else None))

    def reply(self, seg: dict[str, Any], lines: list[str], usage: Usage | None) -> None:
        model = self.state.get("model")
        flags = {"interrupted": True} if seg.get("interrupted") else {}
        answer_at = 0
        first = next((i for i, x in enumerate(lines) if x.strip()), 0)
        opened = _THINK_OPEN.match(lines[first].strip())
        if opened:  # streamed reasoning, written before the answer between Aider's tags
            close = next((i for i in range(first + 1, len(lines)) if _THINK_CLOSE.match(lines[i].strip())),
                         None)
            end = len(lines) if close is None else close
            thought = "\n".join(lines[first + 1:end]).strip("\n")
            meta: dict[str, Any] = {"tag": opened.group(1), **flags}
            if close is None:
                meta["unclosed"] = True
            self.event(seg, first, "assistant", "thinking", thought, model=model, meta=meta)
            answer_at = next((i for i in range(end + 1, len(lines)) if lines[i].strip()), len(lines))
            if answer_at >= len(lines):
                return
        text = "\n".join(lines[answer_at:]).strip("\n")
        blocks = sum(1 for x in lines[answer_at:] if _SEARCH.match(x))
        extra = {**flags, **({"edit_blocks": blocks} if blocks else {})}
        self.event(seg, answer_at, "assistant", "text", text, model=model, usage=usage, meta=extra or None)

    def event(self, seg: dict[str, Any], offset: int, role: Role, kind: Kind, text: str,
              **fields: Any) -> None:
        # Identity = line offset from the block's header: the same on every re-read, and unchanged
        # when the user trims older blocks from the file.
        uid = f"L+{seg['start'] + offset - self.state['start']}"
        self.patch()
        self.batch.events.append(Event(self.state["sid"], uid, role, kind, text, **fields))


def parse(ref: SourceRef, records: Iterable[Record], state: dict[str, Any]) -> Batch:
    reader = _Reader(ref, state)
    for record in records:
        try:
            text = record.raw.decode("utf-8")
        except UnicodeDecodeError:
            # Aider writes with errors="ignore" in --encoding: another encoding is still text to keep.
            text = record.raw.decode("utf-8", errors="replace")
            reader.batch.problems.append(
                Problem("malformed", record.line, "invalid UTF-8 (kept with replacements)"))
        reader.line(record.line, text)
    seg = state.get("seg")
    if seg is not None:
        # The open segment may still grow: emit it as it stands, keep it, and emit it again (same
        # uids) once it does. Its text stays in the state only until the next segment starts.
        reader.emit(seg)
    return reader.batch


# -- helpers -------------------------------------------------------------------------------------
def _shape(text: str, gap: bool, open_cls: str | None) -> str:
    """user | quote | more (the unquoted rest of Aider's message) | text (the model's words)."""
    user = text.startswith("#### ") and text.endswith("  ")
    quote = text.startswith(">")
    strong_quote = quote and (text.endswith("  ") or text.rstrip() == ">"
                              or bool(_TOKENS.match(_quote_body(text))))
    if open_cls == "text":
        # A reply ends with a blank line; inside it, "> " and "#### " are the model's Markdown.
        if gap and user:
            return "user"
        if gap and strong_quote:
            return "quote"
        return "text"
    if user:
        return "user"
    if quote and (strong_quote or not gap):
        return "quote"
    if not gap and open_cls == "quote":
        return "more"
    return "text"


def _append(seg: dict[str, Any], number: int, text: str) -> None:
    lines = seg["lines"]
    lines.extend([""] * (number - seg["start"] - len(lines)))  # the blank lines the core left out
    lines.append(text)


def _plain(line: str) -> str:
    return line[:-2] if line.endswith("  ") else line


def _quote_body(line: str) -> str:
    line = _plain(line)  # Aider's ">  " (an empty message line) is ">" once its two spaces go
    return line[2:] if line.startswith("> ") else line[1:]


def _user_line(line: str) -> str:
    return _plain(line[5:] if line.startswith("#### ") else line[4:])


def _command(first: str) -> tuple[str, str]:
    if first.startswith("!"):
        return "/run", first[1:].strip()
    word, _, args = first.partition(" ")
    word = word.lower()
    matches = [c for c in COMMANDS if c.startswith(word)]
    command = word if word in COMMANDS else matches[0] if len(matches) == 1 else word
    return command, args.strip()


def _count(value: str | None) -> int:
    if not value:
        return 0
    value = value.replace(",", "")
    scale = 1000 if value.endswith("k") else 1_000_000 if value.endswith("M") else 1
    try:
        return int(float(value.rstrip("kM")) * scale)
    except ValueError:
        return 0


def _float(value: str) -> float | None:
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None


def _utc(stamp: str) -> str:
    """Aider writes local time without a zone; this machine's zone rules give the UTC moment."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
