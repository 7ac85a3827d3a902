"""Every example in README.md and in the documentation pages (docs/*.md) is executed: each
python block alone in a fresh interpreter, console examples with their printed output compared,
and whatever cannot run offline is marked and reported (skipped, with the reason). The
conventions are in ``tests/docs_blocks.py``; ``python -m tests.docs_blocks --write PAGE...``
rewrites the outputs a page shows after a change in behaviour.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_blocks import ROOT, Block, make_scratch, pages, parse, run_python

README = ROOT / "README.md"
BLOCKS = [block for page in pages() for block in parse(page)]
PYTHON = [b for b in BLOCKS if b.lang == "python"]
#: Python blocks that name a PostgreSQL URL run against a fresh database on the test server,
#: so that server starts only when one is run.
POSTGRES = [b for b in PYTHON if "postgresql://" in b.code and b.skip is None]
OFFLINE = [b for b in PYTHON if b not in POSTGRES]
CONSOLE = [b for b in BLOCKS if b.lang == "console"]
#: The README's two setup commands (the quickstart, and the test suite as .ci/run runs it).
SETUP = [b for b in parse(README) if b.lang in ("sh", "bash", "shell") and not b.skip][:2]
#: Blocks that are data or pictures, not examples to run.
DATA = {"", "text", "toml", "json", "jsonl", "yaml"}


def _env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The examples use the file store under ``scratch`` unless a test names a database.
    env.pop("COMPACTION_SESSIONS_URL", None)
    env.update(
        COMPACTION_SESSIONS_DIR=str(scratch / "sessions"),
        COMPACTION_PLAIN="1",
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as they were written
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


@pytest.fixture(scope="module")
def scratches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per page, a working directory like a fresh clone's root, as far as its examples care."""
    made: dict[str, Path] = {}
    for page in pages():
        blocks = parse(page)
        root = make_scratch(blocks, tmp_path_factory.mktemp(page.stem))
        made[blocks[0].page if blocks else page.name] = root
    return made


def _scratch(block: Block, scratches: dict[str, Path]) -> Path:
    return scratches[block.page]


def _shown(block: Block, done: subprocess.CompletedProcess[str]) -> str:
    """The failure message: what ran, what it printed, and what the page shows."""
    return (
        f"{block.id} printed other output than the page shows.\n"
        f"--- printed (paste into the ```text block after line {block.line}) ---\n"
        f"{done.stdout}"
        f"--- the page shows ---\n{block.output or ''}"
        f"--- stderr ---\n{done.stderr[-3000:]}"
    )


def test_the_pages_have_examples_to_run() -> None:
    assert len(PYTHON) >= 20 and len(CONSOLE) >= 5
    assert [b for b in parse(README) if b.lang == "python" and not b.skip]


def test_every_block_is_run_or_marked() -> None:
    for block in BLOCKS:
        if block.lang in DATA or block.lang in ("python", "console") or block in SETUP:
            continue
        assert block.skip, f"{block.id}: run it in the tests, or mark it <!-- not-executed: -->"


@pytest.fixture(scope="module")
def python_results(scratches: dict[str, Path]) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every offline python block run alone, each in its own interpreter, as many at a time
    as there are cores (most of a block's time is starting Python and importing)."""
    from concurrent.futures import ThreadPoolExecutor

    todo = [b for b in OFFLINE if not b.skip]

    def one(block: Block) -> subprocess.CompletedProcess[str]:
        scratch = _scratch(block, scratches)
        return run_python(block, scratch, _env(scratch))

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return dict(zip([b.id for b in todo], pool.map(one, todo), strict=True))


@pytest.mark.parametrize("block", OFFLINE, ids=lambda b: b.id)
def test_python_block(
    block: Block, python_results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    if block.skip:
        pytest.skip(f"{block.id} not executed: {block.skip}")
    done = python_results[block.id]
    assert done.returncode == 0, f"{block.id} raised:\n{done.stderr}"
    assert done.stdout == (block.output or ""), _shown(block, done)


def test_the_postgres_example_is_found() -> None:
    assert POSTGRES, "no python block names a postgresql:// URL any more"


@pytest.mark.postgres
@pytest.mark.parametrize("block", POSTGRES, ids=lambda b: b.id)
def test_python_block_on_postgres(
    block: Block, scratches: dict[str, Path], postgres_url: str
) -> None:
    # As a reader runs it: $COMPACTION_SESSIONS_URL names the server. Twice on one database,
    # because the example must leave nothing behind that changes a second run.
    scratch = _scratch(block, scratches)
    env = {**_env(scratch), "COMPACTION_SESSIONS_URL": postgres_url}
    for run in ("first", "second"):
        done = run_python(block, scratch, env)
        assert done.returncode == 0, f"{block.id} raised on the {run} run:\n{done.stderr}"
        assert done.stdout == (block.output or ""), _shown(block, done)
    assert block.output, f"{block.id}: state its output in a following ```text block"
    from compaction.sessions import SessionStore

    with SessionStore.from_url(postgres_url) as store:
        assert store.list() == [], f"{block.id} left sessions behind"


# -- console examples -------------------------------------------------------------------------

_MS = re.compile(r"\b\d+(?:\.\d+)? ms\b")


def _normal(line: str) -> str:
    line = _MS.sub("<t>", line)
    line = re.sub(r"-{2,}", "--", line)
    return " ".join(line.split())


def _matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` (with ``...`` lines matching any run of lines) against ``actual``."""
    exp = [_normal(x) for x in expected]
    act = [_normal(x) for x in actual]
    # Blank lines between tables are layout too.
    exp = [x for x in exp if x]
    act = [x for x in act if x]

    def go(i: int, j: int) -> bool:
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i] == act[j] and go(i + 1, j + 1)

    return go(0, 0)


def _commands(block: Block) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


@pytest.mark.parametrize("block", CONSOLE, ids=lambda b: b.id)
def test_console_block(block: Block, scratches: dict[str, Path]) -> None:
    if block.skip:
        pytest.skip(f"{block.id} not executed: {block.skip}")
    commands = _commands(block)
    assert commands, f"{block.id}: no '$ command' line"
    scratch = _scratch(block, scratches)
    for command, expected in commands:
        done = subprocess.run(
            ["bash", "-c", command + " 2>&1"],
            capture_output=True,
            text=True,
            cwd=scratch,
            env=_env(scratch),
            timeout=300,
        )
        actual = done.stdout.splitlines()
        assert _matches(expected, actual), (
            f"{block.id}: `{command}` printed\n"
            + done.stdout
            + "\nexpected\n"
            + "\n".join(expected)
        )


# -- the setup commands -----------------------------------------------------------------------


def test_the_readme_test_command_is_what_ci_runs() -> None:
    assert len(SETUP) == 2, "the README shows two setup commands: the quickstart and the tests"
    command = SETUP[1].code.strip()
    assert command in (ROOT / ".ci" / "run").read_text()


def _fresh_copy(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell a fresh clone's files")
    for name in listed.stdout.splitlines():
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@pytest.mark.slow
def test_quickstart_works_as_printed_on_a_fresh_copy(tmp_path: Path) -> None:
    # The first command exactly as printed, in a fresh copy, in a shell whose PATH has no
    # virtualenv of ours: afterwards `compaction` must be on PATH for the examples below it,
    # and the working tree must have nothing new for git to show.
    clone = tmp_path / "compaction"
    _fresh_copy(clone)
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    quickstart = SETUP[0].code.strip()
    count = next(c for c in CONSOLE if c.page == "README.md" and "compaction count" in c.code)
    command, expected = _commands(count)[0]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    ours = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    env["COMPACTION_PLAIN"] = "1"
    done = subprocess.run(
        ["bash", "-c", f"set -e\n{quickstart}\n{command} 2>&1"],
        capture_output=True,
        text=True,
        cwd=clone,
        env=env,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tail = done.stdout.splitlines()
    start = next(i for i, line in enumerate(tail) if line.startswith(expected[0][:30]))
    assert _matches(expected, tail[start:]), done.stdout
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    untracked = [line for line in status.splitlines() if line.startswith("??")]
    assert not untracked, f"the quickstart left files for git to show: {untracked}"
