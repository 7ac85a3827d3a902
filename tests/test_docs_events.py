"""The events examples of the docs run as written and print what the docs show: the metrics
recipe (compactions counted correctly, tokens saved per strategy, a p95 run time) and the
approve-tool hook. Each runs in a fresh interpreter, as a reader would run it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.docs_blocks import pages, parse

TEXT = "\n".join(page.read_text() for page in pages())


def example(marker: str) -> tuple[str, str]:
    """The one python block of the docs containing ``marker``, and the output it shows."""
    found = [
        (b.code, b.output or "")
        for page in pages()
        for b in parse(page)
        if b.lang == "python" and marker in b.code and b.output is not None
    ]
    assert len(found) == 1, f"expected one docs example containing {marker!r}"
    return found[0]


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_metrics_recipe_prints_what_the_docs_show() -> None:
    code, shown = example("quantiles(")
    assert run(code) == shown


def test_the_metrics_recipe_counts_no_op_runs_as_runs_not_compactions() -> None:
    code, _ = example("quantiles(")
    # The recipe's own numbers, read after it ran: 4 runs timed, a p95 among them.
    probe = (
        code
        + "\nassert len(run_seconds) == runs['runs'] == 4, run_seconds"
        + "\nassert runs['compactions'] == 2"
        + "\nassert min(run_seconds) <= p95 and p95 >= sorted(run_seconds)[1]"
        + "\nassert all(v > 0 for v in saved.values())"
        + "\nprint('checked')"
    )
    assert run(probe).splitlines()[-1] == "checked"


def test_the_approve_tool_example_prints_what_the_docs_show() -> None:
    code, shown = example("TurnLoop(model, [delete, search], approve_tool=approve)")
    assert run(code) == shown


@pytest.mark.parametrize("signal", ["layer_added", "layer_entered", "layer_exited"])
def test_the_docs_document_every_new_ladder_signal(signal: str) -> None:
    assert f"| `{signal}` |" in TEXT


@pytest.mark.parametrize(
    "signal",
    [
        "turn_started",
        "turn_finished",
        "model_call_started",
        "model_call_finished",
        "model_call_failed",
        "tool_call_denied",
        "tool_call_started",
        "tool_call_finished",
        "tool_call_failed",
    ],
)
def test_the_docs_document_every_loop_signal(signal: str) -> None:
    assert f"| `{signal}` |" in TEXT
