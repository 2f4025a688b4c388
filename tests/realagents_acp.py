"""``python tests/realagents_acp.py <cline executable> <prompt>``: one more turn of the latest Cline session.

Cline CLI 3.x has no headless continue: ``--id <session>`` always opens the terminal UI and drops the
prompt. Its ACP mode (``cline --acp``: the Agent Client Protocol editors speak, JSON-RPC 2.0 as one JSON
object per line on stdio) loads a stored session and prompts it without a terminal. This driver, run in
the repo with the agent's environment, does what an editor would:

1. ``initialize``; ``session/load`` {sessionId, cwd, mcpServers: []} with the newest root session of this
   cwd in ``<data>/db/sessions.db`` (the agent replays the history as ``session/update`` notifications);
2. ``session/set_model`` {modelId}: the model of providers.json (ACP would take the provider catalog's
   default, ``gpt-4o`` for ``openai-compatible``);
3. ``session/prompt`` {prompt: [{type: text}]}: the turn; its result's ``stopReason`` ends it.

ACP checks credentials of its own before any session: ``CLINE_API_KEY`` (a dummy) passes that check and
``CLINE_PROVIDER`` names the provider whose stored settings (base URL) it then uses. Tools are approved by
``--auto-approve true``; a permission request that still comes gets the first option it offers.
The agent runs as a child in this process group: killing the group kills both. Stdlib only (the cwd is
the agent's repo, not this project). Exit status 0 when the turn ended (``end_turn``), else 1.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

TIMEOUT = 240  # seconds for one request; the caller's own timeout is the real limit


def data_dir(env: dict[str, str]) -> Path:
    if env.get("CLINE_DATA_DIR", "").strip():
        return Path(env["CLINE_DATA_DIR"].strip())
    return Path(env.get("CLINE_DIR", "").strip() or Path(env["HOME"]) / ".cline") / "data"


def latest_session(data: Path, cwd: Path) -> str:
    conn = sqlite3.connect(f"file:{data / 'db' / 'sessions.db'}?mode=ro", uri=True, timeout=10)
    try:
        row = conn.execute(
            "SELECT session_id FROM sessions WHERE cwd IN (?, ?) AND parent_session_id IS NULL "
            "ORDER BY started_at DESC LIMIT 1", (str(cwd), os.path.realpath(cwd))).fetchone()
    finally:
        conn.close()
    if row is None:
        raise SystemExit(f"no Cline session of {cwd} in {data}")
    return str(row[0])


def stored_model(data: Path) -> str | None:
    try:
        settings = json.loads((data / "settings" / "providers.json").read_text())
    except (OSError, ValueError):
        return None
    provider = settings.get("providers", {}).get(settings.get("lastUsedProvider"), {})
    return provider.get("settings", {}).get("model")


class Acp:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc, self.inbox, self.n = proc, queue.Queue[dict[str, Any]](), 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                print(line, end="", file=sys.stderr)

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        self._write({"id": self.n, "method": method, "params": params})
        while True:
            message = self.inbox.get(timeout=TIMEOUT)
            if message.get("id") == self.n and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message.get("result") or {}
            if message.get("method") == "session/request_permission" and "id" in message:
                options = message["params"].get("options") or [{}]
                outcome = {"outcome": "selected", "optionId": options[0].get("optionId")}
                self._write({"id": message["id"], "result": {"outcome": outcome}})
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk" and self.n > 2:  # not the replay
                print((update.get("content") or {}).get("text", ""), end="", flush=True)


def main(argv: list[str]) -> int:
    executable, prompt = argv
    cwd, env = Path.cwd(), dict(os.environ)
    data = data_dir(env)
    session = latest_session(data, cwd)
    env.setdefault("CLINE_API_KEY", "dummy")
    env.setdefault("CLINE_PROVIDER", json.loads((data / "settings" / "providers.json").read_text())
                   .get("lastUsedProvider", "cline"))
    proc = subprocess.Popen([executable, "--acp", "--auto-approve", "true"], cwd=cwd, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        acp = Acp(proc)
        acp.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})
        acp.call("session/load", {"sessionId": session, "cwd": str(cwd), "mcpServers": []})
        if model := stored_model(data):
            acp.call("session/set_model", {"sessionId": session, "modelId": model})
        result = acp.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]})
        print()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return 0 if result.get("stopReason") == "end_turn" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
