"""The PostgreSQL store under faults: a server that stops answering, a commit whose connection
is lost right after, sessions the server ends, connection limits, forks and crowds of
threads, and URLs and ports a person gets wrong.

Every test runs against the real test server (through a misbehaving TCP proxy of our own
where the fault is the network's), with a retry budget of a second or two: no test waits
for the default budget, and none measures time.
"""

from __future__ import annotations

import collections
import itertools
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from compaction.sessions import SessionStore, StoreUnavailableError

psycopg = pytest.importorskip(
    "psycopg", reason="psycopg is not installed (compaction-ladder[postgres])"
)

from compaction.sessions.pgpool import is_transient  # noqa: E402 - needs psycopg
from tests.helpers_sessions.tcp_proxy import Proxy  # noqa: E402
from tests.postgres_server import PostgresServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.postgres
_roles = itertools.count()


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Any:
    found = Proxy("127.0.0.1", postgres_server.port)
    yield found
    found.close()


def _in_thread(call: Any, limit: float) -> dict[str, Any]:
    """Run ``call`` in a thread; what it returned or raised, or "still blocked" after ``limit``
    seconds (far past any bound under test: a hang, not a slow call)."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["returned"] = call()
        except Exception as exc:
            result["raised"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        result["blocked"] = True
    return result


def test_a_call_the_server_stops_answering_is_cut_off_at_retry_seconds(
    postgres_url: str, proxy: Proxy
) -> None:
    store = SessionStore.from_url(proxy.url(postgres_url), retry_seconds=1, connect_timeout=1)
    session = store.open("stall")
    session.add_user("warm")  # a pooled connection, through the proxy
    proxy.stall()
    result = _in_thread(lambda: session.add_user("during the stall"), limit=60)
    assert "blocked" not in result, "the call waited past its retry budget"
    assert isinstance(result.get("raised"), StoreUnavailableError), result
    assert "retry_seconds" in str(result["raised"])


def test_add_returns_once_its_batch_is_committed(postgres_url: str, proxy: Proxy) -> None:
    # A retry budget past the outage: should the drop land before this batch's own commit (a
    # pool's housekeeping can commit first), the batch is retried and must still be stored once.
    store = SessionStore.from_url(proxy.url(postgres_url), retry_seconds=6, connect_timeout=1)
    session = store.open("after-commit")
    session.add_user("warm")
    proxy.drop_after_commit(down=3)  # the server is gone right after the commit, for 3 s
    stored = session.add_user("pay invoice INV-7")  # returns: the batch is committed
    assert stored.content == "pay invoice INV-7"
    messages = SessionStore.from_url(postgres_url).open("after-commit").messages
    assert [m.content for m in messages] == ["warm", "pay invoice INV-7"]
    assert stored.id == messages[1].id


def test_an_idle_session_ended_by_the_server_is_replaced_not_an_error(
    postgres_url: str,
) -> None:
    url = postgres_url + "?options=-c%20idle_session_timeout%3D200"
    session = SessionStore.from_url(url, retry_seconds=5).open("idle")
    session.add_user("before")
    time.sleep(0.6)  # the server ends the pooled connections (SQLSTATE 57P05)
    session.add_user("after")
    assert [m.content for m in session.messages] == ["before", "after"]


def test_sqlstates_of_a_connection_that_went_away_are_transient() -> None:
    for state in ("57P01", "57P02", "57P03", "57P05", "53300", "08006"):
        assert is_transient(psycopg.errors.lookup(state)("gone")), state
    assert not is_transient(psycopg.errors.lookup("28P01")("wrong password"))


def test_a_role_s_connection_limit_reached_for_a_moment_is_retried(
    postgres_server: PostgresServer,
) -> None:
    role = f"limited_{next(_roles)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 2")  # generated identifier
        admin.execute(f"CREATE DATABASE {role} OWNER {role}")
    url = postgres_server.url.replace("compaction@", f"{role}@").rsplit("/", 1)[0] + f"/{role}"
    held = [psycopg.connect(url) for _ in range(2)]  # two other workers, busy for a moment
    threading.Timer(1.0, lambda: [h.close() for h in held]).start()
    try:
        session = SessionStore.from_url(url, retry_seconds=20).open("limit")
        session.add_user("x")  # refused at first ("too many connections for role"), retried
        assert [m.content for m in session.messages] == ["x"]
    finally:
        with psycopg.connect(postgres_server.url, autocommit=True) as admin:
            admin.execute(f"ALTER ROLE {role} CONNECTION LIMIT -1")


def _script(source: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_children_forked_while_threads_use_the_store_never_hang(postgres_url: str) -> None:
    out = _script(
        """
        import faulthandler, os, sys, threading
        sys.setswitchinterval(1e-6)  # thread switches everywhere: any lock may be held
        os.register_at_fork(
            after_in_child=lambda: faulthandler.dump_traceback_later(5, exit=True))
        from compaction.sessions import SessionStore
        session = SessionStore.from_url(sys.argv[1], max_size=4).open("forks")
        session.add_user("x")
        stop = False
        def spin():
            while not stop:
                session.exists()
        threads = [threading.Thread(target=spin, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        hung = 0
        for i in range(60):
            pid = os.fork()
            if pid == 0:
                faulthandler.cancel_dump_traceback_later()
                if i % 10 == 0:  # some children use the store themselves
                    SessionStore.from_url(sys.argv[1]).open(f"child-{i}").add_user("c")
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            hung += os.waitstatus_to_exitcode(status) != 0
        stop = True
        session.add_user("parent still fine")
        print(hung, [m.content for m in session.messages])
        """,
        postgres_url,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "0 ['x', 'parent still fine']\n", out.stderr
    children = SessionStore.from_url(postgres_url).list()
    expected = sorted(f"child-{i}" for i in range(0, 60, 10))
    assert [n for n in children if n.startswith("child-")] == expected


def test_more_threads_than_connections_all_get_served(postgres_url: str) -> None:
    store = SessionStore.from_url(postgres_url, max_size=2, retry_seconds=1)
    store.open("crowd").add_user("x")
    calls: collections.Counter[int] = collections.Counter()
    failures: list[BaseException] = []
    stop = threading.Event()

    def loop(t: int) -> None:
        while not stop.is_set():
            try:
                store.exists("crowd")
                calls[t] += 1
            except Exception as exc:
                failures.append(exc)

    threads = [threading.Thread(target=loop, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    # Run until every thread has had many calls, or 4 retry budgets have gone by: a thread
    # starved for a whole budget fails with StoreUnavailableError.
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and (len(calls) < 8 or min(calls.values()) < 50):
        time.sleep(0.05)
    time.sleep(1.5)  # past one whole retry budget with all eight busy
    stop.set()
    for t in threads:
        t.join()
    assert failures == []
    assert len(calls) == 8 and min(calls.values()) >= 50, calls


def test_a_raw_at_sign_in_the_password_is_refused_naming_no_secret() -> None:
    with pytest.raises(ValueError, match="raw '@'") as caught:
        SessionStore.from_url("postgresql://alice:s3cr@tP4ss@db.internal:5432/agents")
    assert "tP4ss" not in str(caught.value) and "s3cr" not in str(caught.value)


def test_a_wrong_port_says_at_the_first_retry_what_is_retried_and_for_how_long() -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = _script(
        """
        import sys
        from compaction.cli import main
        sys.exit(main(["session", "list", "--retry-seconds", "1", "--store", sys.argv[1]]))
        """,
        f"postgresql://u@127.0.0.1:{port}/x",
    )
    assert out.returncode == 2, out.stderr
    first, last = out.stderr.strip().splitlines()
    assert "list failed" in first and "Connection refused" in first
    assert "retrying for up to" in first and "retry_seconds=1" in first
    assert last.startswith("compaction: error:") and "within 1 s" in last
