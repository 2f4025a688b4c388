"""The bank flows back: what every agent did in a repository, for the agent (or person) working there now.

- :mod:`harvester.recall.scope`: which sessions "this repository" means, from a directory (the same git
  rules as capture: worktrees share a bank).
- :mod:`harvester.recall.views`: bounded, extractive answers over the bank (recent sessions, a plain-words
  search, a session's events page by page), newest first, citing session ids and event positions.
- :mod:`harvester.recall.brief`: the handoff brief, "where work stands", for ``handoff`` and
  ``harvester context``.
- :mod:`harvester.recall.shown`: the one sanitizer every value of an answer passes, and the builder (``Md``)
  answers are made with: nothing a transcript holds can close the frame, start a line, or reach a terminal raw.
- :mod:`harvester.recall.frame`: everything handed to an agent is framed as reference data from the past,
  sealed with the bank's key; a sealed frame seen again in a captured session marks that event as recall,
  never to be served again (text that only looks like a frame is the transcript's own, and stays found).

Nothing here writes to the bank or calls a model.
"""
