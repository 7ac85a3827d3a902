"""``compact`` reports as saved what its layers saved, never a re-count in the output's shape.

Written as Anthropic JSON, an OpenAI conversation counts a little differently: a file no
layer touched must show 0 saved, alone and in a summary of several files.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import EXAMPLE, run_all


def test_a_file_no_layer_touched_saved_nothing(tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    small.write_bytes(EXAMPLE.read_bytes())
    large = tmp_path / "large.json"
    large.write_bytes(EXAMPLE.read_bytes())
    args = ["--to", "anthropic", "--dry-run", "--json"]
    both, alone = run_all(
        ["compact", str(large), str(small), "--target", "100000", *args],
        ["compact", str(small), "--target", "100000", *args],
    )
    for result in (both, alone):
        assert result.returncode == 0, result.stderr
    reports = json.loads(both.stdout)["files"] + [json.loads(alone.stdout)]
    for report in reports:
        assert all(s["status"] == "not_reached" for s in report["strategies"]), report
        # The re-count as written differs from the count before ...
        assert report["tokens_after"] != report["tokens_before"]
        # ... but no layer ran, so nothing was saved.
        assert report["saved"] == 0, report


def test_saved_is_what_the_layers_saved(tmp_path: Path) -> None:
    (result,) = run_all(
        ["compact", str(EXAMPLE), str(EXAMPLE), "--target", "4000", "--to", "anthropic",
         "--dry-run", "--json"]
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for report in json.loads(result.stdout)["files"]:
        applied = [s["saved"] for s in report["strategies"] if s["status"] == "applied"]
        assert applied and sum(applied) == report["saved"] > 0
