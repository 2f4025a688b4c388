"""``python tests/realagents_dsh_web.py <dsh executable> <prompt>``: one more turn of the latest dsh session.

DeepSeek Harness 0.1.0-rc.8 has no headless resume: ``dsh --profile headless`` always starts a fresh
session, and the terminal profile is not published. Its web host (``dsh web``) serves the API every client
uses (``POST /api/<method>`` with ``{"type": "client-request", rpcId, method, payload}``) and resumes a
stored session when it is prompted. This driver, run in the repo with the agent's environment, does what
the browser UI would:

1. ``dsh web --no-open --port 0`` (the host prints ``dsh web: http://127.0.0.1:<port>``);
2. ``session.list``: the newest session of this cwd (``updatedAt``); ``session.history``: its last seq;
3. ``session.prompt`` {sessionId, mode: queue, content: [{type: text}]}: the turn (dsh resumes the session,
   writing ``session/end-seed``; the message carries ``source {kind: user, rpcId}``);
4. ``session.history`` until a ``turn/end`` after that seq; then SIGTERM to the host.

The host runs as a child in this process group: killing the group kills both. Stdlib only (the cwd is
the agent's repo, not this project). Prints the turn's last assistant text; exit status 0 when the turn
ended ``completed``, else 1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any

TIMEOUT = 240  # seconds for the turn; the caller's own timeout is the real limit
READY = re.compile(r"dsh web: (http://\S+)")


def call(base: str, method: str, payload: dict[str, Any]) -> Any:
    body = {"type": "client-request", "rpcId": f"driver-{time.monotonic_ns()}", "method": method,
            "payload": payload}
    request = urllib.request.Request(f"{base}/api/{method}", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        result = json.loads(response.read())["result"]
    if not result.get("ok"):
        raise SystemExit(f"{method} failed: {result.get('error')}")
    return result.get("value")


def history(base: str, session: str) -> list[dict[str, Any]]:
    value = call(base, "session.history", {"sessionId": session})
    return [item["event"] for item in value.get("events", []) if isinstance(item.get("event"), dict)]


def latest_session(base: str, cwd: str) -> str:
    items = [i for i in call(base, "session.list", {})["items"]
             if i.get("cwd") in (cwd, os.path.realpath(cwd)) and not i.get("parentSessionId")]
    if not items:
        raise SystemExit(f"no dsh session of {cwd}")
    return str(max(items, key=lambda i: i["updatedAt"])["sessionId"])


def turn(base: str, prompt: str) -> int:
    session = latest_session(base, os.getcwd())
    before = max((e.get("seq", -1) for e in history(base, session)), default=-1)
    call(base, "session.prompt", {"sessionId": session, "mode": "queue",
                                  "content": [{"type": "text", "text": prompt}]})
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        events = [e for e in history(base, session) if e.get("seq", -1) > before]
        ended = [e for e in events if e.get("type") == "turn/end"]
        if ended:
            texts = ["".join(b.get("text", "") for b in e["data"]["message"]["content"] if b.get("type") == "text")
                     for e in events if e.get("type") == "assistant/message"]
            print(next((t for t in reversed(texts) if t), ""), flush=True)
            return 0 if ended[-1]["data"]["reason"]["kind"] == "completed" else 1
        time.sleep(0.2)
    raise SystemExit("the turn did not end in time")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    executable, prompt = argv
    host = subprocess.Popen([executable, "web", "--no-open", "--port", "0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        for line in host.stdout:
            if m := READY.search(line):
                return turn(m.group(1).rstrip("/"), prompt)
        raise SystemExit(f"dsh web exited {host.wait()} before serving")
    finally:
        if host.poll() is None:
            host.send_signal(signal.SIGTERM)
            try:
                host.wait(timeout=30)
            except subprocess.TimeoutExpired:
                host.kill()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
