"""What each agent's token counts mean, where agents differ.

Reasoning: OpenAI-style counts (Codex, and the agents that pass an OpenAI-compatible ``usage`` through, Qwen Code
among them: its parser adds the thoughts of a Gemini-shaped response to the output) report reasoning tokens as
part of the output; Gemini's ``usageMetadata`` reports the model's thoughts
(``thoughtsTokenCount``) apart from its answer (``candidatesTokenCount``), and opencode (Kilo, its fork) stores
``tokens.reasoning`` apart from ``tokens.output``. Both are billed at the output price. For these agents a
response's total and its billed output add the reasoning; for the others it is only a breakdown.
"""

from __future__ import annotations

REASONING_APART = frozenset({"gemini-cli", "opencode", "kilo"})


def apart_sql(column: str) -> str:
    """SQL: whether the agent in ``column`` counts reasoning apart."""
    return f"{column} IN ({', '.join(repr(h) for h in sorted(REASONING_APART))})"
