"""The framework-neutral half of the drop-ins' ``search`` and ``new_context``: hostile queries
are answers, one conversation is searched and nothing else, the memory tools' own traffic is
not found again, a refused handoff changes nothing, a handoff is made once; and the notes say
the tools exist only when the request offers them."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import Compactor, Message, ToolCall, events
from compaction.handoff import DONE, NEW_CONTEXT
from compaction.integrations.context_tools import (
    MessagesNewContext,
    MessagesSearch,
    hand_off_if_asked,
    new_context_answer,
    search_answer,
)
from compaction.memory.transcript import PROVENANCE_KEY, message_ref

RULE = "Also: always run the linter before committing."


def _run(steps: int = 6, word: str = "pelican") -> list[Message]:
    out = [Message("system", "You are a coding agent."), Message("user", "Fix the build.")]
    for i in range(steps):
        call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"make step{i}"}))
        out.append(Message("assistant", f"Step {i}.", tool_calls=(call,)))
        text = f"{word} failure in module {i}\n" if i == 1 else f"ok {i}\n"
        out.append(Message("tool", text * 20, tool_call_id=f"c{i}"))
        if i == 2:
            out.append(Message("user", RULE))
    return out


def _ask(call_id: str = "h1", *more: ToolCall) -> Message:
    call = ToolCall(call_id, NEW_CONTEXT, json.dumps({"note": "Built; next: tests."}))
    return Message("assistant", "", tool_calls=(call, *more))


# -- search ------------------------------------------------------------------------------------


def test_search_answers_the_message_by_its_recall_id() -> None:
    messages = _run()
    answer = search_answer("pelican failure", messages)
    assert f"- id {message_ref(messages[5])} (tool, #5)" in answer
    assert "[pelican failure]" in answer


def test_hostile_queries_are_answers() -> None:
    messages = _run()
    for query in (
        "[" * 100_000,
        "x" * 5_000_000,
        '"pelican',
        "pelican NEAR(a b) OR * ^body: -AND",
        'body:"pelican" AND NOT (',
        "\x00\ud800 pelican",
    ):
        answer = search_answer(query, messages)
        assert isinstance(answer, str) and len(answer) < 4_000
    assert "pelican" in search_answer('pelican" OR "ok', messages)
    for bad in (None, 42, ["pelican"], {"q": 1}):
        assert search_answer(bad, messages) == 'search needs a "query" argument (a string)'
    for limit in (True, -1, 0, "5", 10**12, None):
        assert "pelican" in search_answer("pelican", messages, limit)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_query(query: str) -> None:
    answer = search_answer(query, _run(3))
    assert isinstance(answer, str)


def test_one_conversation_and_not_the_memory_tools_own_traffic() -> None:
    mine = _run(word="pelican")
    theirs = _run(word="walrus")
    assert "no earlier message matches" in search_answer("walrus", mine)
    # A search call and its answer, a recall and its answer: not found again.
    asked = ToolCall("s1", "search", json.dumps({"query": "heron"}))
    recalled = ToolCall("r1", "recall", json.dumps({"id": "heron"}))
    history = [
        *mine,
        Message("assistant", "", tool_calls=(asked,)),
        Message("tool", "- id x (tool, #3): [heron]", tool_call_id="s1"),
        Message("assistant", "", tool_calls=(recalled,)),
        Message("tool", "heron heron", tool_call_id="r1"),
    ]
    assert "no earlier message matches" in search_answer("heron", history)
    # Compaction output (a note) is not an original: not answered.
    note = Message("user", "[heron removed]", meta={PROVENANCE_KEY: {"kind": "note"}})
    assert "no earlier message matches" in search_answer("heron", [*mine, note])
    assert "walrus" in search_answer("walrus", theirs)


def test_litellm_style_handlers_read_openai_messages() -> None:
    messages = [
        {"role": "user", "content": "Fix the build."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "kingfisher exploded"},
    ]  # fmt: skip
    call = {"id": "s", "function": {"name": "search", "arguments": '{"query": "kingfisher"}'}}
    reply = MessagesSearch().handle(call, messages)
    assert reply["tool_call_id"] == "s" and "[kingfisher]" in reply["content"]
    bad = {"id": "s", "function": {"arguments": "{" * 100_000}}
    assert MessagesSearch().handle(bad, messages)["content"].startswith("search needs")
    assert MessagesSearch().spec["function"]["name"] == "search"
    assert MessagesNewContext().spec["function"]["name"] == NEW_CONTEXT


# -- new_context -------------------------------------------------------------------------------


def test_new_context_is_refused_beside_another_call() -> None:
    assert new_context_answer([*_run(), _ask()]) == DONE
    both = _ask("h1", ToolCall("b", "bash", "{}"))
    answer = new_context_answer([*_run(), both])
    assert answer.startswith("No new context:") and "only call" in answer
    # A history that does not show the call yet is answered done (the hook still checks).
    assert new_context_answer(_run()) == DONE


def test_the_hook_hands_off_once_and_never_on_a_refusal() -> None:
    seen: list[dict[str, object]] = []

    def on(sender: object, **fields: object) -> None:
        seen.append(fields)

    events.handed_off.connect(on)
    try:
        compactor = Compactor(None, 100_000)
        messages = [*_run(), _ask()]
        assert hand_off_if_asked(compactor, messages) is None  # not answered yet
        refused = [*messages, Message("tool", "No new context: busy", tool_call_id="h1")]
        assert hand_off_if_asked(compactor, refused) is None
        assert seen == []
        answered = [*messages, Message("tool", DONE, tool_call_id="h2")]
        answered[-2] = _ask("h2")
        made = hand_off_if_asked(compactor, answered)
        assert made is not None and made.restored == (RULE,)
        assert hand_off_if_asked(compactor, answered) is None  # the same call: once
        sent = compactor.before_call(answered)
        assert RULE in sent[2].content and "pelican" not in " ".join(m.content for m in sent)
        assert len(seen) == 1 and seen[0]["restored"] == (RULE,)
    finally:
        events.handed_off.disconnect(on)


# -- the notes ---------------------------------------------------------------------------------


def _long() -> list[Message]:
    out = [Message("system", "sys"), Message("user", "Do the thing.")]
    for i in range(30):
        call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"cat f{i}.py"}))
        out.append(Message("assistant", f"step {i}", tool_calls=(call,)))
        out.append(Message("tool", f"line of output {i}\n" * 40, tool_call_id=f"c{i}"))
    return out


def _notes(tools: list[dict[str, object]]) -> str:
    sent = Compactor(None, 4000, tools=tools).before_call(_long())
    return "\n".join(m.content for m in sent if m.meta.get(PROVENANCE_KEY))


def test_notes_name_the_memory_tools_only_when_offered() -> None:
    recall = {"type": "function", "function": {"name": "recall", "parameters": {}}}
    search = {"type": "function", "name": "search", "parameters": {}}
    other = {"type": "function", "function": {"name": "bash", "parameters": {}}}
    assert "Recall ids:" in _notes([other])
    assert "tool" not in _notes([other]).split("Recall ids:")[1]
    assert "The search and recall tools reach them." in _notes([recall, search, other])
    assert "The recall tool reaches them." in _notes([recall])
    assert _notes([recall, search]).count("reach them") == 1


def test_search_finds_what_a_compaction_removed_by_the_id_its_note_names() -> None:
    history = _long()
    sent = Compactor(None, 4000).before_call(history)
    shown = " ".join(m.content for m in sent)
    assert "line of output 3\n" not in shown  # the ladder took it out of view
    answer = search_answer("output 3", history)
    found = message_ref(history[9])
    assert answer.splitlines()[1].startswith(f"- id {found} (tool, #9)")
    replaced = [r for m in sent for r in m.meta.get(PROVENANCE_KEY, {}).get("replaces", ())]
    assert found in replaced


# -- telling a refusal where the tool could not --------------------------------------------------


def test_a_refusal_is_told_in_place_of_the_answer_and_nothing_else_changes() -> None:
    from compaction.integrations._agents_session import tell_refusals

    items: list[object] = [
        {"role": "user", "content": "Fix the build."},
        {"type": "function_call", "call_id": "h1", "name": NEW_CONTEXT, "arguments": "{}"},
        {"type": "function_call_output", "call_id": "h1", "output": DONE},
        {"type": "function_call_output", "call_id": "x", "output": DONE},
    ]
    refusals = {"h1": "No new context: busy", "gone": "No new context: busy"}
    where: dict[str, int] = {"h1": 0}  # a stale hint: found again by looking
    told = tell_refusals(items, refusals, where)
    assert told is not items and items[2] == {**items[2], "output": DONE}  # the input as it was
    assert told[2] == {**items[2], "output": "No new context: busy"}
    assert all(told[i] is items[i] for i in (0, 1, 3))
    assert refusals == {"h1": "No new context: busy"} and where == {"h1": 2}  # "gone" forgotten
    assert tell_refusals(told, refusals, where) is told  # already said: the same list
    assert tell_refusals("not a list", refusals, where) == "not a list"
