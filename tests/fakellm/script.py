"""What the fake model says, independent of the wire protocol.

Each protocol module turns its request into a :class:`Conversation` and renders the :class:`Reply` that
:func:`decide` returns. Markers in the current user prompt steer the answer:

``READ_FILE <path>``
    Answer with exactly one tool call that reads ``path``, using a tool the agent offered.
``THINK``
    Start the answer with a thinking / reasoning block.
``SPAWN_AGENT [prompt]``
    Call the agent's sub-agent tool (Claude Code ``Agent``/``Task``) with ``prompt`` (default: say hi).
``SLOW <seconds>``
    Wait that long before answering (to observe an agent mid-turn); the default answer then says it was slow.
``TOKENS <n>``
    Report ``n`` input tokens in the usage of this answer (to push an agent into auto-compaction).
``USE_TOOL_NAMED:<substring>:<json object>``
    Call the first offered tool whose name contains ``substring`` (agents name MCP tools their own way:
    ``mcp__harvester__handoff``, ``harvester__handoff``, ``harvester_handoff``, ``handoff``), with that
    object as its arguments (``{}`` allowed). A prompt may hold several: they are called in turn within the
    one user turn, each after the previous one's result (the calls made since the prompt say how far along).

Once the conversation ends with a tool result (the last directive's, if any), the answer is a final text
quoting that result.
Side requests get a fitting answer: a title request a title, a request for JSON (a schema, a JSON mode,
or "json" in a tool-less prompt) valid JSON.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

# The path stops at a quote: opencode and Kilo store (and send) a spaced argument wrapped in quotes.
READ_FILE = re.compile(r"READ_FILE\s+([^\s\"'`]+)")
SPAWN_AGENT = re.compile(r"SPAWN_AGENT\b[ \t]*([^\n]*)")
SLOW = re.compile(r"SLOW\s+(\d+(?:\.\d+)?)")
TOKENS = re.compile(r"TOKENS\s+(\d+)")
# The substring stops at a colon or a space; the JSON object after the second colon is read by a JSON decoder.
USE_TOOL_NAMED = re.compile(r"USE_TOOL_NAMED:([^:\s]+):")

DEFAULT_TEXT = "Hi! I am the fake model. Nothing else to report."
TITLE = "Fake session title"
SUBAGENT_PROMPT = "Say hi from the subagent."
READER_NAMES = ("read", "read_file", "readfile", "view", "view_file", "read_text_file")
PATH_KEYS = ("file_path", "absolute_path", "filePath", "filepath", "path", "filename", "file")
SUBAGENT_TOOLS = ("Agent", "Task", "spawn_agent", "task", "subagent", "delegate_task")  # dsh, Hermes


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    schema: dict[str, Any]  # JSON schema of the arguments (may be empty)
    namespace: str | None = None  # Responses API tool namespaces (Codex ``multi_agent_v1``)

    @property
    def properties(self) -> dict[str, Any]:
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}


@dataclass(slots=True)
class Conversation:
    """The few facts about a request that the script looks at."""

    prompt: str  # text of the last message if it is the user's; tool results excluded
    tools: list[Tool] = field(default_factory=list)
    system: str = ""
    tool_results: list[tuple[str, bool]] = field(default_factory=list)  # (content, is_error) when last
    json_schema: dict[str, Any] | None = None  # a structured-output schema the request demands
    result_of: str = ""  # name of the tool whose result ends the conversation
    json_mode: bool = False  # JSON asked for without a schema (``response_format: json_object``)
    # The user's text that opened this turn (``prompt`` while it is the last message; still there after the
    # tool results that followed it), and the names of the tools called since then, in order.
    asked: str = ""
    calls_since_asked: list[str] = field(default_factory=list)

    @property
    def ends_with_tool_result(self) -> bool:
        return bool(self.tool_results)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    thinking: str | None = None
    tool_call: ToolCall | None = None
    delay: float = 0.0
    input_tokens: int | None = None  # None: estimate from the request size


def decide(conv: Conversation) -> Reply:
    reply = _answer(conv)
    if m := SLOW.search(conv.prompt):
        reply = replace(reply, delay=float(m.group(1)))
        if reply.text == DEFAULT_TEXT:  # an answer of its own: one that does arrive is no repeat of an earlier one
            reply = replace(reply, text=f"Hi! I am the fake model, and slow ({m.group(1)} s).")
    if m := TOKENS.search(conv.prompt):
        reply = replace(reply, input_tokens=int(m.group(1)))
    return reply


def _answer(conv: Conversation) -> Reply:
    thinking = _thinking(conv.prompt) if "THINK" in conv.prompt else None
    if _is_compaction(conv):  # checked first: Claude Code asks for it right after a tool result
        return Reply(text=_SUMMARY, thinking=thinking)
    if conv.tools and (named := _named_tool_reply(conv)) is not None:  # before the tool-result branch: chains
        return named
    if conv.ends_with_tool_result:
        if conv.result_of == "spawn_agent" and (call := _wait_call(conv)):
            return Reply(tool_call=call)  # Codex: wait for the child, else exec ends and aborts it
        if conv.result_of == "task" and (call := _hub_wait(conv)):
            return Reply(tool_call=call)  # oh-my-pi: its task runs in the background, wait for it
        return Reply(text=_after_tool(conv))
    if "<subagent_notification>" in conv.prompt:  # Codex tells the parent that a child finished
        return Reply(text="The subagent has finished; nothing more to do.")
    if conv.json_schema is not None or conv.json_mode:
        return Reply(text=json.dumps(_json_answer(conv)))
    if _is_title_request(conv):  # before the JSON guess: opencode's title prompt mentions JSON
        return Reply(text=TITLE)
    if _wants_json(conv):
        return Reply(text=json.dumps(_json_answer(conv)))
    call = None
    if conv.tools and (m := SPAWN_AGENT.search(conv.prompt)):
        call = _spawn_call(conv.tools, m.group(1))
    if call is None and conv.tools and (m := READ_FILE.search(conv.prompt)):
        call = read_call(conv.tools, m.group(1))
        if call is None:
            return Reply(text="I was asked to read a file but no tool can read it.", thinking=thinking)
    if call is not None:
        return Reply(tool_call=call, thinking=thinking)
    return Reply(text=DEFAULT_TEXT, thinking=thinking)


@dataclass(frozen=True, slots=True)
class Directive:
    """One ``USE_TOOL_NAMED:<substring>:<json object>`` of a prompt."""

    substring: str
    arguments: dict[str, Any]


def named_directives(prompt: str) -> list[Directive]:
    """The prompt's ``USE_TOOL_NAMED`` directives in order; one whose arguments are no JSON object is left out."""
    found = []
    for m in USE_TOOL_NAMED.finditer(prompt):
        arguments = _json_object_at(prompt, m.end())
        if arguments is not None:
            found.append(Directive(m.group(1), arguments))
    return found


def _json_object_at(text: str, start: int) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    # As typed; else with the backslashes before quotes dropped (a prompt that an agent stored, and sent,
    # as a quoted, escaped string).
    for candidate in (text[start:], text[start:].replace('\\"', '"')):
        try:
            value, _ = decoder.raw_decode(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _named_tool_reply(conv: Conversation) -> Reply | None:
    """The next ``USE_TOOL_NAMED`` call of this turn, or the final text once all have their results; None
    when the turn has no directive (the other markers decide)."""
    directives = named_directives(conv.asked or conv.prompt)
    if not directives:
        return None
    done = 0  # directives already called: matched in order against the calls since the prompt
    for name in conv.calls_since_asked:
        if done < len(directives) and directives[done].substring in name:
            done += 1
    if done == len(directives):
        return Reply(text=_after_named(conv)) if conv.ends_with_tool_result else None
    wanted = directives[done]
    tool = next((t for t in conv.tools if wanted.substring in t.name), None)
    if tool is None:  # say what was offered: the e2e test shows the text when no call happens
        offered = ", ".join(t.name for t in conv.tools)
        return Reply(text=f"No offered tool's name contains {wanted.substring!r}. Offered: {offered}")
    return Reply(tool_call=ToolCall(tool.name, wanted.arguments, tool.namespace))


def _after_named(conv: Conversation) -> str:
    content, is_error = conv.tool_results[-1]
    snippet = " ".join(content.split())[:300]
    if is_error:
        return f"The tool reported an error: {snippet}"
    return f"The tool {conv.result_of or '(unnamed)'} says: {snippet}"


def read_call(tools: list[Tool], path: str) -> ToolCall | None:
    """One call that reads ``path``: a file-reading tool if offered, else a shell tool running ``cat``."""
    for tool in tools:
        if tool.name.lower() in READER_NAMES:
            for key in PATH_KEYS:
                if key in tool.properties:
                    return ToolCall(tool.name, {key: path})
    for tool in tools:  # an editor with a view command: OpenHands' file_editor{command: view|create|..., path}
        command = tool.properties.get("command")
        if isinstance(command, dict) and "view" in (command.get("enum") or []) and "path" in tool.properties:
            args: dict[str, Any] = {"command": "view", "path": path}
            for key in tool.schema.get("required", []):  # OpenHands asks for a security_risk with each call
                args.setdefault(key, schema_instance(tool.properties.get(key, {"type": "string"})))
            return ToolCall(tool.name, args)
    for tool in tools:  # a batch reader: Cline's read_files{files: [{path, start_line?, end_line?}]}
        files = tool.properties.get("files")
        item = (files.get("items") or {}).get("properties") or {} if isinstance(files, dict) else {}
        if "read" in tool.name.lower() and "path" in item:
            return ToolCall(tool.name, {"files": [{"path": path}]})
    for tool in tools:
        props = tool.properties
        if "cmd" in props:
            return ToolCall(tool.name, {"cmd": f"cat {shlex.quote(path)}"})
        if "command" in props:
            if props["command"].get("type") == "array":
                return ToolCall(tool.name, {"command": ["cat", path]})
            return ToolCall(tool.name, {"command": f"cat {shlex.quote(path)}"})
    return None


def _spawn_call(tools: list[Tool], rest: str) -> ToolCall | None:
    tool = next((t for t in tools if t.name in SUBAGENT_TOOLS), None)
    if tool is None:
        return None
    prompt = rest.strip() or SUBAGENT_PROMPT
    args: dict[str, Any] = {}
    for key, spec in tool.properties.items():
        if key == "description" and not {"prompt", "message", "task", "goal"} & tool.properties.keys():
            args[key] = prompt  # dcode's task{description, subagent_type}: the description is the prompt
        elif key == "description":
            args[key] = "Fake subagent task"
        elif key in ("prompt", "message", "task", "goal"):  # goal: Hermes's delegate_task
            args[key] = prompt
        elif key == "subagent_type" and spec.get("enum"):  # else the agent's default type
            args[key] = "general-purpose" if "general-purpose" in spec["enum"] else spec["enum"][0]
        elif key == "subagent_type" and key in tool.schema.get("required", []):  # dcode: a plain string
            args[key] = "general-purpose"
        elif key == "tasks" and "task" in ((spec.get("items") or {}).get("properties") or {}):
            args[key] = [{"task": prompt}]  # oh-my-pi: a batch of tasks, {task, name?, agent?} each
        elif key == "run_in_background" and spec.get("type") == "boolean":
            args[key] = False  # dsh runs a child in the background by default: a headless run would end it
    for key in tool.schema.get("required", []):
        args.setdefault(key, schema_instance(tool.properties.get(key, {"type": "string"})))
    return ToolCall(tool.name, args, tool.namespace)


def _wait_call(conv: Conversation) -> ToolCall | None:
    tool = next((t for t in conv.tools if t.name == "wait_agent"), None)
    match = re.search(r'"agent_id"\s*:\s*"([^"]+)"', conv.tool_results[-1][0])
    if tool is None or match is None:
        return None
    return ToolCall(tool.name, {"targets": [match.group(1)], "timeout_ms": 60000}, tool.namespace)


def _hub_wait(conv: Conversation) -> ToolCall | None:
    tool = next((t for t in conv.tools if t.name == "hub"), None)
    match = re.search(r"Spawned agent `([^`]+)`", conv.tool_results[-1][0])
    if tool is None or match is None:
        return None
    return ToolCall(tool.name, {"op": "wait", "ids": [match.group(1)], "i": "wait for the subagent"})


def _after_tool(conv: Conversation) -> str:
    content, is_error = conv.tool_results[-1]
    snippet = " ".join(content.split())[:300]
    if is_error:
        return f"The tool reported an error: {snippet}"
    if conv.result_of in SUBAGENT_TOOLS or conv.result_of in ("wait_agent", "hub"):
        return f"The subagent answered: {snippet}"
    return f"The file says: {snippet}"


def _thinking(prompt: str) -> str:
    return f"The user wrote {len(prompt.split())} words. I will think briefly, then answer."


_SUMMARY = (
    "<analysis>The conversation was short: a greeting and a file read.</analysis>\n"
    "<summary>1. Primary Request and Intent: the user greeted the assistant and asked to read a file.\n"
    "2. Pending Tasks: none.\n3. Current Work: nothing in progress.</summary>"
)


COMPACTION_ASKS = (
    "create a detailed summary of the conversation",  # Claude Code /compact and auto-compact
    "context checkpoint compaction",  # Codex local compaction
    "structured context checkpoint summary",  # pi /compact
    "structured handoff summary",  # oh-my-pi /compact, then its two follow-ups:
    "must summarize prefix for retained suffix",
    "summarize conversation changes as a pull request description",
)


def _is_compaction(conv: Conversation) -> bool:
    text = conv.prompt.lower()
    return any(ask in text for ask in COMPACTION_ASKS)


def is_side_request(conv: Conversation) -> bool:
    """A request the agent makes beside the conversation: a title, a summary, a JSON classification."""
    return conv.json_schema is not None or conv.json_mode or _is_title_request(conv) or _is_compaction(conv)


def _is_title_request(conv: Conversation) -> bool:
    """A side request for a session title (opencode, Kilo): answered with a title, not a greeting."""
    system = conv.system.lower()  # dsh: "Create a concise title for an AI coding-assistant session"
    return not conv.tools and ("title generator" in system or "create a concise title" in system)


def _wants_json(conv: Conversation) -> bool:
    """A side request (title, topic, classification...) that asks for a JSON answer."""
    if conv.json_mode:
        return True
    if conv.tools:
        return False
    return "json" in conv.system.lower() or "json" in conv.prompt.lower()


def _json_answer(conv: Conversation) -> Any:
    if conv.json_schema is not None:
        return schema_instance(conv.json_schema)
    text = f"{conv.system}\n{conv.prompt}"
    answer: dict[str, Any] = {}
    if "isNewTopic" in text:
        answer["isNewTopic"] = False
    if "title" in text.lower():
        answer["title"] = TITLE
    return answer or {"title": TITLE}


def schema_instance(schema: Any) -> Any:
    """A small value that validates against ``schema`` (the common subset of JSON Schema)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return schema_instance(schema[key][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: schema_instance(v) for k, v in props.items()}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [schema_instance(schema.get("items", {})) for _ in range(count)]
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 1), schema.get("maximum", 100)
        return max(low, min(high, 50)) if kind == "integer" else float(max(low, min(high, 50)))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "fake"
