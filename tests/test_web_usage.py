"""The usage pages of `harvester serve` (harvester/web/usage_pages.py) in Debian's Chromium: each day's cost by agent
as a server-rendered SVG chart, the sessions by cost linking to their transcripts, the current five-hour block; the
same figures as ``harvester usage --json``; hostile model names in the chart's labels execute nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import httpx
import orjson
import pytest

from tests.helpers import ClaudeSession, scan
from tests.web_browser import Viewer, browser, env_for, screenshots, shoot

__all__ = ["browser"]

HOSTILE_MODEL = '<img src=x onerror="window.__pwned=1">claude-sonnet-4-5'


@pytest.fixture(scope="module")
def spent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("web-usage")
    home, path = tmp / "home", tmp / "bank.sqlite"
    s = ClaudeSession(home, "/work/app", live=True)  # stamped now: in the last 30 days and the current block
    lines = [s.user("price this session")]
    for n, model in enumerate(("claude-sonnet-4-5", "claude-sonnet-4-5", HOSTILE_MODEL)):
        answer = s._envelope("assistant", message={
            "id": f"msg-{n}", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": f"answer {n}"}],
            "usage": {"input_tokens": 100_000, "output_tokens": 20_000}})
        lines.append(orjson.dumps(answer) + b"\n")
    s.write(*lines)
    scan(home, path)
    env = env_for(home, path, tmp / "config.toml")
    viewer = Viewer(env)
    yield {"viewer": viewer, "env": env, "session": s.id}
    viewer.stop()


def test_the_usage_page_charts_daily_cost_lists_sessions_by_cost_and_the_current_block(
        browser: Any, spent: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    viewer = spent["viewer"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(viewer.url)
    page.locator("header nav a", has_text="Usage").click()
    page.wait_for_url("**/usage")
    cli = subprocess.run([sys.executable, "-m", "harvester", "usage", "--json"], env=spent["env"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    total = json.loads(cli.stdout)["totals"]["cost_usd"]
    assert total and page.locator("#usage-total").inner_text() == f"${total:,.2f}"  # the CLI's figure
    bars = page.locator("#daily-chart rect")
    assert bars.count() >= 1
    assert "claude-code" in bars.first.locator("title").text_content()
    dear = page.locator("#dear-sessions tbody a")
    assert dear.first.inner_text() == "price this session"
    block = page.locator("#block").inner_text()
    assert "360,000 tokens" in block and " UTC" in block  # three responses of 120,000 tokens, this hour
    shoot(page, screenshots(tmp_path_factory), "usage")
    page.goto(f"{viewer.base}/usage?by=model")
    labels = page.locator("p.legend").inner_text()
    assert HOSTILE_MODEL in labels  # shown as text
    assert page.evaluate("typeof window.__pwned") == "undefined" and not dialogs
    assert page.locator("img, [onerror]").count() == 0
    page.goto(f"{viewer.base}/sessions")  # the list gives each session its tokens and cost, as `sessions` does
    cells = page.locator("#session-rows tr", has_text="price this session").locator("td").all_inner_texts()
    listed = subprocess.run([sys.executable, "-m", "harvester", "sessions"], env=spent["env"], capture_output=True,
                            text=True, timeout=120).stdout
    assert cells[7] == "360k" and cells[8].startswith("$1.20") and cells[8] in listed, (cells, listed)
    page.goto(f"{viewer.base}/usage")
    page.locator("#dear-sessions tbody a").first.click()
    page.wait_for_url("**/session?**")
    assert spent["session"] in page.locator("dl.facts").inner_text()
    page.close()


def test_the_current_block_is_the_whole_historys_after_days_of_work_around_the_clock(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # A response every twenty minutes for over two days up to a minute ago, no gap: the block running now is
    # chained from the first response, out of step with one chained from the first since the local midnight two
    # days back (the viewer once read only those).
    from datetime import datetime, timedelta

    from tests.test_usage_options import _claude_at

    tmp = tmp_path_factory.mktemp("web-usage-clock")
    home, path = tmp / "home", tmp / "bank.sqlite"
    now = datetime.now(UTC).replace(microsecond=0)
    cut = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=2)
    times = [now - timedelta(minutes=1)]

    def hour_of(when: datetime) -> datetime:
        return when.astimezone(UTC).replace(minute=0, second=0, microsecond=0)

    while times[-1] > cut - timedelta(minutes=40) or (hour_of(cut) - hour_of(times[-1])) % timedelta(hours=5) == (
            timedelta(0)):
        times.append(times[-1] - timedelta(minutes=20))
    times.reverse()
    _claude_at(home, "/work/app", "clock", times)
    scan(home, path)
    env = env_for(home, path, tmp / "config.toml")
    cli = subprocess.run([sys.executable, "-m", "harvester", "usage", "blocks", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    active = [b for b in json.loads(cli.stdout)["blocks"] if b["active"]]
    assert len(active) == 1, cli.stderr
    viewer = Viewer(env)
    try:
        with httpx.Client(follow_redirects=True, timeout=60) as http:
            http.get(viewer.url)  # the token, for the cookie
            shown = http.get(f"{viewer.base}/usage").text
    finally:
        viewer.stop()
    card = shown[shown.index('id="block"'):][:600]
    start = active[0]["start"].replace("T", " ")[:16]
    assert f"{start} to {active[0]['end'][11:16]} UTC" in card, card
    assert f"{active[0]['total_tokens']:,} tokens" in card, card
