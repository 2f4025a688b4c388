"""The bank flows back: what every agent did in a repository, for the agent (or person) working there now.

- :mod:`harvester.recall.scope`: which sessions "this repository" means, from a directory (the same git
  rules as capture: worktrees share a bank).
- :mod:`harvester.recall.views`: bounded, extractive answers over the bank (recent sessions, a plain-words
  search, a session's events page by page), newest first, citing session ids and event positions.
- :mod:`harvester.recall.brief`: the handoff brief, "where work stands", for ``handoff`` and
  ``harvester context``.
- :mod:`harvester.recall.frame`: everything handed to an agent is framed as reference data from the past,
  and a frame seen again in a captured session marks that event as recall, never to be served again.

Nothing here writes to the bank or calls a model.
"""
