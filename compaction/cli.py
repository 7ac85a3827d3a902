"""The ``compaction`` command: compact, count, replay, check, tune, strategies, formats, session,
example.

Exit codes: 0 done; 1 the target could not be reached (the best result is still written, and
the report says so); 2 bad usage or bad input (one line on stderr naming the problem, nothing
written). A bug of ours prints one line too (exit 70, as sysexits.h says for an internal
software error), and the traceback with ``--debug``.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

from ._cli.batch import WorkerBug
from ._cli.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, CliError, describe
from ._cli.inputs import STDOUT_NAME
from ._cli.logs import configure_logging

__all__ = ["main"]

_COMMANDS = {
    "compact": "compaction._cli.cmd_compact",
    "count": "compaction._cli.cmd_count",
    "replay": "compaction._cli.cmd_replay",
    "strategies": "compaction._cli.cmd_strategies",
    "formats": "compaction._cli.cmd_formats",
    "session": "compaction._cli.cmd_session",
    "example": "compaction._cli.cmd_example",
    "check": "compaction._cli.cmd_check",
    "tune": "compaction._cli.cmd_tune",
}


def _discard_stdout() -> None:
    """Point stdout at the null device, dropping what is still buffered for it."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    from importlib import import_module

    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    try:
        from ._cli.parser import build_parser

        args = build_parser().parse_args(args_list)
        configure_logging(getattr(args, "verbose", 0))
        command = import_module(_COMMANDS[args.command])
        return int(command.run(args))
    except KeyboardInterrupt:
        print("compaction: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our stdout went away (``| head``): nothing left to tell anyone.
        _discard_stdout()
        sys.stderr.close()
        return 0
    except Exception as exc:
        if isinstance(exc, OSError) and exc.filename == STDOUT_NAME:
            _discard_stdout()  # or the interpreter fails again flushing it at exit
        if isinstance(exc, WorkerBug) and debug:
            print(exc.detail, file=sys.stderr, end="")
        message = describe(exc)
        if message is not None:
            print(f"compaction: error: {message}", file=sys.stderr)
            if debug:
                traceback.print_exc()
            return exc.code if isinstance(exc, CliError) else EXIT_BAD_INPUT
        if debug:
            traceback.print_exc()
        print(
            f"compaction: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
            "(run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
