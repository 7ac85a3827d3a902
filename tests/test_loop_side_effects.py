"""A turn that stops in the middle of a reply: what ran is on record, and nothing runs twice.

Before, a reply was stored with all its results in one write after its last call: an approval
hook or an event subscriber that raised on the 2nd call lost the 1st call's result, and the
retry ran it (a payment made twice). Now each result is stored as its call finishes, a raising
subscriber is isolated, and a nested run on the same conversation is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import SessionStore, TurnLoop, events
from compaction.loop import ReentrantRunError
from compaction.messages import Message, ToolCall, assistant
from compaction.validate import validate


class Payments:
    def __init__(self) -> None:
        self.paid: list[int] = []

    def pay(self, amount: int) -> str:
        """Pay an invoice."""
        self.paid.append(amount)
        return f"paid {amount}"


def paying_model(amounts: list[int]):
    """Asks for one payment per amount, then answers once it has seen results."""

    def model(messages):
        if messages[-1].role == "user":
            calls = [ToolCall(f"p{i}", "pay", {"amount": a}) for i, a in enumerate(amounts)]
            return assistant("", calls)
        return assistant("done")

    return model


def test_an_approval_hook_that_raises_mid_reply_keeps_what_ran_and_the_retry_repeats_nothing(
    tmp_path,
) -> None:
    payments = Payments()
    down = {"approval": True}

    def approve(call, arguments):
        if down["approval"] and arguments["amount"] == 20:
            raise ConnectionError("approval service unreachable")
        return True

    session = SessionStore(tmp_path).open("pay")
    loop = TurnLoop(paying_model([10, 20]), [payments.pay], session=session, approve_tool=approve)
    with pytest.raises(ConnectionError):
        loop.run("pay both invoices")
    assert payments.paid == [10]
    stored = SessionStore(tmp_path).open("pay").messages  # on disk, as a new process sees it
    validate(stored)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool"]
    assert stored[2].content == "paid 10"
    assert stored[3].content.startswith("error: not run") and "ConnectionError" in stored[3].content
    down["approval"] = False
    result = loop.run("pay both invoices")
    assert payments.paid == [10]  # the retry continued from the record: nothing paid twice
    assert result.reply.content == "done"
    validate(session.messages)


def test_a_process_killed_between_two_calls_leaves_the_first_on_record(tmp_path) -> None:
    """kill -9 after the 1st payment: its result is on disk; the next run answers the 2nd
    call as interrupted (it may have run) and runs neither again."""
    ledger = tmp_path / "ledger.txt"
    script = textwrap.dedent(
        f"""
        import os, signal
        from compaction import SessionStore, TurnLoop, ToolCall, assistant
        def pay(amount: int) -> str:
            if amount == 20:
                os.kill(os.getpid(), signal.SIGKILL)
            with open({str(ledger)!r}, "a") as f:
                f.write(f"{{amount}}\\n")
            return f"paid {{amount}}"
        def model(messages):
            calls = [ToolCall("p0", "pay", '{{"amount": 10}}'),
                     ToolCall("p1", "pay", '{{"amount": 20}}')]
            return assistant("", calls)
        TurnLoop(model, [pay], session=SessionStore({str(tmp_path)!r}).open("pay")).run("pay")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr
    assert ledger.read_text() == "10\n"
    session = SessionStore(tmp_path).open("pay")
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    payments = Payments()
    result = TurnLoop(paying_model([10, 20]), [payments.pay], session=session).run("pay")
    assert payments.paid == []
    assert result.reply.content == "done"
    validate(session.messages)
    assert session.messages[3].content.startswith("error: interrupted")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    calls=st.integers(min_value=1, max_value=5),
    data=st.data(),
    how=st.sampled_from(["approval", "interrupt"]),
)
def test_wherever_a_turn_stops_every_call_runs_at_most_once(calls, data, how) -> None:
    stop_at = data.draw(st.integers(min_value=0, max_value=calls - 1))
    ran: list[int] = []
    armed = {"on": True}

    def step(n: int) -> str:
        """One step with a side effect."""
        if how == "interrupt" and armed["on"] and n == stop_at:
            ran.append(n)  # it had its effect, then Ctrl-C
            raise KeyboardInterrupt
        ran.append(n)
        return f"did {n}"

    def approve(call, arguments):
        if how == "approval" and armed["on"] and arguments["n"] == stop_at:
            raise PermissionError("policy server down")
        return True

    def model(messages):
        if messages[-1].role == "user":
            return assistant("", [ToolCall(f"s{n}", "step", {"n": n}) for n in range(calls)])
        return assistant("finished")

    loop = TurnLoop(model, [step], approve_tool=approve)
    with pytest.raises((PermissionError, KeyboardInterrupt)):
        loop.run("do the steps")
    validate(loop.history)
    armed["on"] = False
    assert loop.run("do the steps").reply.content == "finished"
    validate(loop.history)
    assert sorted(ran) == sorted(set(ran))  # nothing ran twice
    if how == "approval" and stop_at == 0:
        # nothing of the reply ran, so nothing was stored: the retry asks the model again
        assert ran == list(range(calls))
    else:
        assert ran == list(range(stop_at + (how == "interrupt")))
    results = {m.tool_call_id: m.content for m in loop.history if m.role == "tool"}
    if results:
        assert set(results) == {f"s{n}" for n in range(calls)}  # every call answered once


def test_a_raising_subscriber_is_isolated_and_the_turn_goes_on() -> None:
    payments = Payments()
    seen: list[str] = []

    def metrics_down(sender, **kw):
        raise RuntimeError("metrics backend down")

    def audit(sender, **kw):
        seen.append(kw["name"])

    events.tool_call_finished.connect(metrics_down)
    events.tool_call_finished.connect(audit)
    try:
        result = TurnLoop(paying_model([10, 20]), [payments.pay]).run("pay both")
    finally:
        events.tool_call_finished.disconnect(metrics_down)
        events.tool_call_finished.disconnect(audit)
    assert payments.paid == [10, 20]
    assert result.reply.content == "done"
    assert seen == ["pay", "pay"]  # the other subscriber still heard every call


def test_a_raising_subscriber_is_logged_by_its_type() -> None:
    # In a process of its own: another test may have configured structlog in this one.
    script = textwrap.dedent(
        """
        import logging, sys
        logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(message)s")
        from compaction import TurnLoop, events, assistant
        def metrics_down(sender, **kw):
            raise RuntimeError("metrics backend down: token sk-CANARY")
        events.turn_started.connect(metrics_down)
        print(TurnLoop(lambda messages: assistant("hi")).run("hello").reply.content)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "hi"
    (warning,) = [line for line in lines if "loop.subscriber_failed" in line]
    assert "receiver='metrics_down'" in warning and "error='RuntimeError'" in warning
    assert "CANARY" not in out.stdout


def test_a_tool_running_its_own_loop_is_refused_and_the_history_stays_in_order(tmp_path) -> None:
    holder: dict[str, TurnLoop] = {}

    def ask(q: str) -> str:
        """Ask the agent itself a sub-question."""
        return holder["loop"].run(q).reply.content

    def model(messages):
        last = messages[-1]
        if last.role == "user" and last.content.startswith("outer"):
            return assistant("", [ToolCall("x1", "ask", {"q": "inner question"})])
        return assistant("inner answer" if last.role == "user" else "outer answer")

    session = SessionStore(tmp_path).open("r")
    holder["loop"] = loop = TurnLoop(model, [ask], session=session)
    loop.run("outer task")
    shown = [m.content or f"<call {m.tool_calls[0].name}>" for m in session.messages]
    assert shown[:2] == ["outer task", "<call ask>"] and shown[3] == "outer answer"
    assert len(shown) == 4 and "ReentrantRunError" in shown[2]
    assert "history=" in shown[2]  # the refusal says how to nest a turn
    # the loop is usable again afterwards
    assert loop.run("outer again").reply.content == "outer answer"


def test_a_nested_run_with_its_own_history_is_allowed_and_stored_nowhere() -> None:
    holder: dict[str, TurnLoop] = {}

    def ask(q: str) -> str:
        """Ask the agent itself a sub-question, in a conversation of its own."""
        return holder["loop"].run(q, history=[]).reply.content

    def model(messages):
        last = messages[-1]
        if last.role == "user" and last.content.startswith("outer"):
            return assistant("", [ToolCall("x1", "ask", {"q": "inner question"})])
        return assistant("inner answer" if last.role == "user" else "outer answer")

    holder["loop"] = loop = TurnLoop(model, [ask])
    loop.run("outer task")
    assert [m.content for m in loop.history if m.role != "assistant" or not m.tool_calls] == [
        "outer task",
        "inner answer",
        "outer answer",
    ]


def test_two_threads_on_one_loop_do_not_interleave() -> None:
    entered, release = threading.Event(), threading.Event()

    def wait() -> str:
        """Block until released."""
        entered.set()
        release.wait(30)
        return "ok"

    def model(messages: tuple[Message, ...]):
        if messages[-1].role == "user":
            return assistant("", [ToolCall("w", "wait", {})])
        return assistant("done")

    loop = TurnLoop(model, [wait])
    first = threading.Thread(target=loop.run, args=("first",))
    first.start()
    assert entered.wait(30)
    try:
        with pytest.raises(ReentrantRunError, match="already running"):
            loop.run("second")
    finally:
        release.set()
        first.join(30)
    assert [m.content for m in loop.history if m.role == "user"] == ["first"]
    assert (
        json.dumps([m.role for m in loop.history]) == '["user", "assistant", "tool", "assistant"]'
    )
