"""The bank flows back: what every agent did in a repository, for the agent (or person) working there now.

- :mod:`harvester.recall.scope`: which sessions "this repository" means, from a directory (the same git
  rules as capture: worktrees share a bank); the :class:`~harvester.bank.scope.Scope` it makes is the bank's.
- :mod:`harvester.recall.views`: bounded, extractive answers over the bank (recent sessions, a plain-words
  search, a session's events page by page), newest first, citing session ids and event positions.
- :mod:`harvester.recall.brief`: the handoff brief, "where work stands", for ``handoff`` and
  ``harvester context``; :mod:`harvester.recall.actions` and :mod:`harvester.recall.tools` read what a session
  did from its tool calls.
- :mod:`harvester.recall.shown`: the one sanitizer every value of an answer passes, and the builder (``Md``)
  answers are made with: nothing a transcript holds can close the frame, start a line, or reach a terminal raw.
- :mod:`harvester.recall.frame`: everything handed to an agent is framed as reference data from the past,
  sealed with the bank's key; a sealed frame seen again in a captured session marks that event as recall,
  never to be served again (harvester/capture/recall_seal.py: text that only looks like a frame is the
  transcript's own, and stays found).
- :mod:`harvester.recall.mcp`: ``harvester mcp``, the MCP server over these views (the entry point an agent
  starts); :mod:`harvester.recall.export`: ``harvester export``, a repository's sessions written into it.

Nothing here writes to the bank or calls a model.
"""
