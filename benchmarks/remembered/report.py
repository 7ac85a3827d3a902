"""The ``remembered`` section of RESULTS.md: statements kept by type and by round, stale
values presented as current, per budget, pooled over seeds."""

from __future__ import annotations

from typing import Any

from ..common.report import goals_table, table

__all__ = ["section"]


def _share(pair: list[int] | tuple[int, int]) -> str:
    kept, total = pair
    return f"{kept / total:.0%} ({kept}/{total})" if total else "n/a"


def _use(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return f"{median:.2f}, {ordered[0]:.2f}"


def _kept(tally: dict[str, Any]) -> tuple[int, int]:
    return (
        sum(v[0] for v in tally["kept"].values()),
        sum(v[1] for v in tally["kept"].values()),
    )


def section(results: dict[str, Any]) -> list[str]:
    seeds = results["seeds"]
    rounds = results["rounds"]
    lines = [
        "## What is remembered (the person's statements)",
        "",
        f"Generated sessions ({len(seeds)} seeds per shape; `benchmarks/remembered_sessions.py`): "
        "chat sessions (a system prompt, ~65 user turns, ~20 of them typed statements, 2 "
        "superseded later) and agent runs (a task, ~48 tool steps with large outputs, ~14 of the "
        "person's interjections typed statements, 2 superseded). Each statement carries an "
        "unguessable value; it survives when that value appears literally in the compacted "
        "messages' content or tool-call arguments (never `meta`). Small chat sessions (10 "
        "turns, 6 statements, 6-8k characters) are where the whole ledger does not fit. The "
        f"default ladder, and the free one beside it, compact {rounds} rounds in a row, the "
        "session growing by a fifth before each round (the conversation an agent carries "
        "forward), at fixed budgets of 10/20/30% of the full session, counted by tiktoken and "
        "in characters (a character budget). Budget use: after / target of each round that "
        "started over target. In the small sessions at 10% and 20% the system prompt, the "
        "task, the newest request and the newest step alone take most of the budget: their "
        "statements cannot all fit verbatim, and the goal there is as many as fit "
        "(`capacity` in `suite.py`: the system prompt, the task, the newest message of the "
        "person and the newest step paid first; when those are over target the step at its "
        "framing only (a last resort cuts its text first), then the person's message as its "
        "request (questions and statements: their filler goes before a note gives a line), "
        "and only the first two when even that is over; then the statements' sentences "
        "cheapest first; what an answer within the target shows counts as fitting whatever "
        "the bound says; the sessions are named "
        "in the goals). A "
        "superseded value is stale when it appears with no later occurrence "
        "of the newer value and no supersession marker beside it "
        "(`benchmarks/remembered_judge.py`).",
        "",
    ]
    lines += goals_table(results["goals"])
    growing = results["growing"]
    kinds = results["kinds"]
    for counter in results.get("counters", ["tokens"]):
        for shape in results["shapes"]:
            rows = []
            for ladder in results.get("ladders", ["default"]):
                for budget in results["budgets"]:
                    for r in range(1, rounds + 1):
                        tally = growing.get(f"{counter}|{ladder}|{shape}|{budget}|{r}")
                        if tally is None:
                            continue
                        rows.append(
                            [
                                ladder,
                                f"{budget:.0%}",
                                r,
                                *(_share(tally["kept"][k]) for k in kinds),
                                f"**{_share(_kept(tally))}**",
                                _share(tally["stale"]),
                                tally.get("over", 0),
                                _use(tally.get("use", [])),
                            ]
                        )
            sizes = results["sizes"].get(shape, [])
            if sizes:
                column = 1 if counter == "tokens" else -1
                sized = sorted(s[column] for s in sizes)
                unit = "tokens" if counter == "tokens" else "characters"
                lines += [
                    f"### {shape}, counted in {counter} ({len(sizes)} sessions, "
                    f"{sized[0]:,}-{sized[-1]:,} {unit})",
                    "",
                ]
            lines += table(
                [
                    "ladder",
                    "budget",
                    "round",
                    *kinds,
                    "all kept",
                    "stale presented",
                    "over budget",
                    "budget use (median, min)",
                ],
                rows,
            )
            lines.append("")
    fixed = results["fixed"]
    rows = []
    for shape in results["shapes"]:
        for budget in results["budgets"]:
            first = fixed.get(f"tokens|default|{shape}|{budget}|1")
            last = fixed.get(f"tokens|default|{shape}|{budget}|{rounds}")
            if first and last:
                rows.append(
                    [
                        shape,
                        f"{budget:.0%}",
                        _share(_kept(first)),
                        _share(_kept(last)),
                        _share(last["stale"]),
                    ]
                )
    if rows:
        lines += [
            "### The fixed protocol (the whole session, then its output again)",
            "",
            "The issue's reference protocol: round 1 compacts the whole session, rounds 2-5 "
            "its output. A conversation that already fits is not compacted again, so round 5 "
            "shows what round 1 kept.",
            "",
            *table(["shape", "budget", "kept, round 1", f"kept, round {rounds}", "stale"], rows),
            "",
        ]
    if results["errors"]:
        lines += ["Errors:", "", *(f"- {e}" for e in results["errors"]), ""]
    return lines
