"""``resume``: one captured session, of any agent, continued in another agent's real CLI.

Why the order of operations is safe: everything is built in memory first (the conversation read from the bank and
the archive, shaped for the target, bounded, written as the target's records), and the uids the copied records
will have when the target's store is captured are computed from those very bytes by the target's own parser.
Then the resume is recorded in the bank, in its own transaction, before the session exists
(harvester/bank/sqlite_resumes.py: no capture can read it unmarked); then the session is created as one new file
(harvester/resume/placement.py: whole or not at all, never over anything), or, for opencode and Kilo, imported
by the agent's own ``import`` command (which writes its own database). Nothing else is written, in the agent's
store or anywhere: no index, no registry, no database row of the agent's.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
import tomllib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import orjson

from harvester.bank import NOT_FOUND_HINT, SEVERAL_HINT
from harvester.recall.shown import one_line
from harvester.resume import claude_code, codex, gemini_cli, opencode, placement, qwen_code
from harvester.resume.conversation import Changes, Conversation, NothingToResume, Source, Turn, read_session
from harvester.resume.records import Clock, Context, jsonl, title_of
from harvester.resume.size import DEFAULT_MAX_BYTES, MIN_MAX_BYTES, fit
from harvester.resume.tools import merged, shape

if TYPE_CHECKING:
    from harvester.bank import Bank

TARGETS = ("claude-code", "codex", "gemini-cli", "opencode", "kilo", "qwen-code")
LABELS = {"claude-code": "Claude Code", "codex": "Codex CLI", "gemini-cli": "Gemini CLI", "opencode": "opencode",
          "kilo": "Kilo CLI", "qwen-code": "Qwen Code"}
SHELLS = {"claude-code": claude_code.SHELL, "codex": codex.SHELL, "gemini-cli": gemini_cli.SHELL,
          "opencode": opencode.SHELL, "kilo": opencode.SHELL, "qwen-code": qwen_code.SHELL}
BINARIES = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini", "opencode": "opencode",
            "kilo": "kilo", "qwen-code": "qwen"}
IMPORT_SECONDS = 120  # `opencode import` of a large session, on a slow disk


class ResumeError(Exception):
    """The session cannot be resumed there: said in one line, nothing written."""


@dataclass(slots=True)
class Outcome:
    """What a resume wrote (or, dry, would write), what the conversion changed, and how to continue it."""

    source: Source
    target: str
    native_id: str
    path: str  # the new session's file (opencode, Kilo: the document imported into the agent's database)
    cwd: str
    command: list[str]  # continues the session by its id, run in ``cwd``
    changes: Changes
    records: int = 0
    turns: int = 0
    written: bool = False
    linked: bool = False  # recorded in the bank: its capture will be linked to its source
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"source": {"harness": self.source.harness, "session": self.source.native_id,
                           "title": self.source.title, "events": self.source.events, "upto": self.source.last_seq},
                "target": self.target, "session": self.native_id, "path": self.path, "cwd": self.cwd,
                "written": self.written, "linked": self.linked, "records": self.records, "turns": self.turns,
                "changes": self.changes.as_dict(), "command": self.command,
                "command_line": command_line(self.command, self.cwd), "notes": self.notes}


def command_line(command: list[str], cwd: str) -> str:
    return f"cd {shlex.quote(cwd)} && {shlex.join(command)}"


def resume(bank: Bank, session: str, target: str, *, upto: int | None = None, tools: str = "native",
           max_bytes: int = DEFAULT_MAX_BYTES, cwd: str | None = None, dry_run: bool = False,
           env: Mapping[str, str] | None = None, home: Path | None = None, now: datetime | None = None) -> Outcome:
    """Write ONE new session of ``target`` continuing captured session ``session`` (its id or a prefix), as it
    stood at its event ``upto`` (all of it by default), for the person to continue in ``cwd``; ``dry_run``:
    build it and say where it would go, write nothing."""
    if target not in TARGETS:
        raise ResumeError(f"cannot resume into {target!r}: the targets are {', '.join(TARGETS)}")
    if max_bytes < MIN_MAX_BYTES:
        raise ResumeError(f"--max-bytes must be at least {MIN_MAX_BYTES}")
    env = os.environ if env is None else env
    home = home or Path(env.get("HOME") or Path.home())
    cwd = os.path.realpath(cwd or os.getcwd())
    now = now or datetime.now(UTC)
    row = _session(bank, session)
    try:
        conversation = read_session(bank, row, upto)
    except NothingToResume as exc:
        raise ResumeError(str(exc)) from exc
    title = title_of(conversation)
    shape(conversation, SHELLS[target], tools == "text")
    fit(conversation, max_bytes, bank.recall_key())
    _open_with_provenance(conversation, upto)
    root = placement.store_root(target, env, home)
    clock = Clock(now)
    if target in ("opencode", "kilo"):
        return _imported(bank, conversation, target, root, cwd, clock, title, env, dry_run)
    session_id = str(uuid.uuid4())
    ctx = Context(session_id, cwd, clock, title, provider=_codex_provider(root) if target == "codex" else None)
    marker = None
    if target == "claude-code":
        path, records = placement.claude_code(root, cwd, session_id), claude_code.records(conversation, ctx)
    elif target == "codex":
        path, records = placement.codex(root, now, session_id), codex.records(conversation, ctx)
    elif target == "gemini-cli":
        path, marker = placement.gemini_cli(root, cwd, now, session_id)
        records = gemini_cli.records(conversation, ctx)
    else:
        path, records = placement.qwen_code(root, cwd, session_id), qwen_code.records(conversation, ctx)
    data = jsonl(records)
    outcome = Outcome(conversation.source, target, session_id, str(path), cwd, _command(target, session_id),
                      conversation.changes, len(records), len(conversation.turns))
    if marker is not None:
        outcome.notes.append(f"Gemini CLI has no project folder for {cwd} yet: {marker} claims one, naming it, as "
                             "Gemini claims one (its projects.json is left to Gemini, which adopts the folder)")
    if dry_run:
        return outcome
    outcome.linked = _record(bank, conversation, target, session_id, _parsed_uids(target, path, root, data), outcome)
    placement.make_folders(path.parent)
    if marker is not None:
        placement.claim_project(marker, cwd)
    try:
        placement.create_new(path, data)
    except FileExistsError:
        raise ResumeError(f"{path} exists already: nothing was written") from None
    except OSError as exc:
        raise ResumeError(f"cannot write {path}: {exc.strerror or exc}") from exc
    outcome.written = True
    return outcome


def _session(bank: Bank, ref: str) -> dict[str, Any]:
    found = bank.find_sessions(ref)
    if not found:
        raise ResumeError(f"no session matches {ref!r}: {NOT_FOUND_HINT}")
    if len(found) > 1:
        listing = ", ".join(f"{one_line(s['native_id'])} ({s['harness']})" for s in found)
        raise ResumeError(f"{ref!r} matches several sessions ({SEVERAL_HINT}): {listing}")
    return found[0]


def provenance(source: Source, upto: int | None = None) -> str:
    """The first line the new session's first message holds: from which agent and session, and when."""
    when = (source.started_at or "")[:16].replace("T", " ")
    label = LABELS.get(source.harness) or source.harness
    where = f" up to its event #{upto}" if upto else ""
    return one_line(f"[Continued by harvester from {label} session {source.native_id[:120]}"
                    f"{f' of {when} UTC' if when else ''}{where}: its earlier turns follow.]")


def _open_with_provenance(conversation: Conversation, upto: int | None) -> None:
    """The provenance line, then the summary of what was cut to fit, in front of the first turn (a user turn:
    the conversations the targets send start with one)."""
    first = [provenance(conversation.source, conversation.source.last_seq if upto is not None else None)]
    if conversation.summary:
        first.append(conversation.summary.rstrip("\n"))
    conversation.turns = merged([Turn("user", ["\n".join(first)]), *conversation.turns])


def _command(target: str, session_id: str) -> list[str]:
    binary = BINARIES[target]
    if target == "codex":
        return [binary, "resume", session_id]
    if target in ("opencode", "kilo"):
        return [binary, "--session", session_id]
    return [binary, "--resume", session_id]


def _record(bank: Bank, conversation: Conversation, target: str, session_id: str, uids: list[str],
            outcome: Outcome) -> bool:
    """The resume recorded in the bank before its session exists (see the module); False where the bank cannot be
    written here (the session is written all the same, and captured without its link)."""
    if getattr(bank, "readonly", False):
        outcome.notes.append("the bank is read-only here: the new session will be captured without its link to "
                             "its source, and its copied turns counted twice")
        return False
    source = conversation.source
    bank.record_resume(source.harness, source.native_id, source.last_seq, target, session_id, source.events, uids)
    return True


def _parsed_uids(target: str, path: Path, root: Path, data: bytes) -> list[str]:
    """The uids the target's own parser gives the records written: what its capture will read back."""
    from harvester.parsers import HARNESSES
    from harvester.parsers.base import Record, SourceRef

    lines = data.split(b"\n")
    records = [Record(n, raw) for n, raw in enumerate(lines, start=1) if raw]
    batch = HARNESSES[target].parse(SourceRef(PurePath(path), PurePath(root)), records, {})
    return list(dict.fromkeys(event.uid for event in batch.events))


def _codex_provider(root: Path) -> str | None:
    """The model provider Codex's config names (its picker lists the sessions recorded under it)."""
    try:
        config = tomllib.loads((root / "config.toml").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    provider = config.get("model_provider")
    return provider if isinstance(provider, str) and provider else None


# -- opencode and Kilo: through the agent's own `import` ------------------------------------------------------
def _imported(bank: Bank, conversation: Conversation, target: str, root: Path, cwd: str, clock: Clock, title: str,
              env: Mapping[str, str], dry_run: bool) -> Outcome:
    configured = _opencode_model(target, env, cwd)
    session_id = opencode.session_id(clock.ms())
    provider, model = configured.split("/", 1) if configured else (None, None)
    doc = opencode.document(conversation, Context(session_id, cwd, clock, title, provider, model),
                            agent="build" if target == "opencode" else "code")
    command = _command(target, session_id) + ([] if configured else ["-m", "PROVIDER/MODEL"])
    outcome = Outcome(conversation.source, target, session_id, str(root), cwd, command, conversation.changes,
                      len(doc["messages"]), len(conversation.turns))
    if not configured:
        outcome.notes.append(f"{LABELS[target]}'s configuration names no default model: give -m provider/model "
                             "to continue the session")
    binary = shutil.which(BINARIES[target], path=env.get("PATH"))
    if binary is None:
        raise ResumeError(f"`{BINARIES[target]}` is not on PATH: {LABELS[target]} writes its own database, through "
                          f"`{BINARIES[target]} import`, which harvester runs; install it, or put it on PATH")
    if dry_run:
        return outcome
    outcome.linked = _record(bank, conversation, target, session_id, opencode.record_ids(doc), outcome)
    with tempfile.TemporaryDirectory(prefix="harvester-resume-") as folder:
        document = Path(folder) / f"{session_id}.json"
        document.write_bytes(orjson.dumps(doc))
        try:
            done = subprocess.run([binary, "import", str(document)], cwd=cwd, env={**env, "PWD": cwd},
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=IMPORT_SECONDS)
        except subprocess.TimeoutExpired as exc:
            raise ResumeError(f"`{BINARIES[target]} import` did not finish in {IMPORT_SECONDS} s") from exc
    if done.returncode != 0 or session_id not in done.stdout + done.stderr:
        said = one_line((done.stderr or done.stdout).strip()[-500:])
        raise ResumeError(f"`{BINARIES[target]} import` failed (exit {done.returncode}): {said}")
    outcome.written = True
    return outcome


def _opencode_model(target: str, env: Mapping[str, str], cwd: str) -> str | None:
    """The ``provider/model`` opencode's (Kilo's) configuration names: the project's, else the user's."""
    from harvester.connect.jsonc import JSONC, JsoncError, get

    app = "opencode" if target == "opencode" else "kilo"
    config = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME") or Path.home()) / ".config") / app
    names = ("opencode.jsonc", "opencode.json", "config.json") if app == "opencode" else \
        ("kilo.jsonc", "kilo.json", "opencode.jsonc", "opencode.json")
    candidates = [Path(cwd) / name for name in names] + [Path(cwd) / f".{app}" / name for name in names]
    if env.get(f"{app.upper()}_CONFIG"):
        candidates.append(Path(env[f"{app.upper()}_CONFIG"]))
    candidates += [config / name for name in names]
    for candidate in candidates:
        with contextlib.suppress(OSError, UnicodeDecodeError, JsoncError, RecursionError):
            model = get(candidate.read_text("utf-8"), ("model",), JSONC)
            if isinstance(model, str) and "/" in model.strip("/"):
                return model
    return None
