"""The error every reader raises for a file it cannot read."""

from __future__ import annotations

import os


class FormatError(ValueError):
    """A transcript file that is not what we can read, or not readable at all.

    ``path`` names the file, ``line`` the 1-based line of a JSONL file (``None`` for a whole
    JSON document), ``format`` the format the file was taken for (``None`` when no reader was
    chosen yet: an empty, binary or unrecognised file), and the message says what was
    expected, so a user can fix the file or pick another reader with ``--format``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        message: str,
        line: int | None = None,
        *,
        format: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.format = format
        self.reason = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        taken = (
            f"read as {format}: "
            if format is not None and not message.startswith("read as ")
            else ""
        )
        super().__init__(f"{where}: {taken}{message}")
