"""How time grows with size, with its spread: least squares and a bootstrap (pure functions).

A ratio of two medians (time at 10x the messages over time at 1x) flips between runs on a
shared machine: one noisy size decides it. Here every size's runs go into two fits over all
sizes at once — time = a + b·n (b: the cost of one more message) and log t = c + k·log n
(k: the exponent; 1 is linear) — and a bootstrap (runs resampled within each size, the fits
redone on the per-size medians) gives each figure a 95% interval. A verdict is then read from
the interval, not from one draw.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["bootstrap", "exponent", "linear", "ols", "scaling_fit", "verdict"]


def ols(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares line through the points: (intercept, slope)."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("need at least two points, as many x as y")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("all x are equal: no slope")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope


def linear(sizes: Sequence[float], times: Sequence[float]) -> tuple[float, float]:
    """time = a + b·n: (a, b)."""
    return ols(sizes, times)


def exponent(sizes: Sequence[float], times: Sequence[float]) -> float:
    """k of time ∝ n^k: the slope of log time against log n (1 is linear)."""
    return ols([math.log(n) for n in sizes], [math.log(t) for t in times])[1]


def _medians(runs: Mapping[int, Sequence[float]]) -> tuple[list[int], list[float]]:
    sizes = sorted(runs)
    return sizes, [statistics.median(runs[n]) for n in sizes]


def bootstrap(
    runs: Mapping[int, Sequence[float]],
    statistic: Callable[[Sequence[float], Sequence[float]], float],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of ``statistic(sizes, per-size medians)`` over resamples that
    draw each size's runs again with replacement. Seeded: the same runs give the same
    interval."""
    rng = random.Random(seed)
    sizes = sorted(runs)
    values = []
    for _ in range(resamples):
        medians = []
        for n in sizes:
            xs = runs[n]
            medians.append(statistics.median([xs[rng.randrange(len(xs))] for _ in xs]))
        values.append(statistic(sizes, medians))
    values.sort()
    tail = (1 - level) / 2
    lo = values[min(len(values) - 1, int(tail * len(values)))]
    hi = values[max(0, math.ceil((1 - tail) * len(values)) - 1)]
    return lo, hi


def scaling_fit(runs: Mapping[int, Sequence[float]], *, resamples: int = 2000) -> dict[str, Any]:
    """Both fits on the per-size medians of ``runs`` (size -> seconds of each run), with
    95% bootstrap intervals: ``a_s``, ``b_us`` (µs per message) and ``exponent``."""
    if len(runs) < 2 or any(not v for v in runs.values()):
        raise ValueError("need runs at two sizes or more")
    sizes, medians = _medians(runs)
    a, b = linear(sizes, medians)
    b_lo, b_hi = bootstrap(runs, lambda n, t: linear(n, t)[1], resamples=resamples)
    k = exponent(sizes, medians)
    k_lo, k_hi = bootstrap(runs, exponent, resamples=resamples)
    return {
        "sizes": sizes,
        "runs": {n: len(runs[n]) for n in sizes},
        "a_s": a,
        "b_us": b * 1e6,
        "b_us_interval": (b_lo * 1e6, b_hi * 1e6),
        "exponent": k,
        "exponent_interval": (k_lo, k_hi),
    }


def verdict(interval: tuple[float, float], goal: float) -> bool | str:
    """A figure whose goal is "at most ``goal``", judged on its interval: met when all of it
    is within the goal, not met when all of it is beyond, else ``"inconclusive"`` — a wide
    interval says the run could not tell, which asks for more runs, not for a fix."""
    lo, hi = interval
    if hi <= goal:
        return True
    if lo > goal:
        return False
    return "inconclusive"
