"""One run at a time on a session: a second TurnLoop (another thread, another process) that
finds the turn held is refused before it touches the history, so a paid tool never runs
twice and the history never holds two turns at once; a run that died lets go after its
lease lapses. Against every backend (the lease is kept in the store).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from compaction import ToolCall, TurnLoop, assistant, is_valid
from compaction.loop import TurnHeldError
from compaction.messages import Message
from compaction.sessions import SessionStore
from compaction.sessions.lease import KEY

ROOT = Path(__file__).resolve().parents[1]


def _model(messages: list[Message]) -> Message:
    if messages[-1].role == "user":  # numbers its calls per turn, as many models do
        return assistant("", [ToolCall("call_1", "pay", '{"invoice": "INV-7"}')])
    return assistant("done")


def test_a_second_run_while_the_first_holds_the_turn_is_refused(
    session_store: SessionStore,
) -> None:
    session = session_store.open("conv")
    ran: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def pay(invoice: str) -> str:
        ran.append(invoice)
        inside.set()
        release.wait(30)
        return f"paid {invoice}"

    first = threading.Thread(target=lambda: TurnLoop(_model, [pay], session=session).run("pay"))
    first.start()
    assert inside.wait(30)
    other = SessionStore.from_url(session_store.location).open("conv")  # as another worker
    with pytest.raises(TurnHeldError, match="another run is extending session 'conv'"):
        TurnLoop(_model, [pay], session=other).run("pay")
    release.set()
    first.join(30)
    assert ran == ["INV-7"]
    assert is_valid(list(session.messages))
    # the turn is given back: a later run goes ahead
    later = TurnLoop(lambda m: assistant("ok"), [pay], session=other).run("next")
    assert later.reply.content == "ok"
    assert KEY not in other.metadata


def test_a_run_in_another_process_sees_the_lease(session_store: SessionStore) -> None:
    session = session_store.open("conv")
    holder = "a-run-elsewhere"
    assert session.take_turn(holder, 60) is None
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys
                from compaction import TurnLoop, assistant
                from compaction.loop import TurnHeldError
                from compaction.sessions import SessionStore
                session = SessionStore.from_url(sys.argv[1]).open("conv")
                try:
                    TurnLoop(lambda m: assistant("x"), session=session).run("hi")
                    print("ran")
                except TurnHeldError:
                    print("refused")
                """
            ),
            session_store.location,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert out.stdout == "refused\n", out.stderr
    assert session.messages == ()  # the refused run wrote nothing
    session.release_turn(holder)


def test_a_lapsed_lease_of_a_run_that_died_lets_the_next_run_finish_its_turn(
    session_store: SessionStore,
) -> None:
    session = session_store.open("conv")
    assert session.take_turn("died", 0.0) is None  # taken, never renewed: lapsed at once
    result: Any = TurnLoop(lambda m: assistant("ok"), session=session).run("hi")
    assert result.reply.content == "ok"
    assert KEY not in session.metadata


@pytest.mark.skipif(os.name != "posix", reason="a dead holder is told by signal 0")
def test_the_lease_of_a_killed_process_on_this_host_is_not_waited_for(
    session_store: SessionStore,
) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\n"
            "from compaction.sessions import SessionStore\n"
            "s = SessionStore.from_url(sys.argv[1]).open('conv')\n"
            "assert s.take_turn('killed', 600) is None\n"
            "os.kill(os.getpid(), 9)\n",
            session_store.location,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert out.returncode == -9, out.stderr
    session = session_store.open("conv")
    assert session.metadata[KEY]["holder"] == "killed"  # held for ten minutes more...
    result = TurnLoop(lambda m: assistant("ok"), session=session).run("hi")
    assert result.reply.content == "ok"  # ...by a process that is gone: not waited for
