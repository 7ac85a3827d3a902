"""The README's code blocks, as data: what ``tests/test_readme.py`` executes.

Conventions (for anyone adding a README section):

- a ```` ```python ```` block is executed, offline, in README order, in one namespace shared
  with the blocks before it (like a notebook: a later block may use ``messages`` or
  ``pipeline`` from an earlier one). Top-level ``await`` works. Its stdout must be empty unless
  the block is followed directly by a ```` ```text ```` block, which is then its exact output;
- a python block that names a ``postgresql://`` URL is self-contained and runs on its own
  (not in the shared namespace), against a fresh database on the tests' throwaway PostgreSQL
  server named by ``$COMPACTION_SESSIONS_URL``, twice (a second run must print the same);
- a ```` ```console ```` block holds ``$ command`` lines, each followed by the output it prints
  (stdout and stderr, in order). The command runs in ``bash`` in a scratch directory holding the
  bundled example (``compaction/examples/...``), with the installed ``compaction`` on ``PATH``.
  A ``...`` line stands for any number of lines; times (``1.2 ms``) and runs of spaces and
  dashes (table layout) are normalised;
- a ```` ```toml ```` block whose first line is ``# NAME.toml ...`` is written to ``NAME.toml``
  in that directory before anything runs (a later block may load it);
- a block that cannot run offline is marked, on the line right before it, with
  ``<!-- not-executed: the reason -->``; the tests report every such block and its reason.
  A ```` ```sh ```` block must be marked or be one of the README's own setup commands (the
  quickstart), which a slow test runs on a fresh copy of the project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "parse"]

_FENCE = re.compile(r"^```([\w-]*)\s*$")
_MARK = re.compile(r"^<!--\s*not-executed:\s*(.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, text, 1-based line of the opening fence, the
    not-executed reason (if marked), and the expected output (a following ```text block)."""

    lang: str
    code: str
    line: int
    skip: str | None = None
    output: str | None = None

    @property
    def id(self) -> str:
        return f"README.md:{self.line}:{self.lang or 'text'}"


def parse(path: Path) -> list[Block]:
    """Every fenced block of the Markdown file at ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    raw: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = _MARK.match(before.strip())
        raw.append(
            Block(
                opening.group(1),
                "\n".join(lines[i + 1 : j]) + "\n",
                i + 1,
                mark.group(1) if mark else None,
            )
        )
        i = j + 1
    # A ```text block right after a python block is that block's output.
    out: list[Block] = []
    for block in raw:
        if (
            block.lang == "text"
            and out
            and out[-1].lang == "python"
            and out[-1].output is None
            and _adjacent(lines, out[-1], block)
        ):
            previous = out.pop()
            out.append(
                Block(previous.lang, previous.code, previous.line, previous.skip, block.code)
            )
            continue
        out.append(block)
    return out


def _adjacent(lines: list[str], first: Block, second: Block) -> bool:
    end = first.line + first.code.count("\n")  # the closing fence of ``first`` (0-based + 1)
    return all(not lines[k].strip() for k in range(end + 1, second.line - 1))
