"""``python -m tests.realagents_rpc pi|oh-my-pi``: two real sessions beyond what print mode records.

- ``rpc``: pi and oh-my-pi record more than prompts: a model or thinking level chosen mid-session, the
  user's ``!command``, a session name, a compaction, a fork. Their RPC mode (``--mode rpc``: JSON commands
  on stdin, responses and events on stdout) does each of these as the interactive commands would, against
  :mod:`tests.fakellm` and a second fake model.
- ``interrupted``: a print-mode turn, then a ``--continue`` turn whose answer never comes, stopped with
  SIGTERM after a few seconds (what the agent writes when it is told to stop mid-turn).

Each store is copied to ``fixtures/pi/<member>/real/<scenario>/`` as :mod:`tests.realagents_capture`
copies its scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests import realagents
from tests.fakellm.server import FakeLLM
from tests.realagents_capture import FIXTURES, FOLDERS, _copy_store

SECOND = "fake-model-2"
# (command, arguments); {repo} is the repo's path. "prompt" waits for the run to end; "fork" forks the
# session at its second user prompt and goes on in the new file (pi: fork, oh-my-pi: branch).
STEPS: list[tuple[str, dict[str, Any]]] = [
    ("prompt", {"message": "say hi"}),
    ("set_thinking_level", {"level": "low"}),
    ("set_model", {"provider": "fakellm", "modelId": SECOND}),
    ("bash", {"command": "echo rpc bash"}),
    ("prompt", {"message": "READ_FILE {repo}/notes.txt"}),
    ("set_session_name", {"name": "rpc demo"}),
    ("compact", {}),
    ("prompt", {"message": "say bye"}),
    ("fork", {}),
    ("prompt", {"message": "say hi from the fork"}),
]


class Rpc:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc, self.lines, self.n = proc, queue.Queue[dict[str, Any]](), 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                continue

    def send(self, kind: str, timeout: float = 60, **args: Any) -> dict[str, Any]:
        """Send one command; wait for its response (and, for a prompt, for the run to end)."""
        self.n += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": f"c{self.n}", "type": kind, **args}) + "\n")
        self.proc.stdin.flush()
        response, ended, deadline = None, kind != "prompt", time.monotonic() + timeout
        while response is None or not ended:
            record = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if record.get("type") == "response" and record.get("id") == f"c{self.n}":
                response = record
            ended = ended or record.get("type") == "agent_end"
        if not response.get("success"):
            raise RuntimeError(f"{kind}: {response}")
        return response


def _configure(name: str, root: Path) -> None:
    """A second model to switch to; a small recent part kept by compaction (else: nothing to compact)."""
    if name == "pi":
        config = json.loads((root / "models.json").read_text())
        config["providers"]["fakellm"]["models"].append({"id": SECOND, "reasoning": True})
        (root / "models.json").write_text(json.dumps(config, indent=2) + "\n")
        settings = json.loads((root / "settings.json").read_text())
        (root / "settings.json").write_text(json.dumps({**settings, "compaction": {"keepRecentTokens": 50}}))
    else:
        with (root / "models.yml").open("a") as f:
            f.write(f"      - id: {SECOND}\n        reasoning: true\n")
        with (root / "config.yml").open("a") as f:
            f.write("compaction:\n  keepRecentTokens: 50\n")


def capture(name: str, work: Path) -> list[str]:
    spec = realagents.AGENTS[name]
    tmp = Path(tempfile.mkdtemp(prefix=f"cap-{name}-rpc-", dir="/tmp"))
    home, repo = tmp / "home", realagents.make_repo(tmp)
    done = []
    with FakeLLM(log=tmp / "requests.jsonl") as llm:
        realagents.write_config(spec, home, llm.port)
        _configure(name, realagents.store_root(spec, home))
        proc = subprocess.Popen(
            [str(realagents.install(spec)), "--mode", "rpc"], cwd=repo, text=True, start_new_session=True,
            env={**realagents.agent_env(spec, home, llm.port), "PWD": str(repo)},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=(tmp / "stderr.txt").open("w"))
        rpc = Rpc(proc)
        try:
            for kind, args in STEPS:
                if kind == "fork":
                    listed = rpc.send("get_fork_messages" if name == "pi" else "get_branch_messages")
                    entry = listed["data"]["messages"][1]["entryId"]
                    rpc.send("fork" if name == "pi" else "branch", entryId=entry)
                else:
                    rpc.send(kind, **{k: v.format(repo=repo) if isinstance(v, str) else v
                                      for k, v in args.items()})
                done.append(kind)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                realagents.kill(proc)
    print(_copy_store(spec, home, repo, FIXTURES / FOLDERS[name] / "real" / "rpc"))
    shutil.rmtree(work / f"{name}-rpc", ignore_errors=True)
    shutil.copytree(tmp, work / f"{name}-rpc", symlinks=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return done


def interrupted(name: str, work: Path) -> list[int | None]:
    spec = realagents.AGENTS[name]
    tmp = Path(tempfile.mkdtemp(prefix=f"cap-{name}-interrupted-", dir="/tmp"))
    home, repo = tmp / "home", realagents.make_repo(tmp)
    with FakeLLM(log=tmp / "requests.jsonl") as llm:
        realagents.write_config(spec, home, llm.port)
        first = realagents.run(spec, realagents.prompt_args(spec, "say hi"), cwd=repo, home=home, port=llm.port)
        args = realagents.prompt_args(spec, "SLOW 30 a turn that never finishes", resume=True)
        proc = realagents.popen(spec, args, repo, home, llm.port)
        time.sleep(8)  # started, prompt stored, waiting for the model
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            realagents.kill(proc)
    print(_copy_store(spec, home, repo, FIXTURES / FOLDERS[name] / "real" / "interrupted"))
    shutil.rmtree(work / f"{name}-interrupted", ignore_errors=True)
    shutil.copytree(tmp, work / f"{name}-interrupted", symlinks=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return [first.returncode, proc.returncode]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realagents_rpc", description=__doc__)
    parser.add_argument("agent", choices=list(FOLDERS))
    parser.add_argument("--scenario", choices=("rpc", "interrupted"), action="append", help="default: both")
    parser.add_argument("--work", type=Path, default=Path("/tmp/realagents-capture"))
    args = parser.parse_args(argv)
    for scenario in args.scenario or ["rpc", "interrupted"]:
        print(scenario, (capture if scenario == "rpc" else interrupted)(args.agent, args.work))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
