"""Logging through structlog, quiet until the application configures it.

structlog's out-of-the-box configuration prints every debug line to stdout, which would pollute
the output of any program that merely imports us (and the CLI's own stdout). So until the
application configures structlog (``structlog.configure(...)``), debug and info are dropped and
warnings and errors go to the standard ``logging`` logger ``"compaction"``; once it is
configured, every event goes through the application's structlog processors.

structlog is not imported here: an application that configured it has imported it already, and
importing it ourselves would cost every CLI start a few hundred milliseconds for nothing.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_stdlib = logging.getLogger("compaction")


def _configured_structlog() -> Any | None:
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        return structlog
    return None


class _Logger:
    __slots__ = ()

    def _emit(self, level: str, event: str, **fields: Any) -> None:
        structlog = _configured_structlog()
        if structlog is not None:
            getattr(structlog.get_logger("compaction"), level)(event, **fields)
        elif level in ("warning", "error"):
            detail = " ".join(f"{k}={v!r}" for k, v in fields.items())
            getattr(_stdlib, level)("%s %s", event, detail)

    def debug(self, event: str, **fields: Any) -> None:
        self._emit("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", event, **fields)


log = _Logger()
