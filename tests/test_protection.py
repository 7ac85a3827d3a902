"""Issue 12's rules on small conversations: what is protected, the last resort, the traces.

The real transcripts are in test_protection_transcripts.py; these pin each rule down.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import CompactionPipeline, Message, ToolCall, validate
from compaction.formats import load
from compaction.memory.trace import MAX_NOTE_CHARS, facts_of, note_text
from compaction.memory.transcript import is_note, message_ref, parse, provenance
from compaction.messages import assistant, system, tool, user
from compaction.registry import registry
from compaction.sessions import SessionStore
from compaction.strategies.fit import Fit
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.summarizers import ExtractiveSummarizer
from compaction.tokens import ApproximateCounter
from compaction.trigger import Compactor, default_pipeline
from tests.conversations import conversations

COUNTER = ApproximateCounter()


def step(n: int, output: str, command: str | None = None) -> list[Message]:
    call = ToolCall(f"c{n}", "bash", {"command": command or f"cat src/m{n}.py"})
    return [assistant(f"step {n}", [call]), tool(call.id, output, name="bash")]


# -- the task anchor --------------------------------------------------------------------------


def test_the_task_is_the_first_request_a_person_wrote_and_harness_text_is_never_it():
    msgs = [
        system("s"),
        user("fix the parser"),
        assistant("```bash\nls\n```\n```bash\npwd\n```"),
        user("Please always provide EXACTLY ONE action", meta={"synthetic": True}),
        user("and keep the tests green"),
    ]
    t = parse(msgs)
    assert msgs[t.groups[t.task].start].content == "fix the parser"
    assert msgs[t.groups[t.anchor].start].content == "and keep the tests green"
    assert t.protected == {t.task, t.anchor}


def test_the_mini_swe_agent_reader_marks_format_errors_and_timeouts_from_the_config(tmp_path):
    config = {
        "agent": {
            "format_error_template": "FORMAT PROBLEM, found {{actions|length}} actions.",
            "timeout_template": "The last command <command>{{action['action']}}</command> timed",
        }
    }
    traj = {
        "trajectory_format": "mini-swe-agent-1",
        "info": {"config": config, "mini_version": "1.15.0"},
        "messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "<pr_description>fix it</pr_description>"},
            {"role": "assistant", "content": "no action here"},
            {"role": "user", "content": "FORMAT PROBLEM, found 0 actions."},
            {"role": "assistant", "content": "Thought.\n```bash\nsleep 999\n```"},
            {"role": "user", "content": "The last command <command>sleep 999</command> timed out"},
            {"role": "assistant", "content": "another no action"},
            # the default template is recognised too, even when the config has its own
            {
                "role": "user",
                "content": "Please always provide EXACTLY ONE action in triple backticks, "
                "found 2 actions.",
            },
        ],
    }
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(traj))
    msgs = load(path).messages
    synthetic = [m.content[:14] for m in msgs if m.meta.get("synthetic") is True]
    assert synthetic == ["FORMAT PROBLEM", "The last comma", "Please always "]
    t = parse(msgs)
    assert msgs[t.groups[t.task].start].content.startswith("<pr_description>")
    assert t.anchor == t.task  # no format error ever becomes the request


def test_the_swe_agent_reader_marks_demonstrations_and_harness_replies(tmp_path):
    history = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Here is a demonstration ...", "is_demo": True},
        {"role": "user", "content": "We're currently solving the following issue: fix it"},
        {"role": "assistant", "content": "no command"},
        {"role": "user", "content": "Your output was not formatted correctly. You must ..."},
    ]
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"history": history}))
    msgs = load(path).messages
    flags = [m.meta.get("synthetic") is True for m in msgs if m.role == "user"]
    assert flags == [True, False, True]
    t = parse(msgs)
    assert msgs[t.groups[t.task].start].content.startswith("We're currently solving")
    assert t.anchor == t.task


# -- the last resort --------------------------------------------------------------------------


def test_fit_cuts_the_oversized_newest_tool_output_first_then_the_task():
    big_task = user("TASK-HEAD " + "t" * 4000 + " TASK-TAIL")
    msgs = [system("be brief"), big_task, *step(0, "OUT-HEAD " + "o" * 8000 + " OUT-TAIL")]
    target = 1500
    result = (
        CompactionPipeline(counter=COUNTER)
        .use(SlidingWindow())
        .run(Fit())
        .compact(msgs, target=target)
    )
    out = result.messages
    assert result.fits and [a.strategy for a in result.applied] == ["fit"]
    validate(out)
    assert out[0] == msgs[0]  # the system prompt is never cut while it alone fits
    cut_output = out[3]
    record = provenance(cut_output)
    assert record["kind"] == "truncated" and record["replaces"] == (message_ref(msgs[3]),)
    assert cut_output.content.startswith("OUT-HEAD") and cut_output.content.endswith("OUT-TAIL")
    assert f"recall id {message_ref(msgs[3])}" in cut_output.content
    assert record["original_chars"] == len(msgs[3].content)
    # the task is over 30% of the target: cut too, but never below its share
    task = out[1]
    assert task.content.startswith("TASK-HEAD") and task.content.endswith("TASK-TAIL")
    assert COUNTER.count(task) >= int(0.3 * target) - 5
    assert parse(out).task == parse(msgs).task  # a cut task is still the task


def test_fit_leaves_a_task_within_30_percent_of_the_target_verbatim():
    msgs = [system("s"), user("fix it " * 20), *step(0, "o" * 20000)]
    out = Fit().apply(msgs, 800, counter=COUNTER)
    assert out[1] == msgs[1]
    assert COUNTER.count_messages(out) <= 800


def test_fit_cuts_the_system_prompt_only_when_it_alone_is_over():
    msgs = [system("rule " * 2000), user("hi"), assistant("hello")]
    out = Fit().apply(msgs, 300, counter=COUNTER)
    assert COUNTER.count_messages(out) <= 300
    # The task stays whole; what is not protected (the reply) may give before the system does.
    assert out[1] == msgs[1] and provenance(out[0])["kind"] == "truncated"


def test_fit_keeps_tool_call_arguments_valid_json_when_it_cuts_them():
    call = ToolCall("w", "Write", {"file_path": "a.py", "content": "x" * 20000})
    msgs = [user("write it"), assistant("", [call]), tool("w", "ok")]
    out = Fit().apply(msgs, 500, counter=COUNTER)
    args = json.loads(out[1].tool_calls[0].arguments)
    assert args["file_path"] == "a.py" and len(args["content"]) < 20000
    assert COUNTER.count_messages(out) <= 500
    validate(out)


def test_the_strict_floor_keeps_an_over_target_result_uncut():
    msgs = [system("s"), user("task " + "t" * 8000), assistant("ok")]
    strict = default_pipeline(counter=COUNTER, strict_floor=True)
    assert [s.name for s in strict.strategies] == [
        "dedupe",
        "tool_results",
        "sliding_window",
        "summary",
    ]
    result = strict.compact(msgs, target=500)
    assert not result.fits and result.messages == tuple(msgs)
    fitted = default_pipeline(counter=COUNTER).compact(msgs, target=500)
    assert fitted.fits and fitted.applied[-1].strategy == "fit"


def test_the_default_ladders_end_with_the_last_resort():
    from compaction._cli.ladder import DEFAULT_LADDER

    assert DEFAULT_LADDER[-1] == "fit" and registry.get("fit") is Fit
    names = [s.name for s in default_pipeline().strategies]
    assert names == ["dedupe", "tool_results", "sliding_window", "summary", "fit"]
    compactor = Compactor(None, 10_000)
    assert [s.name for s in compactor.pipeline.strategies] == names
    strict = Compactor(None, 10_000, strict_floor=True)
    assert [s.name for s in strict.pipeline.strategies][-1] == "summary"


def test_a_compactor_never_sends_a_request_over_the_window():
    compactor = Compactor(None, 2000, counter=COUNTER)
    msgs = [system("s"), user("task " + "t" * 3000)]
    for n in range(12):
        request = compactor.before_call(msgs)
        assert COUNTER.count_messages(request) <= 2000
        msgs += step(n, "out " * (300 + 200 * n))
    assert any(m.content.startswith("task") for m in compactor.before_call(msgs))


def test_a_single_tool_output_bigger_than_the_window_is_cut_to_fit():
    counter = ApproximateCounter()
    compactor = Compactor(None, 2000, counter=counter)
    call = ToolCall("x", "bash", {"command": "cat big.log"})
    msgs = [system("s"), user("fix it"), assistant("", [call]), tool("x", "line\n" * 50_000)]
    request = compactor.before_call(msgs)
    # The newest output is protected: cut only down to the window (the hard limit), not to
    # compact_to, and it keeps its head and tail.
    assert compactor.target < counter.count_messages(request) <= compactor.window
    assert request[:3] == tuple(msgs[:3])  # the task and the call, verbatim
    content = request[3].content
    assert content.startswith("line\n") and "characters cut" in content
    assert content.endswith("line\n")
    validate(request)


# -- traces -----------------------------------------------------------------------------------


def test_a_note_names_files_commands_errors_and_recall_ids_within_its_bound():
    dropped = [
        assistant("", [ToolCall("a", "Read", {"file_path": "/src/app/models.py"})]),
        tool("a", "Traceback...\nModuleNotFoundError: No module named 'x'"),
        assistant("", [ToolCall("b", "bash", {"command": "pytest tests/test_models.py -q"})]),
        tool("b", "E   ValueError: bad value"),
        assistant("", [ToolCall("c", "Edit", {"file_path": "/src/app/views.py"})]),
        tool("c", "ok"),
    ]
    facts = facts_of(dropped)
    text = note_text(facts, sum(len(m.content) for m in dropped) * 100)
    for name in (
        "ModuleNotFoundError",
        "ValueError",
        "/src/app/models.py",
        "/src/app/views.py",
        "tests/test_models.py",
        "`pytest tests/test_models.py -q`",
        message_ref(dropped[0]),
        message_ref(dropped[-1]),
    ):
        assert name in text
    # the recall ids as one range, never one hash per message; the full list is in meta
    assert message_ref(dropped[2]) not in text and "(6, all listed in meta)" in text
    assert text.startswith("[6 earlier messages (3 tool steps) removed")
    many = facts_of(
        [
            assistant("", [ToolCall(f"r{i}", "Read", {"file_path": f"/p/{'d' * 40}/f{i}.py"})])
            for i in range(500)
        ]
    )
    bounded = note_text(many, 10**9)
    assert len(bounded) <= MAX_NOTE_CHARS and "more)" in bounded


def test_consecutive_notes_merge_into_one_running_note():
    msgs = [system("s"), user("the task")]
    for n in range(8):
        msgs += step(n, f"ValueError{n} " * 2 + "o" * 400, command=f"run{n} src/f{n}.py")
    msgs += [user("now this"), *step(8, "o" * 40), *step(9, "o" * 40)]
    ladder = CompactionPipeline(counter=COUNTER).use(SlidingWindow())
    total = COUNTER.count_messages(msgs)
    first = ladder.compact(msgs, target=total - 300).messages
    second = ladder.compact(first, target=total - 700).messages
    notes = [m for m in second if is_note(m)]
    assert len(notes) == 1
    # the running note still names what the first one named
    assert "src/f0.py" in notes[0].content and "run0" in notes[0].content
    assert provenance(notes[0])["facts"]["steps"] == sum(
        1 for m in msgs if m.tool_calls and m not in second
    )


def test_the_summary_reads_the_originals_a_recall_source_has(tmp_path: Path):
    session = SessionStore(tmp_path).open("agent")
    raw = [system("s"), user("the task")]
    for n in range(4):
        raw += step(n, f"SECRET-{n} " + "o" * 800)
    raw += [user("now this"), *step(9, "o" * 40)]
    session.add(raw)
    stored = session.messages
    cleared = ToolResults(keep_steps=1).apply(stored, 700, counter=COUNTER)
    assert not any("SECRET-0" in m.content for m in cleared)  # placeholders now
    seen: list[str] = []

    def summarizer(transcript: str, instructions: str) -> str:
        seen.append(transcript)
        return "## Objective\nshort"

    Summary(summarizer, recall=session.recall).apply(cleared, 200, counter=COUNTER)
    assert seen and "SECRET-0" in seen[0]
    seen.clear()
    Summary(summarizer).apply(cleared, 200, counter=COUNTER)
    assert seen and "SECRET-0" not in seen[0]


# -- properties -------------------------------------------------------------------------------


LADDERS = st.lists(
    st.sampled_from(["tool_results", "sliding_window", "summary", "fit"]), min_size=1, max_size=4
)


@settings(max_examples=150, deadline=None)
@given(conversations(), st.floats(0.0, 1.0), LADDERS, st.data())
def test_the_task_and_pinned_messages_survive_any_ladder(messages, fraction, keys, data):
    if messages:
        pin = data.draw(st.integers(0, len(messages) - 1))
        messages = list(messages)
        messages[pin] = messages[pin].replace(meta={**messages[pin].meta, "pinned": True})
    target = max(1, int(COUNTER.count_messages(messages) * fraction))
    pipeline = CompactionPipeline(counter=COUNTER)
    for key in keys:
        pipeline.use(key if key != "summary" else Summary(ExtractiveSummarizer()))
    out = pipeline.compact(messages, target=target).messages
    validate(out)
    t = parse(messages)
    refs_in_out = {message_ref(m) for m in out} | {
        r for m in out for r in (provenance(m) or {}).get("replaces", ()) if not is_note(m)
    }
    for index in t.protected:
        original = messages[t.groups[index].start]
        # verbatim, or (only by the last resort) the same message cut, never dropped
        assert original in out or message_ref(original) in refs_in_out
        if "fit" not in keys:
            assert original in out
    for original in messages:
        if original.meta.get("pinned") is True and "fit" not in keys:
            assert original in out


def test_registry_knows_fit():
    assert "fit" in registry
    assert isinstance(registry.create("fit", task_share=0.25), Fit)
    with pytest.raises(Exception, match="task_share"):
        registry.create("fit", task_share=2)
