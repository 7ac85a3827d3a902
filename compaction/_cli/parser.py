"""The argument parser: every subcommand, its options, and an example in its ``--help``."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from .epilogs import (
    COMPACT_EPILOG,
    COUNT_EPILOG,
    EXAMPLE_EPILOG,
    FORMATS_EPILOG,
    MAIN_EPILOG,
    REPLAY_EPILOG,
    SESSION_EPILOG,
    STRATEGIES_EPILOG,
)
from .errors import CliError
from .ladder import DEFAULT_LADDER

__all__ = ["build_parser"]


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) instead of usage plus error."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        # Extra arguments are found by the top-level parser, after the subcommand's parser
        # has finished: point at the help of the command that was typed, not the top level.
        parsed, extras = self.parse_known_args(args, namespace)
        if (
            len(extras) == 1
            and not extras[0].startswith("-")
            and getattr(parsed, "action", None) == "import"
            and getattr(parsed, "name", "") is None
        ):
            # argparse fills an optional positional only before the first option, so
            # "import FILE --store X NAME" would leave NAME over: it is the name.
            parsed.name = extras.pop()
        if extras:
            words = [self.prog, getattr(parsed, "command", None), getattr(parsed, "action", None)]
            prog = " ".join(w for w in words if isinstance(w, str))
            raise CliError(f"unrecognized arguments: {' '.join(extras)} (see '{prog} --help')")
        return parsed


def positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"expected 0 to 86400 seconds, got {text!r}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


_FORMATTER = argparse.RawDescriptionHelpFormatter


def _common(json_help: str) -> Parser:
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", help=json_help)
    common.add_argument(
        "--debug", action="store_true", help="show the full traceback of an unexpected error"
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show the library's log lines on stderr (-v: warnings, -vv: everything)",
    )
    return common


def _jobs() -> Parser:
    jobs = Parser(add_help=False)
    jobs.add_argument(
        "-j",
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="process N files at once, in N worker processes (default 1); the output and its "
        "order are the same",
    )
    return jobs


def _counting() -> Parser:
    counting = Parser(add_help=False)
    counting.add_argument(
        "--counter",
        choices=("tiktoken", "approx"),
        default="tiktoken",
        help="how tokens are counted (default: tiktoken, offline cl100k_base)",
    )
    counting.add_argument(
        "--encoding", metavar="NAME", help="tiktoken encoding (default: cl100k_base)"
    )
    return counting


def _formatting() -> Parser:
    formatting = Parser(add_help=False)
    formatting.add_argument(
        "--format",
        metavar="NAME",
        default=None,
        help="read every input as this format instead of detecting it ('compaction formats' "
        "lists them)",
    )
    return formatting


def _laddering() -> Parser:
    laddering = Parser(add_help=False)
    group = laddering.add_mutually_exclusive_group()
    group.add_argument(
        "--ladder",
        metavar="KEY,KEY...",
        help="strategies in order, cheapest first; the last one is the terminal "
        f"(default: {','.join(DEFAULT_LADDER)})",
    )
    group.add_argument("--config", metavar="LADDER.toml", help="a ladder from a TOML file")
    return laddering


def build_parser() -> Parser:
    parser = Parser(
        prog="compaction",
        description="Shrink LLM agent conversations to fit a context window, and see how.",
        epilog=MAIN_EPILOG,
        formatter_class=_FORMATTER,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"compaction {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    compact = sub.add_parser(
        "compact",
        help="compact conversation files to a token target",
        description="Compact conversations with a ladder of strategies, cheapest first.",
        epilog=COMPACT_EPILOG,
        formatter_class=_FORMATTER,
        parents=[
            _common("print the report as JSON on stdout (needs -o or --dry-run)"),
            _counting(),
            _formatting(),
            _laddering(),
            _jobs(),
        ],
    )
    compact.add_argument(
        "files", nargs="+", metavar="FILE", help="conversation files or dirs ('-': stdin)"
    )
    size = compact.add_mutually_exclusive_group(required=True)
    size.add_argument("--target", type=positive_int, metavar="N", help="tokens to fit in")
    size.add_argument(
        "--window", type=positive_int, metavar="N", help="the model's context window in tokens"
    )
    compact.add_argument(
        "--ratio",
        type=fraction,
        default=None,
        metavar="R",
        help="with --window: target = R x window (default 0.4)",
    )
    compact.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        metavar="N",
        help="the hard limit the file must fit (default: the window with --window, else the "
        "target); the task, the newest step and the system prompt are cut only to fit it",
    )
    compact.add_argument(
        "--to", choices=("openai", "anthropic"), help="output shape (default: the input's)"
    )
    compact.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write: a file (one input), a directory (several inputs, or a path "
        "ending in '/'), or '-' for stdout (the default); only ever a regular file",
    )
    compact.add_argument(
        "-n", "--dry-run", action="store_true", help="report only; write no conversation"
    )

    count = sub.add_parser(
        "count",
        help="count tokens by role, by tool and for the largest messages",
        description="Count a conversation's tokens: by role, by tool, and the largest messages.",
        epilog=COUNT_EPILOG,
        formatter_class=_FORMATTER,
        parents=[
            _common("print the counts as JSON on stdout"),
            _counting(),
            _formatting(),
            _jobs(),
        ],
    )
    count.add_argument(
        "files", nargs="+", metavar="FILE", help="conversation files or dirs ('-': stdin)"
    )
    count.add_argument(
        "--top", type=positive_int, default=10, metavar="N", help="largest messages to list"
    )

    replay = sub.add_parser(
        "replay",
        help="replay a transcript call by call through the trigger",
        description="Replay a transcript through the trigger, one model call at a time.",
        epilog=REPLAY_EPILOG,
        formatter_class=_FORMATTER,
        parents=[
            _common("print every call as JSON on stdout"),
            _counting(),
            _formatting(),
            _laddering(),
            _jobs(),
        ],
    )
    replay.add_argument(
        "files", nargs="+", metavar="FILE", help="conversation files or dirs ('-': stdin)"
    )
    replay.add_argument(
        "--window", type=positive_int, required=True, metavar="N", help="context window in tokens"
    )
    replay.add_argument(
        "--compact-at",
        type=fraction,
        default=None,
        metavar="R",
        help="compact when a call would exceed R x window (default: the config's, else 0.7)",
    )
    replay.add_argument(
        "--compact-to",
        type=fraction,
        default=None,
        metavar="R",
        help="compact down to R x window (default: the config's, else 0.4)",
    )
    replay.add_argument(
        "--plot", metavar="OUT.png", help="draw tokens per call (needs matplotlib: '[plot]')"
    )
    replay.add_argument(
        "--price", metavar="MODEL", help="price every call as MODEL (genai-prices, else shipped)"
    )
    replay.add_argument(
        "--prices", metavar="FILE", help="price table (TOML) to use instead of the shipped one"
    )
    replay.add_argument(
        "--ttl",
        type=positive_int,
        metavar="SECONDS",
        help="prompt-cache lifetime (default: the model's first, e.g. 300)",
    )
    replay.add_argument(
        "--cadence",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds between calls where the log records no time (default 30)",
    )
    replay.add_argument(
        "--overhead",
        type=int,
        default=0,
        metavar="N",
        help="tokens sent with every request that the log does not hold (system prompt, tools)",
    )
    replay.add_argument(
        "--policy",
        choices=("default", "cache-aware"),
        default="default",
        help="when to compact: at --compact-at (default) or when it pays (needs --price)",
    )

    from .parser_check import add_check_parsers

    add_check_parsers(sub, _common, [_counting(), _formatting()], _jobs(), _FORMATTER)

    strategies = sub.add_parser(
        "strategies",
        help="list the registered strategies",
        description="Every registered strategy: key, capabilities and what it does.",
        epilog=STRATEGIES_EPILOG,
        formatter_class=_FORMATTER,
        parents=[_common("print the strategies as JSON on stdout")],
    )
    strategies.add_argument(
        "--config", metavar="FILE", help="explain the trigger and ladder a config file sets"
    )

    formats = sub.add_parser(
        "formats",
        help="list the transcript and agent-log formats read (or which one files are)",
        description="Every format the readers know, in the order detection tries them; with "
        "files, the format each one is read as and every format considered.",
        epilog=FORMATS_EPILOG,
        formatter_class=_FORMATTER,
        parents=[_common("print the formats as JSON on stdout")],
    )
    formats.add_argument("files", nargs="*", metavar="FILE", help="files to detect")

    example = sub.add_parser(
        "example",
        help="write (or name) the bundled example conversation",
        description="Write the bundled example agent run where you are, or name where the "
        "installed copy is.",
        epilog=EXAMPLE_EPILOG,
        formatter_class=_FORMATTER,
    )
    where = example.add_mutually_exclusive_group()
    where.add_argument(
        "--path", action="store_true", help="print the installed copy's path; write nothing"
    )
    where.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        default="agent_session.json",
        help="where to write it (default: agent_session.json; '-' for stdout)",
    )

    session = sub.add_parser(
        "session",
        help="manage persistent sessions",
        description="List, show, export, import, clear or delete stored sessions.",
        epilog=SESSION_EPILOG,
        formatter_class=_FORMATTER,
    )
    actions = session.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    actions.required = True
    store = Parser(add_help=False)
    store.add_argument(
        "--store",
        metavar="URL",
        help="session store: a directory, file:///dir or postgresql://user@host/db "
        "(default: $COMPACTION_SESSIONS_URL, else $COMPACTION_SESSIONS_DIR)",
    )
    store.add_argument(
        "--retry-seconds",
        type=seconds,
        metavar="S",
        help="PostgreSQL only: how long a call keeps retrying while the server is "
        "unreachable or does not answer (default: 30)",
    )
    common = [_common("print JSON on stdout"), store]

    def action(name: str, help_text: str, example: str) -> Parser:
        return actions.add_parser(
            name,
            help=help_text,
            description=help_text[:1].upper() + help_text[1:] + ".",
            epilog=f"example:\n  {example}\n",
            formatter_class=_FORMATTER,
            parents=common,
        )

    action("list", "list the sessions in the store", "compaction session list --json")
    show = action("show", "show a session's history", "compaction session show my-agent")
    show.add_argument("name", metavar="NAME")
    show.add_argument(
        "--last", type=positive_int, metavar="N", help="only the N most recent messages"
    )
    export = action(
        "export",
        "write a session to one JSON file",
        "compaction session export my-agent my-agent.json",
    )
    export.add_argument("name", metavar="NAME")
    export.add_argument("path", metavar="FILE", help="a regular file, or '-' for stdout")
    import_ = action(
        "import",
        "create a session from an exported JSON file",
        "compaction session import my-agent.json restored",
    )
    import_.add_argument("path", metavar="FILE", help="an export file, or '-' for stdin")
    import_.add_argument(
        "name", metavar="NAME", nargs="?", help="store it under this name (default: its own)"
    )
    import_.add_argument("--name", dest="name_option", metavar="NAME", help=argparse.SUPPRESS)
    clear = action(
        "clear",
        "empty a session's history (context and state stay)",
        "compaction session clear my-agent",
    )
    clear.add_argument("name", metavar="NAME")
    delete = action("delete", "delete a session", "compaction session delete my-agent")
    delete.add_argument("name", metavar="NAME")
    return parser
