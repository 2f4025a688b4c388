"""mkdocs hooks for the docs site (mkdocs.yml `hooks:`).

The README's command table escapes the `|` of a usage's alternatives (`[--repo PATH \\| --here]`), as GitHub
requires inside a table even in a code span; Python-Markdown keeps the backslash there. The commands page
shows that table, so `\\|` in a code span is shown as `|` (no page means a backslash before a pipe)."""

from __future__ import annotations

import re
from typing import Any

_CODE = re.compile(r"<code>(.*?)</code>", re.S)


def on_page_content(html: str, page: Any, **_: Any) -> str:
    return _CODE.sub(lambda m: "<code>" + m[1].replace("\\|", "|") + "</code>", html)
