"""Codex rollouts as 0.171.0 writes them (``fixtures/codex/real/``, ``CAPTURE.md`` there).

``sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``. The session's opening records
(``session_meta`` with the full system prompt, ``task_started``, the developer message, the environment
context, ``world_state``, ``turn_context``, ``thread_settings_applied``) are the byte-exact ``fork``
capture's, paths and ids replaced. Each turn then follows the captures: the prompt as a ``response_item``
user message and an ``item_completed``/``UserMessage``; per model call an optional ``reasoning`` item
(and its ``Reasoning``), the ``function_call`` (``exec_command``), a ``token_usage_record``, the
``CommandExecution`` item, the ``function_call_output`` ("Chunk ID … Output:") and a ``token_count``;
at the end ``AgentMessage``, the assistant message, usage and ``task_complete``. Widened beyond the
captures: ``apply_patch`` as a ``custom_tool_call`` (the shape of ``fixtures/codex/hand/``), turns per
session and calls per turn of working sessions, and real-sized texts.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.gen_common import FIXTURES, HOME, Clock, Template, captured_lines, uuid7
from bench.gen_text import Writing

_FORK = FIXTURES / "codex" / "real" / "fork" / "sessions" / "2026" / "11" / "29"
_FORK_FILE = "rollout-2026-11-29T15-34-58-01a227f1-f592-7432-99e5-7bdf54365659.jsonl"
_FORK_TMP = "/tmp/cap-codex-fork-suc3e8f9"
_FORK_THREAD = "01a227f1-f592-7432-99e5-7bdf54365659"
_FORK_TURN = "01a227f1-f5ab-7bc0-8570-9b0f0b8895b7"
PATCH_SHARE = 0.15  # calls that are apply_patch instead of exec_command
TOOL_ERROR_RATE = 0.05

_ZERO = {"input_tokens": 0, "cached_input_tokens": 0, "cache_write_input_tokens": 0, "output_tokens": 0,
         "reasoning_output_tokens": 0, "total_tokens": 0}


def opening_templates() -> list[Template]:
    """The capture's first seven records (up to the first prompt)."""
    lines = captured_lines(_FORK / _FORK_FILE)[:7]
    replace = {f"{_FORK_TMP}/demo-repo": "@CWD@", f"{_FORK_TMP}/home": HOME, _FORK_THREAD: "@THREAD@",
               _FORK_TURN: "@TURN@"}
    return [Template(line, replace) for line in lines]


class Rollout:
    def __init__(self, w: Writing, cwd: str, opening: list[Template]) -> None:
        self.w = w
        self.rng: random.Random = w.rng
        self.cwd = cwd
        self.opening = opening
        self.clock = Clock(self.rng)
        self.thread = uuid7(self.rng, self.clock.now)
        self.lines: list[bytes] = []
        self.ordinal = 0
        self.history = 0
        self.turn_id = ""
        self.thread_usage = dict(_ZERO)

    def emit(self, kind: str, payload: dict, metadata: dict | None = None) -> None:
        record: dict = {"timestamp": self.clock.iso(), "ordinal": self.ordinal, "type": kind, "payload": payload}
        if metadata is not None:
            record["metadata"] = metadata
        self.lines.append(orjson.dumps(record))
        self.ordinal += 1
        self.clock.tick(0.001, 0.03)

    def meta(self, **extra: object) -> dict:
        self.history += 1
        return {"history_sequence": self.history, "sampled_through_sequence": max(0, self.history - 2),
                "client_authored": False, **extra, "model_search_state": "unused"}

    def passthrough(self, kinds: list[str] | None = None, created: bool = True) -> dict:
        out: dict = {"turn_id": self.turn_id}
        if created:
            out["create_time"] = round(self.clock.now, 7)
        if kinds is not None:
            out["content_item_kinds"] = kinds
        return out

    def new_id(self) -> str:
        return uuid7(self.rng, self.clock.now)

    # -- a rollout ------------------------------------------------------------------------
    def write(self, turns: int) -> None:
        for n in range(turns):
            self.turn(first=n == 0)

    def open_session(self) -> None:
        values = {"@CWD@": self.cwd, "@THREAD@": self.thread, "@TURN@": self.turn_id}
        for template in self.opening:
            record = template.fill(values)
            record["timestamp"] = self.clock.iso()
            record["ordinal"] = self.ordinal
            payload = record["payload"]
            if record["type"] == "session_meta":
                payload["timestamp"] = self.clock.iso()
                payload["context_window"] = {"window_id": self.new_id()}
                payload["git"]["commit_hash"] = self.w.hexid(40)
            elif record["type"] == "event_msg" and payload.get("type") == "task_started":
                payload["started_at"] = int(self.clock.now)
            elif record["type"] == "response_item":
                payload["id"] = f"msg_{self.new_id()}"
                payload["internal_chat_message_metadata_passthrough"]["create_time"] = round(self.clock.now, 7)
                self.history = record["metadata"]["history_sequence"]
            self.lines.append(orjson.dumps(record))
            self.ordinal += 1
            self.clock.tick(0.001, 0.02)

    def turn(self, first: bool) -> None:
        w, rng = self.w, self.rng
        self.clock.think()
        self.turn_id = self.new_id()
        started = self.clock.now
        if first:
            self.open_session()
        else:
            self.settings_applied()
            self.emit("event_msg", {"type": "task_started", "turn_attribution": {
                "turn_id": self.turn_id, "turn_trigger": "exec", "parent_turn_id": None,
                "initiating_agent_path": None, "root_turn_id": self.turn_id}, "turn_id": self.turn_id,
                "root_turn_id": self.turn_id, "started_at": int(self.clock.now), "model_context_window": 258400,
                "collaboration_mode_kind": "default"})
            self.emit("turn_context", self.opening_turn_context())
        prompt = w.prompt(self.cwd)
        message_id = f"msg_{self.new_id()}"
        self.emit("response_item", {"type": "message", "id": message_id, "role": "user",
                                    "content": [{"type": "input_text", "text": prompt}],
                                    "internal_chat_message_metadata_passthrough": self.passthrough(["user.text"])
                                    | {"content_item_metadata": [{"provenance": {"type": "user"}}]}},
                  self.meta(retained_source={"id": {"message_id": message_id, "turn_id": self.turn_id, "role": "user"},
                                             "revision": f"retained_{self.new_id()}", "complete": True},
                            user_input_order=self.history - 1, mcp_attribution={"status": "none"}))
        self.item_completed({"type": "UserMessage", "id": self.new_id(),
                             "content": [{"type": "text", "text": prompt, "text_elements": []}]})
        for _ in range(min(40, int(rng.expovariate(1 / 4.0)))):
            self.clock.think()
            if rng.random() < 0.35:
                self.reasoning()
            if rng.random() < PATCH_SHARE:
                self.apply_patch()
            else:
                self.exec_command()
        self.clock.think()
        if rng.random() < 0.35:
            self.reasoning()
        reply = w.reply(self.cwd)
        message_id = f"msg_{w.hexid(24)}"
        self.item_completed({"type": "AgentMessage", "id": message_id, "content": [{"type": "Text", "text": reply}]})
        self.emit("response_item", {"type": "message", "status": "completed", "id": message_id, "role": "assistant",
                                    "content": [{"type": "output_text", "text": reply, "annotations": []}],
                                    "internal_chat_message_metadata_passthrough": self.passthrough(["unknown"], False)},
                  self.meta(retained_source={"id": {"message_id": message_id, "turn_id": self.turn_id,
                                                    "role": "assistant"},
                                             "revision": f"retained_{self.new_id()}", "complete": True},
                            user_input_order=self.history - 1))
        self.count(self.usage())
        self.emit("event_msg", {"type": "task_complete", "root_turn_id": self.turn_id, "turn_id": self.turn_id,
                                "last_agent_message": reply, "started_at": int(started),
                                "completed_at": int(self.clock.now), "duration_ms": int((self.clock.now - started) * 1000),
                                "time_to_first_token_ms": rng.randint(200, 4000)})

    def opening_turn_context(self) -> dict:
        """A resumed turn's ``turn_context``: the opening one's, with this turn's ids."""
        template = next(t for t in self.opening if '"type":"turn_context"' in t.text)
        return template.fill({"@CWD@": self.cwd, "@THREAD@": self.thread, "@TURN@": self.turn_id})["payload"]

    def settings_applied(self) -> None:
        restricted = {"type": "managed", "file_system": {"type": "restricted", "entries": [
            {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]}, "network": "restricted"}
        self.emit("event_msg", {"type": "thread_settings_applied", "thread_id": self.thread, "thread_settings": {
            "model": "fake-model", "model_provider_id": "fakellm", "approval_policy": "never",
            "approvals_reviewer": "user", "requested_approvals_reviewer": "user", "permission_profile": restricted,
            "active_permission_profile": {"id": ":read-only"}, "cwd": self.cwd,
            "runtime_workspace_roots": [self.cwd], "collaboration_mode": {"mode": "default", "settings": {
                "model": "fake-model", "reasoning_effort": None, "developer_instructions": None}},
            "disabled_plugin_ids": []}})

    def item_completed(self, item: dict) -> None:
        ms = self.clock.ms()
        self.emit("event_msg", {"type": "item_completed", "thread_id": self.thread, "turn_id": self.turn_id,
                                "item": item, "started_at_ms": ms, "completed_at_ms": ms})

    def usage(self) -> dict:
        """A model response's ``token_usage_record``; its ``token_count`` follows later (``count``)."""
        rng = self.rng
        last = {"input_tokens": rng.randint(8000, 180000), "cached_input_tokens": rng.randint(0, 150000),
                "cache_write_input_tokens": 0, "output_tokens": rng.randint(20, 3000),
                "reasoning_output_tokens": rng.randint(0, 2000)}
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for key, value in last.items():
            self.thread_usage[key] += value
        self.emit("token_usage_record", {"thread_id": self.thread, "turn_id": self.turn_id, "session_id": self.thread,
                                         "root_turn_id": self.turn_id, "response_id": f"resp_{self.w.hexid(24)}",
                                         "usage": last, "turn_token_usage": last,
                                         "thread_token_usage": dict(self.thread_usage)})
        return last

    def reasoning(self) -> None:
        w = self.w
        summary = w.paragraphs(w.sized((300, 0.9), 4000))
        reasoning_id = f"rs_{w.hexid(24)}"
        self.item_completed({"type": "Reasoning", "id": reasoning_id, "summary_text": [summary], "raw_content": []})
        encrypted = "".join(self.rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                                             k=self.rng.randint(400, 4000)))
        self.emit("response_item", {"type": "reasoning", "id": reasoning_id,
                                    "summary": [{"type": "summary_text", "text": summary}], "content": None,
                                    "encrypted_content": encrypted,
                                    "internal_chat_message_metadata_passthrough": self.passthrough(created=False)},
                  self.meta())

    def exec_command(self) -> None:
        w, rng = self.w, self.rng
        cmd = w.command(self.cwd)
        call_id = f"call_{w.hexid(24)}"
        self.emit("response_item", {"type": "function_call", "status": "completed", "id": f"fc_{w.hexid(24)}",
                                    "name": "exec_command", "arguments": orjson.dumps({"cmd": cmd}).decode(),
                                    "call_id": call_id,
                                    "internal_chat_message_metadata_passthrough": self.passthrough(created=False)},
                  self.meta(user_input_order=self.history - 1))
        last = self.usage()
        failed = rng.random() < TOOL_ERROR_RATE
        output = w.shell_output(self.cwd, w.output_size()) if not failed else f"{cmd.split()[0]}: {w.sentence(5)}"
        code = rng.choice((1, 2, 127)) if failed else 0
        self.clock.tick(0.05, 20.0)
        duration = rng.random() * 20
        self.item_completed({"type": "CommandExecution", "id": call_id, "process_id": str(rng.randint(1000, 99999)),
                             "command": ["/bin/bash", "-lc", cmd], "cwd": f"file://{self.cwd}",
                             "parsed_cmd": [{"type": "unknown", "cmd": cmd}], "source": "unified_exec_startup",
                             "status": "failed" if failed else "completed", "aggregated_output": output,
                             "exit_code": code, "duration": {"secs": int(duration), "nanos": rng.randint(0, 999999)}})
        wrapped = (f"Chunk ID: {w.hexid(6)}\nWall time: {duration:.4f} seconds\nProcess exited with code {code}\n"
                   f"Original token count: {len(output) // 4}\nOutput:\n{output}")
        self.emit("response_item", {"type": "function_call_output", "id": f"fco_{self.new_id()}", "call_id": call_id,
                                    "output": wrapped,
                                    "internal_chat_message_metadata_passthrough": self.passthrough()},
                  self.meta(fallback_token_limit_override=3000))
        self.count(last)

    def apply_patch(self) -> None:
        w = self.w
        path = w.path("src", "py")
        body = "\n".join(line for line in w.diff(path, w.sized((900, 0.8), 20000)).split("\n")[2:])
        patch = f"*** Begin Patch\n*** Update File: {path}\n{body}\n*** End Patch\n"
        call_id = f"call_{w.hexid(24)}"
        self.emit("response_item", {"type": "custom_tool_call", "status": "completed", "id": f"ctc_{w.hexid(24)}",
                                    "call_id": call_id, "name": "apply_patch", "input": patch,
                                    "internal_chat_message_metadata_passthrough": self.passthrough(created=False)},
                  self.meta(user_input_order=self.history - 1))
        last = self.usage()
        self.emit("response_item", {"type": "custom_tool_call_output", "id": f"ctco_{self.new_id()}",
                                    "call_id": call_id, "output": f"Success. Updated the following files:\nM {path}\n",
                                    "internal_chat_message_metadata_passthrough": self.passthrough()},
                  self.meta())
        self.count(last)

    def count(self, last: dict) -> None:
        self.emit("event_msg", {"type": "token_count", "info": {
            "total_token_usage": dict(self.thread_usage), "last_token_usage": last,
            "last_usage_includes_reasoning": False, "model_context_window": 258400},
            "rate_limits": {"limit_id": "codex", "limit_name": None, "primary": None, "secondary": None,
                            "credits": None, "individual_limit": None, "spend_control_reached": None,
                            "plan_type": None, "rate_limit_reached_type": None}})


def write_rollout(w: Writing, sessions: Path, cwd: str, opening: list[Template]) -> int:
    rng = w.rng
    rollout = Rollout(w, cwd, opening)
    started = datetime.fromtimestamp(rollout.clock.now, UTC)
    rollout.write(turns=max(1, min(100, int(rng.lognormvariate(1.8, 0.9)))))
    folder = sessions / f"{started:%Y}" / f"{started:%m}" / f"{started:%d}"
    folder.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(rollout.lines) + b"\n"
    (folder / f"rollout-{started:%Y-%m-%dT%H-%M-%S}-{rollout.thread}.jsonl").write_bytes(data)
    return len(data)


def generate(sessions: Path, target_bytes: int, w: Writing, repos: list[str]) -> int:
    opening = opening_templates()
    written = 0
    while written < target_bytes:
        written += write_rollout(w, sessions, w.rng.choice(repos), opening)
    return written
