"""Visual Studio Copilot: the IDE's OTLP trace files (fixtures/visualstudio_copilot/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path, PurePath

import orjson

from harvester.parsers.base import Record, SourceRef
from tests.helpers import FIXTURES, events_of, scan, session_of

NAME = "visualstudio-copilot"
A, B = "7d1e4c52-9b0a-4f3e-8c21-5a6b7c8d9e01", "2f8a0b13-6c4d-4e5f-9a70-1b2c3d4e5f60"
REAL = "4a8f63f6-7626-4416-a874-fc7bd2c3f005"  # the conversation of agentsview's redacted captures


def _scan(tmp_path: Path, tree: Path) -> Path:
    home = tmp_path / "home"
    (home / ".cache" / "VSGitHubCopilotLogs").mkdir(parents=True)
    (home / ".cache" / "VSGitHubCopilotLogs" / "traces").symlink_to(tree, target_is_directory=True)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert report.harnesses[NAME].problems == 0
    return bank


def test_prompts_answers_reasoning_tools_and_usage(tmp_path: Path) -> None:
    bank = _scan(tmp_path, FIXTURES / "visualstudio_copilot" / "hand")
    events = events_of(bank, A)
    texts = [e["text"] for e in events]
    assert "Why does the Release build fail?" in texts  # the last user message of the call's input
    assert "The Release configuration must differ; read the project file." in texts  # a reasoning part
    call = next(e for e in events if e["kind"] == "tool_call")
    assert (call["tool_name"], call["tool_call_id"], call["tool_input"]) == (
        "get_file", "call_vs01", {"filename": "src/App/App.csproj"})
    assert len([e for e in events if e["kind"] == "tool_call"]) == 1  # asked in a chat span, run in its own: once
    result = next(e for e in events if e["kind"] == "tool_result")
    assert "<TreatWarningsAsErrors>true</TreatWarningsAsErrors>" in result["text"]
    answers = [e for e in events if e["role"] == "assistant" and e["kind"] == "text"]
    assert [a["text"] for a in answers] == [  # the span flushed again with the whole answer replaces its start
        "Release sets TreatWarningsAsErrors, and CS8602 in Service.cs is a warning: fix the null check."]
    assert answers[0]["usage"] == {"in": 1900, "out": 31}
    assert [e["usage"] for e in events if e["usage"]] == [{"in": 1200, "out": 40}, {"in": 1900, "out": 31}]
    session = session_of(bank, A)
    assert (session["title"], session["model"], session["agent_version"]) == (
        "Why does the Release build fail?", "gpt-5.5-2026-03-05", "18.6.11822.322")
    assert (session["started_at"], session["updated_at"]) == ("2026-09-21T14:13:20.000Z", "2026-09-21T14:13:29.000Z")
    other = [e["text"] for e in events_of(bank, B)]  # a second conversation in the same file
    assert "Run the unit tests." in other and "Passed!  - Failed: 0, Passed: 41, Skipped: 0" in other
    assert "run_command_in_terminal: dotnet test -c Release" in other


def test_the_real_captures_every_call_and_result(tmp_path: Path) -> None:
    """agentsview's four redacted captures (Visual Studio 18.6): one conversation over four rotated files, and
    a second one in the last. Every tool's arguments and result are kept."""
    bank = _scan(tmp_path, FIXTURES / "visualstudio_copilot" / "real" / "agentsview-samples")
    events = events_of(bank, REAL)
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = {e["tool_call_id"]: e["text"] for e in events if e["kind"] == "tool_result"}
    assert [c["tool_name"] for c in calls] == ["get_file", "apply_patch", "run_build", "code_search", "create_file",
                                               "run_build", "run_command_in_terminal", "get_errors", "apply_patch",
                                               "run_build"]
    assert calls[1]["tool_input"] == {"patch": "*** Update File: src/App.cs"}
    assert results["call_0001"] == "namespace Example.App;\npublic class App { }"
    assert results["call_0021"] == "Passed! - Failed: 0, Passed: 12."
    assert len(results) == 10
    assert [e["text"] for e in events_of(bank, "c0aca2e3-d1f2-4d28-bd5e-5dab29e2be28") if e["kind"] == "tool_result"] == [
        "Found README.md."]


def _parse(*exports: dict) -> list[str]:
    from harvester.parsers import visualstudio_copilot
    ref = SourceRef(PurePath("/h/traces/x_VSGitHubCopilot_traces.jsonl"), PurePath("/h/traces"))
    batch = visualstudio_copilot.parse(ref, [Record(i + 1, orjson.dumps(x)) for i, x in enumerate(exports)], {})
    return [p.kind for p in batch.problems]


def _export(*spans: dict) -> dict:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]}


def _span(operation: str | None, conversation: str | None = "c1", **extra: str) -> dict:
    attributes = {"gen_ai.operation.name": operation, "gen_ai.conversation.id": conversation, **extra}
    return {"traceId": "t", "spanId": "s", "name": operation or "x",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items() if v is not None]}


def test_unknown_spans_and_parts_are_drift() -> None:
    output = orjson.dumps([{"role": "assistant", "parts": [{"type": "hologram"}]}, {"role": "oracle", "parts": []}])
    assert _parse(_export(_span("embeddings")), _export(_span("chat", None)), {"logs": []},
                  _export(_span("chat", **{"gen_ai.output.messages": output.decode()}))) == [
        "unknown_type", "unknown_type", "unknown_type", "unknown_type", "unknown_type"]


def test_visual_studio_2026_keeps_a_conversation_in_the_solution(tmp_path: Path) -> None:
    """``<solution>/.vs/<sln>/copilot-chat/<thread>/sessions/<id>``: the same lines, one conversation, and the solution
    folder is where it worked (a store inside repositories, read from the repositories harvester knows)."""
    import shutil

    repo = tmp_path / "src" / "DemoApp"
    shutil.copytree(FIXTURES / "visualstudio_copilot" / "hand-vs2026", repo)
    home = tmp_path / "home"
    home.mkdir()
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)}, extra_roots={NAME: [repo]})
    assert report.harnesses[NAME].problems == 0
    sid = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"
    assert session_of(bank, sid)["cwd"] == str(repo)
    texts = [e["text"] for e in events_of(bank, sid)]
    assert "Rename OrderService to OrderProcessor." in texts
    assert "3 matches in src/Orders/OrderService.cs, src/Program.cs." in texts
    assert "OrderService is used in two files; I renamed the class and both references." in texts
