"""Sessions across processes: fresh-process reload, concurrent appends, kill -9, corrupt files.

Every test here uses real separate processes (tests/helpers_sessions/worker.py) and real
SIGKILL; none of them measures time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from compaction.messages import Message
from compaction.sessions import Session, SessionFormatError, SessionStore

WORKER = Path(__file__).resolve().parent / "helpers_sessions" / "worker.py"
posix_only = pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")


def worker(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args], text=True, stdout=subprocess.PIPE, **kwargs
    )


def run_worker(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(WORKER), *args], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


# -- fresh process ---------------------------------------------------------------------------


def test_written_here_read_in_a_fresh_process(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.open("here")
    session.add_user("Hello, how are you?")
    session.add_assistant("Fine.", meta={"usage": {"output_tokens": 2}}, tokens=2)
    session.global_context["writing_stage"] = "planning"
    session.state["current_task"] = "writing"
    session.metadata["last_update"] = "2024-01-01T00:00:00+00:00"
    snapshot = json.loads(run_worker("dump", str(tmp_path), "here"))
    assert snapshot == json.loads(json.dumps(session.snapshot()))
    assert [r["message"]["content"] for r in snapshot["messages"]] == [
        "Hello, how are you?",
        "Fine.",
    ]
    assert snapshot["global_context"]["data"] == {"writing_stage": "planning"}


def test_written_in_a_fresh_process_read_here(tmp_path: Path) -> None:
    assert run_worker("write", str(tmp_path), "there") == "ok\n"
    session = SessionStore(tmp_path).open("there", create=False)
    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "written in a child process"),
        ("assistant", "and answered there"),
    ]
    assert session.messages[1].meta == {"k": [1, 2]}
    assert session.global_context["child"] == {"nested": [1, "two", None]}
    assert session.state.to_dict() == {"phase": "child"}
    assert session.metadata["writer"] == "worker.py"


# -- concurrency -----------------------------------------------------------------------------


# Concurrent appends and kill -9 in a loop run against every backend: see
# tests/test_sessions_conformance.py.


@posix_only
def test_kill_during_a_large_append_leaves_the_previous_history(tmp_path: Path) -> None:
    log = tmp_path / "big" / "messages.jsonl"
    for _attempt in range(3):
        if (tmp_path / "big").exists():
            SessionStore(tmp_path).delete("big")
        proc = worker("big", str(tmp_path), "big", "32")
        assert proc.stdout is not None
        assert proc.stdout.readline() == "writing\n"
        before = log.stat().st_size
        deadline = time.monotonic() + 20
        while log.stat().st_size == before and proc.poll() is None:
            if time.monotonic() > deadline:
                pytest.fail("the writer never started its append")
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        if not log.read_bytes().endswith(b"\n"):
            break
    else:
        pytest.skip("the kill never landed inside the write on this machine")

    torn = log.read_bytes()
    session = SessionStore(tmp_path).open("big", create=False)
    assert [m.content for m in session.messages] == ["before"]  # the torn record is not read
    session.add_user("after")
    assert [m.content for m in session.messages] == ["before", "after"]
    assert log.read_bytes().endswith(b"\n")
    kept = (tmp_path / "big" / "messages.jsonl.torn").read_bytes()
    first_line = torn.index(b"\n", torn.index(b"\n") + 1) + 1
    assert kept == torn[first_line:] + b"\n"  # the torn bytes are set aside, not thrown away
    assert [m.content for m in SessionStore(tmp_path).open("big").messages] == ["before", "after"]


# -- corrupt files ---------------------------------------------------------------------------


@pytest.fixture
def made(tmp_path: Path) -> Path:
    session = SessionStore(tmp_path).open("s")
    # Three calls, three records (one line each): a batch would be one line.
    for message in (Message("user", "one"), Message("assistant", "two"), Message("user", "three")):
        session.add(message)
    session.global_context["g"] = 1
    session.state["s"] = 2
    session.set_view(session.messages[1:])
    return tmp_path / "s"


def reopen(made: Path) -> Session:
    return SessionStore(made.parent).open("s", create=False)


@pytest.mark.parametrize(
    ("file", "content", "pattern"),
    [
        ("context.json", "{garbage", r"context\.json: not valid JSON"),
        ("context.json", "", r"context\.json: not valid JSON"),
        (
            "state.json",
            '{"format": "compaction.session.state", "version": 2, "data": {}}',
            r"state\.json: unsupported format version 2",
        ),
        ("state.json", '{"format": "other", "version": 1}', r"state\.json: not a"),
        (
            "metadata.json",
            '{"format": "compaction.session.metadata", "version": 1, '
            '"updated": "2024-01-01T00:00:00+00:00", "data": []}',
            r"metadata\.json: 'data'",
        ),
        ("state.json", b"\xff\xfe", r"state\.json: not UTF-8"),
        (
            "view.json",
            '{"format": "compaction.session.view", "version": 1, '
            '"updated": "2024-01-01T00:00:00+00:00", "through_seq": 0, "messages": [{"role": 1}]}',
            r"view\.json: messages\[0\]",
        ),
    ],
)
def test_corrupt_documents_are_reported_and_never_overwritten(
    made: Path, file: str, content: str | bytes, pattern: str
) -> None:
    path = made / file
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    session = reopen(made)
    kind = {"context.json": "global_context", "state.json": "state", "metadata.json": "metadata"}
    with pytest.raises(SessionFormatError, match=pattern) as info:
        if file == "view.json":
            session.view()
        else:
            getattr(session, kind[file]).to_dict()
    assert info.value.path == path
    if file != "view.json":
        with pytest.raises(SessionFormatError):
            getattr(session, kind[file])["new"] = "value"
        assert path.read_bytes() == content  # a write never replaces what it could not read


def test_missing_document_is_reported(made: Path) -> None:
    (made / "state.json").unlink()
    with pytest.raises(SessionFormatError, match=r"state\.json: missing"):
        reopen(made).state.to_dict()


def _rewrite_line(made: Path, index: int, text: str) -> None:
    log = made / "messages.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[index] = text
    log.write_text("".join(lines))


@pytest.mark.parametrize(
    ("index", "text", "pattern"),
    [
        (
            0,
            '{"format": "compaction.session", "version": 7}\n',
            r"line 1: unsupported format version 7",
        ),
        (0, '{"format": "something.else", "version": 1}\n', r"line 1: not a compaction.session"),
        (2, "{garbage}\n", r"line 3: not valid JSON"),
        (2, "\n", r"line 3: empty line"),
        (
            3,
            '{"seq": 9, "ts": "2024-01-01T00:00:00+00:00", "message": {"role": "user"}}\n',
            r"line 4: record seq 9 out of order",
        ),
        (
            1,
            '{"seq": 0, "ts": "yesterday", "message": {"role": "user"}}\n',
            r"line 2: timestamp 'yesterday'",
        ),
        (
            1,
            '{"seq": 0, "ts": "2024-01-01T00:00:00+00:00", "message": {"role": "robot"}}\n',
            r"line 2: Message.role",
        ),
        (
            1,
            '{"seq": 0, "ts": "2024-01-01T00:00:00+00:00", "message": {"role": "user", "x": 1}}\n',
            r"line 2: message has unknown fields \['x'\]",
        ),
        (1, '{"seq": 0, "ts": "2024-01-01T00:00:00+00:00"}\n', r"line 2: a record must be"),
    ],
)
def test_corrupt_log_lines_are_reported_with_file_and_line(
    made: Path, index: int, text: str, pattern: str
) -> None:
    _rewrite_line(made, index, text)
    before = (made / "messages.jsonl").read_bytes()
    session = reopen(made)
    with pytest.raises(SessionFormatError, match=pattern) as info:
        session.messages  # noqa: B018
    assert info.value.path == made / "messages.jsonl"
    assert info.value.line == index + 1
    with pytest.raises(SessionFormatError):
        session.add_user("more")
    assert (made / "messages.jsonl").read_bytes() == before


def test_truncated_last_line_is_uncommitted_and_repaired_by_the_next_writer(made: Path) -> None:
    log = made / "messages.jsonl"
    whole = log.read_bytes()
    last_start = whole.rstrip(b"\n").rindex(b"\n") + 1
    log.write_bytes(whole[:-15])  # as if the writer of "three" died mid-write
    session = reopen(made)
    assert [m.content for m in session.messages] == ["one", "two"]
    assert log.read_bytes() == whole[:-15]  # readers never modify the log
    stored = session.add_user("four")
    assert stored.id == "s-2"  # the torn record never existed: its seq is free again
    assert [m.content for m in reopen(made).messages] == ["one", "two", "four"]
    assert (made / "messages.jsonl.torn").read_bytes() == whole[last_start:-15] + b"\n"


def test_a_log_without_header_is_reported(made: Path) -> None:
    (made / "messages.jsonl").write_bytes(b'{"format": "compaction.session"')
    with pytest.raises(SessionFormatError, match="no header line"):
        reopen(made).add_user("x")
