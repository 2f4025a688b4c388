"""The viewer's lists and their filters, with Starlette's TestClient over a real bank (harvester/web/pages.py):

- a repository's worktrees are one row of the repositories page, and its sessions page lists the sessions of both;
- the sessions list filters by agent, by state and by when the sessions were active;
- search filters by repository, agent, role and date, and a hit deep in a long session opens the page of the
  transcript that holds it, at its anchor;
- a transcript's copy buttons hand over the resume command for each target agent, the agent's own, and
  ``harvester show``.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from html import unescape
from typing import Any

import pytest
from starlette.testclient import TestClient

from harvester.web.access import cookie_name
from harvester.web.app import Served, create_app
from harvester.web.reading import LocalSource
from harvester.web.transcript import RESUME_TARGETS
from tests.helpers import ClaudeSession, make_repo, scan
from tests.test_fault_isolation import CODEX_ID, _codex_rollout
from tests.web_browser import settings_for

PORT = 8765
TOKEN = "tok"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("web-filters")
    home, path = tmp / "home", tmp / "bank.sqlite"
    repo = make_repo(home / "src" / "shop", origin="git@github.com:acme/shop.git")
    worktree = home / "src" / "shop-hotfix"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "-b", "hotfix", str(worktree)], check=True,
                   capture_output=True)
    old = ClaudeSession(home, str(repo))  # stamped 2026-11-01
    old.write(old.user("pelican: the old question in the main checkout"), old.assistant("pelican answered"))
    new = ClaudeSession(home, str(worktree), live=True)  # stamped now
    new.write(new.user("pelican: a question in the worktree today"), new.assistant("done"))
    long = ClaudeSession(home, "/work/elsewhere")
    long.write(*long.conversation(60), long.user("the flamingo question, far down the session"),
               long.assistant("ok"))
    _codex_rollout(home, {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                           "text": "pelican in codex"}]})
    scan(home, path)
    with sqlite3.connect(path) as conn:  # a state the fixtures' agents do not leave: set before the viewer reads
        conn.execute("UPDATE sessions SET state = 'ended' WHERE native_id = ?", (old.id,))
    conn.close()
    return {"home": home, "path": path, "old": old.id, "new": new.id, "long": long.id}


@pytest.fixture
def client(bank: dict[str, Any]) -> Iterator[TestClient]:
    settings = settings_for({"HOME": str(bank["home"])}, bank=str(bank["path"]))
    source = LocalSource(str(bank["path"]))
    with TestClient(create_app(Served(source, source, settings, "127.0.0.1", PORT, TOKEN)),
                    base_url=f"http://127.0.0.1:{PORT}") as c:
        c.cookies.set(cookie_name(PORT), TOKEN)
        yield c
    source.close()


def _ids(html: str) -> set[str]:
    """The sessions a page links to, by id."""
    return {re.search(r"[?&]id=([^&#]+)", unescape(h))[1] for h in re.findall(r'href="(/session\?[^"]+)"', html)}


def test_a_repositorys_worktrees_are_one_row_listing_the_sessions_of_both(client: TestClient,
                                                                           bank: dict[str, Any]) -> None:
    home = client.get("/").text
    rows = re.findall(r'<a class="repo" href="([^"]+)">([^<]+)</a>', home)
    shop = [unescape(href) for href, label in rows if label == "coding-agent::shop"]
    assert len(shop) == 1, rows
    assert _ids(client.get(shop[0]).text) == {bank["old"], bank["new"]}


def test_the_sessions_list_filters_by_agent_state_and_date(client: TestClient, bank: dict[str, Any]) -> None:
    assert _ids(client.get("/sessions").text) == {bank["old"], bank["new"], bank["long"], CODEX_ID}
    assert _ids(client.get("/sessions?agent=codex").text) == {CODEX_ID}
    assert CODEX_ID not in _ids(client.get("/sessions?agent=claude-code").text)
    assert _ids(client.get("/sessions?state=ended").text) == {bank["old"]}
    assert bank["old"] not in _ids(client.get("/sessions?state=unknown").text)
    assert _ids(client.get("/sessions?since=1d").text) == {bank["new"]}
    assert _ids(client.get("/sessions?since=2026-10-01&until=2026-11-02").text) == {bank["old"], bank["long"]}
    assert _ids(client.get("/sessions?until=2026-04-01").text) == {CODEX_ID}


def test_search_filters_by_repository_agent_role_and_date(client: TestClient, bank: dict[str, Any]) -> None:
    every = client.get("/search?q=pelican").text
    assert _ids(every) == {bank["old"], bank["new"], CODEX_ID}
    shop = re.search(r'<option value="([^"]+)">coding-agent::shop</option>', every)[1]
    assert _ids(client.get("/search", params={"q": "pelican", "repo": unescape(shop)}).text) == {bank["old"],
                                                                                              bank["new"]}
    assert _ids(client.get("/search?q=pelican&agent=codex").text) == {CODEX_ID}
    assistant = client.get("/search?q=pelican&role=assistant").text
    assert _ids(assistant) == {bank["old"]} and "<mark>pelican</mark> answered" in assistant
    assert _ids(client.get("/search?q=pelican&since=1d").text) == {bank["new"]}


def test_a_hit_deep_in_a_long_session_opens_the_page_holding_it_at_its_anchor(client: TestClient,
                                                                              bank: dict[str, Any]) -> None:
    found = client.get("/search?q=flamingo").text
    href = unescape(re.search(r'class="hit-link" href="([^"]+)"', found)[1])
    assert href.endswith("#121"), href  # 60 turns of two events, then the question
    page = client.get(href.split("#")[0]).text
    assert '<article class="event role-user kind-text" id="121"' in page and "flamingo question" in page
    assert 'id="1"' not in page  # a later page, not the first


def test_the_copy_buttons_hand_over_every_resume_command(client: TestClient, bank: dict[str, Any]) -> None:
    listing = client.get("/sessions?agent=claude-code").text
    href = next(unescape(h) for h in re.findall(r'href="(/session\?[^"]+)"', listing) if bank["old"] in unescape(h))
    copied = [unescape(c) for c in re.findall(r'<button type="button" class="copy" data-copy="([^"]+)" title=',
                                              client.get(href).text)]
    assert f"claude --resume {bank['old']}" in copied
    for target in RESUME_TARGETS:
        if target != "claude-code":
            assert f"harvester resume {bank['old']} --in {target}" in copied, copied
    assert f"harvester show {bank['old']}" in copied


def test_a_sessions_row_gives_its_agent_title_branch_state_times_and_events(client: TestClient,
                                                                            bank: dict[str, Any]) -> None:
    listing = client.get("/sessions").text
    rows = {}
    for row in re.findall(r"<tr class=\"state-.*?</tr>", listing, re.S):
        cells = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = cells[1:]
    old = rows[f"pelican: the old question in the main checkout {bank['old']}"]
    assert old[:6] == ["claude-code", "main", "ended", "2026-11-01 10:00:01Z", "2026-11-01 10:00:02Z", "2"], old
    new = rows[f"pelican: a question in the worktree today {bank['new']}"]
    assert new[0] == "claude-code" and new[2] == "unknown" and new[5] == "2", new
    assert new[3].startswith(datetime.now(UTC).strftime("%Y-%m-%d ")), new  # written today
