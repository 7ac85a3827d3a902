"""Every README example is executed: python blocks run, console examples run and their printed
output is compared, and whatever cannot run offline is marked and reported (skipped, with the
reason). The conventions are in ``tests/readme_blocks.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme_blocks import Block, parse

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLE = ROOT / "compaction" / "examples" / "agent_session.json"
BLOCKS = parse(README)
PYTHON = [b for b in BLOCKS if b.lang == "python"]
#: Python blocks that name a PostgreSQL URL: each runs on its own (they are self-contained)
#: against a fresh database on the test server, so that server starts only when one is run.
POSTGRES = [b for b in PYTHON if "postgresql://" in b.code and b.skip is None]
OFFLINE = [b for b in PYTHON if b not in POSTGRES]
CONSOLE = [b for b in BLOCKS if b.lang == "console"]
SHELL = [b for b in BLOCKS if b.lang in ("sh", "bash", "shell")]
#: Blocks that are data or pictures, not examples to run.
DATA = {"", "text", "toml", "json", "jsonl"}


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
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory like a fresh clone's root, as far as the examples care."""
    root = tmp_path_factory.mktemp("readme")
    (root / "compaction" / "examples").mkdir(parents=True)
    shutil.copy(EXAMPLE, root / "compaction" / "examples" / EXAMPLE.name)
    for block in BLOCKS:
        named = re.match(r"#\s*([\w.-]+\.toml)\b", block.code)
        if block.lang == "toml" and named:
            (root / named.group(1)).write_text(block.code)
    return root


def _run_python(blocks: list[Block], scratch: Path, env: dict[str, str]) -> dict[str, dict]:
    """Run ``blocks`` in order in one namespace (tests/readme_runner.py): their results by id."""
    job = [{"id": b.id, "code": b.code} for b in blocks]
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "readme_runner.py")],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        cwd=scratch,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def python_results(scratch: Path) -> dict[str, dict]:
    return _run_python([b for b in OFFLINE if b.skip is None], scratch, _env(scratch))


def test_the_readme_has_examples_to_run() -> None:
    assert len(PYTHON) >= 8 and len(CONSOLE) >= 5


def test_every_block_is_run_or_marked() -> None:
    for block in BLOCKS:
        if block.lang in DATA or block.lang in ("python", "console"):
            continue
        if block.lang in ("sh", "bash", "shell") and block in SHELL[:2]:
            continue  # the two setup commands: test_quickstart_* and .ci/run
        assert block.skip, f"{block.id}: run it in the tests, or mark it <!-- not-executed: -->"


@pytest.mark.parametrize("block", OFFLINE, ids=lambda b: b.id)
def test_python_block(block: Block, python_results: dict[str, dict]) -> None:
    if block.skip:
        pytest.skip(f"{block.id} not executed: {block.skip}")
    result = python_results[block.id]
    assert result["ok"], f"{block.id} raised:\n{result['error']}"
    assert result["stdout"] == (block.output or ""), f"{block.id} printed other output"


def test_the_postgres_example_is_found() -> None:
    assert POSTGRES, "no README python block names a postgresql:// URL any more"


@pytest.mark.postgres
@pytest.mark.parametrize("block", POSTGRES, ids=lambda b: b.id)
def test_python_block_on_postgres(block: Block, scratch: Path, postgres_url: str) -> None:
    # As a reader runs it: $COMPACTION_SESSIONS_URL names the server. Twice on one database,
    # because the example must leave nothing behind that changes a second run.
    env = {**_env(scratch), "COMPACTION_SESSIONS_URL": postgres_url}
    for run in ("first", "second"):
        result = _run_python([block], scratch, env)[block.id]
        assert result["ok"], f"{block.id} raised on the {run} run:\n{result['error']}"
        assert result["stdout"] == (block.output or ""), f"{block.id} printed other output"
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
def test_console_block(block: Block, scratch: Path) -> None:
    if block.skip:
        pytest.skip(f"{block.id} not executed: {block.skip}")
    commands = _commands(block)
    assert commands, f"{block.id}: no '$ command' line"
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
    command = SHELL[1].code.strip()
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
    # virtualenv of ours: afterwards `compaction` must be on PATH for the examples below it.
    clone = tmp_path / "compaction"
    _fresh_copy(clone)
    quickstart = SHELL[0].code.strip()
    count = next(c for c in CONSOLE if "compaction count" in c.code)
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
    assert (clone / "compacted.json").is_file()
    tail = done.stdout.splitlines()
    start = next(i for i, line in enumerate(tail) if line.startswith(expected[0][:30]))
    assert _matches(expected, tail[start:]), done.stdout
