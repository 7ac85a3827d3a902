"""Several input files, one policy for what goes wrong, and ``-j N`` to use N processes.

With a single file named on the command line, any error ends the run (one line, exit 2). With
several, a problem the user can act on is recorded and the other files go on: a file found
by searching a directory that turns out not to be a transcript is *skipped* (a folder of logs
usually holds a README too); anything else is an *error*, which makes the exit code 2 once all
files are done. An exception that is a bug of ours is never swallowed.

``jobs > 1`` runs each file's work in a pool of worker processes (compaction is CPU-bound
Python, so threads would not help). Results still come back in input order, so the reports,
the files written and the exit code are the same as with one job; one progress bar counts the
files as they finish, in whatever order that is.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, TypeVar

from .errors import CliError, describe
from .inputs import Source, expand
from .logs import configure_logging
from .render import progress, say

__all__ = ["Batch", "WorkerBug"]

T = TypeVar("T")


class WorkerBug(RuntimeError):
    """A bug of ours met in a worker process; ``detail`` is its traceback there."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def _in_worker(work: Callable[..., Any], source: Source, args: tuple[Any, ...]) -> tuple[Any, ...]:
    # Exceptions are turned into plain data here: a reader's exception with a custom
    # __init__ does not survive pickling, and the main process needs only its one line.
    try:
        return ("ok", work(source, *args))
    except Exception as exc:
        message = describe(exc)
        if message is None:
            return ("bug", f"{type(exc).__name__}: {exc}", traceback.format_exc())
        return ("problem", message, isinstance(exc, CliError))


class Batch:
    """The inputs of one command. Inside ``with batch:``, ``run`` a per-file function
    over every ``Source`` (with a progress bar on stderr)."""

    def __init__(self, paths: Iterable[str], label: str, jobs: int = 1, verbose: int = 0) -> None:
        self.sources = expand(paths)
        self.single = len(self.sources) == 1 and self.sources[0].explicit
        self.label = label
        # More worker processes than CPUs only adds memory and switching: compaction is
        # CPU-bound (-j 60 on 2 CPUs took 4 GB and 16 times longer).
        self.jobs = max(1, min(jobs, len(self.sources), os.cpu_count() or 1))
        self.verbose = verbose
        self.problems: list[dict[str, Any]] = []

    def __enter__(self) -> Batch:
        self._progress = progress(len(self.sources), self.label)
        self._bar = self._progress.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        # Closed here, not when a generator is collected: an error line must not be printed
        # under a progress bar that is still drawing.
        self._progress.__exit__(*exc_info)

    def run(self, work: Callable[..., T], *args: Any) -> Iterator[tuple[Source, T]]:
        """``work(source, *args)`` for every file; yield ``(source, result)`` in input order
        for those that worked (problems are recorded). With ``jobs > 1``, ``work`` and
        ``args`` must be picklable (a module-level function and plain values)."""
        if self.jobs == 1:
            for source in self.sources:
                self._bar.advance(str(source.relative))
                done = self.attempt(source, partial(work, source, *args))
                if done is not None:
                    yield source, done
            return
        yield from self._parallel(work, args)

    def _parallel(
        self, work: Callable[..., T], args: tuple[Any, ...]
    ) -> Iterator[tuple[Source, T]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the progress bar runs a thread, and forking a threaded process can
        # deadlock the child.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            max_workers=self.jobs,
            mp_context=context,
            initializer=configure_logging,
            initargs=(self.verbose,),
        ) as pool:
            futures = []
            for source in self.sources:
                future = pool.submit(_in_worker, work, source, args)
                future.add_done_callback(partial(self._advance, str(source.relative)))
                futures.append(future)
            try:
                for source, future in zip(self.sources, futures, strict=True):
                    outcome = future.result()
                    if outcome[0] == "ok":
                        yield source, outcome[1]
                    elif outcome[0] == "bug":
                        raise WorkerBug(outcome[1], outcome[2])
                    else:
                        self._record(source, outcome[1], cli_error=outcome[2])
            except BaseException:
                for future in futures:
                    future.cancel()
                raise

    def _advance(self, name: str, _future: Any = None) -> None:
        self._bar.advance(name)

    def attempt(self, source: Source, work: Callable[[], T]) -> T | None:
        """``work()`` for one file; a problem with it is recorded (None is returned) unless
        it must end the run."""
        try:
            return work()
        except Exception as exc:
            message = describe(exc)
            if self.single or message is None:
                raise
            self._record(source, message, cli_error=isinstance(exc, CliError))
            return None

    def _record(self, source: Source, message: str, *, cli_error: bool) -> None:
        # Only a file found by searching may be passed over; our own refusals (CliError)
        # are errors whatever the file.
        skipped = not source.explicit and not cli_error
        self.problems.append({"file": str(source.path), "error": message, "skipped": skipped})

    @property
    def failed(self) -> bool:
        """True when a problem other than a skipped file occurred."""
        return any(not p["skipped"] for p in self.problems)

    def say_problems(self) -> None:
        """One line on stderr per problem."""
        for problem in self.problems:
            label = "skipped" if problem["skipped"] else "error"
            say(f"compaction: {label}: {problem['error']}")
