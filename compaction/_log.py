"""Logging through structlog, quiet until the application configures it.

structlog's out-of-the-box configuration prints every debug line to stdout, which would pollute
the output of any program that merely imports us (and the CLI's own stdout). So until the
application configures structlog (``structlog.configure(...)``), debug and info are dropped and
warnings and errors go to the standard ``logging`` logger ``"compaction"``; once it is
configured, every event goes through the application's structlog processors.

structlog is not imported here: an application that configured it has imported it already, and
importing it ourselves would cost every CLI start a few hundred milliseconds for nothing.

Every field is bounded before it is written (see ``compaction._redact``): a string to about
1 kB, an exception to its type name unless the application opted in to exception text with
[`compaction.events.record_error_text`][]. Log lines are shipped and kept where a
conversation's secrets must not follow, and a summariser error can quote the whole transcript.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from ._redact import LIMIT, bound, describe_error

_stdlib = logging.getLogger("compaction")


def _configured_structlog() -> Any | None:
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        return structlog
    return None


def _field(value: Any) -> Any:
    """``value`` as it may be written: scalars as they are, strings and exceptions bounded,
    containers (labels) by their bounded repr when it is long."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, BaseException):
        return describe_error(value)
    if isinstance(value, str):
        return bound(value)
    if isinstance(value, Mapping) and len(value) <= 64:
        small = {bound(str(k), 128): _field(v) for k, v in value.items()}
        return small if len(repr(small)) <= LIMIT else bound(repr(small))
    text = repr(value)
    return value if len(text) <= LIMIT else bound(text)


class _Logger:
    __slots__ = ()

    def _emit(self, level: str, event: str, **fields: Any) -> None:
        structlog = _configured_structlog()
        if structlog is not None:
            fields = {key: _field(value) for key, value in fields.items()}
            getattr(structlog.get_logger("compaction"), level)(event, **fields)
        elif level in ("warning", "error"):
            # Bounded only when written: a dropped debug line costs nothing.
            detail = " ".join(f"{k}={_field(v)!r}" for k, v in fields.items())
            getattr(_stdlib, level)("%s %s", event, detail)

    def writes(self, level: str) -> bool:
        """Whether a line at ``level`` goes anywhere: a caller skips work (a count) that only
        a dropped line would show."""
        return level in ("warning", "error") or _configured_structlog() is not None

    def debug(self, event: str, **fields: Any) -> None:
        self._emit("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", event, **fields)


log = _Logger()
