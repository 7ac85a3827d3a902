"""What the command shows of the library's own log lines: nothing unless asked (``-v``).

The library logs warnings (a summariser that failed, a trigger that could not reach its mark)
through the standard ``logging`` logger ``compaction`` until structlog is configured. Without a
handler, Python's last-resort handler prints them raw on stderr (``trigger.over_target
after=1246 target=1 ...``), in the middle of the report: noise the report already says in
words. So the command routes them: dropped by default, shown as ``compaction: warning: ...``
lines with ``-v``, and everything (debug and info too, through structlog) with ``-vv``.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_logging"]


def configure_logging(verbose: int) -> None:
    """Route the library's logs for a command run with ``verbose`` ``-v`` flags."""
    logger = logging.getLogger("compaction")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.propagate = False
    if verbose <= 0:
        logger.addHandler(logging.NullHandler())
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("compaction: %(levelname)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    if verbose > 1:
        import structlog

        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.dev.ConsoleRenderer(colors=False),
            ],
            logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        )
