"""TurnLoop end to end: a scripted model, tools, a shared context, config, compaction, and the
same loop against a real local OpenAI-compatible HTTP server through the openai client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from compaction.loop import (
    MISSING,
    ContextChange,
    LoopConfig,
    Tool,
    TurnLoop,
    chain,
)
from compaction.memory.transcript import provenance
from compaction.messages import Message, ToolCall, assistant, system, tool, user
from compaction.registry import ConfigError
from compaction.tokens import ApproximateCounter
from compaction.validate import InvalidConversationError, validate

from .model_server import ScriptedChatServer, text_reply, tool_call_reply


class Scripted:
    """A model callable answering from a script; each entry is a reply or a function of the
    request. Records every call (request, tools, options)."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[tuple[Message, ...], Any, dict[str, Any]]] = []

    def __call__(self, messages, tools=None, **options):
        self.calls.append((messages, tools, options))
        if len(self.calls) > len(self.replies):
            raise AssertionError(f"the model was called {len(self.calls)} times")
        reply = self.replies[len(self.calls) - 1]
        return reply(messages) if callable(reply) else reply


def ask(name: str, call_id: str = "c1", **arguments: Any) -> Message:
    return assistant("", [ToolCall(call_id, name, arguments)])


def add(a: int, b: int) -> int:
    """Add two integers.

    More text that is not part of the description.
    """
    return a + b


def set_stage(stage: str, context: dict) -> str:
    """Record the writing stage in the shared context."""
    previous = context.get("writing_stage")
    context["writing_stage"] = stage
    return f"stage {previous} -> {stage}"


# -- the loop with a scripted model ------------------------------------------------------------


def test_asks_for_a_tool_then_answers():
    model = Scripted(
        ask("add", a=2, b=3),
        lambda msgs: assistant(f"the sum is {msgs[-1].content}"),
    )
    loop = TurnLoop(model, [add])
    result = loop.run("what is 2 + 3?")
    assert result.stopped == "answer" and result.steps == 2
    assert result.reply.content == "the sum is 5"
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_result = result.messages[2]
    assert (tool_result.tool_call_id, tool_result.name, tool_result.content) == ("c1", "add", "5")
    validate(result.messages)
    # the tools travel as OpenAI schemas read from the signature
    (_, tools, _) = model.calls[0]
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        }
    ]
    # the second call saw the tool result; the requests are what the model got
    assert model.calls[1][0][-1] is tool_result
    assert result.requests == tuple(c[0] for c in model.calls)
    # the loop's own conversation continues in the next run
    assert loop.history == result.messages


def test_history_carries_over_runs():
    model = Scripted(assistant("one"), assistant("two"))
    loop = TurnLoop(model)
    loop.run("first")
    loop.run("second")
    assert [m.content for m in model.calls[1][0]] == ["first", "one", "second"]


def test_max_steps_stops_a_model_that_never_answers():
    model = Scripted(*(ask("add", f"c{i}", a=i, b=1) for i in range(3)))
    result = TurnLoop(model, [add], max_steps=3).run("loop forever")
    assert result.stopped == "max_steps" and result.steps == 3
    assert [m.content for m in result.messages if m.role == "tool"] == ["1", "2", "3"]
    validate(result.messages)  # every call answered even when stopped


def test_tool_errors_go_back_to_the_model():
    def explode(x: int) -> None:
        raise RuntimeError("disk full")

    model = Scripted(
        assistant(
            "",
            [
                ToolCall("a", "explode", {"x": 1}),
                ToolCall("b", "nope", {}),
                ToolCall("c", "add", "{not json"),
                ToolCall("d", "add", {"a": 1}),
                ToolCall("e", "add", "[1, 2]"),
            ],
        ),
        assistant("sorry"),
    )
    result = TurnLoop(model, [explode, add]).run("go")
    texts = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert "RuntimeError: disk full" in texts["a"]
    assert "no tool named 'nope'" in texts["b"] and "add" in texts["b"]
    assert "not valid JSON" in texts["c"]
    assert "TypeError" in texts["d"]
    assert "JSON object" in texts["e"]
    assert result.stopped == "answer"


def test_reply_shapes_are_read():
    openai_like = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "x", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}
                    ],
                }
            }
        ],
        "usage": {"prompt_tokens": 7},
    }
    model = Scripted(openai_like, "plain text")
    result = TurnLoop(model, [add]).run("hi")
    assert result.messages[1].tool_calls == (ToolCall("x", "add", '{"a": 1, "b": 1}'),)
    assert result.reply.content == "plain text"


def test_a_model_without_tools_or_options_parameters():
    seen = []

    def model(messages):
        seen.append(messages)
        return "ok"

    assert TurnLoop(model).run("hi").reply.content == "ok"
    with pytest.raises(TypeError, match="temperature"):
        TurnLoop(model, temperature=0.3)


def test_bad_prompt_and_history_are_refused():
    loop = TurnLoop(Scripted())
    with pytest.raises(TypeError, match="prompt"):
        loop.run(42)
    with pytest.raises(ValueError, match="user"):
        loop.run(assistant("x"))
    with pytest.raises(InvalidConversationError):
        loop.run("q", history=[user("a"), assistant("", [ToolCall("z", "add")])])
    with pytest.raises(TypeError, match=r"history\[0\]"):
        loop.run("q", history=[{"role": "user"}])


# -- context -----------------------------------------------------------------------------------


def test_tool_context_updates_are_captured_and_persist_across_runs():
    model = Scripted(
        ask("set_stage", stage="drafting"),
        assistant("now drafting"),
        ask("set_stage", stage="reviewing"),
        assistant("now reviewing"),
    )
    context = {"document_type": "research_paper"}
    loop = TurnLoop(model, [set_stage], context=context)
    first = loop.run("start drafting")
    assert first.context_changes == (
        ContextChange("writing_stage", MISSING, "drafting", "agent", "set_stage"),
    )
    assert context["writing_stage"] == "drafting"
    assert first.context == {"document_type": "research_paper", "writing_stage": "drafting"}
    second = loop.run("review it")
    assert second.messages[2].content == "stage drafting -> reviewing"
    assert second.context_changes[0].old == "drafting"
    assert context == {"document_type": "research_paper", "writing_stage": "reviewing"}


def test_a_tool_that_raises_leaves_the_context_as_it_was():
    def half(context: dict) -> None:
        context["a"] = 1
        raise ValueError("halfway")

    context = {"keep": True}
    model = Scripted(ask("half"), assistant("done"))
    result = TurnLoop(model, [half], context=context).run("go")
    assert context == {"keep": True}
    assert result.context_changes == ()


def test_removed_keys_are_recorded():
    def forget(key: str, context: dict) -> str:
        return str(context.pop(key))

    context = {"draft": "v1"}
    model = Scripted(ask("forget", key="draft"), assistant("ok"))
    result = TurnLoop(model, [forget], context=context).run("go")
    assert context == {}
    assert result.context_changes == (ContextChange("draft", "v1", MISSING, "agent", "forget"),)


def test_the_model_cannot_inject_the_context_argument():
    model = Scripted(ask("set_stage", stage="x", context={}), assistant("ok"))
    context: dict = {}
    result = TurnLoop(model, [set_stage], context=context).run("go")
    assert "context" in result.messages[2].content and context == {}


def test_overrides_are_recorded_in_the_context_and_sent():
    model = Scripted(assistant("a"), assistant("b"))
    loop = TurnLoop(model, temperature=0.8)
    assert loop.context == {"temperature": 0.8}
    assert loop.override_changes == (
        ContextChange("temperature", MISSING, 0.8, "agent", "override"),
    )
    loop.run("x")
    loop.run("y", temperature=0.1, top_p=0.5)  # per run: sent, not recorded
    assert model.calls[0][2] == {"temperature": 0.8}
    assert model.calls[1][2] == {"temperature": 0.1, "top_p": 0.5}
    assert loop.context == {"temperature": 0.8}


def test_chained_loops_share_the_context_and_keep_every_change():
    def classify(context: dict) -> str:
        context["topic"] = context["source"] + ":billing"
        return "classified"

    def draft(context: dict) -> str:
        context["writing_stage"] = "drafting"
        context["drafts"] = [*context.get("drafts", []), "d1"]
        return "drafted"

    def review(context: dict) -> str:
        context["writing_stage"] = "reviewing"
        context["drafts"] = [*context["drafts"], "d2"]
        return "reviewed"

    router = chain(
        TurnLoop(Scripted(ask("classify"), assistant("billing question")), [classify], name="a"),
        TurnLoop(Scripted(ask("draft"), assistant("draft ready")), [draft], name="b"),
        TurnLoop(
            Scripted(ask("review"), lambda m: assistant(m[0].content + " ok")), [review], name="c"
        ),
    )
    out = router.run("my invoice is wrong", metadata={"source": "email"})
    assert out.reply.content == "draft ready ok"  # each answer is the next prompt
    assert out.context == {
        "source": "email",
        "topic": "email:billing",
        "writing_stage": "reviewing",
        "drafts": ["d1", "d2"],
    }
    assert router.context == out.context
    assert [(c.agent, c.key, c.old, c.new) for c in out.context_changes] == [
        ("chain", "source", MISSING, "email"),
        ("a", "topic", MISSING, "email:billing"),
        ("b", "writing_stage", MISSING, "drafting"),
        ("b", "drafts", MISSING, ["d1"]),
        ("c", "writing_stage", "drafting", "reviewing"),
        ("c", "drafts", ["d1"], ["d1", "d2"]),
    ]


# -- history, truncation, config ---------------------------------------------------------------


def conversation(n: int) -> list[Message]:
    return [(user if i % 2 == 0 else assistant)(f"message {i}") for i in range(n)]


def test_history_limit_uses_the_newest_messages():
    model = Scripted(assistant("ok"))
    history = conversation(15)
    TurnLoop(model, history_limit=10).run("next", history=history)
    request = model.calls[0][0]
    assert request[:-1] == tuple(history[-10:])
    assert request[-1].content == "next"


def test_history_limit_never_splits_a_tool_pair():
    step = assistant("", [ToolCall("t", "add")])
    history = [user("q"), step, tool("t", "5"), assistant("five"), user("more")]
    model = Scripted(assistant("ok"))
    TurnLoop(model, history_limit=3).run("next", history=history)
    # the newest 3 would start at the tool result: its call is not there, so it goes too
    assert model.calls[0][0][:-1] == (history[3], history[4])
    validate(model.calls[0][0])


def test_history_system_messages_are_kept_and_the_system_prompt_comes_first():
    model = Scripted(assistant("ok"))
    history = [system("from history"), *conversation(6)]
    TurnLoop(model, history_limit=2, system="be brief").run("q", history=history)
    request = model.calls[0][0]
    assert [m.content for m in request] == [
        "be brief",
        "from history",
        "message 4",
        "message 5",
        "q",
    ]


def test_long_history_messages_are_truncated():
    model = Scripted(assistant("ok"))
    long = "x" * 600
    history = [user("q"), assistant(long)]
    TurnLoop(model, max_message_chars=500).run("next", history=history)
    sent = model.calls[0][0][1]
    assert len(sent.content) <= 500 and sent.content.startswith("x" * 400)
    record = provenance(sent)
    assert record is not None and record["kind"] == "truncated"
    assert record["original_chars"] == 600
    assert history[1].content == long  # the caller's history is untouched


def test_a_long_prompt_is_never_truncated():
    model = Scripted(assistant("ok"))
    prompt = "p" * 900
    TurnLoop(model, max_message_chars=500).run(prompt)
    assert model.calls[0][0][-1].content is prompt


def test_without_history_the_prompt_is_sent_unmodified():
    model = Scripted(assistant("ok"))
    prompt = "Write a haiku about compaction"
    TurnLoop(model, history_limit=10, max_message_chars=500).run(prompt, history=[])
    (request,) = [c[0] for c in model.calls]
    assert len(request) == 1 and request[0].role == "user" and request[0].content is prompt
    given = user("as a message")
    model2 = Scripted(assistant("ok"))
    TurnLoop(model2).run(given)
    assert model2.calls[0][0] == (given,) and model2.calls[0][0][0] is given


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_config_file_settings_and_override(tmp_path):
    path = write_config(
        tmp_path,
        """
[loop]
history_limit = 10
max_message_chars = 500
max_steps = 4
system = "You are a writer."
name = "writer"

[model]
temperature = 0.2
model = "small"

[compaction]
window = 4000
compact_at = 0.6
compact_to = 0.3
use = ["tool_results", { strategy = "sliding_window", keep_steps = 1 }]
""",
    )
    config = LoopConfig.from_toml(path)
    assert (config.history_limit, config.max_message_chars, config.max_steps) == (10, 500, 4)
    assert config.model_options == {"temperature": 0.2, "model": "small"}
    assert config.ladder == {
        "use": ["tool_results", {"strategy": "sliding_window", "keep_steps": 1}]
    }
    model = Scripted(assistant("ok"))
    loop = TurnLoop.from_config(path, model, temperature=0.8)
    assert loop.context["temperature"] == 0.8
    assert loop.compactor is not None and loop.compactor.window == 4000
    assert loop.compactor.compact_at == 0.6
    assert [s.name for s in loop.compactor.pipeline.strategies] == [
        "tool_results",
        "sliding_window",
    ]
    loop.run("hello")
    (request, _, options) = model.calls[0]
    assert options == {"temperature": 0.8, "model": "small"}
    assert request[0] == system("You are a writer.")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[loop]\nhistory_limt = 10\n", "history_limt"),
        ("[loops]\n", "loops"),
        ("[loop]\nmax_steps = 0\n", "max_steps"),
        ("[loop]\nhistory_limit = 'ten'\n", "history_limit"),
        ("[compaction]\nwindow = 100\nsize = 3\n", "size"),
        ("[loop\n", "not valid TOML"),
    ],
)
def test_config_errors_name_the_file_and_key(tmp_path, text, match):
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=match) as info:
        LoopConfig.from_toml(path)
    assert str(path) in str(info.value)


def test_a_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        LoopConfig.from_toml(tmp_path / "absent.toml")


# -- compaction inside the tool loop -----------------------------------------------------------


def test_compaction_runs_before_every_call_inside_the_tool_loop():
    pytest.importorskip("compaction.strategies.tool_results")
    pytest.importorskip("compaction.strategies.sliding_window")

    def read(path: str) -> str:
        return f"{path}: " + "lorem ipsum " * 120

    steps = 12
    model = Scripted(
        *(ask("read", f"c{i}", path=f"f{i}.py") for i in range(steps)), assistant("done")
    )
    counter = ApproximateCounter()
    loop = TurnLoop(model, [read], window=2000, counter=counter, max_steps=steps + 1)
    result = loop.run("read every file")
    assert result.stopped == "answer" and result.steps == steps + 1
    comp = loop.compactor
    assert comp is not None and comp.stats.compactions >= 1
    for request in result.requests:
        validate(request)
        assert counter.count_messages(request) + comp.tool_tokens <= comp.window
    # the loop's history keeps everything raw; only what was sent was compacted
    assert len(loop.history) == 2 + 2 * steps
    assert all("lorem" in m.content for m in loop.history if m.role == "tool")


def test_usage_reported_by_the_model_anchors_the_compactor():
    replies = [ask("add", "c1", a=1, b=2), assistant("3")]

    def model(messages, tools=None):
        reply = replies[len(calls)]
        calls.append(messages)
        return reply.with_meta(usage={"prompt_tokens": 1500})

    calls: list = []
    pytest.importorskip("compaction.strategies.sliding_window")
    loop = TurnLoop(model, [add], window=2000, counter=ApproximateCounter())
    loop.run("add")
    assert loop.compactor is not None
    assert loop.compactor.stats.anchored  # the second call was judged on the reported 1500
    assert loop.compactor.stats.last_estimate >= 1500


# -- async -------------------------------------------------------------------------------------


def test_async_model_and_tools():
    async def model(messages, tools=None, **options):
        await asyncio.sleep(0)
        if messages[-1].role == "tool":
            return assistant(f"got {messages[-1].content}")
        return ask("fetch", key="k")

    async def fetch(key: str, context: dict) -> str:
        await asyncio.sleep(0)
        context["fetched"] = key
        return "value"

    loop = TurnLoop(model, [fetch])
    result = asyncio.run(loop.arun("fetch k"))
    assert result.reply.content == "got value"
    assert loop.context == {"fetched": "k"}
    with pytest.raises(TypeError, match="arun"):
        loop.run("again")


def test_sync_run_refuses_an_async_tool():
    async def fetch(key: str) -> str:
        return "v"

    model = Scripted(ask("fetch", key="k"), assistant("x"))
    result = TurnLoop(model, [fetch]).run("go")
    assert "arun" in result.messages[2].content


def test_sync_run_works_inside_a_running_event_loop():
    async def main() -> str:
        return TurnLoop(Scripted(assistant("inside"))).run("hi").reply.content

    assert asyncio.run(main()) == "inside"


# -- tools -------------------------------------------------------------------------------------


def test_tool_schema_from_a_signature():
    def search(query: str, limit: int = 5, exact: bool = False, tags: list[str] | None = None):
        """Search the notes."""

    schema = Tool.from_function(search).schema["function"]
    assert schema["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
            "tags": {},
        },
        "required": ["query"],
    }
    assert Tool.from_function(set_stage).takes_context
    assert (
        "context"
        not in Tool.from_function(set_stage).schema["function"]["parameters"]["properties"]
    )
    with pytest.raises(ValueError, match="name"):
        Tool.from_function(lambda: 1)
    with pytest.raises(ValueError, match="unique"):
        TurnLoop(Scripted(), [add, Tool.from_function(add)])


# -- against a real local OpenAI-compatible server ---------------------------------------------


def test_end_to_end_with_the_openai_client():
    pytest.importorskip("openai")
    from compaction.loop.models import OpenAIChatModel

    script = [tool_call_reply("add", {"a": 20, "b": 22}, "call_9"), text_reply("It is 42.")]
    # A provider whose count is plausible for the request (tool schemas included): usage
    # far below the local count is not believed (tests/test_trigger_view.py).
    with ScriptedChatServer(script, prompt_tokens=lambda body: 1000) as server:
        model = OpenAIChatModel(
            "scripted-model",
            base_url=server.base_url,
            api_key="test-key",
            client_options={"max_retries": 0},
        )
        loop = TurnLoop(model, [add, set_stage], window=8000, temperature=0.3)
        result = loop.run("What is 20 + 22?")
    assert result.reply.content == "It is 42."
    assert result.stopped == "answer" and result.steps == 2
    assert len(server.requests) == 2
    first, second = server.requests
    assert server.paths == ["/v1/chat/completions"] * 2
    assert first["model"] == "scripted-model" and first["temperature"] == 0.3
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "set_stage"]
    assert first["messages"] == [{"role": "user", "content": "What is 20 + 22?"}]
    # the second request carries the call and its result on the wire
    assert second["messages"][1]["tool_calls"][0]["id"] == "call_9"
    assert second["messages"][2] == {"role": "tool", "content": "42", "tool_call_id": "call_9"}
    # the server's usage rode back on the reply and anchored the next estimate
    assert result.messages[1].meta["usage"]["prompt_tokens"] >= 1
    assert loop.compactor is not None and loop.compactor.stats.anchored


def test_end_to_end_with_the_async_openai_client():
    pytest.importorskip("openai")
    from compaction.loop.models import AsyncOpenAIChatModel

    script = [tool_call_reply("set_stage", {"stage": "drafting"}), text_reply("Drafting now.")]
    context: dict = {}
    with ScriptedChatServer(script) as server:
        model = AsyncOpenAIChatModel(
            "m", base_url=server.base_url, api_key="k", client_options={"max_retries": 0}
        )
        loop = TurnLoop(model, [set_stage], context=context)
        result = asyncio.run(loop.arun("start"))
    assert result.reply.content == "Drafting now."
    assert context == {"writing_stage": "drafting"}
    assert json.loads(
        server.requests[1]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    ) == {"stage": "drafting"}


def test_server_errors_reach_the_caller():
    openai = pytest.importorskip("openai")
    from compaction.loop.models import OpenAIChatModel

    with ScriptedChatServer([]) as server:
        model = OpenAIChatModel(
            "m", base_url=server.base_url, api_key="k", client_options={"max_retries": 0}
        )
        loop = TurnLoop(model)
        with pytest.raises(openai.APIStatusError):
            loop.run("hello")
    # the prompt was recorded; the failed call added nothing else
    assert [m.role for m in loop.history] == ["user"]


# -- a persistent session ----------------------------------------------------------------------


def test_session_keeps_messages_and_context_on_disk(tmp_path):
    sessions = pytest.importorskip("compaction.sessions")
    store = sessions.SessionStore(tmp_path)
    session = store.open("writer")
    model = Scripted(ask("set_stage", stage="drafting"), assistant("drafting"), assistant("again"))
    loop = TurnLoop(model, [set_stage], session=session)
    loop.run("start")
    # a fresh process view: another store object on the same folder
    reopened = sessions.SessionStore(tmp_path).open("writer")
    assert [m.role for m in reopened.messages] == ["user", "assistant", "tool", "assistant"]
    assert reopened.global_context["writing_stage"] == "drafting"
    # the next run continues the stored conversation
    TurnLoop(model, [set_stage], session=reopened).run("more")
    assert [m.content for m in model.calls[2][0]][-2:] == ["drafting", "more"]


def test_a_new_process_starts_from_the_stored_compacted_view(tmp_path):
    # Run 1 fills the window and compacts; the session keeps the compacted view beside the
    # raw history. Run 2, on a fresh store object (as in a new process), starts from that
    # view instead of the raw history, and what was dropped can still be recalled.
    sessions = pytest.importorskip("compaction.sessions")
    pytest.importorskip("compaction.strategies.sliding_window")

    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}: " + "x" * 400

    steps = [ask("read", f"c{i}", path=f"src/f{i}.py") for i in range(6)]
    model = Scripted(*steps, assistant("done"), assistant("next"))
    session = sessions.SessionStore(tmp_path).open("agent")
    loop = TurnLoop(
        model,
        [read],
        session=session,
        window=1200,
        counter=ApproximateCounter(),
        system="You are a coding agent.",
    )
    loop.run("read every file " + "please " * 20)
    assert loop.compactor.stats.compactions >= 1
    raw = sessions.SessionStore(tmp_path).open("agent").messages
    assert len(raw) == 1 + 2 * 6 + 1  # nothing lost from the raw history

    reopened = sessions.SessionStore(tmp_path).open("agent")
    stored_view = reopened.view()
    second = TurnLoop(
        model,
        [read],
        session=reopened,
        window=1200,
        counter=ApproximateCounter(),
        system="You are a coding agent.",
    )
    second.run("now the tests")
    first_request = model.calls[-1][0]
    # it sent what the last process left, not a fresh compaction of the raw history
    assert second.compactor.stats.compactions == 0
    assert first_request[1 : 1 + len(stored_view)] == stored_view
    assert [m.role for m in first_request].count("system") == 1
    validate(first_request)
    replaced = [ref for m in first_request for ref in (provenance(m) or {}).get("replaces", ())]
    assert replaced, "the run started from the compacted view"
    assert all(reopened.recall(ref) is not None for ref in replaced)


def test_an_unknown_strategy_in_the_config_is_named(tmp_path):
    path = write_config(tmp_path, '[compaction]\nwindow = 1000\nuse = ["no_such_strategy"]\n')
    with pytest.raises(ConfigError, match="no_such_strategy"):
        TurnLoop.from_config(path, Scripted())


# -- the conversation stays valid whatever a tool or the model does ----------------------------


def test_an_interrupted_tool_leaves_the_session_valid(tmp_path):
    # Ctrl-C while a tool runs: the call may have had its effect, so the reply is kept with a
    # result saying so (a retry must not run it blindly again); and the session must not keep
    # an unanswered call, or every later run would be refused as invalid.
    sessions = pytest.importorskip("compaction.sessions")
    session = sessions.SessionStore(tmp_path).open("s")

    def slow() -> str:
        raise KeyboardInterrupt

    loop = TurnLoop(Scripted(ask("slow"), assistant("after")), [slow], session=session)
    with pytest.raises(KeyboardInterrupt):
        loop.run("go")
    validate(session.messages)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    assert session.messages[-1].content.startswith("error: interrupted")
    assert "KeyboardInterrupt" in session.messages[-1].content
    model = Scripted(assistant("fine"))
    assert TurnLoop(model, session=session).run("again").reply.content == "fine"
    validate(model.calls[0][0])


def test_a_context_value_that_cannot_be_stored_is_an_error_for_the_model(tmp_path):
    sessions = pytest.importorskip("compaction.sessions")
    session = sessions.SessionStore(tmp_path).open("s")

    def remember(context: dict) -> str:
        context["ok"] = 1
        context["tags"] = {"a", "b"}  # a set: not JSON
        return "done"

    loop = TurnLoop(Scripted(ask("remember"), assistant("noted")), [remember], session=session)
    result = loop.run("go")
    assert result.reply.content == "noted"
    assert result.messages[2].content.startswith("error:")
    assert "tags" in result.messages[2].content
    validate(session.messages)
    # nothing of the failed tool's changes was applied (all or nothing, as when it raises)
    assert dict(session.global_context) == {}
    assert result.context_changes == ()


def test_duplicate_tool_call_ids_from_the_model_are_made_unique():
    reply = {
        "content": "",
        "tool_calls": [
            {"id": "same", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
            {"id": "same", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}},
        ],
    }
    model = Scripted(reply, assistant("3 and 7"))
    loop = TurnLoop(model, [add])
    loop.run("add")
    validate(loop.history)
    validate(model.calls[1][0])
    calls = loop.history[1].tool_calls
    assert calls[0].id == "same" and calls[1].id != "same"
    assert [m.content for m in loop.history[2:4]] == ["3", "7"]
    assert [m.tool_call_id for m in loop.history[2:4]] == [c.id for c in calls]


def test_tool_call_ids_made_up_for_a_model_are_unique_across_runs():
    # A model that gives no ids (some local servers): the ids we make up must not repeat in
    # the conversation either (Anthropic refuses a request whose tool_use ids repeat).
    call = {"function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}
    no_id = {"content": "", "tool_calls": [call]}
    model = Scripted(no_id, assistant("2"), no_id, assistant("2 again"))
    loop = TurnLoop(model, [add])
    loop.run("one")
    loop.run("two")
    ids = [c.id for m in loop.history for c in m.tool_calls]
    assert len(ids) == 2 and len(set(ids)) == 2
