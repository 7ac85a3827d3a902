"""``benchmarks/RESULTS.md`` as a header and one delimited block per suite.

Each suite's section sits between ``<!-- benchmark: NAME -->`` and ``<!-- /benchmark: NAME -->``,
so running one suite with ``--write`` replaces its own block and leaves every other suite's
figures as they were (each block says when and how it was measured). Blocks are kept in the
order of the suite table; a block whose suite is no longer registered is kept at the end
rather than silently deleted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = ["HEADER", "blocks", "merge"]

HEADER: Final = """# Benchmark results

Written by `python -m benchmarks.run --write` (all suites) or `python -m benchmarks.run SUITE
--write` (that suite's section only; the others stay as they were). Each section says when,
where and with which command it was measured. Absolute times vary between machines and between
runs (the machine is shared); the ratios, each against a reference measured in the same run,
are what count.
"""

_BLOCK: Final = re.compile(
    r"<!-- benchmark: (?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /benchmark: (?P=name) -->\n?",
    re.S,
)


def blocks(text: str) -> dict[str, str]:
    """The suite blocks of a results file, by suite name (bodies without the markers)."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def _wrap(name: str, body: str) -> str:
    body = body if body.endswith("\n") else body + "\n"
    return f"<!-- benchmark: {name} -->\n{body}<!-- /benchmark: {name} -->\n"


def merge(existing: str | None, new: Mapping[str, str], order: Sequence[str]) -> str:
    """The results file with the blocks of ``new`` (suite name -> Markdown) put in place of
    their old versions in ``existing`` (a file written before; None or a file without
    blocks: nothing is kept), in ``order``."""
    kept = blocks(existing or "")
    kept.update(new)
    names = [n for n in order if n in kept] + [n for n in kept if n not in order]
    return HEADER + "\n" + "\n".join(_wrap(n, kept[n]) for n in names)
