"""The parsers of ``compaction check`` and ``compaction tune`` (kept apart from parser.py,
which holds the commands that read and write conversations)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_check_parsers", "window_option"]

CHECK_EPILOG = """\
examples:
  compaction check logs/ --price claude-sonnet-4-5                 # floors from pyproject.toml
  compaction check logs/ --config compaction.toml --junit-xml check.xml
  compaction check run.jsonl --window 200000 --json

exit codes: 0 every floor held; 1 a floor not held (each is listed); 2 bad input.
Floors come from [tool.compaction.check] in pyproject.toml, then the config's [check] table.
The guide "Check and tune on your own logs" is on the documentation site.
"""

TUNE_EPILOG = """\
examples:
  compaction tune logs/ --price claude-sonnet-4-5 --trials 40 -o compaction.toml
  compaction check logs/ --config compaction.toml --price claude-sonnet-4-5

The logs are split in two (sorted, shuffled with --shuffle N, every other one held out); settings
are chosen on one half and reported on the other. Needs optuna: pip install
'compaction-ladder[tune]'.
"""


def window_option(text: str) -> int | float:
    """``200000`` (tokens) or ``50%`` (a share of each log's own size)."""
    raw = text.strip().replace("_", "")
    try:
        if raw.endswith("%"):
            share = float(raw[:-1]) / 100
            if not 0 < share <= 1:
                raise ValueError
            return share
        value = int(raw)
        if value <= 0:
            raise ValueError
        return value
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected tokens (200000) or a share of each log (50%), got {text!r}"
        ) from None


def add_check_parsers(sub: Any, common: Any, reading: list[Any], jobs: Any, formatter: Any) -> None:
    """Add ``check`` and ``tune`` to the subcommands ``sub`` (``reading``: the parent parsers
    of counting and ``--format``)."""
    check = sub.add_parser(
        "check",
        help="replay logs and check what compaction keeps and costs against floors",
        description="Replay agent logs through a trigger and ladder, and measure what each "
        "request kept (fit, validity, the task, the person's identifiers, probe facts) and "
        "cost; exit 1 when a floor is not held.",
        epilog=CHECK_EPILOG,
        formatter_class=formatter,
        parents=[common("print the report as JSON on stdout"), *reading, jobs],
    )
    _shared(check)
    check.add_argument(
        "--junit-xml", metavar="PATH", help="also write the verdict as JUnit XML (for CI)"
    )

    tune = sub.add_parser(
        "tune",
        help="search trigger and ladder settings that cost least and keep what matters",
        description="Search the trigger's marks, the layers' keep sizes, the minimum saving "
        "and the cache policy on your logs: the cheapest settings that keep at least what the "
        "default keeps.",
        epilog=TUNE_EPILOG,
        formatter_class=formatter,
        parents=[common("print the report as JSON on stdout"), *reading],
    )
    _shared(tune, price_required=True)
    tune.add_argument(
        "--trials", type=int, default=40, metavar="N", help="settings to try (default 40)"
    )
    tune.add_argument(
        "--shuffle",
        type=int,
        default=0,
        metavar="N",
        help="the number the logs are shuffled with before the split, and the search started "
        "from (default 0): the same number gives the same result",
    )
    tune.add_argument(
        "-o", "--output", metavar="PATH", help="write the chosen settings as a config file"
    )


def _shared(parser: Any, *, price_required: bool = False) -> None:
    parser.add_argument("files", nargs="+", metavar="LOG", help="agent logs or directories")
    parser.add_argument(
        "--config", metavar="FILE", help="trigger and ladder settings (TOML; default: defaults)"
    )
    parser.add_argument(
        "--window",
        type=window_option,
        default=0.5,
        metavar="N|P%",
        help="the model's window in tokens, or a share of each log's size (default 50%%, so "
        "that logs smaller than a real window still show what compaction does)",
    )
    parser.add_argument(
        "--price",
        metavar="MODEL",
        required=price_required,
        help="price every call as MODEL with the prompt cache (a row of the price table)",
    )
