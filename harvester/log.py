"""Logging: readable lines on a terminal, JSON lines elsewhere (journald, launchd log files).

structlog is imported by the first module that logs, through :func:`get_logger`, not by every command: its
import (asyncio with it) costs a reading command such as ``search`` about as much as the rest of its work,
and reading commands log nothing. :func:`configure` keeps its settings until then; every harvester module
gets its logger here, so none logs before they are applied.
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

from harvester.config import LOG_LEVEL_ENV
from harvester.terminal import visible

if TYPE_CHECKING:
    import structlog

_pending: tuple[int, IO[str]] | None = None  # what configure() was given, until structlog is imported
# The standard library's numbers for them (logging.DEBUG ...), which structlog filters by; not imported from
# there: logging costs a reading command more than the rest of this module.
LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
_configured_level = "WARNING"  # what configure() last set: a scan's second process logs at the same level
_configured = False  # configure() was called: a line below its level is dropped before structlog is imported
# The levels of the logger's methods, for the lines dropped without it (what its filtering logger would drop).
_METHOD_LEVELS = {"debug": 10, "info": 20, "msg": 20, "warning": 30, "warn": 30, "error": 40, "exception": 40,
                  "critical": 50}


def configure(default_level: str = "warning", stream: IO[str] | None = None, level: str | None = None) -> None:
    """``level`` (from the configuration) beats ``default_level``; $HARVESTER_LOG_LEVEL beats both."""
    global _pending, _configured_level, _configured
    level_name = (os.environ.get(LOG_LEVEL_ENV) or level or default_level).upper()
    _configured_level, _configured = level_name, True
    _pending = (LEVELS.get(level_name, LEVELS["WARNING"]), stream or sys.stderr)
    if "structlog" in sys.modules:
        _apply()


def get_logger(name: str) -> Any:
    """A structlog logger, with what :func:`configure` was given applied first: made at its first use, so that
    a module may get its logger when it is imported and a command that logs nothing (a scan with nothing new)
    never imports structlog."""
    return _Logger(name)


class _Logger:
    """What :func:`get_logger` gives: structlog's logger of that name, imported and made at the first call."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name, self._logger = name, None

    def __getattr__(self, attribute: str) -> Any:
        if self._logger is None:
            # A line below the configured level: dropped here, without structlog's import (~9 MB resident, in
            # each of a scan's two processes, for a debug line per chunk that is never written).
            if _configured and _METHOD_LEVELS.get(attribute, 100) < LEVELS.get(_configured_level, LEVELS["WARNING"]):
                return _dropped
            import structlog

            _apply()
            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attribute)


def _dropped(*args: Any, **kwargs: Any) -> None:
    return None


def configured_level() -> str:
    return _configured_level


def _apply() -> None:
    global _pending
    if _pending is None:
        return
    import structlog

    level, stream = _pending
    _pending = None
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


def _visible(renderer: structlog.types.Processor) -> structlog.types.Processor:
    """The readable renderer prints paths and problem details raw, and a terminal must not obey their
    control characters (JSON lines go to journald and log files, not to a terminal)."""

    def render(logger: structlog.types.WrappedLogger, name: str,
               event_dict: structlog.types.EventDict) -> str:
        return visible(renderer(logger, name, event_dict))

    return render
