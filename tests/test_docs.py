"""The docs (issue 25): the README stays short, the site in docs/ builds with `mkdocs build --strict` (a broken
link, a missing anchor or a page left out of the nav fails it), offline, and every link from the README into
docs/ lands on a page and a heading that exist. CI runs only `python -m pytest` (`.ci/run`), so this test is
where the docs build runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_BYTES = 15 * 1024  # issue 25: a README a newcomer reads through; the rest is in docs/


def test_the_readme_is_at_most_15_kb() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size:,} bytes; move detail into docs/ (limit {README_MAX_BYTES:,})"


def test_the_docs_build_strict_and_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # A proxy that refuses every connection: a theme or plugin that fetches anything (fonts, the privacy
    # plugin's assets) makes the build fail here, as it would on a machine without network.
    nowhere = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": nowhere, "HTTPS_PROXY": nowhere, "http_proxy": nowhere,
           "https_proxy": nowhere, "NO_PROXY": "", "no_proxy": "", "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    for page in pages:
        html = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert html.is_file(), f"docs/{page}.md was not built"
        assert "fonts.googleapis.com" not in html.read_text(encoding="utf-8"), f"{page}: a font from the network"
    # The command table is written once, in the README, and shown on the commands page from there.
    commands = (site / "commands" / "index.html").read_text(encoding="utf-8")
    assert "harvester connect" in commands and "harvester forget" in commands


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and mkdocs' toc both make it for the plain headings used here."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def test_every_readme_link_into_docs_lands_on_a_page_and_heading() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", readme)
    assert links, "the README links to no docs page"
    for path, anchor in links:
        page = ROOT / path
        assert page.is_file(), f"README links to {path}, which does not exist"
        if anchor:
            headings = re.findall(r"^#{1,6} (.+)$", page.read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, f"README links to {path}#{anchor}: no such heading"
    # Its own anchors too (a section that moved to docs/ leaves no link behind).
    own = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", readme, re.M)}
    for anchor in re.findall(r"\]\(#([^)\s]+)\)", readme):
        assert anchor in own, f"README links to #{anchor}: no such heading"


# The docs pages issue 25 lists (agents, connecting, the bank and archive, search, MCP tools, the team bank, Hindsight,
# configuration, security and privacy, performance, architecture, contributing): each in docs/ and linked from the README.
ISSUE_PAGES = ("agents", "connecting", "bank", "search", "mcp", "team", "hindsight", "configuration", "security",
               "performance", "architecture", "contributing")


def test_the_readme_keeps_the_parts_a_newcomer_needs() -> None:
    """What it is with a picture of the flow, a Quick start that installs, scans, connects the agents and installs
    the login service, the commands table, where the bank lives, the test command, and a link to every docs page."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = {h: body for h, body in re.findall(r"^## (.+)\n((?:(?!^## ).*\n?)*)", readme, re.M)}
    intro = readme.split("\n## ", 1)[0]
    assert "```" in intro and "─▶" in intro, "no picture of the flow before the Quick start"
    quick = sections.get("Quick start", "")
    for step in ("pipx install", "harvester scan", "harvester connect", "harvester install"):
        assert step in quick, f"the Quick start does not show {step!r}"
    assert re.search(r"^\| `harvester \w+", sections.get("Commands", ""), re.M), "no commands table"
    assert "bank.sqlite" in sections.get("Where the bank lives", "")
    assert "python -m pytest" in sections.get("Running the tests", "")
    for page in ISSUE_PAGES:
        assert (ROOT / "docs" / f"{page}.md").is_file(), f"docs/{page}.md is missing"
        assert f"](docs/{page}.md" in readme, f"the README does not link docs/{page}.md"
    assert "```mermaid" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
