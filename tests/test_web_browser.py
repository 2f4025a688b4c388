"""`harvester serve` in a real browser: Debian's Chromium driven by Playwright (tests/web_browser.py), against the real
server in a subprocess over a real bank.

- a reader goes repositories → sessions (a subagent nested under its parent) → a transcript (an edit as a diff, a
  long result folded, thinking collapsed, the subagent linked) → a search hit → the event's anchor (#N), and the
  copy button hands over ``harvester show ID --around N``;
- live: under `harvester run`, a line appended to a Claude Code transcript appears on its open page, and a new
  session appears in the open sessions list, neither reloaded;
- the status page renders with the bank's data;
- hostile transcripts (titles, texts, tool inputs, paths, model names, session ids holding <script>, <img
  onerror>, javascript: links, </textarea>, SVG with script, CSS injection, RTL and zero-width tricks) execute
  nothing (a global any injected script would set stays unset, no dialog opens), load nothing from elsewhere and
  navigate nowhere.

A screenshot of each main page is saved under the run's temporary directory (tests/web_browser.py: screenshots).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.daemon import FAST, Daemon, wait_for
from tests.helpers import ClaudeSession, make_repo, scan
from tests.web_browser import Viewer, browser, env_for, screenshots, shoot

__all__ = ["browser"]  # the fixture, used by name

TASK = "survey the retry budget module and report its callers"


@contextmanager
def _served_under_run(browser: Any, daemon: Daemon) -> Iterator[tuple[Viewer, Any, Any]]:
    """`harvester serve` beside the started ``daemon`` once the service holds its session's two texts, and a browser
    context whose first page has taken the viewer's token; the viewer and the daemon are stopped after, whatever
    happened."""
    viewer = None
    try:
        wait_for(lambda: len(daemon.texts()) == 2, 20, "the service to capture the session")
        viewer = Viewer(env_for(daemon.home, daemon.bank, daemon.config, HARVESTER_RUNTIME_DIR=str(daemon.run_dir)))
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(viewer.url)
        yield viewer, context, page
    finally:
        if viewer is not None:
            viewer.stop()
        daemon.stop()


def _subagent(parent: ClaudeSession, agent: str) -> ClaudeSession:
    """A Claude Code subagent transcript of ``parent`` (``<sid>/subagents/agent-<id>.jsonl``)."""
    child = ClaudeSession.__new__(ClaudeSession)
    child.__dict__.update(parent.__dict__)
    child.n, child.parent = 0, None
    child.path = parent.path.parent / parent.id / "subagents" / f"agent-{agent}.jsonl"
    child.path.parent.mkdir(parents=True, exist_ok=True)
    return child


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("web-browser")
    home, path = tmp / "home", tmp / "bank.sqlite"
    repo = make_repo(home / "src" / "shop", origin="git@github.com:acme/shop.git")
    s = ClaudeSession(home, str(repo))
    thinking = s._envelope("assistant", message={"id": "m-think", "type": "message", "role": "assistant",
                                                   "model": "claude-sonnet-4-5",
                                                   "content": [{"type": "thinking", "thinking": "ponder the budget"}]})
    s.write(s.user("why does the checkout retry budget run out on Fridays?"),
            orjson.dumps(thinking) + b"\n",
            s.tool_use("Task", {"description": "survey", "prompt": TASK, "subagent_type": "general"}, "toolu_task"),
            s.tool_result("toolu_task", "surveyed: two callers"),
            s.tool_use("Edit", {"file_path": f"{repo}/budget.py", "old_string": "BUDGET = 3\nSHARED = True",
                                "new_string": "BUDGET = 3\nSHARED = False"}, "toolu_edit"),
            s.tool_result("toolu_edit", "\n".join(f"line {n} of the build output" for n in range(30))),
            s.assistant("Found it: the zanzibarbudget is shared across workers; made it per worker."))
    child = _subagent(s, "a1b2c3")
    child.write(child.user(TASK), child.assistant("two callers: checkout.py and refund.py"))
    other = ClaudeSession(home, str(repo))
    other.write(other.user("tidy the README"), other.assistant("README tidied."))
    scan(home, path)
    return {"tmp": tmp, "home": home, "path": path, "session": s.id, "repo": repo}


@pytest.fixture(scope="module")
def viewer(bank: dict[str, Any]) -> Iterator[Viewer]:
    v = Viewer(env_for(bank["home"], bank["path"], bank["tmp"] / "config.toml"))
    yield v
    v.stop()


class Watch:
    """What a page did that it must not: dialogs opened, requests and navigations away from the viewer."""

    def __init__(self, page: Any, base: str) -> None:
        self.dialogs: list[str] = []
        self.away: list[str] = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: None if r.url.startswith(base) else self.away.append(r.url))
        page.on("framenavigated", lambda f: None if f.url.startswith(base) or f.url == "about:blank"
                else self.away.append(f.url))


def test_repositories_to_sessions_to_transcript_to_a_search_hit_and_its_anchor(
        browser: Any, viewer: Viewer, bank: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    shots = screenshots(tmp_path_factory)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=viewer.base)
    page = context.new_page()
    watch = Watch(page, viewer.base)
    page.goto(viewer.url)
    assert page.url == viewer.base + "/"  # the token traded for the cookie, and gone from the address
    repos = page.locator("#repositories a.repo")
    assert repos.all_inner_texts() == ["coding-agent::shop"]
    shoot(page, shots, "repositories")

    repos.first.click()
    page.wait_for_url("**/sessions?**")
    rows = page.locator("#session-rows tr")
    titles = [t.strip() for t in page.locator("#session-rows td.title > a").all_inner_texts()]
    assert "tidy the README" in titles and "why does the checkout retry budget run out on Fridays?" in titles
    # The subagent is listed right under the session that started it, marked.
    parent_at = titles.index("why does the checkout retry budget run out on Fridays?")
    assert "sub" in rows.nth(parent_at + 1).get_attribute("class").split()
    assert rows.nth(parent_at + 1).locator(".sub-mark").inner_text() == "↳ subagent"
    assert rows.nth(parent_at + 1).locator("td.title > a").inner_text() == TASK
    shoot(page, shots, "sessions")

    page.locator("#session-rows td.title > a", has_text="retry budget run out").click()
    page.wait_for_url("**/session?**")
    assert page.locator("h1.session-title").inner_text() == "why does the checkout retry budget run out on Fridays?"
    edit = page.locator("article.family-edit")
    assert edit.locator(".line.del").inner_text() == "-SHARED = True"
    assert edit.locator(".line.add").inner_text() == "+SHARED = False"
    thinking = page.locator("article.kind-thinking details.fold")
    assert not thinking.get_attribute("open") and thinking.locator("pre").is_hidden()  # collapsed
    long_result = page.locator("article.kind-tool_result", has_text="line 0 of the build output")
    assert long_result.locator("details.fold pre").is_hidden()  # folded past its first lines
    assert long_result.locator("details.fold summary").inner_text() == "26 more lines"
    link = page.locator("p.child a")
    assert link.inner_text() == f"→ subagent session {bank['session']}:agent-a1b2c3"
    shoot(page, shots, "session")
    link.click()
    page.wait_for_url("**/session?**")
    assert page.locator("h1.session-title").inner_text() == TASK

    page.locator("header nav a", has_text="Search").click()
    page.fill("input[name=q]", "zanzibarbudget")
    page.locator("form.filters button").click()
    page.wait_for_url("**/search?**")
    assert page.locator("#said").inner_text() == "1 match"
    assert page.locator("li.hit mark").all_inner_texts() == ["zanzibarbudget"]
    shoot(page, shots, "search")
    page.locator("a.hit-link").click()
    page.wait_for_url("**/session?**#*")
    seq = page.url.rsplit("#", 1)[1]
    assert seq == "7"  # the same number the CLI and MCP give it
    target = page.locator("article:target")
    assert target.get_attribute("data-seq") == "7" and "zanzibarbudget" in target.inner_text()
    assert target.is_visible() and target.bounding_box()["y"] < 800  # scrolled to it
    target.locator("button.copy").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == f"harvester show {bank['session']} --around 7"
    assert not watch.dialogs and not watch.away
    context.close()


def test_the_status_page_renders_with_the_banks_data(browser: Any, viewer: Viewer,
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(viewer.url)
    page.locator("header nav a", has_text="Status").click()
    page.wait_for_url("**/status")
    row = page.locator("#agents tbody tr", has_text="claude-code")
    cells = row.locator("td").all_inner_texts()
    assert cells[1] == "yes" and cells[2] == "3" and cells[3] == "11", cells  # found; 3 sessions, 11 events
    assert "not running" in page.locator("#service").inner_text()
    assert "3 sessions · 11 events" in page.locator("section.cards").inner_text()
    shoot(page, screenshots(tmp_path_factory), "status")
    page.close()


def test_a_session_being_written_and_the_sessions_list_update_live_under_harvester_run(
        browser: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    daemon = Daemon(tmp_path)
    s = ClaudeSession(daemon.home, "/work/live", live=True)
    s.write(s.user("watch this session grow"), s.assistant("first answer"))
    daemon.start()
    with _served_under_run(browser, daemon) as (viewer, context, page):
        page.goto(f"{viewer.base}/session?h=claude-code&id={s.id}")
        assert page.locator("article.event").count() == 2
        listing = context.new_page()
        listing.goto(f"{viewer.base}/sessions")
        listing.wait_for_selector("#live-note:not([hidden])")  # its stream is open
        page.wait_for_function("document.querySelector('#events').dataset.live !== ''")
        page.wait_for_timeout(1500)  # the stream has read the clock once

        s.write(s.user("a line appended while the page is open: quetzalcoatl"))
        appended = page.locator("article.event", has_text="quetzalcoatl")
        appended.wait_for(timeout=30_000)
        assert appended.get_attribute("id") == "3"
        assert page.locator("#session-state").inner_text().endswith("3 events")
        shoot(page, screenshots(tmp_path_factory), "session-live")

        new = ClaudeSession(daemon.home, "/work/live", live=True)
        new.write(new.user("a brand new session: ocelotsession"))
        listing.locator("#session-rows a", has_text="ocelotsession").wait_for(timeout=30_000)
        assert page.locator("article.event").count() == 3  # nothing reloaded or doubled


# --- hostile transcripts -------------------------------------------------------------------------------------------

PAYLOADS = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2; alert(2)">',
    '<svg onload="window.__pwned = 3"><script>window.__pwned = 4</script></svg>',
    "</textarea><script>window.__pwned = 5</script><textarea>",
    '"><a id="jslink" href="javascript:window.__pwned = 6">click me</a>',
    "'><iframe src=\"javascript:window.__pwned = 7\"></iframe>",
    "</style><style>body { display: none !important }</style><div style=\"position:fixed;inset:0;background:red\">",
    "[click](javascript:alert(8)) javascript:window.__pwned=8",
    '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
    '<base href="https://evil.example/"><link rel="stylesheet" href="https://evil.example/x.css">',
    '<form action="https://evil.example/"><button id="go">go</button></form>',
    "{{ 7 * 7 }} {% raw %} ${7*7}",
    "\u202eexe.txt\u200b\u200f admin\u2066",
]
HOSTILE = " ".join(PAYLOADS)
# Session ids are file names: no "/" (so no closing tag), but every other trick.
HOSTILE_IDS = ['<img src=x onerror="window.__pwned=20">', '"><svg onload=window.__pwned=21>', "\u202eevil\u200bid"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("web-hostile")
    home, path = tmp / "home", tmp / "bank.sqlite"
    for n, native in enumerate(HOSTILE_IDS):
        cwd = f"/work/<img src=x onerror=window.__pwned={30 + n}>/\u202erepo"
        s = ClaudeSession(home, cwd, session_id=native)
        model = '<img src=x onerror="window.__pwned=40">'
        answer = s._envelope("assistant", message={"id": f"m{n}", "type": "message", "role": "assistant",
                                                     "model": model, "content": [{"type": "text", "text": HOSTILE}],
                                                     "usage": {"input_tokens": 1, "output_tokens": 1}})
        s.write(s.user(f"hostiletitle \u202egnp.exe {HOSTILE}"),
                orjson.dumps(answer) + b"\n",
                s.tool_use("Edit", {"file_path": f"/work/{PAYLOADS[1]}.py", "old_string": PAYLOADS[0],
                                    "new_string": PAYLOADS[2]}, f"t{n}"),
                s.tool_result(f"t{n}", HOSTILE),
                s.tool_use("Bash", {"command": f"echo '{PAYLOADS[3]}'"}, f"b{n}"),
                s.tool_use("WebFetch", {"url": "javascript:window.__pwned=9", "prompt": PAYLOADS[4]}, f"w{n}"))
    scan(home, path)
    return {"tmp": tmp, "home": home, "path": path, "ids": HOSTILE_IDS, "run": uuid.uuid4().hex}


def _harmless(page: Any, watch: Watch, base: str, where: str) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined", where
    assert not watch.dialogs, (where, watch.dialogs)
    assert not watch.away, (where, watch.away)
    assert page.url.startswith(base), where
    found = page.evaluate("""() => ({
        scripts: [...document.scripts].map(s => s.src),
        links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
        foreign: document.querySelectorAll('img, iframe, svg script, base, meta[http-equiv], textarea, '
            + 'form[action^="http"], link[href^="http"], [onerror], [onload], [style]').length,
        hidden: getComputedStyle(document.body).display,
    })""")
    assert all(src == f"{base}/static/app.js" for src in found["scripts"]), (where, found["scripts"])
    assert all(h.startswith(("/", "#")) and not h.startswith("//") for h in found["links"]), (where, found["links"])
    assert found["foreign"] == 0 and found["hidden"] != "none", (where, found)


def test_hostile_transcripts_execute_nothing_and_navigate_nowhere(
        browser: Any, hostile: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    viewer = Viewer(env_for(hostile["home"], hostile["path"], hostile["tmp"] / "config.toml"))
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        watch = Watch(page, viewer.base)
        page.goto(viewer.url)
        _harmless(page, watch, viewer.base, "repositories")
        page.locator("#repositories a.repo").first.click()
        page.wait_for_url("**/sessions?**")
        _harmless(page, watch, viewer.base, "sessions")
        sessions = page.locator("#session-rows td.title > a")
        assert sessions.count() == len(HOSTILE_IDS)
        hrefs = [sessions.nth(n).get_attribute("href") for n in range(sessions.count())]
        for href in hrefs:
            page.goto(viewer.base + href)
            _harmless(page, watch, viewer.base, href)
            # The title is its text, controls shown (\\u202e), not obeyed; the page's elements are the viewer's.
            title = page.locator("h1.session-title").inner_text()
            assert title.startswith("hostiletitle \\u202egnp.exe <script>window.__pwned = 1</script>"), title
            assert "\u202e" not in page.locator("main").inner_text()
            for clickable in ("h1.session-title", "article.kind-text pre.body", "article.family-edit pre.body",
                              "dl.facts"):
                page.locator(clickable).first.click()
            page.locator("article.kind-tool_result pre.body").first.click()
            page.locator("article button.copy").first.click()
            _harmless(page, watch, viewer.base, f"{href} after clicks")
        shoot(page, screenshots(tmp_path_factory), "hostile-session")
        page.goto(f"{viewer.base}/search?q=hostiletitle")
        assert page.locator("li.hit").count() == len(HOSTILE_IDS)
        _harmless(page, watch, viewer.base, "search")
        page.locator("a.hit-link").first.click()
        page.wait_for_url("**/session?**")
        _harmless(page, watch, viewer.base, "search hit")
        for route in ("/status", "/status?all=1", f"/go?id={HOSTILE_IDS[0]}", "/search?q=pwned", "/usage?days=90",
                      "/usage?days=90&by=model"):
            page.goto(viewer.base + route)
            _harmless(page, watch, viewer.base, route)
    finally:
        viewer.stop()


# --- many tabs -----------------------------------------------------------------------------------------------------

HIDE = """() => {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
  document.dispatchEvent(new Event("visibilitychange"));
}"""
SHOW = """() => {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "visible" });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => false });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_twenty_open_tabs_leave_the_viewer_reachable_and_a_tab_brought_back_catches_up_once(
        browser: Any, tmp_path: Path) -> None:
    """A browser keeps at most 6 connections to one host over HTTP/1.1, and each live page held one for its stream:
    the 7th tab of the viewer never loaded. A tab in the background (hidden, as a browser says of a tab not shown)
    closes its stream; brought back it shows what was written meanwhile, once."""
    daemon = Daemon(tmp_path)
    s = ClaudeSession(daemon.home, "/work/live", live=True)
    s.write(s.user("a session open in many tabs"), s.assistant("first answer"))
    daemon.start()
    with _served_under_run(browser, daemon) as (viewer, context, first):
        tabs = []
        for n in range(20):
            tab = context.new_page()
            tab.set_default_timeout(10_000)
            tab.goto(f"{viewer.base}/session?h=claude-code&id={s.id}" if n % 2 else f"{viewer.base}/sessions")
            tab.evaluate(HIDE)  # the user opens the next tab: this one goes to the background
            tabs.append(tab)
        first.close()
        back = tabs[-1]  # a transcript, in the background while the session grows
        s.write(s.user("written while the tab was hidden: axolotl"))
        wait_for(lambda: len(daemon.texts()) == 3, 20, "the service to capture the line")
        back.wait_for_timeout(1500)
        back.evaluate(SHOW)
        back.locator("article.event", has_text="axolotl").wait_for(timeout=15_000)
        back.evaluate(HIDE)
        back.evaluate(SHOW)  # a second return adds nothing already shown
        s.write(s.user("and one more while it is shown: capybara"))
        back.locator("article.event", has_text="capybara").wait_for(timeout=30_000)
        assert [a.get_attribute("id") for a in back.locator("article.event").all()] == ["1", "2", "3", "4"]
        listing = tabs[-2]
        listing.evaluate(SHOW)
        listing.wait_for_function("() => document.querySelector('#session-rows td.num').textContent === '4'",
                                  timeout=15_000)  # the rows it showed said 2 events
        context.close()


def test_a_session_forgotten_while_its_page_and_the_list_are_open_leaves_both(browser: Any, tmp_path: Path) -> None:
    """`harvester forget` under open pages: the session's page became a 404 only when reloaded (it went on showing
    the forgotten text, its stream reconnecting every few seconds), and the list kept its row until some other
    write: a forget did not move the bank's change clock."""
    import subprocess
    import sys

    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    gone = ClaudeSession(home, "/work/app")
    gone.write(gone.user("a secret pasted here: narwhalsecret"), gone.assistant("noted"))
    kept = ClaudeSession(home, "/work/app")
    kept.write(kept.user("a session that stays"), kept.assistant("stays"))
    scan(home, path)
    env = env_for(home, path, tmp_path / "config.toml")
    viewer = Viewer(env)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(viewer.url)
        page.goto(f"{viewer.base}/session?h=claude-code&id={gone.id}")
        listing = context.new_page()
        listing.goto(f"{viewer.base}/sessions")
        listing.wait_for_selector("#live-note:not([hidden])")
        assert listing.locator("#session-rows a", has_text="narwhalsecret").count() == 1
        page.wait_for_timeout(1500)  # both streams have read the clock

        subprocess.run([sys.executable, "-m", "harvester", "forget", gone.id, "--yes"], env=env, check=True,
                       capture_output=True)
        listing.locator("#session-rows a", has_text="narwhalsecret").wait_for(state="detached", timeout=15_000)
        assert listing.locator("#session-rows a", has_text="a session that stays").count() == 1
        page.locator("h1", has_text="No such session").wait_for(timeout=15_000)
        assert "narwhalsecret" not in page.content()
        context.close()
    finally:
        viewer.stop()


def test_a_sessions_open_page_follows_it_into_a_bank_made_again_under_run_and_serve(browser: Any,
                                                                                    tmp_path: Path) -> None:
    """The bank deleted under `harvester run` is made again and scanned again (issue 23, item 8): the sessions come
    back under other row ids. An open page watched its session's old row id, now another session's, and never
    showed the lines written to its own."""
    import sqlite3

    daemon = Daemon(tmp_path)
    first = ClaudeSession(daemon.home, "/work/live", live=True)
    first.write(first.user("the first session"), first.assistant("first answer"))
    daemon.start()
    viewer = None

    def row_ids() -> dict[str, int]:
        conn = sqlite3.connect(f"file:{daemon.bank}?mode=ro", uri=True)
        try:
            return {native: pk for pk, native in conn.execute("SELECT id, native_id FROM sessions")}
        except sqlite3.OperationalError:  # being made: not there yet
            return {}
        finally:
            conn.close()

    try:
        wait_for(lambda: len(daemon.texts()) == 2, 20, "the service to capture the first session")
        watched = ClaudeSession(daemon.home, "/work/live", live=True)
        watched.write(watched.user("the session whose page is open"), watched.assistant("its answer"))
        wait_for(lambda: len(daemon.texts()) == 4, 20, "the service to capture the second session")
        before = row_ids()[watched.id]
        viewer = Viewer(env_for(daemon.home, daemon.bank, daemon.config, HARVESTER_RUNTIME_DIR=str(daemon.run_dir)))
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(viewer.url)
        page.goto(f"{viewer.base}/session?h=claude-code&id={watched.id}")
        page.wait_for_timeout(1500)

        # The watched session comes back after another: its old row id becomes that other session's.
        aside = tmp_path / "aside.jsonl"
        watched.path.rename(aside)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{daemon.bank}{suffix}").unlink(missing_ok=True)
        wait_for(lambda: daemon.bank.exists() and len(row_ids()) == 1, 30, "the service to make the bank again")
        other = ClaudeSession(daemon.home, "/work/live", live=True)
        other.write(other.user("another session, written meanwhile"))
        wait_for(lambda: len(row_ids()) == 2, 20, "the service to capture another session")
        aside.rename(watched.path)
        wait_for(lambda: len(row_ids()) == 3, 20, "the service to capture the watched session again")
        assert row_ids()[watched.id] != before and row_ids()[other.id] == before  # what this test is about
        watched.write(watched.user("written after the bank was made again: pangolin"))
        page.locator("article.event", has_text="pangolin").wait_for(timeout=20_000)
        assert [a.get_attribute("id") for a in page.locator("article.event").all()] == ["1", "2", "3"]
        context.close()
    finally:
        if viewer is not None:
            viewer.stop()
        daemon.stop()


def test_a_session_that_ends_while_its_page_is_open_is_shown_ended(browser: Any, tmp_path: Path) -> None:
    """The stream said the new state in the badge's text, and left its class (its colour) the live one: "ended" in
    the colours of "live"."""
    (tmp_path / "config.toml").write_text(FAST.replace("idle_end_minutes = 30", "idle_end_minutes = 0.25"))
    daemon = Daemon(tmp_path)
    s = ClaudeSession(daemon.home, "/work/live", live=True)
    s.write(s.user("a session about to go idle"), s.assistant("its answer"))
    daemon.start()
    with _served_under_run(browser, daemon) as (viewer, context, page):
        page.goto(f"{viewer.base}/session?h=claude-code&id={s.id}")
        badge = page.locator("#session-state")
        assert badge.get_attribute("class") == "state live"  # idle for 15 s: it ends with the page open
        page.wait_for_function("() => document.querySelector('#session-state').textContent.startsWith('ended')",
                               timeout=40_000)
        assert badge.get_attribute("class") == "state ended"
        context.close()


def test_an_event_the_agent_rewrites_is_rewritten_on_its_open_page(browser: Any, tmp_path: Path) -> None:
    """Agents that rewrite a record (Gemini CLI re-appends a message under its id as it completes; Aider, Cline, Amp...)
    revise the event in place: an open page appended only events past its last one, and went on showing the first
    version."""
    daemon = Daemon(tmp_path)
    chats = daemon.home / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    sid = str(uuid.uuid4())
    path = chats / f"session-2026-09-20T10-00-{sid[:8]}.jsonl"
    header = {"sessionId": sid, "projectHash": "0" * 64, "startTime": "2026-09-20T10:00:00.000Z",
              "lastUpdated": "2026-09-20T10:00:00.000Z", "kind": "main"}
    ask = {"id": "u1", "timestamp": "2026-09-20T10:00:01.000Z", "type": "user", "content": "explain the budget"}
    answer = {"id": "g1", "timestamp": "2026-09-20T10:00:02.000Z", "type": "gemini", "content": "The budget",
              "model": "gemini-3-flash-preview"}
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (header, ask, answer)))
    daemon.start()
    with _served_under_run(browser, daemon) as (viewer, context, page):
        page.goto(f"{viewer.base}/session?h=gemini-cli&id={sid}")
        assert page.locator("article.event").count() == 2
        page.wait_for_timeout(1500)  # the stream has looked once

        with open(path, "ab") as f:
            f.write(orjson.dumps({**answer, "content": "The budget is shared across workers: wombat"}) + b"\n")
        page.locator("article.event", has_text="wombat").wait_for(timeout=20_000)
        assert [a.get_attribute("id") for a in page.locator("article.event").all()] == ["1", "2"]
        context.close()
