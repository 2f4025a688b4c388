"""Which source a changed file is, or belongs to (the service's file events)."""

from __future__ import annotations

from pathlib import Path

from harvester.capture.sources import match, owner
from harvester.parsers import HARNESSES


def test_a_related_document_or_sidecar_belongs_to_the_source_beside_it(tmp_path: Path) -> None:
    root = tmp_path / ".cline" / "data"
    task = root / "tasks" / "1745000000000"
    task.mkdir(parents=True)
    for name in ("api_conversation_history.json", "ui_messages.json", "task_metadata.json", "notes.txt"):
        (task / name).write_text("[]")
    legacy = HARNESSES["cline-legacy"]
    source = task / "api_conversation_history.json"
    assert match(legacy, root, task / "ui_messages.json") is None
    for related in ("ui_messages.json", "task_metadata.json"):
        found = owner(legacy, root, task / related)
        assert found is not None and found.path == source
    assert owner(legacy, root, task / "notes.txt") is None  # beside a source, but not one of its documents
    assert owner(legacy, root, tmp_path / "elsewhere" / "ui_messages.json") is None  # outside the root

    copilot = HARNESSES["copilot-cli"]
    state = tmp_path / ".copilot" / "session-state"
    (state / "s1").mkdir(parents=True)
    (state / "s1" / "events.jsonl").write_text("")
    (state / "s1" / "workspace.yaml").write_text("cwd: /w\n")
    found = owner(copilot, state, state / "s1" / "workspace.yaml")
    assert found is not None and found.path == state / "s1" / "events.jsonl"
    assert owner(HARNESSES["codex"], state, state / "s1" / "workspace.yaml") is None  # no sidecars at all
