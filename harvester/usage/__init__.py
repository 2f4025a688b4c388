"""What the agents cost (``harvester usage``): token usage and cost of every agent's model responses, by day,
week, month, session and five-hour block, across agents, models, repositories and (with the team bank) hosts.

The bank keeps one usage row per model response with the response counted once however often the agents repeat
it (harvester/bank/sqlite_usage.py), and the counted ones summed by hour (migration 16). Here: the aggregate
(query), prices (prices: genai-prices, cached per model), the reports (report, blocks), the answer to one request
(answer) and its text (render).
"""
