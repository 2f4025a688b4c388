"""Nothing of a real agent's run stays in the shared temp dir.

Every agent runs with a temp dir of its own beside its HOME (``TMPDIR``, set by tests/realagents.py), in
the test's tmp_path, which goes with the test. A few write to fixed paths whatever TMPDIR says: OpenClaw
2026.9.6 keeps its log in ``/tmp/openclaw`` and its state-database lock files in
``/tmp/openclaw-state-locks-<uid>`` (``resolveStateLifecycleRuntimeDirectory`` returns "/tmp" on POSIX).
What such agents created there during the run, and only that (entries that were not there when the run
started), is removed when the run ends: by tests/conftest.py's session hooks, in the process that runs
the session (under pytest-xdist the controller, once every worker is done: an agent on the other worker
may still be using what one test's agent left).
"""
