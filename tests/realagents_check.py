"""``python -m tests.realagents_check [--keep DIR] [--json] [agent ...]``: prove each real agent runs offline.

Per agent (default: all of :data:`tests.realagents.AGENTS`): install it, start a :class:`FakeLLM`, make a
fresh git repo holding ``notes.txt``, run turn 1 (``say hi``) and turn 2 (resume the same session with
``READ_FILE <abs path of notes.txt>``), then report exit codes, seconds per run, whether the fake server
answered with a tool call and later received its result (for Aider, which has no tools: asked for the
file by name, then received its content), and the files the agent wrote under HOME and in the repo.
An agent passes when both runs exit 0, the tool round trip happened, and its store holds the file's
content. Exit status: 0 when every agent passed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests import realagents
from tests.fakellm import anthropic, gemini, openai_chat, openai_responses
from tests.fakellm.script import Conversation, decide
from tests.fakellm.server import FakeLLM

SECRET = "pelican"  # in notes.txt (realagents.make_repo): proves the file's content reached the store
RUN_TIMEOUT = 300
# Bulky trees that hold no history (dependencies, git objects, npm cache, logs): one line each.
COLLAPSE = (
    "node_modules", ".git", "bin", "log", "logs", "cache", ".cache", ".npm", "snapshot", "debug", "skills", "plugins",
)  # fmt: skip


@dataclass
class Result:
    agent: str
    version: str
    exit_codes: list[int | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    requests: int = 0
    tool_call: str = ""  # the tool the fake server asked for ("" if it never did)
    tool_result: bool = False  # a later request carried that tool's result with the file's content
    store: list[str] = field(default_factory=list)
    store_has_content: bool = False
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            self.exit_codes == [0, 0]
            and bool(self.tool_call)
            and self.tool_result
            and self.store_has_content
            and not self.errors
        )


def parser_for(path: str) -> Callable[[dict[str, Any]], Conversation] | None:
    """The protocol module that reads a request to ``path`` (query string included)."""
    path = path.split("?", 1)[0]
    if path.endswith("/v1/messages"):
        return anthropic.conversation
    if path.endswith("/v1/responses"):
        return openai_responses.conversation
    if path.endswith("/v1/chat/completions"):
        return openai_chat.conversation
    if "Content" in path.rsplit(":", 1)[-1]:  # Gemini generateContent / streamGenerateContent
        return gemini.conversation
    return None


def tool_round_trip(requests: list[tuple[str, Any]]) -> tuple[str, bool]:
    """(tool the server called, its result came back with the file's content), replaying the script.

    The script is deterministic, so deciding again on each logged request tells what was answered.
    """
    called = ""
    for path, body in requests:
        parse = parser_for(path)
        if parse is None or not isinstance(body, dict):
            continue
        conv = parse(body)
        aider = openai_chat.aider_reply(body, conv) if parse is openai_chat.conversation else None
        reply = aider or decide(conv)
        if not called:
            if reply.tool_call is not None:
                called = reply.tool_call.name
            elif aider is not None and aider.text.startswith(openai_chat.ASK_FOR_FILE):
                called = "(no tools: asked for the file by name)"
            continue
        returned = any(SECRET in text for text, _ in conv.tool_results)
        quoted = aider is not None and SECRET in aider.text  # Aider added the file, the reply quotes it
        if returned or quoted:
            return called, True
    return called, False


def written_files(root: Path, label: str, skip: set[Path]) -> list[str]:
    """Every file under ``root``; caches, snapshots and other bulky trees collapse to ``dir/ (N files)``."""
    lines: list[str] = []
    collapsed: dict[Path, int] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        if path in skip:
            continue
        rel = path.relative_to(root)
        bulky = next((i for i, part in enumerate(rel.parts[:-1]) if part in COLLAPSE), None)
        if bulky is not None:
            top = Path(*rel.parts[: bulky + 1])
            collapsed[top] = collapsed.get(top, 0) + 1
            continue
        lines.append(f"{label}/{rel} ({path.stat().st_size} B)")
    lines += [f"{label}/{top}/ ({n} files)" for top, n in sorted(collapsed.items())]
    return lines


def check(name: str, keep: Path | None = None) -> Result:
    spec = realagents.AGENTS[name]
    result = Result(name, spec.version)
    try:
        realagents.install(spec)
    except (subprocess.SubprocessError, RuntimeError, OSError) as exc:
        result.errors.append(f"install failed: {exc}")
        return result
    tmp = Path(tempfile.mkdtemp(prefix=f"check-{name}-"))
    try:
        _exercise(spec, tmp, result)
    finally:
        if keep is not None:
            shutil.copytree(tmp, keep / name, symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def _exercise(spec: realagents.Agent, tmp: Path, result: Result) -> None:
    home, repo = tmp / "home", realagents.make_repo(tmp)
    with FakeLLM(log=tmp / "requests.jsonl") as llm:
        realagents.write_config(spec, home, llm.port)
        configs = set(realagents.config_files(spec, home, llm.port))
        prompts = [("say hi", False), (f"READ_FILE {repo / 'notes.txt'}", True)]
        for prompt, resume in prompts:
            args = realagents.prompt_args(spec, prompt, resume=resume, home=home)
            started = time.monotonic()
            try:
                done = realagents.run(spec, args, cwd=repo, home=home, port=llm.port, timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                result.exit_codes.append(None)
                result.errors.append(f"timeout after {RUN_TIMEOUT} s: {prompt!r}")
                break
            finally:
                result.seconds.append(round(time.monotonic() - started, 1))
            result.exit_codes.append(done.returncode)
            (tmp / f"run{len(result.exit_codes)}.out").write_text(
                done.stdout + "\n--- stderr ---\n" + done.stderr
            )
            if done.returncode != 0:
                result.errors.append(f"exit {done.returncode}: {(done.stderr or done.stdout)[-600:]}")
        result.requests = len(llm.requests)
        result.tool_call, result.tool_result = tool_round_trip(llm.requests)
    files = realagents.store(spec, home, repo)
    result.store = [_label(p, home, repo) for p in files]
    result.store_has_content = any(_contains(p, SECRET) for p in files)
    result.written = written_files(home, "HOME", configs) + written_files(repo, "REPO", {repo / "notes.txt"})


def _label(path: Path, home: Path, repo: Path) -> str:
    if path.is_relative_to(repo):
        return f"REPO/{path.relative_to(repo)}"
    return f"HOME/{path.relative_to(home)}"


def _contains(path: Path, needle: str) -> bool:
    return needle.encode() in path.read_bytes()


def report(results: list[Result]) -> str:
    lines = []
    for r in results:
        status = "PASS" if r.passed else "FAIL"
        secs = " + ".join(f"{s:.1f}s" for s in r.seconds)
        lines.append(
            f"== {r.agent} {r.version}: {status}  exit {r.exit_codes}  runs {secs}  requests {r.requests}"
        )
        lines.append(f"   tool call: {r.tool_call or '-'}; result with file content: {r.tool_result}")
        lines.append(f"   store ({'holds' if r.store_has_content else 'LACKS'} the file content):")
        lines += [f"     {s}" for s in r.store] or ["     (nothing)"]
        lines.append("   written under HOME and the repo:")
        lines += [f"     {w}" for w in r.written]
        lines += [f"   ERROR {e}" for e in r.errors]
    lines.append("")
    lines.append("summary: " + ", ".join(f"{r.agent} {'PASS' if r.passed else 'FAIL'}" for r in results))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realagents_check", description=__doc__)
    parser.add_argument("agents", nargs="*", choices=[[], *realagents.AGENTS], metavar="agent")
    parser.add_argument("--keep", type=Path, help="copy each agent's temporary HOME, repo and logs here")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = []
    for name in args.agents or list(realagents.AGENTS):
        print(f"checking {name} ...", file=sys.stderr, flush=True)
        results.append(check(name, args.keep))
    if args.json:
        print(json.dumps([{**asdict(r), "passed": r.passed} for r in results], indent=2))
    else:
        print(report(results))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
