"""What only the PostgreSQL store has: a server that restarts, a schema it versions, URLs.

The behaviour every backend shares is in tests/test_sessions_conformance.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from compaction.cli import main
from compaction.messages import Message
from compaction.sessions import (
    SessionStore,
    StoreError,
    StoreSchemaError,
    StoreUnavailableError,
)

psycopg = pytest.importorskip(
    "psycopg", reason="psycopg is not installed (compaction-ladder[postgres])"
)

from compaction.sessions.postgres import redact  # noqa: E402 - needs psycopg
from tests.postgres_server import PostgresServer  # noqa: E402

WORKER = Path(__file__).resolve().parent / "helpers_sessions" / "worker.py"
pytestmark = pytest.mark.postgres


@pytest.mark.slow
@pytest.mark.parametrize("through", ["server", "pgbouncer"])
def test_a_server_restart_mid_run_loses_and_doubles_no_acknowledged_message(
    postgres_server: PostgresServer, postgres_url: str, through: str, request: Any
) -> None:
    if through == "pgbouncer":  # the server restarts behind a transaction pooler
        postgres_url = request.getfixturevalue("pgbouncer").url_for(postgres_url)
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "steady", postgres_url, "steady"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == "ready\n"
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    while len(lines) < 50:  # the writer is well under way
        time.sleep(0.05)
    before = len(lines)
    postgres_server.restart()  # pg_ctl restart -m fast: every open connection is cut
    postgres_server.wait_ready()
    deadline = time.monotonic() + 60
    while len(lines) < before + 50 and time.monotonic() < deadline:  # and it carried on
        time.sleep(0.05)
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    reader.join(timeout=10)
    assert lines[-1] == "done\n"
    acked = [line.split() for line in lines if line.startswith("ack ")]
    assert len(acked) >= before + 50
    messages = SessionStore.from_url(postgres_url).open("steady", create=False).messages
    # every acknowledged message is there exactly once, in the writer's order, and nothing
    # is there that was not acknowledged (the writer saw every add succeed)
    assert [m.content for m in messages] == [f"steady:{i}" for i in range(len(acked))]
    assert [m.id for m in messages] == [ack[1] for ack in acked]


def test_the_schema_is_created_versioned_and_a_newer_one_refused(postgres_url: str) -> None:
    store = SessionStore.from_url(postgres_url)
    store.open("s").add_user("hello")
    store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM compaction_schema").fetchall() == [(1,)]
        conn.execute("UPDATE compaction_schema SET version = 2")
    newer = SessionStore.from_url(postgres_url)
    with pytest.raises(StoreSchemaError, match="schema version 2.*newer compaction"):
        newer.list()
    newer.close()
    with psycopg.connect(postgres_url) as conn:  # refused, never rewritten
        assert conn.execute("SELECT version FROM compaction_schema").fetchall() == [(2,)]
        assert conn.execute("SELECT count(*) FROM compaction_messages").fetchone() == (1,)


def test_two_processes_creating_the_schema_at_once(postgres_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "write", postgres_url, f"s{i}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    assert [p.communicate(timeout=60)[0] for p in procs] == ["ok\n"] * 4
    assert SessionStore.from_url(postgres_url).list() == ["s0", "s1", "s2", "s3"]


def test_the_environment_variable_and_the_cli_pick_the_database(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("COMPACTION_SESSIONS_URL", postgres_url)
    SessionStore().open("from-env").add_user("hi")  # no root: the URL in the environment
    assert SessionStore.from_url().list() == ["from-env"]
    monkeypatch.delenv("COMPACTION_SESSIONS_URL")
    assert main(["session", "list", "--store", postgres_url, "--json"]) == 0
    assert '"from-env"' in capsys.readouterr().out
    out = tmp_path / "x.json"
    assert main(["session", "export", "from-env", str(out), "--store", postgres_url]) == 0
    assert main(["session", "import", str(out), "--name", "copy", "--store", str(tmp_path)]) == 0
    assert SessionStore(tmp_path).open("copy").messages == (
        SessionStore.from_url(postgres_url).open("from-env").messages
    )


@pytest.mark.parametrize(
    "url", ["mysql://u@h/db", "postgresql://u@h/db?sslmode=nonsense&bogus=1", "file://elsewhere/x"]
)
def test_bad_store_urls_are_one_line_errors(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["session", "list", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compaction: error: --store") and err.count("\n") == 1


def test_the_password_never_shows() -> None:
    assert redact("postgresql://me:s3cret@db:5432/x") == "postgresql://me:***@db:5432/x"
    store = SessionStore.from_url("postgresql://me:s3cret@127.0.0.1:1/x")
    assert "s3cret" not in repr(store) and "s3cret" not in store.location


def test_a_server_that_stays_away_is_a_clear_error_not_a_hang() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    store = SessionStore.from_url(
        f"postgresql://u@127.0.0.1:{port}/x", retry_seconds=1.0, connect_timeout=1.0
    )
    began = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="did not come back within 1 s"):
        store.open("s").add_user("hello")
    assert time.monotonic() - began < 30
    store.close()


SECRET = "Zq9SECRET"
# Every way libpq takes a password, and the raw characters that fool a URL parser.
LEAKY_URLS = {
    "query": "postgresql://alice@127.0.0.1:1/agents?password=" + SECRET,
    "raw #": f"postgresql://alice:pa#{SECRET}@127.0.0.1:1/agents",
    "raw /": f"postgresql://alice:pa/{SECRET}@127.0.0.1:1/agents",
    "raw ?": f"postgresql://alice:pa?{SECRET}@127.0.0.1:1/agents",
    "raw ?=": f"postgresql://alice:pa?x={SECRET}@127.0.0.1:1/agents",
    "bad %": f"postgresql://alice:{SECRET}%zz@127.0.0.1:1/agents",
    "sslpassword": f"postgresql://alice@127.0.0.1:1/agents?sslpassword={SECRET}",
    "user-info": f"postgresql://alice:{SECRET}@127.0.0.1:1/agents",
}


@pytest.mark.parametrize("url", LEAKY_URLS.values(), ids=LEAKY_URLS.keys())
def test_no_password_shows_in_repr_location_or_errors(url: str) -> None:
    shown: list[str] = []
    try:
        store = SessionStore.from_url(url, retry_seconds=0.5, connect_timeout=1)
        shown += [repr(store), store.location, store.open("x").location, repr(store.open("x"))]
        store.open("x").add_user("hi")
    except Exception as exc:  # what the caller sees, whatever it is
        shown.append(f"{type(exc).__name__}: {exc!r} {exc}")
        cause = exc.__cause__ or exc.__context__
        shown.append(repr(cause))
    assert shown and not [s for s in shown if SECRET in s]


@pytest.mark.parametrize("url", LEAKY_URLS.values(), ids=LEAKY_URLS.keys())
def test_no_password_shows_in_the_cli(
    url: str, postgres_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # On the test server (trust authentication: any password is taken), so that each command
    # gets as far as it can and says so: a session not found, or a URL refused.
    real = url.replace("alice", "compaction").replace(
        "127.0.0.1:1/agents", f"127.0.0.1:{postgres_server.port}/postgres"
    )
    for argv in (["show", "x"], ["list"], ["list", "--json"]):
        assert main(["session", *argv, "--store", real]) in (0, 2)
        out = capsys.readouterr()
        assert SECRET not in out.out + out.err


def test_the_location_of_a_store_reached_with_a_password_stays_usable(
    postgres_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Trust authentication takes any password: the store is reached, and what is shown of
    # its URL connects again (a URL for people, not a lossy summary), without the password.
    base = postgres_server.url
    with_hash = base.replace("compaction@", f"compaction:#{SECRET}@")
    for url in (base + f"?password={SECRET}", with_hash):
        store = SessionStore.from_url(url)
        store.open("seen").add_user("hi")
        assert SECRET not in store.location and "***" in store.location
        assert main(["session", "list", "--store", url]) == 0
        out = capsys.readouterr()
        assert "seen" in out.out and SECRET not in out.out + out.err
        reopened = SessionStore.from_url(store.location.replace(":***@", "@"))
        assert reopened.open("seen", create=False).messages[0].content == "hi"
        store.delete("seen")
        store.close()


# -- what is retried, and what is said at once -------------------------------------------------


def _on(
    postgres_url: str, *, user: str = "compaction", db: str | None = None, query: str = ""
) -> str:
    head, name = postgres_url.rsplit("/", 1)
    return head.replace("compaction@", f"{user}@") + "/" + (db or name) + query


@pytest.mark.parametrize(
    ("change", "cause"),
    [
        ({"user": "no_such_role"}, 'role "no_such_role" does not exist'),
        ({"db": "no_such_db"}, 'database "no_such_db" does not exist'),
        ({"query": "?options=-c%20statement_timeout%3D1"}, "statement timeout"),
    ],
    ids=["missing role", "missing database", "statement timeout"],
)
def test_failures_the_server_answers_are_said_at_once(
    postgres_url: str, change: dict[str, str], cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _on(postgres_url, **change)
    store = SessionStore.from_url(url, retry_seconds=30)
    began = time.monotonic()
    with pytest.raises(StoreError, match=cause) as caught:
        store.open("s").add_user("x" * 5_000_000)
    assert time.monotonic() - began < 15  # not the 30 s retry budget
    assert "did not come back" not in str(caught.value)
    store.close()
    assert main(["session", "show", "s", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and cause in err and "Traceback" not in err


def test_a_value_too_large_for_a_field_is_refused_before_it_is_sent(postgres_url: str) -> None:
    store = SessionStore.from_url(postgres_url)
    store.backend.max_value_bytes = 10_000  # type: ignore[attr-defined] # PostgreSQL's is 1 GB
    session = store.open("big")
    session.add_user("small")
    with pytest.raises(StoreError, match="more than a PostgreSQL field holds"):
        session.add(Message("user", "ok"), Message("user", "y" * 20_000))
    with pytest.raises(StoreError, match="more than a PostgreSQL field holds"):
        session.state["blob"] = "z" * 20_000
    assert [m.content for m in SessionStore.from_url(postgres_url).open("big").messages] == [
        "small"
    ]
    store.close()


def test_an_outage_shorter_than_retry_seconds_is_ridden_out(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    # The call must return as soon as the server is back (a reconnect back-off once left
    # the pool empty for up to ~10 s after it was: a 24 s outage failed a 30 s budget).
    store = SessionStore.from_url(postgres_url, retry_seconds=25)
    session = store.open("outage")
    session.add_user("before")
    postgres_server.stop_only()
    restart = threading.Timer(3.0, postgres_server.start_again)
    restart.start()
    try:
        session.add_user("during")
    finally:
        restart.join()
    assert [m.content for m in session.messages] == ["before", "during"]
    store.close()


def test_retry_seconds_bounds_the_whole_wait_connecting_included() -> None:
    import socket

    with socket.socket() as silent:  # accepts TCP connections, never answers PostgreSQL
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        store = SessionStore.from_url(
            f"postgresql://u@127.0.0.1:{port}/x", retry_seconds=2, connect_timeout=60
        )
        began = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="within 2 s"):
            store.open("s").add_user("hello")
        assert time.monotonic() - began < 10  # not the 60 s connect timeout
        store.close()


def test_raw_database_errors_never_escape(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # first_seq near 2**63 fits a file store but not a bigint column
    source = SessionStore(tmp_path / "src")
    source.open("src").add_user("hello")
    export = source.export("src", tmp_path / "e.json")
    doc = json.loads(export.read_text())
    doc["first_seq"] = doc["messages"][0]["seq"] = 2**63 - 1
    export.write_text(json.dumps(doc))
    assert main(["session", "import", str(export), "big", "--store", postgres_url]) == 2
    assert "bigint out of range" in capsys.readouterr().err
    SessionStore.from_url(postgres_url).open("s").add_user("hi")  # the schema is there
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE weak LOGIN")
    weak = _on(postgres_url, user="weak")
    assert main(["session", "list", "--store", weak]) == 2  # InsufficientPrivilege
    assert "permission denied" in capsys.readouterr().err
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP ROLE weak")
        conn.execute("DROP TABLE compaction_documents")
    assert main(["session", "show", "s", "--store", postgres_url]) == 2  # UndefinedTable
    assert "compaction_documents" in capsys.readouterr().err
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE compaction_schema")  # the other tables stay: DuplicateTable
    assert main(["session", "list", "--store", postgres_url]) == 2
    assert "already exists" in capsys.readouterr().err


def test_a_deeply_nested_body_in_the_database_is_a_format_error(postgres_url: str) -> None:
    from compaction.sessions import SessionFormatError

    store = SessionStore.from_url(postgres_url)
    session = store.open("deep")
    session.add_user("hi")
    deep = "[" * 100_000 + "]" * 100_000
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE compaction_messages SET body = %s",
            ('{"role": "user", "content": "hi", "meta": {"k": ' + deep + "}}",),
        )
        conn.execute(
            "UPDATE compaction_documents SET body = %s WHERE kind = 'state'",
            ('{"updated": "2024-01-01T00:00:00+00:00", "data": {"k": ' + deep + "}}",),
        )
    again = SessionStore.from_url(postgres_url).open("deep")
    with pytest.raises(SessionFormatError, match="nested too deeply"):
        _ = again.messages
    with pytest.raises(SessionFormatError, match="nested too deeply"):
        again.state.to_dict()
    store.close()
