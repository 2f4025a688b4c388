"""`harvester resume`: continue any captured session inside another agent's real CLI.

The entry point is :func:`harvester.resume.convert.resume` ``(bank, session, target, ...) -> Outcome``: it reads a
session from the bank (whole texts from the archive, so it works after the source agent deleted its file),
shapes it into the target's native records, bounded in size, and writes ONE new session into the target's own
store under a new id, which the target's real CLI resumes by that id. How, module by module:

- :mod:`~harvester.resume.conversation`: the bank's events as a neutral conversation, and what was left out.
- :mod:`~harvester.resume.tools`: tool calls made fit for the target (ids, names, inputs; else text).
- :mod:`~harvester.resume.size`: the conversation bounded (``--max-bytes``), older turns summarized extractively.
- one pure writer per target format, as one parser per format reads them: :mod:`~harvester.resume.claude_code`,
  :mod:`~harvester.resume.codex`, :mod:`~harvester.resume.gemini_cli`, :mod:`~harvester.resume.qwen_code`,
  :mod:`~harvester.resume.opencode` (opencode and Kilo CLI, imported by their own ``import`` command).
- :mod:`~harvester.resume.placement`: where the session goes in the target's store, and its one exclusive,
  atomic create.
- :mod:`~harvester.resume.convert`: the order of the steps, recorded in the bank first
  (harvester/bank/sqlite_resumes.py links the target's captured session back to its source).
"""
