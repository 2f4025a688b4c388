"""A transcript as the viewer shows it: each event as plain data for the templates, numbered as everywhere else.

Nothing here is HTML: the templates escape every string (Jinja2's autoescape), so a transcript's text can only
ever be text. What this module adds is what a browser would otherwise let a transcript do by itself: every
control character a terminal would obey, and the bidi and zero-width characters that show text in another
order than it is stored in or hide it, are made visible (:func:`shown`); the copied commands quote what they
carry for a shell (:func:`copy_commands`)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from harvester.model import is_injected
from harvester.recall.tools import details, lines_of, tool_call
from harvester.recall.views import when
from harvester.terminal import visible

RESULT_LINES = 6  # a tool's output up to this many lines is shown whole; longer, folded past its first lines
RESULT_SHOWN = 4
# Marks, joiners, spaces and embeddings without width that reorder or hide text, beyond terminal.visible's bidi
# controls: shown as \\u escapes so that their presence shows.
_HIDDEN = re.compile("[\u061c\u115f\u1160\u180e\u200b-\u200f\u2028\u2029\u2060-\u2065\u206a-\u206f\u3164\ufeff"
                     "\ufff9-\ufffb]")


def shown(text: Any) -> str:
    """``text`` as the viewer shows it: controls, bidi and zero-width characters visible (newlines and tabs kept)."""
    if text is None:
        return ""
    text = visible(text if isinstance(text, str) else str(text))
    return _HIDDEN.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def one_line(text: Any, limit: int = 160) -> str:
    text = " ".join(shown(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Line:
    text: str
    kind: str = ""  # "add", "del", "hunk" in a diff


@dataclass
class EventView:
    seq: int
    role: str
    kind: str
    label: str
    ts: str
    lines: list[Line] = field(default_factory=list)  # shown
    more: list[Line] = field(default_factory=list)  # folded: shown on a click
    folded: str = ""  # why the whole event is folded (thinking, injected context, meta)
    family: str = ""  # a tool call's family (harvester/recall/tools.py)
    child: str | None = None  # the subagent session a call started
    error: bool = False
    clipped: bool = False  # the bank keeps this text clipped; `show --full` reads it whole from the archive


def label_of(e: dict[str, Any]) -> str:
    if e["kind"] == "text":
        label = str(e["role"])
    elif e["kind"] in ("tool_call", "tool_result"):
        label = str(e["kind"]).replace("_", " ")
    else:
        label = f"{e['role']} {str(e['kind']).replace('_', ' ')}"
    if e.get("tool_name"):
        label += f" · {e['tool_name']}"
    return shown(label)


def _plain(text: str) -> list[Line]:
    return [Line(shown(line)) for line in lines_of(text)] or [Line("")]


def _diff_kind(line: str) -> str:
    if line == "@@" or line.startswith("@@"):
        return "hunk"
    if line.startswith("+") and not line.startswith("+++"):
        return "add"
    if line.startswith("-") and not line.startswith("---"):
        return "del"
    return ""


def event_view(e: dict[str, Any], child: str | None = None) -> EventView:
    view = EventView(int(e["seq"]), shown(e["role"]), shown(e["kind"]), label_of(e), when(e.get("ts")),
                     error=bool(e.get("is_error")), child=child,
                     clipped=bool((e.get("meta") or {}).get("clipped")) if isinstance(e.get("meta"), dict) else False)
    text = e.get("text") or ""
    if is_injected(e):
        view.folded = "context injected by the agent"
    elif e["kind"] in ("thinking", "meta"):
        view.folded = str(e["kind"])
    if e["kind"] == "tool_call":
        call = tool_call(e)
        view.family = call.family
        view.lines = _plain(text) if text else [Line(shown(call.name))]
        extra = details(call, text, full=True)
        diffish = call.family in ("edit", "patch", "write")
        view.more = [Line(shown(line), _diff_kind(line) if diffish else "") for line in extra]
        if call.family in ("edit", "patch", "command", "search", "agent", "write") and len(view.more) <= 40:
            view.lines += view.more  # what the call did is the point of it: shown, unless it is long
            view.more = []
    elif e["kind"] == "tool_result":
        lines = _plain(text)
        if len(lines) > RESULT_LINES:
            view.lines, view.more = lines[:RESULT_SHOWN], lines[RESULT_SHOWN:]
        else:
            view.lines = lines
    else:
        view.lines = _plain(text)
    return view


# --- what a reader copies ----------------------------------------------------------------------------------------

# Targets of `harvester resume SESSION --in AGENT` (issue 26), and how each agent continues its own session by id.
RESUME_TARGETS = ("claude-code", "codex", "gemini-cli", "opencode")
NATIVE_RESUME = {"claude-code": "claude --resume {}", "codex": "codex resume {}", "gemini-cli": "gemini --resume {}",
                 "opencode": "opencode --session {}", "qwen-code": "qwen --resume {}"}
_PRINTABLE = re.compile(r"[\x20-\x7e]+")


def session_ref(session: dict[str, Any]) -> str:
    """How a command names the session: its id, quoted for a shell; the bank's row id when the id holds anything
    but printable ASCII (a newline or a control character pasted into a terminal runs or rewrites a command)."""
    native = str(session["native_id"])
    return shlex.quote(native) if _PRINTABLE.fullmatch(native) else str(session["id"])


def copy_commands(session: dict[str, Any], team: bool = False) -> list[tuple[str, str]]:
    """(what it does, the command) for the session page's copy buttons."""
    ref = session_ref(session)
    flag = " --team" if team else ""
    out = []
    native = NATIVE_RESUME.get(session["harness"])
    if native and not team and _PRINTABLE.fullmatch(str(session["native_id"])):
        out.append((f"continue in {session['harness']}", native.format(shlex.quote(str(session["native_id"])))))
    out += [(f"resume in {target}", f"harvester resume {ref} --in {target}") for target in RESUME_TARGETS
            if target != session["harness"]]
    out.append(("show in a terminal", f"harvester show {ref}{flag}"))
    return out


def around_command(session: dict[str, Any], seq: int, team: bool = False) -> str:
    return f"harvester show {session_ref(session)} --around {int(seq)}" + (" --team" if team else "")


def snippet_parts(snippet: str, query: str) -> list[tuple[str, bool]]:
    """A search snippet as (text, is a hit) parts: the bank marks hits ``[word]`` (SQLite's snippet(), PostgreSQL's
    ts_headline), and a transcript may hold brackets of its own, so a bracketed part is a hit only when it holds a
    word of the query."""
    words = {w.lower() for w in re.findall(r"[^\W_]+", query)}
    parts: list[tuple[str, bool]] = []
    at = 0
    for m in re.finditer(r"\[([^\[\]\n]{1,200})\]", snippet):
        inner = m[1]
        if words and any(w.lower() in words or any(w.lower().startswith(q) for q in words)
                         for w in re.findall(r"[^\W_]+", inner)):
            parts.append((shown(snippet[at:m.start()]), False))
            parts.append((shown(inner), True))
            at = m.end()
    parts.append((shown(snippet[at:]), False))
    return [(" ".join(t.split("\n")), hit) for t, hit in parts if t]
