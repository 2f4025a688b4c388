"""What the agents cost (``harvester usage``): token usage and cost of every agent's model responses, by day,
week, month, session and five-hour block, across agents, models, repositories and (with the team bank) hosts.

The entry point: :func:`harvester.usage.answer.answer` (one request answered as the dict ``--json`` prints; the
CLI renders it with :mod:`harvester.usage.render`); for other programs, :mod:`harvester.usage.api` (below).

The bank keeps one usage row per model response with the response counted once however often the agents repeat
it (harvester/bank/sqlite_usage.py), and the counted ones summed by hour (migration 16). Here: the aggregate
(query), local days (days), prices (prices: genai-prices, cached per model), the reports (report, blocks), the
answer to one request (answer), its text (render), the team bank's (team), a session's line in ``sessions`` and
``show`` (sessions), the quick read-only way into a current bank (bankfile).

The API for programs that show usage (the web viewer, issue 28) is :mod:`harvester.usage.api`: plain functions
that open the bank read-only (``open_bank(readonly=True)``: nothing written, an older bank refused with
``BankError``, never migrated) and return frozen dataclasses whose fields are the ``--json`` names:

- ``daily_costs(bank, since=None, until=None, zone=None, harnesses=(), models=(), scope=None, cost="auto")``
  -> ``list[DayCost]``: each day's cost by agent and model (``day``, ``harness``, ``model`` and the counts);
- ``sessions_by_cost(bank, limit=20, since=None, until=None, harnesses=(), scope=None, cost="auto")``
  -> ``list[SessionCost]``: the dearest sessions first, unknown costs last (``session``, ``harness``,
  ``bank_id``, ``title``, ``subagents`` and the counts);
- ``current_block(bank, now=None, harnesses=(), scope=None)`` -> ``ActiveBlock | None``: the five-hour window
  still running, its burn rate and projection (``start``, ``end``, ``tokens_per_minute``,
  ``input_output_tokens_per_minute``, ``cost_per_hour_usd``, ``remaining_minutes``, ``projected_total_tokens``,
  ``projected_cost_usd`` and the counts);
- ``report(bank, Request(...), now=None)`` -> the dict ``harvester usage --json`` prints, for any report;
- ``open_usage(bank)``: the read-only connection they use, to share one across calls.

``bank`` is a path or an open ``sqlite3.Connection``; ``zone`` a ``tzinfo`` (None: the system's);
``scope`` a :class:`harvester.bank.scope.Scope` (None: every repository). The counts (:class:`Counts`) are
``input_tokens``, ``output_tokens``, ``cache_write_tokens``, ``cache_read_tokens``, ``reasoning_tokens``,
``total_tokens``, ``cost_usd`` (None: nothing could be priced), ``unpriced_responses``, ``responses``,
``recorded_cost_usd``, ``recorded_responses``, ``calculated_cost_usd``, ``calculated_unpriced_responses``,
``models``, ``first_at``, ``last_at``.
"""
