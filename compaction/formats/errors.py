"""The error every reader raises for a file it cannot read."""

from __future__ import annotations

import os


class FormatError(ValueError):
    """A transcript file that is not what we can read, or not readable at all.

    ``path`` names the file, ``line`` the 1-based line of a JSONL file (``None`` for a whole
    JSON document), and the message says what was expected, so a user can fix the file or
    pick another.
    """

    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
