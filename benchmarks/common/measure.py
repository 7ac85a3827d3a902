"""Timing and memory helpers shared by every benchmark.

Times are wall-clock ``time.perf_counter`` seconds; ``gc.collect()`` runs before each
measurement so one measurement does not pay for the garbage of the previous one. Memory is
measured with ``tracemalloc`` in a pass of its own, because tracing every allocation slows the
code down and would spoil the times.
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["median", "p99", "peak_memory", "progress", "ratio", "timed"]


def progress(text: str) -> None:
    """A progress line on stderr (stdout carries the table or the JSON)."""
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Seconds one call of ``fn`` took, and what it returned (after a ``gc.collect()``)."""
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def p99(values: Sequence[float]) -> float:
    """The 99th percentile by nearest rank (the largest value for fewer than 100 samples)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(0.99 * len(ordered)))
    return ordered[rank - 1]


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def peak_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (traced by ``tracemalloc``) while ``fn`` runs, beyond what was
    allocated before it started."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return max(0, peak - base)
