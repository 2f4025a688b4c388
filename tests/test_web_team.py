"""`harvester serve --team`: the viewer's pages over the team bank on a real PostgreSQL (tests/services.py).

A teammate's machine pushes its session; this machine's viewer lists the repository with the machine it came from,
lists the session with its host, shows its transcript numbered as the CLI does, and finds it by search; the real
server started with --team serves the same.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from harvester.web.access import cookie_name
from harvester.web.app import Served, create_app
from harvester.web.reading import LocalSource, TeamSource
from tests.helpers import ClaudeSession, make_repo, scan
from tests.web_browser import Viewer, env_for, settings_for

PHRASE = "the flaky checkout retry budget"
PORT = 8765


def _client(settings: Any) -> tuple[TestClient, TeamSource]:
    """The viewer over the team bank ``settings`` name (this machine's bank beside it), as a test client holding
    the token's cookie; and the team source, for the test to close."""
    source = TeamSource(settings)
    app = create_app(Served(source, LocalSource(str(settings.bank)), settings, "127.0.0.1", PORT, "tok"))
    client = TestClient(app, base_url=f"http://127.0.0.1:{PORT}")
    client.cookies.set(cookie_name(PORT), "tok")
    return client, source


@pytest.fixture(scope="module")
def team(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("web-team")
    url = postgres_server.uri("web_team")
    home = tmp / "beta"
    repo = make_repo(home / "src" / "shop", origin="https://github.com/acme/shop")
    theirs = ClaudeSession(home, str(repo))
    theirs.write(theirs.user(f"why does {PHRASE} run out?"), theirs.assistant(f"{PHRASE}: made it per worker."))
    bank = home / "bank.sqlite"
    scan(home, bank)
    env = env_for(home, bank, tmp / "config.toml", HARVESTER_TEAM_BANK=url, HARVESTER_HOST_NAME="beta-host")
    pushed = subprocess.run([*_harvester(), "team", "push"], env=env, capture_output=True, text=True, timeout=120)
    assert pushed.returncode == 0, pushed.stderr
    alpha = tmp / "alpha"
    alpha.mkdir()
    yield {"url": url, "session": theirs.id, "alpha": alpha,
           "env": env_for(alpha, alpha / "bank.sqlite", tmp / "alpha.toml", HARVESTER_TEAM_BANK=url,
                          HARVESTER_HOST_NAME="alpha-host")}


def _harvester() -> list[str]:
    import sys

    return [sys.executable, "-m", "harvester"]


def test_the_team_banks_repositories_sessions_transcript_and_search(team: dict[str, Any]) -> None:
    settings = settings_for({"HOME": str(team["alpha"]), "HARVESTER_TEAM_BANK": team["url"],
                            "HARVESTER_HOST_NAME": "alpha-host"}, bank=str(team["alpha"] / "bank.sqlite"))
    client, source = _client(settings)
    with client as c:
        home = c.get("/")
        assert home.status_code == 200 and "team bank" in home.text
        assert "coding-agent::shop" in home.text and "beta-host" in home.text
        listing = c.get(unescape(re.search(r'class="repo" href="([^"]+)"', home.text)[1]))
        assert f"why does {PHRASE} run out?" in listing.text and "beta-host" in listing.text
        assert 'id="sessions" data-live="/live/sessions' in listing.text  # live by the pushes' stamps
        transcript = c.get(unescape(re.search(r'href="(/session\?[^"]+)"', listing.text)[1]))
        assert transcript.status_code == 200
        assert re.findall(r'<a class="seq" href="#(\d+)">', transcript.text) == ["1", "2"]
        assert f"harvester show {team['session']} --around 2 --team" in transcript.text
        assert 'data-live="/live/session?' in transcript.text  # live by the session's push stamp
        found = c.get("/search", params={"q": "flaky checkout"})
        assert "2 matches" in found.text and "<mark>flaky</mark>" in found.text
        assert f"id={team['session']}" in unescape(found.text) and "#1" in found.text
    source.close()


def test_serve_team_serves_the_team_bank(team: dict[str, Any]) -> None:
    import httpx

    viewer = Viewer(team["env"], "--team")
    try:
        with httpx.Client(follow_redirects=True) as http:
            page = http.get(viewer.url)
            assert page.status_code == 200 and "coding-agent::shop" in page.text and "beta-host" in page.text
    finally:
        viewer.stop()


def test_serve_team_without_a_team_bank_says_so(tmp_path: Path) -> None:
    env = env_for(tmp_path, tmp_path / "bank.sqlite", tmp_path / "config.toml")
    said = subprocess.run([*_harvester(), "serve", "--team"], env=env, capture_output=True, text=True, timeout=60)
    assert said.returncode == 1 and "--team: no team bank is set" in said.stderr


def test_the_usage_page_under_team_is_the_team_banks_usage(team: dict[str, Any]) -> None:
    """This machine (alpha) never ran an agent: its usage is nothing; the page under --team is every machine's, the
    figure `harvester usage --team` gives for the same days, with the teammate's session among the dearest."""
    import json
    from datetime import date, timedelta

    settings = settings_for({"HOME": str(team["alpha"]), "HARVESTER_TEAM_BANK": team["url"],
                            "HARVESTER_HOST_NAME": "alpha-host"}, bank=str(team["alpha"] / "bank.sqlite"))
    client, source = _client(settings)
    since = (date.today() - timedelta(days=89)).isoformat()
    cli = subprocess.run([*_harvester(), "usage", "--team", "--json", "--since", since], env=team["env"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    totals = json.loads(cli.stdout)["totals"]
    assert totals["responses"] >= 1 and totals["cost_usd"] > 0
    with client as c:
        shown = c.get("/usage", params={"days": "90"})
        assert shown.status_code == 200 and "of the team bank" in shown.text
        assert re.search(r'id="usage-total">([^<]+)<', shown.text)[1] == f"${totals['cost_usd']:,.2f}"
        dear = shown.text.split('id="dear-sessions"', 1)[1]
        assert f"why does {PHRASE} run out?" in unescape(dear) and f"id={team['session']}" in unescape(dear)
    source.close()


def test_the_status_page_under_team_reports_the_team_bank_and_labels_this_machines_own(
        team: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --team the status page is the team bank's: the machines that pushed (the teammate's host, its sessions
    and events, its last push) and each agent's sessions on each machine; this machine's service, archive, sinks
    and push are labelled as this machine's, not passed off as the team's."""
    monkeypatch.setenv("HARVESTER_HOST_NAME", "alpha-host")  # read when asked (TeamSettings.host_name)
    settings = settings_for({"HOME": str(team["alpha"]), "HARVESTER_TEAM_BANK": team["url"],
                            "HARVESTER_HOST_NAME": "alpha-host"}, bank=str(team["alpha"] / "bank.sqlite"))
    client, source = _client(settings)
    with client as c:
        shown = c.get("/status")
        assert shown.status_code == 200 and "team bank" in shown.text
        machines = shown.text.split('id="team-machines"', 1)[1].split("</table>", 1)[0]
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", machines, re.S)]
        assert cells[:4] == ["beta-host", cells[1], "1", "2"], cells  # the teammate's machine: 1 session, 2 events
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d", cells[4]), cells  # its last push
        agents = shown.text.split('id="team-agents"', 1)[1].split("</table>", 1)[0]
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", agents, re.S)]
        assert cells[:4] == ["claude-code", "beta-host", "1", "2"], cells
        assert 'id="agents"' not in shown.text  # this machine's agents table is not the team's
        assert "This machine (alpha-host)" in shown.text  # its service, archive, sinks and push: said as its own
    source.close()


def test_unrelated_repositories_of_one_name_are_two_rows_each_with_its_own_sessions(
        postgres_server: Any, tmp_path: Path) -> None:
    """Two teammates' repositories both called "shop" (acme's and another organisation's): the team bank keeps
    them apart by identity (their origins), and so does the viewer: two rows, each listing only its sessions, and
    a search scoped to one finds nothing of the other."""
    url = postgres_server.uri("web_team_names")
    ids = {}
    for host, origin in (("gamma-host", "https://github.com/acme/shop"), ("delta-host", "https://github.com/other/shop")):
        home = tmp_path / host
        repo = make_repo(home / "src" / "shop", origin=origin)
        s = ClaudeSession(home, str(repo))
        s.write(s.user(f"the okapi question on {host}"), s.assistant("answered"))
        scan(home, home / "bank.sqlite")
        env = env_for(home, home / "bank.sqlite", tmp_path / f"{host}.toml", HARVESTER_TEAM_BANK=url,
                      HARVESTER_HOST_NAME=host)
        pushed = subprocess.run([*_harvester(), "team", "push"], env=env, capture_output=True, text=True, timeout=120)
        assert pushed.returncode == 0, pushed.stderr
        ids[host] = s.id
    settings = settings_for({"HOME": str(tmp_path), "HARVESTER_TEAM_BANK": url}, bank=str(tmp_path / "bank.sqlite"))
    client, source = _client(settings)
    with client as c:
        rows = re.findall(r'<a class="repo" href="([^"]+)">([^<]+)</a>', c.get("/").text)
        assert [label for _, label in rows] == ["coding-agent::shop", "coding-agent::shop"], rows
        listed = []
        for href, _ in rows:
            listing = unescape(c.get(unescape(href)).text)
            listed.append(sorted(host for host, sid in ids.items() if f"id={sid}" in listing))
        assert sorted(listed) == [["delta-host"], ["gamma-host"]], listed
        search = c.get("/search", params={"q": "okapi"}).text
        options = re.findall(r'<option value="([^"]+)">coding-agent::shop</option>', search)
        assert len(options) == 2, options
        found = [sorted(host for host, sid in ids.items()
                        if f"id={sid}" in unescape(c.get("/search", params={"q": "okapi", "repo": unescape(o)}).text))
                 for o in options]
        assert sorted(found) == [["delta-host"], ["gamma-host"]], found
    source.close()


def test_the_team_sessions_list_gives_each_session_the_tokens_and_cost_usage_team_gives_it(
        postgres_server: Any, tmp_path: Path) -> None:
    """Under --team a session's row gives the tokens and cost `harvester usage session --team` gives it (each
    response once, its cache tokens counted, priced by the catalogue), not a bare sum of its events' input and
    output tokens without a cost."""
    import json

    url = postgres_server.uri("web_team_cost")
    home = tmp_path / "eps"
    s = ClaudeSession(home, "/work/app")
    answer = s._envelope("assistant", message={
        "id": "msg-cached", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "priced"}],
        "usage": {"input_tokens": 1000, "output_tokens": 20_000, "cache_read_input_tokens": 400_000}})
    s.write(s.user("price this session on the team bank"), orjson.dumps(answer) + b"\n")
    scan(home, home / "bank.sqlite")
    env = env_for(home, home / "bank.sqlite", tmp_path / "eps.toml", HARVESTER_TEAM_BANK=url,
                  HARVESTER_HOST_NAME="eps-host")
    pushed = subprocess.run([*_harvester(), "team", "push"], env=env, capture_output=True, text=True, timeout=120)
    assert pushed.returncode == 0, pushed.stderr
    cli = subprocess.run([*_harvester(), "usage", "session", "--team", "--json"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    row = next(r for r in json.loads(cli.stdout)["rows"] if r["session"] == s.id)
    assert row["total_tokens"] == 421_000 and row["cost_usd"] > 0
    from harvester.usage.sessions import short

    tokens, cost = short(row)
    settings = settings_for({"HOME": str(tmp_path), "HARVESTER_TEAM_BANK": url}, bank=str(tmp_path / "bank.sqlite"))
    client, source = _client(settings)
    with client as c:
        listing = c.get("/sessions").text
    source.close()
    found = re.search(r"<tr[^>]*>\s*<td class=\"title[^>]*>.*?price this session on the team bank.*?</tr>", listing, re.S)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", found[0], re.S)]
    assert (cells[7], cells[8]) == (tokens, cost) == ("421k", cost), cells


def _sse_until(stream: Any, wanted: str) -> list[str]:
    """The lines of a server-sent event stream up to one holding ``wanted`` (or its read timeout)."""
    import httpx

    lines: list[str] = []
    try:
        for line in stream.iter_lines():
            lines.append(line)
            if wanted in line:
                break
    except httpx.ReadTimeout:
        pass
    return lines


def test_under_team_a_transcript_and_the_sessions_list_update_live_as_teammates_push(
        postgres_server: Any, tmp_path: Path) -> None:
    """The team bank has no change clock, but each push that changes something stamps its machine's row and each
    session it changes: a transcript open under --team gets the events a teammate pushes after, and the sessions
    list is told to fetch its rows again when a push lands."""
    import time

    import httpx

    url = postgres_server.uri("web_team_live")
    home = tmp_path / "zeta"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("the first question"), s.assistant("the first answer"))
    env = env_for(home, home / "bank.sqlite", tmp_path / "zeta.toml", HARVESTER_TEAM_BANK=url,
                  HARVESTER_HOST_NAME="zeta-host")

    def push() -> None:
        scan(home, home / "bank.sqlite")
        done = subprocess.run([*_harvester(), "team", "push"], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    push()
    alpha = tmp_path / "alpha"
    alpha.mkdir()
    viewer = Viewer(env_for(alpha, alpha / "bank.sqlite", tmp_path / "alpha.toml", HARVESTER_TEAM_BANK=url), "--team")
    try:
        with httpx.Client(timeout=httpx.Timeout(30, read=10), follow_redirects=True) as http:
            http.get(viewer.url)  # the cookie
            page = http.get(f"{viewer.base}/session", params={"h": "claude-code", "id": s.id}).text
            live = unescape(re.search(r'<section id="events" data-live="([^"]*)"', page)[1])
            assert live.startswith("/live/session?"), live
            with http.stream("GET", viewer.base + live) as stream:
                time.sleep(1.5)  # the stream has read the session's stamp once
                s.write(s.user("a question pushed while the page is open: axolotl"))
                push()
                said = "\n".join(_sse_until(stream, "axolotl"))
            assert 'id="3"' in said and "axolotl" in said, said
            listing = http.get(f"{viewer.base}/sessions").text
            assert 'data-live="/live/sessions' in listing
            with http.stream("GET", f"{viewer.base}/live/sessions") as stream:
                time.sleep(1.5)
                other = ClaudeSession(home, "/work/app")
                other.write(other.user("a new session pushed: capybara"))
                push()
                said = "\n".join(_sse_until(stream, "event: changed"))
            assert "event: changed" in said, said
            assert "capybara" in http.get(f"{viewer.base}/sessions/rows").text
    finally:
        viewer.stop()
