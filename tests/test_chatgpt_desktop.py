"""The ChatGPT desktop app: what the hand-written folder must read as (fixtures/chatgpt_desktop/hand/README.md).
Its legacy plain JSON conversations are read (the active branch); its encrypted v2/v3 folders are counted as
present, not readable, and never opened."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePath

import orjson

from harvester.parsers import HARNESSES
from harvester.parsers.base import Record, SourceRef, opaque_found
from tests.helpers import FIXTURES, events_of, scan, session_of, shapes
from tests.machine import harvester_cli

NAME = "chatgpt-desktop"
HAND = FIXTURES / "chatgpt_desktop" / "hand"
PLACE = Path("Library") / "Application Support" / "com.openai.chat"
FIXTURE_CHAT = "68f1a2b3-0c4d-8000-9e1f-2a3b4c5d6e71"
BROWSING_CHAT = "68f1b7c9-5e2a-8000-a1b2-c3d4e5f60782"


def _home(tmp: Path) -> Path:
    home = tmp / "home"
    shutil.copytree(HAND, home / PLACE, ignore=shutil.ignore_patterns("README.md"))
    return home


def _parse(document: dict, name: str = "c.json") -> object:
    from harvester.parsers import chatgpt_desktop
    ref = SourceRef(PurePath(f"/h/com.openai.chat/conversations-1/{name}"), PurePath("/h/com.openai.chat"))
    return chatgpt_desktop.parse(ref, [Record(1, orjson.dumps(document))], {})


def test_the_active_branch_with_its_thinking_tools_and_results(tmp_path: Path) -> None:
    home = _home(tmp_path)
    bank = tmp_path / "bank.sqlite"
    report = scan(home, bank, (NAME,), env={"HOME": str(home)})
    assert (report.harnesses[NAME].sources, report.harnesses[NAME].problems) == (2, 0)  # the .data stay unread
    events = events_of(bank, FIXTURE_CHAT)
    assert shapes(events) == [("system", "text"), ("user", "text"), ("assistant", "thinking"),
                              ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    assert events[0]["meta"]["injected"] and "Answer briefly" in events[0]["text"]  # custom instructions
    assert events[1]["text"] == "Why does my session-scoped pytest fixture run twice under xdist?"
    assert "Why does my fixture run twice?" not in [e["text"] for e in events]  # the edited-away branch
    assert "session scope is per worker" in events[2]["text"] and events[2]["model"] == "o3"
    assert events[3]["tool_name"] == "python" and events[3]["tool_input"]["code"].startswith("import os")
    assert (events[4]["text"], events[4]["tool_call_id"]) == ("gw0", events[3]["tool_call_id"])
    assert events[5]["text"].startswith("Each xdist worker (here `gw0`)")
    session = session_of(bank, FIXTURE_CHAT)
    assert (session["title"], session["model"], session["cwd"]) == ("Pytest fixture runs twice", "o3", None)
    assert session["started_at"] == "2026-09-21T11:26:39.000Z"
    assert session["meta"]["other_branch_messages"] == 2

    browsing = events_of(bank, BROWSING_CHAT)
    assert shapes(browsing) == [("user", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
                                ("tool", "tool_result"), ("assistant", "text")]
    assert browsing[0]["text"] == "[image]\nWhich release of uv added this flag?"
    assert browsing[1]["tool_name"] == "web" and "exclude-newer release" in browsing[1]["text"]
    assert browsing[1]["tool_input"] == {"search_query": [{"q": "uv --exclude-newer release"}]}  # its JSON
    assert "0.1.12: add --exclude-newer" in browsing[2]["text"]
    assert browsing[3]["text"] == ("> Add --exclude-newer to pip compile\n"
                                   "> -- [uv changelog](https://github.com/astral-sh/uv/blob/main/CHANGELOG.md)")


def test_the_encrypted_folders_are_counted_never_read(tmp_path: Path) -> None:
    home = _home(tmp_path)
    harness = HARNESSES[NAME]
    assert harness.roots({}, home) == [home / PLACE]  # macOS's folder, laid out under any HOME
    found = opaque_found(harness, harness.roots({}, home))
    assert [(f["path"], f["files"]) for f in found] == [(str(home / PLACE / "conversations-v*/*"), 3)]
    # Nothing under them is a source: a scan that read one would count it (and fail on its bytes).
    report = scan(home, tmp_path / "bank.sqlite", (NAME,), env={"HOME": str(home)})
    assert (report.harnesses[NAME].sources, report.harnesses[NAME].failed) == (2, 0)
    shown = harvester_cli(tmp_path, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    row = next(h for h in orjson.loads(shown.stdout)["harnesses"] if h["name"] == NAME)
    assert row["not_readable"][0]["files"] == 3


def test_unknown_content_types_and_roles_are_drift_and_their_text_is_kept() -> None:
    mapping = {
        "r": {"id": "r", "parent": None, "children": ["u"], "message": None},
        "u": {"id": "u", "parent": "r", "children": ["a"], "message": {
            "id": "u", "author": {"role": "user"}, "create_time": 1790000000,
            "content": {"content_type": "hologram", "parts": ["kept anyway"]}}},
        "a": {"id": "a", "parent": "u", "children": ["x"], "message": {
            "id": "a", "author": {"role": "assistant"}, "recipient": "all",
            "content": {"content_type": "text", "parts": ["said", {"content_type": "sticker", "id": 3}]}}},
        "x": {"id": "x", "parent": "a", "children": [], "message": {
            "id": "x", "author": {"role": "critic"}, "content": {"content_type": "text", "parts": ["?"]}}},
    }
    batch = _parse({"conversation_id": "c", "mapping": mapping, "current_node": "x"})
    assert sorted(p.detail for p in batch.problems) == ["content content_type='hologram'",
                                                        "content part content_type='sticker'",
                                                        "message role='critic'"]
    assert {p.kind for p in batch.problems} == {"unknown_type"}
    assert [e.text for e in batch.events] == ["kept anyway", "said"]


def test_no_current_node_reads_every_message_by_time_and_the_flat_form_is_read() -> None:
    # Without current_node (cass reads every message by create_time): nothing is lost.
    mapping = {key: {"id": key, "parent": None, "children": [], "message": {
        "id": key, "author": {"role": role}, "create_time": t, "content": {"content_type": "text", "parts": [text]},
        "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {}}}
        for key, role, t, text in (("b", "assistant", 1790000002.0, "second"), ("a", "user", 1790000001.0, "first"))}
    batch = _parse({"id": "c2", "mapping": mapping})
    assert [(e.session, e.text) for e in batch.events] == [("c2", "first"), ("c2", "second")]
    assert batch.sessions["c2"].title == "first"  # no title: the first prompt
    assert batch.sessions["c2"].model == "gpt-4o"  # no default model: the last answer's
    flat = _parse({"title": "Flat", "messages": [{"role": "user", "content": "q?", "timestamp": 1790000000000},
                                                 {"role": "assistant", "content": "a."}]}, "flat-1.data")
    assert [(e.session, e.role, e.text, e.ts) for e in flat.events] == [
        ("flat-1", "user", "q?", "2026-09-21T14:13:20.000Z"), ("flat-1", "assistant", "a.", None)]


def test_a_damaged_document_costs_that_document() -> None:
    from harvester.parsers import chatgpt_desktop
    ref = SourceRef(PurePath("/h/conversations-1/c.json"), PurePath("/h"))
    batch = chatgpt_desktop.parse(ref, [Record(1, b'{"mapping": {"a": '), Record(2, b"[1]")], {})
    assert [p.kind for p in batch.problems] == ["malformed", "malformed"]
    cycle = {"a": {"parent": "b", "message": {"id": "a", "author": {"role": "user"}, "content": {"parts": ["x"]}}},
             "b": {"parent": "a", "message": None}}
    assert [e.text for e in _parse({"id": "c", "mapping": cycle, "current_node": "a"}).events] == ["x"]


def test_code_written_to_the_user_is_a_fenced_answer_not_a_call() -> None:
    mapping = {"a": {"parent": None, "message": {"id": "a", "author": {"role": "assistant"}, "recipient": "all",
                                                 "content": {"content_type": "code", "language": "sh", "text": "ls"}}}}
    events = _parse({"id": "c", "mapping": mapping, "current_node": "a"}).events
    assert [(e.kind, e.text) for e in events] == [("text", "```sh\nls\n```")]
