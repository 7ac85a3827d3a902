"""The package as a user gets it: built like a release, checked, installed without the source.

``python -m build`` makes the sdist and the wheel from a copy of the tracked files (what a
release is built from), ``twine check`` reads their metadata as the index would, and the wheel
is installed into a fresh virtualenv, run from a directory that is not the source tree. The
dependencies are not downloaded again: the fresh environment sees the test environment's
packages through a ``.pth`` line (added to ``sys.path`` after its own site-packages, so the
wheel's ``compaction`` wins over any editable install; ``.pth`` files in that directory are not
processed, so an editable finder there cannot take over).
"""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = "compaction-ladder"

#: For each extra: what its users import (the drop-in, and what the docs' example needs).
EXTRAS = {
    "openai": ["openai", "compaction.summarizers.openai_chat"],
    "anthropic": ["anthropic"],
    "cli": ["rich"],
    "plot": ["matplotlib", "compaction._cli.plot"],
    "postgres": ["psycopg", "psycopg_pool", "compaction.sessions.postgres"],
    "langchain": ["langchain.agents", "compaction.integrations.langchain"],
    "pydantic-ai": ["pydantic_ai", "compaction.integrations.pydantic_ai"],
    "openai-agents": ["agents", "compaction.integrations.openai_agents"],
    "litellm": ["litellm", "compaction.integrations.litellm"],
    "otel": [
        "opentelemetry.sdk.trace",
        "opentelemetry.sdk.metrics",
        "compaction.integrations.otel",
    ],
    "tune": ["optuna", "compaction.check.tune"],
    "prices": ["genai_prices", "compaction.pricing._genai"],
    "bench": ["langchain_core"],
    "docs": ["mkdocs", "material", "mkdocstrings_handlers.python"],
    "dev": ["pytest", "build", "twine", "mkdocs", "material", "mkdocstrings_handlers.python"],
}

pytestmark = pytest.mark.slow


def _tracked_copy(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files a release is built from")
    for name in listed.stdout.splitlines():
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["COMPACTION_PLAIN"] = "1"
    return env


def _run(args: list[str], cwd: Path, timeout: int = 300) -> str:
    done = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_clean_env()
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the dev extra's build is not installed")
    source = tmp_path_factory.mktemp("source")
    _tracked_copy(source)
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend is the one installed here (the dev extra pins it),
    # so building needs no network.
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), "."], source)
    return out


@pytest.fixture(scope="module")
def fresh(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with only the wheel installed in it: its ``bin`` directory."""
    home = tmp_path_factory.mktemp("venv")
    venv.create(home, with_pip=False)
    python = home / "bin" / "python"
    (wheel,) = dist.glob("*.whl")
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
         "--no-deps", "--no-index", str(wheel)],
        home,
    )  # fmt: skip
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], home
        ).strip()
    )
    # The dependencies, from this environment (see the module docstring).
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return home / "bin"


def test_the_sdist_and_the_wheel_pass_twine_check(dist: Path) -> None:
    pytest.importorskip("twine", reason="the dev extra's twine is not installed")
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2, files
    out = _run([sys.executable, "-m", "twine", "check", "--strict", *files], dist)
    assert out.count("PASSED") == 2, out


def test_the_wheel_holds_the_typed_package_and_the_example(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    assert wheel.name.startswith("compaction_ladder-"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "compaction/py.typed" in names
    assert "compaction/examples/agent_session.json" in names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "features/"))]
    metadata = email.message_from_bytes(
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    )
    assert metadata["Name"] == DISTRIBUTION
    assert set(metadata.get_all("Provides-Extra")) == set(EXTRAS)


def test_the_sdist_carries_the_docs_and_the_examples(dist: Path) -> None:
    import tarfile

    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"README.md", "mkdocs.yml", "docs/index.md", "LICENSE"} <= names
    assert [n for n in names if n.startswith("examples/") and n.endswith(".py")]


def test_the_installed_command_runs_outside_the_source_tree(fresh: Path, tmp_path: Path) -> None:
    python = str(fresh / "python")
    where = _run([python, "-c", "import compaction; print(compaction.__file__)"], tmp_path)
    assert where.startswith(str(fresh.parent)), f"imported from {where}, not the wheel"
    assert "usage: compaction" in _run([str(fresh / "compaction"), "--help"], tmp_path)
    example = Path(_run([str(fresh / "compaction"), "example", "--path"], tmp_path).strip())
    assert example == Path(where).parent / "examples" / "agent_session.json"
    done = subprocess.run(
        [str(fresh / "compaction"), "compact", str(example), "--target", "4000", "-o", "out.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_clean_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "total" in done.stderr and (tmp_path / "out.json").is_file()


def test_each_extra_brings_what_its_users_import(fresh: Path, tmp_path: Path) -> None:
    # The extras' requirements, read from the installed metadata; every one must be installed
    # here (they are: the dev extra), and then what the extra's users import must import.
    probe = """
import importlib, importlib.metadata as md, json, re, sys
from packaging.requirements import Requirement
wanted = json.loads(sys.argv[1])
reqs = [Requirement(r) for r in md.requires("compaction-ladder") or []]
declared = {}
for r in reqs:
    for extra in wanted:
        if r.marker and r.marker.evaluate({"extra": extra}):
            declared.setdefault(extra, []).append(r.name)
for extra, modules in wanted.items():
    for name in declared.get(extra, []):
        md.version(name)  # installed
    for module in modules:
        importlib.import_module(module)
print(json.dumps(declared))
"""
    import json

    out = _run([str(fresh / "python"), "-c", probe, json.dumps(EXTRAS)], tmp_path)
    declared = json.loads(out)
    assert set(declared) == set(EXTRAS), declared
    assert "opentelemetry-sdk" in declared["otel"]


def _commands_of_the_quickstart() -> list[str]:
    """The README quickstart's own commands (what follows the install), as printed."""
    sys.path.insert(0, str(ROOT))
    from tests.docs_blocks import parse

    quickstart = next(b for b in parse(ROOT / "README.md") if b.lang == "sh" and not b.skip)
    steps = [s.strip() for s in quickstart.code.strip().split("&&")]
    return [s for s in steps if s.startswith("compaction ")]


def test_the_readme_quickstart_runs_against_the_installed_wheel(
    fresh: Path, tmp_path: Path
) -> None:
    """What the README tells a new user to run works with only the wheel: no checkout, no
    repository path (the quickstart writes the bundled example where it runs)."""
    commands = _commands_of_the_quickstart()
    assert commands and any(c.startswith("compaction compact") for c in commands), commands
    env = _clean_env()
    env["PATH"] = os.pathsep.join([str(fresh), env.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-c", "set -e\ncommand -v compaction\n" + " && ".join(commands)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == str(fresh / "compaction")
    assert "total" in done.stderr and "fits" in done.stderr, done.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert "compacted.json" in written and "agent_session.json" in written, written


def test_help_names_the_docs_pages_not_repository_paths(fresh: Path, tmp_path: Path) -> None:
    """A wheel holds no docs/ folder: ``--help`` must not send a user to one."""
    command = str(fresh / "compaction")
    texts = [_run([command, "--help"], tmp_path)]
    for name in ("compact", "count", "replay", "strategies", "session", "example"):
        texts.append(_run([command, name, "--help"], tmp_path))
    found = [t for t in texts if "docs/" in t or ".md" in t or "compaction/examples" in t]
    assert not found, found
    assert "documentation site" in texts[0]
