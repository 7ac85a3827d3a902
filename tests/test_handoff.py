"""The handoff to a fresh window (``new_context``): what the next request holds, what the
model's note may not drop, and when it is refused; through the trigger."""

from __future__ import annotations

import json

import pytest

from compaction import Compactor, Message, ToolCall, events
from compaction.handoff import NEW_CONTEXT, HandoffRefused, handoff
from compaction.validate import validate

RULES = (
    "Never push to the main branch.",
    "The budget cap is $500 for this job.",
)


def _run(steps: int = 8) -> list[Message]:
    out = [
        Message("system", "You are a coding agent."),
        Message("user", "Migrate the billing service to the new API. " + " ".join(RULES)),
    ]
    for i in range(steps):
        call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"pytest tests/test_{i}.py"}))
        out.append(Message("assistant", f"Step {i}.", tool_calls=(call,)))
        out.append(
            Message(
                "tool",
                f"FAILED tests/test_{i}.py::test_x - ValueError\n" * 30,
                tool_call_id=f"c{i}",
            )
        )
        if i == 3:
            out.append(Message("user", "Also: always run the linter before committing."))
    return out


def _ask(note: str, call_id: str = "h1") -> Message:
    return Message(
        "assistant", "", tool_calls=(ToolCall(call_id, NEW_CONTEXT, json.dumps({"note": note})),)
    )


def test_the_next_request_keeps_system_task_rules_and_the_note() -> None:
    messages = [*_run(), _ask("Billing migrated; next: the invoices module.")]
    made = handoff(messages)
    roles = [m.role for m in made.messages]
    assert roles == ["system", "user", "user", "assistant", "tool"]
    assert made.messages[:2] == tuple(messages[:2])  # system prompt and task verbatim
    bridge = made.messages[2].content
    assert "always run the linter before committing" in bridge
    assert made.messages[3] is messages[-1]
    assert made.replaced == len(messages) - 3
    # The note dropped the person's later rule: restored from the ledger, and said so.
    assert made.restored == ("Also: always run the linter before committing.",)
    validate(made.messages)
    assert made.messages[2].meta["compaction"]["restored"] == list(made.restored)


def test_a_note_that_carries_the_rules_restores_nothing() -> None:
    note = "Done with billing. Also: always run the linter before committing."
    made = handoff([*_run(), _ask(note)])
    assert made.restored == ()


def test_refused_while_a_call_waits_or_shares_the_step() -> None:
    waiting = [*_run(2), Message("assistant", "", tool_calls=(ToolCall("w", "bash", "{}"),))]
    with pytest.raises(HandoffRefused, match="waiting"):
        handoff([*waiting, _ask("note")])
    both = Message(
        "assistant",
        "",
        tool_calls=(ToolCall("a", "bash", "{}"), ToolCall("h", NEW_CONTEXT, '{"note": "x"}')),
    )
    with pytest.raises(HandoffRefused, match="only call"):
        handoff([*_run(2), both])
    with pytest.raises(HandoffRefused, match="no new_context"):
        handoff(_run(2))


def test_through_the_trigger_the_agent_keeps_appending() -> None:
    seen: list[dict[str, object]] = []

    def on_handoff(sender: object, **kw: object) -> None:
        seen.append(kw)

    compactor = Compactor(None, window=50_000)
    agent = _run()
    assert compactor.before_call(agent) is agent  # nothing to compact yet
    agent.append(_ask("Next: invoices."))
    events.handed_off.connect(on_handoff)
    try:
        made = compactor.handoff(agent)
    finally:
        events.handed_off.disconnect(on_handoff)
    agent.append(made.result)
    agent.append(
        Message(
            "assistant",
            "Starting on invoices.",
            tool_calls=(ToolCall("n1", "bash", '{"command": "ls invoices"}'),),
        )
    )
    agent.append(Message("tool", "a.py b.py", tool_call_id="n1"))
    request = compactor.before_call(agent)
    assert list(request) == [*made.messages, *agent[-2:]]
    validate(request)
    assert seen and seen[0]["restored"] == made.restored
    assert seen[0]["replaced"] == made.replaced and seen[0]["after"] < seen[0]["before"]


def test_a_turn_loop_hands_off_when_the_model_asks(tmp_path: object) -> None:
    from compaction.loop import TurnLoop
    from compaction.sessions import SessionStore

    session = SessionStore(tmp_path).open("agent")  # type: ignore[arg-type]

    def bash(command: str) -> str:
        """Run a command."""
        return f"$ {command}\n" + "output line\n" * 40

    script = iter(
        [
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall(f"b{i}", "bash", json.dumps({"command": f"make step{i}"})),),
            )
            for i in range(4)
        ]
        + [_ask("Step work done; next: write the report.", "h1")]
    )
    requests: list[tuple[Message, ...]] = []

    def model(messages: tuple[Message, ...], tools: object = None) -> Message:
        requests.append(messages)
        return next(script, Message("assistant", "Report written."))

    loop = TurnLoop(model, [bash], session=session, window=100_000, handoff=True)
    loop.run("Build it. Never deploy on Fridays.")
    last = requests[-1]
    assert [m.role for m in last[:2]] == ["user", "user"]
    assert last[0].content == "Build it. Never deploy on Fridays."
    assert last[1].meta["compaction"]["strategy"] == "handoff"
    assert "$ make step0" not in " ".join(m.content for m in last)  # its output set aside
    assert last[-1].role == "tool" and last[-1].content.startswith("New context started")
    # The session keeps the whole raw history, and its stored view is the handoff's.
    assert any("make step0" in (c.arguments) for m in session.messages for c in m.tool_calls)
    assert session.view()[1].meta["compaction"]["strategy"] == "handoff"
    with pytest.raises(ValueError, match="window"):
        TurnLoop(model, [bash], handoff=True)
