"""The code blocks of README.md and every docs/*.md page, as data; running one; rewriting
the outputs a page shows. ``tests/test_docs.py`` executes them.

Conventions (for anyone writing a page):

- a ```` ```python ```` block runs **on its own**, offline, in a fresh interpreter: its own
  imports, nothing from an earlier block. Top-level ``await`` works. Its stdout must be empty
  unless the block is followed directly by a ```` ```text ```` block, which is then its exact
  output;
- a python block that names a ``postgresql://`` URL runs against a fresh database on the
  tests' throwaway PostgreSQL server named by ``$COMPACTION_SESSIONS_URL``, twice (a second
  run must print the same and leave no session behind);
- a ```` ```console ```` block holds ``$ command`` lines, each followed by the output it prints
  (stdout and stderr, in order). The command runs in ``bash`` in a scratch directory holding
  the bundled example (as ``agent_session.json``, where ``compaction example`` writes it, and at
  ``compaction/examples/``), with ``compaction`` on ``PATH``. A ``...``
  line stands for any number of lines; times (``1.2 ms``) and runs of spaces and dashes
  (table layout) are normalised;
- a ```` ```toml ```` block whose first line is ``# NAME.toml ...`` is written to ``NAME.toml``
  in that directory before anything runs (a console block of the same page may use it);
- a block that cannot run offline is marked, on the line right before it, with
  ``<!-- not-executed: the reason -->``; the tests report every such block and its reason.
  A ```` ```sh ```` block must be marked or be one of the README's own two setup commands.

To rewrite the ```` ```text ```` outputs of python blocks after a change in behaviour (each
block is run alone, as the tests run it)::

    python -m tests.docs_blocks --write README.md docs/*.md
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["EXAMPLE", "ROOT", "Block", "make_scratch", "pages", "parse", "run_python"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "compaction" / "examples" / "agent_session.json"
_FENCE = re.compile(r"^```([\w-]*)\s*$")
_MARK = re.compile(r"^<!--\s*not-executed:\s*(.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, language, text, 1-based line of the opening fence, the
    not-executed reason (if marked), and the expected output (a following ```text block) with
    the line of that block's opening fence."""

    page: str
    lang: str
    code: str
    line: int
    skip: str | None = None
    output: str | None = None
    output_line: int | None = None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.lang or 'text'}"


def pages() -> list[Path]:
    """README.md and every page of the documentation site, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def parse(path: Path) -> list[Block]:
    """Every fenced block of the Markdown file at ``path``, in order."""
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
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
                page,
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
                Block(
                    page,
                    previous.lang,
                    previous.code,
                    previous.line,
                    previous.skip,
                    block.code,
                    block.line,
                )
            )
            continue
        out.append(block)
    return out


def _adjacent(lines: list[str], first: Block, second: Block) -> bool:
    end = first.line + first.code.count("\n")  # the closing fence of ``first`` (0-based + 1)
    return all(not lines[k].strip() for k in range(end + 1, second.line - 1))


def make_scratch(blocks: list[Block], root: Path) -> Path:
    """``root`` made like a fresh clone's root after ``compaction example``, as far as a page's
    examples care: the bundled example at its place and where that command writes it, and the
    page's named ``# NAME.toml`` blocks written out."""
    import shutil

    (root / "compaction" / "examples").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE, root / "compaction" / "examples" / EXAMPLE.name)
    shutil.copy(EXAMPLE, root / EXAMPLE.name)
    for block in blocks:
        named = re.match(r"#\s*([\w.-]+\.toml)\b", block.code)
        if block.lang == "toml" and named:
            (root / named.group(1)).write_text(block.code)
    return root


#: Runs one block: compiled with top-level await allowed, in ``__main__``'s namespace.
_RUNNER = """
import ast, asyncio, inspect, sys
source = sys.stdin.read()
code = compile(source, sys.argv[1], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
outcome = eval(code, {"__name__": "__main__"})
if inspect.iscoroutine(outcome):
    asyncio.run(outcome)
"""


def run_python(
    block: Block, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``block`` run alone, as a reader would run it: a fresh interpreter in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-c", _RUNNER, block.id],
        input=block.code,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def _rewrite(path: Path) -> int:
    """Rewrite the outputs shown after ``path``'s python blocks; answer how many changed."""
    import tempfile

    lines = path.read_text(encoding="utf-8").splitlines()
    edits: list[tuple[int, int, list[str]]] = []  # (start, end) lines replaced, 0-based
    blocks = parse(path)
    with tempfile.TemporaryDirectory() as scratch:
        make_scratch(blocks, Path(scratch))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COMPACTION_SESSIONS_DIR": scratch}
        env.pop("COMPACTION_SESSIONS_URL", None)
        for block in blocks:
            if block.lang != "python" or block.skip or "postgresql://" in block.code:
                continue
            done = run_python(block, Path(scratch), env)
            if done.returncode != 0:
                print(f"{block.id} raised:\n{done.stderr}", file=sys.stderr)
                continue
            if done.stdout == (block.output or ""):
                continue
            shown = ["```text", *done.stdout.splitlines(), "```"]
            if block.output_line is not None:
                start = block.output_line - 1
                end = start + block.output.count("\n") + 2  # type: ignore[union-attr]
                edits.append((start, end, shown if done.stdout else []))
            elif done.stdout:
                close = block.line + block.code.count("\n")  # the closing fence, 0-based
                edits.append((close + 1, close + 1, ["", *shown]))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    if edits:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(edits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the outputs docs pages show.")
    parser.add_argument("--write", action="store_true", help="rewrite the pages (required)")
    parser.add_argument("pages", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if not args.write:
        parser.error("--write is required: this rewrites the pages in place")
    for page in args.pages:
        changed = _rewrite(page.resolve())
        print(f"{page}: {changed} output(s) rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
