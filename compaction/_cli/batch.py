"""Several input files, one at a time, with one policy for what goes wrong.

With a single file named on the command line, any error ends the run (one line, exit 2). With
several, a problem the user can act on is recorded and the other files go on: a file found
by searching a directory that turns out not to be a transcript is *skipped* (a folder of logs
usually holds a README too); anything else is an *error*, which makes the exit code 2 once all
files are done. An exception that is a bug of ours is never swallowed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .errors import CliError, describe
from .inputs import Source, expand
from .render import progress, say

__all__ = ["Batch"]

T = TypeVar("T")


class Batch:
    """The inputs of one command. Inside ``with batch:``, iterate for each :class:`Source`
    (with a progress bar on stderr) and run each file's work through :meth:`attempt`."""

    def __init__(self, paths: Iterable[str], label: str) -> None:
        self.sources = expand(paths)
        self.single = len(self.sources) == 1 and self.sources[0].explicit
        self.label = label
        self.problems: list[dict[str, Any]] = []

    def __enter__(self) -> Batch:
        self._progress = progress(len(self.sources), self.label)
        self._bar = self._progress.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        # Closed here, not when a generator is collected: an error line must not be printed
        # under a progress bar that is still drawing.
        self._progress.__exit__(*exc_info)

    def __iter__(self) -> Iterator[Source]:
        for source in self.sources:
            self._bar.advance(str(source.relative))
            yield source

    def attempt(self, source: Source, work: Callable[[], T]) -> T | None:
        """``work()`` for one file; a problem with it is recorded (None is returned) unless
        it must end the run."""
        try:
            return work()
        except Exception as exc:
            message = describe(exc)
            if self.single or message is None:
                raise
            # Only a file found by searching may be passed over; our own refusals (CliError)
            # are errors whatever the file.
            skipped = not source.explicit and not isinstance(exc, CliError)
            self.problems.append({"file": str(source.path), "error": message, "skipped": skipped})
            return None

    @property
    def failed(self) -> bool:
        """True when a problem other than a skipped file occurred."""
        return any(not p["skipped"] for p in self.problems)

    def say_problems(self) -> None:
        """One line on stderr per problem."""
        for problem in self.problems:
            label = "skipped" if problem["skipped"] else "error"
            say(f"compaction: {label}: {problem['error']}")
