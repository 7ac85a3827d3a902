"""Every id a note or placeholder names can be recalled, by the model, in every drop-in; recall
answers from the run that calls it; the session's RecallTool stays bounded on hostile input.

The histories are compacted by the default ladder (tool results cleared first, then the sliding
window's note over the placeholders), converted to each framework's own messages, and looked up
through the recall each drop-in gives the model (the same adapter reads the framework history)."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from typing import Any

import pytest

from compaction import ApproximateCounter, ToolCall, assistant, system, tool, user
from compaction.adapters.openai import from_openai, to_openai
from compaction.adapters.responses import from_responses, to_responses
from compaction.integrations.recall_tools import recall_answer
from compaction.memory.transcript import is_note, provenance
from compaction.trigger import default_pipeline

_IDS = re.compile(r"sha1:[0-9a-f]{16}")


def _conversation() -> list[Any]:
    msgs = [system("agent"), user("Audit the repository.")]
    for i in range(30):
        c = ToolCall(f"c{i}", "read_file", json.dumps({"path": f"src/m{i}.py"}))
        msgs += [
            assistant(f"Reading m{i}.", [c]),
            tool(c.id, f"src/m{i}.py: VALUE_{i} = {i * 7}\n" * 40),
        ]
    return msgs


def _named_ids(compacted: list[Any]) -> tuple[list[str], list[str], str]:
    """(every id the notes and placeholders record, the ids their text shows, a note's text)."""
    recorded, shown, note_text = [], [], ""
    for m in compacted:
        record = provenance(m)
        if record is None:
            continue
        recorded.extend(record.get("replaces", ()))
        shown.extend(_IDS.findall(m.content))
        if is_note(m):
            note_text = m.content
    return recorded, shown, note_text


def _drop_ins() -> dict[str, tuple[Any, Any]]:
    """Each drop-in's converters: to its framework's messages, and back as it reads them."""
    out: dict[str, tuple[Any, Any]] = {
        "litellm": (to_openai, from_openai),
        "agents": (to_responses, from_responses),
    }
    try:
        from compaction.integrations.pydantic_ai_messages import from_pydantic_ai, to_pydantic_ai

        out["pydantic_ai"] = (to_pydantic_ai, from_pydantic_ai)
    except ImportError:
        pass
    try:
        from compaction.integrations.langchain_messages import from_langchain, to_langchain

        out["langchain"] = (to_langchain, from_langchain)
    except ImportError:
        pass
    return out


@pytest.fixture(scope="module", params=sorted(_drop_ins()))
def drop_in(request: Any) -> tuple[str, Any, list[Any]]:
    """(name, the recall the drop-in gives the model, what the ladder sent): the history in the
    framework's own shape, read and compacted as the drop-in does."""
    to, read = _drop_ins()[request.param]
    history = to(_conversation())
    result = default_pipeline(counter=ApproximateCounter()).compact(
        list(read(history)), target=1500
    )
    assert [a.strategy for a in result.applied] == ["tool_results", "sliding_window"]

    def recall(ref: str) -> str:
        return recall_answer(ref, read(history))

    return request.param, recall, list(result.messages)


def test_every_id_a_note_or_placeholder_names_is_recalled_in_every_drop_in(drop_in) -> None:
    name, recall, out = drop_in
    recorded, shown, _ = _named_ids(out)
    assert len(recorded) >= 22 and shown
    missing = [ref for ref in {*recorded, *shown} if recall(ref).startswith("no message")]
    assert missing == [], f"{name}: {len(missing)} ids resolve to nothing"


def test_the_notes_range_lists_every_id_it_stands_for(drop_in) -> None:
    """The note shows two ids of its 22; recalling its range as shown reaches every one."""
    name, recall, out = drop_in
    _, _, note_text = _named_ids(out)
    note = next(m for m in out if is_note(m))
    replaces = provenance(note)["replaces"]
    span = re.search(r"(sha1:[0-9a-f]{16} … sha1:[0-9a-f]{16})", note_text)
    assert span is not None
    listing = recall(span.group(1))
    assert set(replaces) <= set(_IDS.findall(listing)), name
    # A listing of heads, not the originals in full.
    assert len(listing) < 22 * 300


def test_a_range_is_bounded_and_says_what_it_could_not_find() -> None:
    from compaction.integrations.recall_tools import MAX_LISTED
    from compaction.memory.transcript import message_ref

    history = [user(f"message {i} " + "x" * 500) for i in range(MAX_LISTED + 50)]
    first, last = message_ref(history[0]), message_ref(history[-1])
    listing = recall_answer(f"{first} … {last}", history)
    assert "and 50 more" in listing
    assert len(_IDS.findall(listing)) == MAX_LISTED + 2  # the header names both ends
    assert len(listing) < 200 * (MAX_LISTED + 10)
    assert "no message with id" in recall_answer(f"sha1:{'0' * 16} … {last}", history)
    assert "at or after" in recall_answer(f"{last} … {first}", history)


# -- the Agents SDK: recall answers from the run that calls it -------------------------------------


def test_agents_recall_answers_from_its_own_run_with_two_users_at_once() -> None:
    agents = pytest.importorskip("agents")
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from compaction.integrations.openai_agents import CompactionFilter

    agents.set_tracing_disabled(True)

    @agents.function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "\n".join(f"{path}:{n}: value {n}" for n in range(80))

    recalled: dict[str, str] = {}

    class Scripted(Model):
        def __init__(self, who: str) -> None:
            self.who, self.turn = who, 0

        async def get_response(
            self, system_instructions: Any, input: Any, *a: Any, **k: Any
        ) -> Any:
            self.turn += 1
            await asyncio.sleep(0.01)  # the other user's run calls the filter meanwhile
            last = input[-1]
            if last.get("type") == "function_call_output" and last["call_id"].startswith("recall"):
                recalled[self.who] = last["output"]
                text = ResponseOutputText(type="output_text", text="ok", annotations=[])
                done = ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
                return ModelResponse(output=[done], usage=Usage(), response_id=None)
            ids = _IDS.findall(json.dumps(input))
            if ids and self.turn > 8:
                name, args, cid = "recall", {"id": ids[0]}, f"recall{self.turn}"
            else:
                name = "read_file"
                args, cid = (
                    {"path": f"/home/{self.who}/secret_{self.turn}.txt"},
                    f"call_{self.turn}",
                )
            call = ResponseFunctionToolCall(
                type="function_call", call_id=cid, name=name, arguments=json.dumps(args)
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

    compaction = CompactionFilter(window=4000, recall=True)
    agent = agents.Agent(name="auditor", tools=[read_file, compaction.recall_tool])
    config = agents.RunConfig(call_model_input_filter=compaction)

    async def main() -> None:
        await asyncio.gather(
            *(
                agents.Runner.run(
                    agent.clone(model=Scripted(who)),
                    "Audit my files.",
                    run_config=config,
                    max_turns=40,
                )
                for who in ("alice", "bob")
            )
        )

    asyncio.run(main())
    assert set(recalled) == {"alice", "bob"}
    for who, other in (("alice", "bob"), ("bob", "alice")):
        assert f"/home/{who}/" in recalled[who]
        assert f"/home/{other}/" not in recalled[who]
    # Outside any run the filter saw, recall says so rather than answer from someone's run.
    assert "no history for this run" in compaction.recall.answer("sha1:0")


def test_fingerprints_tell_calls_apart_by_their_arguments() -> None:
    from compaction.memory.transcript import message_ref

    alice = assistant("", [ToolCall("call_1", "read_file", '{"path": "/home/alice/a"}')])
    bob = assistant("", [ToolCall("call_1", "read_file", '{"path": "/home/bob/a"}')])
    assert message_ref(alice) != message_ref(bob)
    assert message_ref(alice) == message_ref(alice.replace())


# -- the session's RecallTool: bounded on hostile input --------------------------------------------


def test_session_recall_tool_bounds_what_it_echoes_and_survives_deep_nesting() -> None:
    from compaction.sessions import SessionStore

    tool = SessionStore(tempfile.mkdtemp(prefix="recall-")).open("r").recall_tool()
    answer = tool.invoke(json.dumps({"id": "x" * 10_000_000}))
    assert len(answer) < 200 and "at most" in answer
    assert len(tool("y" * 1_000_000)) < 200
    deep = tool.invoke("[" * 100_000)
    assert "JSON arguments" in deep and len(deep) < 200
    assert "non-empty" in tool.invoke({"id": ""})
    assert "no message with id" in tool.invoke({"id": "sha1:0000"})
