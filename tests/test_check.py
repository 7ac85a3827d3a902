"""``compaction.check``: the measuring instruments a user runs on their own logs.

The meter is fed requests by hand (strings counted by length, so every figure can be worked
out on paper) and a real replay through our Compactor; the log reader gets real files,
links and directories in a temporary folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compaction import Compactor, Message, ToolCall, default_pipeline
from compaction.check import (
    RequestMeter,
    UnreadableLog,
    call_points,
    log_facts,
    original_task,
    read_log,
    recovered,
    run_text,
    task_kept,
)
from compaction.pricing.cost import CacheMeter
from compaction.pricing.prices import price_for
from compaction.replay import replay
from compaction.tokens import TiktokenCounter


def test_the_meter_measures_size_prefix_window_rewrites_and_task() -> None:
    meter: RequestMeter[str] = RequestMeter(len, window=10)
    first = meter.measure(["abc", "de"], task=True)
    grown = meter.measure(["abc", "de", "fgh"], task=True)
    cut = meter.measure(["abc", "xyzxyzxyz"], task=False)
    assert (first.tokens, first.prefix, first.over, first.rewrote) == (5, 0, False, False)
    assert (grown.tokens, grown.prefix, grown.over, grown.rewrote) == (8, 5, False, False)
    assert (cut.tokens, cut.prefix, cut.over, cut.rewrote) == (12, 3, True, True)
    t = meter.totals
    assert (t.calls, t.tokens_sent, t.prefix_tokens, t.over_window) == (3, 25, 8, 1)
    assert (t.without_task, t.rewrites, t.cost) == (1, 1, 0.0)


@given(st.lists(st.lists(st.text(max_size=5), max_size=6), max_size=8))
def test_the_prefix_is_never_more_than_either_request(requests: list[list[str]]) -> None:
    meter: RequestMeter[str] = RequestMeter(len, window=20)
    previous = 0
    for request in requests:
        sent = meter.measure(request)
        assert 0 <= sent.prefix <= min(sent.tokens, previous)
        previous = sent.tokens
    assert meter.totals.calls == len(requests)
    assert meter.totals.tokens_sent == sum(len("".join(r)) for r in requests)


def test_a_priced_meter_charges_what_the_cache_meter_charges() -> None:
    price = price_for("claude-sonnet-4-5")
    ttl = price.ttl[0]
    meter: RequestMeter[str] = RequestMeter(len, 10_000, meter=CacheMeter(price, ttl))
    by_hand = CacheMeter(price, ttl)
    a, b = "x" * 3000, "y" * 2000
    assert meter.measure([a], at=0.0, output=10).cost == by_hand.call(0.0, 3000, 0, 10).cost
    assert meter.measure([a, b], at=5.0, output=10).cost == by_hand.call(5.0, 5000, 3000, 10).cost
    assert meter.totals.cost > 0


def _run() -> list[Message]:
    messages = [Message("system", "be brief"), Message("user", "Fix the crash in pkg/app.py")]
    for i in range(6):
        call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"cat pkg/f{i}.py"}))
        messages.append(Message("assistant", "", tool_calls=(call,)))
        messages.append(Message("tool", f"contents {i} " * 200, tool_call_id=f"c{i}"))
    messages.append(Message("assistant", "done"))
    return messages


def test_call_points_are_where_replay_calls_the_model() -> None:
    messages = _run()
    counter = TiktokenCounter()
    compactor = Compactor(default_pipeline(counter=counter), 100_000, counter=counter)
    assert call_points(messages) == [r.index for r in replay(messages, compactor)]
    doubled = [*messages, Message("assistant", "and another block")]
    assert call_points(doubled) == call_points(messages)


def test_the_task_is_the_first_person_written_user_message_and_survives_a_cut() -> None:
    synthetic = Message("user", "format error", meta={"synthetic": True})
    task = Message("user", "a" * 100 + "MIDDLE" + "z" * 100)
    messages = [Message("system", "s"), synthetic, task]
    assert original_task(messages) is task
    assert task_kept(task, [Message("user", task.content)]) == "verbatim"
    cut = Message("user", "a" * 100 + " [… cut …] " + "z" * 100)
    assert task_kept(task, [cut]) == "cut"
    assert task_kept(task, [Message("user", "a" * 100)]) is None
    assert original_task([synthetic]) is None


def test_a_fact_counts_only_in_what_the_model_reads() -> None:
    messages = [
        Message("system", "the harness mentions #1234"),
        Message("user", "Fix pkg/app.py, see #1234"),
    ]
    assert "#1234" in run_text(messages) and "harness" not in run_text(messages)
    hidden = Message("user", "x", meta={"note": "pkg/app.py #1234"})
    called = Message(
        "assistant", "", tool_calls=(ToolCall("c", "bash", json.dumps({"p": "pkg/app.py"})),)
    )
    assert run_text([hidden]) == "x"
    assert "pkg/app.py" in run_text([called])


def test_log_facts_splits_what_the_run_shows_and_recovered_looks_it_up(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    task = "Fix the crash in pkg/app.py reported in #1234"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "you are an agent"},
                    {"role": "user", "content": task},
                    {"role": "assistant", "content": "```bash\nsed -i 's/a/b/' pkg/app.py\n```"},
                    {"role": "user", "content": "done"},
                ]
            }
        )
    )
    messages = [
        Message("system", "you are an agent"),
        Message("user", task),
        Message("assistant", "```bash\nsed -i 's/a/b/' pkg/app.py\n```"),
    ]
    found = log_facts(path, messages)
    assert found.format == "mini-swe-agent"
    answers = {(f.kind, f.answer) for f in found.asked}
    assert ("task id", "#1234") in answers and ("edited file", "pkg/app.py") in answers
    assert all(recovered(found.asked, messages))
    assert not any(recovered(found.asked, [messages[0]]))


@pytest.mark.parametrize("kind", ["link", "directory", "fifo"])
def test_the_log_reader_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    real = tmp_path / "real.traj.json"
    real.write_text(json.dumps({"messages": [{"role": "user", "content": "task"}]}))
    target = tmp_path / f"{kind}.traj.json"
    if kind == "link":
        target.symlink_to(real)
    elif kind == "directory":
        target.mkdir()
    else:
        os.mkfifo(target)
    with pytest.raises(UnreadableLog, match=f"{target.name}: not a regular file"):
        read_log(target)
    assert read_log(real).task == "task"
