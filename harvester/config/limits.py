"""What reading one source may cost, as capture takes it (:class:`ReadLimits`): from the configuration's
``[limits]`` and ``[timings]`` (:meth:`harvester.config.Settings.read_limits`), and from the bank it reads for.
Here, beside the settings it is made from, so that the configuration imports nothing of capture."""

from __future__ import annotations

from dataclasses import dataclass, field

# A compressed source (a .jsonl.zst rollout) that decompresses to more is read no further: [limits]
# max_decompressed_mb's default, in bytes. Real Codex rollouts decompress to tens of MB, rarely a few hundred;
# past this a file is not a session.
MAX_DECOMPRESSED_BYTES = 4 * 1024**3


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Bounds on what reading one source may cost, and when a last line without its newline is taken; and
    what reading takes from the bank it reads for (its archive's directory, its recall key)."""

    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
    # A JSONL file whose last line has no newline, unchanged for this long, is done being written: a
    # last line that is a whole record is taken (a lost last prompt otherwise waits for ever).
    quiet_seconds: float = 60.0
    archive: str | None = None  # the raw archive's directory (harvester/capture/archive); None: no archive
    page_rows: int | None = None  # a SQLite store's rows per chunk; None: harvester.capture.paging.PAGE_ROWS
    page_bytes: int | None = None  # and bytes; None: harvester.capture.paging.PAGE_BYTES
    # The bank's recall key: a frame sealed with it is the harvester's own answer seen again
    # (harvester/recall/frame.py). None: no text is recall (only calls of the harvester's tools).
    recall_key: bytes | None = field(default=None, repr=False)


LIMITS = ReadLimits()
