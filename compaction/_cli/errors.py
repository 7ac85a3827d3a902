"""Exit codes, and the one line a user sees when something goes wrong.

The command never shows a traceback for a problem the user can fix: a missing file, a file in
no known format, a bad option. Those exit 2 with one line naming the problem. Only a bug in
our own code earns a traceback, and only when asked for with ``--debug``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "EXIT_UNREACHED", "CliError", "describe"]

EXIT_OK: Final = 0
#: The target could not be reached; the best result was still written.
EXIT_UNREACHED: Final = 1
#: Bad usage or bad input; nothing was written.
EXIT_BAD_INPUT: Final = 2
#: A bug of ours (EX_SOFTWARE in sysexits.h): never the user's fault.
EXIT_INTERNAL: Final = 70


class CliError(Exception):
    """A problem to report in one line, with the exit code it deserves."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _user_error_types() -> tuple[type[BaseException], ...]:
    # Imported here so a module that has not landed (or fails to import) never breaks the
    # error path itself.
    from ..registry import ConfigError, UnknownStrategyError
    from ..tokens import EncodingUnavailableError
    from ..validate import InvalidConversationError

    types: list[type[BaseException]] = [
        ConfigError,
        UnknownStrategyError,
        EncodingUnavailableError,
        InvalidConversationError,
        OSError,
        UnicodeDecodeError,
    ]
    for module, name in (
        ("compaction.formats", "FormatError"),
        ("compaction.formats.errors", "FormatError"),
        ("compaction.adapters", "AdapterError"),
        ("compaction.sessions", "SessionError"),
        ("compaction.sessions", "InvalidSessionName"),
        ("compaction.sessions.errors", "SessionError"),
        ("compaction.sessions.errors", "InvalidSessionName"),
        ("compaction.pricing.recorded", "RecordedUsageError"),
        ("compaction.pricing.prices", "PriceError"),
    ):
        try:
            types.append(getattr(__import__(module, fromlist=[name]), name))
        except (ImportError, AttributeError):
            continue
    return tuple(types)


def describe(exc: BaseException) -> str | None:
    """The one line for an error the user can act on, or None for a bug of ours."""
    if isinstance(exc, CliError):
        return exc.message
    if not isinstance(exc, _user_error_types()):
        return None
    if isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or type(exc).__name__
        return f"{exc.filename}: {reason.lower() if reason[:1].isupper() else reason}"
    text = " ".join(str(exc).split())  # one line, whatever the message held
    name = type(exc).__name__
    if name in {"InvalidConversationError", "AdapterError"}:
        return f"invalid conversation: {text}"
    return text or name
