"""One conformance suite for every session backend: each test runs against files and PostgreSQL.

The ``store_url`` fixture (root conftest.py) is a directory, then a fresh database on a real
PostgreSQL server started for the test session. Writers are real processes
(tests/helpers_sessions/worker.py), crashes are real ``kill -9``, and the server restart is a
real ``pg_ctl restart``. Seed 001's scenarios run on both backends in
features/test_sessions_feature.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from compaction.messages import Message, ToolCall
from compaction.sessions import (
    InvalidSessionName,
    SessionExistsError,
    SessionStore,
    StaleViewError,
)
from compaction.validate import validate

WORKER = Path(__file__).resolve().parent / "helpers_sessions" / "worker.py"
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")


def worker(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args], text=True, stdout=subprocess.PIPE, **kwargs
    )


def fresh(store_url: str) -> SessionStore:
    """Another store object on the same storage: nothing can come from the first one's memory."""
    return SessionStore.from_url(store_url)


# -- concurrency -----------------------------------------------------------------------------


@pytest.mark.slow
def _through_pgbouncer(request: pytest.FixtureRequest) -> bool:
    # The heaviest tests run lighter behind PgBouncer: the same concurrency, fewer rounds
    # (they already ran in full against the server itself).
    return bool(request.node.callspec.params.get("store_url") == "pgbouncer")


def test_eight_processes_append_500_each_nothing_lost_doubled_or_reordered(
    store_url: str, request: pytest.FixtureRequest
) -> None:
    workers, count = 8, 100 if _through_pgbouncer(request) else 500
    procs = [
        worker("append", store_url, "shared", f"w{k}", str(count), stdin=subprocess.PIPE)
        for k in range(workers)
    ]
    for proc in procs:  # all started: let them go at once
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    for proc in procs:
        assert proc.stdout is not None
        out = proc.stdout.read()
        assert proc.wait(timeout=300) == 0 and out == "done\n"

    session = fresh(store_url).open("shared", create=False)
    messages = session.messages
    assert len(messages) == workers * count
    contents = Counter(m.content for m in messages)
    assert set(contents.values()) == {1}
    assert set(contents) == {f"w{k}:{i}" for k in range(workers) for i in range(count)}
    assert len({m.id for m in messages}) == workers * count
    assert [e.seq for e in session.entries] == list(range(workers * count))
    for k in range(workers):  # each writer's own messages stay in its order
        mine = [int(m.content.split(":")[1]) for m in messages if m.content.startswith(f"w{k}:")]
        assert mine == list(range(count))
    # read-modify-write of the state document: no writer's key was clobbered
    assert session.state.to_dict() == {f"w{k}": count for k in range(workers)}


# -- crashes ---------------------------------------------------------------------------------


def check_readable(store_url: str, name: str) -> Any:
    session = fresh(store_url).open(name)  # a writer may have died before its first write
    messages = session.messages
    for message in messages:  # every committed message is whole
        if message.role == "tool":
            digest = hashlib.sha256(message.content.encode()).hexdigest()
            assert digest == message.meta["sha256"]
    validate(messages)  # every committed call has its result: batches are all or nothing
    seqs = [e.seq for e in session.entries]
    assert seqs == (list(range(seqs[0], seqs[0] + len(seqs))) if seqs else [])
    session.state.to_dict()
    session.global_context.to_dict()
    session.metadata.to_dict()
    validate(session.view())
    return session


@pytest.mark.slow
@posix_only
def test_twenty_kill_9_of_a_writer_mid_append_lose_no_acknowledged_message(
    store_url: str, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(20240517)
    acked: set[str] = set()
    iterations = 6 if _through_pgbouncer(request) else 20
    for iteration in range(iterations):
        proc = worker("churn", store_url, "crashy", str(iteration))
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        # The kill lands a random moment after the writer's first acknowledged batch, so every
        # kill interrupts work in flight however slow the machine is (a fixed delay from
        # "ready" can land before the first commit on a loaded machine and prove nothing).
        first = proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        out = first + rest
        assert proc.returncode == -signal.SIGKILL
        session = check_readable(store_url, "crashy")
        for line in out.splitlines():
            if line.startswith("ack message "):
                acked.update(line.split()[2:])
        ids = {m.id for m in session.messages}
        assert acked <= ids  # nothing a writer was told is saved is ever missing
    assert len(acked) >= iterations  # the writers did get work done between the kills
    session = fresh(store_url).open("crashy")
    session.state["final"] = True
    if session.path is not None:  # the next writer sweeps stale temporary files
        assert not [p for p in session.path.iterdir() if p.name.endswith(".tmp")]


def test_a_session_whose_tail_is_an_unanswered_call_still_loads_and_runs(
    session_store: SessionStore,
) -> None:
    session = session_store.open("interrupted")
    session.add_user("list the files")
    call = ToolCall("c1", "ls", "{}")
    session.add_assistant("", tool_calls=(call,))  # the process died before the result
    session.add_user("are you there?")
    raw = fresh(session_store.location).open("interrupted").messages
    assert [m.role for m in raw] == ["user", "assistant", "user"]  # the raw history is kept
    view = session.view()
    validate(view)  # what is sent is a valid conversation: the call got an explicit answer
    answer = view[2]
    assert answer.role == "tool" and answer.tool_call_id == "c1"
    assert answer.meta["repair"] == "no_result"
    session.add_assistant("yes")  # and the session runs on
    validate(session.view())


def test_a_batch_is_refused_whole_before_anything_is_written(
    session_store: SessionStore,
) -> None:
    session = session_store.open("s")
    session.add_user("first", id="taken")
    with pytest.raises(ValueError, match="already in session"):
        session.add(Message("assistant", "ok"), Message("user", "again", id="taken"))
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        session.add(Message("assistant", "ok"), Message("user", "x", meta={"f": object()}))
    assert [m.content for m in fresh(session_store.location).open("s").messages] == ["first"]


# -- hostile input ---------------------------------------------------------------------------

HOSTILE_NAMES = [
    "x'; DROP TABLE compaction_sessions; --",
    "../../etc/passwd",
    "a\x00b",
    "",
    "name with spaces",
    "$(touch pwned)",
    "ünïcode",
    ".hidden",
    "CON",
    "x" * 129,
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_are_refused_and_touch_nothing(
    session_store: SessionStore, name: str
) -> None:
    session_store.create("bystander")
    with pytest.raises(InvalidSessionName):
        session_store.open(name)
    assert session_store.list() == ["bystander"]


def test_names_and_ids_are_data_never_sql_or_paths(session_store: SessionStore) -> None:
    names = ["Robert-.-_drop", "a..b", "x" * 128, "0"]
    quote = "'); DELETE FROM compaction_messages; --"
    for name in names:
        session = session_store.open(name)
        session.add_user(quote, id=f"{quote}-{name}")
        session.global_context[quote] = quote
    again = fresh(session_store.location)
    assert again.list() == sorted(names)
    for name in names:
        session = again.open(name, create=False)
        assert [m.id for m in session.messages] == [f"{quote}-{name}"]
        assert session.recall(f"{quote}-{name}") == session.messages[0]
        assert session.global_context[quote] == quote


STRANGE = "nul\x00 in the middle, lone surrogates \udc80 \ud800 and \U0001f600 \x00"


def test_nul_and_lone_surrogates_round_trip_exactly(session_store: SessionStore) -> None:
    session = session_store.open("strange")
    stored = session.add(
        Message("assistant", STRANGE, tool_calls=(ToolCall(f"id{STRANGE}", STRANGE, STRANGE),)),
        Message("tool", STRANGE, tool_call_id=f"id{STRANGE}", name=STRANGE, meta={STRANGE: 1}),
        Message("user", STRANGE, id=STRANGE),
    )
    session.global_context[STRANGE] = [STRANGE]
    session.set_view(stored[1:])
    again = fresh(session_store.location).open("strange", create=False)
    assert again.messages == stored
    assert again.recall(STRANGE) == stored[2]
    assert again.global_context[STRANGE] == [STRANGE]
    assert again.view() == stored[1:]
    # and in a new process, through the export layout
    out = subprocess.run(
        [sys.executable, str(WORKER), "dump", session_store.location, "strange"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    dumped = json.loads(out.stdout)
    assert [r["message"]["content"] for r in dumped["messages"]] == [STRANGE] * 3


def test_one_megabyte_messages(session_store: SessionStore) -> None:
    big = "".join(random.Random(7).choices("abc \n{}\"'\\", k=1_000_000))
    session = session_store.open("big")
    first = session.add_user(big)
    second = session.add(Message("assistant", big + "!"), Message("user", "short"))
    again = fresh(session_store.location).open("big", create=False)
    assert again.messages == (first, *second)
    assert again.recall(first.id or "") == first


# -- the view: compare-and-set ---------------------------------------------------------------


def test_a_view_computed_from_stale_history_is_refused(session_store: SessionStore) -> None:
    url = session_store.location
    a = session_store.open("cas")
    for i in range(6):
        a.add_user(f"m{i}")
    seen = len(a.entries)  # worker A reads the history (6 messages) and starts compacting
    stale_view = a.messages[3:]

    b = fresh(url).open("cas")  # meanwhile worker B appends and stores a newer view
    b.add_user("m6")
    b.add_user("m7")
    newer = b.messages[5:]
    b.set_view(newer, based_on=8)

    with pytest.raises(StaleViewError, match="computed from 8"):
        a.set_view(stale_view, based_on=seen)
    with pytest.raises(StaleViewError):  # by default based on what the view covers: 6
        a.set_view(stale_view)
    assert fresh(url).open("cas").view() == newer  # the newer view stands
    a.set_view(a.messages[4:], based_on=8)  # recomputed from the newest history: accepted
    assert fresh(url).open("cas").view() == a.messages[4:]


def test_based_on_must_describe_the_history(session_store: SessionStore) -> None:
    session = session_store.open("s")
    session.add_user("a")
    session.add_user("b")
    with pytest.raises(ValueError, match="based_on"):
        session.set_view(session.messages, based_on=5)  # more history than exists
    with pytest.raises(ValueError, match="based_on"):
        session.set_view(session.messages, based_on=1)  # less than the view covers


# -- export / import, async --------------------------------------------------------------------


def _full_session(store: SessionStore, name: str) -> Any:
    session = store.open(name)
    session.add_user("Plan the paper", meta={"source": "cli"})
    stored = session.add(
        Message("assistant", "", tool_calls=(ToolCall("c1", "outline", '{"n": 3}'),)),
        Message("tool", STRANGE, tool_call_id="c1", tokens=7),
    )
    session.global_context.update(stage="planning", sections=["intro", "method"])
    session.state["task"] = "outlining"
    session.metadata["owner"] = "alice"
    session.set_view(stored)
    session.clear()  # sequence numbers carry on: first_seq is not 0 any more
    session.add_user("after the clear")
    session.set_view(session.messages)
    return session


def _comparable(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snapshot.items() if k != "name"}


@pytest.mark.postgres
def test_export_from_one_backend_imports_into_the_other_unchanged(
    tmp_path: Path, postgres_url: str
) -> None:
    files = SessionStore.from_url(f"file://{tmp_path / 'files'}")
    database = SessionStore.from_url(postgres_url)
    original = _full_session(files, "travels")
    first = files.export("travels", tmp_path / "from-files.json")

    imported = database.import_(first, "travels")
    assert _comparable(imported.snapshot()) == _comparable(original.snapshot())
    second = database.export("travels", tmp_path / "from-postgres.json")
    back = files.import_(second, "back")
    assert _comparable(back.snapshot()) == _comparable(original.snapshot())
    assert back.messages == original.messages and back.view() == original.view()
    with pytest.raises(SessionExistsError):
        database.import_(first, "travels")  # never merged into an existing session
    database.close()


def test_async_calls_from_an_event_loop(session_store: SessionStore) -> None:
    session = session_store.open("async")

    async def agent() -> tuple[Message, ...]:
        await asyncio.gather(*(session.aadd(Message("user", f"m{i}")) for i in range(10)))
        await session.aset_view((await session.amessages())[5:])
        assert (await session.arecall("async-0")) is not None
        return await session.aview()

    view = asyncio.run(agent())
    assert len(view) == 5
    assert sorted(m.content for m in fresh(session_store.location).open("async").messages) == (
        sorted(f"m{i}" for i in range(10))
    )


# -- the view: generations (clear, delete + re-create) -----------------------------------------


def test_a_view_read_before_a_clear_is_refused_after_it(session_store: SessionStore) -> None:
    url = session_store.location
    owner = session_store.open("gen")
    owner.add(Message("user", "old task: my secret is 1234"), Message("assistant", "noted"))
    worker = fresh(url).open("gen")
    old_view = list(worker.messages)  # the worker reads the history to compact it
    owner.clear()  # deletion on request
    owner.add_user("new task")
    with pytest.raises(StaleViewError, match="cleared"):
        worker.set_view(old_view)
    assert [m.content for m in fresh(url).open("gen").view()] == ["new task"]
    # recomputed from the session as it is now: accepted
    worker.set_view(worker.view())
    assert [m.content for m in fresh(url).open("gen").view()] == ["new task"]


def test_a_view_read_before_delete_and_re_create_is_refused(session_store: SessionStore) -> None:
    url = session_store.location
    session_store.open("gen").add([Message("user", f"OLD {i}") for i in range(5)])
    worker = fresh(url).open("gen")
    stale = worker.messages[2:]  # ids gen-2..gen-4, which the new session will reuse
    session_store.delete("gen")
    session_store.open("gen").add([Message("user", f"NEW {i}") for i in range(5)])
    assert [m.id for m in fresh(url).open("gen").messages][2:] == [m.id for m in stale]
    with pytest.raises(StaleViewError, match="deleted and re-created|cleared"):
        worker.set_view(stale)
    view = fresh(url).open("gen").view()
    assert [m.content for m in view] == [f"NEW {i}" for i in range(5)]


def test_a_loop_whose_session_is_re_created_mid_turn_stores_no_stale_view(
    session_store: SessionStore,
) -> None:
    # TurnLoop calls set_view without based_on: the generation check must hold on that path.
    from compaction.loop import TurnLoop
    from compaction.tokens import ApproximateCounter

    url = session_store.location
    session = session_store.open("loop")
    session.add([Message("user", f"old secret 1234, part {i}: " + "x" * 400) for i in range(8)])

    def wipe() -> str:
        """Delete and re-create the session (another process, as far as the loop can tell):
        its ids start again at loop-0, so the loop's compacted view names existing ids."""
        other = fresh(url)
        other.delete("loop")
        other.open("loop").add([Message("user", f"new {i}") for i in range(12)])
        return "wiped " + "y" * 3000  # big enough that the next request compacts again

    replies = iter(
        [
            Message("assistant", "", tool_calls=(ToolCall("c1", "wipe", "{}"),)),
            Message("assistant", "done"),
        ]
    )
    loop = TurnLoop(
        lambda messages, tools=None, **kw: next(replies),
        [wipe],
        session=session,
        window=1200,
        counter=ApproximateCounter(),
    )
    loop.run("go")
    assert loop.compactor is not None and loop.compactor.stats.compactions >= 2
    view = fresh(url).open("loop").view()
    assert not any("1234" in m.content for m in view), [m.content[:30] for m in view]


def test_ids_a_caller_chose_in_the_automatic_shape_never_wedge_the_session(
    session_store: SessionStore,
) -> None:
    # Moving the tail of a session into a new one keeps its ids: "a-5".."a-9" at seq 0..4.
    session = session_store.open("a")
    moved = session.add([Message("user", f"step {i}", id=f"a-{i}") for i in range(5, 10)])
    added = [session.add_user(f"next turn {i}") for i in range(4)]
    added += session.add(Message("user", "batch"), Message("assistant", "x", id="a-12"))
    again = fresh(session_store.location).open("a", create=False)
    ids = [m.id for m in again.messages]
    assert len(set(ids)) == len(ids) == 11
    assert ids[:5] == [m.id for m in moved]
    for message in [*moved, *added]:  # every id names its own message
        assert again.recall(message.id or "") == message


def test_clear_moves_the_updated_moment(session_store: SessionStore) -> None:
    session = session_store.open("c")
    session.add_user("hello", at=datetime(2020, 1, 1, tzinfo=timezone.utc))
    session.metadata["owner"] = "alice"
    before = fresh(session_store.location).open("c").updated
    assert before is not None
    time.sleep(0.01)
    session.clear()
    after = fresh(session_store.location).open("c").updated
    assert after is not None and after > before
    assert fresh(session_store.location).open("c").metadata["owner"] == "alice"


# -- exactness ---------------------------------------------------------------------------------

PAIR = "\ud83d\ude00"  # two code points that a JSON reader would join into one emoji


def test_a_surrogate_pair_given_as_two_code_points_comes_back_as_two(
    session_store: SessionStore,
) -> None:
    session = session_store.open("pair")
    text = f"{PAIR} beside a real \U0001f600 and a lone \udc80"
    stored = session.add(
        Message("user", text, id=f"id-{PAIR}", meta={PAIR: [PAIR]}),
        Message("user", "\U0001f600", id="id-\U0001f600"),  # the same id, as one character
    )
    session.global_context[PAIR] = PAIR
    session.set_view(stored)
    again = fresh(session_store.location).open("pair", create=False)
    assert again.messages == stored
    first = again.messages[0]
    assert len(first.content) == len(text) and first.content == text
    assert list(first.meta) == [PAIR] and len(next(iter(first.meta))) == 2
    assert again.recall(f"id-{PAIR}") == stored[0] and again.recall("id-\U0001f600") == stored[1]
    assert again.global_context[PAIR] == PAIR
    assert again.view() == stored
    archive = again.export_bytes()
    back = fresh(session_store.location)
    path = Path(again.export(Path(os.environ.get("TMPDIR", "/tmp")) / f"pair-{os.getpid()}.json"))
    try:
        assert back.import_(path, "pair-copy").messages == stored
    finally:
        path.unlink()
    assert PAIR.encode("utf-8", "surrogatepass") not in archive  # escaped, not raw


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


def test_deep_nesting_is_a_clear_error_never_a_recursion_error(
    session_store: SessionStore,
) -> None:
    session = session_store.open("deep")
    with pytest.raises(TypeError, match="nested too deeply"):
        session.global_context["k"] = _nested(100_000)
    with pytest.raises(TypeError, match="nested too deeply"):
        session.add(Message("user", "x", meta={"k": _nested(100_000)}))
    session.global_context["fine"] = _nested(200)
    assert fresh(session_store.location).open("deep").global_context["fine"] == _nested(200)
