"""The seal on everything the harvester hands to an agent, and how capture knows it again: its own recall seen in a
captured session is marked, never fed back (harvester/recall/frame.py writes the frame this seal is on).

The opening tag of every frame carries a seal, ``seal="<nonce>.<mac>"``: a random nonce per answer and its HMAC
under the bank's own key (``bank_facts.recall_key``, made by migration 10; it never leaves the bank file, which is
0600, and no answer shows it). When a captured session holds a sealed frame again (the agent's transcript records
the tool result; a person pastes a brief into a prompt; Gemini CLI stores it HTML-escaped, others JSON-escaped),
ingest marks that event ``meta.recall`` (:func:`mark_recall`), and search, briefs, summaries and exports leave it
out, so the original event is what is found, never its echo. Text that only looks like a frame, however exactly,
carries no valid seal: it is the transcript's own, and stays found. The seal covers a nonce, not the body: agents
store answers cut and re-escaped, so a body could not be checked; a seal copied from a real answer (only a reader
of this user's transcripts has one) still marks the event it is pasted into.

Calls of the harvester's own tools are recall too, recognized by the tool's name: the name is the agent's harness
naming the MCP server's tool, not text a transcript's author writes, and a call holds only the arguments the agent
chose. Their results are not recognized by name (another server may have a tool called ``get_events``): a real
answer carries its seal. Here, in capture, because reading marks them; the recall views import it from here.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvester.model import Batch

TAG = "harvester-history"
# The tools of harvester's MCP server: a call of one is the harvester's own recall too.
TOOLS = ("recent_sessions", "handoff", "search_history", "get_events")

# A sealed opening tag, as frame() writes it, in any form a transcript keeps it: raw, HTML-escaped (Gemini
# CLI: &lt; and &quot;), JSON-escaped once or more (\u003c, \" and \\\"). The kind comes first, the seal next.
_SEALED = re.compile(r"(?:<|&lt;|\\u003c|\\x3c)harvester-history kind=[^\s>]{1,40}\s+seal=[^0-9a-f\s]{0,12}"
                     r"([0-9a-f]{16})\.([0-9a-f]{32})")
_OUR_TOOL = re.compile(r"harvester.*(?:" + "|".join(TOOLS) + r")$|^(?:" + "|".join(TOOLS) + r")$", re.IGNORECASE)


def make_seal(key: bytes) -> str:
    nonce = secrets.token_hex(8)
    return f"{nonce}.{_mac(key, nonce)}"


def _mac(key: bytes, nonce: str) -> str:
    return hmac.new(key, nonce.encode(), hashlib.sha256).hexdigest()[:32]


def is_recall_text(text: str, key: bytes | None) -> bool:
    """Whether ``text`` holds a frame this bank's harvester wrote (a valid seal under ``key``)."""
    # The frame is written in lowercase and kept so by every escaping agents apply: a plain substring test
    # (fast over hundreds of MB of tool output) before the pattern and the HMAC.
    if key is None or "harvester-history kind=" not in text:
        return False
    return any(hmac.compare_digest(_mac(key, m[1]), m[2]) for m in _SEALED.finditer(text))


def is_our_tool(tool_name: str | None) -> bool:
    return bool(tool_name) and _OUR_TOOL.search(tool_name or "") is not None


def mark_recall(batch: Batch, key: bytes | None) -> None:
    """Mark the events of a batch that are the harvester's own recall seen again (``meta.recall``): calls of
    its tools, and texts that hold a frame sealed with ``key`` (the bank's: see the module docstring)."""
    for event in batch.events:
        recall = (event.kind == "tool_call" and is_our_tool(event.tool_name)) or is_recall_text(event.text, key)
        if recall:
            event.meta = {**(event.meta or {}), "recall": True}
