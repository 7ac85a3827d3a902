"""Every scan over message text in ``compaction.memory.words`` is linear in the text's length.

Hostile shapes (the runs a pasted blob, a dump or a tester would send), each at four lengths
doubling from ``--start`` characters; every reader of the module is timed on each (the best of
a few runs) and the exponent k of ``time ∝ n^k`` is fitted over the four lengths. A scan that
backtracks from every position of a run shows k ≈ 2; the goal is k ≤ 1.25 for every pair.

``python -m benchmarks.speed.linear_scans`` prints one line per (reader, shape) and exits 1
when a pair misses the goal. It is a benchmark, not a test: it measures time.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "benchmarks.speed"

from compaction.memory.words import Sentences, statements, subject_of, supersedes, values_of

__all__ = ["GOAL", "READERS", "SHAPES", "main"]

GOAL = 1.25


def _cycle(unit: str, sep: str = "") -> Callable[[int], str]:
    return lambda n: (unit + sep) * (n // (len(unit) + len(sep)) + 1)


SHAPES: dict[str, Callable[[int], str]] = {
    "slugs": _cycle("alpha-beta-gamma-delta", "-"),
    "slugs, one digit, a non-ASCII end": lambda n: "a-" * (n // 2) + "1é",
    "capitals": lambda n: "ABCDEFGH" * (n // 8) + "é",
    "capitals and digits": lambda n: "A1B2C3D4" * (n // 8) + "é",
    "digits then a letter": lambda n: "a_" + "1" * n + "é",
    "hex dump": _cycle("0123456789abcdef"),
    "dotted name": _cycle("pkg.module", "."),
    "path without an end": lambda n: "a/" * (n // 2),
    "at signs": _cycle("user.name", "@"),
    "200-character slug runs": _cycle("alpha-beta-" * 18 + "gamma-del", " "),
    "200-character capitals": _cycle("AB" * 99 + "é", " "),
    "quotes": _cycle('"abc'),
    "prose with rules": _cycle("Never push to rel-9 on a Friday. The cap is $4,700 for Q3.", " "),
}


def _pairs(text: str) -> None:
    s = Sentences()
    s.supersedes(text, "Keep the cap at 200.")
    s.supersedes("Keep the cap at 300.", text)


READERS: dict[str, Callable[[str], object]] = {
    "statements": statements,
    "values_of": values_of,
    "subject_of": subject_of,
    "supersedes": lambda text: supersedes(text + " now 5.", text + " 4."),
    "Sentences.supersedes": _pairs,
}


def _forget() -> None:
    """Empty the readings the module keeps by text: each run reads from nothing."""
    from compaction.memory import note, words

    words._read.cache_clear()
    words._read_message.cache_clear()
    note._sentences.cache_clear()


def _best(fn: Callable[[str], object], text: str, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        _forget()
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best


def exponent(sizes: list[int], seconds: list[float]) -> float:
    """The least-squares slope of log(time) on log(size)."""
    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(s, 1e-7)) for s in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.speed.linear_scans")
    parser.add_argument("--start", type=int, default=20_000, help="shortest text (characters)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [args.start * 2**i for i in range(4)]
    worst = 0.0
    for shape, make in SHAPES.items():
        texts = [make(n)[:n] for n in sizes]
        for reader, fn in READERS.items():
            # statements() reads the first 20,000 characters of a message: time it on what
            # it reads, one sentence per text (no full stop in most shapes).
            seconds = [_best(fn, t, args.repeats) for t in texts]
            k = exponent(sizes, seconds)
            worst = max(worst, k) if seconds[-1] > 5e-3 else worst
            print(
                f"{reader:>20}  {shape:<34} {seconds[-1] * 1e3:8.2f} ms at {sizes[-1]:,}"
                f"  k = {k:.2f}",
                flush=True,
            )
    print(f"worst k (pairs over 5 ms at the longest): {worst:.2f}; goal <= {GOAL}")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
