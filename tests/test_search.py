"""Search: conversation text whole, long tool output by its head and tail, snippets from both."""

from __future__ import annotations

from pathlib import Path

from harvester.bank import open_bank
from tests.helpers import ClaudeSession, scan


def test_search_covers_conversation_and_the_ends_of_long_tool_output(tmp_path: Path) -> None:
    home, bank_path = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    log = "compiling alphamodule\n" + "ordinary build line\n" * 2000 + "error: zetafailure in linker\n"
    middle_only = "x" * 4000 + " middleword " + "y" * 4000
    s.write(
        s.user("why does the quasarparser crash?"),
        s.tool_use("Bash", {"command": "make"}, "t1"),
        s.tool_result("t1", log),
        s.tool_use("Bash", {"command": "cat big"}, "t2"),
        s.tool_result("t2", middle_only),
        s.assistant("the linker fails"),
    )
    scan(home, bank_path)
    with open_bank(bank_path) as bank:

        def kinds(query: str) -> list[str]:
            return [h["kind"] for h in bank.search(query)]

        assert kinds("quasarparser") == ["text"]
        assert kinds("alphamodule") == ["tool_result"]  # head of a long output
        assert kinds("zetafailure") == ["tool_result"]  # its tail
        assert kinds("middleword") == []  # the middle of a long output is stored, not indexed
        assert kinds('"error: zetafailure"') == ["tool_result"]  # phrases work
        [hit] = bank.search("zetafailure")
        assert "[zetafailure]" in hit["snippet"]
        events = bank.events(bank.list_sessions()[0]["id"])
        assert "middleword" in events[4]["text"]  # shown whole
