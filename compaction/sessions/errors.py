"""The errors a session store raises, each naming what was wrong and where."""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = [
    "InvalidSessionName",
    "SessionError",
    "SessionExistsError",
    "SessionFormatError",
    "SessionNotFoundError",
    "StaleViewError",
    "StoreError",
    "StoreSchemaError",
    "StoreUnavailableError",
]


# The naming rule lives here, not in names.py, so that this module imports nothing of ours.
MAX_NAME_LENGTH: Final = 128

ALLOWED: Final = (
    f"A session name is 1 to {MAX_NAME_LENGTH} characters from ASCII letters, digits, "
    "'.', '_' and '-', starts with a letter or digit, does not end with '.', and is not a "
    "Windows device name (CON, PRN, AUX, NUL, COM1-COM9, LPT1-LPT9)."
)


class SessionError(Exception):
    """Base class of every session error (except [`InvalidSessionName`][], a ValueError)."""


class InvalidSessionName(ValueError):
    """A session name that could escape the store root or that some filesystem would mangle."""

    def __init__(self, name: object, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid session name {name!r}: {reason}. {ALLOWED}")


class SessionNotFoundError(SessionError, LookupError):
    """The named session does not exist in this store (never created, or deleted)."""

    def __init__(self, name: str, root: Path | str) -> None:
        self.name = name
        self.root = root
        super().__init__(f"session {name!r} does not exist in the session store at {root}")

    def __str__(self) -> str:  # LookupError would otherwise quote the message like a key
        return str(self.args[0])


class SessionExistsError(SessionError, FileExistsError):
    """Importing under a name that is already taken (we never merge into a live session)."""

    def __init__(self, name: str, root: Path | str) -> None:
        self.name = name
        self.root = root
        super().__init__(f"session {name!r} already exists in the session store at {root}")

    def __str__(self) -> str:
        return str(self.args[0])


class SessionFormatError(SessionError, ValueError):
    """A session file we cannot read safely: corrupt, truncated, or written by a newer version.

    ``path`` names the file and ``line`` (1-based, JSONL files only) the offending line. We
    refuse rather than guess, so that nothing on disk is silently dropped or overwritten.
    """

    def __init__(self, path: Path | str, reason: str, line: int | None = None) -> None:
        # A database store names the session by URL: Path() would fold "//" into "/".
        self.path: Path | str = path if isinstance(path, str) and "://" in path else Path(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}" if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {reason}")


class StaleViewError(SessionError, ValueError):
    """``set_view`` of a view computed from a history that is no longer the newest one.

    Another writer stored a view computed from more of the history, or the history was
    cleared under the view: storing it would roll the session back. Recompute the view from
    ``session.view()`` and try again.
    """


class StoreSchemaError(SessionError):
    """A database whose session tables were made by a newer compaction (or are not ours)."""


class StoreError(SessionError):
    """The database refused a call for a reason a retry would not change: a wrong password, a
    missing role or database, a statement timeout, a value out of range, a full disk, missing
    privileges. The message names PostgreSQL's reason; ``sqlstate`` is its code, when sent.

    Nothing was half written: the call's transaction was rolled back.
    """

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class StoreUnavailableError(SessionError, ConnectionError):
    """The store's server could not be reached (for as long as the store retries).

    Nothing was half written: a call either committed before returning, or raises this.
    """
