"""How the viewer shows an event (harvester/web/transcript.py), and a search snippet: what is folded, an edit's diff
lines, controls and hidden characters made visible, hits marked only where the query's words are."""

from __future__ import annotations

from typing import Any

from harvester.web.transcript import event_view, shown, snippet_parts


def _event(**fields: Any) -> dict[str, Any]:
    base = {"seq": 3, "role": "assistant", "kind": "text", "text": "", "ts": "2026-11-01T10:00:00.000Z",
            "tool_name": None, "tool_input": None, "is_error": False, "meta": None}
    return {**base, **fields}


def test_injected_context_thinking_and_meta_are_folded_and_plain_text_is_not() -> None:
    assert event_view(_event(role="user", text="<environment>...</environment>", meta={"injected": True})).folded \
        == "context injected by the agent"
    assert event_view(_event(kind="thinking", text="hmm")).folded == "thinking"
    assert event_view(_event(role="system", kind="meta", text="turn 2")).folded == "meta"
    assert event_view(_event(text="hello")).folded == ""


def test_an_edit_is_a_diff_and_a_long_result_is_folded_past_its_first_lines() -> None:
    edit = event_view(_event(kind="tool_call", tool_name="Edit", text="Edit: a.py",
                             tool_input={"file_path": "a.py", "old_string": "x = 1\ny = 2", "new_string": "x = 1\ny = 3"}))
    assert edit.family == "edit"
    assert [(line.text, line.kind) for line in edit.lines] == [("Edit: a.py", ""), (" x = 1", ""), ("-y = 2", "del"),
                                                                ("+y = 3", "add")]
    result = event_view(_event(role="tool", kind="tool_result", text="\n".join(f"l{n}" for n in range(10))))
    assert [line.text for line in result.lines] == ["l0", "l1", "l2", "l3"]
    assert len(result.more) == 6
    short = event_view(_event(role="tool", kind="tool_result", text="a\nb"))
    assert [line.text for line in short.lines] == ["a", "b"] and not short.more


def test_controls_bidi_and_zero_width_characters_are_shown_not_obeyed() -> None:
    assert shown("a\u202eb\u200bc\u2066d\x1b[2Je\u200ff\ufeffg") == "a\\u202eb\\u200bc\\u2066d␛[2Je\\u200ff\\ufeffg"
    assert shown("line one\nline\ttwo") == "line one\nline\ttwo"
    view = event_view(_event(text="evil\u202etxt.exe", tool_name="\u202eBash"))
    assert view.lines[0].text == "evil\\u202etxt.exe" and "\u202e" not in view.label


def test_a_snippet_marks_the_querys_words_not_the_transcripts_own_brackets() -> None:
    parts = snippet_parts("see [array] index [quasar] and [x] then [Quasars]", "quasar")
    assert [text for text, hit in parts if hit] == ["quasar", "Quasars"]
    assert "".join(text for text, _ in parts) == "see [array] index quasar and [x] then Quasars"
    assert snippet_parts("plain [text]", "") == [("plain [text]", False)]


def test_a_command_and_a_search_pattern_are_shown_with_the_call() -> None:
    bash = event_view(_event(kind="tool_call", tool_name="Bash", text="Bash: run the tests",
                             tool_input={"command": "pytest -x tests/test_a.py", "description": "run the tests"}))
    assert bash.family == "command" and [line.text for line in bash.lines][-1] == "$ pytest -x tests/test_a.py"
    assert not bash.more  # shown, not folded: what the call did is the point of it
    grep = event_view(_event(kind="tool_call", tool_name="Grep", text="Grep: budget",
                             tool_input={"pattern": "retry_budget\\(", "path": "src", "glob": "*.py"}))
    assert grep.family == "search" and [line.text for line in grep.lines][-1] == "pattern retry_budget\\( in src (*.py)"
