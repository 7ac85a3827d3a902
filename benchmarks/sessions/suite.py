"""Session stores, file vs PostgreSQL: appends per second (1 and 8 writers), load 10k messages.

    python -m benchmarks.sessions.suite            # both backends, prints a table
    python -m benchmarks.sessions.suite --quick    # fewer appends

Entry point for the runner: :func:`run` (returns the rows). PostgreSQL is
``$COMPACTION_SESSIONS_BENCH_URL`` when set (an empty database), else a throwaway server started
with ``initdb``/``pg_ctl`` as the tests do; without either, its rows say why they are missing.
Every append is durable (fsync for files, a committed transaction for PostgreSQL); writers
are separate processes appending to one session, as a fleet does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.sessions"

from compaction.messages import Message
from compaction.sessions import SessionStore

ROOT = Path(__file__).resolve().parents[2]
ENV_URL = "COMPACTION_SESSIONS_BENCH_URL"
LOAD_SIZE = 10_000


def _writer(url: str, name: str, tag: str, count: int) -> None:
    """One writer process: wait for the start line, append ``count`` messages, say done."""
    session = SessionStore.from_url(url).open(name)
    session.save()
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        session.add(Message("user", f"{tag}:{i} " + "x" * 200))
    print("done", flush=True)


def appends_per_second(url: str, writers: int, count: int) -> float:
    """Messages appended per second by ``writers`` processes, ``count`` each, one session."""
    name = f"bench-{writers}w-{time.monotonic_ns()}"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.sessions.suite",
                "--writer",
                url,
                name,
                str(k),
                str(count),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(writers)
    ]
    for proc in procs:  # every process is up, connected, with its session open
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    began = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "done\n"
        proc.wait(timeout=600)
    elapsed = time.perf_counter() - began
    total = len(SessionStore.from_url(url).open(name).messages)
    if total != writers * count:
        raise RuntimeError(f"{name}: {total} messages, expected {writers * count}")
    return total / elapsed


def load_seconds(url: str, repeats: int, size: int = LOAD_SIZE) -> float:
    """Median seconds for a fresh store object (a new process would do the same: connect,
    check the schema, read) to read a ``size``-message session."""
    name = f"bench-load-{time.monotonic_ns()}"
    session = SessionStore.from_url(url).open(name)
    for start in range(0, size, 500):
        session.add(Message("user", f"message {i} " + "y" * 400) for i in range(start, start + 500))
    times = []
    for _ in range(repeats):
        store = SessionStore.from_url(url)
        began = time.perf_counter()
        count = len(store.open(name).messages)
        times.append(time.perf_counter() - began)
        store.close()
        assert count == size
    return statistics.median(times)


@contextmanager
def _postgres() -> Iterator[tuple[str | None, str]]:
    """A PostgreSQL URL (or None) and where it comes from (or why there is none)."""
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL], f"${ENV_URL}"
        return
    sys.path.insert(0, str(ROOT))
    from tests.postgres_server import PostgresServer, unavailable

    reason = unavailable()
    if reason is not None:
        yield None, reason
        return
    server = PostgresServer(fsync=True)  # durable, like the file store's fsync
    try:
        server.start()
        yield server.url, "a throwaway local server on 127.0.0.1 (fsync on)"
    finally:
        server.stop()


def run(quick: bool = False, repeats: int = 3) -> dict[str, Any]:
    """Measure both backends; rows of {backend, appends_1, appends_8, load_s, note}.

    ``quick`` (the harness check) appends and loads little: its figures mean nothing.
    """
    count_1, count_8 = (50, 10) if quick else (1_000, 250)
    size = 1_000 if quick else LOAD_SIZE
    repeats = 1 if quick else repeats
    rows = []
    with tempfile.TemporaryDirectory(prefix="compaction-bench-") as tmp, _postgres() as (pg, where):
        backends: list[tuple[str, str | None, str]] = [
            ("file", str(Path(tmp) / "sessions"), "a local directory, fsync on every append"),
            ("postgresql", pg, where),
        ]
        for backend, url, note in backends:
            if url is None:
                rows.append({"backend": backend, "skipped": note})
                continue
            rows.append(
                {
                    "backend": backend,
                    "appends_1": appends_per_second(url, 1, count_1),
                    "appends_8": appends_per_second(url, 8, count_8),
                    "load_s": load_seconds(url, repeats, size),
                    "note": note,
                }
            )
    return {"rows": rows, "quick": quick, "load_size": size}


def suite(ctx: Any) -> dict[str, Any]:
    """The suite entry of ``python -m benchmarks.run`` (see its ``SUITES``)."""
    return run(quick=ctx.quick)


def section(result: dict[str, Any]) -> list[str]:
    """The "## Session stores" section of RESULTS.md."""
    return [
        "## Session stores",
        "",
        "Appends per second (one writer, and eight processes on one session) and the time to "
        "load a session, for the file store and PostgreSQL, both durable.",
        "",
        table(result),
    ]


def table(result: dict[str, Any]) -> str:
    lines = [
        f"| store | appends/s, 1 writer | appends/s, 8 writers | load {result['load_size']:,}"
        " messages | note |",
        "|---|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        if "skipped" in row:
            lines.append(f"| {row['backend']} | - | - | - | not measured: {row['skipped']} |")
            continue
        lines.append(
            f"| {row['backend']} | {row['appends_1']:,.0f} | {row['appends_8']:,.0f} | "
            f"{row['load_s'] * 1e3:,.0f} ms | {row['note']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--writer"]:
        url, name, tag, count = args[1:5]
        _writer(url, name, tag, int(count))
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sessions.suite")
    parser.add_argument("--quick", action="store_true", help="fewer appends")
    options = parser.parse_args(args)
    print(table(run(quick=options.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
