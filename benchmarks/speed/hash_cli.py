"""One hash per (transcript, target) of what ``compaction compact`` writes, and of what
``compaction.formats.load`` reads: a change to reading must leave every one as it was.

For every transcript under ``../shared/data/transcripts`` (or ``--transcripts DIR``), the
loaded transcript (its messages, repairs, skipped records, container and extras, as
``repr``) is hashed, then the command runs in this process at each target (``--targets``,
tokens; default 8,000 and 30,000) and the bytes of its output file (``-o``) are hashed, with
its exit code.

``python -m benchmarks.speed.hash_cli > before.txt``, change the code, run it again and
``diff`` the two: one line per file and target, then one line hashing them all.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.speed"

from compaction.cli import main as cli
from compaction.formats import load

from ..common.data import DEFAULT_TRANSCRIPTS

__all__ = ["main"]

SUFFIXES = (".json", ".jsonl", ".traj")


def _short(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transcripts", type=Path, default=DEFAULT_TRANSCRIPTS)
    parser.add_argument("--targets", type=int, nargs="+", default=[8_000, 30_000])
    args = parser.parse_args(argv)
    files = sorted(
        p for p in args.transcripts.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES)
    )
    every = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            name = path.relative_to(args.transcripts)
            try:
                loaded = repr(load(path)).encode()
            except Exception as exc:  # a file no reader takes: its error is the answer
                loaded = f"{type(exc).__name__}: {exc}".encode()
            line = [f"{name} load {_short(loaded)}"]
            every.update(loaded)
            for target in args.targets:
                out = Path(tmp) / f"out{target}.json"
                out.unlink(missing_ok=True)
                with (
                    contextlib.redirect_stdout(io.StringIO()),
                    contextlib.redirect_stderr(io.StringIO()),
                ):
                    code = cli(["compact", str(path), "--target", str(target), "-o", str(out)])
                written = out.read_bytes() if out.exists() else b""
                line.append(f"{target}:{code}:{_short(written)}")
                every.update(written + str(code).encode())
            print(" ".join(line), flush=True)
    print(f"all {every.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
