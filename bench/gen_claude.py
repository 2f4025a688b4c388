"""Claude Code sessions as 2.1.197 writes them (``fixtures/claude_code/real/``, ``CAPTURE.md`` there).

A turn is what the captures show, in their order and with their fields: ``queue-operation`` enqueue and
dequeue, the prompt's ``user`` line, on the first turn the ``agent_listing_delta`` and ``skill_listing``
attachments (copied from the capture), then per model call one ``assistant`` line per content block
(thinking, text, tool_use; one ``message.id`` and the full ``usage`` on each), a ``user`` line per tool
result with the tool's ``toolUseResult`` (a failed command's as Claude Code records it: ``Exit code N``, is_error), and ``last-prompt`` at the end; ``mode`` after a resumed
session. An ``Agent`` call writes ``<sid>/subagents/agent-<id>.jsonl`` and its ``.meta.json``; a long
session may hold a compaction (``compact_boundary`` and the ``isCompactSummary`` line, as captured).
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from bench.gen_common import FIXTURES, Clock, Template, captured_lines, uuid4
from bench.gen_text import Writing

VERSION = "2.1.197"
MODEL = "claude-opus-4-8"
# Tools and their shares of calls (an Agent call spawns a subagent).
TOOLS = (("Read", 0.33), ("Bash", 0.3), ("Edit", 0.13), ("Grep", 0.1), ("Glob", 0.05), ("Write", 0.04),
         ("Agent", 0.02), ("TodoWrite", 0.03))
TOOL_ERROR_RATE = 0.04
# Commands that exit non-zero (a failing test run, a traceback, a command not found), recorded as Claude Code
# records them: the result's content "Exit code N" then the output, is_error, toolUseResult "Error: " + content.
COMMAND_FAILURE_RATE = 0.15
# Agents read a file, then edit it, then read it again: a path already touched is taken again this often.
PATH_REUSE_RATE = 0.5

_CAPTURE = FIXTURES / "claude_code" / "real" / "two_turns" / "projects"
_CAPTURE_TMP = "/tmp/cap-claude-code-two_turns-r81ukwkf"


def _listing_templates() -> list[Template]:
    """The two attachments Claude Code adds to a session's first turn, as captured."""
    lines = captured_lines(next(_CAPTURE.glob("*/*.jsonl")))
    picked = [line for line in lines if b'"agent_listing_delta"' in line or b'"skill_listing"' in line]
    replace = {f"{_CAPTURE_TMP}/demo-repo": "@CWD@", "6c8b8366-9d7e-4e26-aef9-724f017f9da9": "@SID@"}
    return [Template(line, replace) for line in picked]


class ClaudeSession:
    """One session file (and its subagents'), built record by record."""

    def __init__(self, w: Writing, cwd: str, listings: list[Template], sidechain: dict | None = None) -> None:
        self.w = w
        self.rng: random.Random = w.rng
        self.cwd = cwd
        self.listings = listings
        self.sidechain = sidechain  # {"agentId", "sessionId", "promptId"} for a subagent file
        self.sid = sidechain["sessionId"] if sidechain else uuid4(self.rng)
        self.clock = Clock(self.rng)
        self.parent: str | None = None
        self.lines: list[bytes] = []
        self.subagents: list[tuple[str, bytes, bytes]] = []  # (agent id, jsonl, meta json)
        self.prompt_id = sidechain["promptId"] if sidechain else uuid4(self.rng)
        self.touched: list[str] = []  # the files read and changed, latest last

    # -- envelope -------------------------------------------------------------------------
    def emit(self, record: dict) -> None:
        self.lines.append(orjson.dumps(record))

    def _head(self) -> dict:
        head: dict = {"parentUuid": self.parent, "isSidechain": self.sidechain is not None}
        return head

    def _tail(self, record: dict) -> dict:
        record.update({"userType": "external", "entrypoint": "sdk-cli", "cwd": self.cwd, "sessionId": self.sid,
                       "version": VERSION, "gitBranch": "main"})
        self.parent = record["uuid"]
        return record

    def user_line(self, content: object, **extra: object) -> dict:
        record = self._head()
        if self.sidechain:
            record["agentId"] = self.sidechain["agentId"]
        record.update({"promptId": self.prompt_id, "type": "user", "message": {"role": "user", "content": content},
                       "uuid": uuid4(self.rng), "timestamp": self.clock.iso()})
        record.update(extra)
        return self._tail(record)

    def assistant_line(self, block: dict, message_id: str, request_id: str, usage: dict, stop: str) -> dict:
        record = self._head()
        if self.sidechain:
            record["agentId"] = self.sidechain["agentId"]
        record["message"] = {"id": message_id, "type": "message", "role": "assistant", "model": MODEL,
                             "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage,
                             "stop_details": None}
        record["requestId"] = request_id
        if self.sidechain:
            record["attributionAgent"] = "general-purpose"
        record.update({"type": "assistant", "uuid": uuid4(self.rng), "timestamp": self.clock.iso()})
        return self._tail(record)

    def usage(self) -> dict:
        rng = self.rng
        return {"input_tokens": rng.randint(1, 40), "cache_creation_input_tokens": rng.randint(0, 8000),
                "cache_read_input_tokens": rng.randint(10000, 180000), "output_tokens": rng.randint(20, 2500),
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
                "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": rng.randint(0, 8000)},
                "inference_geo": "", "iterations": [], "speed": "standard"}

    # -- a session ------------------------------------------------------------------------
    def write(self, turns: int, resumed: bool) -> None:
        compact_at = self.rng.randint(turns // 2, turns - 1) if turns >= 12 and self.rng.random() < 0.35 else -1
        for n in range(turns):
            if n == compact_at:
                self.compaction()
            self.turn(first=n == 0)
        if resumed:
            self.lines.append(orjson.dumps({"type": "mode", "mode": "normal", "sessionId": self.sid}))

    def turn(self, first: bool) -> None:
        w, rng = self.w, self.rng
        prompt = w.prompt(self.cwd)
        self.prompt_id = uuid4(rng)
        self.clock.think()
        self.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": self.clock.iso(),
                   "sessionId": self.sid, "content": prompt})
        self.clock.tick()
        self.emit({"type": "queue-operation", "operation": "dequeue", "timestamp": self.clock.iso(),
                   "sessionId": self.sid})
        self.clock.tick()
        self.emit(self.user_line(prompt, permissionMode="default", promptSource="sdk"))
        if first:
            self.listing_attachments()
        self.work(calls=min(40, int(rng.expovariate(1 / 3.5))))
        self.emit({"type": "last-prompt", "lastPrompt": prompt, "leafUuid": self.parent, "sessionId": self.sid})

    def listing_attachments(self) -> None:
        for template in self.listings:
            record = template.fill({"@CWD@": self.cwd, "@SID@": self.sid})
            record["parentUuid"] = self.parent
            record["uuid"] = uuid4(self.rng)
            record["timestamp"] = self.clock.iso()
            if self.sidechain:
                record["isSidechain"] = True
                if record.get("attachment", {}).get("type") != "skill_listing":
                    continue  # a subagent's file has the skill listing only
            self.parent = record["uuid"]
            self.emit(record)

    def work(self, calls: int) -> None:
        """Model calls with tool round trips, then the final answer."""
        w, rng = self.w, self.rng
        for _ in range(calls):
            self.clock.think()
            message_id, request_id, usage = f"msg_{w.hexid(24)}", f"req_{w.hexid(24)}", self.usage()
            blocks: list[dict] = []
            if rng.random() < 0.3:
                blocks.append({"type": "thinking", "thinking": w.thinking(), "signature": self.signature()})
            if rng.random() < 0.45:
                blocks.append({"type": "text", "text": w.reply(self.cwd)[:rng.randint(80, 1200)]})
            calls_here = [self.tool_call() for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 4))]
            blocks += [call for call, _ in calls_here]
            for block in blocks:
                self.clock.tick()
                self.emit(self.assistant_line(block, message_id, request_id, usage, "tool_use"))
            calling = self.parent
            for call, tool in calls_here:
                self.clock.tick(0.05, 8.0)
                self.tool_result(call, tool, calling)
        self.clock.think()
        message_id, request_id, usage = f"msg_{w.hexid(24)}", f"req_{w.hexid(24)}", self.usage()
        if rng.random() < 0.3:
            block = {"type": "thinking", "thinking": w.thinking(), "signature": self.signature()}
            self.emit(self.assistant_line(block, message_id, request_id, usage, "end_turn"))
        self.emit(self.assistant_line({"type": "text", "text": w.reply(self.cwd)}, message_id, request_id, usage,
                                      "end_turn"))

    def signature(self) -> str:
        return "".join(self.rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                                        k=self.rng.randint(300, 1400)))

    def tool_call(self) -> tuple[dict, str]:
        w, rng = self.w, self.rng
        tool = rng.choices([t for t, _ in TOOLS], [s for _, s in TOOLS])[0]
        if self.sidechain and tool == "Agent":
            tool = "Read"  # a subagent spawns none here
        path = self.file_path()
        inputs: dict = {
            "Read": {"file_path": path},
            "Bash": {"command": w.command(self.cwd), "description": w.sentence(rng.randint(3, 8))},
            "Edit": {"file_path": path, "old_string": w.code(rng.randint(1, 8)),
                     "new_string": w.code(rng.randint(1, 10))},
            "Grep": {"pattern": w.ident(), "path": self.cwd, "output_mode": "content"},
            "Glob": {"pattern": f"**/*{w.ident()}*.py"},
            "Write": {"file_path": path, "content": w.file_text()},
            "Agent": {"description": w.sentence(rng.randint(2, 5)), "prompt": w.prompt(self.cwd)},
            "TodoWrite": {"todos": [{"content": w.sentence(rng.randint(3, 9)), "status": "pending",
                                     "activeForm": w.sentence(3)} for _ in range(rng.randint(2, 6))]},
        }[tool]
        return {"type": "tool_use", "id": f"toolu_{w.hexid(24)}", "name": tool, "input": inputs}, tool

    def file_path(self) -> str:
        """A file to read or change: one of the last few touched, or a new one."""
        if self.touched and self.rng.random() < PATH_REUSE_RATE:
            return self.rng.choice(self.touched[-8:])
        self.touched.append(self.w.path(self.cwd))
        return self.touched[-1]

    def failure(self) -> str:
        """A failed command's result content: its exit code, then what it printed."""
        w, rng = self.w, self.rng
        pick = rng.random()
        if pick < 0.6:
            run = w.pytest_output(self.cwd, w.output_size()).rsplit("\n", 1)[0]
            return (f"Exit code 1\n{run}\nFAILED tests/test_{w.ident()}.py::test_{w.ident()} - AssertionError: "
                    f"{w.sentence(rng.randint(3, 8))}\n========== 1 failed, {rng.randint(5, 900)} passed in "
                    f"{rng.random() * 60:.2f}s ==========")
        if pick < 0.85:
            return f"Exit code 1\n{w.traceback(self.cwd)}"
        return f"Exit code 127\n/bin/bash: line 1: {w.ident()}: command not found"

    def tool_result(self, call: dict, tool: str, calling: str | None) -> None:
        w, rng = self.w, self.rng
        args = call["input"]
        if rng.random() < TOOL_ERROR_RATE:
            error = f"Error: {w.sentence(rng.randint(4, 14))}"
            block = {"tool_use_id": call["id"], "type": "tool_result", "content": error, "is_error": True}
            self.emit(self.user_line([block], toolUseResult=error, sourceToolAssistantUUID=calling))
            return
        extra: dict = {}
        if tool == "Read":
            text = w.file_text()
            content: object = w.numbered(text)
            lines = text.count("\n") + 1
            extra["toolUseResult"] = {"type": "text", "file": {"filePath": args["file_path"], "content": text,
                                                               "numLines": lines, "startLine": 1, "totalLines": lines}}
        elif tool == "Bash" and rng.random() < COMMAND_FAILURE_RATE:
            failed = self.failure()
            block = {"tool_use_id": call["id"], "type": "tool_result", "content": failed, "is_error": True}
            self.emit(self.user_line([block], toolUseResult=f"Error: {failed}", sourceToolAssistantUUID=calling))
            return
        elif tool == "Bash":
            content = w.shell_output(self.cwd, w.output_size())
            extra["toolUseResult"] = {"stdout": content, "stderr": "", "interrupted": False, "isImage": False,
                                      "noOutputExpected": False}
        elif tool in ("Edit", "Write"):
            content = (f"The file {args['file_path']} has been updated. Here's the result of running `cat -n` on a "
                       f"snippet of the edited file:\n" + w.numbered(w.code(rng.randint(4, 14)), rng.randint(1, 400)))
            original = w.file_text() if rng.random() < 0.5 else "..."
            extra["toolUseResult"] = {"filePath": args["file_path"], "oldString": args.get("old_string", ""),
                                      "newString": args.get("new_string", args.get("content", "")),
                                      "originalFile": original, "structuredPatch": [], "userModified": False,
                                      "replaceAll": False}
        elif tool in ("Grep", "Glob"):
            content = w.grep_output(self.cwd, w.output_size() // 2)
            extra["toolUseResult"] = {"mode": "content", "numFiles": rng.randint(1, 30), "filenames": [],
                                      "content": content, "numLines": content.count("\n") + 1}
        elif tool == "Agent":
            content = self.spawn(args, call["id"])
            extra["toolUseResult"] = {"status": "completed", "prompt": args["prompt"], "content": content[:1],
                                      "totalDurationMs": rng.randint(2000, 300000),
                                      "totalTokens": rng.randint(5000, 90000)}
        else:
            content = "Todos have been modified successfully."
        block = {"tool_use_id": call["id"], "type": "tool_result", "content": content}
        self.emit(self.user_line([block], **extra, sourceToolAssistantUUID=calling))

    def spawn(self, args: dict, tool_use_id: str) -> list[dict]:
        agent_id = self.w.hexid(17)
        child = ClaudeSession(self.w, self.cwd, self.listings,
                              sidechain={"agentId": agent_id, "sessionId": self.sid, "promptId": self.prompt_id})
        child.clock.now = self.clock.now
        child.emit(child.user_line(args["prompt"]))
        child.listing_attachments()
        child.work(calls=self.rng.randint(1, 12))
        self.clock.now = child.clock.now
        meta = {"agentType": "general-purpose", "description": args["description"], "toolUseId": tool_use_id,
                "spawnDepth": 1}
        self.subagents.append((agent_id, b"\n".join(child.lines) + b"\n", orjson.dumps(meta)))
        final = orjson.loads(child.lines[-1])["message"]["content"][0]["text"]
        return [{"type": "text", "text": final},
                {"type": "text", "text": f"agentId: {agent_id} (use SendMessage with to: '{agent_id}', summary: "
                                         f"'<5-10 word recap>' to continue this agent)\n<usage>subagent_tokens: "
                                         f"{self.rng.randint(5000, 90000)}\ntool_uses: {len(child.lines) // 3}\n"
                                         f"duration_ms: {self.rng.randint(2000, 300000)}</usage>"}]

    def compaction(self) -> None:
        """``/compact`` as captured: the caveat and command lines, the boundary, the summary."""
        rng = self.rng
        self.emit(self.user_line("<local-command-caveat>Caveat: The messages below were generated by the user "
                                 "while running local commands. DO NOT respond to these messages or otherwise "
                                 "consider them in your response unless the user explicitly asks you to."
                                 "</local-command-caveat>", isMeta=True))
        self.emit(self.user_line("<command-name>/compact</command-name>\n            <command-message>compact"
                                 "</command-message>\n            <command-args></command-args>"))
        before = self.parent
        boundary = {"parentUuid": None, "logicalParentUuid": before, "isSidechain": False, "type": "system",
                    "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
                    "timestamp": self.clock.iso(), "uuid": uuid4(rng), "level": "info",
                    "compactMetadata": {"trigger": "manual", "preTokens": rng.randint(50000, 190000),
                                        "durationMs": rng.randint(5000, 60000), "postTokens": rng.randint(2000, 9000)}}
        self.emit(self._tail(boundary))
        summary = ("This session is being continued from a previous conversation that ran out of context. The "
                   "summary below covers the earlier portion of the conversation.\n\nSummary:\n"
                   + self.w.paragraphs(self.w.sized((2500, 0.6))))
        self.emit(self.user_line(summary, isVisibleInTranscriptOnly=True, isCompactSummary=True))


def slug(cwd: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in cwd)


def write_session(w: Writing, projects: Path, cwd: str, listings: list[Template]) -> int:
    """One session (log-normal length) and its subagents under ``projects``; the bytes written."""
    rng = w.rng
    session = ClaudeSession(w, cwd, listings)
    session.write(turns=max(1, min(120, int(rng.lognormvariate(2.0, 0.9)))), resumed=rng.random() < 0.25)
    return save_session(session, projects, cwd)


def save_session(session: ClaudeSession, projects: Path, cwd: str) -> int:
    """A written session's file and its subagents' under ``projects``, as Claude Code lays them out; the bytes."""
    folder = projects / slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(session.lines) + b"\n"
    (folder / f"{session.sid}.jsonl").write_bytes(data)
    written = len(data)
    if session.subagents:
        sub = folder / session.sid / "subagents"
        sub.mkdir(parents=True, exist_ok=True)
        for agent_id, lines, meta in session.subagents:
            (sub / f"agent-{agent_id}.jsonl").write_bytes(lines)
            (sub / f"agent-{agent_id}.meta.json").write_bytes(meta)
            written += len(lines)
    return written


def generate(projects: Path, target_bytes: int, w: Writing, repos: list[str]) -> int:
    listings = _listing_templates()
    written = 0
    while written < target_bytes:
        written += write_session(w, projects, w.rng.choice(repos), listings)
    return written
