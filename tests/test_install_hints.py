"""Every install line the code prints names the distribution on the index, ``compaction-ladder``.

``compaction`` on the public index is an unrelated package (sediment compaction): a hint that
says ``pip install 'compaction[langchain]'`` installs the wrong software.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_no_install_line_names_the_wrong_distribution() -> None:
    wrong = re.compile(r"(?<![\w-])compaction\[")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        # The CHANGELOG is a record of releases past, not an instruction: left as it was.
        for path in [
            *ROOT.glob("compaction/**/*.py"),
            *(p for p in ROOT.glob("*.md") if p.name != "CHANGELOG.md"),
            *ROOT.glob("docs/*.md"),
            *ROOT.glob("examples/*.py"),
        ]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if wrong.search(line)
    ]
    assert not found, f"install lines naming 'compaction[...]': {found}"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("compaction.integrations.langchain", "langchain", "langchain"),
        ("compaction.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("compaction.integrations.litellm", "litellm", "litellm"),
    ],
)
def test_a_missing_framework_names_the_extra_that_installs_it(
    module: str, framework: str, extra: str
) -> None:
    # A fresh interpreter in which the framework cannot be imported, as where it is absent.
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"try:\n    import {module}\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert f"pip install 'compaction-ladder[{extra}]'" in done.stdout, done.stdout
