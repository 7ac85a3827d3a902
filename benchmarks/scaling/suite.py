"""Scaling: the cold ladder on synthetic conversations of growing length.

Sizes are measured interleaved (every round runs each size, in a shuffled order), so a slow
moment of the shared machine hits every size alike instead of one. Small sizes get more runs
(about as much measured time as the 10k one, up to 50), since a median over a few
millisecond-long runs is mostly noise. Whether the ladder scales is judged from fits over all
sizes with their bootstrap intervals (:mod:`benchmarks.scaling.fit`): the cost of one more message
(``time = a + b·n``) and the exponent of ``time ∝ n^k``; not from a ratio of two medians, which
flipped between runs.
"""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import Sequence
from typing import Any, Final

from compaction.messages import Message
from compaction.tokens import TiktokenCounter
from compaction.validate import is_valid

from ..common.ladders import LADDER_SHARE, free_ladder
from ..common.measure import median, p99, progress, ratio, timed
from .fit import scaling_fit, verdict

__all__ = ["EXPONENT_GOAL", "OVERHEAD_GOAL_US", "SCALING_GOAL", "markdown", "repeats_for", "run"]

SCALING_GOAL: Final = 12.0
#: 10x the messages in at most 12x the time, as an exponent: 10^k <= 12.
EXPONENT_GOAL: Final = math.log(SCALING_GOAL) / math.log(10)
OVERHEAD_GOAL_US: Final = 50.0
FULL_SIZES: Final = (1_000, 3_000, 10_000, 30_000, 100_000)
QUICK_SIZES: Final = (100, 300, 1_000)


def repeats_for(n: int, repeats: int, big_repeats: int) -> int:
    """Runs at size ``n``: about as much measured time as ``repeats`` runs at 10k messages,
    between ``big_repeats`` and 50."""
    return max(big_repeats, min(50, round(repeats * 10_000 / n)))


def _quiet_calls_at_scale(
    messages: tuple[Message, ...], counter: TiktokenCounter, calls: int, repeats: int
) -> dict[str, float]:
    """Quiet-call cost at the end of a long conversation.

    A Compactor whose window is far away is primed on all but the last ``calls`` messages,
    with a counter that has already counted them (so priming costs no encoding), then called
    once per appended message. The appended messages are made new to both that counter and a
    fresh one (trailing spaces, different per repeat: counts are cached by value), so each
    call pays the encoding of one new message, as in a live run; the overhead is its time
    minus that encoding. Per call, the median over ``repeats``.
    """
    from compaction.trigger import Compactor

    n = len(messages)
    start_at = max(1, n - calls)
    perf = time.perf_counter
    call_runs: list[list[float]] = []
    count_runs: list[list[float]] = []
    for r in range(repeats):
        pad = " " * (r + 1)
        tail = tuple(m.replace(content=m.content + pad) for m in messages[start_at:])
        convo = messages[:start_at] + tail
        compactor = Compactor(free_ladder(counter), window=10**12, counter=counter)
        agent = list(convo[:start_at])  # the agent's own list, appended to between calls
        compactor.before_call(agent)
        fresh = TiktokenCounter()
        call_times: list[float] = []
        count_times: list[float] = []
        gc.collect()
        for i in range(start_at + 1, n + 1):
            agent.append(convo[i - 1])
            t0 = perf()
            compactor.before_call(agent)
            call_times.append(perf() - t0)
            new = convo[i - 1 : i]
            t0 = perf()
            fresh.count_messages(new)
            count_times.append(perf() - t0)
        call_runs.append(call_times)
        count_runs.append(count_times)
    per_call = [median(ts) for ts in zip(*call_runs, strict=True)]
    per_count = [median(ts) for ts in zip(*count_runs, strict=True)]
    overhead = [a - b for a, b in zip(per_call, per_count, strict=True)]
    return {
        "quiet_median_us": median(per_call) * 1e6,
        "quiet_p99_us": p99(per_call) * 1e6,
        "overhead_median_us": median(overhead) * 1e6,
        "overhead_p99_us": p99(overhead) * 1e6,
    }


def _ladder_once(messages: Sequence[Message], target: int) -> tuple[float, Any]:
    counter = TiktokenCounter()
    pipeline = free_ladder(counter)
    return timed(lambda: pipeline.compact(messages, target=target, counter=counter))


def scaling(
    sizes: Sequence[int],
    repeats: int,
    *,
    big_repeats: int,
    memory: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Floor and cold ladder at every size, interleaved; quiet calls; peak memory; the fits."""
    from ..common.synthetic import conversation

    sizes = sorted(set(sizes))
    conversations = {}
    for n in sizes:
        progress(f"scaling: generating {n:,} messages")
        conversations[n] = conversation(n)
    reps = {n: repeats_for(n, repeats, big_repeats) for n in sizes}
    rounds = min(reps.values())
    floors: dict[int, list[float]] = {n: [] for n in sizes}
    ladders: dict[int, list[float]] = {n: [] for n in sizes}
    tokens: dict[int, int] = {}
    last: dict[int, Any] = {}
    order = list(sizes)
    shuffle = random.Random(seed).shuffle
    for r in range(rounds):
        shuffle(order)
        progress(f"scaling: round {r + 1}/{rounds} ({', '.join(f'{n:,}' for n in order)})")
        for n in order:
            # This round's share of the size's runs (the remainder goes to the first rounds).
            share = reps[n] // rounds + (1 if r < reps[n] % rounds else 0)
            for _ in range(share):
                counter = TiktokenCounter()
                messages = conversations[n]
                seconds, tokens[n] = timed(lambda: counter.count_messages(messages))  # noqa: B023
                floors[n].append(seconds)
                seconds, last[n] = _ladder_once(conversations[n], int(tokens[n] * LADDER_SHARE))
                ladders[n].append(seconds)
    rows = []
    for n in sizes:
        messages = conversations[n]
        row: dict[str, Any] = {
            "messages": n,
            "tokens": tokens[n],
            "runs": len(ladders[n]),
            "floor_s": median(floors[n]),
            "ladder_s": median(ladders[n]),
            "ratio": ratio(median(ladders[n]), median(floors[n])),
            "valid": is_valid(last[n].messages),
            "fits": last[n].fits,
        }
        counter = TiktokenCounter()
        counter.count_messages(messages)
        row.update(_quiet_calls_at_scale(messages, counter, calls=200, repeats=max(3, reps[n])))
        # Peak memory needs two fresh processes per size; every other size (the largest
        # always) keeps the section's run time sane and still spans the range.
        if memory and (n in sizes[::2] or n == sizes[-1]):
            from .memory import measure

            progress(f"scaling: {n:,} messages, peak memory (separate processes)")
            row["floor_peak_bytes"] = measure(n, "floor", tokens[n])["growth"]
            row["ladder_peak_bytes"] = measure(n, "ladder", tokens[n])["growth"]
        rows.append(row)
        del conversations[n], last[n]
        gc.collect()
    out: dict[str, Any] = {"rows": rows}
    if len(sizes) >= 2:
        ladder_fit = scaling_fit(ladders)
        floor_fit = scaling_fit(floors)
        out["fit"] = {
            "ladder": ladder_fit,
            "floor": floor_fit,
            "marginal_ratio": ratio(ladder_fit["b_us"], floor_fit["b_us"]),
        }
    return out


def run(ctx: Any) -> dict[str, Any]:
    """The suite entry (see ``benchmarks/run.py``)."""
    sizes = ctx.args.sizes or (QUICK_SIZES if ctx.quick else FULL_SIZES)
    return scaling(sizes, ctx.repeats, big_repeats=max(1, min(ctx.repeats, 2)), memory=True)


# -- the section ------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def goals(scaling: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    fit = scaling.get("fit")
    if fit:
        k = fit["ladder"]["exponent"]
        lo, hi = fit["ladder"]["exponent_interval"]
        out.append(
            {
                "goal": f"10x more messages costs at most {SCALING_GOAL:.0f}x the time (cold "
                f"ladder): exponent k of time ∝ n^k at most {EXPONENT_GOAL:.3f}, judged on "
                "the upper end of its 95% interval (inconclusive when the interval straddles it)",
                "measured": f"k = {k:.3f} (95% interval {lo:.3f} to {hi:.3f}; 10x costs "
                f"{10**k:.1f}x, at worst {10**hi:.1f}x)",
                "met": verdict((lo, hi), EXPONENT_GOAL),
            }
        )
    rows = scaling.get("rows") or []
    if rows:
        worst = max(r["overhead_median_us"] for r in rows)
        out.append(
            {
                "goal": "a call that needs no compaction costs only the counting of the newly "
                f"appended messages (median overhead under {OVERHEAD_GOAL_US:.0f} µs at every "
                "length)",
                "measured": ", ".join(
                    f"{r['messages']:,}: {_num(r['overhead_median_us'])} µs" for r in rows
                ),
                "met": worst <= OVERHEAD_GOAL_US,
            }
        )
    return out


def markdown(scaling: dict[str, Any]) -> list[str]:
    from ..common.report import goals_table, table

    lines = [
        "## Scaling",
        "",
        "Synthetic agent conversations (`benchmarks/synthetic.py`, seeded: a long system "
        "prompt, user turns, steps of one to three tool calls with log-normal output sizes). "
        "Floor and cold ladder to 40% as in the cold-ladder section, sizes interleaved (each "
        "round runs every size, shuffled), small sizes with more runs. The verdict comes from "
        "two fits over every size, on per-size medians, with 95% bootstrap intervals (runs "
        "resampled within each size): `time = a + b·n` (b = cost of one more message) and "
        "`time ∝ n^k` (k = 1 is linear). Quiet call = a `before_call` at the end of the "
        "conversation that needs no compaction (200 calls, one appended message each). Peak "
        "memory: growth of the peak resident set size across one run in a fresh process "
        "(`benchmarks/memory.py`; a lower bound, see there).",
        "",
    ]
    if not scaling.get("rows"):
        return [*lines, f"Skipped: {scaling.get('skipped', 'no sizes')}.", ""]
    lines += goals_table(goals(scaling))
    fit = scaling.get("fit")
    if fit:
        rows = []
        for name in ("ladder", "floor"):
            f = fit[name]
            b_lo, b_hi = f["b_us_interval"]
            k_lo, k_hi = f["exponent_interval"]
            rows.append(
                [
                    "cold ladder" if name == "ladder" else "counting floor",
                    f"{f['b_us']:.2f} ({b_lo:.2f} to {b_hi:.2f})",
                    f"{f['a_s'] * 1e3:,.1f}",
                    f"{f['exponent']:.3f} ({k_lo:.3f} to {k_hi:.3f})",
                    f"{10 ** f['exponent']:.2f}x",
                ]
            )
        lines += table(
            ["", "b: µs per message (95%)", "a: ms", "exponent k (95%)", "10x costs"], rows
        )
        lines += [
            "",
            f"Cost of one more message, ladder ÷ floor: {fit['marginal_ratio']:.2f}x.",
            "",
        ]
    lines += table(
        [
            "messages",
            "tokens",
            "runs",
            "floor ms",
            "ladder ms",
            "ladder/floor",
            "quiet call median µs",
            "overhead median µs",
            "floor peak RSS growth MiB",
            "ladder peak RSS growth MiB",
            "valid",
        ],
        [
            [
                f"{r['messages']:,}",
                f"{r['tokens']:,}",
                r["runs"],
                _num(r["floor_s"] * 1e3),
                _num(r["ladder_s"] * 1e3),
                f"{r['ratio']:.2f}x",
                _num(r["quiet_median_us"]),
                _num(r["overhead_median_us"]),
                _num(r.get("floor_peak_bytes", math.nan) / 2**20),
                _num(r.get("ladder_peak_bytes", math.nan) / 2**20),
                "yes" if r["valid"] else "NO",
            ]
            for r in scaling["rows"]
        ],
    )
    return [*lines, ""]
