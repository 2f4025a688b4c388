"""Generate a synthetic Claude Code history tree with a realistic record mix.

The shapes follow fixtures/claude_code (real 2.1.197 output and the hand-written cases): envelope
fields on every line, assistant replies split into one line per content block sharing message.id,
tool results carrying file contents and command output, plus the bookkeeping records Claude Code
writes between turns (file-history-snapshot, queue-operation, attachment, system turn_duration,
last-prompt). Deterministic for a given seed.

    python bench/gen_claude_tree.py OUT_DIR [--mb 320] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import uuid
from pathlib import Path

import orjson

WORDS = (
    "the parser retry client cache request handler module config test fixture error value index session "
    "buffer stream token cursor commit branch file line record event offset bank query schema table row "
    "column migrate worker thread queue lock timeout signal process daemon service unit path root home"
).split()
TOOLS = ("Read", "Bash", "Edit", "Grep", "Glob", "Write")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def code_block(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        indent = "    " * rng.randint(0, 3)
        out.append(f"{i + 1:>6}\t{indent}{rng.choice(WORDS)}_{rng.choice(WORDS)} = {rng.choice(WORDS)}"
                   f"({rng.choice(WORDS)}, {rng.randint(0, 999)})  # {sentence(rng, 4)}")
    return "\n".join(out)


class SessionWriter:
    def __init__(self, rng: random.Random, cwd: str, started: int) -> None:
        self.rng = rng
        self.cwd = cwd
        self.sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.parent: str | None = None
        self.clock = started
        self.lines: list[bytes] = []

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _ts(self) -> str:
        self.clock += self.rng.randint(1, 20)
        s = self.clock
        return f"2026-10-{1 + s // 86400 % 28:02d}T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{self.rng.randint(0, 999):03d}Z"

    def _env(self, kind: str, **extra: object) -> dict:
        record = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                  "sessionId": self.sid, "version": "2.1.197", "gitBranch": "main", "type": kind,
                  "uuid": self._uuid(), "timestamp": self._ts()}
        record.update(extra)
        self.parent = record["uuid"]
        return record

    def emit(self, record: dict) -> None:
        self.lines.append(orjson.dumps(record))

    def _tool_use_result(self, tool: str, path: str, output: str) -> object:
        """Claude Code repeats each tool's output, structured, in ``toolUseResult`` (Edit even carries
        the whole original file): real lines are much longer than the text a transcript keeps."""
        lines = output.count("\n") + 1
        if tool == "Read":
            return {"type": "text", "file": {"filePath": path, "content": output, "numLines": lines,
                                             "startLine": 1, "totalLines": lines}}
        if tool == "Bash":
            return {"stdout": output, "stderr": "", "interrupted": False, "isImage": False,
                    "noOutputExpected": False}
        if tool in ("Edit", "Write"):
            original = code_block(self.rng, self.rng.randint(20, 300))
            return {"filePath": path, "oldString": output[:200], "newString": output[:220], "originalFile": original,
                    "structuredPatch": [{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 4,
                                         "lines": output.splitlines()[:6]}], "userModified": False,
                    "replaceAll": False}
        return {"mode": "content", "numFiles": 3, "filenames": [path], "content": output, "numLines": lines}

    def turn(self) -> None:
        rng = self.rng
        prompt = sentence(rng, rng.randint(8, 60))
        self.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": self._ts(),
                   "sessionId": self.sid, "content": prompt})
        self.emit({"type": "file-history-snapshot", "messageId": self._uuid(), "isSnapshotUpdate": False,
                   "snapshot": {"messageId": self._uuid(), "trackedFileBackups": {}, "timestamp": self._ts()}})
        self.emit(self._env("user", message={"role": "user", "content": prompt}, promptId=self._uuid(),
                            permissionMode="default", entrypoint="cli"))
        for _ in range(rng.randint(1, 6)):  # tool round trips
            msg_id = f"msg_{rng.getrandbits(64):016x}"
            usage = {"input_tokens": rng.randint(1, 9), "cache_creation_input_tokens": rng.randint(0, 5000),
                     "cache_read_input_tokens": rng.randint(1000, 90000), "output_tokens": rng.randint(20, 900),
                     "service_tier": "standard"}
            blocks = []
            if rng.random() < 0.4:
                blocks.append({"type": "thinking", "thinking": sentence(rng, rng.randint(20, 120)),
                               "signature": "Eo" + "x" * rng.randint(200, 600)})
            if rng.random() < 0.6:
                blocks.append({"type": "text", "text": sentence(rng, rng.randint(5, 40))})
            tool = rng.choice(TOOLS)
            tool_id = f"toolu_{rng.getrandbits(80):020x}"
            path = f"{self.cwd}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
            tool_input = {"file_path": path} if tool in ("Read", "Edit", "Write") else {
                "command": f"pytest -q tests/test_{rng.choice(WORDS)}.py" if tool == "Bash" else rng.choice(WORDS)}
            blocks.append({"type": "tool_use", "id": tool_id, "name": tool, "input": tool_input})
            request = f"req_{rng.getrandbits(64):016x}"
            for block in blocks:
                self.emit(self._env("assistant", requestId=request, message={
                    "id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-8",
                    "content": [block], "stop_reason": "tool_use", "stop_sequence": None, "usage": usage}))
            output = code_block(rng, rng.randint(10, 400)) if tool in ("Read", "Grep") else (
                "\n".join(sentence(rng, rng.randint(4, 14)) for _ in range(rng.randint(2, 80))))
            self.emit(self._env("user", message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": rng.random() < 0.05}]},
                toolUseResult=self._tool_use_result(tool, path, output), sourceToolAssistantUUID=self.parent))
            if rng.random() < 0.2:
                self.emit(self._env("attachment", attachment={"type": "edited_text_file", "filename": path,
                                                              "snippet": code_block(rng, 6)}))
        self.emit(self._env("assistant", requestId=f"req_{rng.getrandbits(64):016x}", message={
            "id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
            "model": "claude-opus-4-8", "content": [{"type": "text", "text": sentence(rng, rng.randint(10, 120))}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": rng.randint(20, 400)}}))
        self.emit(self._env("system", subtype="turn_duration", durationMs=rng.randint(2000, 90000), isMeta=False))
        self.emit({"type": "last-prompt", "lastPrompt": prompt, "sessionId": self.sid})


def generate(out: Path, megabytes: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    projects = out / "projects"
    target = megabytes * 1024 * 1024
    written = 0
    n = 0
    while written < target:
        repo = f"/home/dev/src/{rng.choice(WORDS)}-{n % 12}"
        writer = SessionWriter(rng, repo, started=rng.randint(0, 10_000_000))
        for _ in range(rng.randint(10, 60)):
            writer.turn()
        folder = projects / "".join(c if c.isalnum() else "-" for c in repo)
        folder.mkdir(parents=True, exist_ok=True)
        data = b"\n".join(writer.lines) + b"\n"
        (folder / f"{writer.sid}.jsonl").write_bytes(data)
        written += len(data)
        n += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=int, default=320)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    size = generate(args.out, args.mb, args.seed)
    print(f"{size / 1e6:.0f} MB written under {args.out}")


if __name__ == "__main__":
    main()
