"""The session commands as a user types them, and what a library user's process sees.

Real subprocesses where the process matters (stdin, stderr of a library user, a fork); the
entry point in this process (``call``) elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compaction.messages import Message
from compaction.sessions import SessionFormatError, SessionStore
from tests.test_cli import CLI, ROOT, _env, call, one_line_error


def _export(tmp_path: Path) -> Path:
    store = SessionStore(tmp_path / "src")
    store.open("orig").add_user("hello")
    return store.export("orig", tmp_path / "orig.json")


def test_an_empty_store_is_an_error_not_the_default_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(call(capsys, "session", "list", "--store", ""))
    assert "--store" in line and "non-empty" in line


def test_import_takes_the_name_as_its_second_argument_like_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = _export(tmp_path)
    store = str(tmp_path / "dst")
    base = ["session", "import", str(export), "--store", store]
    assert call(capsys, *base, "copy").returncode == 0
    assert call(capsys, *base, "--name", "old").returncode == 0
    assert SessionStore(store).list() == ["copy", "old"]
    line = one_line_error(call(capsys, *base, "a", "b"))
    assert "'compaction session import --help'" in line


def test_import_dash_reads_the_export_from_stdin(tmp_path: Path) -> None:
    export = _export(tmp_path)
    store = tmp_path / "dst"

    def piped(text: str, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [*CLI, "session", "import", "-", *args, "--store", str(store)]
        return subprocess.run(
            argv, input=text, capture_output=True, text=True, env=_env(), timeout=120
        )

    result = piped(export.read_text(), "piped", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["imported"] == "stdin"
    assert SessionStore(store).open("piped").messages[0].content == "hello"
    assert "<stdin>" in one_line_error(piped("not json"))


def test_a_format_error_names_a_database_session_by_its_url() -> None:
    error = SessionFormatError("postgresql://u@db.example:5432/agents#chat", "bad view")
    assert str(error).startswith("postgresql://u@db.example:5432/agents#chat: ")


def test_jobs_are_capped_at_the_cpu_count(tmp_path: Path) -> None:
    from compaction._cli.batch import Batch

    files = []
    for i in range(8):
        path = tmp_path / f"c{i}.json"
        path.write_text('[{"role": "user", "content": "hi"}]')
        files.append(str(path))
    assert Batch(files, "counting", jobs=60).jobs == min(8, os.cpu_count() or 1)


psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (compaction[postgres])")


def test_a_library_user_sees_one_line_not_the_pool_s_warnings(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import socket, sys
        from compaction.sessions import SessionStore, StoreUnavailableError
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        store = SessionStore.from_url(f"postgresql://u@127.0.0.1:{port}/x", retry_seconds=2)
        try:
            store.open("s").add_user("hi")
        except StoreUnavailableError as exc:
            print("raised", type(exc).__name__)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert out.stdout == "raised StoreUnavailableError\n"
    assert "psycopg" not in out.stderr and "error connecting" not in out.stderr
    assert len(out.stderr.splitlines()) <= 1, out.stderr  # at most our own retry notice


@pytest.mark.postgres
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_leaves_the_parent_s_connection_alone(postgres_url: str) -> None:
    script = textwrap.dedent(
        """
        import os, sys
        from compaction.sessions import SessionStore
        store = SessionStore.from_url(sys.argv[1], max_size=1)  # one connection: the same
        session = store.open("forked")
        session.add_user("before")
        pid = lambda: store.backend._db.run(
            lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0], what="pid")
        first = pid()
        child = os.fork()
        if child == 0:
            SessionStore.from_url(sys.argv[1]).open("child").add_user("from the child")
            sys.exit(0)  # a normal exit: finalisers and atexit run
        os.waitpid(child, 0)
        session.add_user("after")
        print(first == pid(), [m.content for m in session.messages])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, postgres_url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "True ['before', 'after']\n", out.stderr
    assert "store_retry" not in out.stderr


def test_show_shows_the_stored_view_the_agent_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SessionStore(tmp_path / "s")
    session = store.open("v")
    first = session.add_user("a long question")
    session.add_assistant("an answer")
    note = Message(
        "user",
        "Summary: a question was asked.",
        meta={"compaction": {"kind": "summary", "replaces": [first.id]}},
    )
    session.set_view([note])
    shown = call(capsys, "session", "show", "v", "--store", str(tmp_path / "s"))
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[-3:] == [
        "stored view (what the agent is sent), 2 messages:",
        "  user: Summary: a question was asked.",
        "  assistant: an answer",
    ]
    as_json = call(capsys, "session", "show", "v", "--json", "--store", str(tmp_path / "s"))
    view = json.loads(as_json.stdout)["view"]
    assert [m["content"] for m in view] == ["Summary: a question was asked.", "an answer"]
    # without a stored view nothing more is shown
    store.open("plain").add_user("hi")
    plain = call(capsys, "session", "show", "plain", "--store", str(tmp_path / "s"))
    assert "stored view" not in plain.stdout
