"""The capture service: ``harvester run``, the long-running process the login units start.

- :mod:`~harvester.service.run`: :class:`~harvester.service.run.Service` (the entry point), file events, the
  scheduled re-scans, the liveness checks and the heartbeat it writes (read by harvester/heartbeat.py);
- :mod:`~harvester.service.passes`: the sinks' forwarding and the team push, each on a thread of its own;
- :mod:`~harvester.service.instance`: one service per bank (its lock);
- :mod:`~harvester.service.units`: installing it as a systemd user unit or a launchd agent (``install``,
  ``uninstall``; the templates are in ``templates/``).

The service is the top of the pipeline but the CLI: it drives capture, the bank's upkeep and the outbound passes,
and nothing below imports it (what ``status`` says of it is read from its heartbeat and its unit).
"""
