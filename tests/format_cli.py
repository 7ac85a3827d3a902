"""What every log reader owes the command line (and the check), checked the same way for each
format.

A reader's file is counted, compacted to a target and read back, read again with ``--format``
naming its reader, and refused in one line when another reader is forced on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from compaction.formats import load
from compaction.messages import Message
from compaction.validate import problems
from tests.test_cli import one_line_error, run_all


def read_by_the_commands(
    path: Path, name: str, wrong: str, *, target: int = 3000
) -> tuple[dict[str, Any], tuple[Message, ...]]:
    """Run ``count``, ``compact --target``, ``count --format name`` and ``count --format
    wrong`` on ``path``; check what every format must give (the count is the reader's, the
    compacted file fits the target and is a valid request, the forced reader's error names
    it); answer the count (``count --json``) and the compacted messages."""
    out = path.parent / f"{path.stem}.compacted.json"
    count, compact, named, forced = run_all(
        ["count", str(path), "--json"],
        ["compact", str(path), "--target", str(target), "-o", str(out)],
        ["count", str(path), "--format", name, "--json"],
        ["count", str(path), "--format", wrong],
    )
    assert count.returncode == 0, count.stderr
    counted = json.loads(count.stdout)
    assert counted["format"] == name
    assert counted["messages"] == len(load(path).messages)
    assert json.loads(named.stdout)["messages"] == counted["messages"]
    assert compact.returncode in (0, 1), compact.stderr
    (after,) = run_all(["count", str(out), "--json"])
    assert 0 < json.loads(after.stdout)["total"] <= target < counted["total"]
    kept = load(out).messages
    assert problems(kept) == []
    assert wrong in one_line_error(forced)
    return counted, kept


def check_reports_facts(paths: Sequence[Path], cwd: Path) -> None:
    """Run ``compaction check`` on each log: each is read (nothing unread, no note saying its
    facts could not be read), compacted at least once, and asked at least one fact."""
    results = run_all(
        *(
            ["check", str(p), "--price", "claude-sonnet-4-5", "--window", "20%", "--json"]
            for p in paths
        ),
        cwd=cwd,
    )
    for path, result in zip(paths, results, strict=True):
        assert result.returncode in (0, 1), (path.name, result.returncode, result.stderr)
        assert "Traceback" not in result.stderr
        report = json.loads(result.stdout)
        assert not report["unread"], (path.name, report["unread"])
        (log,) = report["logs"]
        assert log["facts_note"] == "", (path.name, log["facts_note"])
        assert log["compactions"] >= 1 and log["facts"][1] >= 1, (path.name, log)


#: Values a careless or hostile writer may put in any field: a reader must read the file or
#: refuse it with its own error, whatever it meets where it expects text, a number or a list.
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
