"""``harvester mcp`` answers ``initialize`` before it imports the MCP SDK (harvester/recall/mcp_start.py): the
answer is the SDK's own, whatever revision the client asks for, the session goes on in the SDK from that
first message, and the module that answers imports nothing heavy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from harvester.recall.mcp_start import HANDSHAKE_PROTOCOL_VERSIONS, initialize_result

ROOT = Path(__file__).resolve().parent.parent


def _talk(tmp_path: Path, lines: list[bytes], answers: int) -> tuple[list[dict[str, Any]], str]:
    """Each line written once the answers to the lines before it were read (as a host waits for initialize's);
    ``answers`` in all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_"))}
    env.update(HOME=str(tmp_path), HARVESTER_BANK=str(tmp_path / "none.sqlite"), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        replies = []
        for line in lines:
            proc.stdin.write(line)
            proc.stdin.flush()
            if b'"id"' in line and len(replies) < answers:
                replies.append(orjson.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return replies, proc.stderr.read().decode()


def _initialize(version: str, ident: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {"roots": {}},
                       "clientInfo": {"name": "host", "version": "1"}}}


def test_the_revisions_answered_without_the_sdk_are_the_sdks() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS as sdks

    assert sdks == HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01"])
def test_initialize_is_answered_as_the_sdk_answers_it_and_the_session_goes_on(tmp_path: Path, version: str) -> None:
    request = _initialize(version, ident="first")
    lines = [orjson.dumps(request) + b"\n", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
             b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n']
    replies, stderr = _talk(tmp_path, lines, 2)
    assert replies[0] == {"jsonrpc": "2.0", "id": "first", "result": initialize_result(request["params"])}
    assert replies[0]["result"]["protocolVersion"] == (version if version in HANDSHAKE_PROTOCOL_VERSIONS
                                                       else HANDSHAKE_PROTOCOL_VERSIONS[-1])
    assert replies[1]["id"] == 2 and {t["name"] for t in replies[1]["result"]["tools"]} >= {"handoff", "search_history"}
    assert "differs" not in stderr  # the SDK's own answer to the same request, compared and not written


def test_a_first_line_that_is_no_initialize_is_left_to_the_sdk(tmp_path: Path) -> None:
    lines = [b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n', orjson.dumps(_initialize("2025-06-18", 7))
             + b"\n", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
             b'{"jsonrpc":"2.0","id":8,"method":"ping"}\n']
    replies, _ = _talk(tmp_path, lines, 2)
    assert replies[0]["id"] == 7 and replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1] == {"jsonrpc": "2.0", "id": 8, "result": {}}


def test_an_initialize_the_sdk_refuses_is_refused_by_it(tmp_path: Path) -> None:
    bad = {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    replies, _ = _talk(tmp_path, [orjson.dumps(bad) + b"\n"], 1)
    assert replies[0]["id"] == 3 and replies[0].get("error")


def test_what_answers_initialize_imports_no_sdk() -> None:
    code = ("import json, sys, harvester.recall.mcp_start, harvester.cli.agents; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic', 'anyio') "
            "or m.startswith(('harvester.recall.mcp', 'harvester.bank')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert orjson.loads(out) == ["harvester.recall.mcp_start"]
