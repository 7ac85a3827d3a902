"""What only the PostgreSQL store has: a server that restarts, a schema it versions, URLs.

The behaviour every backend shares is in tests/test_sessions_conformance.py.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from compaction.cli import main
from compaction.sessions import SessionStore, StoreSchemaError, StoreUnavailableError

psycopg = pytest.importorskip(
    "psycopg", reason="psycopg is not installed (compaction-ladder[postgres])"
)

from compaction.sessions.postgres import redact  # noqa: E402 - needs psycopg
from tests.postgres_server import PostgresServer  # noqa: E402

WORKER = Path(__file__).resolve().parent / "helpers_sessions" / "worker.py"
pytestmark = pytest.mark.postgres


@pytest.mark.slow
def test_a_server_restart_mid_run_loses_and_doubles_no_acknowledged_message(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
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
