"""Where the CLI writes: only regular files, never a swapped-out device, FIFO or symlink; a full
disk is reported; several inputs never overwrite each other's results; ``-`` is stdin/stdout.

Real devices, FIFOs, symlinks, a real size limit (RLIMIT_FSIZE in a real subprocess, and a
small tmpfs where ``mount`` is allowed) and real subprocesses of the real entry point.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import CLI, EXAMPLE, _env, one_line_error, run, run_all

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types")

COMPACT = ["compact", str(EXAMPLE), "--target", "4000", "--counter", "approx"]


def _session_store(tmp_path: Path) -> Path:
    from compaction.sessions import SessionStore

    store_dir = tmp_path / "store"
    SessionStore(store_dir, durable=False).open("chat").add_user("hello there")
    return store_dir


def _devices(tmp_path: Path) -> dict[str, Path]:
    """Character devices null (1, 3) and full (1, 7) made in ``tmp_path`` (root only)."""
    made = {}
    for name, minor in (("null", 3), ("full", 7)):
        node = tmp_path / f"dev-{name}"
        try:
            os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        except (PermissionError, AttributeError):
            continue
        made[name] = node
    return made


def test_non_regular_destinations_are_refused_and_left_alone(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = tmp_path / "real.json"
    target.write_text("precious")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    store = _session_store(tmp_path)
    destinations = {"fifo": fifo, "link": link, "dangling": dangling}
    # Device nodes of our own (the same devices as /dev/null and /dev/full): a regression
    # must never be able to replace the machine's real ones.
    devices = _devices(tmp_path)
    destinations.update(devices)
    commands = [[*COMPACT, "-o", str(d)] for d in destinations.values()]
    commands += [
        ["session", "export", "chat", str(d), "--store", str(store)] for d in destinations.values()
    ]
    results = run_all(*commands)
    names = list(destinations) * 2
    for name, result in zip(names, results, strict=True):
        line = one_line_error(result)
        assert "not a regular file" in line, (name, line)
        assert result.stdout == ""
    # Nothing was swapped out or written through.
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert link.is_symlink() and target.read_text() == "precious"
    assert dangling.is_symlink() and not (tmp_path / "nowhere.json").exists()
    for device in devices.values():
        assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_stdout_to_dev_full_is_reported(tmp_path: Path) -> None:
    store = _session_store(tmp_path)
    for args in (
        COMPACT,
        ["count", str(EXAMPLE), "--counter", "approx"],
        ["count", str(EXAMPLE), "--counter", "approx", "--json"],
        ["strategies"],
        ["session", "export", "chat", "-", "--store", str(store)],
    ):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run(
                [*CLI, *args],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(),
                timeout=120,
            )
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr == "compaction: error: <stdout>: no space left on device\n", proc.stderr


def test_session_export_to_stdout(tmp_path: Path) -> None:
    store = _session_store(tmp_path)
    result = run("session", "export", "chat", "-", "--store", str(store))
    assert result.returncode == 0, result.stderr
    exported = json.loads(result.stdout)
    assert exported["format"] == "compaction.session.export"


_LIMITED = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from compaction.cli import main
raise SystemExit(main(sys.argv[2:]))
"""


def test_a_write_over_the_file_size_limit_is_reported_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("the previous result")
    store = _session_store(tmp_path)
    export = tmp_path / "export.json"
    procs = [
        subprocess.run(
            [sys.executable, "-c", _LIMITED, "100", *args],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=120,
        )
        for args in (
            [*COMPACT, "-o", str(out)],
            ["session", "export", "chat", str(export), "--store", str(store)],
        )
    ]
    for proc in procs:
        line = one_line_error(proc)
        assert "file too large" in line.lower(), line
    assert out.read_text() == "the previous result"
    assert not export.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "store"]


def test_a_full_tmpfs_is_reported(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("mount is not allowed here (the RLIMIT_FSIZE test covers the limit)")
    try:
        result = run(*COMPACT, "-o", str(mnt / "out.json"))
        line = one_line_error(result)
        assert "no space left on device" in line.lower(), line
        assert f"{mnt / 'out.json'}: " in line and ".tmp" not in line  # the file asked for
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_same_base_names_into_one_directory_are_refused_up_front(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "run.json", tmp_path / "b" / "run.json"
    first.write_bytes(EXAMPLE.read_bytes())
    second.write_bytes(EXAMPLE.read_bytes())
    out = tmp_path / "out"
    result = run("compact", str(first), str(second), "--target", "4000", "-o", str(out))
    line = one_line_error(result)
    assert "run.json" in line and "both" in line
    assert not out.exists()
    # JSONL converted to JSON lands on the name of a JSON input: refused too.
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.json").write_bytes(EXAMPLE.read_bytes())
    lines = "".join(json.dumps(m) + "\n" for m in json.loads(EXAMPLE.read_text()))
    (tmp_path / "c" / "x.jsonl").write_text(lines)
    result = run(
        "compact", str(tmp_path / "c"), "--target", "4000", "--to", "anthropic", "-o", str(out)
    )
    assert "x.json" in one_line_error(result)
    assert not out.exists()


def test_a_trailing_slash_means_a_directory(tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = run(*COMPACT, "-o", f"{out}/")
    assert result.returncode == 0, result.stderr
    assert out.is_dir() and (out / EXAMPLE.name).is_file()
    assert json.loads((out / EXAMPLE.name).read_text())[0]["role"] == "system"


def test_dash_reads_stdin_and_writes_stdout(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    piped = subprocess.run(
        [*CLI, "compact", "-", "--target", "4000", "--counter", "approx", "-o", "-"],
        input=data,
        capture_output=True,
        env=_env(),
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    messages = json.loads(piped.stdout)
    assert messages[0]["role"] == "system" and messages != json.loads(data)
    assert b"<stdin>" in piped.stderr
    counted = subprocess.run(
        [*CLI, "count", "-", "--counter", "approx", "--json"],
        input=piped.stdout,
        capture_output=True,
        env=_env(),
        timeout=120,
    )
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["messages"] == len(messages)
    bad = subprocess.run(
        [*CLI, "count", "-"], input=b"\x00\x01", capture_output=True, env=_env(), timeout=120
    )
    assert bad.returncode == 2 and b"<stdin>" in bad.stderr


def test_parallel_jobs_keep_order_and_isolate_errors(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a", "b", "c", "d"):
        (logs / f"{name}.json").write_bytes(EXAMPLE.read_bytes())
    (logs / "bad.json").write_text('[{"role": "user", "content": "\\ud800"}]')
    out_serial, out_parallel = tmp_path / "serial", tmp_path / "parallel"
    # Named one by one, the bad file is an error (exit 2); the others are still written.
    files = [str(logs / f"{n}.json") for n in ("a", "b", "bad", "c", "d")]
    common = ["--target", "4000", "--counter", "approx", "--json"]
    serial, parallel = run_all(
        ["compact", *files, *common, "-o", str(out_serial)],
        ["compact", *files, *common, "-o", str(out_parallel), "-j", "3"],
    )
    assert serial.returncode == parallel.returncode == 2, (serial.stderr, parallel.stderr)
    a, b = json.loads(serial.stdout), json.loads(parallel.stdout)
    for report in (a, b):
        assert [Path(f["file"]).name for f in report["files"]] == [
            "a.json", "b.json", "c.json", "d.json"
        ]  # fmt: skip
        assert [Path(p["file"]).name for p in report["problems"]] == ["bad.json"]
    strip = [{k: v for k, v in f.items() if k not in ("seconds", "output", "strategies")}
             for f in a["files"]]  # fmt: skip
    assert strip == [
        {k: v for k, v in f.items() if k not in ("seconds", "output", "strategies")}
        for f in b["files"]
    ]
    for name in ("a", "b", "c", "d"):
        assert (out_serial / f"{name}.json").read_bytes() == (
            out_parallel / f"{name}.json"
        ).read_bytes()
    assert "Traceback" not in parallel.stderr


def _written_counts(out: Path) -> dict[str, int]:
    counted = run("count", str(out), "--json")
    assert counted.returncode == 0, counted.stderr
    return {f["file"]: f["total"] for f in json.loads(counted.stdout)["files"]}


def test_the_target_holds_for_the_file_as_written(tmp_path: Path) -> None:
    # Anthropic's shape counts differently (turns merged, results inside user messages): the
    # target and the report are about the file written, as `compaction count` reads it.
    out = tmp_path / "out.json"
    result = run(
        "compact", str(EXAMPLE), "--target", "4000", "--to", "anthropic", "-o", str(out), "--json"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    counted = run("count", str(out), "--json")
    total = json.loads(counted.stdout)["total"]
    assert total == report["tokens_after"] <= 4000


@pytest.mark.transcripts
@pytest.mark.parametrize(
    ("target", "shape"), [(4000, "anthropic"), (20000, "openai"), (20000, None)]
)
def test_real_transcripts_fit_as_written(
    transcripts_dir: Path, tmp_path: Path, target: int, shape: str | None
) -> None:
    out = tmp_path / "out"
    to = ["--to", shape] if shape else []
    result = run(
        "compact", str(transcripts_dir), "--target", str(target), *to, "-o", f"{out}/",
        "--json", "-j", "2",
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert {f["format"] for f in report["files"]} >= {"claude-code", "mini-swe-agent", "swe-agent"}
    assert not report["problems"]
    written = _written_counts(out)
    for f in report["files"]:
        assert written[f["output"]] == f["tokens_after"], f["file"]
        assert f["fits"] == (f["tokens_after"] <= target)
