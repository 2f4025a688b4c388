"""The fake model server's Chat Completions and Gemini protocols, over HTTP (no agent needed)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakellm import FakeLLM

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read",
        "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}},
    },
}


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def post(llm: FakeLLM, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        llm.base_url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def sse(data: bytes) -> list[Any]:
    lines = [line[6:] for line in data.decode().splitlines() if line.startswith("data: ")]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def test_chat_streams_one_tool_call_then_quotes_the_result(llm: FakeLLM) -> None:
    messages = [{"role": "user", "content": '"READ_FILE /tmp/x/notes.txt"'}]  # opencode quotes the prompt
    body = {"model": "m", "messages": messages, "tools": [READ_TOOL], "stream": True}
    kind, data = post(llm, "/v1/chat/completions", {**body, "stream_options": {"include_usage": True}})
    chunks = sse(data)
    assert kind == "text/event-stream" and chunks[-1] == "[DONE]"
    assert chunks[-2]["choices"] == [] and chunks[-2]["usage"]["total_tokens"] > 0
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    deltas = [c["choices"][0]["delta"].get("tool_calls") for c in chunks[:-2] if c["choices"]]
    calls = [call for d in deltas if d for call in d]
    assert calls[0]["id"].startswith("call_") and calls[0]["function"]["name"] == "read"
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"filePath": "/tmp/x/notes.txt"}

    call = {"id": calls[0]["id"], "type": "function", "function": {"name": "read", "arguments": arguments}}
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "The secret word is pelican."},
    ]
    _, data = post(llm, "/v1/chat/completions", {**body, "messages": messages, "stream": False})
    choice = json.loads(data)["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"] == "The file says: The secret word is pelican."


def test_chat_reasoning_json_and_titles(llm: FakeLLM) -> None:
    think = {"model": "m", "messages": [{"role": "user", "content": "THINK then say hi"}], "stream": True}
    deltas = [c["choices"][0]["delta"] for c in sse(post(llm, "/v1/chat/completions", think)[1])[:-1]]
    assert any("reasoning_content" in d for d in deltas) and any(d.get("content") for d in deltas)

    ask = {"model": "m", "messages": [{"role": "user", "content": "classify"}]}
    fmt = {"type": "json_object"}
    answer = json.loads(post(llm, "/v1/chat/completions", {**ask, "response_format": fmt})[1])
    assert isinstance(json.loads(answer["choices"][0]["message"]["content"]), dict)

    system = {"role": "system", "content": "You are a title generator. Answer JSON-free."}
    title = {"model": "m", "messages": [system, {"role": "user", "content": "READ_FILE /a/b.txt"}]}
    answer = json.loads(post(llm, "/v1/chat/completions", title)[1])
    assert answer["choices"][0]["message"]["content"] == "Fake session title"


def test_chat_without_tools_asks_for_the_file_then_quotes_it(llm: FakeLLM) -> None:
    """Aider: no tools; it adds the named file to the chat and asks again."""
    ask = [{"role": "user", "content": "READ_FILE /repo/notes.txt"}]
    first = json.loads(post(llm, "/v1/chat/completions", {"model": "m", "messages": ask})[1])
    assert "notes.txt" in first["choices"][0]["message"]["content"]
    again = [
        *ask,
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": "notes.txt\n```\nThe secret word is pelican.\n```\n"},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "I added these files to the chat: notes.txt\nLet me know..."},
    ]
    answer = json.loads(post(llm, "/v1/chat/completions", {"model": "m", "messages": again})[1])
    assert answer["choices"][0]["message"]["content"] == "The file says: The secret word is pelican."


def test_gemini_router_json_tool_call_and_function_response(llm: FakeLLM) -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
    }
    router = {
        "contents": [{"role": "user", "parts": [{"text": "READ_FILE /r/notes.txt"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema},
    }
    answer = json.loads(post(llm, "/v1beta/models/gemini-x:generateContent", router)[1])
    routed = json.loads(answer["candidates"][0]["content"]["parts"][0]["text"])
    assert isinstance(routed["complexity_reasoning"], str) and 1 <= routed["complexity_score"] <= 100

    tools = [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {
        "type": "object", "properties": {"file_path": {"type": "string"}}}}]}]  # fmt: skip
    turn = {"contents": router["contents"], "tools": tools}
    path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    chunks = sse(post(llm, path, turn)[1])
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert parts == [{"functionCall": {"name": "read_file", "args": {"file_path": "/r/notes.txt"}}}]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in chunks[-1]

    response = {"functionResponse": {"name": "read_file", "response": {"output": "pelican"}}}
    turn["contents"] = [
        *turn["contents"],
        {"role": "model", "parts": parts},
        {"role": "user", "parts": [response]},
    ]
    final = json.loads(post(llm, "/v1beta/models/gemini-x:generateContent", turn)[1])
    assert final["candidates"][0]["content"]["parts"] == [{"text": "The file says: pelican"}]

    think = {"contents": [{"role": "user", "parts": [{"text": "THINK, then say hi"}]}]}
    parts = json.loads(post(llm, "/v1beta/models/gemini-x:generateContent", think)[1])["candidates"][0]
    assert parts["content"]["parts"][0]["thought"] is True


def test_model_lists(llm: FakeLLM) -> None:
    with urllib.request.urlopen(llm.base_url + "/v1beta/models", timeout=10) as response:
        names = [m["name"] for m in json.loads(response.read())["models"]]
    assert "models/fake-model" in names
    with urllib.request.urlopen(llm.base_url + "/v1/models", timeout=10) as response:
        assert json.loads(response.read())["object"] == "list"


def test_batch_reader_gets_one_file_entry() -> None:
    from tests.fakellm.script import Tool, read_call

    entry = {"type": "object", "properties": {"path": {"type": "string"}, "start_line": {}}}
    files = {"files": {"type": "array", "items": entry}}
    tools = [Tool("run_commands", {"properties": {"commands": {}}}), Tool("read_files", {"properties": files})]
    call = read_call(tools, "/tmp/x/notes.txt")
    assert call is not None and (call.name, call.arguments) == ("read_files", {"files": [{"path": "/tmp/x/notes.txt"}]})


def test_editor_with_a_view_command_is_preferred_to_the_shell() -> None:
    """OpenHands offers terminal{command} before file_editor{command: enum, path, security_risk (required)}."""
    from tests.fakellm.script import Tool, read_call

    risk = {"type": "string", "enum": ["LOW", "MEDIUM", "HIGH"]}
    terminal = Tool("terminal", {"properties": {"command": {"type": "string"}, "security_risk": risk},
                                 "required": ["command", "security_risk"]})
    editor = Tool("file_editor", {"properties": {"command": {"type": "string", "enum": ["view", "create"]},
                                                 "path": {"type": "string"}, "security_risk": risk},
                                  "required": ["command", "path", "security_risk"]})
    call = read_call([terminal, editor], "/tmp/x/notes.txt")
    assert call is not None and call.name == "file_editor"
    assert call.arguments == {"command": "view", "path": "/tmp/x/notes.txt", "security_risk": "LOW"}


def test_batch_task_tool_gets_one_task() -> None:
    from tests.fakellm.script import Conversation, Tool, decide

    item = {"type": "object", "properties": {"task": {"type": "string"}, "name": {"type": "string"}},
            "required": ["task"]}
    schema = {"properties": {"i": {"type": "string"}, "context": {"type": "string"},
                             "tasks": {"type": "array", "items": item}}, "required": ["context", "tasks", "i"]}
    reply = decide(Conversation(prompt="SPAWN_AGENT say hi", tools=[Tool("task", schema)]))
    assert reply.tool_call is not None and reply.tool_call.arguments["tasks"] == [{"task": "say hi"}]


def test_task_tool_with_description_only_gets_the_prompt() -> None:
    from tests.fakellm.script import Conversation, Tool, decide

    # dcode's task tool: the description is the subagent's whole prompt; subagent_type a required string.
    schema = {"properties": {"description": {"type": "string"}, "subagent_type": {"type": "string"}},
              "required": ["description", "subagent_type"]}
    reply = decide(Conversation(prompt="SPAWN_AGENT say hi", tools=[Tool("task", schema)]))
    assert reply.tool_call is not None
    assert reply.tool_call.arguments == {"description": "say hi", "subagent_type": "general-purpose"}


def test_openclaw_runtime_context_after_the_prompt_is_looked_past() -> None:
    from tests.fakellm.openai_chat import OPENCLAW_CONTEXT, conversation

    context = {"role": "user", "content": [{"type": "text", "text": f"{OPENCLAW_CONTEXT}\nActive exec sessions"}]}
    body = {"messages": [{"role": "user", "content": "[Sun 2026-11-29 18:00 UTC] READ_FILE /tmp/n.txt"}, context],
            "tools": [READ_TOOL]}
    assert conversation(body).prompt.endswith("READ_FILE /tmp/n.txt")


# ------------------------------------------------ USE_TOOL_NAMED: a named tool of the list, in every protocol

NAMED = 'USE_TOOL_NAMED:handoff:{"harness": "claude-code"} then USE_TOOL_NAMED:search_history:{"query": "zebra"}'
# Our server's tools as each agent offers them (seen in the e2e runs; Claude Code's from its MCP rules), after
# tools of its own whose names must not be picked (Gemini CLI's grep_search, google_web_search).
PREFIX = {"anthropic": "mcp__harvester__", "chat": "harvester_", "gemini": "mcp_harvester_", "responses": ""}
OWN_TOOLS = ("read_file", "grep_search", "google_web_search")


def _offered(protocol: str) -> list[str]:
    return [*OWN_TOOLS, *(PREFIX[protocol] + n for n in ("recent_sessions", "handoff", "search_history"))]


def test_named_directives_are_read_in_order_with_their_arguments() -> None:
    from tests.fakellm.script import Directive, named_directives

    assert named_directives(NAMED) == [Directive("handoff", {"harness": "claude-code"}),
                                       Directive("search_history", {"query": "zebra"})]
    assert named_directives("USE_TOOL_NAMED:ping:{}") == [Directive("ping", {})]
    # opencode quotes a spaced prompt; one stored escaped still gives the object
    assert named_directives('"USE_TOOL_NAMED:x:{\\"a\\": 1} more"') == [Directive("x", {"a": 1})]
    assert named_directives("USE_TOOL_NAMED:x:[1] USE_TOOL_NAMED:y:nope") == []


def test_no_tool_of_that_name_says_what_was_offered() -> None:
    from tests.fakellm.script import Conversation, Tool, decide

    reply = decide(Conversation(prompt="USE_TOOL_NAMED:handoff:{}", tools=[Tool("read", {})]))
    assert reply.tool_call is None and reply.text == "No offered tool's name contains 'handoff'. Offered: read"


def _anthropic_turn(llm: FakeLLM, messages: list[dict[str, Any]]) -> tuple[str, Any]:
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in _offered("anthropic")]
    events = sse(post(llm, "/v1/messages", {"model": "m", "messages": messages, "tools": tools, "stream": True})[1])
    blocks: dict[int, dict[str, Any]] = {}
    for e in events:
        if e["type"] == "content_block_start":
            blocks[e["index"]] = {**e["content_block"], "partial": ""}
        elif e["type"] == "content_block_delta":
            delta = e["delta"]
            blocks[e["index"]]["partial"] += delta.get("partial_json") or delta.get("text") or ""
    block = blocks[0]
    if block["type"] == "tool_use":
        call = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": json.loads(block["partial"])}
        result = {"type": "tool_result", "tool_use_id": block["id"], "content": [{"type": "text", "text": "R:" +
                                                                                  block["name"]}]}
        messages += [{"role": "assistant", "content": [call]},
                     {"role": "user", "content": [result, {"type": "text", "text": "<system-reminder>x"}]}]
        return block["name"], call["input"]
    return "text", block["partial"]


def _chat_turn(llm: FakeLLM, messages: list[dict[str, Any]]) -> tuple[str, Any]:
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
             for n in _offered("chat")]
    message = json.loads(post(llm, "/v1/chat/completions", {"model": "m", "messages": messages,
                                                            "tools": tools})[1])["choices"][0]["message"]
    if calls := message.get("tool_calls"):
        function = calls[0]["function"]
        messages += [{"role": "assistant", "content": None, "tool_calls": calls},
                     {"role": "tool", "tool_call_id": calls[0]["id"], "content": "R:" + function["name"]}]
        return function["name"], json.loads(function["arguments"])
    return "text", message["content"]


def _responses_turn(llm: FakeLLM, items: list[dict[str, Any]]) -> tuple[str, Any]:
    # Codex 0.171 offers an MCP server's tools in a namespace (mcp__<server>): the call must name it again.
    tools: list[dict[str, Any]] = [{"type": "function", "name": n, "parameters": {}} for n in OWN_TOOLS]
    tools.append({"type": "namespace", "name": "mcp__harvester", "tools": [
        {"type": "function", "name": n, "parameters": {}} for n in _offered("responses")[len(OWN_TOOLS):]]})
    events = sse(post(llm, "/v1/responses", {"model": "m", "input": items, "tools": tools, "stream": True})[1])
    item = next(e["item"] for e in events if e["type"] == "response.output_item.done")
    if item["type"] == "function_call":
        assert item["namespace"] == "mcp__harvester"
        items += [item, {"type": "function_call_output", "call_id": item["call_id"], "output": "R:" + item["name"]}]
        return item["name"], json.loads(item["arguments"])
    return "text", item["content"][0]["text"]


def _gemini_turn(llm: FakeLLM, contents: list[dict[str, Any]]) -> tuple[str, Any]:
    tools = [{"functionDeclarations": [{"name": n, "parametersJsonSchema": {"type": "object"}}
                                       for n in _offered("gemini")]}]
    path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    parts = [p for c in sse(post(llm, path, {"contents": contents, "tools": tools})[1])
             for p in c["candidates"][0]["content"]["parts"]]
    if call := parts[0].get("functionCall"):
        response = {"functionResponse": {"name": call["name"], "response": {"output": "R:" + call["name"]}}}
        contents += [{"role": "model", "parts": parts}, {"role": "user", "parts": [response]}]
        return call["name"], call["args"]
    return "text", parts[0]["text"]


@pytest.mark.parametrize("protocol", ["anthropic", "chat", "responses", "gemini"])
def test_two_named_tools_are_called_in_turn_then_the_last_result_is_quoted(llm: FakeLLM, protocol: str) -> None:
    turn, first = {
        "anthropic": (_anthropic_turn, {"role": "user", "content": [{"type": "text", "text": NAMED}]}),
        "chat": (_chat_turn, {"role": "user", "content": NAMED}),
        "responses": (_responses_turn, {"type": "message", "role": "user",
                                        "content": [{"type": "input_text", "text": NAMED}]}),
        "gemini": (_gemini_turn, {"role": "user", "parts": [{"text": NAMED}]}),
    }[protocol]
    history: list[dict[str, Any]] = [first]
    answers = [turn(llm, history) for _ in range(3)]
    prefix = PREFIX[protocol]
    assert answers[0] == (f"{prefix}handoff", {"harness": "claude-code"})
    assert answers[1] == (f"{prefix}search_history", {"query": "zebra"})
    assert answers[2] == ("text", f"The tool {prefix}search_history says: R:{prefix}search_history")
    # A new turn without a directive: the earlier directives are done with.
    history.append({"chat": {"role": "user", "content": "say hi"}, "anthropic": {"role": "user", "content": "say hi"},
                    "responses": {"type": "message", "role": "user", "content": "say hi"},
                    "gemini": {"role": "user", "parts": [{"text": "say hi"}]}}[protocol])
    assert turn(llm, history)[0] == "text"
