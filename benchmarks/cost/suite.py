"""The cost suite: what a run costs with the prompt cache, under four compaction policies.

On every shared transcript whose log records time (Claude Code, mini-swe-agent), with a window
of half its size: no compaction (its requests may not fit), the default trigger (compact at
70%, down to 40%), the cache-aware trigger (:class:`compaction.pricing.cache_policy.CacheAware`),
and
LangChain's SummarizationMiddleware (replayed as :mod:`benchmarks.frameworks.suite` does). Every
call is priced by a :class:`compaction.pricing.cost.CacheMeter` at the time the log records; the
model is the one the log names when the price table has it. Also: the recorded-bill check
(:func:`compaction.pricing.bill_check.check_bill`), per file.

Run: ``python -m benchmarks.cost.suite [TRANSCRIPTS_DIR]`` (prints Markdown), or the ``cost`` suite
of run.py.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import Any

from compaction.check import RequestMeter, original_task, task_kept
from compaction.messages import Message
from compaction.pricing.bill_check import check_bill
from compaction.pricing.cache_policy import CacheAware
from compaction.pricing.cost import CacheMeter
from compaction.pricing.prices import Price, PriceError, price_for
from compaction.pricing.recorded import call_time, recorded_usage
from compaction.replay import replay
from compaction.tokens import TiktokenCounter
from compaction.trigger import Compactor

from ..common.data import Case
from ..common.report import goals_table

__all__ = ["bills", "cost_case", "markdown", "run", "suite"]

POLICIES = ("no compaction", "default trigger", "cache-aware trigger", "SummarizationMiddleware")


def _model(messages: Sequence[Message]) -> str:
    for m in messages:
        if m.role != "assistant":
            continue
        cc = m.meta.get("claude_code")
        if isinstance(cc, dict) and cc.get("model"):
            return str(cc["model"])
        mini = m.meta.get("mini_swe_agent")
        extra = mini.get("extra") if isinstance(mini, dict) else None
        response = extra.get("response") if isinstance(extra, dict) else None
        if isinstance(response, dict) and response.get("model"):
            return str(response["model"])
    return "claude-sonnet-4-5"


def _price(messages: Sequence[Message]) -> tuple[Price, int]:
    try:
        price = price_for(_model(messages))
    except PriceError:
        price = price_for("claude-sonnet-4-5")
    ttl = next(
        (u.ttl for m in messages if m.role == "assistant" and (u := recorded_usage(m)) and u.ttl),
        None,
    )
    return price, ttl if ttl in price.ttl else price.ttl[0]


def timed(case: Case) -> bool:
    """Whether the log records the time of its calls."""
    return any(m.role == "assistant" and call_time(m) is not None for m in case.messages)


def _ours(case: Case, price: Price, ttl: int, policy: bool) -> dict[str, Any]:
    counter = TiktokenCounter()
    window = max(1, case.tokens // 2)
    compactor = Compactor(
        None, window, counter=counter, policy=CacheAware(price, ttl=ttl) if policy else None
    )
    task = original_task(case.messages)
    cost = base = 0.0
    over = base_over = without = calls = compactions = 0
    for r in replay(case.messages, compactor, price=price, ttl=ttl, keep_requests=True):
        calls += 1
        compactions += r.compacted
        cost += r.cost.cost if r.cost else 0.0
        base += r.baseline.cost if r.baseline else 0.0
        over += r.tokens_sent > window
        base_over += r.baseline_tokens > window
        if task is not None and r.request is not None and task_kept(task, r.request) is None:
            without += 1
    return {
        "calls": calls,
        "cost": cost,
        "baseline": base,
        "over": over,
        "baseline_over": base_over,
        "without_task": without,
        "compactions": compactions,
    }


def _summarization(case: Case, price: Price, ttl: int) -> dict[str, Any]:
    from compaction.integrations.langchain import to_langchain

    from ..common.peers import langchain_counter
    from ..frameworks.suite import _memo, _task_sent, requests

    counter = TiktokenCounter()
    count = _memo(langchain_counter(counter))
    window = max(1, case.tokens // 2)
    task = original_task(case.messages)
    # The stable head is the system prompt as LangChain counts it (converted alone: a
    # system message converts the same at the start of any conversation).
    head = case.messages[:1] if case.messages and case.messages[0].role == "system" else []
    fixed = count(to_langchain(head)[0]) if head else 0
    meter: RequestMeter[Any] = RequestMeter(
        count, window, meter=CacheMeter(price, ttl), fixed=fixed
    )
    at = 0.0
    contender = "SummarizationMiddleware"
    for point, full, messages in requests(case, contender, counter, count):
        m = case.messages[point]
        at = call_time(m) or at
        usage = recorded_usage(m)
        output = usage.output if usage else counter.count(m)
        sent = None if task is None else _task_sent(task, messages)
        meter.measure(full, task=sent, at=at, output=output)
    t = meter.totals
    return {"calls": t.calls, "cost": t.cost, "over": t.over_window, "without_task": t.without_task}


def cost_case(case: Case) -> list[dict[str, Any]]:
    """One transcript under every policy: one row each."""
    price, ttl = _price(case.messages)
    default = _ours(case, price, ttl, policy=False)
    aware = _ours(case, price, ttl, policy=True)
    rows = [
        {
            "policy": "no compaction",
            "calls": default["calls"],
            "cost": default["baseline"],
            "over": default["baseline_over"],
            "without_task": 0,
            "compactions": 0,
        },
        {"policy": "default trigger", **default},
        {"policy": "cache-aware trigger", **aware},
    ]
    with contextlib.suppress(ImportError):  # LangChain is the optional 'bench' extra
        rows.append({"policy": "SummarizationMiddleware", **_summarization(case, price, ttl)})
    for row in rows:
        row.update(
            name=case.name, format=case.format, model=price.model, ttl=ttl, window=case.tokens // 2
        )
        row.pop("baseline", None)
        row.pop("baseline_over", None)
    return rows


def bills(cases: Sequence[Case]) -> list[dict[str, Any]]:
    """The recorded-bill check for every log that records usage."""
    out = []
    for case in cases:
        b = check_bill(case.messages)
        if b is None:
            continue
        out.append(
            {
                "name": case.name,
                "format": case.format,
                "calls": b.calls,
                "recorded_read": b.recorded_read,
                "model_read": b.model_read,
                "read_error": b.read_error,
                "recorded_write": b.recorded_write,
                "model_write": b.model_write,
                "write_error": b.write_error,
                "cost_error": b.cost_error,
            }
        )
    return out


def run(cases: Sequence[Case]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for case in cases:
        if timed(case) and case.tokens >= 4:
            rows.extend(cost_case(case))
    return {"rows": rows, "bills": bills(cases)}


def _totals(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for policy in POLICIES:
        mine = [r for r in rows if r["policy"] == policy]
        if not mine:
            continue
        calls = sum(r["calls"] for r in mine)
        cost = sum(r["cost"] for r in mine)
        out.append(
            {
                "policy": policy,
                "files": len(mine),
                "calls": calls,
                "cost": cost,
                "per_call": cost / calls if calls else 0.0,
                "over": sum(r["over"] for r in mine),
                "without_task": sum(r["without_task"] for r in mine),
            }
        )
    return out


def _goals(totals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goals: the cache-aware trigger costs less than the default one in total, with
    no request over the window and the task in every call."""
    by = {t["policy"]: t for t in totals}
    default, aware = by.get("default trigger"), by.get("cache-aware trigger")
    if default is None or aware is None:
        return []
    return [
        {
            "goal": "cache-aware trigger costs less than the default trigger over the shared set",
            "measured": f"${aware['cost']:.2f} against ${default['cost']:.2f}",
            "met": aware["cost"] < default["cost"],
        },
        {
            "goal": "ours: 0 requests over the window, the task in every call",
            "measured": (
                f"default {default['over']} over, {default['without_task']} without the task; "
                f"cache-aware {aware['over']} over, {aware['without_task']} without the task"
            ),
            "met": not (default["over"] or aware["over"])
            and not (default["without_task"] or aware["without_task"]),
        },
    ]


def markdown(result: dict[str, Any]) -> list[str]:
    """The section: a list of lines, as every suite's ``markdown`` answers."""
    lines = ["## Cost with the prompt cache", ""]
    if result.get("skipped"):
        return [*lines, f"Skipped: {result['skipped']}.", ""]
    lines += [
        "Every transcript whose log records the time of its calls, with a window of half its "
        "size, priced call by call with the provider's prompt cache "
        "(`compaction.pricing.cost.CacheMeter`, prices from "
        "`compaction/pricing/prices.toml`, as the model the log names; TTL as the log "
        "recorded, else the model's first). No compaction may not "
        "fit the window; a call without the task is one whose request lost the original task. "
        "Below: the recorded-bill check (`compaction.pricing.bill_check`), each log "
        "replayed with no compaction against the cache reads and writes its provider billed; "
        "see docs/cost.md.",
        "",
    ]
    if not result["rows"]:
        lines += ["No transcript records the time of its calls: nothing to price.", ""]
    lines += goals_table(_goals(_totals(result["rows"])))
    lines += [
        "| policy | files | calls | cost $ | $ per call | requests over the window | "
        "calls without the task |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for t in _totals(result["rows"]):
        lines.append(
            f"| {t['policy']} | {t['files']} | {t['calls']} | {t['cost']:.2f} | "
            f"{t['per_call']:.4f} | {t['over']} | {t['without_task']} |"
        )
    lines += [
        "",
        "| file | calls | recorded reads | modelled | error | recorded writes | modelled | "
        "error | bill error |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for b in result["bills"]:
        lines.append(
            f"| {b['name']} | {b['calls']} | {b['recorded_read']:,} | {b['model_read']:,} | "
            f"{100 * b['read_error']:+.1f}% | {b['recorded_write']:,} | {b['model_write']:,} | "
            f"{100 * b['write_error']:+.1f}% | {100 * b['cost_error']:+.1f}% |"
        )
    return [*lines, ""]


def suite(ctx: Any) -> dict[str, Any]:
    if not ctx.cases:
        return {"skipped": ctx.transcripts_skipped or "no transcripts"}
    return run(ctx.cases)


def main(argv: list[str] | None = None) -> int:
    from pathlib import Path

    from ..common.data import DEFAULT_TRANSCRIPTS, load_cases

    args = sys.argv[1:] if argv is None else argv
    cases, _ = load_cases(Path(args[0]) if args else DEFAULT_TRANSCRIPTS)
    sys.stdout.write("\n".join(markdown(run(cases))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
