"""Logging: readable lines on a terminal, JSON lines elsewhere (journald, launchd log files)."""

from __future__ import annotations

import logging
import os
import sys

import structlog

from harvester.config import LOG_LEVEL_ENV
from harvester.terminal import visible

_configured_level = "WARNING"  # what configure() last set: a scan's second process logs at the same level


def configure(default_level: str = "warning", stream=None, level: str | None = None) -> None:
    """``level`` (from the configuration) beats ``default_level``; $HARVESTER_LOG_LEVEL beats both."""
    global _configured_level
    stream = stream or sys.stderr
    level_name = (os.environ.get(LOG_LEVEL_ENV) or level or default_level).upper()
    _configured_level = level_name
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        level = logging.WARNING
    renderer: structlog.types.Processor
    if stream.isatty():
        renderer = _visible(structlog.dev.ConsoleRenderer(colors=False))
    else:
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


def configured_level() -> str:
    return _configured_level


def _visible(renderer: structlog.types.Processor) -> structlog.types.Processor:
    """The readable renderer prints paths and problem details raw, and a terminal must not obey their
    control characters (JSON lines go to journald and log files, not to a terminal)."""

    def render(logger: structlog.types.WrappedLogger, name: str,
               event_dict: structlog.types.EventDict) -> str:
        return visible(renderer(logger, name, event_dict))

    return render
