"""Who may read `harvester serve`, and what it lets a page do (harvester/web/access.py), with Starlette's TestClient
over a real bank; and the real server: it listens on loopback only, unless --host is given (with a warning).

- a request without the token, or with a wrong one, is refused on every route; the token in the URL is traded for
  a cookie (and leaves the URL);
- a foreign Host (DNS rebinding) or Origin is refused, even with the cookie;
- no endpoint writes: every method but GET and HEAD is refused, and reading every page leaves the bank's bytes as
  they were and nothing beside it;
- every response carries the strict CSP; no template marks text safe or holds inline script or style;
- the commands a page copies quote a hostile session id for a shell.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import psutil
import pytest
from starlette.testclient import TestClient

from harvester.web.access import CSP, cookie_name
from harvester.web.app import HERE, Served, create_app
from harvester.web.reading import LocalSource
from harvester.web.transcript import around_command, copy_commands
from tests.helpers import ClaudeSession, scan
from tests.web_browser import settings_for

ROOT = Path(__file__).resolve().parent.parent
PORT = 8765
TOKEN = "the-right-token"
ROUTES = ("/", "/sessions", "/sessions/rows", "/session?h=claude-code&id=x", "/search?q=quasar", "/status",
          "/go?id=x", "/usage", "/live/sessions", "/static/app.css")


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("web-access")
    home, path = tmp / "home", tmp / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("why does the quasarparser crash?"),
            s.tool_use("Edit", {"file_path": "/work/app/a.py", "old_string": "a = 1", "new_string": "a = 2"}, "t1"),
            s.tool_result("t1", "ok"), s.assistant("fixed the quasarparser"))
    scan(home, path)
    return {"home": home, "path": path, "session": s.id, "tmp": tmp}


@pytest.fixture
def client(bank: dict[str, Any]) -> Iterator[TestClient]:
    settings = settings_for({"HOME": str(bank["home"])}, bank=str(bank["path"]))
    source = LocalSource(str(bank["path"]))
    app = create_app(Served(source, source, settings, "127.0.0.1", PORT, TOKEN))
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as c:
        yield c
    source.close()


def signed_in(c: TestClient) -> TestClient:
    c.cookies.set(cookie_name(PORT), TOKEN)
    return c


def test_every_route_refuses_a_request_without_the_token_or_with_a_wrong_one(client: TestClient) -> None:
    for route in ROUTES:
        r = client.get(route)
        assert r.status_code == 403, route
        assert "quasarparser" not in r.text
    client.cookies.set(cookie_name(PORT), "a-guess")
    for route in ROUTES:
        assert client.get(route).status_code == 403, route
    assert client.get("/?token=a-guess", follow_redirects=False).status_code == 403


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_url(client: TestClient) -> None:
    r = client.get(f"/sessions?agent=claude-code&token={TOKEN}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/sessions?agent=claude-code"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(PORT)}={TOKEN};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = client.get("/sessions")  # the client kept the cookie
    assert page.status_code == 200 and "quasarparser" in page.text
    # A redirect never leaves this server, whatever path the request named.
    r = client.get(f"//evil.example/?token={TOKEN}", follow_redirects=False)
    assert r.headers["location"].startswith("/") and not r.headers["location"].startswith("//")


def test_a_foreign_host_or_origin_is_refused_even_with_the_cookie(client: TestClient) -> None:
    c = signed_in(client)
    assert c.get("/").status_code == 200
    for host in ("evil.example", f"evil.example:{PORT}", f"127.0.0.1.evil.example:{PORT}", "127.0.0.1:9999",
                 f"localhost.:{PORT}", ""):
        r = c.get("/sessions", headers={"host": host})
        assert r.status_code == 421, host
        assert "quasarparser" not in r.text
    for origin in ("http://evil.example", f"http://evil.example:{PORT}", f"https://127.0.0.1:{PORT}", "null"):
        r = c.get("/sessions", headers={"origin": origin})
        assert r.status_code == 403, origin
        assert "quasarparser" not in r.text
    for host in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}"):
        assert c.get("/sessions", headers={"host": host, "origin": f"http://{host}"}).status_code == 200, host


def test_beyond_loopback_an_ip_address_of_its_port_is_its_name_and_a_domain_name_is_still_refused(
        bank: dict[str, Any], client: TestClient) -> None:
    c = signed_in(client)  # on loopback: another address is refused too
    assert c.get("/", headers={"host": f"10.1.2.3:{PORT}"}).status_code == 421
    settings = settings_for({"HOME": str(bank["home"])}, bank=str(bank["path"]))
    source = LocalSource(str(bank["path"]))
    served = Served(source, source, settings, "0.0.0.0", PORT, TOKEN, host_note="listening on 0.0.0.0")
    with TestClient(create_app(served), base_url=f"http://10.1.2.3:{PORT}") as wide:
        signed_in(wide)
        for host in (f"10.1.2.3:{PORT}", f"[fe80::1]:{PORT}", f"127.0.0.1:{PORT}"):
            r = wide.get("/", headers={"host": host, "origin": f"http://{host}"})
            assert r.status_code == 200 and "listening on 0.0.0.0" in r.text, host
        for host in (f"evil.example:{PORT}", "10.1.2.3:9999", "10.1.2.3"):
            assert wide.get("/", headers={"host": host}).status_code == 421, host
        assert wide.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    source.close()


def test_no_endpoint_writes_and_reading_every_page_changes_no_byte_of_the_bank(client: TestClient,
                                                                                bank: dict[str, Any]) -> None:
    c = signed_in(client)
    path: Path = bank["path"]
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    beside = sorted(p.name for p in path.parent.iterdir())
    for route in ROUTES:
        for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            r = c.request(method, route)
            assert r.status_code == 405 and "read-only" in r.text, (method, route)  # refused before any route
    sessions = c.get("/sessions").text
    transcript = unescape(re.search(r'href="(/session\?[^"]+)"', sessions)[1])
    for route in (*ROUTES, transcript, "/status?all=1", "/search?q=fixed&role=assistant"):
        if not route.startswith("/live"):
            assert c.get(route).status_code in (200, 404), route
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in path.parent.iterdir()) == beside  # no -wal, -shm or journal made beside it


def test_every_response_has_the_strict_csp_and_no_template_marks_text_safe(client: TestClient) -> None:
    c = signed_in(client)
    assert "unsafe" not in CSP and "default-src 'self'" in CSP and "script-src 'self'" in CSP
    for route in ("/", "/sessions", "/search?q=quasarparser", "/status", "/static/app.js", "/nowhere"):
        r = c.get(route)
        assert r.headers["content-security-policy"] == CSP, route
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
    assert c.get("/").headers["content-security-policy"] == CSP  # and the refusals carry it too
    client.cookies.clear()
    assert client.get("/").headers["content-security-policy"] == CSP
    for template in (HERE / "templates").iterdir():
        text = template.read_text()
        assert "|safe" not in text.replace(" ", "") and "Markup" not in text, template.name
        assert re.search(r"<script(?![^>]*\bsrc=)", text) is None, template.name  # no inline script
        assert re.search(r"\son\w+\s*=", text) is None and " style=" not in text, template.name


def test_copied_commands_quote_a_hostile_session_id_for_a_shell() -> None:
    row = {"id": 7, "native_id": "x'; touch /tmp/pwned; echo '", "harness": "claude-code"}
    for _, command in copy_commands(row):
        assert "touch /tmp/pwned" not in command.replace("'\"'\"'", "") or command.count("'") >= 2
        assert subprocess.run(["sh", "-n", "-c", command]).returncode == 0  # one command, parsed
    quoted = around_command(row, 12)
    assert quoted.startswith("harvester show '") and quoted.endswith(" --around 12")
    # An id with a newline or a control character is named by the bank's row id: nothing to paste into a terminal.
    for native in ("abc\nrm -rf ~", "abc\x1b]52;c;AAAA\x07", "abc\u202edef"):
        row = {"id": 7, "native_id": native, "harness": "claude-code"}
        assert around_command(row, 3) == "harvester show 7 --around 3"
        assert all(native not in command for _, command in copy_commands(row))


# --- the real server -----------------------------------------------------------------------------------------------

def _serve(bank: dict[str, Any], *args: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_"))}
    (bank["tmp"] / "config.toml").write_text("")
    env.update(HOME=str(bank["home"]), HARVESTER_BANK=str(bank["path"]), PYTHONPATH=str(ROOT),
               HARVESTER_CONFIG=str(bank["tmp"] / "config.toml"))
    proc = subprocess.Popen([sys.executable, "-m", "harvester", "serve", "--port", "0", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"(http://\S+)", line)
    assert match, (line, proc.stderr.read() if proc.poll() is not None else "")  # type: ignore[union-attr]
    return proc, match[1]


def _listening(pid: int) -> list[str]:
    for _ in range(50):
        found = [c.laddr.ip for c in psutil.Process(pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
        if found:
            return found
        time.sleep(0.1)
    return []


def test_the_server_listens_on_loopback_only_and_answers_the_printed_url(bank: dict[str, Any]) -> None:
    import httpx

    proc, url = _serve(bank)
    try:
        assert url.startswith("http://127.0.0.1:") and "token=" in url
        assert _listening(proc.pid) == ["127.0.0.1"]
        with httpx.Client(follow_redirects=True) as http:
            r = http.get(url)
            assert r.status_code == 200 and "coding-agent::app" in r.text
            assert http.get(url.split("?")[0] + "sessions").status_code == 200  # the cookie now
        assert httpx.get(url.split("?")[0]).status_code == 403  # no cookie, no token
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_another_address_is_only_bound_when_named_and_then_with_a_warning(bank: dict[str, Any]) -> None:
    proc, url = _serve(bank, "--host", "0.0.0.0")
    try:
        assert url.startswith("http://0.0.0.0:")
        assert _listening(proc.pid) == ["0.0.0.0"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "WARNING: listening on 0.0.0.0" in proc.stderr.read()  # type: ignore[union-attr]


# --- every page over what real agents wrote ------------------------------------------------------------------------

def test_every_page_of_every_session_renders_over_the_real_captures_and_every_agents_store(
        tmp_path: Path) -> None:
    """Every captured real run (fixtures/*/real/) and every agent's hand-written store: each repository, each page
    of sessions, each page of every transcript, a search and status answer 200, whatever the agents wrote."""
    from tests.machine import lay_out_every_store, real_capture_bank

    path = real_capture_bank(tmp_path)
    home = tmp_path / "home"
    lay_out_every_store(home)
    scan(home, path)
    settings = settings_for({"HOME": str(home)}, bank=str(path))
    source = LocalSource(str(path))
    pages_seen = sessions_seen = 0
    with TestClient(create_app(Served(source, source, settings, "127.0.0.1", PORT, TOKEN)),
                    base_url=f"http://127.0.0.1:{PORT}") as c:
        signed_in(c)
        home_page = c.get("/")
        assert home_page.status_code == 200
        listings = [unescape(h) for h in re.findall(r'class="repo" href="([^"]+)"', home_page.text)]
        assert listings
        transcripts: set[str] = set()
        for listing in ["/sessions", *listings]:
            while listing:
                r = c.get(listing)
                assert r.status_code == 200, listing
                transcripts.update(unescape(h) for h in re.findall(r'href="(/session\?[^"]+)"', r.text))
                more = re.search(r'<a href="([^"]+)">older →</a>', r.text)
                listing = unescape(more[1]) if more else ""
        for transcript in sorted(transcripts):
            sessions_seen += 1
            while transcript:
                r = c.get(transcript)
                assert r.status_code == 200, transcript
                assert r.text.count('<article class="event') >= 1 or "0 events" in r.text, transcript
                pages_seen += 1
                more = re.search(r'<a href="([^"]+)">later events →</a>', r.text)
                transcript = unescape(more[1]) if more else ""
        for route in ("/search?q=the", "/search?q=file&role=assistant&kind=tool_call", "/status", "/status?all=1"):
            assert c.get(route).status_code == 200, route
    source.close()
    with open_bank_readonly(path) as conn:
        assert sessions_seen == conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    assert pages_seen >= sessions_seen


def open_bank_readonly(path: Path) -> Any:
    import contextlib
    import sqlite3

    return contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True))


def test_before_the_first_scan_pages_say_so_and_status_still_lists_the_agents_found(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    ClaudeSession(home, "/work/app").write(b"")  # Claude Code's store is here, nothing captured yet
    settings = settings_for({"HOME": str(home)}, bank=str(path))
    source = LocalSource(str(path))
    with TestClient(create_app(Served(source, source, settings, "127.0.0.1", PORT, TOKEN)),
                    base_url=f"http://127.0.0.1:{PORT}") as c:
        signed_in(c)
        r = c.get("/")
        assert r.status_code == 503 and "No history yet" in r.text
        status = c.get("/status")
        assert status.status_code == 200 and "claude-code" in status.text
    assert not path.exists()  # nothing made


def test_what_a_scan_writes_after_the_viewer_opened_the_bank_is_shown(tmp_path: Path) -> None:
    """The viewer opened the bank while no writer held it (SQLite's immutable read); a scan in another process then
    adds a session and closes (its WAL checkpointed away): the next page shows it."""
    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    first = ClaudeSession(home, "/work/app")
    first.write(first.user("the first session"), first.assistant("ok"))
    scan(home, path)
    assert not Path(f"{path}-wal").exists()
    settings = settings_for({"HOME": str(home)}, bank=str(path))
    source = LocalSource(str(path))
    with TestClient(create_app(Served(source, source, settings, "127.0.0.1", PORT, TOKEN)),
                    base_url=f"http://127.0.0.1:{PORT}") as c:
        signed_in(c)
        assert "the first session" in c.get("/sessions").text
        second = ClaudeSession(home, "/work/app")
        second.write(second.user("a second session, scanned later"), second.assistant("ok"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HARVESTER_", "XDG_"))}
        (tmp_path / "config.toml").write_text("")
        env.update(HOME=str(home), HARVESTER_BANK=str(path), HARVESTER_CONFIG=str(tmp_path / "config.toml"),
                   PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-m", "harvester", "scan"], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        listing = c.get("/sessions").text
        assert "a second session, scanned later" in listing and "the first session" in listing
        assert "a second session, scanned later" in c.get("/search?q=scanned").text
    source.close()


def test_the_status_page_shows_each_agents_problems_the_sinks_and_the_team_push_lag(tmp_path: Path) -> None:
    """Status as a page: an agent's malformed record counted with the problem (its file and line), a sink's queue
    and the team push's lag, as `harvester status --json` gathers them."""
    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("a session with a broken line"), b"{this is not json\n", s.assistant("ok"))
    scan(home, path)
    env = {"HOME": str(home), "HARVESTER_TEAM_BANK": "postgresql://nobody@127.0.0.1:9/team"}
    config = tmp_path / "config.toml"
    config.write_text('[sinks.hindsight]\nurl = "http://127.0.0.1:9"\n')
    settings = settings_for({**env, "HARVESTER_CONFIG": str(config)}, bank=str(path))
    assert settings.sinks and settings.team is not None
    source = LocalSource(str(path))
    with TestClient(create_app(Served(source, source, settings, "127.0.0.1", PORT, TOKEN)),
                    base_url=f"http://127.0.0.1:{PORT}") as c:
        text = signed_in(c).get("/status").text
    source.close()
    row = re.search(r"<tr[^>]*>\s*<td>Claude Code.*?</tr>", text, re.S)[0]
    cells = [re.sub(r"<[^>]+>", " ", c).split() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[1] == ["yes"] and cells[2] == ["1"] and cells[5] == ["1"], cells  # found, 1 session, 1 malformed
    assert "malformed" in cells[8] and any(w.endswith(".jsonl:2") for w in cells[8]), cells  # the file and line
    assert "<h3>sink hindsight</h3>" in text
    sink = dict(re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", text.split("<h3>sink hindsight</h3>")[1]
                           .split("</table>")[0]))
    assert sink["unqueued"] == "1" and sink["url"] == "http://127.0.0.1:9", sink
    push = dict(re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", text.split('id="team-push"')[1]
                           .split("</table>")[0]))
    assert push["lag.events"] == "2" and push["lag.sessions"] == "1", push  # nothing pushed yet: the whole session
    archive = re.sub(r"<[^>]+>", " ", text.split('id="archive"')[1].split("</div>")[0]).split()
    assert archive[2:4] == ["on", "·"] and archive[-3:] == ["of", "1", "sources"], archive  # the one source archived
    service = re.sub(r"<[^>]+>", " ", text.split('id="service"')[1].split("</div>")[0])
    assert "not running" in service, service


def test_open_hands_the_printed_url_to_the_browser(bank: dict[str, Any], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """--open: the URL with its token goes to the user's browser ($BROWSER, as Python's webbrowser reads it)."""
    opened = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", f"{browser} %s")
    proc, url = _serve(bank, "--open")
    try:
        for _ in range(100):
            if opened.exists() and opened.read_text():
                break
            time.sleep(0.1)
        assert opened.read_text() == url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_live_transcript_gets_every_event_of_a_large_write_not_only_its_first_page(tmp_path: Path) -> None:
    """A session's live stream (harvester/web/live.py) after one write of 160 events, the clock moved once: all 160
    reach the page, not the first page of a hundred with the rest left until the session changes again."""
    import httpx

    from tests.web_browser import Viewer, env_for

    home, path = tmp_path / "home", tmp_path / "bank.sqlite"
    s = ClaudeSession(home, "/work/app")
    s.write(s.user("start"), s.assistant("ok"))
    scan(home, path)
    viewer = Viewer(env_for(home, path, tmp_path / "config.toml"))
    seen: list[int] = []
    try:
        with httpx.Client(timeout=httpx.Timeout(30, read=8), follow_redirects=True) as http:
            http.get(viewer.url)  # the cookie
            with http.stream("GET", f"{viewer.base}/live/session",
                             params={"h": "claude-code", "id": s.id, "after": 2}) as stream:
                assert stream.status_code == 200
                time.sleep(1.5)  # the stream has read the session's stamp once
                s.write(*s.conversation(80))
                scan(home, path)
                try:
                    for line in stream.iter_lines():
                        seen += [int(n) for n in re.findall(r'<article [^>]*\bid="(\d+)"', line)]
                        if len(seen) >= 160:
                            break
                except httpx.ReadTimeout:
                    pass  # nothing more came
    finally:
        viewer.stop()
    assert seen == list(range(3, 163)), (len(seen), seen[-3:])


def test_the_token_redirect_stays_on_this_server_whatever_the_path(client: TestClient) -> None:
    """The redirect that trades the token for the cookie goes to the same path: a path a browser would read as
    another host (``//host``, ``/\\host``: browsers take a backslash for a slash) is sent to / instead."""
    for path in ("//evil.example/", "/\\evil.example/", "/%5Cevil.example/", "/%2F%2Fevil.example/", "/日本"):
        r = client.get(f"{path}?token={TOKEN}", follow_redirects=False)
        assert r.status_code == 303, path
        where = r.headers["location"]
        assert where.startswith("/") and not where.startswith(("//", "/\\")), (path, where)
