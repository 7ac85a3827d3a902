"""The benchmark harness runs end to end, and its quality metrics measure what they say.

One quick run of ``python -m benchmarks.run`` in a subprocess, from the repository root, on tiny
synthetic conversations written as real transcript files; then the quality suite's small pure
functions on hand-made conversations, and the suite itself over every real transcript. Nothing
about speed is asserted: the benchmarks measure that, the test suite never does.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.common.data import load_cases
from benchmarks.common.results_file import HEADER, blocks, merge
from benchmarks.common.synthetic import conversation
from benchmarks.quality import identifiers
from benchmarks.quality import metrics as qm
from benchmarks.quality import suite as quality
from benchmarks.quality import totals as quality_totals
from benchmarks.run import SUITES
from benchmarks.scaling import fit
from compaction import Message, ToolCall
from compaction.adapters.openai import to_openai
from compaction.memory.transcript import mark

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"


# -- the harness end to end -------------------------------------------------------------------


def _run(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ""}  # the package must be found from the root alone
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_quick_run_of_every_suite_writes_only_where_told(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    # Three small OpenAI-format transcripts: enough for every suite, the concatenation too.
    for seed, size in ((1, 40), (2, 60), (3, 80)):
        messages = to_openai(conversation(size, seed=seed))
        (folder / f"chat-{seed}.json").write_text(json.dumps(messages), encoding="utf-8")
    out = tmp_path / "RESULTS.md"
    committed = RESULTS.read_bytes() if RESULTS.exists() else None
    done = _run(
        [
            "--quick",
            "--json",
            "--transcripts",
            str(folder),
            "--sizes",
            "50,100,200",
            "--out",
            str(out),
        ]
    )
    assert done.returncode == 0, done.stderr
    assert "[bench]" in done.stderr  # progress goes to stderr, not into the JSON
    # Without --write the committed results file is left exactly as it was.
    assert (RESULTS.read_bytes() if RESULTS.exists() else None) == committed

    results = json.loads(done.stdout)
    assert results["transcripts"]["files"] == 3
    cold = results["cold"]
    assert len(cold["cases"]) == 3 and cold["concat"]["messages"] == 40 + 59 + 79
    for row in cold["cases"]:
        assert row["floor_s"] > 0 and row["ladder_s"] > 0 and row["valid"]
    scaling = results["scaling"]
    assert [r["messages"] for r in scaling["rows"]] == [50, 100, 200]
    assert scaling["fit"]["ladder"]["sizes"] == [50, 100, 200]
    assert results["warm"]["groups"] and results["economics"]["rows"]
    peers = results["peers"]
    assert "skipped" in peers or {"sliding_window", "trim_messages"} <= set(peers["cases"][0])
    # One row per drop-in and phase, each size measured: before any compaction, and between
    # compactions (from 500 messages).
    for row in results["integrations"]:
        sizes = [100, 500] if row["phase"] == "before" else [500, 1000]
        assert "skipped" in row or sorted(map(int, row["ms_per_call"])) == sizes
    assert {r["phase"] for r in results["integrations"]} == {"before", "after"}
    q = results["quality"]
    assert {"default", "free", "summary"} <= set(q["ladders"])
    assert set(q["ladders"]) | set(q["skipped_ladders"]) == set(quality.LADDERS)
    # Every transcript, every ladder, every target and the replay: one row each.
    assert len(q["rows"]) == 3 * len(q["ladders"]) * (len(quality.TARGETS) + 1)

    table = out.read_text(encoding="utf-8")
    assert table.startswith(HEADER)
    assert list(blocks(table)) == [s.name for s in SUITES]
    for heading in ("## Counting floor", "## Scaling", "## Quality", "### Replay"):
        assert heading in table


def test_unknown_suite_is_refused_and_list_names_every_suite() -> None:
    done = _run(["no-such-suite"])
    assert done.returncode == 2 and "no-such-suite" in done.stderr
    listed = _run(["--list"])
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [s.name for s in SUITES]


def test_merge_replaces_only_the_suites_that_ran() -> None:
    order = ["cold", "scaling", "quality"]
    first = merge(None, {"cold": "## Cold\nold cold\n", "quality": "## Q\nold q\n"}, order)
    second = merge(first, {"quality": "## Q\nnew q\n", "scaling": "## S\ns\n"}, order)
    assert blocks(second) == {
        "cold": "## Cold\nold cold\n",
        "scaling": "## S\ns\n",
        "quality": "## Q\nnew q\n",
    }
    assert list(blocks(second)) == order  # in the table's order, whatever ran first
    assert second.startswith(HEADER) and second.count(HEADER) == 1
    # A block of a suite no longer registered is kept, at the end.
    third = merge(second, {"cold": "## Cold\n"}, ["cold", "quality"])
    assert list(blocks(third)) == ["cold", "quality", "scaling"]
    # A file from before the blocks keeps nothing of its old text.
    assert "stale" not in merge("# old\nstale table\n", {"cold": "## Cold\n"}, order)


# -- identifiers ------------------------------------------------------------------------------


def test_paths_found_and_look_alikes_refused() -> None:
    text = (
        "edit /testbed/django/db/models/query.py and ./setup.cfg then ~/notes/todo.txt, "
        "see django/forms.py. Not paths: </warning> https://example.com/a/b and/or 3/4."
    )
    assert identifiers.paths(text) == {
        "/testbed/django/db/models/query.py",
        "setup.cfg",
        "~/notes/todo.txt",
        "django/forms.py",
    }


def test_functions_and_errors() -> None:
    text = (
        "def _fetch_all(self):\n    self.render_page(x)\n"
        '  File "/x/y.py", line 3, in handle\n'
        "django.core.exceptions.ValidationError: bad\nraise KeyError('k')\n"
        "a function that helps; Error alone; MyErrorHandler; print(x); Widget(x)"
    )
    assert identifiers.functions(text) == {"_fetch_all", "render_page", "handle"}
    assert identifiers.errors(text) == {"ValidationError", "KeyError"}


def test_call_paths_decode_json_escapes() -> None:
    arguments = json.dumps({"command": 'cat "src/app/main.py"\nls lib/util/io.py'})
    assert identifiers.call_paths(arguments) == {"src/app/main.py", "lib/util/io.py"}
    assert identifiers.call_paths("not json: a/b/c.py") == {"a/b/c.py"}


def test_vocabulary_keeps_dotted_parts_and_path_tails() -> None:
    vocab = identifiers.vocabulary("called self._fetch_all() on /testbed/django/forms.py.")
    assert {"_fetch_all", "/testbed/django/forms.py", "django/forms.py", "forms.py"} <= vocab
    assert "fetch_all" not in vocab and "testbed" not in vocab


# -- quality metrics ------------------------------------------------------------------------


def _note(text: str, *replaced: Message) -> Message:
    return mark(Message("user", text), strategy="test", kind="note", replaces=replaced)


def test_original_task_skips_synthetic_and_notes() -> None:
    task = Message("user", "fix the bug in a/b/c.py")
    messages = [
        Message("system", "sys"),
        Message("user", "Please always provide EXACTLY ONE action", meta={"synthetic": True}),
        Message("user", "--- DEMONSTRATION ---", meta={"swe_agent": {"is_demo": True}}),
        _note("[3 earlier messages removed]"),
        task,
        Message("user", "and also this"),
    ]
    assert qm.original_task(messages) is task
    assert qm.original_task(messages[:4]) is None


def test_task_kept_verbatim_cut_or_lost() -> None:
    long_text = "H" * 100 + "middle " * 200 + "T" * 100
    task = Message("user", long_text)
    assert qm.task_kept(task, [Message("user", long_text)]) == "verbatim"
    cut = long_text[:150] + "\n[... 1,200 characters cut, recall r1 ...]\n" + long_text[-150:]
    assert qm.task_kept(task, [Message("user", cut)]) == "cut"
    assert qm.task_kept(task, [Message("user", long_text[:150])]) is None  # head only
    assert qm.task_kept(task, [Message("user", long_text[-150:] + long_text[:150])]) is None
    short = Message("user", "short task")
    assert qm.task_kept(short, [Message("user", "short task, reworded")]) is None


def test_lost_retention_and_notes() -> None:
    call = ToolCall("c1", "bash", json.dumps({"command": "cat pkg/mod/core.py"}))
    original = [
        Message("system", "sys"),
        Message("user", "task: look at pkg/mod/api.py"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "Traceback: ValueError in load_config(", tool_call_id="c1"),
        Message("assistant", "done, see pkg/mod/api.py"),
    ]
    note = _note("[dropped: pkg/mod/core.py]", *original[2:4])
    result = [original[0], original[1], note, original[4]]
    was_lost = qm.lost(original, result)
    assert was_lost == [False, False, True, True, False]
    ids = qm.per_message_identifiers(original)
    text = "\n".join(qm.message_text(m) for m in result)
    ret = qm.retention(ids, was_lost, text)
    assert ret.lost == {"paths": 1, "functions": 1, "errors": 1}
    assert ret.only_lost == {"paths": 1, "functions": 1, "errors": 1}
    assert ret.only_lost_kept == {"paths": 1, "functions": 0, "errors": 0}
    assert qm.dropped_call_paths(original, result) == (1, 1)
    assert qm.dropped_call_paths(original, result[:2]) == (1, 0)
    assert qm.new_notes(original, result) == [note]
    assert qm.new_notes([*original, note], result) == []  # a note already in the input


def test_prefix_and_system_tokens() -> None:
    a, b, c = Message("system", "s"), Message("user", "u"), Message("assistant", "x")

    def count(m: Message) -> int:
        return len(m.content) + 10

    assert qm.prefix_tokens([a, b, c], [a, b, Message("assistant", "y")], count) == 22
    assert qm.prefix_tokens([a, b], [a, Message("user", "u"), c], count) == 22  # equal, not same
    assert qm.prefix_tokens([b], [a, b], count) == 0
    assert qm.system_tokens([a, a, b], count) == 22


def test_totals_are_pooled_not_averaged() -> None:
    def row(name: str, lost: int, kept: int, task: str | None) -> dict[str, object]:
        kinds = dict.fromkeys(identifiers.KINDS, 0)
        return {
            "name": name,
            "format": "f",
            "ladder": "x",
            "target": 0.4,
            "kept": 1,
            "fits": True,
            "budget_used": 0.5,
            "task": task,
            "task_short": True,
            "system_over_half": False,
            "lost": {**kinds, "paths": lost},
            "lost_kept": {**kinds, "paths": kept},
            "only_lost": {**kinds, "paths": lost},
            "only_lost_kept": {**kinds, "paths": kept},
            "call_paths": 0,
            "call_paths_kept": 0,
            "summarizer_calls": 0,
            "note_tokens": [5, 7],
            "seconds": 0.0,
        }

    [t] = quality_totals.totals([row("a", 100, 90, "verbatim"), row("b", 2, 0, None)], ["x"])
    assert t["only_lost_share"]["paths"] == pytest.approx(90 / 102)  # a mean would say 45%
    assert math.isnan(t["only_lost_share"]["errors"])
    assert (t["task_kept"], t["task_lost"], t["notes"], t["note_max"]) == (1, 1, 4, 7)


# -- fits -------------------------------------------------------------------------------------


def test_fits_recover_slope_and_exponent() -> None:
    sizes = [1_000, 3_000, 10_000, 30_000]
    assert fit.linear(sizes, [0.002 + 1e-6 * n for n in sizes]) == pytest.approx((0.002, 1e-6))
    assert fit.exponent(sizes, [3e-9 * n**1.5 for n in sizes]) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        fit.ols([1, 1], [2, 3])


def test_bootstrap_interval_covers_the_truth_and_verdicts() -> None:
    rng = random.Random(7)
    runs = {n: [2e-6 * n * rng.uniform(0.9, 1.2) for _ in range(9)] for n in (1e3, 1e4, 1e5)}
    result = fit.scaling_fit(runs, resamples=300)
    lo, hi = result["exponent_interval"]
    assert lo <= 1.0 <= hi and hi - lo < 0.2
    b_lo, b_hi = result["b_us_interval"]
    assert b_lo <= result["b_us"] <= b_hi and b_lo > 1.5
    same = {n: [1e-6 * n] * 5 for n in (10, 100)}
    assert fit.bootstrap(same, fit.exponent, resamples=50) == pytest.approx((1.0, 1.0))
    assert fit.verdict((0.9, 1.05), 1.08) is True
    assert fit.verdict((1.1, 1.3), 1.08) is False
    assert fit.verdict((1.0, 1.3), 1.08) == "inconclusive"


# -- the quality suite on every real transcript -----------------------------------------------


@pytest.mark.transcripts
def test_quality_rows_over_every_real_transcript(transcripts_dir: Path) -> None:
    cases, unreadable = load_cases(transcripts_dir)
    assert cases and not unreadable
    assert {c.format for c in cases} >= {"claude-code", "mini-swe-agent", "swe-agent"}
    free = [ladder for ladder in quality.ladders() if ladder.name == "free"]
    for case in cases:
        rows = quality.run_case(case, free)
        assert [r["target"] for r in rows] == [*quality.TARGETS, "replay"]
        for row in rows[:-1]:
            assert "error" not in row, (case.name, row.get("error"))
            assert row["task"] in ("verbatim", "cut", None)  # every transcript has a task
            assert row["budget_used"] == pytest.approx(row["kept"] / row["target_tokens"])
            for kind in identifiers.KINDS:
                assert 0 <= row["only_lost_kept"][kind] <= row["only_lost"][kind]
                assert row["only_lost"][kind] <= row["lost"][kind]
                assert row["lost_kept"][kind] <= row["lost"][kind]
        replay = rows[-1]
        assert "error" not in replay, (case.name, replay.get("error"))
        assert replay["calls"] == len(quality.call_points(case.messages))
        assert 0 <= replay["prefix_after_first"] <= replay["sent_after_first"]


def test_peers_hand_back_the_original_messages() -> None:
    pytest.importorskip("langchain.agents.middleware")
    from compaction.tokens import TiktokenCounter

    messages = conversation(60, seed=4)
    counter = TiktokenCounter()
    peer = quality._Peer(messages, counter)
    target = counter.count_messages(messages) // 3
    for out in (peer.ours(peer.trim(list(peer.lc), target)), peer.ours(peer.clear(peer.lc, 1))):
        untouched = [m for m in out if any(m is o for o in messages)]
        assert untouched and len(untouched) < len(messages)
        assert all(any(m is o for o in messages) or m.role == "tool" for m in out)
