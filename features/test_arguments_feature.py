"""Steps for features/arguments.feature, stated against the public API."""

from __future__ import annotations

import json

import pytest
from pytest_bdd import given, parsers, scenarios, then, when

from compaction import CompactionPipeline, Compactor, Message, TiktokenCounter, ToolCall, validate
from compaction.messages import assistant, system, tool, user
from compaction.strategies.fit import Fit
from compaction.trigger import default_pipeline

scenarios("arguments.feature")

COUNTER = TiktokenCounter()
BODY = "\n".join(f"def f{i}(x):\n    return x * {i}  # a line of module code" for i in range(160))


def _calls(messages: list[Message] | tuple[Message, ...]) -> dict[str, ToolCall]:
    return {c.id: c for m in messages for c in m.tool_calls}


@pytest.fixture
def world():
    return {}


@given(
    "an agent that reads mod_1.py, mod_2.py, then mod_3.py and mod_4.py at once, "
    "then mod_5.py and mod_6.py"
)
def reader(world):
    world["turns"] = [
        ("mod_1.py",),
        ("mod_2.py",),
        ("mod_3.py", "mod_4.py"),
        ("mod_5.py",),
        ("mod_6.py",),
    ]


@when(parsers.parse("a compactor with a window of {window:d} sees each request"))
def each_request(world, window):
    compactor = Compactor(None, window=window, counter=COUNTER)
    msgs = [system("You are a careful coding agent."), user("Summarise mod_1.py .. mod_6.py.")]
    world["requests"] = []
    for n, paths in enumerate(world["turns"]):
        calls = [
            ToolCall(f"c{n}_{j}", "read_file", json.dumps({"path": p})) for j, p in enumerate(paths)
        ]
        msgs.append(assistant("", calls))
        msgs += [tool(c.id, f"# {c.arguments}\n" + BODY, name="read_file") for c in calls]
        world["requests"].append((list(msgs), list(compactor.before_call(msgs))))


@then("some requests were compacted")
def compacted(world):
    assert sum(sent != msgs for msgs, sent in world["requests"]) >= 2


@then("every tool call in every request is the call the agent made")
def calls_whole(world):
    for msgs, sent in world["requests"]:
        made = _calls(msgs)
        for call_id, call in _calls(sent).items():
            assert call == made[call_id]


@then(parsers.parse("every request is within {tokens:d} tokens"))
def requests_fit(world, tokens):
    for _, sent in world["requests"]:
        validate(sent)
        assert COUNTER.count_messages(sent) <= tokens


@given('a step that ran a 200-line script and printed "done", and a newest step reading a file')
def script_step(world):
    script = "python - <<'EOF'\n" + "print('generating fixtures')\n" * 200 + "EOF"
    world["messages"] = [
        system("s"),
        user("Regenerate the fixtures."),
        assistant("", [ToolCall("c1", "bash", json.dumps({"command": script}))]),
        tool("c1", "done", name="bash"),
        assistant("", [ToolCall("c2", "read_file", json.dumps({"path": "a.py"}))]),
        tool("c2", BODY, name="read_file"),
    ]


@when("the last resort aims at a third of its size with the whole size as the limit")
def third(world):
    total = COUNTER.count_messages(world["messages"])
    world["out"] = (
        CompactionPipeline()
        .run(Fit())
        .compact(world["messages"], target=total // 3, counter=COUNTER, limit=total)
        .messages
    )


@then("the script is sent whole")
def script_whole(world):
    assert world["out"][2] == world["messages"][2]


@given(parsers.parse("a newest step that writes a {lines:d}-line file to tests/fixtures.py"))
def writer(world, lines):
    content = "".join(f"line {i}: the generated fixture number {i}\n" for i in range(lines))
    world["content"] = content
    call = ToolCall(
        "w", "Write", json.dumps({"file_path": "tests/fixtures.py", "content": content})
    )
    world["messages"] = [system("s"), user("Write the fixtures."), assistant("", [call])]
    world["messages"].append(tool("w", "ok", name="Write"))


@when(parsers.parse("the last resort compacts it to {target:d} tokens"))
def last_resort(world, target):
    world["out"] = (
        CompactionPipeline()
        .run(Fit())
        .compact(world["messages"], target=target, counter=COUNTER)
        .messages
    )


@when(parsers.parse("the default ladder compacts it to {target:d} tokens"))
def default(world, target):
    world["out"] = (
        default_pipeline(counter=COUNTER).compact(world["messages"], target=target).messages
    )


@then(parsers.parse("the result is within {tokens:d} tokens"))
def within(world, tokens):
    validate(world["out"])
    assert COUNTER.count_messages(world["out"]) <= tokens


@then("the written path is kept whole")
def path_whole(world):
    args = json.loads(world["out"][2].tool_calls[0].arguments)
    assert args["file_path"] == "tests/fixtures.py"


@then("the written content keeps its head and a marker naming its recall id")
def content_head(world):
    content = json.loads(world["out"][2].tool_calls[0].arguments)["content"]
    assert content.startswith(world["content"][:40])
    assert "characters cut to fit the context window; recall id sha1:" in content


@given(parsers.parse("a {tokens:d}-token system prompt and a newest step reading three long files"))
def near_full(world, tokens):
    prompt = " ".join(f"rule {i}: keep the workspace tidy;" for i in range(400))
    while COUNTER.count_text(prompt) > tokens:
        prompt = prompt[:-10]
    calls = [ToolCall(f"c{i}", "read_file", json.dumps({"path": f"src/m{i}.py"})) for i in range(3)]
    world["messages"] = [
        system(prompt),
        user("Read the three modules and tell me what they do."),
        assistant("", calls),
        *[tool(c.id, "\n".join(f"line {j} of {c.id}" for j in range(400))) for c in calls],
    ]


@then("the system prompt is kept verbatim")
def system_whole(world):
    assert world["out"][0] == world["messages"][0]


@then("each newest output still names its recall id")
def markers(world):
    for out in world["out"][3:]:
        assert out.role == "tool" and "recall id sha1:" in out.content
