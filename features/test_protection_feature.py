"""Steps for features/protection.feature (issue 12), stated against the public API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import ApproximateCounter, CompactionPipeline, Message, ToolCall, validate
from compaction.formats import load
from compaction.memory.transcript import is_note, message_ref, parse, provenance
from compaction.messages import assistant, system, tool, user
from compaction.sessions import SessionStore
from compaction.strategies.sliding_window import SlidingWindow
from compaction.strategies.summary import Summary
from compaction.strategies.tool_results import ToolResults
from compaction.trigger import default_pipeline

scenarios("protection.feature")

COUNTER = ApproximateCounter()
ERRORS = (
    "ValueError",
    "KeyError",
    "TypeError",
    "IndexError",
    "OSError",
    "RuntimeError",
    "ImportError",
    "NameError",
)


def _step(n: int, output: str) -> list[Message]:
    call = ToolCall(f"c{n}", "bash", {"command": f"python -m pytest src/mod{n}.py"})
    return [assistant(f"Checking module {n}.", [call]), tool(call.id, output, name="bash")]


@pytest.fixture
def world():
    return {}


@given("an agent run with 8 old steps and a newest request with 2 steps")
def agent_run(world):
    msgs = [system("You are a coding agent."), user("Fix the failing tests in src/.")]
    for n in range(8):
        error = ERRORS[n]
        msgs += _step(n, f"Traceback ...\n{error}: bad input\n" + "output line\n" * 60)
    msgs.append(user("Now also update the changelog."))
    for n in (8, 9):
        msgs += _step(n, "ok\n" * 20)
    world["messages"] = msgs


def _output(world, k: int) -> int:
    return next(i for i, m in enumerate(world["messages"]) if m.tool_call_id == f"c{k}")


@given(parsers.parse("the output of step {k:d} is pinned"))
def pin(world, k):
    i = _output(world, k)
    world["messages"][i] = world["messages"][i].replace(meta={"pinned": True})
    world["pinned"] = world["messages"][i]


@given(parsers.parse("an older request after step {k:d}"))
def older_request(world, k):
    i = _output(world, k) + 1
    world["older"] = user("Also keep the public API stable.")
    world["messages"].insert(i, world["older"])


@given(parsers.parse("the newest tool output is {n:d} characters"))
def big_output(world, n):
    i = _output(world, 9)
    world["messages"][i] = world["messages"][i].replace(content="HEAD " + "x" * n + " TAIL")


@given("a mini-swe-agent trajectory whose newest user message is a format error")
def mini_trajectory(world, tmp_path: Path):
    traj = {
        "trajectory_format": "mini-swe-agent-1",
        "info": {"mini_version": "1.15.0"},
        "messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "<pr_description>Fix the parser.</pr_description>"},
            {"role": "assistant", "content": "Two actions:\n```bash\nls\n```\n```bash\npwd\n```"},
            {
                "role": "user",
                "content": "Please always provide EXACTLY ONE action in triple backticks, "
                "found 2 actions.",
            },
        ],
    }
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(traj))
    world["path"] = path


@given("the run is stored in a session and its old tool outputs cleared")
def stored(world, tmp_path: Path):
    session = SessionStore(tmp_path).open("run")
    session.add(world["messages"])
    world["session"] = session
    stored_msgs = session.messages
    world["stored"] = stored_msgs
    target = COUNTER.count_messages(stored_msgs) // 2
    world["messages"] = list(ToolResults().apply(stored_msgs, target, counter=COUNTER))


# -- when ---------------------------------------------------------------------------------------


@when("it is read")
def read(world):
    world["loaded"] = load(world["path"]).messages


def _compact(world, pipeline, target: int) -> None:
    world["target"] = target
    world["result"] = pipeline.compact(world["messages"], target=target)


def _free() -> CompactionPipeline:
    return CompactionPipeline(counter=COUNTER).use(ToolResults()).use(SlidingWindow())


def _share(world, percent: int) -> int:
    return COUNTER.count_messages(world["messages"]) * percent // 100


@when(parsers.parse("the default ladder compacts it to {percent:d}% of its size"))
def default_share(world, percent):
    _compact(world, default_pipeline(counter=COUNTER), _share(world, percent))


@when(parsers.parse("the default ladder compacts it to {n:d} tokens"))
def default_tokens(world, n):
    _compact(world, default_pipeline(counter=COUNTER), n)


@when(parsers.parse("the strict-floor ladder compacts it to {n:d} tokens"))
def strict_tokens(world, n):
    _compact(world, default_pipeline(counter=COUNTER, strict_floor=True), n)


@when(parsers.parse("the free ladder compacts it to {percent:d}% of its size"))
def free_share(world, percent):
    _compact(world, _free(), _share(world, percent))


@when(parsers.parse("the free ladder compacts the result to {percent:d}% of the original size"))
def free_again(world, percent):
    target = _share(world, percent)
    world["target"] = target
    world["result"] = _free().compact(world["result"].messages, target=target)


@when(parsers.parse("tool results alone compact it to {percent:d}% of its size"))
def tool_results_only(world, percent):
    ladder = CompactionPipeline(counter=COUNTER).use(ToolResults())
    _compact(world, ladder, _share(world, percent))


@when("a summary with the session's recall compacts it")
def summary_with_recall(world):
    seen: list[str] = []

    def summarizer(transcript: str, instructions: str) -> str:
        seen.append(transcript)
        return "## Objective\nFix the tests."

    world["seen"] = seen
    strategy = Summary(summarizer, recall=world["session"].recall)
    _compact(world, CompactionPipeline(counter=COUNTER).run(strategy), _share(world, 30))


@when(parsers.parse("a ladder with a window of {n:d} messages compacts it to twice its size"))
def window_ladder(world, n):
    ladder = CompactionPipeline(counter=COUNTER).use(SlidingWindow(window_size=n))
    _compact(world, ladder, 2 * COUNTER.count_messages(world["messages"]))


# -- then ---------------------------------------------------------------------------------------


@then("the format error is marked synthetic")
def marked(world):
    assert world["loaded"][-1].meta.get("synthetic") is True


@then("the task is the PR description")
def task_is_pr(world):
    msgs = world["loaded"]
    t = parse(msgs)
    assert msgs[t.groups[t.task].start].content.startswith("<pr_description>")
    assert t.anchor == t.task


@then("the result fits the target")
def fits(world):
    assert world["result"].fits
    validate(world["result"].messages)


@then("the result is over the target")
def over(world):
    assert not world["result"].fits


@then("the original task is kept verbatim")
def task_kept(world):
    assert world["messages"][1] in world["result"].messages


@then("the newest request is kept verbatim")
def newest_kept(world):
    newest = next(m for m in reversed(world["messages"]) if m.role == "user")
    assert newest in world["result"].messages


@then(parsers.parse("the output of step {k:d} is kept verbatim"))
def output_kept(world, k):
    assert world["messages"][_output(world, k)] in world["result"].messages


@then(parsers.parse("the output of step {k:d} is gone"))
def output_gone(world, k):
    gone = world["messages"][_output(world, k)]
    assert not any(m.tool_call_id == gone.tool_call_id for m in world["result"].messages)


@then("the older request is kept verbatim")
def older_kept(world):
    assert world["older"] in world["result"].messages


@then("the newest tool output keeps its head and tail around a cut naming its recall id")
def newest_cut(world):
    original = world["messages"][_output(world, 9)]
    (cut,) = [m for m in world["result"].messages if m.tool_call_id == "c9"]
    assert cut.content.startswith("HEAD") and cut.content.endswith("TAIL")
    assert f"recall id {message_ref(original)}" in cut.content
    assert provenance(cut)["kind"] == "truncated"


@then("the newest tool output is kept verbatim")
def newest_verbatim(world):
    assert world["messages"][_output(world, 9)] in world["result"].messages


@then("one note stands where the first dropped message was")
def note_in_place(world):
    out = world["result"].messages
    (where,) = [i for i, m in enumerate(out) if is_note(m)]
    world["note"] = out[where]
    assert out[:where] == tuple(world["messages"][:where])


@then(parsers.parse('the note names "{path}", "{error}" and the recall id of a dropped message'))
def note_names(world, path, error):
    note = world["note"]
    assert path in note.content and error in note.content
    assert any(ref in note.content for ref in provenance(note)["replaces"])


@then("every cleared output names its recall id and says the call already ran")
def cleared(world):
    out = world["result"].messages
    placeholders = [
        (old, new)
        for old, new in zip(world["messages"], out, strict=True)
        if (provenance(new) or {}).get("kind") == "placeholder"
    ]
    assert placeholders
    for old, new in placeholders:
        assert f"recall id {message_ref(old)}" in new.content
        assert "already ran" in new.content and "again" not in new.content


@then(parsers.parse("there is exactly {n:d} note"))
def n_notes(world, n):
    notes = [m for m in world["result"].messages if is_note(m)]
    assert len(notes) == n
    world["note"] = notes[0]


@then(parsers.parse('the note names "{text}"'))
def note_names_text(world, text):
    assert text in world["note"].content


@then(parsers.parse("the summariser was shown the original output of step {k:d}"))
def shown_original(world, k):
    original = next(m for m in world["stored"] if m.tool_call_id == f"c{k}")
    assert world["seen"] and original.content[:40] in world["seen"][0]


@then(parsers.parse("the result keeps at least {percent:d}% of the target"))
def budget_use(world, percent):
    assert world["result"].after >= world["target"] * percent / 100


@then("the conversation is unchanged")
def unchanged(world):
    result = world["result"]
    assert result.messages == tuple(world["messages"]) and not result.applied
